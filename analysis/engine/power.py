"""Powered versions of a statement's rate parts, run under ``moreau check --analyse`` (docs/power.md).

A rate part's *power* is the smallest change of its claimed exponent that the run rejects
(:func:`moreau.analysis.engine.rates.part_detectable_change`).  Where the default run's grid cannot
bring it to 0.05 at an acceptable cost (a transient on short horizons, instances on which the rate is
not attained), a statement lists in ``Statement.powered`` other statements that check the same claim
where it can: longer horizons, more runs, instances that attain the rate.  They are not part of the
default run (tens of seconds each); ``--analyse`` runs every powered statement of a record's statement
on the record's family, its printed claim and every mutant on one batch drawn from ``--seed``, and
reports per rate part the fitted exponents, the detectable change and whether it is at most
:data:`TARGET`, and per mutant whether it is rejected.  The JSON record carries the same under
``"powered"``.
"""

from __future__ import annotations

import time

import numpy as np

from moreau.analysis.engine.rates import part_detectable_change

__all__ = ["TARGET", "ok", "powered", "print_powered"]

#: the power a powered rate part must reach (issue 27 item 6): it detects every change of the exponent above it
TARGET = 0.05


def powered(rec, seed=0) -> list[dict]:
    """The powered statements of ``rec``'s statement that cover its family, each run (printed claim and
    mutants on one batch from ``seed``); a JSON-ready list, empty where the statement has none."""
    fam = rec.result.family
    out = []
    for st in rec.statement.powered:
        if fam not in st.families:
            continue
        t0 = time.perf_counter()
        batch = st.instances(fam, None, np.random.default_rng(seed))
        prepared = st.prepared(batch)
        res = st.run(fam, None, None, batch=batch, prepared=prepared, reading=None)
        parts = [_part(p) for p in res.parts if p.claimed == "rate"]
        mutants = [
            {
                "name": m.name,
                "rejected": not st.run(fam, None, None, mutant=m, batch=batch, prepared=prepared).holds,
            }
            for m in st.mutants
        ]
        out.append(
            {
                "id": st.id,
                "family": fam,
                "instances": res.instances,
                "holds": res.holds,
                "parts": parts,
                "powered": all(p["powered"] for p in parts) and bool(parts),
                "mutants": mutants,
                "equivalent_mutants": dict(st.equivalent_mutants),
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
    return out


def _part(p) -> dict:
    s = p.sides
    app = np.asarray(s.applicable, bool)
    d = part_detectable_change(p)
    return {
        "name": p.name,
        "holds": p.holds,
        "kind": s.kind,
        "exponent": float(np.asarray(s.rhs)[app][0]) if app.any() else None,
        "atol": float(s.atol),
        "slope_range": [float(np.min(s.lhs[app])), float(np.max(s.lhs[app]))] if app.any() else None,
        "applicable": int(app.sum()),
        "detectable_change": d,
        "powered": d is not None and 0 <= d <= TARGET,
    }


def ok(results) -> bool:
    """Every powered statement holds, reaches the target power on every rate part and rejects every mutant."""
    return all(r["holds"] and r["powered"] and all(m["rejected"] for m in r["mutants"]) for r in results)


def print_powered(records, results) -> bool:
    """The powered statements' section of the report; True iff every one is :func:`ok`."""
    rows = [(rec, r) for rec, rs in zip(records, results, strict=True) for r in rs]
    if not rows:
        return True
    print(f"Powered rate checks (not in the default run; each rate part must detect a change <= {TARGET:g}):")
    for rec, r in rows:
        print(
            f"  {rec.statement.id} [{r['family']}] -> {r['id']}: {'holds' if r['holds'] else 'FAILS'} "
            f"on {r['instances']} instance{'s' if r['instances'] != 1 else ''} ({r['seconds']:.1f} s)"
        )
        for p in r["parts"]:
            d = p["detectable_change"]
            lo, hi = p["slope_range"] or (np.nan, np.nan)
            what = {"equal": "|Δexponent| > ", "at most": "Δexponent < -", "at least": "Δexponent > "}[
                p["kind"]
            ]
            power = (
                "no fit"
                if d is None
                else f"detects {what}{d:.3f}" + ("" if p["powered"] else " (NOT <= target)")
            )
            tol = f" ± {p['atol']:g}" if p["atol"] else ""
            print(
                f"    - {p['name']}: fitted exponents {lo:.3f} .. {hi:.3f} on {p['applicable']}, claimed "
                f"{p['kind']} {p['exponent']:.4g}{tol}; {power}"
            )
        rejected = sum(m["rejected"] for m in r["mutants"])
        print(f"    mutants rejected {rejected}/{len(r['mutants'])}")
        for m in r["mutants"]:
            print(f"      {'rejected' if m['rejected'] else 'SURVIVES'}: {m['name']}")
        for name, why in r["equivalent_mutants"].items():
            print(f"      equivalent (not counted): {name}: {why}")
    print()
    return ok(r for _, r in rows)
