"""What a prox call reports (``return_info=True``): :class:`ProxInfo`.

Its own module so that Newton (``moreau._newton``) and the objectives (``moreau._objective``),
which calls Newton, import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ProxInfo"]


@dataclass(frozen=True)
class ProxInfo:
    """What a prox computation certifies, per batch entry (host numpy arrays).

    ``error_bound``: a rigorous upper bound on ``||theta - prox(w)||`` for the
    returned floating-point theta: ``||grad h(theta)|| / (lam + mu)`` (h the
    prox subproblem) with the rounding of evaluating ``grad h`` bounded a
    priori and added, and for quadratics the modulus lowered by the error of
    the computed eigenvalues (derivations: ``moreau._newton`` and
    ``Quadratic._solve``); ``tol``: the level that was required (``None`` for
    closed forms called without ``tol``); ``iterations``: Newton iterations
    (0 for closed forms).  A NaN bound (an overflow in its arithmetic) is stored as inf.
    """

    iterations: np.ndarray
    error_bound: np.ndarray
    tol: np.ndarray | None

    def __post_init__(self) -> None:
        # a NaN bound (an overflow somewhere in its arithmetic) certifies nothing: it reads inf,
        # so that no comparison with a tolerance can pass it
        b = self.error_bound
        if isinstance(b, np.ndarray | np.floating | float) and np.any(np.isnan(b)):
            object.__setattr__(self, "error_bound", np.where(np.isnan(b), np.inf, b))
