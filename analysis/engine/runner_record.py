"""One (statement, family) of a run and its :class:`Record`: the instances drawn chunk by chunk, the
printed claim and its readings judged on them (with the short search's failing instance), the chunks
reduced into the record, then the recorded minimal and worst instances, the shrunk worst failing
instance and the mutants' verdicts, each step timed (:data:`STEPS`)."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from moreau.analysis.engine.batches import _batch_len, _concat, _draw, evaluate_chunk, rng_for
from moreau.analysis.engine.chunks import ChunkReducer
from moreau.analysis.engine.core import Result, take
from moreau.analysis.engine.properties import instance_properties
from moreau.analysis.engine.registry import StatementError
from moreau.analysis.engine.runner_mutants import _closest_instance, _rejecting_instance, _try_survivors
from moreau.analysis.engine.runner_progress import _bar, _Lines
from moreau.analysis.engine.search import search_statement

__all__ = ["STEPS", "Record"]


#: the steps of a record whose seconds :attr:`Record.timings` holds: drawing the instances, the prepare
#: step and the printed claim's sides, the readings on the same instances, the instance properties, the
#: recorded minimal counterexample, the recorded worst instances, shrinking the worst failing instance,
#: the statement's search (the short search, or --search's), the mutants (``Record.mutant_seconds``)
STEPS = ("draw", "claim", "readings", "properties", "minimal", "worst", "shrink", "search", "mutants")


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
    # per reading of the statement (same instances as the printed claim): name -> (Result, kept batch,
    # global index of its rows or None)
    readings: dict = field(default_factory=dict)
    # the statement's recorded minimal counterexample on this family, evaluated by this run: (batch, Result of
    # the printed claim), or None
    minimal: tuple | None = None
    # the run's worst failing instance shrunk (Statement.simplify, no recorded minimal counterexample):
    # (batch, Result of the printed claim, steps taken, evaluations), or None
    shrunk: tuple | None = None
    # the statement's recorded worst instances on this family (Statement.worst), evaluated by this run:
    # (batch, Result of the printed claim), or None
    worst: tuple | None = None
    # the statement's recorded class worst cases on this family (Statement.class_worst) beside this run's
    # instances (moreau.analysis.engine.class_worst.class_gaps); the report's line and the JSON's "class_worst"
    class_worst: list = field(default_factory=list)
    # {property name: whether every instance of the run has it} (moreau.analysis.engine.properties),
    # over every chunk; the report's shared-property line and the JSON's "shared_properties"
    properties: dict = field(default_factory=dict)
    # seconds each step of this record took (:data:`STEPS`, every key present, 0.0 for a step not run),
    # measured where the step runs; the JSON's "step_seconds", the report's closing time line
    timings: dict = field(default_factory=lambda: dict.fromkeys(STEPS, 0.0))

    def local(self, i: int) -> int:
        """The row of ``batch`` that holds global instance ``i``."""
        if self.index is None:
            return int(i)
        k = int(np.searchsorted(self.index, i))
        if k >= self.index.size or self.index[k] != i:
            raise KeyError(
                f"instance {i} was not kept (chunked run: only the worst and failing instances are)"
            )
        return k


def _chunks(st, fam, trials, seed, chunk):
    """``(size, batch, number of chunks)`` per chunk, lazily; one chunk when trials <= chunk or
    when the checker's batch size does not follow ``trials``."""
    rng = rng_for(seed, st.id, fam)
    if trials is None or trials <= chunk:
        yield trials, _draw(st, fam, trials, rng), 1
        return
    first = _draw(st, fam, chunk, rng)
    if _batch_len(first) != chunk:  # --trials is not a number of instances for this checker
        del first
        yield trials, _draw(st, fam, trials, rng_for(seed, st.id, fam)), 1
        return
    n = -(-trials // chunk)
    yield chunk, first, n
    del first
    for k in range(1, n):
        size = min(chunk, trials - k * chunk)
        yield size, _draw(st, fam, size, rng_for(seed, st.id, fam, f"chunk {k}")), n


def _local_outputs(st, fam, trials, seed, chunk, search_examples, searches, search_seconds=0.0, timings=None):
    """Per chunk ``(size, batch, n_chunks, Result, readings, mutant(m) -> Result)``, computed here;
    ``timings`` (a :attr:`Record.timings`) gets the seconds of the draws and of the search, and of an
    evaluation the search's failing instance makes the run redo (the yielded ones its reader counts)."""
    timings = dict.fromkeys(STEPS, 0.0) if timings is None else timings
    chunks = _chunks(st, fam, trials, seed, chunk)
    for k in itertools.count():
        t0 = time.perf_counter()
        drawn = next(chunks, None)
        timings["draw"] += time.perf_counter() - t0
        if drawn is None:
            return
        size, batch, n_chunks = drawn
        last = k == n_chunks - 1
        if last and search_examples:  # --search: the hypothesis search's instance joins the batch
            t0 = time.perf_counter()
            found, report = search_statement(st, fam, seed, search_examples)
            timings["search"] += time.perf_counter() - t0
            searches.append(("", report))
            if found is not None:
                batch = _concat(batch, found)
        if not _batch_len(batch):
            raise StatementError(
                f"{st.id} [{fam}]: the instance generator drew no instance (a run on no instance "
                "is an error, not a pass)"
            )
        res, readings, prepared = _evaluate(st, fam, size, batch)
        if last and not search_examples:  # the short search, after the batch: it knows what an instance costs
            t0 = time.perf_counter()
            found, report = search_statement(
                st, fam, seed, 0, search_seconds, per_instance=res.seconds / max(res.instances, 1)
            )
            timings["search"] += time.perf_counter() - t0
            if report is not None:
                searches.append(("", report))
            if found is not None:  # rare: the batch is judged again with the failing instance in it
                batch = _concat(batch, found)
                timings["claim"] += res.seconds  # the first evaluation, superseded: still spent
                timings["readings"] += sum(r.seconds for r in readings.values())
                res, readings, prepared = _evaluate(st, fam, size, batch)

        def mutant(m, batch=batch, prepared=prepared, size=size):
            return st.run(fam, size, None, mutant=m, batch=batch, prepared=prepared)

        yield size, batch, n_chunks, res, readings, mutant
        del batch, prepared


def _evaluate(st, fam, size, batch):
    """``(Result, readings, prepared)`` of one chunk, the prepare step's time counted in the result."""
    t0 = time.perf_counter()
    prepared = st.prepared(batch)  # claim-independent work, once for the statement, readings and mutants
    t_prep = time.perf_counter() - t0
    res, readings, _ = evaluate_chunk(st, fam, size, batch, prepared=prepared)
    res.seconds += t_prep
    return res, readings, prepared


def _run_one(
    st,
    fam,
    trials,
    seed,
    mutants,
    search_examples,
    chunk,
    progress,
    outputs=None,
    search_seconds=0.0,
    timings=None,
):
    """One (statement, family): the chunks' outputs (``outputs``, default computed here; the Dask
    runner passes its own) reduced as the serial run does, so that both give the same record;
    ``timings``: the record's :attr:`Record.timings` (the Dask runner's draws and search already in it)."""
    reducer, rec, bar = ChunkReducer(), None, None
    reading_reducers = {r.name: ChunkReducer() for r in st.readings}
    readings = {}
    pending = list(st.mutants) if mutants else []
    verdicts = {}  # mutant name -> (rejected, Result, where, one-instance batch, its index there)
    t_mut, offset, searches, closest = 0.0, 0, [], {}
    every: dict = {}  # property name -> every instance so far has it
    timings = dict.fromkeys(STEPS, 0.0) if timings is None else timings  # Record.timings
    if outputs is None:
        outputs = _local_outputs(
            st, fam, trials, seed, chunk, search_examples, searches, search_seconds, timings
        )
    for k, (_size, batch, n_chunks, res, rres, mutant_result) in enumerate(outputs):
        timings["claim"] += res.seconds  # the prepare step and the printed claim (evaluate_chunk)
        timings["readings"] += sum(rr.seconds for rr in rres.values())
        if k == 0 and progress and n_chunks > 1:
            bar = _bar(n_chunks, f"{st.id} [{fam}]") or _Lines(n_chunks, f"{st.id} [{fam}]")
        if n_chunks == 1:
            rec = Record(st, res, batch=batch)
        else:
            reducer.add(batch, res)
        for name, rr in rres.items():
            if n_chunks == 1:
                readings[name] = (rr, batch, None)
            else:
                reading_reducers[name].add(batch, rr)
        t1 = time.perf_counter()
        for name, has in instance_properties(st, fam, batch).items():
            every[name] = every.get(name, True) and bool(np.all(has))
        timings["properties"] += time.perf_counter() - t1
        t1 = time.perf_counter()
        for m in list(pending):
            r = mutant_result(m)
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
        del batch
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if rec is None:
        rec = Record(st, reducer.result(st.id, fam), batch=reducer.batch, index=reducer.index)
        readings = {
            name: (red.result(st.id, fam), red.batch, red.index) for name, red in reading_reducers.items()
        }
    rec.readings = readings
    rec.properties = every
    t1 = time.perf_counter()
    if (
        fam in st.counterexamples
    ):  # the recorded minimal counterexample, evaluated now (its numbers are this run's)
        one = st.counterexample(fam)
        rec.minimal = (one, st.run(fam, None, None, batch=one, reading=None))
        timings["minimal"] += time.perf_counter() - t1
    elif fam in st.simplify and not rec.result.holds:
        rec.shrunk = _shrunk(st, fam, rec)
        timings["shrink"] += time.perf_counter() - t1
    if fam in st.worst:  # the recorded worst instances, evaluated now (their numbers are this run's)
        t1 = time.perf_counter()
        many = st.worst_instances(fam)
        rec.worst = (many, st.run(fam, None, None, batch=many, reading=None))
        timings["worst"] += time.perf_counter() - t1
    if fam in getattr(st, "class_worst", {}):  # recorded class worst cases beside this run's instances
        from moreau.analysis.engine.class_worst import class_gaps

        t1 = time.perf_counter()
        rec.class_worst = class_gaps(rec)
        timings["worst"] += time.perf_counter() - t1
    if mutants:
        t1 = time.perf_counter()
        _try_survivors(st, fam, trials, seed, search_examples, pending, verdicts, searches)
        for m in st.mutants:
            rejected, r, where, one, i = verdicts[m.name]
            rec.mutants.append((m, rejected, r))
            rec.mutant_batches.append((where, one, i))
        rec.mutant_seconds = t_mut + time.perf_counter() - t1
    timings["mutants"] = rec.mutant_seconds
    rec.timings = timings
    rec.searches = searches
    return rec


def _shrunk(st, fam, rec):
    """The run's worst failing instance of the printed claim, shrunk (``moreau.analysis.engine.shrink``)."""
    from moreau.analysis.engine.shrink import shrink
    from moreau.analysis.engine.verdict import worst_failure

    where = worst_failure([rec.result])
    if where is None:
        return None
    _, _, row, i = where
    one = take(rec.batch, [row if rec.index is None else rec.local(i)])
    small, log, evals = shrink(st, fam, one, st.simplify[fam])
    return small, st.run(fam, None, None, batch=small, reading=None), log, evals
