"""Rate checks too slow for the default run, with the power they reach (docs/power.md).

``moreau check --module benchmarks/power_long_horizons.py -v`` runs them like catalogue statements: each is a
catalogue statement on longer horizons, with its own id, and prints its detectable change.

* ``pflmf.stochastic_long``: pflmf.stochastic on T = 1024..4096 (24 runs per horizon, atol 0.02) instead of
  64..256, past the transient; about 30 s on 2 cores (``moreau.analysis.pflmf.stochastic.LONG_HORIZONS``).
"""

from moreau.analysis.pflmf.stochastic import LONG_HORIZONS

STATEMENTS = (LONG_HORIZONS,)
