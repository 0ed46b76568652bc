"""``moreau check``'s run: the sub-modes (``--list``, ``--describe``, ``--replay``) dispatched, then the
catalogue run, the text report, the optional steps (``--analyse``, ``--search``, ``--symbolic``,
``--pep``), the JSON and the closing block; returns the exit status."""

from __future__ import annotations

import json
import time
import warnings

from moreau.analysis.engine.cli_options import (
    DEFAULT_SEARCH_SECONDS,
    OPTIMISE_SECONDS,
    _fail,
    _usage_problem,
    _users_error,
    _writable_dir,
    _writable_file,
)
from moreau.analysis.engine.cli_replay import _replay

__all__ = ["cmd_check"]


def cmd_check(args) -> int:
    from moreau.analysis.engine import report, runner
    from moreau.analysis.engine.records import SLACK_THRESHOLD, record_json, run_info
    from moreau.analysis.engine.registry import StatementError, full_catalogue, load_module
    from moreau.analysis.engine.verdict import expectation_line, summary_line

    problem = _usage_problem(args)
    if problem:
        return _fail(problem)
    if args.search_seconds is None:
        args.search_seconds = DEFAULT_SEARCH_SECONDS
    try:
        cat = full_catalogue(args.module)
        own = [st.id for spec in args.module for st in load_module(spec)]
    except StatementError as exc:
        return _users_error(args, exc)
    ids = list(dict.fromkeys(args.ids or own))  # a repeated id runs once; --module alone: its statements
    unknown = [i for i in ids if i not in cat]
    if unknown:
        return _fail(f"unknown id(s) {', '.join(unknown)}; known: {', '.join(cat)}")
    families = sorted({f for st in cat.values() for f in st.families})
    if args.family not in ("all", *families):
        return _fail(f"unknown --family {args.family!r}; valid: all, {', '.join(families)}")
    if args.list:
        for s in cat.values():
            print(f"{s.id:22s} {s.source:45s} families: {', '.join(s.families)}  claimed: {s.claimed}")
            print(f"{'':22s} {s.text}")
        return 0
    if args.describe:
        from moreau.analysis.engine.describe import describe

        print("\n".join(describe(cat[i]) for i in (ids or cat)))
        return 0
    if args.replay is not None:
        return _replay(args, cat)
    selected = [(i, f) for i in (ids or cat) for f in cat[i].families if args.family in ("all", f)]
    if not selected:
        return _fail(
            f"no statement of {', '.join(ids or cat)} covers --family {args.family} (nothing to check)"
        )
    for why in (
        _writable_file(args.json) if args.json is not None else None,
        _writable_dir(args.save_counterexamples) if args.save_counterexamples is not None else None,
        _writable_dir(args.save_worst) if args.save_worst is not None else None,
    ):
        if why:
            return _fail(why)
    if args.pep:
        from moreau.analysis.pep.solve import require_pep

        try:
            require_pep()
        except ImportError as exc:
            return _fail(str(exc))
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # numerical warnings are counted, never printed
        warnings.simplefilter("always", RuntimeWarning)
        client = None
        try:
            if args.scheduler:
                from moreau.analysis.engine.distributed import connect

                client = connect(args.scheduler)
            records = runner.run(
                ids or None,
                args.family,
                args.trials,
                args.seed,
                args.mutants,
                args.search,
                progress=True,
                cat=cat,
                client=client,
                modules=tuple(args.module),
                search_seconds=0.0 if args.search else args.search_seconds,
            )
        except StatementError as exc:
            return _users_error(args, exc)
        finally:
            if client is not None:
                client.close()
    t_run, spent = time.perf_counter(), {}  # spent: the CLI's own steps' seconds (the closing block)
    if args.slack_threshold is None:
        args.slack_threshold = SLACK_THRESHOLD
    trials_used, trials_line = report.trials_used(records, args.trials)
    if args.verbose:
        report.print_table(records, args.slack_threshold)
    verdicts = report.print_verdicts(records)
    ok = all(v["as_expected"] for v in verdicts)
    if args.mutants:
        ok &= report.print_mutants(records, restricted=args.family != "all", verbose=args.verbose)
    if args.search:
        report.print_searches(records, args.search)
    else:
        report.print_short_search(records)
    analyses = worst = power = None
    budget = OPTIMISE_SECONDS if args.optimise_seconds is None else args.optimise_seconds
    t1 = time.perf_counter()
    if args.analyse:
        from moreau.analysis.engine.analyse import analyse
        from moreau.analysis.engine.analyse_report import print_analyses

        analyses = [analyse(r, budget, seed=args.seed) for r in records]
        print_analyses(records, analyses)
        from moreau.analysis.engine.power import powered, print_powered

        power = [powered(r, seed=args.seed) for r in records]  # Statement.powered: docs/power.md
        ok &= print_powered(records, power)
    elif args.search:  # --search: the worst-case search too (docs/optimisation.md)
        from moreau.analysis.engine.analyse import worst_cases
        from moreau.analysis.engine.analyse_report import print_worst_cases

        worst = [worst_cases(r, budget) for r in records]
        print_worst_cases(records, worst, budget)
    spent["analyse"] = time.perf_counter() - t1
    if args.save_worst:
        from moreau.analysis.engine.analyse_report import save_worst

        try:
            save_worst(records, worst or [a["sharpest"] for a in analyses or []], args.save_worst)
        except OSError as exc:
            return _fail(
                f"cannot write --save-worst {exc.filename or args.save_worst}: {exc.strerror or exc}"
            )
    if args.save_counterexamples:
        try:
            report.save(records, args.save_counterexamples, verbose=args.verbose)
        except OSError as exc:  # a full disk, a quota: the environment, as for --json (exit 2)
            where = exc.filename or args.save_counterexamples
            return _fail(f"cannot write --save-counterexamples {where}: {exc.strerror or exc}")
    t1 = time.perf_counter()
    if args.symbolic:
        from moreau.analysis.engine.registry import catalogue as _catalogue
        from moreau.analysis.engine.symbolic import print_proofs

        chosen, own_cat = [cat[i] for i in (ids or cat)], _catalogue()
        ok &= print_proofs(  # the catalogue's proofs for a catalogue run; a user's derivations for theirs
            [st for st in chosen if st.id not in own_cat], any(st.id in own_cat for st in chosen)
        )
    spent["symbolic"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    pep_records = None
    if args.pep:
        from moreau.analysis.pep.report import print_pep, run_pep

        pep_records = run_pep(
            ids or list(cat), args.seed, cat=cat
        )  # each statement: its class worst case, or why none
        ok &= print_pep(pep_records)
    spent["pep"] = time.perf_counter() - t1
    if args.json:
        info = run_info(args)
        info["numerical_warnings"] = _warning_counts(caught)
        info["trials_used"] = (
            trials_used  # {id: {family: n}} where a checker used another number than --trials
        )
        steps, total = _step_seconds(records, spent, t0, t_run)
        info["step_seconds"] = {k: round(v, 4) for k, v in {**steps, "total": total}.items()}
        by_id = {v["printed"]["id"]: v for v in verdicts}
        payload = [
            record_json(r, run=info, slack_threshold=args.slack_threshold, verdict=by_id[r.statement.id])
            for r in records
        ]
        if analyses is not None:
            for j, a in zip(payload, analyses, strict=True):
                j["analyse"] = a
        if power is not None:  # --analyse: the powered statements' runs (engine.power), [] where none
            for j, pw in zip(payload, power, strict=True):
                j["powered"] = pw
        if worst is not None:  # --search without --analyse: the worst-case search's entries alone
            for j, w in zip(payload, worst, strict=True):
                j["worst_cases"] = w
        if pep_records is not None:  # --pep: each record gets its statement's class worst cases (a new key)
            for j in payload:
                j["pep"] = [p for p in pep_records if p["id"] == j["id"]]
        from moreau._files import atomic_write

        try:
            atomic_write(args.json, json.dumps(payload, indent=1))
        except OSError as exc:
            return _fail(f"cannot write --json {args.json}: {exc.strerror or exc}")
        print(f"wrote {args.json} ({len(records)} records)")
    from moreau.analysis.engine.registry import catalogue

    if any(r.statement.id in catalogue() for r in records):  # the papers' coverage, for a catalogue run
        _print_gaps(ids or list(cat))
    untested = sum(1 for r in records for p in r.result.parts if not p.applicable)
    note = (
        f"; {untested} part(s) not tested (no instance met their assumptions: not claimed to hold)"
        if untested and args.verbose
        else ""
    )
    if trials_line:
        print(trials_line)
    print(summary_line(verdicts) + note)
    print(f"{expectation_line(verdicts)}; {time.perf_counter() - t0:.1f} s")
    steps, total = _step_seconds(records, spent, t0, t_run)  # what the run did and what each step cost
    ran = {k: bool(getattr(args, k)) for k in ("mutants", "analyse", "search", "pep", "symbolic")}
    for line in report.run_summary(records, steps, total, ran):
        print(line)
    return 0 if ok else 1


def _step_seconds(records, spent, t0, t_run):
    """``({step: seconds}, total)``: the records' steps summed (``report.step_totals``), the CLI's own
    (``spent``: analyse, symbolic, pep) and ``report``: the rest of the time since the run returned
    (``t_run``), the text report and the files written; ``total`` since ``t0``."""
    from moreau.analysis.engine.report import step_totals

    now = time.perf_counter()
    steps = {**step_totals(records), **spent}
    steps["report"] = max(now - t_run - sum(spent.values()), 0.0)
    return steps, now - t0


def _warning_counts(caught):
    """``{message: count}`` of the numerical warnings a run raised (recorded in the JSON, not printed)."""
    out = {}
    for w in caught:
        key = str(w.message).split("\n")[0][:120]
        out[key] = out.get(key, 0) + 1
    return out


def _print_gaps(ids):
    """The papers' statements the catalogue does not check: "all statements hold" is not "verified"."""
    import textwrap

    from moreau.analysis.engine.coverage import known_gaps

    gaps = known_gaps()
    if gaps:
        text = f"not checked (yet), {len(gaps)} statements of the source papers: " + ", ".join(
            f"{sid} ({paper}, {where})" for sid, paper, where, _ in gaps
        )
        print("\n".join(textwrap.wrap(text, 119, subsequent_indent="  ")))
