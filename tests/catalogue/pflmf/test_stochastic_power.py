"""pflmf.stochastic's power (issue 27, item 6).  The default run's grid T = 64..256 is inside the transient
(slopes -0.5 to -0.8 against the asymptotic -1/2), so its rate part cannot detect a change of the exponent of
0.05; the long-horizon variant (``LONG_HORIZONS``: T = 1024..4096, 24 runs, atol 0.02) can, and still
rejects both mutants (slow: about a minute)."""

from __future__ import annotations

import numpy as np
import pytest

from moreau.analysis.engine.rates import part_detectable_change
from moreau.analysis.engine.registry import get
from moreau.analysis.pflmf import stochastic


def test_long_horizon_variant_is_the_statement_with_other_horizons():
    st, long = get("pflmf.stochastic"), stochastic.LONG_HORIZONS
    assert long.id not in {s.id for s in stochastic.STATEMENTS}  # not in the default run
    assert long.claim == st.claim and long.mutants == st.mutants and long.instances is st.instances


@pytest.mark.slow
def test_long_horizons_detect_a_change_of_0_05_and_reject_the_mutants():
    st = stochastic.LONG_HORIZONS
    batch = st.instances("quadratic", None, np.random.default_rng(0))
    shared = st.prepared(batch)
    res = st.run("quadratic", None, None, batch=batch, prepared=shared)
    (p,) = res.parts
    assert "T = 1024..4096" in p.name and res.holds
    assert 0 < part_detectable_change(p) <= 0.05
    for m in st.mutants:
        assert not st.run("quadratic", None, None, mutant=m, batch=batch, prepared=shared).holds, m.name
