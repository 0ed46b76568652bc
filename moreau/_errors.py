"""Exceptions raised by moreau (besides ValueError / TypeError for bad input)."""
from __future__ import annotations

__all__ = ["ProxConvergenceError"]


class ProxConvergenceError(ArithmeticError):
    """An iterative prox did not reach its certified tolerance.

    Attributes hold host numpy arrays over the batch: ``error_bound`` (the
    certified bound reached, ``||grad h(theta)|| / (lam + mu)``), ``tol`` (the
    bound that was asked for) and ``iterations``.
    """

    def __init__(self, message, *, error_bound, tol, iterations):
        super().__init__(message)
        self.error_bound = error_bound
        self.tol = tol
        self.iterations = iterations
