"""Exceptions raised by moreau (besides ValueError / TypeError for bad input)."""

from __future__ import annotations

from typing import Any

__all__ = ["ProxConvergenceError"]


class ProxConvergenceError(ArithmeticError):
    """An iterative or closed-form prox could not certify its tolerance for some entries.

    Attributes hold host numpy arrays over the batch: ``error_bound`` (the
    rigorous bound reached by every entry, converged or not), ``tol`` (the
    level that was asked for), ``iterations``, ``failed`` (boolean mask of
    the entries not certified; ``None`` when not known per entry) and
    ``theta`` (the whole partial result, ``None`` where none was formed):
    entries outside ``failed`` are certified answers.
    """

    def __init__(
        self,
        message: str,
        *,
        error_bound: Any,
        tol: Any,
        iterations: Any,
        failed: Any = None,
        theta: Any = None,
    ) -> None:
        super().__init__(message)
        self.error_bound = error_bound
        self.tol = tol
        self.iterations = iterations
        self.failed = failed
        self.theta = theta
