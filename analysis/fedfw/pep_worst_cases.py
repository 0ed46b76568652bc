r"""Class worst cases (PEP) of the FedFW statements: none is formulated here (``PEP_NOT_APPLICABLE`` says why).

Collected by ``moreau.analysis.engine.registry``; read by ``moreau check --pep``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]

_RATE = (
    "a rate with no printed constant: a class worst case bounds a quantity at a fixed t by a constant, and "
    "FedFW's iteration (an LMO per client, a growing penalty, a server average) over n clients is not one of "
    "the PEP machinery's first-order methods"
)

PEP: dict[str, Callable[..., Any]] = {}
PEP_NOT_APPLICABLE = {
    "fedfw.convex": _RATE,
    "fedfw.nonconvex": _RATE,
    "fedfw.stochastic": _RATE + "; stochastic gradients with a momentum average besides",
    "fedfw.sparse": "a count of non-zeros in the LMO's output, fixed by the constraint set's extreme points: no "
    "function class enters",
    "fedfw.personalized": "its parts are exact properties of penalised optima (monotone in λ) and Theorem 5's bound on "
    "the penalised objective, whose class worst case is fw.convex's (thesis, chapter 2)",
}
