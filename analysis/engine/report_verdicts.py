"""The verdict lines of ``moreau check``: one line per statement (its verdict as printed), then under it
what every instance shares, the recorded worst and minimal instances, and a computed counterexample of a
statement that fails as printed.  Every number is read from the run's results."""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.class_worst import gap_line
from moreau.analysis.engine.render import params as _params
from moreau.analysis.engine.report_text import _fmt, _num, _short, _wrap
from moreau.analysis.engine.verdict import FAILS, headline, statement_verdict, worst_failure

__all__ = [
    "group",
    "verdict_of",
    "counterexample_text",
    "minimal_text",
    "worst_text",
    "shrunk_text",
    "print_verdicts",
    "shared_lines",
]


def group(records):
    """``[(statement, [records of its families])]`` in run order."""
    out = {}
    for rec in records:
        out.setdefault(rec.statement.id, (rec.statement, []))[1].append(rec)
    return list(out.values())


def verdict_of(st, recs):
    """The statement's verdict (``moreau.analysis.engine.verdict.statement_verdict``) over its records;
    a recorded minimal counterexample is one more instance of the printed claim this run evaluated
    (a run whose batch happens to hold, e.g. ``--trials 1``, still fails where it fails)."""
    return statement_verdict(
        st,
        [r.result for r in recs]
        + [r.minimal[1] for r in recs if r.minimal is not None]
        + [r.worst[1] for r in recs if getattr(r, "worst", None) is not None],
        {r.name: [rec.readings[r.name][0] for rec in recs if r.name in rec.readings] for r in st.readings},
    )


def counterexample_text(recs, results, reading=None):
    """The failing instance with the largest LHS/RHS of a claim, rendered from the run's own
    numbers: family, instance index, its parameters, the failing part's sides and ratio."""
    where = worst_failure(results)
    if where is None:
        return None
    res, p, row, i = where
    rec = next(r for r in recs if (r.result is res if reading is None else r.readings[reading][0] is res))
    batch, index = (rec.batch, rec.index) if reading is None else rec.readings[reading][1:]
    brow = row if index is None else int(np.searchsorted(index, i))
    s = p.sides
    if p.claimed == "rate":
        what = (
            f"fitted exponent {_fmt(s.lhs[row])} [{_fmt(s.lhs_ci[0][row])}, {_fmt(s.lhs_ci[1][row])}], "
            f"claimed {s.kind} {_fmt(s.rhs[row])}" + (f" ± {s.atol:g}" if s.atol else "")
        )
    else:
        lhs = s.lhs_ci[0][row] if s.lhs_ci is not None else s.lhs[row]
        what = f"lhs {_num(lhs)} > rhs {_num(s.rhs[row])}" + (
            f" (ratio {_fmt(p.ratio[row])})" if np.isfinite(p.ratio[row]) and s.rhs[row] > 0 else ""
        )
    return f"counterexample [{res.family} #{i}]: {what} at " + _params(batch, brow)


def minimal_text(one, res, head="minimal counterexample"):
    """The recorded minimal counterexample's line (or, with ``head``, a shrunk one's): its sides as this run
    computed them."""
    fails = [p for p in res.parts if p.failures.size and p.sides.role == "theorem"]
    if not fails:
        return f"recorded {head} [{res.family}]: no longer fails ({_params(one, 0)})"
    p = fails[0]
    s = p.sides
    if p.claimed == "rate":  # an exponent against the claimed one, not a bound
        ci = (
            f" [{s.lhs_ci[0][0]:.4g}, {s.lhs_ci[1][0]:.4g}]"
            if s.lhs_ci is not None and s.lhs_ci[0][0] < s.lhs_ci[1][0]
            else ""
        )
        what = f"exponent {s.lhs[0]:.4g}{ci}, claimed {s.kind} {s.rhs[0]:.4g}"
    else:
        ratio = f" (ratio {p.ratio[0]:.6g})" if np.isfinite(p.ratio[0]) and s.rhs[0] > 0 else ""
        what = f"lhs {s.lhs[0]:.6g} > rhs {s.rhs[0]:.6g}{ratio}"
    return f"{head} [{res.family}]: {what} at " + _params(one, 0)


def worst_text(batch, res):
    """The recorded worst instances' line: the largest LHS/RHS this run computed on them, per theorem
    inequality part (``Statement.worst``; found by the worst-case search, docs/optimisation.md)."""
    out = []
    for p in res.parts:
        if p.claimed not in ("upper", "tight") or p.sides.role != "theorem" or not p.applicable:
            continue
        r = np.where(p.sides.applicable & np.isfinite(p.ratio), p.ratio, -np.inf)
        if np.isfinite(r).any():
            out.append(f"{p.name} {np.max(r):.6g}")
    n = res.instances
    return f"recorded worst instance{'s' if n > 1 else ''} [{res.family}, {n}]: max LHS/RHS " + (
        "; ".join(out) if out else "no applicable part"
    )


def shrunk_text(one, res, log, evals):
    """The run's worst failing instance after shrinking (``moreau.analysis.engine.shrink``)."""
    return minimal_text(
        one, res, head="smallest counterexample found"
    )  # its steps: the JSON's shrunk_counterexample


def print_verdicts(records, elapsed=None):
    """One line per statement (id, source, verdict as printed, the reading that holds, max ratio),
    a computed counterexample under each statement that fails as printed; returns the verdicts."""
    verdicts = []
    width = max([20] + [len(st.id) for st, _ in group(records)])
    for st, recs in group(records):
        sv = verdict_of(st, recs)
        verdicts.append(sv)
        first, *rest = headline(sv)
        print(_wrap(f"{st.id:{width}s} {_short(st.source):26s} {first}"))
        for line in rest:
            print(_wrap(f"{'':22s}{line}"))
        for line in shared_lines(st, recs):  # what every instance has and the hypotheses do not imply
            print(_wrap(f"{'':22s}{line}"))
        for rec in recs:  # the recorded worst instances (Statement.worst), evaluated by this run
            if getattr(rec, "worst", None) is not None:
                print(_wrap(f"{'':22s}{worst_text(*rec.worst)}"))
            gaps = gap_line(rec.result.family, getattr(rec, "class_worst", []))
            if gaps:  # recorded class worst cases (Statement.class_worst) beside this run's instances
                print(_wrap(f"{'':22s}{gaps}"))
        minimal = [r.minimal for r in recs if r.minimal is not None]
        for one, res in minimal:  # the recorded minimal counterexample, evaluated by this run
            text = minimal_text(one, res)
            print(_wrap(f"{'':22s}{text}"))
        if sv["printed"]["verdict"] == FAILS and not any(not res.holds for _, res in minimal):
            text = counterexample_text(recs, [r.result for r in recs])
            if text:
                print(_wrap(f"{'':22s}{text}"))
            for shrunk in [r.shrunk for r in recs if r.shrunk is not None]:
                print(_wrap(f"{'':22s}{shrunk_text(*shrunk)}"))
    return verdicts


def shared_lines(st, recs):
    """Per family, the properties every instance of the run has while the printed hypotheses do not
    imply them and the statement does not waive them (``moreau.analysis.engine.properties``)."""
    from moreau.analysis.engine.properties import shared_properties

    out = []
    for rec in recs:
        shared, _ = shared_properties(st, rec.result.family, getattr(rec, "properties", {}))
        if shared:
            out.append(
                f"every instance [{rec.result.family}]: {', '.join(shared)} — not assumed: "
                "the verdict does not cover the rest"
            )
    return out
