r"""Seeded federated data generators with their ground truth and constants.

Every generator takes ``rng`` (a ``numpy.random.Generator``, a
``SeedSequence`` or an int seed) and ``trials`` (``()``, an int or a tuple:
leading batch axes, one independent data set each; trial ``k`` uses
``trial_rngs(rng, trials)[k]``, so a trial can be reproduced alone: the
draws are one numpy call per trial and quantity, all arithmetic is batched)
and returns a :class:`FederatedProblem`.

- :func:`least_squares`: fixed-design linear regression, exact constants and
  a sufficient-statistic sampler (Monte Carlo over many data sets).
- :func:`logistic`: well-specified logistic clients, the ground truth the
  population minimiser of the ridge-regularised loss.
- :func:`fedprox_synthetic`, :func:`synthetic`: the FedProx analysis'
  Section 6.1 data and the public Synthetic(alpha, beta) recipe (figures only);
  its clients of different sizes come as a ragged objective (:func:`moreau.ragged`:
  size buckets, memory proportional to the number of samples).

``least_squares`` and ``logistic`` estimate their memory before drawing anything and refuse
a call above ``max_bytes`` (default :data:`MAX_BYTES`, 8 GiB) with the estimate.
"""

from ._figures import fedprox_synthetic, synthetic
from ._least_squares import least_squares
from ._logistic import logistic
from ._problem import MAX_BYTES, FederatedProblem, trial_rngs

__all__ = [
    "FederatedProblem",
    "trial_rngs",
    "least_squares",
    "logistic",
    "fedprox_synthetic",
    "synthetic",
    "MAX_BYTES",
]
