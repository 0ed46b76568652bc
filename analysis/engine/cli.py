"""``moreau check``: run the theorem catalogue and report.

Each statement's verdict is about the statement as printed in its paper: holds, FAILS AS
PRINTED (with a counterexample computed by this run) or UNDECIDED (with the reason); a reading
(a repair, another reading of ambiguous text) is a separate named claim with its own verdict.

Exit status, as test runners use them: 0 every verdict is what the catalogue expects (a known
failure of a printed statement that reproduces is expected, like pytest's xfail; with
``--mutants`` every mutant is rejected, with ``--symbolic`` every identity proved); 1 a verdict
differs from the expectation (a known failure no longer fails, a reading fails, a statement with
no recorded expectation fails), or a mutant survives; 2 usage or environment errors; 3 an
internal error.  ``--replay`` of a mutant's saved instance exits 0 when the mutant is rejected
on it, 1 when it is not.

A large ``--trials`` is drawn, judged and reduced in chunks of 2048 instances
(memory bounded by one chunk; a progress bar on a terminal).

What the default run (no ID, no flag) costs, measured once on a 2-cpu machine at load 4 (commit
2565cc8; every run's report ends with its own "time:" line): 15.8 s of CPU time, 30 s wall for 40
statements (64 records, 1720 instances).  Per step, wall seconds at that load:
  instances drawn                                    0.2 s
  prepare step and the printed claims' sides        20.4 s
  readings                                           4.0 s
  instance properties                                0.0 s
  recorded counterexamples and worst instances       1.7 s
  short search (--search-seconds 0.03 per pair)      1.2 s
  report                                             0.1 s
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

from moreau._argtypes import nonnegative_int, positive_int, trials_int

__all__ = ["add_check_parser", "cmd_check"]


def add_check_parser(sub):
    p = sub.add_parser(
        "check",
        help="check the theorem catalogue on concrete instances",
        description=__doc__.replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="statement ids (default: the whole catalogue)")
    p.add_argument(
        "--family",
        default="all",
        metavar="FAMILY",
        help="instance family to check on: quadratic, logistic, multinomial, nonconvex or one a user's "
        "statement declares (default: every family a statement covers)",
    )
    p.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="SPEC",
        help="also load the statements of a module of your own: a .py file or a dotted module name whose "
        "STATEMENTS lists them (repeatable; installed packages declare theirs in the entry-point "
        "group moreau.statements); with no ID, only these are checked",
    )
    p.add_argument(
        "--trials",
        type=trials_int,
        default=None,
        help="instances per (id, family) (default: each checker's own, sized for a < 1 min run); "
        "above 2048 they are drawn and judged in chunks, in bounded memory",
    )
    p.add_argument(
        "--seed",
        type=nonnegative_int,
        default=0,
        help="seed of the instances (an integer >= 0; each (id, family) derives its own stream)",
    )
    p.add_argument("--mutants", action="store_true", help="run every mutant; each must be rejected")
    p.add_argument(
        "--search",
        type=positive_int,
        default=0,
        metavar="N",
        help="also search N hypothesis examples per (id, family) for a failing instance "
        "(and per surviving mutant); a failure is shrunk to one small instance",
    )
    p.add_argument(
        "--search-seconds",
        type=_seconds_arg,
        default=None,
        metavar="S",
        help="without --search: a short search of S seconds per (id, family) of each statement expected "
        f"to hold, for an instance that breaks it (default {DEFAULT_SEARCH_SECONDS}; 0: none)",
    )
    p.add_argument("--symbolic", action="store_true", help="sympy proofs of the quadratic identities")
    p.add_argument(
        "--analyse",
        action="store_true",
        help="also drop each condition in turn (which are necessary), rescale the problem (is "
        'the statement scale-consistent) and report the sharpest constants; JSON key "analyse"',
    )
    p.add_argument(
        "--optimise-seconds",
        type=_seconds_arg,
        default=None,
        metavar="S",
        help="with --analyse or --search: the worst-case search's budget per (id, family), in seconds "
        "(Nelder-Mead over the family's parameters from the batch's worst instances; default 2; "
        "docs/optimisation.md)",
    )
    p.add_argument(
        "--save-worst",
        metavar="DIR",
        help="with --analyse or --search: save the worst instance the search found for each inequality part "
        "as .npz (replayable with --replay)",
    )
    p.add_argument(
        "--pep",
        action="store_true",
        help="also the class worst case of each first-order statement by performance estimation "
        '(PEPit with the Clarabel solver; needs the pep extra); JSON key "pep" per record',
    )
    p.add_argument(
        "--slack-threshold",
        type=_ratio_arg,
        default=None,
        metavar="R",
        help="flag a bound that holds with max LHS/RHS below R as LOOSE (default 0.1)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="send the chunks of a large --trials to a Dask cluster (tcp://HOST:8786; the dask extra); "
        "the JSON equals the serial run's apart from timings",
    )
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write one record per (id, family); schema in analysis/engine/records.py",
    )
    p.add_argument(
        "--save-counterexamples",
        metavar="DIR",
        help="save failing instances, and the instance that rejects each mutant, as .npz "
        "(each printed with the command that replays it)",
    )
    p.add_argument("--replay", metavar="FILE", help="re-check one saved instance (.npz)")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="every part of every statement and reading, on every family (default: one line per statement)",
    )
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    p.add_argument(
        "--describe",
        action="store_true",
        help="print the documentation of the given ids (default: all) and exit (docs/catalogue.md)",
    )
    p.add_argument(
        "--debug",
        action="store_true",  # read by moreau._cli.main, accepted anywhere on the line
        help="show the traceback of an internal error (exit 3)",
    )
    p.set_defaults(func=cmd_check)
    return p


#: the default run's short search per (id, family) of a statement expected to hold, in seconds
DEFAULT_SEARCH_SECONDS = 0.03
#: the worst-case search's budget per (id, family) under --analyse / --search (moreau.analysis.engine.optimise)
OPTIMISE_SECONDS = 2.0


def _seconds_arg(text):
    """A number of seconds in [0, 3600]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in [0, 3600] (got {text!r})") from None
    if not 0 <= x <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in [0, 3600] (got {text!r})")
    return x


def _ratio_arg(text):
    """A ratio in (0, 1]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1] (got {text!r})") from None
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1] (got {text!r})")
    return x


def _fail(msg) -> int:
    print(f"moreau check: {msg}", file=sys.stderr)
    return 2


def _users_error(args: argparse.Namespace, exc: Exception) -> int:
    """A user's statements cannot be loaded or run: one line naming the statement (exit 2), the
    traceback of their code first with ``--debug``."""
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exception(exc)
    return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _writable_file(path) -> str | None:
    """Why ``path`` cannot be written (None if it can), checked before a long run."""
    import os
    from pathlib import Path

    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        return f"{path} is a directory"
    if not parent.is_dir():
        return f"directory {parent} does not exist"
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK):
        return f"{path} is not writable"
    return None


def _writable_dir(path) -> str | None:
    from pathlib import Path

    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe = Path(path) / ".moreau-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return f"{path} is not a writable directory ({exc.strerror or exc})"
    return None


def _conflicts(args):
    """Flags that cannot be combined: ``(flag, given, other flag, given, why)``."""
    replay = args.replay is not None
    return [
        ("--list", args.list, "--describe", args.describe, "--list prints every entry's summary"),
        (
            "--list",
            args.list,
            "statement ids",
            bool(args.ids),
            "--list lists the whole catalogue; use --describe ID for given ids",
        ),
        (
            "--search",
            bool(args.search),
            "--search-seconds",
            args.search_seconds is not None,
            "--search N replaces the timed short search",
        ),
        ("--replay", replay, "--json", args.json is not None, "a replay re-checks one saved instance"),
        ("--replay", replay, "--mutants", args.mutants, "a replay re-checks one saved instance"),
        ("--replay", replay, "--trials", args.trials is not None, "a replay re-checks one saved instance"),
    ]


def _usage_problem(args):
    """A one-line reason why the flags cannot run as given (empty paths, conflicting flags), or None."""
    for flag, value in (
        ("--json", args.json),
        ("--save-counterexamples", args.save_counterexamples),
        ("--save-worst", args.save_worst),
        ("--replay", args.replay),
        ("--scheduler", args.scheduler),
    ):
        if value is not None and not str(value).strip():
            return (
                f"{flag} needs a non-empty {'address' if flag == '--scheduler' else 'path'} (got {value!r})"
            )
    for a, given_a, b, given_b, why in _conflicts(args):
        if given_a and given_b:
            return f"{a} and {b} cannot be used together ({why})"
    for flag, value in (("--optimise-seconds", args.optimise_seconds), ("--save-worst", args.save_worst)):
        if value is not None and not (args.analyse or args.search):
            return (
                f"{flag} needs --analyse or --search (the worst-case search runs under them; got {value!r})"
            )
    return None


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


def _replay(args, cat) -> int:
    """Re-check one saved instance.  Exit 1 when an inequality fails on it; whether a
    claimed-tight bound is attained is a property of a family, not of one instance."""
    import zipfile
    from pathlib import Path

    from moreau.analysis.engine.records import load_counterexample

    expected = "expected a .npz counterexample written by moreau check --save-counterexamples"
    if Path(args.replay).is_file() and not zipfile.is_zipfile(
        args.replay
    ):  # numpy's advice (allow_pickle) is not ours
        return _fail(f"cannot read {args.replay}: not a .npz archive ({expected})")
    try:
        meta, batch = load_counterexample(args.replay)
        if not isinstance(meta, dict) or not isinstance(meta.get("family"), str):
            raise ValueError("its metadata is not a moreau counterexample record")
    except (OSError, KeyError, ValueError, TypeError, AttributeError, EOFError, zipfile.BadZipFile) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "pickle" in why:
            why = "it holds object (pickled) arrays"
        return _fail(f"cannot read {args.replay}: {why} ({expected})")
    if meta.get("id") not in cat:
        print(f"moreau check: {args.replay} is for unknown id {meta.get('id')!r}", file=sys.stderr)
        return 2
    if args.ids and meta["id"] not in args.ids:
        return _fail(
            f"{args.replay} holds an instance of {meta['id']}, not of {', '.join(args.ids)}: "
            f"run `moreau check {meta['id']} --replay {args.replay}`"
        )
    st = cat[meta["id"]]
    mutant = None
    if meta.get("mutant"):
        mutant = next((m for m in st.mutants if m.name == meta["mutant"]), None)
        if mutant is None:
            print(f"moreau check: {st.id} has no mutant {meta['mutant']!r}", file=sys.stderr)
            return 2
    if meta["family"] not in st.families:
        return _fail(
            f"{args.replay}: family {meta['family']!r} is not one of {st.id}'s ({', '.join(st.families)})"
        )
    try:
        res = st.run(meta["family"], None, None, mutant=mutant, batch=batch)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        return _fail(f"{args.replay} does not hold a valid {st.id} instance ({type(exc).__name__}: {exc})")
    if mutant is not None:
        print(f"replaying mutant of {st.id}: {mutant.name}")
    ok = True
    who = f"mutant {mutant.name!r} of {st.id}" if mutant is not None else f"{st.id} (as printed)"
    for p in res.parts:
        s = p.sides
        if not s.applicable[0]:
            print(f"{who} [{meta['family']}] {p.name}: assumption not met on this instance (not checked)")
            continue
        holds = p.failures.size == 0
        ok &= holds
        print(f"{who} [{meta['family']}] {p.name}: lhs={s.lhs[0]:.17g} rhs={s.rhs[0]:.17g} holds={holds}")
    if mutant is not None:  # a mutant's instance is meant to reject it: exit 0 when it does
        print(f"mutant {mutant.name!r}: {'rejected' if not ok else 'NOT rejected'} on this instance")
        return 0 if not ok else 1
    return 0 if ok else 1
