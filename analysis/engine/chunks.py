"""Judging a statement on a batch that arrives in chunks, in memory bounded by the chunk.

``moreau check --trials N`` with N larger than one chunk draws, prepares and judges the
instances chunk by chunk and keeps, per part, only what the report needs: the counts, the
failing instances' indices, the worst ratio and slack, and a bounded set of *kept* instances
(the worst by ratio, by slack and by confidence interval of every part, and the first
:data:`KEEP_FAILURES` failures of every part) with their sides and their rows of the batch, so
the report, the JSON and ``--save-counterexamples`` work as on a one-chunk run.  Indices are
global (the instance's position in the whole run).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import TIGHT_RTOL, PartResult, Result, Sides, take

__all__ = ["ChunkReducer", "KEEP_FAILURES"]

#: failing instances per part whose rows are kept (for the report and --save-counterexamples)
KEEP_FAILURES = 5

_SIDE_ARRAYS = ("lhs", "rhs", "applicable")


def _worst_rows(p: PartResult) -> set:
    """Local rows of one part worth keeping: worst ratio, smallest slack, worst CI, first failures."""
    s, app = p.sides, p.sides.applicable
    rows = set(int(i) for i in p.failures[:KEEP_FAILURES])
    if app.any():
        r = np.where(app & ~np.isnan(p.ratio), p.ratio, -np.inf)
        rows.add(int(np.argmax(r)))
        rows.add(int(np.argmin(np.where(app, p.slack, np.inf))))
        if s.lhs_ci is not None and p.claimed != "rate":
            from moreau.analysis.engine.records import worst_ci_instance

            rows.add(worst_ci_instance(s))
    return rows


class ChunkReducer:
    """Results of one statement on consecutive chunks, reduced as they come (see the module doc)."""

    def __init__(self):
        self.total = 0
        self.batch = None  # kept rows of the batch
        self.index = np.zeros(0, dtype=np.int64)  # their global indices (increasing)
        self.parts = None  # per part: dict of counts and kept per-row arrays
        self.seconds = 0.0

    def add(self, batch, result: Result):
        """Fold one chunk's batch and its result (judged on that chunk alone) into the reduction."""
        n, off = result.instances, self.total
        if self.parts is None:
            self.parts = [
                dict(name=p.name, claimed=p.claimed, applicable=0, failures=[], max_ratio=-np.inf, first=p)
                for p in result.parts
            ]
        elif [p.name for p in result.parts] != [q["name"] for q in self.parts]:
            raise ValueError(
                "a chunk's parts differ from the first chunk's: the statement's parts must not "
                "depend on the batch"
            )
        rows = set()
        for q, p in zip(self.parts, result.parts, strict=True):
            q["applicable"] += p.applicable
            q["failures"].append(p.failures.astype(np.int64) + off)
            if np.isfinite(p.max_ratio):
                q["max_ratio"] = max(q["max_ratio"], p.max_ratio)
            rows |= _worst_rows(p)
        kept = np.array(sorted(rows), dtype=np.int64)
        new = {
            "batch": take(batch, kept),
            "index": kept + off,
            "parts": [_rows_of(p, kept) for p in result.parts],
        }
        self._merge(new)
        self.total += n
        self.seconds += result.seconds

    def _merge(self, new):
        if self.batch is None:
            self.batch, self.index, kept = new["batch"], new["index"], new["parts"]
        else:
            self.batch = {
                k: (
                    np.concatenate([np.asarray(self.batch[k]), np.asarray(new["batch"][k])])
                    if np.ndim(new["batch"][k])
                    else new["batch"][k]
                )
                for k in self.batch
            }
            self.index = np.concatenate([self.index, new["index"]])
            kept = [
                {k: np.concatenate([a[k], b[k]]) if a[k] is not None else None for k in a}
                for a, b in zip((q["kept"] for q in self.parts), new["parts"], strict=True)
            ]
        for q, k in zip(self.parts, kept, strict=True):
            q["kept"] = k
        # re-select over the concatenation, so the kept set stays bounded whatever the number of chunks
        keep = set()
        for q in self.parts:
            keep |= _worst_rows(self._part(q, failures=np.flatnonzero(~q["kept"]["holds_each"])))
        keep = np.array(sorted(keep), dtype=np.int64)
        self.batch = take(self.batch, keep)
        self.index = self.index[keep]
        for q in self.parts:
            q["kept"] = {k: (v[keep] if v is not None else None) for k, v in q["kept"].items()}

    def _part(self, q, failures=None, total=None) -> PartResult:
        k, first = q["kept"], q["first"]
        f = first.sides
        s = Sides(
            k["lhs"],
            k["rhs"],
            f.claimed,
            applicable=k["applicable"],
            lhs_ci=None if k["ci_lo"] is None else (k["ci_lo"], k["ci_hi"]),
            confidence=f.confidence,
            constants=f.constants,
            note=f.note,
            kind=f.kind,
            atol=f.atol,
            role=f.role,
            family=f.family,
        )
        if failures is None:
            failures = np.concatenate(q["failures"]) if q["failures"] else np.zeros(0, np.int64)
        max_ratio = q["max_ratio"] if np.isfinite(q["max_ratio"]) else float("nan")
        tight = bool(q["claimed"] != "rate" and q["applicable"] and max_ratio >= 1 - TIGHT_RTOL)
        holds = failures.size == 0 and not (q["claimed"] == "tight" and q["applicable"] and not tight)
        return PartResult(
            name=q["name"],
            claimed=q["claimed"],
            instances=self.total if total is None else total,
            applicable=q["applicable"],
            holds=bool(holds),
            max_ratio=float(max_ratio),
            tight=tight,
            failures=failures,
            sides=s,
            holds_each=k["holds_each"],
            slack=k["slack"],
            ratio=k["ratio"],
            index=self.index,
        )

    def result(self, statement_id, family) -> Result:
        """The reduced result: counts and verdicts over every chunk; sides of the kept instances only."""
        return Result(statement_id, family, self.total, [self._part(q) for q in self.parts], self.seconds)


def _rows_of(p: PartResult, rows):
    s = p.sides
    return {
        "lhs": s.lhs[rows],
        "rhs": s.rhs[rows],
        "applicable": s.applicable[rows],
        "ci_lo": None if s.lhs_ci is None else s.lhs_ci[0][rows],
        "ci_hi": None if s.lhs_ci is None else s.lhs_ci[1][rows],
        "holds_each": p.holds_each[rows],
        "slack": p.slack[rows],
        "ratio": p.ratio[rows],
    }
