r"""Verdicts: what a run decides about a printed statement and each of its readings.

One vocabulary for ``moreau check`` and ``moreau reproduce``:

* ``holds`` — no applicable instance violates the claim (with ``shape_only``: every tested part
  of the theorem is an O(·) shape — exponents, dependence — so the constant inside O(·) is not
  refutable: "holds (shape; the constant is not refutable)");
* ``fails`` — an applicable instance violates a part of the theorem (for the printed statement
  the report says "FAILS AS PRINTED");
* ``undecided`` — the run cannot decide either way, with the reason (no instance met the
  assumptions; only a check of the checker's own estimates failed).

A verdict is computed from the run's results only.  What the catalogue *expects*
(``Statement.expect``, ``Reading.expect``) is compared with it afterwards: ``as_expected`` decides
the exit code (a known failure that reproduces is expected, like pytest's xfail), never the
verdict.  The JSON shape of a claim's verdict (:func:`claim_verdict`) is the same in both tools;
:data:`SCHEMA_VERSION` versions it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "SCHEMA_VERSION",
    "HOLDS",
    "FAILS",
    "UNDECIDED",
    "claim_verdict",
    "statement_verdict",
    "headline",
    "summary_line",
    "expectation_line",
    "worst_failure",
    "failure_class",
    "NO_REPAIR",
]

#: version of the JSON records' verdict fields (``moreau check --json``, reproduce manifests);
#: 3: the printed verdict carries ``origin``, ``failure_class`` and ``repaired_by``
SCHEMA_VERSION = 3
#: the failure class of a statement that fails as printed and no reading of which holds
NO_REPAIR = "no repair found"
HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"


def _theorem_parts(result):
    parts = [p for p in result.parts if p.sides.role == "theorem"]
    return parts or list(result.parts)


def worst_failure(results):
    """``(result, part, row of its sides, global instance index)`` of the failing applicable instance
    with the largest LHS/RHS over the theorem's parts (rate parts: the interval farthest from the
    claim), or None.  (A chunked run keeps some rows only: ``part.index`` maps them.)"""
    best, where = -np.inf, None
    for res in results:
        for p in _theorem_parts(res):
            f = p.failures
            if p.index is not None:  # failures are global indices; keep those whose rows were kept
                pos = np.searchsorted(p.index, f)
                ok = (pos < p.index.size) & (p.index[np.minimum(pos, p.index.size - 1)] == f)
                f = pos[ok]
            if not f.size:
                continue
            with np.errstate(invalid="ignore"):
                score = (
                    -np.asarray(p.slack, float)[f]
                    if p.claimed == "rate"
                    else np.where(np.isnan(p.ratio[f]), np.inf, p.ratio[f])
                )
            k = int(np.argmax(score))
            if score[k] > best or where is None:
                row = int(f[k])
                best, where = (
                    float(score[k]),
                    (res, p, row, int(p.index[row]) if p.index is not None else row),
                )
    return where


def claim_verdict(results, evidence_only=()) -> dict:
    """The verdict on one claim (the printed statement or a reading) from its results over families.

    ``{"verdict", "shape_only", "reason", "max_ratio", "attained", "families": {family: verdict},
    "monte_carlo_max_ratio"}``; ``max_ratio`` is LHS/RHS over the theorem's inequality parts with exact
    sides (None where none was tested; Monte Carlo parts' point estimates are reported apart)."""
    fams: dict[str, str] = {}
    ratios: list[float] = []
    mc_ratios: list[float] = []
    attained, tested, shape, reasons = False, False, True, []
    mc_failing = []  # Monte Carlo parts that fail: their ratio belongs in a failing claim's max
    negative: list[str] = []
    for res in results:
        parts = _theorem_parts(res)
        failing = [p for p in parts if not p.holds]
        aux_failing = [p for p in res.parts if p.sides.role == "auxiliary" and not p.holds and p not in parts]
        tested_here = [p for p in parts if p.applicable]
        tested |= bool(tested_here)
        shape &= all(p.claimed == "rate" for p in tested_here)
        attained |= any(p.tight for p in tested_here if p.claimed in ("upper", "tight"))
        for p in tested_here:  # exact sides give the ratio; a Monte Carlo point estimate is reported apart
            if p.claimed in ("upper", "tight") and np.isfinite(p.max_ratio):
                (mc_ratios if p.sides.lhs_ci is not None else ratios).append(float(p.max_ratio))
                if p.sides.lhs_ci is not None and not p.holds:
                    mc_failing.append(float(p.max_ratio))
        negative.extend(f"{p.rhs_negative}/{p.applicable}" for p in tested_here if p.rhs_negative)
        floor = [p for p in parts if p.at_floor]
        if failing:
            _set(fams, res.family, FAILS)
        elif floor:
            _set(fams, res.family, UNDECIDED)
            reasons.append(
                f"{res.family}: inconclusive at the rounding floor ('{floor[0].name}': {floor[0].at_floor} "
                f"instance(s) fail only where the left side is at the computation's rounding level; "
                "evaluate them in higher precision to decide)"
            )
        elif aux_failing:
            _set(fams, res.family, UNDECIDED)
            reasons.append(f"{res.family}: the checker's own check '{aux_failing[0].name}' failed")
        elif not tested_here:
            _set(fams, res.family, UNDECIDED)
            reasons.append(f"{res.family}: no instance met the assumptions")
        else:
            _set(fams, res.family, HOLDS if res.family not in evidence_only else "holds (evidence only)")
    if FAILS in fams.values():
        verdict, reason = FAILS, ""
    elif HOLDS in fams.values():
        verdict, reason = HOLDS, ""
    else:
        reasons += [f"{f}: evidence only (no power)" for f, v in fams.items() if v == "holds (evidence only)"]
        verdict, reason = UNDECIDED, "; ".join(reasons) or "nothing was run"
    mc = max(mc_ratios) if mc_ratios else None
    if verdict == FAILS and mc_failing:  # a claim failed by a Monte Carlo part: never "fails (max 1)"
        ratios = ratios + mc_failing
    return {
        "verdict": verdict,
        "shape_only": bool(verdict == HOLDS and tested and shape),
        "reason": reason,
        "max_ratio": max(ratios)
        if ratios
        else (mc if verdict != HOLDS or (mc is not None and mc <= 1) else None),
        "attained": bool(attained),
        "families": fams,
        # the largest Monte Carlo point estimate of LHS/RHS; above 1 on a claim that holds, its interval
        # reaches 1: consistent with attained, never "holds with max 1.02"
        "monte_carlo_max_ratio": mc,
        # a bound negative where its left side is a norm is itself a finding: "k/n" per part
        "rhs_negative": negative,
    }


def _set(fams, family, verdict):
    """A family's verdict over several results of it (the batch, a recorded counterexample): fails if
    one fails, else holds if one holds, else undecided (as families combine into the claim's)."""
    old = fams.get(family)
    fams[family] = verdict if old is None or _RANK[verdict] < _RANK[old] else old


_RANK = {FAILS: 0, HOLDS: 1, "holds (evidence only)": 2, UNDECIDED: 3}


def statement_verdict(st, printed_results, reading_results) -> dict:
    """The printed statement's verdict and each reading's, with the catalogue's expectations.

    ``reading_results``: ``{reading name: [Result per family]}``."""
    ev = getattr(st, "evidence_only", {}) or {}
    printed = {"id": st.id, "claim": "printed", **claim_verdict(printed_results, ev), "expected": st.expect}
    printed["as_expected"] = printed["verdict"] == st.expect
    printed["origin"] = getattr(st, "origin", "printed")
    readings = []
    for r in st.readings:
        v = {
            "claim": r.name,
            "kind": r.kind,
            **claim_verdict(reading_results.get(r.name, []), ev),
            "expected": r.expect,
        }
        v["as_expected"] = v["verdict"] == r.expect
        # one shape for every claim: a reading is classed by what it repairs, not by a failure class
        v.update(origin=printed["origin"], failure_class=None, repaired_by=None, repairs=r.repairs)
        readings.append(v)
    printed["failure_class"], printed["repaired_by"] = failure_class(st, printed, readings)
    return {
        "printed": printed,
        "readings": readings,
        "as_expected": printed["as_expected"] and all(v["as_expected"] for v in readings),
    }


def failure_class(st, printed, readings):
    """``(class, reading name)`` of a claim that fails as printed, computed from this run: the
    ``repairs`` class of the nearest reading that holds (the first, in the statement's order, that is
    not an inconsistency), ``("no repair found", None)`` when none holds, ``(None, None)`` when the
    printed claim does not fail.  A remark's class is "remark" whatever repairs it."""
    if printed["verdict"] != FAILS:
        return None, None
    by_name = {r.name: r for r in getattr(st, "readings", ())}
    for v in readings:
        if v["kind"] != "inconsistency" and v["verdict"] == HOLDS:
            r = by_name[v["claim"]]
            cls = "remark" if printed.get("origin") == "remark" else (r.repairs or "repair (unclassified)")
            return cls, r.name
    return ("remark" if printed.get("origin") == "remark" else NO_REPAIR), None


def _above_one(x):
    """``x`` > 1 in as few significant digits (at least 4) as show it above 1: never "1" for 1.00001."""
    return next((t for t in (f"{x:.{d}g}" for d in range(4, 18)) if float(t) > 1), repr(x))


def _ratio_text(v):
    out = (
        ""
        if v["max_ratio"] is None
        else f"max {v['max_ratio']:.4g}" + (", attained" if v["attained"] else "")
    )
    mc = v.get("monte_carlo_max_ratio")
    if v["verdict"] == HOLDS and mc is not None and mc > 1:
        out += (", " if out else "") + f"Monte Carlo {_above_one(mc)}: interval reaches 1"
    return out


def headline(sv) -> list:
    """The statement's verdict in words, as lines (no ids, no padding): the printed statement's
    verdict first, then the reading that holds (when it fails as printed), inconsistencies with the
    paper's own text and what differs from the catalogue's expectation."""
    p = sv["printed"]
    lines = []
    if p["verdict"] == HOLDS:
        out = "holds" + (" (shape; the constant is not refutable)" if p["shape_only"] else "")
        extra = _ratio_text(p)
        lines.append(out + (f" ({extra})" if extra and not p["shape_only"] else ""))
    elif p["verdict"] == FAILS:
        lines.append(
            "FAILS AS PRINTED"
            + (f" (max {p['max_ratio']:.4g})" if p["max_ratio"] is not None else "")
            + (
                f"; right side negative on {', '.join(p['rhs_negative'])} instances (the bound is below 0 "
                "there; the max ratio leaves them out)"
                if p.get("rhs_negative")
                else ""
            )
        )
        good = [v for v in sv["readings"] if v["kind"] != "inconsistency" and v["verdict"] == HOLDS]
        if good:
            v = good[0]
            extra = _ratio_text(v) if not v["shape_only"] else "shape"
            cls = p.get("failure_class")
            lines.append(
                f"holds under reading '{v['claim']}'"
                + (f" ({extra})" if extra else "")
                + (f"; class: {cls}" if cls else "")
            )
        elif any(v["kind"] != "inconsistency" for v in sv["readings"]):
            lines.append(f"no stated reading holds; class: {p.get('failure_class') or NO_REPAIR}")
        else:
            lines.append(f"class: {p.get('failure_class') or NO_REPAIR}")
    else:
        lines.append(f"UNDECIDED ({p['reason']})")
    incons = [v for v in sv["readings"] if v["kind"] == "inconsistency" and v["verdict"] == FAILS]
    if incons:
        lines.append("inconsistent with the paper's own text: " + ", ".join(repr(v["claim"]) for v in incons))
    unexpected = [v for v in [p, *sv["readings"]] if not v["as_expected"]]
    if unexpected:
        lines.append(
            "UNEXPECTED: "
            + "; ".join(
                f"{'printed' if v['claim'] == 'printed' else repr(v['claim'])} {v['verdict']}, expected {v['expected']}"
                for v in unexpected
            )
        )
    return lines


def summary_line(verdicts) -> str:
    """The run's counts, printed statements, remarks and reconstructions apart; e.g. "27 printed
    statements: 15 hold, 12 fail (5 no repair found, 3 missing hypothesis, 2 misprint, 2 rate) ·
    1 remark: 1 fails · 11 reconstructions: 9 hold, 2 fail (2 missing hypothesis)"."""
    groups = []
    for origin, noun in (
        ("printed", "printed statement"),
        ("remark", "remark"),
        ("reconstruction", "reconstruction"),
    ):
        vs = [v for v in verdicts if v["printed"].get("origin", "printed") == origin]
        if vs or origin == "printed":
            groups.append(_group_counts(vs, noun))
    return " · ".join(groups)


def _group_counts(vs, noun):
    n = len(vs)
    hold = sum(v["printed"]["verdict"] == HOLDS for v in vs)
    shape = sum(v["printed"]["verdict"] == HOLDS and v["printed"]["shape_only"] for v in vs)
    fail = [v["printed"] for v in vs if v["printed"]["verdict"] == FAILS]
    und = sum(v["printed"]["verdict"] == UNDECIDED for v in vs)
    classes = {}
    for p in fail:
        c = p.get("failure_class") or NO_REPAIR
        if c != "remark":
            classes[c] = classes.get(c, 0) + 1
    order = (NO_REPAIR, "missing hypothesis", "misprint", "constant", "rate")
    cls = ", ".join(
        f"{classes[c]} {c}" for c in sorted(classes, key=lambda c: (order.index(c) if c in order else 9, c))
    )
    items = []
    if hold or not fail:
        items.append(
            f"{hold} hold{'s' * (hold == 1 and n == 1)}" + (f" ({shape} by shape only)" if shape else "")
        )
    if fail:
        items.append(f"{len(fail)} fail{'s' * (len(fail) == 1 and n == 1)}" + (f" ({cls})" if cls else ""))
    if und:
        items.append(f"{und} undecided")
    return f"{n} {noun}{'s' * (n != 1)}: " + ", ".join(items)


def expectation_line(verdicts) -> str:
    """Whether every verdict is what the catalogue expects (the exit code's input), in words."""
    bad = [v["printed"]["id"] for v in verdicts if not v["as_expected"]]
    if not bad:
        return "every verdict as the catalogue expects"
    return f"{len(bad)} statement(s) not as the catalogue expects: {', '.join(bad)}"
