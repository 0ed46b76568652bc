r"""The reports of ``moreau check``: JSON records, loose bounds, counterexample files.

JSON schema (``moreau check --json PATH``), stable: a list with one record
per (statement id, family)::

    {
      "id": "pfedme.prop1",            # catalogue id (docs/catalogue.md)
      "source": "pFedMe, Proposition 1, eq. (6)",
      "family": "quadratic",           # "quadratic" | "logistic" | "multinomial"
      "instances": 64,                 # instances checked
      "holds": true,                   # every part holds on every applicable instance
      "max_ratio": 1.0,                # max LHS/RHS over the theorem's own (not auxiliary)
                                       # inequality parts and instances
      "tight": true,                   # every part claimed tight is attained (max ratio >= 1 - 1e-6);
                                       # with no part claimed tight: some part attains its bound
      "claimed": "upper",              # what the paper claims: "upper" | "tight" | "rate"
      "seconds": 0.12,                 # statement_seconds + mutant_seconds
      "statement_seconds": 0.1,        # the statement (instances, prepare step, judging)
      "mutant_seconds": 0.02,          # all its mutants on this family (0 without --mutants)
      "step_seconds": {"draw": 0.01, ...},  # per step of the run (runner.STEPS: draw, claim, readings,
                                       # properties, minimal, worst, shrink, search, mutants), 0 for a
                                       # step not run; timings, like every "*seconds" key: no two runs agree
      "mutants": [{"name": "...", "rejected": true,     # [] without --mutants; per family
                   "rejected_by": "part name",  # the first failing part
                   "found_on": "run",           # the batch that rejects it: "run" (the record's
                                                # instances), "default" (the checker's default batch,
                                                # tried when --trials was given), "search" (--search)
                   "instance": 3,               # its index there (null: no single instance fails,
                                                # a claimed-tight bound not attained as a whole)
                   "margin": 0.25}],   # |lhs - rhs| / max(|lhs|, |rhs|) at its worst failing instance
                                       # (rate parts: distance of the interval from the exponent);
                                       # the last three only when rejected on this family
                                       # (the CLI's verdict: rejected by at least one family)
      "findings": ["..."],             # what this run computed, one line each, rendered from this
                                       # record only (moreau.analysis.engine.findings, docs/findings.md)
      "finding_values": [{...}],       # the same findings as dicts: "kind" ("worst" | "rate" |
                                       # "not tested" | "minimal" | "shrunk" | "reading" | "growth"),
                                       # "family", "text" and the numbers of the text
      "notes": "moreau check --describe ID",   # where the catalogue's prose about the statement
                                       # is (Statement.findings, its notes; null when none); the
                                       # prose itself is in no record: its numbers are not the run's
      "parts": [{"name": ..., "claimed": "upper"|"tight"|"exact", "holds": ..., "applicable": ...,
                 "role": "theorem" | "auxiliary",   # auxiliary: a check of the checker's own
                                                    # estimates or a proof step, not the statement
                 "max_ratio": ..., "tight": ..., "min_slack": ...,   # min over instances of rhs - lhs
                 "loose": false,   # a theorem's bound holding with max_ratio < run.slack_threshold
                 "constants": {...}, "note": "..."}]
    }

Parts may carry more keys:

* a rate part (``"claimed": "rate"``, a fitted exponent per instance, one
  instance a sweep over a grid): ``"slope": [...]``, ``"slope_ci": [[lo, hi], ...]``,
  ``"exponent": [...]`` (the theory's), one entry per instance;
  ``"kind": "equal" | "at most" | "at least"``, ``"atol"`` (see ``moreau.analysis.engine.core.rate_sides``),
  ``"level"`` (two-sided level of the intervals, or null); ``max_ratio`` is
  max slope/exponent and ``min_slack`` the smallest margin by which an
  interval (widened by atol) meets the claim; ``"detectable_change"``: the part's power, the
  smallest change of the claimed exponent its intervals reject on some instance
  (``moreau.analysis.engine.rates.detectable_change``, docs/power.md), or null;
* an inequality part (``"upper"``, ``"tight"``): ``"identically_zero"``: its left side is exactly 0 on
  every applicable instance (the part reduces to rhs >= 0 on this family: not evidence);
* a Monte Carlo bound part (an upper bound whose lhs is estimated):
  ``"level"`` (two-sided level), and at the applicable instance closest to
  failing (largest lower end / rhs) ``"worst_instance"``, ``"lhs"``,
  ``"lhs_ci": [lo, hi]`` and ``"rhs"``;
* both, where intervals have a level: ``"level_jointly_over"``: the number of instances over which
  the intervals hold jointly at ``level`` (the run's instances of the statement and family; the
  judge widens each checker's per-instance interval by Bonferroni, ``moreau.analysis.engine.judge.familywise``).

With ``--search N``, a record also carries ``"search"``: one entry per search run (the
statement's, then each mutant that survived the batches): ``mutant`` ("" for the statement),
``examples`` (batches evaluated), ``before_failure``, ``shrinks``, ``failing``, ``found`` and, when
found, ``batch_size`` and ``instance`` (the shrunk failing instance; see ``moreau.analysis.engine.search``).
Without ``--search``, the default run's short search of each statement expected to hold
(``--search-seconds``) leaves one such entry too, with ``"short": true``, ``examples``, ``seconds``
and ``found`` (its failing instance, unshrunk, when found).

Every part also carries ``"tested"`` (false when no instance met its assumptions: the run
does not claim it holds).  Records written by the CLI carry ``"run"``: what produced them —
``seed``, ``trials`` (null: each checker's default; as requested), ``trials_used`` (``{id: {family: n}}``
where a checker used another number: raised to its minimum or rounded to its groups, ``Statement.trials_used``;
{} when none), ``family`` (as requested), ``mutants``,
``backend`` (the array backend, ``MOREAU_BACKEND``: "numpy" or "cupy"), ``modules`` (the ``--module``
files and modules given),
``search``, ``tolerances`` (``rtol`` of ``lhs <= rhs``, ``tight_rtol`` of attainment; exact parts carry their
own allowed error as rhs), ``slack_threshold`` (below which a bound is "loose"), ``versions`` (moreau, numpy,
scipy, ...), ``python``, ``machine`` and ``git_commit`` (or ``"not a git checkout"``).

With ``--analyse``, every record also carries ``"analyse"``: ``conditions`` (per condition
dropped: ``condition``, ``kind`` "claim" | "part", ``verdict`` "necessary" | "appears
unnecessary" | "not exercised" | "undefined", and the counterexample's ``part``, ``instance``,
``ratio`` or the number ``admitted``), ``scale_declared``, ``scale_not_declared_because`` (null, or why not),
``scales_tried`` (the (s, c) pairs the family can express), ``scale`` (the inconsistencies found: ``s``,
``c``, ``part``, ``instance``, ``what``, ``before``, ``after``; [] when consistent, null
when not declared) and ``sharpest`` (per theorem inequality part: ``sharpest_factor`` (a sample maximum),
``instance``, ``worst_parameters``, ``dependence``, ``unbounded`` (the parameters along which the
worst ratio keeps growing: ``parameter``, ``towards``, ``bin_maxima``; then no finite sharpest
constant exists) and ``derived``: null, or for a part whose
quadratic worst case is one eigenvalue the sympy derivation — ``formula``, ``ratio``, ``proved``,
``cases``, ``sup_over_parameters``, ``sup_value``, ``value`` (the formula's max over the batch),
``instances_reach``, ``at_worst_instance``, ``attained_on``, ``closest``, ``exceeded``,
``exceeded_instance``, ``covered``, ``uncovered``, ``steps``); see ``moreau.analysis.engine.analyse``.
It also carries ``"powered"``: per powered statement of its statement (``Statement.powered``, docs/power.md)
on its family, ``id``, ``family``, ``instances``, ``holds``, ``parts`` (per rate part: ``name``, ``holds``,
``kind``, ``exponent``, ``atol``, ``slope_range``, ``applicable``, ``detectable_change``, ``powered``: at
most 0.05), ``powered`` (every rate part is), ``mutants`` (``name``, ``rejected``), ``equivalent_mutants`` and
``seconds``; [] where there is none (``moreau.analysis.engine.power``).

With ``--pep``, every record also carries ``"pep"``: its statement's class worst cases (the
records of ``moreau.analysis.pep.report.run_pep``, the same list on each family's record; [] when none).

Schema version 2 (``"schema_version": 2``) adds the verdict model: ``"holds"``, ``"max_ratio"``,
``"parts"`` and ``"claimed"`` are about the statement **as printed**; ``"expected"`` is what the
catalogue expects of it ("holds" | "fails" | "undecided"); ``"readings"``: per named reading on
this family, ``name``, ``kind`` ("reading" | "variant" | "inconsistency"), ``expected``,
``changes`` (the claim entries it replaces), ``holds``, ``max_ratio``, ``parts`` (as above);
``"mutants_against"``: the claim the mutants were applied to ("printed", or "reading: NAME" when
the printed statement is expected to fail); a mutant carries ``"o_equivalent"`` (null, or why it
differs only by a constant inside O(·): not counted as teeth); ``"verdict"`` (the statement over
every family run, the same object on each of its records): ``printed`` and each of ``readings``
is ``{"claim", "verdict": "holds" | "fails" | "undecided", "shape_only", "reason", "max_ratio",
"attained", "families": {family: verdict}, "expected", "as_expected"}`` (``printed`` also has
``"id"``), and ``"as_expected"`` for the whole statement (the exit code's input).  A statement
with a recorded minimal counterexample (``Statement.counterexamples``) carries
``"minimal_counterexample"``: ``fails``, per part ``{part, holds, lhs, rhs}`` as this run
evaluated them, and the ``instance``.  The run
record also carries ``"numerical_warnings"``: ``{message: count}`` of numpy's warnings (never
printed), and ``"step_seconds"``: the run's seconds per step, the records' ``step_seconds`` summed, and
``analyse``, ``pep``, ``symbolic``, ``report`` (the text report and the files written before the JSON)
and ``total`` (from the start of the run to writing the JSON) (docs/check.md).

Every record carries ``"shared_properties"`` ``{family: [names]}``: the properties of
``moreau.analysis.engine.properties`` that every instance of the run has while the printed hypotheses
do not imply them (``Statement.implies``) and the statement does not waive them; ``"waived_properties"``
``{family: {name: why}}``: those it waives (``Statement.waived``), with the reason (docs/instances.md).

Schema version 3 keeps ``"findings"`` (a list of strings) but renders it from the record itself
(before: the catalogue's prose, the same for every run); ``"finding_values"`` and ``"notes"`` are
added keys (docs/findings.md).

Keys may be added; none of the above will be renamed or removed.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from moreau._files import atomic_write
from moreau.analysis.engine.core import take
from moreau.analysis.engine.findings import record_findings
from moreau.analysis.engine.properties import shared_properties
from moreau.analysis.engine.rates import part_detectable_change

__all__ = [
    "SLACK_THRESHOLD",
    "is_loose",
    "run_info",
    "record_json",
    "worst_ci_instance",
    "save_counterexample",
    "save_instance",
    "load_counterexample",
    "verdict_json",
]

#: a theorem's bound that holds with max LHS/RHS below this on every instance tried is flagged
#: "loose" (report and JSON; ``moreau check --slack-threshold``): the instances never come within
#: a factor 10 of it, so either the bound is loose or the instances miss its worst case
SLACK_THRESHOLD = 0.1


def run_info(args) -> dict:
    """The ``"run"`` record of a CLI invocation: arguments, tolerances and provenance."""
    from moreau._backend import get_backend
    from moreau._provenance import provenance
    from moreau.analysis.engine.core import RTOL, TIGHT_RTOL

    prov = provenance({}, args.seed)
    return {
        "seed": args.seed,
        "trials": args.trials,
        "family": args.family,
        "mutants": bool(args.mutants),
        "backend": get_backend(),
        "modules": list(getattr(args, "module", None) or []),
        "search": args.search,
        "search_seconds": 0.0 if args.search else getattr(args, "search_seconds", 0.0),
        "tolerances": {"rtol": RTOL, "tight_rtol": TIGHT_RTOL},
        "slack_threshold": getattr(args, "slack_threshold", SLACK_THRESHOLD),
        **{k: prov[k] for k in ("versions", "python", "machine", "git_commit")},
    }


def record_json(
    rec, run: dict | None = None, slack_threshold: float | None = None, verdict: dict | None = None
) -> dict:
    """The JSON record of one (statement, family); ``slack_threshold``: a theorem's inequality part
    that holds with max LHS/RHS below it is flagged ``"loose"`` (default :data:`SLACK_THRESHOLD`);
    ``verdict``: the statement's verdict over every family run
    (``moreau.analysis.engine.verdict.statement_verdict``)."""
    from moreau.analysis.engine.verdict import SCHEMA_VERSION

    if slack_threshold is None:
        slack_threshold = SLACK_THRESHOLD
    r, st = rec.result, rec.statement
    found = record_findings(rec)
    tight_parts = [p for p in r.parts if p.claimed == "tight"]
    tight = all(p.tight for p in tight_parts) if tight_parts else any(p.tight for p in r.parts)
    return {
        "id": st.id,
        "source": st.source,
        "family": r.family,
        "instances": r.instances,
        "holds": r.holds,
        "max_ratio": _num(r.max_ratio),
        "tight": bool(tight),
        "claimed": st.claimed,
        "seconds": round(r.seconds + rec.mutant_seconds, 4),
        "statement_seconds": round(r.seconds, 4),
        "mutant_seconds": round(rec.mutant_seconds, 4),
        "step_seconds": {k: round(v, 4) for k, v in getattr(rec, "timings", {}).items()},
        "mutants": [
            _mutant_json(m, rej, res, *where)
            for (m, rej, res), where in zip(
                rec.mutants, rec.mutant_batches or [(None, None, None)] * len(rec.mutants), strict=True
            )
        ],
        "findings": [f["text"] for f in found],
        "finding_values": [{k: v for k, v in f.items() if k != "text"} for f in found],
        "notes": f"moreau check --describe {st.id}" if st.findings else None,
        "class_worst": list(getattr(rec, "class_worst", [])),
        "parts": [_part_json(p, slack_threshold) for p in r.parts],
        "schema_version": SCHEMA_VERSION,
        "expected": st.expect,
        "readings": [
            {
                "name": name,
                "kind": st.reading(name).kind,
                "expected": st.reading(name).expect,
                "changes": sorted(st.reading(name).changes),
                "holds": rr.holds,
                "max_ratio": _num(rr.max_ratio),
                "parts": [_part_json(p, slack_threshold) for p in rr.parts],
            }
            for name, (rr, _, _) in rec.readings.items()
        ],
        "mutants_against": "printed" if st.reference is None else f"reading: {st.reference.name}",
        **_properties_json(rec),
        **({"minimal_counterexample": _minimal_json(*rec.minimal)} if rec.minimal is not None else {}),
        **({"worst_instances": _worst_json(*rec.worst)} if getattr(rec, "worst", None) is not None else {}),
        **(
            {
                "shrunk_counterexample": {
                    **_minimal_json(*rec.shrunk[:2]),
                    "steps": list(rec.shrunk[2]),
                    "evaluations": int(rec.shrunk[3]),
                }
            }
            if rec.shrunk is not None
            else {}
        ),
        **({"verdict": verdict_json(verdict)} if verdict is not None else {}),
        **({"search": [{"mutant": name, **rep} for name, rep in rec.searches]} if rec.searches else {}),
        **({"run": run} if run is not None else {}),
    }


def _properties_json(rec) -> dict:
    """``"shared_properties"``: ``{family: [names]}``, the library's properties every instance of the run
    has that the printed hypotheses do not imply and the statement does not waive; ``"waived_properties"``:
    ``{family: {name: why}}``, those the statement waives (``moreau.analysis.engine.properties``)."""
    shared, waived = shared_properties(rec.statement, rec.result.family, getattr(rec, "properties", {}))
    return {
        "shared_properties": {rec.result.family: shared},
        "waived_properties": {rec.result.family: waived},
    }


def _worst_json(batch, res):
    """The recorded worst instances (``Statement.worst``) as this run evaluated them: per part, LHS/RHS on
    each instance (null where not applicable)."""
    return {
        "parts": [
            {
                "part": p.name,
                "ratios": [_num(r) if a else None for r, a in zip(p.ratio, p.sides.applicable, strict=True)],
            }
            for p in res.parts
            if p.claimed in ("upper", "tight")
        ],
        "instances": {k: np.asarray(v).tolist() for k, v in batch.items()},
    }


def _minimal_json(one, res):
    """The recorded minimal counterexample as this run evaluated it."""
    parts = [
        {
            "part": p.name,
            "holds": bool(not p.failures.size),
            "lhs": _num(p.sides.lhs[0]),
            "rhs": _num(p.sides.rhs[0]),
        }
        for p in res.parts
    ]
    return {
        "fails": any(not q["holds"] for q in parts),
        "parts": parts,
        "instance": {k: np.asarray(v).tolist() for k, v in one.items()},
    }


def verdict_json(v):
    """The statement's verdict (JSON-safe copy)."""

    def claim(c):
        return {k: (_num(x) if k == "max_ratio" and x is not None else x) for k, x in c.items()}

    return {
        "printed": claim(v["printed"]),
        "readings": [claim(c) for c in v["readings"]],
        "as_expected": bool(v["as_expected"]),
    }


def _mutant_json(m, rejected, res, where=None, one=None, index=None) -> dict:
    """A mutant's verdict, the part that rejects it, the margin it fails by and where."""
    out = {"name": m.name, "rejected": bool(rejected), "o_equivalent": m.o_equivalent or None}
    failing = [p for p in res.parts if not p.holds]
    if rejected and failing:
        p = failing[0]
        out.update(rejected_by=p.name, found_on=where, instance=index, margin=_num(_margin(p)))
    return out


def _margin(p):
    """By how much a failing part fails, at its worst failing instance: the relative gap
    |lhs - rhs| / max(|lhs|, |rhs|) of an inequality or identity, the distance of the interval
    from the claimed exponent for a rate part."""
    f = p.failures
    if not f.size:
        return float("nan")
    if p.claimed == "rate":
        return float(np.max(np.abs(p.slack[f])))
    lhs, rhs = p.sides.lhs[f], p.sides.rhs[f]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(lhs - rhs) / np.maximum(np.abs(lhs), np.abs(rhs))
    rel = rel[~np.isnan(rel)]
    return float(np.max(rel)) if rel.size else float("nan")


def identically_zero(p) -> bool:
    """An inequality part whose left side is exactly 0 on every applicable instance (interval included):
    on this family it reduces to ``rhs >= 0`` and is no evidence for the bound (e.g. the bias of an
    estimate that is unbiased on quadratics, perfedavg.lemma4_3 and appendix_h)."""
    s = p.sides
    if p.claimed not in ("upper", "tight") or not p.applicable:
        return False
    app = np.asarray(s.applicable, bool)
    sides = [s.lhs] + (list(s.lhs_ci) if s.lhs_ci is not None else [])
    return bool(all(np.all(np.asarray(v)[app] == 0) for v in sides))


def is_loose(p, threshold) -> bool:
    """A theorem's inequality part that holds, tested, with max LHS/RHS below ``threshold``."""
    return bool(
        p.claimed in ("upper", "tight")
        and p.sides.role == "theorem"
        and p.holds
        and p.applicable
        and np.isfinite(p.max_ratio)
        and p.max_ratio < threshold
    )


def _part_json(p, slack_threshold=None) -> dict:
    s = p.sides
    out = {
        "name": p.name,
        "claimed": p.claimed,
        "role": s.role,
        "holds": p.holds,
        "applicable": p.applicable,
        "tested": bool(p.applicable),
        "max_ratio": _num(p.max_ratio),
        "tight": p.tight,
        "loose": is_loose(p, SLACK_THRESHOLD if slack_threshold is None else slack_threshold),
        "min_slack": _num(np.min(p.slack[s.applicable])) if p.applicable else None,
        "constants": s.constants,
        "note": s.note,
    }
    level = None if s.confidence is None else float(s.confidence)
    if s.family is not None:
        out["level_jointly_over"] = int(
            s.family
        )  # the intervals below hold at ``level`` jointly over that many instances
    if p.claimed == "rate":
        lo, hi = s.lhs_ci
        d = part_detectable_change(p)
        out.update(
            slope=[_num(v) for v in s.lhs],
            slope_ci=[[_num(a), _num(b)] for a, b in zip(lo, hi, strict=True)],
            exponent=[_num(v) for v in s.rhs],
            kind=s.kind,
            atol=float(s.atol),
            level=level,
            detectable_change=None if d is None else _num(d),  # rates.detectable_change: the part's power
        )
    if p.claimed in ("upper", "tight"):
        out["identically_zero"] = identically_zero(p)
    if p.claimed != "rate" and s.lhs_ci is not None and p.applicable:
        i = worst_ci_instance(s)
        out.update(
            level=level,
            worst_instance=int(p.index[i]) if p.index is not None else i,
            lhs=_num(s.lhs[i]),
            lhs_ci=[_num(s.lhs_ci[0][i]), _num(s.lhs_ci[1][i])],
            rhs=_num(s.rhs[i]),
        )
    return out


def worst_ci_instance(s) -> int:
    """The applicable instance of a Monte Carlo part whose interval's lower end is largest relative to rhs."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(s.rhs != 0, s.lhs_ci[0] / s.rhs, np.inf)
    r = np.where(s.applicable & ~np.isnan(r), r, -np.inf)
    return int(np.argmax(r))


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def save_counterexample(rec, index: int, directory, mutant: str = "") -> tuple[Path, str]:
    """Save global instance ``index`` of the record's batch as ``.npz`` (no pickle); return (path, command)."""
    one = take(rec.batch, [rec.local(index)])
    return save_instance(one, rec.statement.id, rec.result.family, index, directory, mutant)


def save_instance(
    one: dict, statement_id: str, family: str, index, directory, mutant: str = ""
) -> tuple[Path, str]:
    """Save a one-instance batch as ``.npz`` with its id, family and (for a mutant's rejecting
    instance) the mutant's name; return ``(path, the command that replays it)``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tag = f"{statement_id}-{family}-{index}" + (
        f"-mutant-{zlib.crc32(mutant.encode()):08x}" if mutant else ""
    )
    # a file name, never a path: ids are checked names (core.check_id), a user's family may hold anything
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", tag).replace("..", "__").lstrip(".")
    path = directory / f"{tag}.npz"
    if path.resolve().parent != directory.resolve():
        raise ValueError(f"counterexample file {path} would be outside --save-counterexamples {directory}")
    meta = {"id": statement_id, "family": family, "mutant": mutant}
    fields: dict[str, Any] = {k: np.asarray(v) for k, v in one.items()}  # arrays, as savez's **kwds
    buffer = io.BytesIO()  # written whole or not at all (a full disk leaves no truncated .npz)
    np.savez(buffer, __meta__=np.array(json.dumps(meta)), **fields)
    atomic_write(path, buffer.getvalue())
    sid, fam, where = (shlex.quote(str(a)) for a in (statement_id, family, path))
    from moreau.analysis.engine.registry import module_of

    spec = module_of(statement_id)  # a user's statement replays only with its module loaded
    module = f"--module {shlex.quote(spec)} " if spec else ""
    cmd = f"moreau check {module}{sid} --family {fam} --replay {where}"
    return path, cmd


def load_counterexample(path):
    """``(meta, batch)`` from a file written by :func:`save_counterexample`."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        batch = {k: z[k] for k in z.files if k != "__meta__"}
    return meta, batch
