r"""Class worst cases by performance estimation (PEP) beside the catalogue's instances.

A checker's max LHS/RHS over its instances is a lower bound on a statement's worst case: it
can show that a constant is attained, never that nothing worse exists.  For the first-order
and proximal statements of the catalogue this module computes the exact worst case over the
whole function class (L-smooth μ-strongly convex, convex, L-smooth nonconvex; PEPit + cvxpy +
Clarabel, the optional extra ``pep``) at the parameters of the checker's worst instance, and
compares three numbers per part: the instances' ratio r_inst, the class worst case's ratio
r_PEP (both LHS/RHS of the paper's inequality, so the paper's constant holds when r ≤ 1), and 1
(the paper's constant).  Verdicts:

* ``tight over the class``: r_PEP = 1 and r_inst = r_PEP (the paper's constant is the class
  worst case, and an instance attains it);
* ``instances below the class worst case``: r_inst < r_PEP (the generator is weak; by how much);
* ``bound loose over the class``: r_PEP < 1 (the sharp constant is reported; whether the
  instances attain it is said too);
* ``fails over the class``: r_PEP > 1 (only outside a statement's conditions here: the
  threshold sweep of λ > 2L, GD with η > 1/L);
* ``holds over the class`` / ``not shown over the class``: a rate bound (FedProx Theorem 2): the
  worst per-round factor in one fixed norm bounds every function's asymptotic rate, so a factor
  ≤ the paper's rate proves it over the class; a larger one proves nothing.

Tolerance: a solve is accepted at a relative primal-dual gap ≤ 1e-6 (``pep.solve.GAP_RTOL``;
measured on the default run's 32 optimal solves: median 4e-9, max 7e-8), so ratios within
``TOL = 1e-5`` relative are called equal.  A solve that ends ``optimal_inaccurate`` (gap ≤ 1e-4,
measured max 3e-5) is accepted only where a record says so, in its status and its verdict.

References: Taylor, Hendrickx & Glineur, Math. Program. 161 (2017); Goujaud et al., PEPit,
Math. Program. Comput. 16 (2024).
"""

from __future__ import annotations

import math

from moreau.analysis.pep.rows import pep_family
from moreau.analysis.pep.solve import SOLVER, PEPSolveError, require_pep

__all__ = ["run_pep", "print_pep", "pep_ids", "TOL"]

#: relative tolerance under which two ratios are called equal (10x the accepted duality gap)
TOL = 1e-5
#: a solve accepted as 'optimal_inaccurate' (primal-dual gap <= 1e-4 relative): decided only to that accuracy
INACCURATE_TOL = 1e-4
_TOL = TOL


def pep_ids():
    """Catalogue ids that have a class worst case here, in catalogue order."""
    from moreau.analysis.engine.registry import catalogue

    builders = _builders()
    return [i for i in catalogue() if i in builders]


_NO_PEP = (
    "no PEP formulation declared for it (Statement.pep, or a PEP builder in a paper package's "
    "pep_worst_cases module)"
)


def _builders():
    """``{id: builder}`` declared by the paper packages (``PEP``)."""
    from moreau.analysis.engine.registry import declared

    return {sid: b for _, pep in declared("PEP") for sid, b in pep.items()}


def _not_applicable():
    from moreau.analysis.engine.registry import declared

    return {sid: why for _, na in declared("PEP_NOT_APPLICABLE") for sid, why in na.items()}


def run_pep(ids=None, seed=0, cat=None):
    """Class worst cases (PEP) for ``ids`` (default: every applicable statement); a list of records.

    Each record: ``id``, ``part``, ``class`` (the function class), ``parameters``, ``pep_value`` (the
    class worst case of the part's quantity; None when the solve failed), ``pep_ratio``, ``solver``,
    ``status`` (the solver's), ``instances_max_ratio`` (the checker's ratio on its worst instance at
    these parameters; None where the checker has no instance there), ``paper_constant``,
    ``verdict``, ``note``, ``required`` (False for a supplementary solve, e.g. Frank–Wolfe over
    quadratics only), ``outside_conditions`` (True for parameters outside the statement's
    conditions: the λ > 2L sweep, GD with η > 1/L) and, where a worst case was turned into an instance, ``instance``.
    Every value is a str, float, int, bool, None, or a dict / list of them (JSON as is).
    An id in the catalogue without a class worst case gives one record with verdict
    ``not applicable`` and the reason.  Raises ``ImportError`` naming the extra when pepit, cvxpy
    or clarabel is missing, ``KeyError`` for an unknown id.
    """
    require_pep()
    from moreau.analysis.engine.registry import catalogue
    from moreau.analysis.engine.runner import rng_for

    cat = catalogue() if cat is None else cat
    ids = pep_ids() if ids is None else list(ids)
    unknown = [i for i in ids if i not in cat]
    if unknown:
        raise KeyError(f"unknown statement id(s) {unknown}; known: {', '.join(cat)}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int (got {seed!r})")
    out, builders, not_applicable = [], _builders(), _not_applicable()
    for sid in ids:  # a statement's own builder (a user's statement), or its reason for none
        pep = getattr(cat[sid], "pep", None)
        if callable(pep):
            builders[sid] = pep
        elif isinstance(pep, str):
            not_applicable[sid] = pep
    for sid in ids:
        if sid not in builders:
            out.append(
                dict(
                    id=sid,
                    part=None,
                    **{"class": None},
                    parameters={},
                    pep_value=None,
                    pep_ratio=None,
                    solver=None,
                    status=None,
                    instances_max_ratio=None,
                    paper_constant=None,
                    verdict="not applicable",
                    note=not_applicable.get(sid, _NO_PEP),
                    required=False,
                    outside_conditions=False,
                )
            )
            continue
        st = cat[sid]
        fam = pep_family(st)  # the family the statement declares, not a name the engine assumes
        try:
            batch = st.instances(fam, None, rng_for(seed, sid, fam))
            rows = list(builders[sid](st, batch, seed=seed))
        except Exception as exc:  # a builder that raises: a failed record naming why, never a crash
            why = str(exc) if isinstance(exc, PEPSolveError) else f"{type(exc).__name__}: {exc}"
            out.append(_failed(sid, f"the PEP builder of {sid} raised ({why})", None, "builder failed"))
            continue
        for k, row in enumerate(rows):
            try:
                out.append(_record(sid, row))
            except Exception as exc:  # a malformed row: that row fails, the others stay
                part = row.get("part") if isinstance(row, dict) else None
                out.append(_failed(sid, f"row {k} ({part!r}) of {sid}: {type(exc).__name__}: {exc}", part))
    return out


def _failed(sid, why, part, what="solve failed"):
    """A record for a builder or a row that produced no class value: ``why`` in its status."""
    return dict(
        id=sid,
        part=part,
        **{"class": None},
        parameters={},
        pep_value=None,
        pep_ratio=None,
        solver=SOLVER,
        status=f"failed: {why}",
        instances_max_ratio=None,
        paper_constant=None,
        verdict=f"no class value ({what})",
        note="",
        required=True,
        outside_conditions=False,
    )


def _record(sid, row):
    value, s = row["pep"]
    ok = value is not None
    if ok and s is None:  # the float of a public helper (moreau.analysis.api.pep_*): an optimal solve
        status, solver = "optimal", SOLVER
    else:
        status = s.status if ok else f"failed: {s}"
        solver = s.solver if ok else SOLVER
    paper, inst = row["paper"], row["inst"]
    pep_ratio, says_nothing = None, None
    if ok:
        bound = paper if row["orientation"] == "upper" else value
        if not paper > 0 or (row["orientation"] == "upper" and value < 0) or not bound > 0:
            # a bound that is not positive says nothing here (as in the headline): no ratio
            says_nothing = (
                f"no ratio at these parameters: the paper's bound is {paper:.6g} (not positive, it says "
                f"nothing here); the class worst case is {value:.6g}"
            )
        else:
            pep_ratio = value / paper if row["orientation"] == "upper" else paper / value
    rec = {
        "id": sid,
        "part": row["part"],
        "class": row["cls"],
        "parameters": row["parameters"],
        "pep_value": _num(value),
        "pep_ratio": _num(pep_ratio),
        "solver": solver,
        "status": status,
        "instances_max_ratio": _num(inst),
        "paper_constant": _num(paper),
        "verdict": says_nothing
        or _verdict(pep_ratio, inst, row, value, INACCURATE_TOL if ok and status != "optimal" else None),
        "note": row["note"],
        "required": row["required"],
        "outside_conditions": row["outside"],
    }
    if ok and status != "optimal":  # said in the verdict itself, not only in the status column
        gap = abs(s.value - s.primal) / max(abs(s.value), 1e-300)
        rec["verdict"] += (
            f" [inaccurate: solver status {status}, duality gap {gap:.2g} relative (<= 1e-4 only)]"
        )
    if row.get("feedback"):
        rec["instance"] = row["feedback"]
    return rec


def _verdict(r_pep, r_inst, row, value, tol=None):
    """``tol``: the relative tolerance of the comparisons (default TOL; a solve accepted as
    'optimal_inaccurate' is decided only to its own accuracy, :data:`INACCURATE_TOL`)."""
    TOL = _TOL if tol is None else tol  # noqa: N806
    if r_pep is None:
        return "no class value (solve failed)"
    if row.get("kind") == "rate bound":
        if r_pep <= 1 + TOL:
            return f"holds over the class (per-round factor {value:.6g} <= rho = {row['paper']:.6g}; an upper bound)"
        return f"not shown over the class (per-round factor {value:.6g} > rho = {row['paper']:.6g})"
    sharp = row["sharp"]
    if r_pep > 1 + TOL:
        return f"fails over the class (worst case {value:.6g} > paper's {row['paper']:.6g})"
    if r_inst is None:
        att = ""
    elif r_inst >= r_pep * (1 - TOL):
        att = "attained on an instance"
    else:
        att = f"instances below the class worst case ({r_inst:.6g} vs {r_pep:.6g}: {r_pep / r_inst:.4g}x)"
    if r_pep >= 1 - TOL:
        if att == "attained on an instance":
            return "tight over the class"
        return att or "tight over the class (no instance at these parameters)"
    head = f"bound loose over the class (sharp constant: {sharp + ' = ' if sharp else ''}{value:.6g})"
    return head + (f"; {att}" if att else "")


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _brief(d):
    """Scalars of an instance record (arrays left to the JSON); nested records by their ratio."""
    parts = []
    for k, v in d.items():
        if isinstance(v, dict):
            parts.append(f"{k}: ratio {v.get('ratio', float('nan')):.6g} (d = {v.get('dimension')})")
        elif isinstance(v, float):
            parts.append(f"{k} {v:.6g}")
        elif not isinstance(v, list):
            parts.append(f"{k} {v}")
    return ", ".join(parts)


def print_pep(records, file=None) -> bool:
    """Print the records as a table (one line per record, parameters and notes below); return True
    when every required solve succeeded (a supplementary one, ``required`` False, is reported only)
    and no statement fails over the class inside its conditions."""
    import sys

    out = file or sys.stdout
    ok = True
    print(
        f"\nclass worst case (PEP, solver {SOLVER}): ratios are LHS/RHS of the paper's inequality", file=out
    )
    print(f"{'id':<20} {'class':<34} {'instances':>10} {'PEP':>10}  verdict", file=out)
    for r in records:
        cls = (r["class"] or "-")[:34]
        fmt = lambda v: "-" if v is None else f"{v:.6g}"  # noqa: E731
        print(
            f"{r['id']:<20} {cls:<34} {fmt(r['instances_max_ratio']):>10} {fmt(r['pep_ratio']):>10}  {r['verdict']}",
            file=out,
        )
        if r["part"]:
            params = ", ".join(f"{k}={v:.4g}" for k, v in r["parameters"].items())
            print(f"    {r['part']}  [{params}]  status: {r['status']}", file=out)
        elif r["status"]:  # a builder that failed before any row: why, under the statement's line
            print(f"    status: {r['status']}", file=out)
        if r.get("instance"):
            print(f"    instance: {_brief(r['instance'])}", file=out)
        if r["note"]:
            print(f"    {r['note']}", file=out)
        if r["status"] is not None and str(r["status"]).startswith("failed") and r.get("required", True):
            ok = False
        if r["verdict"].startswith("fails") and not r.get("outside_conditions"):
            ok = False
    return ok
