"""The text report of ``moreau check``: one verdict line per statement by default, the per-part
detail with ``-v``.  Every number printed here is read from the run's results (prose that explains
a finding lives in ``--describe`` and docs/catalogue.md)."""

from __future__ import annotations

import re
import textwrap

import numpy as np

from moreau.analysis.engine.rates import part_detectable_change
from moreau.analysis.engine.render import params as _params
from moreau.analysis.engine.verdict import FAILS, _theorem_parts, headline, statement_verdict, worst_failure

__all__ = [
    "group",
    "print_verdicts",
    "print_table",
    "print_mutants",
    "print_searches",
    "print_short_search",
    "save",
    "mutant_verdicts",
    "family_power",
    "counterexample_text",
    "run_counts",
    "step_totals",
    "run_summary",
]

WIDTH = 119


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


def _num(x):
    """A number for a counterexample: non-finite values shown as they are (inf, nan)."""
    return f"{x:.4g}"


def _short(source):
    """The statement's place in its paper (the id names the paper): "Theorem 2 (a), (b)"."""
    where = source.split(", ", 1)[-1] if ", " in source else source
    if len(where) <= 26:
        return where
    cut = where[:25]  # at a word boundary when there is one, marked with an ellipsis
    head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return head.rstrip(" ,;(") + "…"


def _wrap(line, indent=22):
    """``line`` within WIDTH columns: a longer one continues on lines indented like the report's continuation
    lines (nothing is cut: the qualifiers and parameters at its end are part of what it says)."""
    if len(line) <= WIDTH:
        return line
    body = line.lstrip(" ")
    body = re.sub(r"\[[^\]]*\]", lambda m: m.group().replace(" ", "\0"), body)  # an array stays on one line
    return "\n".join(
        textwrap.wrap(
            body,
            WIDTH,
            initial_indent=line[: len(line) - len(body)],
            subsequent_indent=" " * indent,
            break_on_hyphens=False,
        )
    ).replace("\0", " ")


def _fmt(x):
    return "-" if x is None or not np.isfinite(x) else f"{x:.4g}"


def print_table(records, slack_threshold=None) -> bool:
    """The verbose view (``-v``): per (statement, family) every part of the printed claim, then
    every reading's parts; returns whether every printed claim holds."""
    from moreau.analysis.engine.findings import record_findings
    from moreau.analysis.engine.records import SLACK_THRESHOLD, is_loose, record_json

    threshold = SLACK_THRESHOLD if slack_threshold is None else slack_threshold

    head = (
        f"{'id':20s} {'source':38s} {'family':9s} {'inst':>5s} "
        f"{'holds':>5s} {'max L/R':>9s} {'tight':>5s} {'time':>6s}"
    )
    print(head)
    print("-" * len(head))
    ok = True
    for rec in records:
        r, st = rec.result, rec.statement
        j = record_json(rec)
        # the summary's view: the theorem's parts decide, a failure at the rounding floor is undecided
        theorem = _theorem_parts(r)
        fails = any(not p.holds for p in theorem)
        holds = "NO" if fails else "?" if any(p.at_floor for p in theorem) else "yes"
        tight = "-" if fails else "yes" if j["tight"] else "no"
        print(
            f"{st.id:20s} {st.source[:38]:38s} {r.family:9s} {r.instances:5d} {holds:>5s} "
            f"{_fmt(r.max_ratio):>9s} {tight:>5s} {r.seconds + rec.mutant_seconds:6.2f}"
        )
        for p in r.parts:
            flag = (
                "   <-- FAILS"
                if not p.holds
                else f"   LOOSE (max L/R < {threshold:g} on every instance)"
                if is_loose(p, threshold)
                else ""
            )
            measure = _measure(p)
            outside = p.instances - p.applicable
            if not p.applicable:
                print(
                    f"{'':22s}- {p.name} [{p.claimed}]: NOT TESTED (none of the {p.instances} instances meets its "
                    f"assumptions; raise --trials)"
                )
                continue
            scope = f" ({outside} outside its assumptions: not checked)" if outside else ""
            if p.at_floor:  # counted as holding above; the summary calls them inconclusive: say so here too
                scope += f" ({p.at_floor} of them at the rounding floor: inconclusive)"
            if p.rhs_negative:
                scope += f"; right side negative on {p.rhs_negative} (left out of max L/R, as in the summary)"
            role = ", auxiliary" if p.sides.role == "auxiliary" else ""
            print(
                f"{'':22s}- {p.name} [{p.claimed}{role}]: holds on {p.applicable - p.failures.size}/{p.applicable}"
                f"{scope}, {measure}{flag}"
            )
            if p.sides.note:
                print(f"{'':24s}{p.sides.note}")
        if not r.holds:
            ok = False
            where = worst_failure([r])  # the summary's counterexample: the worst failing instance
            if where is not None:
                i = where[3]
                print(
                    f"{'':22s}  counterexample (the summary's): #{i}: "
                    + _params(rec.batch, rec.local(i), 400)
                )
        computed = [  # each failing part's worst instance, and growth along a parameter (findings.py)
            f["text"]
            for f in record_findings(rec)
            if f["kind"] == "growth" or (f["kind"] in ("worst", "rate") and f["failing"])
        ]
        for line in computed:
            print(_wrap(f"{'':24s}{line}", indent=26))
        for name, (rr, _, _) in rec.readings.items():
            kind = rec.statement.reading(name).kind
            print(
                f"{'':22s}{kind} {name!r}: {'holds' if rr.holds else 'FAILS'}, max L/R {_fmt(rr.max_ratio)}"
            )
            for p in rr.parts:
                if p.applicable:
                    print(
                        f"{'':24s}- {p.name} [{p.claimed}]: holds on {p.applicable - p.failures.size}/{p.applicable}, "
                        f"{_measure(p)}"
                    )
    print()
    return ok


def _measure(p):
    """How close a part comes to failing, in words that cannot be misread: a Monte Carlo ratio
    above 1 whose interval reaches 1 is "consistent with attained", never "holds, max 1.02"."""
    if p.claimed == "exact":
        return f"max error/allowed {_fmt(p.max_ratio)}"
    if p.claimed == "rate":
        return _rate_measure(p)
    from moreau.analysis.engine.records import identically_zero

    s = p.sides
    if identically_zero(p):
        return "lhs identically 0 on this family: not evidence (the part reduces to rhs >= 0)"
    if s.lhs_ci is not None and p.applicable and p.holds and np.isfinite(p.max_ratio) and p.max_ratio > 1:
        return f"max L/R {_fmt(p.max_ratio)} by its point estimate: consistent with attained" + _ci_measure(p)
    if not p.holds:  # a failing part's maximum exceeds its bound: "attained" would misread it
        return f"max L/R {_fmt(p.max_ratio)}, exceeded" + _ci_measure(p)
    return f"max L/R {_fmt(p.max_ratio)}, {'attained' if p.tight else 'not attained'}" + _ci_measure(p)


def _level(s):
    if s.confidence is None:
        return ""
    joint = f" jointly over {s.family} instances" if s.family and s.family > 1 else ""
    return f", {100 * s.confidence:g}% interval{joint}"


def _rate_measure(p):
    """The instance whose interval is farthest from the claim: slope [lo, hi] vs exponent."""
    s = p.sides
    if not p.applicable:
        return "no sweep"
    i = int(np.argmin(np.where(s.applicable, p.slack, np.inf)))
    tol = f" ± {s.atol:g}" if s.atol else ""
    claim = {"equal": "exponent", "at most": "exponent at most", "at least": "exponent at least"}[s.kind]
    return (
        f"fitted exponent {_fmt(s.lhs[i])} [{_fmt(s.lhs_ci[0][i])}, {_fmt(s.lhs_ci[1][i])}], claimed {claim} "
        f"{_fmt(s.rhs[i])}{tol}{_level(s)}; worst of {p.applicable}{_power(p)}"
    )


def _power(p):
    """The rate part's power (``rates.part_detectable_change``) in words, with the direction its kind sees."""
    d = part_detectable_change(p)
    if d is None:
        return ""
    if d < 0:
        return "; the claimed exponent itself is rejected"
    what = {"equal": "|Δexponent| > ", "at most": "Δexponent < -", "at least": "Δexponent > "}[p.sides.kind]
    return f"; detects {what}{_fmt(d)}"


def _ci_measure(p):
    """Monte Carlo parts: the interval of lhs at the instance closest to failing."""
    s = p.sides
    if s.lhs_ci is None or not p.applicable:
        return ""
    from moreau.analysis.engine.records import worst_ci_instance

    i = worst_ci_instance(s)
    return (
        f"; closest: {_fmt(s.lhs[i])} in [{_fmt(s.lhs_ci[0][i])}, {_fmt(s.lhs_ci[1][i])}] "
        f"vs {_fmt(s.rhs[i])}{_level(s)}"
    )


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


def family_power(records):
    """``{(id, family): (mutants rejected there, mutants that count)}``: a family on which no
    mutant that counts is rejected has no power (nothing could fail there)."""
    out = {}
    for rec in records:
        counted = [(m, rej) for m, rej, _ in rec.mutants if not m.o_equivalent]
        out[(rec.statement.id, rec.result.family)] = (sum(rej for _, rej in counted), len(counted))
    return out


def _mutated_claim_fails(records) -> set:
    """``{(id, family)}`` where the claim the mutants mutate (the printed one, or the statement's
    reference reading) fails on the run's batch: no mutant's rejection there counts."""
    out = set()
    for rec in records:
        ref = rec.statement.reference
        res = rec.result if ref is None else (rec.readings.get(ref.name) or (None,))[0]
        if res is not None and any(not p.holds for p in _theorem_parts(res)):
            out.add((rec.statement.id, rec.result.family))
    return out


def print_mutants(records, restricted=False, verbose=False) -> bool:
    """Mutant table: per mutant the families that reject it and those that do not; a mutant
    equivalent under O(·) is labelled and not counted; families with no power are listed.  With
    ``--family`` restricted, a mutant that only another family can reject does not fail the run."""
    every: dict[str, list[str]] = {}
    for rec in records:
        every.setdefault(rec.statement.id, []).append(rec.result.family)
    equivalent = {(rec.statement.id, m.name): m.o_equivalent for rec in records for m, _, _ in rec.mutants}
    base_fails = _mutated_claim_fails(records)
    ok, lines, undecidable = True, [], set()
    table = mutant_verdicts(records)
    for (sid, name), fams in table.items():
        others = [f for f in every[sid] if f not in fams]
        failing = [f for f in fams if (sid, f) in base_fails]
        if (
            failing and not equivalent[(sid, name)]
        ):  # a rejection where the mutated claim fails anyway is none
            fams = [f for f in fams if f not in failing]
            others = [f for f in others if (sid, f) not in base_fails]
            if not fams:
                undecidable.add((sid, name))
                lines.append(
                    f"{sid}: {name}  undecidable, not counted: the claim it mutates fails on "
                    f"{', '.join(failing)} already (a rejection there shows nothing)"
                )
                continue
        if equivalent[(sid, name)]:
            verdict = (
                f"{'rejected by ' + ', '.join(fams) if fams else 'not rejected'}; equivalent under O(.), "
                f"not counted: {equivalent[(sid, name)]}"
            )
        elif fams:
            verdict = f"rejected by {', '.join(fams)}" + (f"; not by {', '.join(others)}" if others else "")
        elif restricted:
            verdict = "not rejected by the families run (the verdict needs --family all)"
        else:
            verdict = "SURVIVED (" + ", ".join(others) + ")"
            ok = False
        if verbose or not fams or others or equivalent[(sid, name)]:
            lines.append(f"{sid}: {name}  {verdict}")
    # O(.)-equivalent, or undecidable (the mutated claim fails already): not counted
    counted = {k: f for k, f in table.items() if not equivalent[k] and k not in undecidable}
    n_eq = len(table) - len(counted) - len(undecidable)
    print(
        _wrap(
            f"mutants: {sum(bool(f) for f in counted.values())}/{len(counted)} rejected"
            + (f", {n_eq} equivalent under O(.) not counted" if n_eq else "")
            + (f", {len(undecidable)} undecidable not counted" if undecidable else "")
            + (
                ""
                if verbose
                else " (listed: those some family does not reject, and those not counted; all with -v)"
            ),
            indent=2,
        )
    )
    for line in lines:
        print(f"  {line}")
    weak = [(sid, fam) for (sid, fam), (k, n_) in family_power(records).items() if n_ and not k]
    for sid, fam in weak:
        print(
            f"  {sid} [{fam}]: no power (no mutant is rejected on this family: its verdict rests on the others)"
        )
    print()
    return ok


def print_short_search(records):
    """One line: what the default run's short search tried, and any failure it found (by statement)."""
    reps = [(rec, rep) for rec in records for name, rep in rec.searches if not name and rep.get("short")]
    if not reps:
        return
    found = [f"{rec.statement.id} [{rec.result.family}]" for rec, rep in reps if rep["found"]]
    n, secs = sum(rep["examples"] for _, rep in reps), sum(rep["seconds"] for _, rep in reps)
    pairs = len({(rec.statement.id, rec.result.family) for rec, _ in reps})
    what = ("a failing instance for " + ", ".join(found)) if found else "no failure beyond the run's batch"
    skipped = sum(1 for _, rep in reps if rep.get("skipped"))
    more = f" ({skipped} too costly to search)" if skipped else ""
    print(
        _wrap(
            f"short search: {n} batches on {pairs - skipped} (id, family) pairs in {secs:.1f} s: {what}{more}"
        )
    )


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


def print_searches(records, n):
    """What --search searched: per (id, family), the statement's search and each surviving mutant's."""
    print(f"hypothesis search (at most {n} generated batches before a failure, then shrinking):")
    for rec in records:
        for name, rep in rec.searches:
            what = f"{rec.statement.id} [{rec.result.family}]" + (f" mutant {name!r}" if name else "")
            if rep["found"]:
                inst = "; ".join(
                    f"{k}={np.array2string(np.asarray(v), precision=4, threshold=8)}"
                    for k, v in rep["instance"].items()
                )
                print(
                    f"  {what}: FAILURE after {rep['before_failure']} batches, shrunk in {rep['shrinks']} steps to "
                    f"{rep['batch_size']} instance(s); smallest failing instance: {inst}"
                )
            else:
                print(f"  {what}: no failure in {rep['examples']} batches")
    print()


def save(records, directory, verbose=False):
    """The first failing instances of every statement (at most 5 per record), the instance that
    rejects each mutant (when one instance does) and, for a mutant that survives, the instance
    closest to rejecting it (largest LHS/RHS), each with the command that replays it."""
    from moreau.analysis.engine.records import save_counterexample, save_instance

    n = 0
    for rec in records:
        for i in rec.result.failures[:5]:
            path, cmd = save_counterexample(rec, int(i), directory)
            n += 1
            if verbose or n <= 3:
                print(f"saved {path}; reproduce: {cmd}")
        for (m, rejected, _), (where, one, i) in zip(rec.mutants, rec.mutant_batches, strict=True):
            if one is None:
                continue
            path, cmd = save_instance(
                one, rec.statement.id, rec.result.family, f"{where}{i}", directory, m.name
            )
            what = (
                f"rejects mutant {m.name!r}"
                if rejected
                else f"the instance closest to rejecting the surviving mutant {m.name!r}"
            )
            n += 1
            if verbose or n <= 3:
                print(f"saved {path} ({what}); replay: {cmd}")
    if n > 3 and not verbose:
        print(
            f"saved {n} instances in {directory} (each replays with: moreau check ID --replay FILE; -v lists them)"
        )
