"""Class worst cases (PEP) of Per-FedAvg's statements: none here, and why (``moreau check --pep``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]

PEP: dict[str, Callable[..., Any]] = {}

#: statements without a class worst case here, and why
PEP_NOT_APPLICABLE = {
    "perfedavg.lemma4_2": "needs a Hessian-Lipschitz class (the MAML step uses the Hessian), not in PEPit",
    "perfedavg.lemma4_3": (
        "moments of a stochastic estimate over sampled batches, not a first-order method's worst case"
    ),
    "perfedavg.lemma4_4": "a variance bound over sampled data, not a first-order statement",
    "perfedavg.tv": "a bound through total-variation distances between data distributions: no function class to "
    "maximise over",
    "perfedavg.w1": "a bound through Wasserstein distances between data distributions: no function class to "
    "maximise over",
    "perfedavg.thm4_5": "stochastic (batches, client sampling) with Hessian-Lipschitz assumptions: not in PEPit",
    "perfedavg.propf1": "stochastic client drift with Hessian-Lipschitz assumptions: not in PEPit",
    "perfedavg.appendix_h": "moments of stochastic estimates over sampled batches, not a first-order worst case",
}
