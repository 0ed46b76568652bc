"""The verbose view of ``moreau check`` (``-v``): per (statement, family) every part of the printed claim
and of each reading, with how close each part comes to failing, in words that cannot be misread."""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.rates import part_detectable_change
from moreau.analysis.engine.render import params as _params
from moreau.analysis.engine.report_text import _fmt, _wrap
from moreau.analysis.engine.verdict import _theorem_parts, worst_failure

__all__ = ["print_table"]


def print_table(records, slack_threshold=None) -> bool:
    """The verbose view (``-v``): per (statement, family) every part of the printed claim, then
    every reading's parts; returns whether every printed claim holds."""
    from moreau.analysis.engine.findings import record_findings
    from moreau.analysis.engine.records import SLACK_THRESHOLD, is_loose, record_json

    threshold = SLACK_THRESHOLD if slack_threshold is None else slack_threshold

    head = (
        f"{'id':20s} {'source':38s} {'family':9s} {'inst':>5s} "
        f"{'holds':>5s} {'max L/R':>9s} {'tight':>5s} {'time':>6s}"
    )
    print(head)
    print("-" * len(head))
    ok = True
    for rec in records:
        r, st = rec.result, rec.statement
        j = record_json(rec)
        # the summary's view: the theorem's parts decide, a failure at the rounding floor is undecided
        theorem = _theorem_parts(r)
        fails = any(not p.holds for p in theorem)
        holds = "NO" if fails else "?" if any(p.at_floor for p in theorem) else "yes"
        tight = "-" if fails else "yes" if j["tight"] else "no"
        print(
            f"{st.id:20s} {st.source[:38]:38s} {r.family:9s} {r.instances:5d} {holds:>5s} "
            f"{_fmt(r.max_ratio):>9s} {tight:>5s} {r.seconds + rec.mutant_seconds:6.2f}"
        )
        for p in r.parts:
            flag = (
                "   <-- FAILS"
                if not p.holds
                else f"   LOOSE (max L/R < {threshold:g} on every instance)"
                if is_loose(p, threshold)
                else ""
            )
            measure = _measure(p)
            outside = p.instances - p.applicable
            if not p.applicable:
                print(
                    f"{'':22s}- {p.name} [{p.claimed}]: NOT TESTED (none of the {p.instances} instances meets its "
                    f"assumptions; raise --trials)"
                )
                continue
            scope = f" ({outside} outside its assumptions: not checked)" if outside else ""
            if p.at_floor:  # counted as holding above; the summary calls them inconclusive: say so here too
                scope += f" ({p.at_floor} of them at the rounding floor: inconclusive)"
            if p.rhs_negative:
                scope += f"; right side negative on {p.rhs_negative} (left out of max L/R, as in the summary)"
            role = ", auxiliary" if p.sides.role == "auxiliary" else ""
            print(
                f"{'':22s}- {p.name} [{p.claimed}{role}]: holds on {p.applicable - p.failures.size}/{p.applicable}"
                f"{scope}, {measure}{flag}"
            )
            if p.sides.note:
                print(f"{'':24s}{p.sides.note}")
        if not r.holds:
            ok = False
            where = worst_failure([r])  # the summary's counterexample: the worst failing instance
            if where is not None:
                i = where[3]
                print(
                    f"{'':22s}  counterexample (the summary's): #{i}: "
                    + _params(rec.batch, rec.local(i), 400)
                )
        computed = [  # each failing part's worst instance, and growth along a parameter (findings.py)
            f["text"]
            for f in record_findings(rec)
            if f["kind"] == "growth" or (f["kind"] in ("worst", "rate") and f["failing"])
        ]
        for line in computed:
            print(_wrap(f"{'':24s}{line}", indent=26))
        for name, (rr, _, _) in rec.readings.items():
            kind = rec.statement.reading(name).kind
            print(
                f"{'':22s}{kind} {name!r}: {'holds' if rr.holds else 'FAILS'}, max L/R {_fmt(rr.max_ratio)}"
            )
            for p in rr.parts:
                if p.applicable:
                    print(
                        f"{'':24s}- {p.name} [{p.claimed}]: holds on {p.applicable - p.failures.size}/{p.applicable}, "
                        f"{_measure(p)}"
                    )
    print()
    return ok


def _measure(p):
    """How close a part comes to failing, in words that cannot be misread: a Monte Carlo ratio
    above 1 whose interval reaches 1 is "consistent with attained", never "holds, max 1.02"."""
    if p.claimed == "exact":
        return f"max error/allowed {_fmt(p.max_ratio)}"
    if p.claimed == "rate":
        return _rate_measure(p)
    from moreau.analysis.engine.records import identically_zero

    s = p.sides
    if identically_zero(p):
        return "lhs identically 0 on this family: not evidence (the part reduces to rhs >= 0)"
    if s.lhs_ci is not None and p.applicable and p.holds and np.isfinite(p.max_ratio) and p.max_ratio > 1:
        return f"max L/R {_fmt(p.max_ratio)} by its point estimate: consistent with attained" + _ci_measure(p)
    if not p.holds:  # a failing part's maximum exceeds its bound: "attained" would misread it
        return f"max L/R {_fmt(p.max_ratio)}, exceeded" + _ci_measure(p)
    return f"max L/R {_fmt(p.max_ratio)}, {'attained' if p.tight else 'not attained'}" + _ci_measure(p)


def _level(s):
    if s.confidence is None:
        return ""
    joint = f" jointly over {s.family} instances" if s.family and s.family > 1 else ""
    return f", {100 * s.confidence:g}% interval{joint}"


def _rate_measure(p):
    """The instance whose interval is farthest from the claim: slope [lo, hi] vs exponent."""
    s = p.sides
    if not p.applicable:
        return "no sweep"
    i = int(np.argmin(np.where(s.applicable, p.slack, np.inf)))
    tol = f" ± {s.atol:g}" if s.atol else ""
    claim = {"equal": "exponent", "at most": "exponent at most", "at least": "exponent at least"}[s.kind]
    return (
        f"fitted exponent {_fmt(s.lhs[i])} [{_fmt(s.lhs_ci[0][i])}, {_fmt(s.lhs_ci[1][i])}], claimed {claim} "
        f"{_fmt(s.rhs[i])}{tol}{_level(s)}; worst of {p.applicable}{_power(p)}"
    )


def _power(p):
    """The rate part's power (``rates.part_detectable_change``) in words, with the direction its kind sees."""
    d = part_detectable_change(p)
    if d is None:
        return ""
    if d < 0:
        return "; the claimed exponent itself is rejected"
    what = {"equal": "|Δexponent| > ", "at most": "Δexponent < -", "at least": "Δexponent > "}[p.sides.kind]
    return f"; detects {what}{_fmt(d)}"


def _ci_measure(p):
    """Monte Carlo parts: the interval of lhs at the instance closest to failing."""
    s = p.sides
    if s.lhs_ci is None or not p.applicable:
        return ""
    from moreau.analysis.engine.records import worst_ci_instance

    i = worst_ci_instance(s)
    return (
        f"; closest: {_fmt(s.lhs[i])} in [{_fmt(s.lhs_ci[0][i])}, {_fmt(s.lhs_ci[1][i])}] "
        f"vs {_fmt(s.rhs[i])}{_level(s)}"
    )
