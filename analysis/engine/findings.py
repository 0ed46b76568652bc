r"""The findings of a run, rendered from its records only.

A finding is what this run computed about one (statement, family) record, as a line of text and a
dict holding the same numbers (``moreau check --json``: ``"findings"`` and ``"finding_values"``):

* ``"worst"``: per part of the printed claim (its theorem parts), the worst instance — the failing
  one with the largest lhs/rhs, else the applicable one closest to failing — with its index, its
  parameters, lhs, rhs and their ratio (a Monte Carlo part: the estimate's interval; an identity:
  error/allowed), and on how many applicable instances the part fails;
* ``"rate"``: per rate part, the fitted exponent with its interval against the claimed exponent, at
  the sweep farthest from the claim;
* ``"not tested"``: a part no instance of the run met the assumptions of;
* ``"minimal"`` / ``"shrunk"``: the recorded minimal counterexample (``Statement.counterexamples``)
  or the shrunk failing instance, with the sides this run evaluated there;
* ``"reading"``: each reading's verdict on the family and its largest lhs/rhs;
* ``"growth"``: where the printed claim fails, a theorem part whose lhs/rhs keeps growing along a
  parameter the run's instances span (two decades or more): the worst instance of each log-spaced bin
  of that parameter (its value and ratio) and the log-log slope fitted through them.

Every number is read from the record (or, for a slope, fitted from numbers read from it); the
catalogue's prose about a statement (``Statement.findings``: its *notes*) is never rendered here —
it is in ``moreau check --describe`` and docs/catalogue.md under its own label (docs/findings.md).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.render import params

__all__ = ["record_findings", "finding_lines", "NOTES_LABEL", "GROWTH_BINS", "GROWTH_FACTOR", "fmt"]

#: the label of the catalogue's prose in ``--describe`` and docs/catalogue.md
NOTES_LABEL = "Notes (prose written by the catalogue's authors; numbers in them are not from this run)"
#: log-spaced bins of a parameter for ``"growth"``, and by how much the extreme bin's worst lhs/rhs must
#: exceed the opposite one's (the criterion of ``moreau.analysis.engine.analyse``'s ``unbounded``)
GROWTH_BINS = 5
GROWTH_FACTOR = 4.0
#: characters of an instance's parameters in a finding
PARAMS_ROOM = 240


def fmt(x) -> str:
    """A number of a finding: 4 significant digits (non-finite values as they are: inf, nan)."""
    return f"{float(x):.4g}"


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def _rows(p, idx) -> np.ndarray:
    """The rows of ``p``'s sides that hold the global instances ``idx`` (a chunked run keeps some rows only)."""
    idx = np.asarray(idx, dtype=int)
    if p.index is None:
        return idx
    pos = np.searchsorted(p.index, idx)
    ok = (pos < p.index.size) & (p.index[np.minimum(pos, p.index.size - 1)] == idx)
    return pos[ok]


def _global(p, row) -> int:
    return int(p.index[row]) if p.index is not None else int(row)


def _params(batch, index, i) -> str:
    """The parameters of global instance ``i`` in ``batch`` (rows ``index``; None: the row itself)."""
    if batch is None:
        return ""
    if index is None:
        row = int(i)
    else:
        k = int(np.searchsorted(index, i))
        if k >= np.size(index) or index[k] != i:
            return ""
        row = k
    return params(batch, row, PARAMS_ROOM)


def _at(batch, index, i) -> str:
    text = _params(batch, index, i)
    return f" at {text}" if text else ""


def _level(s) -> str:
    return "" if s.confidence is None else f", {fmt(100 * s.confidence)}% interval"


def _theorem_parts(res):
    return [p for p in res.parts if p.sides.role == "theorem"] or list(res.parts)


def _part_finding(p, fam, batch, index) -> dict:
    """The worst instance of one part (see the module docstring)."""
    s = p.sides
    head = f"[{fam}] '{p.name}' ({p.claimed})"
    base = {"family": fam, "part": p.name, "claimed": p.claimed, "applicable": int(p.applicable)}
    if not p.applicable:
        return {
            **base,
            "kind": "not tested",
            "instances": int(p.instances),
            "text": f"{head}: not tested, none of the {p.instances} instances meets its assumptions",
        }
    app = np.asarray(s.applicable, bool)
    failing = _rows(p, p.failures)
    nfail = int(p.failures.size)
    verdict = (
        f"fails on {nfail} of {p.applicable} applicable instances"
        if nfail
        else f"holds on all {p.applicable} applicable instances"
    )
    if p.claimed == "rate":
        slack = np.where(app, np.asarray(p.slack, float), np.inf)
        row = int(np.argmin(np.where(np.isnan(slack), -np.inf, slack)))
        i = _global(p, row)
        lo, hi = s.lhs_ci[0][row], s.lhs_ci[1][row]
        tol = f" ± {fmt(s.atol)}" if s.atol else ""
        return {
            **base,
            "kind": "rate",
            "instance": i,
            "failing": nfail,
            "slope": _num(s.lhs[row]),
            "slope_ci": [_num(lo), _num(hi)],
            "exponent": _num(s.rhs[row]),
            "claim_kind": s.kind,
            "atol": float(s.atol),
            "level": None if s.confidence is None else float(s.confidence),
            "text": f"{head}: {verdict}; {'the sweep farthest from the claim' if nfail else 'closest to failing'} "
            f"#{i}: fitted exponent "
            f"{fmt(s.lhs[row])} [{fmt(lo)}, {fmt(hi)}]{_level(s)}, claimed {s.kind} {fmt(s.rhs[row])}{tol}"
            + _at(batch, index, i),
        }
    ratio = np.asarray(p.ratio, float)
    mc = s.lhs_ci is not None
    if failing.size:
        score = np.full(ratio.shape, -np.inf)
        score[failing] = np.where(np.isnan(ratio[failing]), np.inf, ratio[failing])
    elif mc:
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(s.rhs != 0, s.lhs_ci[0] / s.rhs, np.inf)
        score = np.where(app & ~np.isnan(score), score, -np.inf)
    else:
        score = np.where(app & ~np.isnan(ratio), ratio, -np.inf)
    row = int(np.argmax(score))
    i = _global(p, row)
    lhs, rhs, r = s.lhs[row], s.rhs[row], ratio[row]
    out = {
        **base,
        "kind": "worst",
        "instance": i,
        "failing": nfail,
        "lhs": _num(lhs),
        "rhs": _num(rhs),
        "ratio": _num(r),
    }
    if p.claimed == "exact":
        what = f"largest error/allowed {fmt(r)} (error {fmt(lhs)}, allowed {fmt(rhs)})"
    elif mc:
        lo, hi = s.lhs_ci[0][row], s.lhs_ci[1][row]
        out.update(lhs_ci=[_num(lo), _num(hi)], level=None if s.confidence is None else float(s.confidence))
        what = f"lhs {fmt(lhs)} [{fmt(lo)}, {fmt(hi)}]{_level(s)}, rhs {fmt(rhs)}, lhs/rhs {fmt(r)}"
    else:
        what = f"lhs {fmt(lhs)}, rhs {fmt(rhs)}, lhs/rhs {fmt(r)}"
    worst = "worst failing instance" if nfail else "closest to failing"
    out["text"] = f"{head}: {verdict}; {worst} #{i}: {what}" + _at(batch, index, i)
    return out


def _one_instance(one, res, fam, kind) -> list[dict]:
    """The recorded minimal (or the shrunk) counterexample: the sides this run evaluated there."""
    head = f"[{fam}] " + ("recorded minimal counterexample" if kind == "minimal" else "shrunk counterexample")
    at = _at(one, None, 0)
    out = []
    for p in _theorem_parts(res):
        if not p.failures.size or not p.applicable:
            continue
        s = p.sides
        d = {"kind": kind, "family": fam, "part": p.name, "claimed": p.claimed, "fails": True}
        if p.claimed == "rate":
            d.update(slope=_num(s.lhs[0]), exponent=_num(s.rhs[0]), claim_kind=s.kind)
            what = f"fitted exponent {fmt(s.lhs[0])}, claimed {s.kind} {fmt(s.rhs[0])}"
        else:
            d.update(lhs=_num(s.lhs[0]), rhs=_num(s.rhs[0]), ratio=_num(p.ratio[0]))
            what = f"lhs {fmt(s.lhs[0])} > rhs {fmt(s.rhs[0])} (lhs/rhs {fmt(p.ratio[0])})"
        out.append({**d, "text": f"{head}, '{p.name}': fails, {what}{at}"})
    if not out:
        out.append(
            {
                "kind": kind,
                "family": fam,
                "fails": False,
                "max_ratio": _num(res.max_ratio),
                "text": f"{head}: no part of the printed claim fails there in this run "
                f"(largest lhs/rhs {fmt(res.max_ratio)}){at}",
            }
        )
    return out


def _reading_finding(st, name, rr, fam) -> dict:
    """A reading's verdict on the family and its largest lhs/rhs (over the parts ``Result.max_ratio`` takes)."""
    kind = st.reading(name).kind
    tested = any(p.applicable for p in _theorem_parts(rr))
    verdict = ("holds" if rr.holds else "fails") if tested else "not tested"
    failing = [p.name for p in rr.parts if not p.holds]
    ineq = [p for p in rr.parts if p.claimed in ("upper", "tight")]
    bounds = [p for p in ineq if p.sides.role == "theorem"] or ineq or list(rr.parts)
    finite = [p for p in bounds if np.isfinite(p.max_ratio)]
    worst = max(finite, key=lambda p: p.max_ratio) if finite else None
    text = f"[{fam}] reading '{name}' ({kind}): {verdict}"
    if failing:
        text += f" (failing part '{failing[0]}')"
    if worst is not None:
        text += f"; largest lhs/rhs {fmt(worst.max_ratio)} on '{worst.name}'"
    return {
        "kind": "reading",
        "family": fam,
        "reading": name,
        "reading_kind": kind,
        "verdict": verdict,
        "failing_parts": failing,
        "max_ratio": _num(rr.max_ratio),
        "part": worst.name if worst is not None else None,
        "text": text,
    }


def _growth(p, fam, batch) -> list[dict]:
    """Parameters along which a failing part's lhs/rhs keeps growing (module docstring, ``"growth"``)."""
    if (
        batch is None
        or p.index is not None
        or p.claimed not in ("upper", "tight")
        or p.sides.lhs_ci is not None
    ):
        return []
    ratio = np.asarray(p.ratio, float)
    ok = np.asarray(p.sides.applicable, bool) & np.isfinite(ratio) & (ratio > 0)
    out = []
    for k, v in batch.items():
        a = np.asarray(v)
        if a.ndim != 1 or a.shape[0] != ratio.shape[0] or not np.issubdtype(a.dtype, np.number):
            continue
        a = a.astype(float)
        vals, rr, rows = a[ok], ratio[ok], np.flatnonzero(ok)
        if vals.size < 2 * GROWTH_BINS or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
            continue
        if vals.max() / vals.min() < 100:
            continue
        edges = np.geomspace(vals.min(), vals.max() * (1 + 1e-12), GROWTH_BINS + 1)
        which = np.clip(np.searchsorted(edges, vals, side="right") - 1, 0, GROWTH_BINS - 1)
        if any(not np.any(which == b) for b in range(GROWTH_BINS)):
            continue
        best = [int(np.flatnonzero(which == b)[np.argmax(rr[which == b])]) for b in range(GROWTH_BINS)]
        maxima = rr[best]
        for towards, m in (("large", maxima), ("small", maxima[::-1])):
            if not (np.all(np.diff(m) > 0) and m[-1] > GROWTH_FACTOR * m[0]):
                continue
            xs, ys = vals[best], maxima
            slope = float(np.polyfit(np.log(xs), np.log(ys), 1)[0])
            pairs = ", ".join(f"{k}={fmt(x)}: {fmt(y)}" for x, y in zip(xs, ys, strict=True))
            out.append(
                {
                    "kind": "growth",
                    "family": fam,
                    "part": p.name,
                    "parameter": k,
                    "towards": towards,
                    "values": [float(x) for x in xs],
                    "ratios": [float(y) for y in ys],
                    "instances": [int(rows[j]) for j in best],
                    "loglog_slope": slope,
                    "text": f"[{fam}] '{p.name}': lhs/rhs grows towards {towards} {k} over the "
                    f"{int(ok.sum())} instances (worst per log-spaced bin: {pairs}); "
                    f"log-log slope {fmt(slope)}",
                }
            )
    return out


def record_findings(rec) -> list[dict]:
    """The findings of one record (``moreau.analysis.engine.runner.Record``), each a dict with
    ``kind``, ``family``, ``text`` and the numbers of the text (see the module docstring)."""
    st, res = rec.statement, rec.result
    fam = res.family
    out = [_part_finding(p, fam, rec.batch, rec.index) for p in _theorem_parts(res)]
    if rec.minimal is not None:
        one, at = rec.minimal
        out += _one_instance(one, at, fam, "minimal")
    if rec.shrunk is not None:
        one, at = rec.shrunk[:2]
        out += _one_instance(one, at, fam, "shrunk")
    if not res.holds and rec.index is None:
        for p in _theorem_parts(res):
            if p.failures.size:
                out += _growth(p, fam, rec.batch)
    out += [_reading_finding(st, name, rr, fam) for name, (rr, _, _) in rec.readings.items()]
    return out


def finding_lines(rec) -> list[str]:
    """The findings of one record as lines of text."""
    return [f["text"] for f in record_findings(rec)]
