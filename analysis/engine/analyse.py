r"""``moreau check --analyse``: generic analyses that find what a statement hides.

Mutants are hand-written; these three analyses run on every statement without any:

1. **Condition necessity.**  Each *condition* of a statement is dropped in turn and the
   statement re-judged on the same batch:

   * a condition written into the claim (a claim entry named ``condition*``, ``cond*``,
     ``*_condition``, ``*_ok`` or ``steps``: a formula returning a mask) is replaced by "always
     true";
   * a part's assumptions (its applicability mask: instances outside them are never counted)
     are dropped: the part is judged on every instance.

   Verdicts: **necessary** (the relaxed statement fails on an instance with finite sides and a
   positive right side: the counterexample's instance and ratio are reported), **vacuous without
   it** (without the condition the bound only turns negative or infinite: it says nothing there,
   which is not a failure beside real ones), **appears unnecessary** (it holds on the instances the
   relaxation admits: how many), **not exercised** (no instance of the batch violates the
   condition: nothing is learnt; raise ``--trials``), or **undefined** (a side is NaN outside the
   condition: the statement does not say anything there).

2. **Scale consistency.**  A statement about a problem must not depend on the units of θ and f.
   A checker that declares how its batch transforms (``Statement.scaling``: ``family ->
   (batch, s, c) -> batch``) under θ → sθ, f → cf (so curvatures and λ scale by c/s², gradients by
   c/s, step sizes by s²/c, ...) is re-run on the rescaled batch for a few (s, c): every
   inequality's LHS/RHS and every fitted exponent must be unchanged (relative 1e-6), and so
   must every part's applicability.  A change is reported with the instance and both ratios: the
   statement (or a parameter rule in it) is not scale-consistent.  Statements without a
   declaration are listed as such (not analysed); a checker may declare, instead of the
   function, a string saying why its instances cannot be rescaled (reported as the reason).

3. **Sharpest constant.**  For each of the theorem's inequality parts: the largest LHS/RHS over
   the applicable instances — the factor by which the right side could be multiplied and still
   hold on every instance tried (a claimed-tight constant has it 1) — the parameters of the
   worst instance (the batch's per-instance scalars and, where the checker declares its scaling,
   their dimensionless ratios such as λ/L), and how the worst ratio depends on each parameter
   (max ratio on the lower and the upper half of the instances sorted by it).  That batch maximum is
   only ``sample_max``: the sharpest constant (``sharpest_factor``), and whether it is attained,
   approached as a parameter runs to ∞ or 0, or unbounded (with a fitted growth law), come from the
   worst-case search started from the batch's worst instances (``optimised``;
   :mod:`moreau.analysis.engine.optimise`, ``--optimise-seconds`` per statement and family).  A Monte
   Carlo part (``Sides.lhs_ci``) counts with its interval's lower end, and not at all beside an exact
   part of the same bound.

   **Derived sharp constant** (key ``"derived"`` of each entry).  Where the checker declares one
   (``Statement.sharp``: family -> {part: derivation}, see :mod:`moreau.analysis.engine.sharp`), the
   part's worst case on quadratics reduces to one eigenvalue a: LHS/RHS is at most
   ``sup_a g(a)`` (or ``|g|``) over the eigenvalue range the assumptions allow, with ``g``
   derived from the per-eigenvalue formulas of :mod:`moreau.symbolic`.  sympy maximises over a
   (endpoints and critical points, ordered by positivity certificates: proved, not sampled) into
   a closed form in the statement's parameters (``L/(L + lam)`` for pFedMe's convex L_F,
   ``(L alpha + 1)^2/4`` for Per-FedAvg's 4L on nonconvex f), and also its sup over all
   admissible parameters (``1 at lam/L = 0, a limit``).  The formula is evaluated on every
   instance and compared with the ratio it reached: ``value`` (max of the formula over the
   batch), ``instances_reach`` (the sharpest factor), ``attained_on`` (instances whose ratio
   equals their formula, 1e-6 relative), ``closest`` (max ratio/formula) and ``exceeded``
   (instances above their formula beyond the judge's rounding RTOL: must be 0; otherwise the
   derivation or the checker is wrong, or it is a finding).  Parts without one print
   "no one-eigenvalue derivation" (``"derived": null``).

4. **Conditions found** (``moreau.analysis.engine.conditions``, docs/conditions.md): for a claim that
   fails on an instance, the simplest added hypothesis (at most two atoms) under which every instance
   holds, validated on a fresh batch; also for each condition of the claim dropped in turn (the search
   should find it again).

5. **Nested hypotheses** (``moreau.analysis.engine.nested``, docs/conditions.md): for each pair of nested
   hypotheses whose stronger one the statement assumes (strongly convex ⊂ convex), the claim judged on
   instances that have the weaker and not the stronger: not needed on these instances, needed (a
   counterexample), needed because the bound is vacuous without it, or not exercised.

Results go into the report and, per record, into the JSON key ``"analyse"``.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.conditions import _always, condition_keys
from moreau.analysis.engine.core import RTOL, TIGHT_RTOL, judge, scale_fields
from moreau.analysis.engine.optimise import OPTIMISE_SECONDS, mc_sibling, optimise_record

__all__ = ["analyse", "worst_cases", "condition_keys", "scale_fields", "SCALES", "SCALE_RTOL", "VACUOUS"]

#: (s, c) pairs of the scale analysis: θ → sθ, f → cf.  Powers of two (and c a power of 4): the
#: rescaled batch is exact in floating point, so an instance on the boundary of a condition
#: (α = 1/L exactly, K = K_min) stays on its side and a flip is the statement's, not rounding's
SCALES = ((8.0, 1.0), (1.0, 16.0), (0.25, 4.0))
#: relative change of LHS/RHS (or of a fitted exponent) above which a part is not scale-consistent
SCALE_RTOL = 1e-6
#: the verdict of a condition without which the bound turns negative or infinite where the left side
#: is finite: a bound that says nothing there, not a failure beside real ones
VACUOUS = "vacuous without it"


def _meaningful(p, i) -> bool:
    """A failure that counts as a counterexample: both sides finite and the right side positive
    (a negative or infinite right side makes the bound vacuous there, which is reported apart)."""
    lhs, rhs = float(p.sides.lhs[i]), float(p.sides.rhs[i])
    return bool(np.isfinite(lhs) and np.isfinite(rhs) and rhs > 0)


def _worst(p):
    """(instance, ratio) of a failing part's first failure, or None."""
    if not p.failures.size:
        return None
    i = int(p.failures[0])
    return i, float(p.ratio[i])


#: the verdict of every condition when the analysed claim already fails on the batch: dropping a
#: condition cannot show it necessary (the failure is there with it too)
UNDECIDABLE = "necessity undecidable"


def _undecidable(st, base):
    """``[condition records]`` when the analysed claim fails on the batch (else None): no condition
    can be marked necessary by a relaxed claim that fails anyway."""
    failing = [p.name for p in base.parts if p.sides.role == "theorem" and not p.holds]
    if not failing:
        return None
    why = (
        f"the analysed claim fails on this batch as it is (part {failing[0]!r}): dropping a condition "
        "cannot show it necessary"
    )
    out = [
        {"condition": k, "kind": "claim", "verdict": UNDECIDABLE, "detail": why} for k in condition_keys(st)
    ]
    out += [
        {
            "condition": f"assumptions of part {p.name!r}",
            "kind": "part",
            "verdict": UNDECIDABLE,
            "detail": why,
        }
        for p in base.parts
        if p.claimed != "rate" and (~p.sides.applicable).any()
    ]
    return out


def _conditions(st, fam, batch, prepared, base):
    undecidable = _undecidable(st, base)
    if undecidable is not None:
        return undecidable
    out = []
    for key in condition_keys(st):
        claim = {**st.claim, key: _always}
        try:
            from moreau.analysis.engine.core import evaluate_claim

            parts = evaluate_claim(st.evaluate, prepared, claim)
        except Exception as exc:  # a formula that cannot run without its condition
            out.append(
                {
                    "condition": key,
                    "kind": "claim",
                    "verdict": "undefined",
                    "detail": f"{type(exc).__name__}: {exc}",
                }
            )
            continue
        newly = sum(
            int(np.sum(p.sides.applicable & ~b.sides.applicable))
            for p, b in zip(parts, base.parts, strict=True)
        )
        bad = [(p.name, _worst(p), p) for p in parts if not p.holds and _worst(p) is not None]
        real = [(n, w) for n, w, p in bad if _meaningful(p, w[0])]
        if real:
            name, (i, r) = real[0]
            out.append(
                {
                    "condition": key,
                    "kind": "claim",
                    "verdict": "necessary",
                    "part": name,
                    "instance": i,
                    "ratio": r,
                }
            )
        elif bad:
            name, (i, r), p = bad[0]
            nan = np.isnan(p.sides.rhs[i]) or np.isnan(p.sides.lhs[i])
            out.append(
                {
                    "condition": key,
                    "kind": "claim",
                    "verdict": "undefined" if nan else VACUOUS,
                    "part": name,
                    "instance": i,
                    "ratio": r if np.isfinite(r) else None,
                }
            )
        elif newly:
            out.append(
                {"condition": key, "kind": "claim", "verdict": "appears unnecessary", "admitted": newly}
            )
        else:
            out.append({"condition": key, "kind": "claim", "verdict": "not exercised", "admitted": 0})
    for p in base.parts:
        outside = ~p.sides.applicable
        if p.claimed == "rate" or not outside.any():
            continue
        s = p.sides
        s_all = type(s)(
            s.lhs,
            s.rhs,
            s.claimed,
            applicable=np.ones_like(outside),
            lhs_ci=s.lhs_ci,
            confidence=s.confidence,
            constants=s.constants,
            note=s.note,
            kind=s.kind,
            atol=s.atol,
            role=s.role,
            family=s.family,
        )
        q = judge(p.name, s_all)
        finite = outside & np.isfinite(s.lhs) & np.isfinite(s.rhs)
        fails = np.flatnonzero(outside & ~q.holds_each)
        fails_finite = np.intersect1d(fails, np.flatnonzero(finite))
        rec = {"condition": f"assumptions of part {p.name!r}", "kind": "part", "outside": int(outside.sum())}
        real = [int(i) for i in fails_finite if _meaningful(q, int(i))]
        if real:
            i = real[0]
            rec.update(verdict="necessary", part=p.name, instance=i, ratio=float(q.ratio[i]))
        elif fails_finite.size:
            rec.update(verdict=VACUOUS, part=p.name, instance=int(fails_finite[0]))
        elif fails.size:
            rec.update(verdict="undefined", part=p.name, instance=int(fails[0]))
        elif p.claimed == "tight" and not q.tight:
            rec.update(verdict="appears unnecessary", admitted=int(outside.sum()))
        else:
            rec.update(verdict="appears unnecessary", admitted=int(finite.sum()))
        out.append(rec)
    return out


def _scale(st, fam, batch, base):
    scaling = (getattr(st, "scaling", None) or {}).get(fam)
    if scaling is None or isinstance(scaling, str):  # a string: why the checker cannot declare one
        return None, []
    out, tried = [], []
    for s, c in SCALES:
        scaled = scaling(batch, s, c)
        if scaled is None:  # the family cannot express this (s, c)
            continue
        tried.append((s, c))
        try:
            res = st.run(fam, None, None, batch=scaled)
        except Exception as exc:  # the checker cannot even evaluate the rescaled problem
            out.append(
                {
                    "s": s,
                    "c": c,
                    "part": "(evaluation)",
                    "instance": None,
                    "what": "evaluation",
                    "before": "ran",
                    "after": f"{type(exc).__name__}: {str(exc)[:200]}",
                }
            )
            continue
        for p, b in zip(res.parts, base.parts, strict=True):
            if p.claimed == "exact":
                continue  # error/allowed of an identity: rounding, not a statement about the problem
            app = b.sides.applicable
            if not np.array_equal(p.sides.applicable, app):
                i = int(np.flatnonzero(p.sides.applicable != app)[0])
                out.append(
                    {
                        "s": s,
                        "c": c,
                        "part": p.name,
                        "instance": i,
                        "what": "applicability",
                        "before": bool(app[i]),
                        "after": bool(p.sides.applicable[i]),
                    }
                )
                continue
            x, y = (b.sides.lhs, p.sides.lhs) if p.claimed == "rate" else (b.ratio, p.ratio)
            with np.errstate(invalid="ignore"):
                bad = (
                    app
                    & ~(np.abs(x - y) <= SCALE_RTOL * np.maximum(np.abs(x), np.abs(y)))
                    & ~(np.isnan(x) & np.isnan(y))
                    & ~(x == y)
                )
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                out.append(
                    {
                        "s": s,
                        "c": c,
                        "part": p.name,
                        "instance": i,
                        "what": "slope" if p.claimed == "rate" else "lhs/rhs",
                        "before": float(x[i]),
                        "after": float(y[i]),
                    }
                )
    return out, tried


def _sharpest(st, fam, batch, base, optimise_seconds=0.0):
    scalars = {
        k: np.asarray(v, dtype=float)
        for k, v in batch.items()
        if np.ndim(v) == 1 and np.issubdtype(np.asarray(v).dtype, np.number)
    }
    # dimensionless ratios of the per-instance scalars that scale alike (e.g. lam/L), when the
    # checker declares its scaling: the dependence a reader can compare across units
    powers = getattr((getattr(st, "scaling", None) or {}).get(fam), "powers", {})
    dims = [k for k in scalars if k in powers and tuple(powers[k]) != (0, 0)]
    if not powers:  # no declared scaling (a user's statement): ratios of the positive scalars, e.g. L/mu
        dims = [k for k in scalars if np.all(scalars[k] > 0) and np.unique(scalars[k]).size >= 3]
        powers = {k: (0, 1) for k in dims}
    for i, k1 in enumerate(dims):
        for k2 in dims[i + 1 :]:
            if tuple(powers[k1]) == tuple(powers[k2]):
                with np.errstate(divide="ignore", invalid="ignore"):
                    scalars[f"{k1}/{k2}"] = scalars[k1] / scalars[k2]
    out, chosen = [], []
    names = [q.name for q in base.parts]
    for p in base.parts:
        if p.claimed not in ("upper", "tight") or p.sides.role != "theorem" or not p.applicable:
            continue
        if p.sides.lhs_ci is not None and mc_sibling(p.name, names):
            continue  # a Monte Carlo part beside the exact part of the same bound: its noise is no constant
        r = np.where(p.sides.applicable & np.isfinite(p.ratio), p.ratio, -np.inf)
        if p.sides.lhs_ci is not None:  # Monte Carlo: the interval's lower end, what the run is sure of
            with np.errstate(divide="ignore", invalid="ignore"):
                lo = np.asarray(p.sides.lhs_ci[0], dtype=float) / p.sides.rhs
            r = np.where(p.sides.applicable & np.isfinite(lo), lo, -np.inf)
        i = int(np.argmax(r))
        chosen.append(p)
        dep = {}
        for k, v in scalars.items():
            ok = p.sides.applicable & np.isfinite(p.ratio)
            vals = v[ok]
            if np.unique(vals).size < 3:
                continue
            order = np.argsort(vals, kind="stable")
            half = order.size // 2
            rr = p.ratio[ok][order]
            dep[k] = {
                "lower half": float(np.max(rr[:half])),
                "upper half": float(np.max(rr[half:])),
                "split at": float(vals[order][half]),
            }
        out.append(
            {
                "part": p.name,
                "sample_max": float(r[i]),
                "sharpest_factor": float(r[i]),
                "instance": i,
                "worst_parameters": {k: float(v[i]) for k, v in scalars.items()},
                "dependence": dep,
                "derived": _derived(st, fam, batch, p, i),
            }
        )
    # the sharpest constant, "attained", "approached" and "unbounded" come from the worst-case search only
    # (moreau.analysis.engine.optimise), started from the batch's worst instances; the sample maximum is kept
    # as "sample_max"
    found = optimise_record(st, fam, batch, chosen, optimise_seconds) if optimise_seconds > 0 else []
    for e, o in zip(out, found, strict=False):
        o = (
            {**o, "instance": {k: np.asarray(v).tolist() for k, v in o.get("instance", {}).items()}}
            if o
            else o
        )
        e["optimised"] = o
        if o.get("best") is not None:
            e["sharpest_factor"] = float(o["best"])
            e["worst_parameters"] = _parameters_of(o, scalars)
        e["unbounded"] = (
            [{k: o["path"][k] for k in ("parameter", "towards")} | {"law": o["growth"]["law"]}]
            if o.get("status") == "unbounded"
            else []
        )
    for e in out[len(found) :]:
        e["optimised"], e["unbounded"] = None, []
    return out


def _parameters_of(found, scalars):
    """The optimiser's worst instance written like the batch's: the per-instance scalars (and their
    dimensionless ratios, ``k1/k2``) read from the instance it returns, its own parameters otherwise."""
    inst = found.get("instance") or {}
    out = {}
    for k in scalars:
        if "/" in k:
            continue
        v = np.asarray(inst.get(k, np.nan), dtype=float).reshape(-1)
        if v.size == 1 and np.isfinite(v[0]):
            out[k] = float(v[0])
    for k in scalars:
        k1, _, k2 = k.partition("/")
        if k2 and k1 in out and k2 in out and out[k2] != 0:
            out[k] = out[k1] / out[k2]
    return out or dict(found.get("parameters", {}))


def _num(x):
    return float(x) if np.isfinite(x) else None


def _derived(st, fam, batch, p, worst):
    """The sympy-derived sharp constant of part ``p`` (``Statement.sharp``) against the instances;
    None when the checker declares no one-eigenvalue derivation for this part and family."""
    make = ((getattr(st, "sharp", None) or {}).get(fam) or {}).get(p.name)
    if make is None:
        return None
    try:
        d = make()
        vals = d.evaluate(batch)
    except Exception as exc:  # a derivation that cannot run is reported, not raised
        return {"formula": None, "proved": False, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    app = p.sides.applicable & np.isfinite(p.ratio)
    ok = app & np.isfinite(vals)
    rec = {
        "formula": d.formula,
        "ratio": d.ratio,
        "absolute": d.absolute,
        "proved": d.proved,
        "cases": [
            {k: c[k] for k in ("name", "interval", "formula", "argmax", "sup_over_parameters", "attained")}
            for c in d.cases
        ],
        "sup_over_parameters": max(
            d.cases, key=lambda c: -np.inf if np.isnan(c["sup_value"]) else c["sup_value"]
        )["sup_over_parameters"],
        "sup_value": _num(d.sup_value),
        "steps": [t for _, t in d.steps],
        "covered": int(ok.sum()),
        "uncovered": int((app & ~ok).sum()),
    }
    if not ok.any():
        return {
            **rec,
            "value": None,
            "instances_reach": None,
            "at_worst_instance": None,
            "exceeded": 0,
            "attained_on": 0,
            "closest": None,
        }
    ratio = p.ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        over = ok & (ratio > vals + RTOL * np.maximum(np.abs(vals), np.abs(ratio)))
        frac = np.where(ok & (vals != 0), ratio / vals, np.nan)
    first = np.flatnonzero(over)
    rec.update(
        value=_num(np.max(vals[ok])),
        instances_reach=_num(np.max(ratio[ok])),
        at_worst_instance=_num(vals[worst]) if np.isfinite(vals[worst]) else None,
        exceeded=int(over.sum()),
        exceeded_instance=int(first[0]) if first.size else None,
        attained_on=int(np.sum(ok & (np.abs(ratio - vals) <= TIGHT_RTOL * np.abs(vals)))),
        closest=_num(np.nanmax(frac)) if np.isfinite(frac).any() else None,
    )
    return rec


def _why_no_scaling(st, fam):
    why = (getattr(st, "scaling", None) or {}).get(fam)
    if isinstance(why, str):
        return why
    return None if why is not None else "the checker declares no scaling for this family"


def worst_cases(rec, optimise_seconds=OPTIMISE_SECONDS):
    """The sharpest-constant entries alone (``moreau check --search`` without ``--analyse``): the batch
    maximum and the worst-case search of each theorem inequality part, of the claim :func:`analyse` analyses."""
    import dataclasses

    st, fam, batch = rec.statement, rec.result.family, rec.batch
    ref = st.reference
    if ref is not None:
        st = dataclasses.replace(st, claim={**st.claim, **ref.changes}, readings=(), expect="holds")
    base = st.run(fam, None, None, batch=batch, reading=None)
    return _sharpest(st, fam, batch, base, optimise_seconds)


def analyse(rec, optimise_seconds=OPTIMISE_SECONDS, seed=0):
    """The three analyses of one record (statement, family, batch); a JSON-ready dict.  ``optimise_seconds``:
    the worst-case search's budget (``moreau.analysis.engine.optimise``; 0: the sample maximum only).
    ``"conditions_found"``: the condition search (``moreau.analysis.engine.conditions``; ``seed`` picks
    its fresh validation batch).

    They analyse the claim the mutants mutate: the printed statement when it holds, else the first
    reading that holds (dropping a condition of a claim that already fails teaches nothing)."""
    import dataclasses

    from moreau.analysis.engine.conditions import conditions_found
    from moreau.analysis.engine.nested import nested_hypotheses

    st, fam, batch = rec.statement, rec.result.family, rec.batch
    ref = st.reference
    if ref is not None:
        st = dataclasses.replace(st, claim={**st.claim, **ref.changes}, readings=(), expect="holds")
    prepared = st.prepared(batch)
    base = st.run(fam, None, None, batch=batch, prepared=prepared, reading=None)
    scale, tried = _scale(st, fam, batch, base)
    return {
        "claim": "printed" if ref is None else f"reading: {ref.name}",
        "conditions": _conditions(st, fam, batch, prepared, base),
        "scale": scale,
        "scale_declared": scale is not None,
        "scales_tried": tried,
        "scale_not_declared_because": _why_no_scaling(st, fam),
        "sharpest": _sharpest(st, fam, batch, base, optimise_seconds),
        "conditions_found": conditions_found(rec, seed=seed),
        "nested": nested_hypotheses(st, fam, batch, fails=_failing_part(base)),
    }


def _failing_part(base):
    """The first theorem part of the analysed claim that fails on the batch, or None."""
    return next((p.name for p in base.parts if p.sides.role == "theorem" and not p.holds), None)
