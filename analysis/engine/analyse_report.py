"""The report section of ``moreau check --analyse`` (the analyses are ``moreau.analysis.engine.analyse``)."""

from __future__ import annotations

from moreau.analysis.engine.analyse import UNDECIDABLE, VACUOUS

__all__ = ["print_analyses", "print_worst_cases", "save_worst", "sharpest_lines"]


def _derived_line(d):
    """One line of the report for a sharpest entry's ``derived``."""
    if d is None:
        return "derived: no one-eigenvalue derivation"
    if d.get("formula") is None:
        return f"derived: the derivation failed ({d.get('error')})"
    head = (
        f"derived (sympy, one eigenvalue a, g(a) = {d['ratio']}{', |g|' if d['absolute'] else ''}): "
        f"sup LHS/RHS = {d['formula']}" + ("" if d["proved"] else " [NOT PROVED]")
    )
    if d["value"] is None:
        return head + "; no applicable instance in its cases"
    text = (
        f"{head}; at this batch's parameters <= {d['value']:.4g} (max over instances), the instances reach "
        f"{d['instances_reach']:.4g}; attained on {d['attained_on']}/{d['covered']} instances; over all "
        f"admissible parameters: {d['sup_over_parameters']}"
    )
    if d["exceeded"]:
        text += (
            f"; EXCEEDED on {d['exceeded']} instance(s) (first #{d['exceeded_instance']}): a wrong derivation "
            "or a finding"
        )
    return text


def _params(d, room=160):
    text = ", ".join(f"{k}={v:.4g}" for k, v in d.items())
    return text if len(text) <= room else text[: room - 1] + "…"


def sharpest_lines(sh):
    """The report's lines of one ``sharpest`` entry: the worst-case search's result (the sharpest constant,
    attained / approached / unbounded) and the batch's sample maximum beside it."""
    dep = "; ".join(
        f"{k}: {d['lower half']:.3g} below {d['split at']:.3g}, {d['upper half']:.3g} above"
        for k, d in sh["dependence"].items()
    )
    sample = f"batch maximum {sh['sample_max']:.4g}" + (f" (max ratio by parameter: {dep})" if dep else "")
    o = sh.get("optimised")
    head = f"  sharpest constant of {sh['part']}"
    if not o or o.get("best") is None:
        why = "no worst-case search (--optimise-seconds 0)" if not o else o.get("status", "")
        return [f"{head}: not searched ({why}); {sample}"]
    cost = f"{o['evaluations']} evaluations, {o['seconds']:.2g} s, from {o['starts']} batch instance(s)"
    st = o["status"]
    if st == "attained":
        what = f"{o['best']:.10g}, attained at finite parameters" + (
            " — the bound itself (LHS = RHS to 1e-9)" if o["bound_attained"] else ""
        )
    elif st == "not converged":
        what = (
            f"at least {o['best']:.10g}"
            + (" (LHS = RHS to 1e-9 there)" if o["bound_attained"] else "")
            + "; the budget ran out before the search converged (raise --optimise-seconds)"
        )
    else:
        path = o["path"]
        trend = ", ".join("-" if r is None else f"{r:.6g}" for r in path["ratios"])
        also = f" (with {', '.join(path['also'])})" if path["also"] else ""
        if st == "unbounded":
            g = o["growth"]
            what = (
                f"none: LHS/RHS grows without bound as {path['parameter']} → {path['towards']}{also}, "
                f"fitted {g['law']} over {g['points']} points spanning {g['decades']:.2g} decades"
            )
        else:
            what = f"{o['best']:.10g}, approached (not attained) as {path['parameter']} → {path['towards']}{also}"
        what += f"; LHS/RHS along the path: {trend}" + (f" (ray: {path['ray']})" if path.get("ray") else "")
    if o.get("at_limit"):
        what += "; at its search limit: " + ", ".join(f"{k} = {v:.6g}" for k, v in o["at_limit"].items())
    return [
        f"{head}: {what} [worst-case search: {cost}]",
        f"    at {_params(o['parameters'])}; {sample}",
    ]


def print_worst_cases(records, worst, seconds):
    """The report section of the worst-case search under ``--search`` (without ``--analyse``)."""
    print(
        f"worst cases (--search): Nelder-Mead over each family's parameters, {seconds:g} s per (id, family)"
    )
    for rec, entries in zip(records, worst, strict=True):
        if entries:
            print(f"{rec.statement.id} [{rec.result.family}]")
        for sh in entries:
            for line in sharpest_lines(sh):
                print(line)
    print()


def save_worst(records, worst, directory):
    """``--save-worst``: each part's worst instance found, as a one-instance ``.npz`` (the format of
    ``--save-counterexamples``, replayed by ``--replay``); prints each file with its command."""
    import numpy as np

    from moreau.analysis.engine.records import save_instance

    for rec, entries in zip(records, worst, strict=True):
        for k, sh in enumerate(entries):
            o = sh.get("optimised") or {}
            if not o.get("instance"):
                continue
            one = {name: np.asarray(v) for name, v in o["instance"].items()}
            path, cmd = save_instance(one, rec.statement.id, rec.result.family, f"worst-{k}", directory)
            print(
                f"worst instance of {rec.statement.id} [{rec.result.family}] {sh['part']} "
                f"(LHS/RHS {o['best']:.6g}): {path}\n  replay: {cmd}"
            )


def print_analyses(records, analyses):
    """The report section of ``--analyse``."""

    def fmt(x):
        return "-" if x is None else f"{x:.4g}"

    print("analyses (--analyse): conditions dropped in turn, rescaling θ → sθ, f → cf, sharpest constants")
    for rec, a in zip(records, analyses, strict=True):
        head = f"{rec.statement.id} [{rec.result.family}]"
        print(head + ("" if a.get("claim", "printed") == "printed" else f" (analysing the {a['claim']})"))
        for c in a["conditions"]:
            v = c["verdict"]
            extra = (
                f": fails on instance #{c['instance']} ({c['part']}, LHS/RHS {fmt(c.get('ratio'))})"
                if v == "necessary"
                else f": the bound turns negative or infinite without it (#{c['instance']}, {c['part']})"
                if v == VACUOUS
                else f": holds on the {c['admitted']} instance(s) it admits"
                if v == "appears unnecessary"
                else ": no instance violates it (raise --trials)"
                if v == "not exercised"
                else f" ({c['detail']})"
                if v == UNDECIDABLE
                else f": a side is undefined without it ({c.get('detail') or c.get('part')})"
            )
            print(f"  condition {c['condition']}: {v.upper() if v == 'necessary' else v}{extra}")
        for line in _found_lines(a.get("conditions_found") or []):
            print(line)
        for e in a.get("nested") or []:
            print(f"  nested hypotheses: {e['text']}")
        if not a["scale_declared"]:
            print(f"  scale consistency: not analysed ({a['scale_not_declared_because']})")
        elif not a["scale"]:
            print(
                f"  scale consistency: every part's LHS/RHS, exponent and applicability unchanged under "
                f"(s, c) in {[(float(s), float(c)) for s, c in a['scales_tried']]}"
            )
        else:
            for e in a["scale"][:5]:
                print(
                    f"  NOT SCALE-CONSISTENT: {e['part']}: {e['what']} {e['before']} -> {e['after']} on instance "
                    f"#{e['instance']} under s = {e['s']:g}, c = {e['c']:g}"
                )
        for sh in a["sharpest"]:
            for line in sharpest_lines(sh):
                print(line)
            if (
                sh.get("derived") is not None
            ):  # the parts without a one-eigenvalue derivation say nothing here
                print(f"    {_derived_line(sh.get('derived'))}")
    for line in _family_disagreements(records, analyses):
        print(line)
    print()


def _found_lines(found):
    """The condition search's lines (``moreau.analysis.engine.conditions``): each rendered from the run."""
    out = []
    for f in found:
        where = "the printed claim" if f["claim"] == "printed" else f"the claim with {f['dropped']} dropped"
        out.append(f"  condition found for {where}: {f['text']}")
        for e in f.get("also") or []:
            out.append(f"    also: {e['text']}")
    return out


def _family_disagreements(records, analyses):
    """A condition NECESSARY on one family and not on another, said once with why: necessity is
    shown by a counterexample among a family's instances, so a family whose instances never reach the
    case where the condition binds cannot show it (it is not evidence that the condition is idle)."""
    seen = {}
    for rec, a in zip(records, analyses, strict=True):
        for c in a["conditions"]:
            seen.setdefault((rec.statement.id, c["condition"]), {})[rec.result.family] = c["verdict"]
    out = []
    for (sid, cond), fams in seen.items():
        if "necessary" in fams.values() and any(v != "necessary" for v in fams.values()):
            nec = ", ".join(f for f, v in fams.items() if v == "necessary")
            other = ", ".join(f"{f} ({v})" for f, v in fams.items() if v != "necessary")
            out.append(
                f"{sid}: condition {cond} is necessary on {nec} but not shown so on {other}: those "
                "instances never reach the case where it binds; necessity stands (one counterexample "
                "suffices)"
            )
    return out
