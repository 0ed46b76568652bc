r"""Recorded class worst cases beside this run's instances: the gap, stated in the default report.

A statement whose instances cannot reach the worst case of its class (Frank–Wolfe on box quadratics
against the worst smooth convex function, found by a performance-estimation problem) says so in every
default run, not only under ``--pep``.  It records, per family, :class:`ClassWorst` entries
(``Statement.class_worst``): the class worst case of LHS/RHS of one part at fixed parameters (a PEP
value, with where it comes from: the solver call that gives it, recomputed by the tests marked
``pep``), the claim changes that select the same quantity on the instances (the bound at iterate
t = 2 only, say), and why the family cannot reach it.  :func:`class_gaps` evaluates the statement on
the record's batch (the run's own instances) with those changes and reports the instances' largest
LHS/RHS next to the recorded value; every number but the recorded one is this run's.

The default run evaluates the statement once per entry on its batch (a few hundredths of a second
for fw.convex's five entries); the PEP itself is never solved there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ClassWorst", "class_gaps", "gap_line"]


@dataclass(frozen=True)
class ClassWorst:
    """The recorded class worst case of ``part``'s LHS/RHS at ``label`` (e.g. "t = 2").

    ``changes``: claim entries that make the part measure that quantity on the instances (applied
    on top of ``reading``'s changes, or the printed claim when ``reading`` is empty); ``value``: the
    class worst case of LHS/RHS; ``source``: where it comes from (the call that computes it, the solver,
    its status); ``why``: why the instance family cannot reach it."""

    label: str
    part: str
    value: float
    source: str
    why: str
    changes: dict = field(default_factory=dict)
    reading: str = ""

    def __post_init__(self):
        if not (isinstance(self.value, int | float) and np.isfinite(self.value) and self.value > 0):
            raise ValueError(
                f"ClassWorst {self.label!r}: value must be a positive number (got {self.value!r})"
            )
        if not self.source or not self.why:
            raise ValueError(f"ClassWorst {self.label!r}: source and why must say where the value comes from")


def class_gaps(rec) -> list[dict]:
    """One JSON-ready dict per recorded entry of ``rec``'s statement and family: ``label``, ``part``,
    ``reading``, ``class_worst`` (recorded), ``source``, ``why``, ``instances_reach`` (this run's largest
    LHS/RHS there), ``instance`` (which one), ``applicable``, ``gap`` (1 − reach/class worst case)."""
    from moreau.analysis.engine.core import Reading

    st, fam = rec.statement, rec.result.family
    entries = (getattr(st, "class_worst", None) or {}).get(fam, ())
    out = []
    names = {r.name for r in getattr(st, "readings", ())}
    for e in entries:
        base = dict(st.claim)
        if e.reading and e.reading not in names:
            # a statement rebuilt without that reading (dataclasses.replace, a user's variant): the entry is
            # reported as not evaluated, never a crash of the run
            out.append(
                {
                    "label": e.label,
                    "part": e.part,
                    "reading": e.reading,
                    "class_worst": float(e.value),
                    "source": e.source,
                    "why": e.why,
                    "instances_reach": None,
                    "applicable": 0,
                    "gap": None,
                    "skipped": f"the statement has no reading {e.reading!r}",
                }
            )
            continue
        if e.reading:
            base.update(st.reading(e.reading).changes)
        claim = {**base, **e.changes}
        res = st.run(fam, None, None, batch=rec.batch, reading=Reading(f"class worst {e.label}", claim))
        p = next((q for q in res.parts if q.name == e.part), None)
        row = {
            "label": e.label,
            "part": e.part,
            "reading": e.reading or "printed",
            "class_worst": float(e.value),
            "source": e.source,
            "why": e.why,
        }
        if p is None or not p.applicable:
            out.append({**row, "instances_reach": None, "applicable": 0, "gap": None})
            continue
        r = np.where(np.asarray(p.sides.applicable, bool), np.nan_to_num(p.ratio, nan=-np.inf), -np.inf)
        i = int(np.argmax(r))
        reach = float(r[i])
        index = getattr(rec, "index", None)
        out.append(
            {
                **row,
                "instances_reach": reach,
                "instance": int(index[i]) if index is not None else i,
                "applicable": int(p.applicable),
                "gap": 1.0 - reach / float(e.value),
            }
        )
    return out


def gap_line(fam: str, gaps: list[dict]) -> str | None:
    """The report's line for one record's entries (None when there are none): per label, this run's
    instances' largest LHS/RHS over the recorded class worst case, the gaps, why, and where the values
    come from."""
    if not gaps:
        return None
    each = ", ".join(
        f"{g['label']} {g['instances_reach']:.3g}/{g['class_worst']:.3g}"
        if g["instances_reach"] is not None
        else f"{g['label']} -/{g['class_worst']:.3g}"
        for g in gaps
    )
    pct = [100 * g["gap"] for g in gaps if g["gap"] is not None]
    span = f" (gap {min(pct):.0f}–{max(pct):.0f} %)" if pct else ""
    whys: dict = {}
    for g in gaps:
        whys.setdefault(g["why"], []).append(g["label"])
    why = "; ".join(f"{', '.join(labels)}: {w}" for w, labels in whys.items())
    sources = "; ".join(dict.fromkeys(g["source"] for g in gaps))
    return (
        f"class worst case [{fam}, {gaps[0]['reading']}], LHS/RHS this run's instances/class: {each}{span}; "
        f"{why} (recorded: {sources})"
    )
