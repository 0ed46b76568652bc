"""The closing block of ``moreau check``: what the run did, counted from its records, what each step
cost, and where a checker used another number of instances than ``--trials``."""

from __future__ import annotations

from moreau.analysis.engine.report_text import _wrap
from moreau.analysis.engine.report_verdicts import group

__all__ = ["trials_used", "run_counts", "step_totals", "run_summary"]


def trials_used(records, trials):
    """``({id: {family: n}}, line)``: where a checker uses another number than ``--trials`` (raised to its
    minimum, rounded to its groups: ``Statement.trials_used``), and the report's line saying so (None if nowhere)."""
    used, why = {}, {}
    for rec in records if trials is not None else ():
        if rec.statement.trials_used is not None:
            n, reason = rec.statement.trials_used(rec.result.family, trials)
            if n != trials:
                used.setdefault(rec.statement.id, {})[rec.result.family] = int(n)
                why[rec.statement.id] = reason
    if not used:
        return used, None
    text = "; ".join(
        f"{sid} used {', '.join(f'{n} on {fam}' for fam, n in fams.items())} ({why[sid]})"
        for sid, fams in used.items()
    )
    return used, _wrap(f"--trials {trials} is not what every checker uses: {text}", indent=2)


def run_counts(records) -> dict:
    """What a run did, counted from its records: statements, records ((statement, family) pairs),
    instances judged, (reading, family) pairs judged, recorded minimal counterexamples and worst instance
    sets evaluated, failing instances shrunk, (mutant, family) pairs judged, and the statement searches'
    batches (the short search's, or --search's) and the mutants' searches."""
    stmt_searches = [rep for rec in records for name, rep in rec.searches if not name]
    return {
        "statements": len(group(records)),
        "records": len(records),
        "instances": sum(int(rec.result.instances) for rec in records),
        "readings": sum(len(rec.readings) for rec in records),
        "minimal": sum(rec.minimal is not None for rec in records),
        "worst": sum(getattr(rec, "worst", None) is not None for rec in records),
        "shrunk": sum(rec.shrunk is not None for rec in records),
        "mutants": sum(len(rec.mutants) for rec in records),
        "searched": len(stmt_searches),
        "search_skipped": sum(bool(rep.get("skipped")) for rep in stmt_searches),  # too costly to search
        "search_batches": sum(int(rep.get("examples", 0)) for rep in stmt_searches),
        "mutant_searches": sum(1 for rec in records for name, _ in rec.searches if name),
    }


def step_totals(records) -> dict:
    """``{step: seconds}`` over the records: each record's ``timings`` (``runner.STEPS``) summed."""
    from moreau.analysis.engine.runner import STEPS

    out = dict.fromkeys(STEPS, 0.0)
    for rec in records:
        for k, v in getattr(rec, "timings", {}).items():
            out[k] = out.get(k, 0.0) + float(v)
    return out


def run_summary(records, seconds, total, ran) -> list[str]:
    """The report's closing block: what the run did, counted from its records, and what each step cost
    (``seconds``: :func:`step_totals` and the CLI's own steps ``analyse``, ``pep``, ``symbolic``,
    ``report``), ``total`` the run's wall time; ``ran``: ``{"mutants", "analyse", "search", "pep",
    "symbolic"}`` as asked (a step not asked is named with the flag that runs it)."""
    c = run_counts(records)
    what = [
        f"ran: {c['statements']} statement{'s' if c['statements'] != 1 else ''} × their families = "
        f"{c['records']} record{'s' if c['records'] != 1 else ''}, {c['instances']} instances judged",
        f"readings judged on the same instances: {c['readings']} (reading, family) pairs",
        f"recorded minimal counterexamples evaluated: {c['minimal']}",
        f"recorded worst instances evaluated: {c['worst']}",
    ]
    if c["shrunk"]:
        what.append(f"failing instances shrunk: {c['shrunk']}")
    if ran.get("search"):
        what.append(
            f"search: {c['search_batches']} batches on {c['searched']} (id, family) pairs"
            + (f", {c['mutant_searches']} mutant searches" if c["mutant_searches"] else "")
        )
    else:
        skipped = f" ({c['search_skipped']} too costly to search)" if c["search_skipped"] else ""
        what.append(
            f"short search: {c['search_batches']} batches on {c['searched'] - c['search_skipped']} (id, family) "
            f"pairs{skipped} in {seconds.get('search', 0.0):.1f} s"
            if c["searched"]
            else "search: not run (--search-seconds 0, or no statement expected to hold; --search N)"
        )
    what.append(
        f"mutants: {c['mutants']} (mutant, family) pairs judged"
        if ran.get("mutants")
        else "mutants: not run (--mutants)"
    )
    if ran.get("analyse"):
        what.append(f"analyses: {c['records']} records analysed")
    elif ran.get("search"):
        what.append(f"worst-case search: {c['records']} records (--search); analyses: not run (--analyse)")
    else:
        what.append("analyses: not run (--analyse)")

    def sec(key):
        return f"{seconds.get(key, 0.0):.1f} s"

    cost = [
        f"instances drawn {sec('draw')}",
        f"prepare step and printed claims' sides {sec('claim')}",
        f"readings {sec('readings')}",
        f"instance properties {sec('properties')}",
        "recorded counterexamples and worst instances "
        f"{seconds.get('minimal', 0.0) + seconds.get('worst', 0.0):.1f} s",
    ]
    if c["shrunk"]:
        cost.append(f"shrinking {sec('shrink')}")
    if ran.get("search") or c["searched"]:
        cost.append(f"{'search' if ran.get('search') else 'short search'} {sec('search')}")
    else:
        cost.append("search not run")
    cost.append(f"mutants {sec('mutants')}" if ran.get("mutants") else "mutants not run")
    for key, flag in (("analyse", "analyse"), ("pep", "pep"), ("symbolic", "symbolic")):
        if ran.get(flag) or (key == "analyse" and ran.get("search")):
            cost.append(
                f"{'worst-case search' if key == 'analyse' and not ran.get('analyse') else key} {sec(key)}"
            )
    cost.append(f"report {sec('report')}")
    rest = total - sum(float(v) for v in seconds.values())
    if rest >= 0.05:  # loading the catalogue, bookkeeping between the steps
        cost.append(f"other {rest:.1f} s")
    return [
        _wrap("; ".join(what), indent=2),
        _wrap("time: " + ", ".join(cost) + f"; total {total:.1f} s", indent=2),
    ]
