r"""Running the catalogue: records, mutants, counterexamples.

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
      "findings": ["..."],             # documented findings about the statement (may be empty)
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
  ``"kind": "equal" | "at most" | "at least"``, ``"atol"`` (see ``moreau.analysis._core.rate_sides``),
  ``"level"`` (two-sided level of the intervals, or null); ``max_ratio`` is
  max slope/exponent and ``min_slack`` the smallest margin by which an
  interval (widened by atol) meets the claim;
* a Monte Carlo bound part (an upper bound whose lhs is estimated):
  ``"level"`` (two-sided level), and at the applicable instance closest to
  failing (largest lower end / rhs) ``"worst_instance"``, ``"lhs"``,
  ``"lhs_ci": [lo, hi]`` and ``"rhs"``.

With ``--search N``, a record also carries ``"search"``: one entry per search run (the
statement's, then each mutant that survived the batches): ``mutant`` ("" for the statement),
``examples`` (batches evaluated), ``before_failure``, ``shrinks``, ``failing``, ``found`` and, when
found, ``batch_size`` and ``instance`` (the shrunk failing instance; see ``moreau.analysis.search``).

Every part also carries ``"tested"`` (false when no instance met its assumptions: the run
does not claim it holds).  Records written by the CLI carry ``"run"``: what produced them —
``seed``, ``trials`` (null: each checker's default), ``family`` (as requested), ``mutants``,
``search``, ``tolerances`` (``rtol`` of ``lhs <= rhs``, ``tight_rtol`` of attainment; exact parts
carry their own allowed error as rhs), ``slack_threshold`` (below which a bound is "loose"), ``versions`` (moreau, numpy, scipy, ...), ``python``,
``machine`` and ``git_commit`` (or ``"not a git checkout"``).

With ``--analyse``, every record also carries ``"analyse"``: ``conditions`` (per condition
dropped: ``condition``, ``kind`` "claim" | "part", ``verdict`` "necessary" | "appears
unnecessary" | "not exercised" | "undefined", and the counterexample's ``part``, ``instance``,
``ratio`` or the number ``admitted``), ``scale_declared``, ``scale_not_declared_because`` (null, or why not), ``scales_tried`` (the (s, c) pairs
the family can express), ``scale`` (the inconsistencies found:
``s``, ``c``, ``part``, ``instance``, ``what``, ``before``, ``after``; [] when consistent, null
when not declared) and ``sharpest`` (per theorem inequality part: ``sharpest_factor``,
``instance``, ``worst_parameters``, ``dependence`` and ``derived``: null, or for a part whose
quadratic worst case is one eigenvalue the sympy derivation — ``formula``, ``ratio``, ``proved``,
``cases``, ``sup_over_parameters``, ``sup_value``, ``value`` (the formula's max over the batch),
``instances_reach``, ``at_worst_instance``, ``attained_on``, ``closest``, ``exceeded``,
``exceeded_instance``, ``covered``, ``uncovered``, ``steps``); see ``moreau.analysis.analyse``.

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

from ._chunks import ChunkReducer
from ._core import Result, _batch_size, take
from .registry import catalogue
from .search import search

__all__ = ["SLACK_THRESHOLD", "is_loose", "Record", "run", "record_json", "save_counterexample", "save_instance", "load_counterexample",
           "rng_for", "CHUNK"]

FAMILIES = ("quadratic", "logistic", "multinomial")
#: a theorem's bound that holds with max LHS/RHS below this on every instance tried is flagged
#: "loose" (report and JSON; ``moreau check --slack-threshold``): the instances never come within
#: a factor 10 of it, so either the bound is loose or the instances miss its worst case
SLACK_THRESHOLD = 0.1


def rng_for(seed: int, statement_id: str, family: str, mutant: str = "") -> np.random.Generator:
    """A generator that depends on the seed, the id and the family only (order-free)."""
    key = [int(seed), zlib.crc32(statement_id.encode()), zlib.crc32(family.encode()), zlib.crc32(mutant.encode())]
    return np.random.default_rng(key)


#: instances drawn, prepared and judged at a time when ``trials`` exceeds it (memory stays that of
#: one chunk however large ``--trials`` is; see ``moreau.analysis._chunks``)
CHUNK = 2048


@dataclass
class Record:
    statement: object
    result: Result
    mutants: list = field(default_factory=list)  # (Mutant, rejected: bool, Result)
    batch: dict | None = None
    # per mutant: (where, batch, index) of its verdict: where "run" | "default" | "search", batch the
    # one instance that rejects it and its index in that batch (None when no single instance does);
    # a surviving mutant: where "closest", the run's instance closest to rejecting it
    mutant_batches: list = field(default_factory=list)
    mutant_seconds: float = 0.0
    index: np.ndarray | None = None  # global instance index of each row of ``batch`` (None: the row itself)
    searches: list = field(default_factory=list)  # --search: (mutant name or "", report dict) per search run

    def local(self, i: int) -> int:
        """The row of ``batch`` that holds global instance ``i``."""
        if self.index is None:
            return int(i)
        k = int(np.searchsorted(self.index, i))
        if k >= self.index.size or self.index[k] != i:
            raise KeyError(f"instance {i} was not kept (chunked run: only the worst and failing instances are)")
        return k


def run(ids=None, family="all", trials=None, seed=0, mutants=False, search_examples=0, chunk=None,
        progress=False):
    """Run statements; returns a list of :class:`Record` (one per id and family).

    A mutant is rejected when the batch, or the checker's default batch, or
    (with ``search_examples > 0``) a hypothesis search finds an instance where
    it fails.  With ``search_examples > 0`` the statement itself is also
    searched: a failing instance found that way is appended to the record's
    batch and counted like any other instance.

    ``trials`` above ``chunk``: instances are drawn, prepared and judged ``chunk`` at a time
    (chunk k > 0 from its own stream ``rng_for(seed, id, family, "chunk k")``), the results reduced
    as they come (:class:`moreau.analysis._chunks.ChunkReducer`), and each mutant judged chunk by chunk
    until one rejects it.  A checker whose ``trials`` is not a count of instances (its batch size
    differs from the trials asked) gets one call, as with a small ``trials``.  ``progress``: a
    tqdm bar over the chunks (when tqdm is installed).
    """
    cat = catalogue()
    ids = list(cat) if not ids else list(ids)
    unknown = [i for i in ids if i not in cat]
    if unknown:
        raise KeyError(f"unknown statement id(s) {unknown}; known: {', '.join(cat)}")
    fams = FAMILIES if family == "all" else (family,)
    chunk = CHUNK if chunk is None else chunk
    records = []
    for sid in ids:
        st = cat[sid]
        for fam in fams:
            if fam in st.families:
                records.append(_run_one(st, fam, trials, seed, mutants, search_examples, chunk, progress))
    return records


def _chunks(st, fam, trials, seed, chunk):
    """``(size, batch, number of chunks)`` per chunk, lazily; one chunk when trials <= chunk or
    when the checker's batch size does not follow ``trials``."""
    rng = rng_for(seed, st.id, fam)
    if trials is None or trials <= chunk:
        yield trials, st.instances(fam, trials, rng), 1
        return
    first = st.instances(fam, chunk, rng)
    if _batch_size(first) != chunk:  # --trials is not a number of instances for this checker
        del first
        yield trials, st.instances(fam, trials, rng_for(seed, st.id, fam)), 1
        return
    n = -(-trials // chunk)
    yield chunk, first, n
    del first
    for k in range(1, n):
        size = min(chunk, trials - k * chunk)
        yield size, st.instances(fam, size, rng_for(seed, st.id, fam, f"chunk {k}")), n


def _run_one(st, fam, trials, seed, mutants, search_examples, chunk, progress):
    reducer, rec, bar = ChunkReducer(), None, None
    pending = list(st.mutants) if mutants else []
    verdicts = {}  # mutant name -> (rejected, Result, where, one-instance batch, its index there)
    t_mut, offset, searches, closest = 0.0, 0, [], {}
    rng = rng_for(seed, st.id, fam)
    for k, (size, batch, n_chunks) in enumerate(_chunks(st, fam, trials, seed, chunk)):
        if k == 0 and progress and n_chunks > 1:
            bar = _bar(n_chunks, f"{st.id} [{fam}]")
        if search_examples and k == n_chunks - 1:
            report = {}
            found = search(st, fam, max_examples=search_examples, seed=seed, report=report)
            searches.append(("", report))
            if found is not None:
                batch = _concat(batch, found)
        t0 = time.perf_counter()
        prepared = st.prepared(batch)  # claim-independent work, once for the statement and its mutants
        res = st.run(fam, size, rng, batch=batch, prepared=prepared)
        res.seconds = time.perf_counter() - t0
        if n_chunks == 1:
            rec = Record(st, res, batch=batch)
        else:
            reducer.add(batch, res)
        t1 = time.perf_counter()
        for m in list(pending):
            r = st.run(fam, size, rng, mutant=m, batch=batch, prepared=prepared)
            if not r.holds:
                verdicts[m.name] = (True, r, "run", *_rejecting_instance(batch, r, offset))
                pending.remove(m)
                continue
            # it survives this chunk: keep the instance closest to rejecting it (largest LHS/RHS)
            one, i, ratio = _closest_instance(batch, r, offset)
            if m.name not in verdicts or ratio > closest.get(m.name, -np.inf):
                verdicts[m.name] = (False, r, "closest", one, i)
                closest[m.name] = ratio
        t_mut += time.perf_counter() - t1
        offset += res.instances
        del batch, prepared
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if rec is None:
        rec = Record(st, reducer.result(st.id, fam), batch=reducer.batch, index=reducer.index)
    if mutants:
        t1 = time.perf_counter()
        _try_survivors(st, fam, trials, seed, search_examples, pending, verdicts, searches)
        for m in st.mutants:
            rejected, r, where, one, i = verdicts[m.name]
            rec.mutants.append((m, rejected, r))
            rec.mutant_batches.append((where, one, i))
        rec.mutant_seconds = t_mut + time.perf_counter() - t1
    rec.searches = searches
    return rec


def _try_survivors(st, fam, trials, seed, search_examples, pending, verdicts, searches):
    """Mutants the run's batch did not reject: tried on the checker's default batch (when --trials
    was given: its adversarial instances must not disappear with a small --trials), then (with
    --search) on a hypothesis search's instance."""
    if pending and trials:
        extra = st.instances(fam, None, rng_for(seed, st.id, fam, "default"))
        prepared = st.prepared(extra)
        for m in list(pending):
            r = st.run(fam, None, None, mutant=m, batch=extra, prepared=prepared)
            if not r.holds:
                verdicts[m.name] = (True, r, "default", *_rejecting_instance(extra, r))
                pending.remove(m)
    if pending and search_examples:
        for m in list(pending):
            report = {}
            found = search(st, fam, m, max_examples=search_examples, seed=seed, report=report)
            searches.append((m.name, report))
            if found is not None:
                r = st.run(fam, None, None, mutant=m, batch=found)
                if not r.holds:
                    verdicts[m.name] = (True, r, "search", *_rejecting_instance(found, r))
                    pending.remove(m)


def _closest_instance(batch, res, offset=0):
    """``(one-instance batch, its index, its ratio)``: the applicable instance with the largest
    LHS/RHS over the inequality parts of a result that holds (the closest to failing), or
    ``(None, None, -inf)`` when no inequality part has an applicable instance."""
    best, where = -np.inf, None
    for p in res.parts:
        if p.claimed not in ("upper", "tight") or not p.applicable:
            continue
        r = np.where(p.sides.applicable & np.isfinite(p.ratio), p.ratio, -np.inf)
        k = int(np.argmax(r))
        if r[k] > best:
            best, where = float(r[k]), k
    if where is None:
        return None, None, -np.inf
    return take(batch, [where]), offset + where, best


def _rejecting_instance(batch, res, offset=0):
    """``(one-instance batch, its index)`` of the first instance on which ``res`` fails, or
    ``(None, None)`` (it holds, or it fails only as a whole: a claimed-tight bound not attained)."""
    f = res.failures
    return (take(batch, f[:1]), offset + int(f[0])) if f.size else (None, None)


def _bar(total, label):
    """A tqdm bar over chunks on a terminal (stderr), nothing otherwise."""
    import sys

    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=label, unit="chunk", file=sys.stderr, leave=False)


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
            "slack_threshold": getattr(args, "slack_threshold", SLACK_THRESHOLD),
            **{k: prov[k] for k in ("versions", "python", "machine", "git_commit")}}


def record_json(rec: Record, run: dict | None = None, slack_threshold: float = None) -> dict:
    """The JSON record of one (statement, family); ``slack_threshold``: a theorem's inequality part
    that holds with max LHS/RHS below it is flagged ``"loose"`` (default :data:`SLACK_THRESHOLD`)."""
    if slack_threshold is None:
        slack_threshold = SLACK_THRESHOLD
    r, st = rec.result, rec.statement
    tight_parts = [p for p in r.parts if p.claimed == "tight"]
    tight = all(p.tight for p in tight_parts) if tight_parts else any(p.tight for p in r.parts)
    return {
        "id": st.id, "source": st.source, "family": r.family, "instances": r.instances,
        "holds": r.holds, "max_ratio": _num(r.max_ratio), "tight": bool(tight), "claimed": st.claimed,
        "seconds": round(r.seconds + rec.mutant_seconds, 4),
        "statement_seconds": round(r.seconds, 4), "mutant_seconds": round(rec.mutant_seconds, 4),
        "mutants": [_mutant_json(m, rej, res, *where) for (m, rej, res), where in
                    zip(rec.mutants, rec.mutant_batches or [(None, None, None)] * len(rec.mutants))],
        "findings": list(st.findings),
        "parts": [_part_json(p, slack_threshold) for p in r.parts],
        **({"search": [{"mutant": name, **rep} for name, rep in rec.searches]} if rec.searches else {}),
        **({"run": run} if run is not None else {}),
    }


def _mutant_json(m, rejected, res, where=None, one=None, index=None) -> dict:
    """A mutant's verdict, the part that rejects it, the margin it fails by and where."""
    out = {"name": m.name, "rejected": bool(rejected)}
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


def is_loose(p, threshold) -> bool:
    """A theorem's inequality part that holds, tested, with max LHS/RHS below ``threshold``."""
    return bool(p.claimed in ("upper", "tight") and p.sides.role == "theorem" and p.holds and p.applicable
                and np.isfinite(p.max_ratio) and p.max_ratio < threshold)


def _part_json(p, slack_threshold=None) -> dict:
    s = p.sides
    out = {"name": p.name, "claimed": p.claimed, "role": s.role, "holds": p.holds, "applicable": p.applicable,
           "tested": bool(p.applicable),
           "max_ratio": _num(p.max_ratio), "tight": p.tight,
           "loose": is_loose(p, SLACK_THRESHOLD if slack_threshold is None else slack_threshold),
           "min_slack": _num(np.min(p.slack[s.applicable])) if p.applicable else None,
           "constants": s.constants, "note": s.note}
    level = None if s.confidence is None else float(s.confidence)
    if p.claimed == "rate":
        lo, hi = s.lhs_ci
        out.update(slope=[_num(v) for v in s.lhs], slope_ci=[[_num(a), _num(b)] for a, b in zip(lo, hi)],
                   exponent=[_num(v) for v in s.rhs], kind=s.kind, atol=float(s.atol), level=level)
    elif s.lhs_ci is not None and p.applicable:
        i = worst_ci_instance(s)
        out.update(level=level, worst_instance=int(p.index[i]) if p.index is not None else i, lhs=_num(s.lhs[i]),
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
    """Save global instance ``index`` of the record's batch as ``.npz`` (no pickle); return (path, command)."""
    one = take(rec.batch, [rec.local(index)])
    return save_instance(one, rec.statement.id, rec.result.family, index, directory, mutant)


def save_instance(one: dict, statement_id: str, family: str, index, directory, mutant: str = "") -> tuple[Path, str]:
    """Save a one-instance batch as ``.npz`` with its id, family and (for a mutant's rejecting
    instance) the mutant's name; return ``(path, the command that replays it)``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tag = f"{statement_id}-{family}-{index}" + (f"-mutant-{zlib.crc32(mutant.encode()):08x}" if mutant else "")
    path = directory / f"{tag}.npz"
    meta = {"id": statement_id, "family": family, "mutant": mutant}
    np.savez(path, __meta__=np.array(json.dumps(meta)), **{k: np.asarray(v) for k, v in one.items()})
    cmd = f"moreau check {statement_id} --family {family} --replay {path}"
    return path, cmd


def load_counterexample(path):
    """``(meta, batch)`` from a file written by :func:`save_counterexample`."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        batch = {k: z[k] for k in z.files if k != "__meta__"}
    return meta, batch
