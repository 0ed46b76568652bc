"""moreau: exact proximal operators and Moreau envelopes for checking the
theory of personalized federated learning.

Objectives are batched (leading axes: clients, trials; last axis: d) and run
on numpy, cupy or any array-API library through one code path; clients of
different sample counts are held in size buckets by :func:`ragged` (no padding
to the largest).  The federated algorithms and their exact targets are in
:mod:`moreau.fl`, the seeded data generators in :mod:`moreau.data`.
"""

from . import data, fl  # noqa: E402  (subpackages built on the objectives above)
from ._backend import BackendError, get_backend, set_backend
from ._envelope import Envelope, MetaObjective, envelope, meta_objective, prox
from ._errors import ProxConvergenceError
from ._least_squares import LeastSquares
from ._logistic import Logistic
from ._multinomial import Multinomial
from ._nonsmooth import AbsoluteValue, ExactProx, Hinge
from ._objective import Objective, ProxInfo
from ._piecewise_quadratic import DoubleWell, Huber
from ._quadratic import Quadratic
from ._ragged import RaggedLeastSquares, RaggedLogistic, RaggedMultinomial, ragged

__version__ = "0.4.0"  #: the version: the one place it is written (CHANGELOG.md, pyproject.toml)

__all__ = [
    "Objective",
    "Quadratic",
    "LeastSquares",
    "Logistic",
    "Multinomial",
    "Envelope",
    "MetaObjective",
    "ragged",
    "RaggedLogistic",
    "RaggedMultinomial",
    "RaggedLeastSquares",
    "AbsoluteValue",
    "Hinge",
    "Huber",
    "DoubleWell",
    "ExactProx",
    "prox",
    "envelope",
    "meta_objective",
    "ProxInfo",
    "ProxConvergenceError",
    "set_backend",
    "get_backend",
    "BackendError",
    "data",
    "fl",
    "__version__",
]
