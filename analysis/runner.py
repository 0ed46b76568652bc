r"""Running the catalogue: records, mutants, counterexamples.

JSON schema (``moreau check --json PATH``), stable: a list with one record
per (statement id, family)::

    {
      "id": "pfedme.prop1",            # catalogue id (docs/catalogue.md)
      "source": "pFedMe, Proposition 1, eq. (6)",
      "family": "quadratic",           # "quadratic" | "logistic" | "multinomial"
      "instances": 64,                 # instances checked
      "holds": true,                   # every part holds on every applicable instance
      "max_ratio": 1.0,                # max LHS/RHS over parts and instances
      "tight": true,                   # every part claimed tight is attained (max ratio >= 1 - 1e-6);
                                       # with no part claimed tight: some part attains its bound
      "claimed": "upper",              # what the paper claims: "upper" | "tight" | "rate"
      "seconds": 0.12,                 # statement_seconds + mutant_seconds
      "statement_seconds": 0.1,        # the statement (instances, prepare step, judging)
      "mutant_seconds": 0.02,          # all its mutants on this family (0 without --mutants)
      "mutants": [{"name": "...", "rejected": true,     # [] without --mutants; per family
                   "rejected_by": "part name", "instance": 3,   # the first failing part and instance
                   "margin": 0.25}],   # |lhs - rhs| / max(|lhs|, |rhs|) at its worst failing instance
                                       # (rate parts: distance of the interval from the exponent);
                                       # the last three only when rejected on this family
                                       # (the CLI's verdict: rejected by at least one family)
      "findings": ["..."],             # documented findings about the statement (may be empty)
      "parts": [{"name": ..., "claimed": "upper"|"tight"|"exact", "holds": ..., "applicable": ...,
                 "max_ratio": ..., "tight": ..., "min_slack": ...,   # min over instances of rhs - lhs
                 "constants": {...}, "note": "..."}]
    }

Parts may carry more keys:

* a rate part (``"claimed": "rate"``, a fitted exponent per instance, one
  instance a sweep over a grid): ``"slope": [...]``, ``"slope_ci": [[lo, hi], ...]``,
  ``"exponent": [...]`` (the theory's), one entry per instance;
  ``"kind": "equal" | "at most" | "at least"``, ``"atol"`` (see ``moreau.analysis._core.rate_sides``),
  ``"level"`` (two-sided level of the intervals, or null); ``max_ratio`` is
  max slope/exponent and ``min_slack`` the smallest margin by which an
  interval (widened by atol) meets the claim;
* a Monte Carlo bound part (an upper bound whose lhs is estimated):
  ``"level"`` (two-sided level), and at the applicable instance closest to
  failing (largest lower end / rhs) ``"worst_instance"``, ``"lhs"``,
  ``"lhs_ci": [lo, hi]`` and ``"rhs"``.

Every part also carries ``"tested"`` (false when no instance met its assumptions: the run
does not claim it holds).  Records written by the CLI carry ``"run"``: what produced them —
``seed``, ``trials`` (null: each checker's default), ``family`` (as requested), ``mutants``,
``search``, ``tolerances`` (``rtol`` of ``lhs <= rhs``, ``tight_rtol`` of attainment; exact parts
carry their own allowed error as rhs), ``versions`` (moreau, numpy, scipy, ...), ``python``,
``machine`` and ``git_commit`` (or ``"not a git checkout"``).

With ``--pep``, every record also carries ``"pep"``: its statement's class worst cases (the
records of ``moreau.analysis.pep.run_pep``, the same list on each family's record; [] when none).

Keys may be added; none of the above will be renamed or removed.
"""
from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._core import Result, take
from .registry import catalogue
from .search import search

__all__ = ["Record", "run", "record_json", "save_counterexample", "load_counterexample", "rng_for"]

FAMILIES = ("quadratic", "logistic", "multinomial")


def rng_for(seed: int, statement_id: str, family: str, mutant: str = "") -> np.random.Generator:
    """A generator that depends on the seed, the id and the family only (order-free)."""
    key = [int(seed), zlib.crc32(statement_id.encode()), zlib.crc32(family.encode()), zlib.crc32(mutant.encode())]
    return np.random.default_rng(key)


@dataclass
class Record:
    statement: object
    result: Result
    mutants: list = field(default_factory=list)  # (Mutant, rejected: bool, Result)
    batch: dict | None = None
    mutant_batches: list = field(default_factory=list)  # per mutant: the batch its verdict was reached on
    mutant_seconds: float = 0.0


def run(ids=None, family="all", trials=None, seed=0, mutants=False, search_examples=0):
    """Run statements; returns a list of :class:`Record` (one per id and family).

    A mutant is rejected when the batch, or the checker's default batch, or
    (with ``search_examples > 0``) a hypothesis search finds an instance where
    it fails.  With ``search_examples > 0`` the statement itself is also
    searched: a failing instance found that way is appended to the record's
    batch and counted like any other instance.
    """
    cat = catalogue()
    ids = list(cat) if not ids else list(ids)
    unknown = [i for i in ids if i not in cat]
    if unknown:
        raise KeyError(f"unknown statement id(s) {unknown}; known: {', '.join(cat)}")
    fams = FAMILIES if family == "all" else (family,)
    records = []
    for sid in ids:
        st = cat[sid]
        for fam in fams:
            if fam not in st.families:
                continue
            rng = rng_for(seed, sid, fam)
            batch = st.instances(fam, trials, rng)
            if search_examples:
                found = search(st, fam, max_examples=search_examples, seed=seed)
                if found is not None:
                    batch = _concat(batch, found)
            t0 = time.perf_counter()
            prepared = st.prepared(batch)  # claim-independent work, once for the statement and its mutants
            rec = Record(st, st.run(fam, trials, rng, batch=batch, prepared=prepared), batch=batch)
            rec.result.seconds = time.perf_counter() - t0
            if mutants:
                t1 = time.perf_counter()
                _run_mutants(rec, st, fam, trials, rng, batch, prepared, seed, search_examples)
                rec.mutant_seconds = time.perf_counter() - t1
            records.append(rec)
    return records


def _run_mutants(rec, st, fam, trials, rng, batch, prepared, seed, search_examples):
    """Judge every mutant: on the record's batch, then (when --trials was given) on the checker's
    default batch, then (with --search) on a searched instance; the first that rejects it wins."""
    # a mutant is searched for on this batch and, when --trials was given, also on the
    # checker's default batch: its adversarial instances must not disappear with a small --trials
    extra = extra_prepared = None
    if trials:
        extra = st.instances(fam, None, rng_for(seed, st.id, fam, "default"))
    for m in st.mutants:
        res = st.run(fam, trials, rng, mutant=m, batch=batch, prepared=prepared)
        where = (batch, res)
        if res.holds and extra is not None:
            if extra_prepared is None:
                extra_prepared = st.prepared(extra)
            res = st.run(fam, None, rng, mutant=m, batch=extra, prepared=extra_prepared)
            where = (extra, res)
        if res.holds and search_examples:
            found = search(st, fam, m, max_examples=search_examples, seed=seed)
            if found is not None:
                res = st.run(fam, None, rng, mutant=m, batch=found)
                where = (found, res)
        rejected = not res.holds
        rec.mutants.append((m, rejected, res))
        rec.mutant_batches.append(where[0])


def _concat(batch, extra):
    """``batch`` followed by ``extra`` when their arrays stack, else ``extra`` alone."""
    try:
        return {k: np.concatenate([np.asarray(batch[k]), np.asarray(extra[k])]) for k in batch}
    except (KeyError, ValueError):
        return extra


def run_info(args) -> dict:
    """The ``"run"`` record of a CLI invocation: arguments, tolerances and provenance."""
    from moreau._provenance import provenance

    from ._core import RTOL, TIGHT_RTOL

    prov = provenance({}, args.seed)
    return {"seed": args.seed, "trials": args.trials, "family": args.family, "mutants": bool(args.mutants),
            "search": args.search, "tolerances": {"rtol": RTOL, "tight_rtol": TIGHT_RTOL},
            **{k: prov[k] for k in ("versions", "python", "machine", "git_commit")}}


def record_json(rec: Record, run: dict | None = None) -> dict:
    r, st = rec.result, rec.statement
    tight_parts = [p for p in r.parts if p.claimed == "tight"]
    tight = all(p.tight for p in tight_parts) if tight_parts else any(p.tight for p in r.parts)
    return {
        "id": st.id, "source": st.source, "family": r.family, "instances": r.instances,
        "holds": r.holds, "max_ratio": _num(r.max_ratio), "tight": bool(tight), "claimed": st.claimed,
        "seconds": round(r.seconds + rec.mutant_seconds, 4),
        "statement_seconds": round(r.seconds, 4), "mutant_seconds": round(rec.mutant_seconds, 4),
        "mutants": [_mutant_json(m, rej, res) for m, rej, res in rec.mutants],
        "findings": list(st.findings),
        "parts": [_part_json(p) for p in r.parts],
        **({"run": run} if run is not None else {}),
    }


def _mutant_json(m, rejected, res) -> dict:
    """A mutant's verdict with the margin it fails by: the rejecting part and its worst ratio
    (for a flipped inequality, the smallest ratio: the mutant claims lhs >= rhs)."""
    out = {"name": m.name, "rejected": bool(rejected)}
    failing = [p for p in res.parts if not p.holds]
    if failing:
        p = failing[0]
        out.update(rejected_by=p.name, instance=int(p.failures[0]) if p.failures.size else None,
                   margin=_num(_margin(p)))
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


def _part_json(p) -> dict:
    s = p.sides
    out = {"name": p.name, "claimed": p.claimed, "holds": p.holds, "applicable": p.applicable,
           "tested": bool(p.applicable),
           "max_ratio": _num(p.max_ratio), "tight": p.tight,
           "min_slack": _num(np.min(p.slack[s.applicable])) if p.applicable else None,
           "constants": s.constants, "note": s.note}
    level = None if s.confidence is None else float(s.confidence)
    if p.claimed == "rate":
        lo, hi = s.lhs_ci
        out.update(slope=[_num(v) for v in s.lhs], slope_ci=[[_num(a), _num(b)] for a, b in zip(lo, hi)],
                   exponent=[_num(v) for v in s.rhs], kind=s.kind, atol=float(s.atol), level=level)
    elif s.lhs_ci is not None and p.applicable:
        i = worst_ci_instance(s)
        out.update(level=level, worst_instance=i, lhs=_num(s.lhs[i]),
                   lhs_ci=[_num(s.lhs_ci[0][i]), _num(s.lhs_ci[1][i])], rhs=_num(s.rhs[i]))
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


def save_counterexample(rec: Record, index: int, directory, mutant: str = "") -> tuple[Path, str]:
    """Save instance ``index`` of the record's batch as ``.npz`` (no pickle); return (path, command)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    one = take(rec.batch, [index])
    tag = f"{rec.statement.id}-{rec.result.family}-{index}" + (f"-{zlib.crc32(mutant.encode()):08x}" if mutant else "")
    path = directory / f"{tag}.npz"
    meta = {"id": rec.statement.id, "family": rec.result.family, "mutant": mutant}
    np.savez(path, __meta__=np.array(json.dumps(meta)), **{k: np.asarray(v) for k, v in one.items()})
    cmd = f"moreau check {rec.statement.id} --family {rec.result.family} --replay {path}"
    return path, cmd


def load_counterexample(path):
    """``(meta, batch)`` from a file written by :func:`save_counterexample`."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        batch = {k: z[k] for k in z.files if k != "__meta__"}
    return meta, batch
