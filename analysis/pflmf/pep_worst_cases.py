"""pFL^MF: no class worst case (``moreau check --pep``); ``PEP_NOT_APPLICABLE`` says why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]

PEP: dict[str, Callable[..., Any]] = {}

_BILINEAR = (
    "F(U, V) = (1/n) sum_i f_i(U v_i) is a bilinear composition: not L-smooth or convex in (U, V) "
    "jointly, so it lies in none of the function classes a performance estimation problem interpolates"
)
PEP_NOT_APPLICABLE = {
    "pflmf.bm": "a landscape statement about the Burer-Monteiro form (the global rank-r value is reached from "
    "random starts), not a worst case over a function class; " + _BILINEAR,
    "pflmf.deterministic": "a rate of Algorithm 1 on " + _BILINEAR,
    "pflmf.stochastic": "a rate of Algorithm 1 with stochastic gradients on " + _BILINEAR,
}
