"""``moreau check``: run the theorem catalogue and report.

Exit status: 0 every statement holds (and, with ``--mutants``, every mutant
is rejected; with ``--symbolic``, every identity is proved); 1 otherwise;
2 usage errors; 3 an internal error.  ``--replay`` of a mutant's saved
instance exits 0 when the mutant is rejected on it, 1 when it is not.

A large ``--trials`` is drawn, judged and reduced in chunks of 2048 instances
(memory bounded by one chunk; a progress bar on a terminal).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from moreau._argtypes import nonnegative_int, positive_int

__all__ = ["add_check_parser", "cmd_check"]


def add_check_parser(sub):
    p = sub.add_parser("check", help="check the theorem catalogue on concrete instances",
                       description=__doc__.replace("``", ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ids", nargs="*", metavar="ID", help="statement ids (default: the whole catalogue)")
    p.add_argument("--family", choices=("quadratic", "logistic", "multinomial", "nonconvex", "all"), default="all",
                   help="instance family to check on (default: every family a statement covers)")
    p.add_argument("--trials", type=positive_int, default=None,
                   help="instances per (id, family) (default: each checker's own, sized for a < 1 min run); "
                        "above 2048 they are drawn and judged in chunks, in bounded memory")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the instances (an integer >= 0; each (id, family) derives its own stream)")
    p.add_argument("--mutants", action="store_true", help="run every mutant; each must be rejected")
    p.add_argument("--search", type=positive_int, default=0, metavar="N",
                   help="also search N hypothesis examples per (id, family) for a failing instance "
                        "(and per surviving mutant); a failure is shrunk to one small instance")
    p.add_argument("--symbolic", action="store_true", help="sympy proofs of the quadratic identities")
    p.add_argument("--analyse", action="store_true",
                   help="also drop each condition in turn (which are necessary), rescale the problem (is "
                        "the statement scale-consistent) and report the sharpest constants; JSON key \"analyse\"")
    p.add_argument("--pep", action="store_true",
                   help="also the class worst case of each first-order statement by performance estimation "
                        "(PEPit with the Clarabel solver; needs the pep extra); JSON key \"pep\" per record")
    p.add_argument("--slack-threshold", type=_ratio_arg, default=None, metavar="R",
                   help="flag a bound that holds with max LHS/RHS below R as LOOSE (default 0.1)")
    p.add_argument("--json", metavar="PATH", help="write one record per (id, family); schema in analysis/engine/records.py")
    p.add_argument("--save-counterexamples", metavar="DIR",
                   help="save failing instances, and the instance that rejects each mutant, as .npz "
                        "(each printed with the command that replays it)")
    p.add_argument("--replay", metavar="FILE", help="re-check one saved instance (.npz)")
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    p.add_argument("--describe", action="store_true",
                   help="print the documentation of the given ids (default: all) and exit (docs/catalogue.md)")
    p.set_defaults(func=cmd_check)
    return p


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


def cmd_check(args) -> int:
    from moreau.analysis.engine import runner
    from moreau.analysis.engine.records import SLACK_THRESHOLD, record_json, run_info
    from moreau.analysis.engine.registry import catalogue

    cat = catalogue()
    ids = list(dict.fromkeys(args.ids))  # a repeated id runs once
    unknown = [i for i in ids if i not in cat]
    if unknown:
        return _fail(f"unknown id(s) {', '.join(unknown)}; known: {', '.join(cat)}")
    if args.list:
        for s in cat.values():
            print(f"{s.id:22s} {s.source:45s} families: {', '.join(s.families)}  claimed: {s.claimed}")
            print(f"{'':22s} {s.text}")
        return 0
    if args.describe:
        from moreau.analysis.engine.describe import describe

        print("\n".join(describe(cat[i]) for i in (ids or cat)))
        return 0
    if args.replay:
        return _replay(args, cat)
    selected = [(i, f) for i in (ids or cat) for f in cat[i].families if args.family in ("all", f)]
    if not selected:
        return _fail(f"no statement of {', '.join(ids or cat)} covers --family {args.family} (nothing to check)")
    for why in (_writable_file(args.json) if args.json else None,
                _writable_dir(args.save_counterexamples) if args.save_counterexamples else None):
        if why:
            return _fail(why)
    if args.pep:
        from moreau.analysis.pep.solve import require_pep
        try:
            require_pep()
        except ImportError as exc:
            return _fail(str(exc))
    t0 = time.perf_counter()
    records = runner.run(ids, args.family, args.trials, args.seed, args.mutants, args.search, progress=True)
    if args.slack_threshold is None:
        args.slack_threshold = SLACK_THRESHOLD
    ok = _print_table(records, args.slack_threshold)
    if args.mutants:
        ok &= _print_mutants(records, restricted=args.family != "all")
    if args.search:
        _print_searches(records, args.search)
    analyses = None
    if args.analyse:
        from moreau.analysis.engine.analyse import analyse, print_analyses
        analyses = [analyse(r) for r in records]
        print_analyses(records, analyses)
    if args.save_counterexamples:
        _save(records, args.save_counterexamples)
    if args.symbolic:
        from moreau.analysis.engine.symbolic import print_proofs
        ok &= print_proofs()
    pep_records = None
    if args.pep:
        from moreau.analysis.pep.report import print_pep, run_pep
        pep_records = run_pep(ids or None, args.seed)  # None: every statement with a class worst case
        ok &= print_pep(pep_records)
    if args.json:
        payload = [record_json(r, run=run_info(args), slack_threshold=args.slack_threshold)
                   for r in records]
        if analyses is not None:
            for j, a in zip(payload, analyses):
                j["analyse"] = a
        if pep_records is not None:  # --pep: each record gets its statement's class worst cases (a new key)
            for j in payload:
                j["pep"] = [p for p in pep_records if p["id"] == j["id"]]
        try:
            with open(args.json, "w") as fh:
                json.dump(payload, fh, indent=1)
        except OSError as exc:
            return _fail(f"cannot write --json {args.json}: {exc.strerror or exc}")
        print(f"wrote {args.json} ({len(records)} records)")
    _print_gaps(ids or list(cat))
    untested = sum(1 for r in records for p in r.result.parts if not p.applicable)
    note = (f"; {untested} part(s) not tested (no instance met their assumptions: not claimed to hold)"
            if untested else "")
    print(f"{'all statements hold' if ok else 'FAILURES (see above)'}{note}; {time.perf_counter() - t0:.1f} s")
    return 0 if ok else 1


def _print_gaps(ids):
    """The papers' statements the catalogue does not check: "all statements hold" is not "verified"."""
    from moreau.analysis.engine.coverage import known_gaps

    gaps = known_gaps()
    if gaps:
        print(f"not checked (yet), {len(gaps)} statements of the source papers: "
              + ", ".join(f"{sid} ({paper}, {where})" for sid, paper, where, _ in gaps))


def _fmt(x):
    return "-" if x is None or not np.isfinite(x) else f"{x:.4g}"


def _print_table(records, slack_threshold=None) -> bool:
    from moreau.analysis.engine.records import SLACK_THRESHOLD, is_loose, record_json

    threshold = SLACK_THRESHOLD if slack_threshold is None else slack_threshold

    head = f"{'id':20s} {'source':38s} {'family':9s} {'inst':>5s} {'holds':>5s} {'max L/R':>9s} {'tight':>5s} {'time':>6s}"
    print(head)
    print("-" * len(head))
    ok = True
    for rec in records:
        r, st = rec.result, rec.statement
        j = record_json(rec)
        print(f"{st.id:20s} {st.source[:38]:38s} {r.family:9s} {r.instances:5d} {'yes' if r.holds else 'NO':>5s} "
              f"{_fmt(r.max_ratio):>9s} {'yes' if j['tight'] else 'no':>5s} {r.seconds + rec.mutant_seconds:6.2f}")
        for p in r.parts:
            flag = ("   <-- FAILS" if not p.holds else
                    f"   LOOSE (max L/R < {threshold:g} on every instance)" if is_loose(p, threshold) else "")
            measure = (f"max error/allowed {_fmt(p.max_ratio)}" if p.claimed == "exact" else
                       _rate_measure(p) if p.claimed == "rate" else
                       f"max L/R {_fmt(p.max_ratio)}, {'attained' if p.tight else 'not attained'}"
                       + _ci_measure(p))
            outside = p.instances - p.applicable
            if not p.applicable:
                print(f"{'':22s}- {p.name} [{p.claimed}]: NOT TESTED (none of the {p.instances} instances meets its "
                      f"assumptions; raise --trials)")
                continue
            scope = f" ({outside} outside its assumptions: not checked)" if outside else ""
            role = ", auxiliary" if p.sides.role == "auxiliary" else ""
            print(f"{'':22s}- {p.name} [{p.claimed}{role}]: holds on {p.applicable - p.failures.size}/{p.applicable}"
                  f"{scope}, {measure}{flag}")
            if p.sides.note:
                print(f"{'':24s}{p.sides.note}")
        if r.family == next(iter(st.families)) or len(st.families) == 1:
            for finding in st.findings:
                print(f"{'':22s}  finding: {finding}")
        if not r.holds:
            ok = False
            i = int(r.failures[0]) if r.failures.size else None
            if i is not None:
                print(f"{'':22s}  first failing instance: #{i}: " + _describe(rec.batch, rec.local(i)))
    print()
    return ok


def _level(s):
    return "" if s.confidence is None else f", {100 * s.confidence:g}% interval"


def _rate_measure(p):
    """The instance whose interval is farthest from the claim: slope [lo, hi] vs exponent."""
    s = p.sides
    if not p.applicable:
        return "no sweep"
    i = int(np.argmin(np.where(s.applicable, p.slack, np.inf)))
    tol = f" ± {s.atol:g}" if s.atol else ""
    return (f"slope {_fmt(s.lhs[i])} [{_fmt(s.lhs_ci[0][i])}, {_fmt(s.lhs_ci[1][i])}] vs exponent "
            f"{_fmt(s.rhs[i])} ({s.kind}{tol}{_level(s)}; worst of {p.applicable})")


def _ci_measure(p):
    """Monte Carlo parts: the interval of lhs at the instance closest to failing."""
    s = p.sides
    if s.lhs_ci is None or not p.applicable:
        return ""
    from moreau.analysis.engine.records import worst_ci_instance

    i = worst_ci_instance(s)
    return (f"; closest: {_fmt(s.lhs[i])} in [{_fmt(s.lhs_ci[0][i])}, {_fmt(s.lhs_ci[1][i])}] "
            f"vs {_fmt(s.rhs[i])}{_level(s)}")


def _describe(batch, i):
    parts = []
    for k, v in batch.items():
        a = np.asarray(v)[i] if np.ndim(v) else v
        parts.append(f"{k}={np.array2string(np.asarray(a), precision=4, threshold=12, max_line_width=200)}")
    return "; ".join(parts)


def mutant_verdicts(records):
    """``{(id, mutant name): [families that reject it]}``: a mutant is rejected
    when at least one family has an instance where the mutated statement fails."""
    out = {}
    for rec in records:
        for m, rejected, _ in rec.mutants:
            fams = out.setdefault((rec.statement.id, m.name), [])
            if rejected:
                fams.append(rec.result.family)
    return out


def _print_mutants(records, restricted=False) -> bool:
    """Mutant table; with ``--family`` restricted, a mutant that only another family can
    reject is reported as such and does not fail the run."""
    width = max([len(f"{sid}: {name}") for sid, name in mutant_verdicts(records)] + [6])
    print(f"{'mutant':{width}s} {'verdict'}")
    ok = True
    for (sid, name), fams in mutant_verdicts(records).items():
        if fams:
            verdict = f"rejected ({', '.join(fams)})"
        elif restricted:
            verdict = "not rejected by the families run (the verdict needs --family all)"
        else:
            verdict = "SURVIVED"
            ok = False
        print(f"{sid + ': ' + name:{width}s} {verdict}")
    print()
    return ok


def _print_searches(records, n):
    """What --search searched: per (id, family), the statement's search and each surviving mutant's."""
    print(f"hypothesis search (at most {n} generated batches before a failure, then shrinking):")
    for rec in records:
        for name, rep in rec.searches:
            what = f"{rec.statement.id} [{rec.result.family}]" + (f" mutant {name!r}" if name else "")
            if rep["found"]:
                inst = "; ".join(f"{k}={np.array2string(np.asarray(v), precision=4, threshold=8)}"
                                 for k, v in rep["instance"].items())
                print(f"  {what}: FAILURE after {rep['before_failure']} batches, shrunk in {rep['shrinks']} steps to "
                      f"{rep['batch_size']} instance(s); smallest failing instance: {inst}")
            else:
                print(f"  {what}: no failure in {rep['examples']} batches")
    print()


def _save(records, directory):
    """The first failing instances of every statement (at most 5 per record), the instance that
    rejects each mutant (when one instance does) and, for a mutant that survives, the instance
    closest to rejecting it (largest LHS/RHS), each with the command that replays it."""
    from moreau.analysis.engine.records import save_counterexample, save_instance

    for rec in records:
        for i in rec.result.failures[:5]:
            path, cmd = save_counterexample(rec, int(i), directory)
            print(f"saved {path}; reproduce: {cmd}")
        for (m, rejected, _), (where, one, i) in zip(rec.mutants, rec.mutant_batches):
            if one is None:
                continue
            path, cmd = save_instance(one, rec.statement.id, rec.result.family, f"{where}{i}", directory, m.name)
            what = (f"rejects mutant {m.name!r}" if rejected else
                    f"the instance closest to rejecting the surviving mutant {m.name!r}")
            print(f"saved {path} ({what}); replay: {cmd}")


def _replay(args, cat) -> int:
    """Re-check one saved instance.  Exit 1 when an inequality fails on it; whether a
    claimed-tight bound is attained is a property of a family, not of one instance."""
    from moreau.analysis.engine.records import load_counterexample

    import zipfile

    try:
        meta, batch = load_counterexample(args.replay)
        if not isinstance(meta, dict) or not isinstance(meta.get("family"), str):
            raise ValueError("its metadata is not a moreau counterexample record")
    except (OSError, KeyError, ValueError, TypeError, AttributeError, EOFError, zipfile.BadZipFile) as exc:
        return _fail(f"cannot read {args.replay}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    if meta.get("id") not in cat:
        print(f"moreau check: {args.replay} is for unknown id {meta.get('id')!r}", file=sys.stderr)
        return 2
    st = cat[meta["id"]]
    mutant = None
    if meta.get("mutant"):
        mutant = next((m for m in st.mutants if m.name == meta["mutant"]), None)
        if mutant is None:
            print(f"moreau check: {st.id} has no mutant {meta['mutant']!r}", file=sys.stderr)
            return 2
    if meta["family"] not in st.families:
        return _fail(f"{args.replay}: family {meta['family']!r} is not one of {st.id}'s ({', '.join(st.families)})")
    try:
        res = st.run(meta["family"], None, None, mutant=mutant, batch=batch)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        return _fail(f"{args.replay} does not hold a valid {st.id} instance ({type(exc).__name__}: {exc})")
    if mutant is not None:
        print(f"replaying mutant of {st.id}: {mutant.name}")
    ok = True
    for p in res.parts:
        s = p.sides
        if not s.applicable[0]:
            print(f"{st.id} [{meta['family']}] {p.name}: assumption not met on this instance (not checked)")
            continue
        holds = p.failures.size == 0
        ok &= holds
        print(f"{st.id} [{meta['family']}] {p.name}: lhs={s.lhs[0]:.17g} rhs={s.rhs[0]:.17g} "
              f"holds={holds}")
    if mutant is not None:  # a mutant's instance is meant to reject it: exit 0 when it does
        print(f"mutant {mutant.name!r}: {'rejected' if not ok else 'NOT rejected'} on this instance")
        return 0 if not ok else 1
    return 0 if ok else 1
