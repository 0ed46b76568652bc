"""A claim evaluated on a batch: what a statement's ``evaluate`` returns checked and every part judged,
the undecided instances (at the rounding floor, or near ties) decided again in higher precision, and
a batch's number of instances."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from moreau.analysis.engine.core_batch import take
from moreau.analysis.engine.judge import NEAR_TIE, PartResult, Sides, judge

__all__ = ["evaluate_claim"]


def evaluate_claim(
    evaluate: Callable, batch: object, claim: dict, flip: tuple = (), *, n: int | None = None, who: str = ""
) -> list[PartResult]:
    """Every part of ``evaluate(batch, claim)`` judged (``flip``: parts whose inequality is reversed).
    What ``evaluate`` returns is checked first: a dict ``{part name: Sides}``, with one left and one
    right side per instance of the batch (``n`` instances, when given); ``who`` names the statement
    (and family) in the error."""
    sides = evaluate(batch, claim)
    where = f"{who}: " if who else ""
    if not isinstance(sides, Mapping):
        raise TypeError(
            f"{where}evaluate must return a dict {{part name: Sides}} (got {type(sides).__name__})"
        )
    for name, s in sides.items():
        if not isinstance(s, Sides):
            raise TypeError(
                f"{where}evaluate returned {type(s).__name__} for part {name!r}, not a Sides "
                "(Sides(lhs, rhs, claimed), one entry per instance)"
            )
        if n is not None and s.lhs.shape != (n,):
            got = f"length {s.lhs.shape[0]}" if s.lhs.ndim == 1 else f"shape {s.lhs.shape}"
            raise ValueError(
                f"{where}part {name!r} has lhs and rhs of {got} for a batch of {n} instances "
                "(evaluate must return one entry per instance)"
            )
    unknown = set(flip) - set(sides)
    if unknown:
        raise KeyError(f"flip names unknown parts {unknown}; parts are {list(sides)}")
    return [judge(name, s, name in flip) for name, s in sides.items()]


def _undecided_rows(p: PartResult) -> np.ndarray:
    """The rows of ``p`` that a higher-precision evaluation decides: those at the rounding floor, and
    the near ties (failures within :data:`NEAR_TIE` of the larger side;
    Monte Carlo and rate parts have their own intervals)."""
    rows = p.floor_rows if p.floor_rows is not None else np.zeros(0, dtype=int)
    s = p.sides
    if p.claimed == "rate" or s.lhs_ci is not None or not p.failures.size:
        return rows
    f = p.failures
    # relative to the sides: the rounding of larger terms (Sides.scale) is the floor's already
    mag = np.maximum(np.abs(s.lhs[f]), np.abs(s.rhs[f]))
    with np.errstate(invalid="ignore"):
        near = f[np.abs(s.lhs[f] - s.rhs[f]) <= NEAR_TIE * mag]
    return np.union1d(rows, near).astype(int)


def _replay_precise(precise, batch, claim, parts, flip):
    """The parts with their undecided instances (at the rounding floor, or near ties:
    :func:`_undecided_rows`) decided by ``precise`` (the statement's evaluation in higher precision):
    those rows take the precise sides, no floor, and are judged again."""
    undecided = {p.name: _undecided_rows(p) for p in parts}
    rows = np.unique(np.concatenate(list(undecided.values())).astype(int))
    exact = precise(take(batch, rows), claim)
    out = []
    for p in parts:
        mine = undecided[p.name]
        if not mine.size or p.name not in exact:
            out.append(p)
            continue
        s, q = p.sides, exact[p.name]
        pos = np.searchsorted(rows, mine)
        lhs, rhs = s.lhs.copy(), s.rhs.copy()
        floor = s.floor.copy() if s.floor is not None else np.full(lhs.shape, np.nan)  # nan: none given
        lhs[mine] = np.asarray(q.lhs, dtype=float)[pos]
        rhs[mine] = np.asarray(q.rhs, dtype=float)[pos]
        floor[mine] = -np.inf  # decided: no floor there
        merged = dataclasses.replace(s, lhs=lhs, rhs=rhs, floor=floor)
        out.append(dataclasses.replace(judge(p.name, merged, p.name in flip), replayed=int(mine.size)))
    return out


def _batch_size(batch) -> int:
    if not isinstance(batch, Mapping):
        raise TypeError(
            f"a batch must be a dict of arrays, instances along the first axis (got {type(batch).__name__})"
        )
    sizes = {np.shape(v)[0] for v in batch.values() if np.ndim(v) > 0}
    if len(sizes) != 1:
        raise ValueError(f"a batch needs one leading instance axis (got sizes {sizes})")
    return sizes.pop()
