r"""Resumable sweeps: one experiment = independent grid points, checkpointed, run by any executor.

An :class:`Experiment` declares its parameters, its grid points and a pure
``compute(params, point, rng) -> rows`` for one point.  :func:`run` executes
the points that are not yet checkpointed through one ``concurrent.futures``
executor — a local process pool, the calling process (``workers=1``), or a
Dask cluster (``dask.distributed.Client(address).get_executor()`` is a
``concurrent.futures.Executor``: one code path) — writes each finished point
to ``DIR/points/`` atomically (write to a temporary file, then rename), and
when all are done writes the CSV, the figures and the manifest.  ``finish`` may return more tables
(``{"tables": {stem: rows}}``, each written as ``stem.csv``; the experiment's own name replaces the
CSV of the computed rows, for numbers computed in ``finish``) and a dictionary of their columns
(``{"columns": {file: {column: meaning}}}``), both recorded in the manifest.  A damaged
checkpoint is reported (one line on stderr) and its point recomputed.

Reproducibility: each point's generator is seeded from ``(seed, experiment
name, the point's parameters)`` only, never from execution order, so a
resumed, parallel or Dask run gives the same numbers as a serial one.
A directory remembers the arguments of the run it holds (``DIR/run.json``);
a different run into it is refused (:class:`RunConflict`), never mixed, and so
is a second run while one is writing into it (``flock`` on ``DIR/.lock``).

Parameters are the experiment's defaults for the mode with the caller's overrides
(:mod:`moreau.experiments._config`); the effective ones are part of the run's arguments and
fingerprint.  The manifest records them (``configuration``) and one verdict per claim
(:mod:`moreau.experiments._verdicts`, ``schema_version``), each marked ``quick`` in a quick run.

Processes: local workers are capped at the CPUs this process may use; SIGTERM
(``timeout``, batch schedulers) and SIGINT end them before :class:`Interrupted`
is raised, and on Linux each worker dies with its parent (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np

from moreau._files import DirectoryLocked, atomic_write, lock_directory

from ._artifact import (
    canonical,
    checkpoint_timing,
    device,
    jsonable,
    provenance,
    read_checkpoint,
    write_checkpoint,
    write_csv,
)
from ._config import resolve
from ._experiment import Experiment
from ._progress import _Progress
from ._rundir import RunConflict, _claim_directory, _log, _sessions, _utc, _writable
from ._verdicts import SCHEMA_VERSION

# atomic_write (now moreau._files) and canonical (now ._artifact) stay importable from here
__all__ = [
    "Experiment",
    "Interrupted",
    "RunConflict",
    "atomic_write",
    "canonical",
    "catalogue_verdict",
    "point_rng",
    "run",
    "usable_cpus",
]


class Interrupted(KeyboardInterrupt):
    """The run was stopped by signal ``signum`` (SIGINT or SIGTERM); finished points are saved."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _say(msg: str) -> None:
    """One line on stderr, as the CLI writes its messages."""
    print(f"moreau reproduce: {msg}", file=sys.stderr, flush=True)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    count = getattr(os, "process_cpu_count", None)  # python >= 3.13
    if count is not None:
        return count() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def point_rng(seed: int, name: str, point: dict) -> np.random.Generator:
    """The generator of one grid point: a function of the run seed, the experiment and the point."""
    return np.random.default_rng(
        [int(seed), zlib.crc32(name.encode()), zlib.crc32(canonical(point).encode())]
    )


def catalogue_verdict(sid: str, family: str = "quadratic") -> dict:
    """The catalogue's verdict on statement ``sid`` (default instances, seed 0), for a manifest: the
    same JSON as ``moreau check --json``'s ``verdict`` (schema :data:`SCHEMA_VERSION`): the printed
    statement's verdict, each reading's, and whether they are what the catalogue expects."""
    from moreau.analysis.engine.records import verdict_json
    from moreau.analysis.engine.report import verdict_of
    from moreau.analysis.engine.runner import run as run_check
    from moreau.analysis.engine.verdict import SCHEMA_VERSION

    recs = run_check([sid], family)
    return {
        "schema_version": SCHEMA_VERSION,
        "statement": sid,
        "family": family,
        "instances": int(sum(r.result.instances for r in recs)),
        **verdict_json(verdict_of(recs[0].statement, recs)),
    }


def _timed_point(name: str, params: dict, point: dict, seed: int, backend: str):
    """Worker entry point (picklable by reference): ``(rows, timing)`` of one point, ``timing`` when it
    started (UTC), its seconds and the worker (host:pid) that computed it."""
    started, t0 = _utc(), time.perf_counter()
    rows = _compute_point(name, params, point, seed, backend)
    return rows, {
        "started": started,
        "seconds": round(time.perf_counter() - t0, 3),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


def _compute_point(name: str, params: dict, point: dict, seed: int, backend: str):
    """The rows of one point."""
    from .registry import get

    if backend != "numpy":
        import moreau

        moreau.set_backend(backend)
    exp = get(name)
    rows = exp.compute(params, point, point_rng(seed, name, point))
    return json.loads(json.dumps(rows, default=jsonable))  # plain JSON types, column order kept


class _Serial(cf.Executor):
    """The calling process as an executor (``workers=1``): no pickling, no start-up; :func:`_finished`
    computes its points one at a time, so each is checkpointed as soon as it is done."""

    def submit(self, fn, /, *args, **kwargs):
        fut = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, as a pool would
            fut.set_exception(exc)
        return fut


def _worker_init(parent: int) -> None:
    """Start of each pool worker: die with the parent, leave Ctrl-C to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends the workers itself, then reports
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: killed when the parent dies
        except (OSError, AttributeError):
            pass  # no prctl: workers still end when the parent shuts the pool down or gets SIGTERM
    if os.getppid() != parent:  # the parent died before the line above armed the signal
        os._exit(1)


def make_executor(workers: int | None = None, scheduler: str | None = None):
    """``(executor, close, description)``: Dask when ``scheduler`` is an address, else local.

    Local workers are capped at :func:`usable_cpus` (saying so on stderr); ``close(abort=True)``
    ends the local workers at once instead of letting running points finish.
    """
    if scheduler:
        try:
            from dask.distributed import Client
        except ImportError:
            raise RunConflict("--scheduler needs dask.distributed: pip install 'moreau[dask]'") from None
        _probe(scheduler)
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConnectionError(
                f"cannot reach the Dask scheduler at {scheduler!r} ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else 'no answer'})"
            ) from None
        return client.get_executor(), lambda abort=False: client.close(), f"dask ({scheduler})"
    cpus = usable_cpus()
    if workers is not None and workers > cpus:
        _say(f"--workers {workers} is more than the {cpus} CPU(s) this process may use: using {cpus}")
    workers = min(workers or cpus, cpus)
    if workers == 1:
        return _Serial(), lambda abort=False: None, "serial (this process)"
    import multiprocessing as mp

    # each worker gets its share of the cores for BLAS (workers x default threads oversubscribe the
    # machine: measured 4x slower on 2 cores); set for the spawned children only, restored after
    threads = str(max(1, cpus // workers))
    saved = {k: os.environ.get(k) for k in _BLAS_VARS}
    for k in _BLAS_VARS:
        os.environ.setdefault(k, threads)
    pool = cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=mp.get_context("spawn"),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )
    for _ in range(workers):  # start the workers now, while the variables are set
        pool.submit(int)

    def close(abort=False):
        try:
            if abort:
                _end_workers(pool)
            pool.shutdown(cancel_futures=True)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    return pool, close, f"local process pool ({workers} workers, {threads} BLAS thread(s) each)"


_BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _end_workers(pool) -> None:
    """Terminate a process pool's workers now (their running points are lost; saved ones are kept)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(OSError, ValueError):
            p.terminate()
    for p in procs:
        with contextlib.suppress(OSError, ValueError):
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(1)


def _probe(address: str) -> None:
    """Fail at once, with the reason, when nothing listens at a tcp:// scheduler address."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp" or not parts.hostname or parts.port is None:
        return  # another protocol (inproc, tls, ...): let dask judge it
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=5).close()
    except OSError as exc:
        raise ConnectionError(
            f"cannot reach the Dask scheduler at {address!r} ({exc.strerror or type(exc).__name__})"
        ) from None


@contextlib.contextmanager
def _stop_on_signals():
    """SIGTERM (``timeout``, batch schedulers) and SIGINT raise :class:`Interrupted` in the main
    thread, once: a second signal does not interrupt the clean-up (ending the workers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM)

    def stop(signum, frame):
        for s in sigs:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    old = {s: signal.signal(s, stop) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            if h is not None:
                signal.signal(s, h)


@contextlib.contextmanager
def _locked(out: Path):
    """Be the only run writing into ``out`` (lock file ``out/.lock``), or raise :class:`RunConflict`."""
    try:
        with lock_directory(out) as locked:
            if not locked:
                _say(f"warning: cannot lock {out} (no flock here): do not start a second run into it")
            yield
    except DirectoryLocked as exc:
        raise RunConflict(
            f"another run{f' (pid {exc.holder})' if exc.holder else ''} holds {out} "
            f"(lock {exc.path}): wait for it to finish, or choose another --out"
        ) from None


def _finished(executor, name, params, points, pending, seed, backend):
    """``(index, (rows, timing))`` of each pending point as it finishes."""
    if isinstance(executor, _Serial):
        for i in pending:
            yield i, _timed_point(name, params, points[i], seed, backend)
        return
    futures = {executor.submit(_timed_point, name, params, points[i], seed, backend): i for i in pending}
    for fut in cf.as_completed(futures):
        yield futures[fut], fut.result()


def run(
    experiment: Experiment,
    out,
    *,
    quick=False,
    trials=None,
    seed=0,
    backend="numpy",
    workers=None,
    scheduler=None,
    overrides=(),
    on_checkpoint=None,
) -> dict:
    """Run (or resume) a registered experiment into ``out``; return the manifest.

    ``overrides``: ``{key: value}`` or ``[(source, key, value)]`` over the mode's defaults
    (:func:`moreau.experiments._config.resolve`); the effective parameters are part of the run's
    arguments, so a directory holding a run with another configuration is refused.
    One run at a time writes into ``out`` (a second raises :class:`RunConflict`). SIGTERM or
    SIGINT ends the workers and raises :class:`Interrupted`; finished points stay saved.
    ``on_checkpoint(index)`` is called after each point is saved (tests use it to interrupt).
    """
    out = Path(out)
    params, applied = resolve(experiment, quick, trials, overrides)
    args = {
        "name": experiment.name,
        "params": params,
        "seed": int(seed),
        "backend": backend,
        "quick": bool(quick),
        "trials": trials,
    }
    fingerprint = hashlib.sha256(canonical(args).encode()).hexdigest()
    points = experiment.points(params)  # before anything is written: it may refuse the parameters
    _writable(out)
    with _locked(out), _stop_on_signals():
        _claim_directory(out, args, fingerprint)
        ckpt = out / "points"
        ckpt.mkdir(exist_ok=True)
        for stale in ckpt.glob(".*.tmp"):  # left by a killed run (this run holds the lock)
            stale.unlink(missing_ok=True)
        files = [
            ckpt / f"{i:04d}-{hashlib.sha256(canonical(p).encode()).hexdigest()[:12]}.json"
            for i, p in enumerate(points)
        ]
        rows = {}
        for i, (f, p) in enumerate(zip(files, points, strict=True)):
            saved, why = read_checkpoint(f, p, fingerprint)
            if why:
                _say(f"warning: damaged checkpoint {f}: {why}; recomputing its point")
            elif saved is not None:
                rows[i] = saved
        resumed = len(rows)
        t0 = time.perf_counter()
        pending = [i for i in range(len(points)) if i not in rows]
        executor, close, how = make_executor(workers, scheduler)
        timings = {}  # this session's points; a resumed point's timing is read from its checkpoint
        progress, done = _Progress(experiment.name, len(points), resumed), False
        _log(
            out,
            f"session: {len(pending)} of {len(points)} points to compute ({resumed} resumed), {how}, "
            f"{'quick' if quick else 'full'}, seed {int(seed)}",
        )
        try:
            for i, (result, timing) in _finished(
                executor, experiment.name, params, points, pending, int(seed), backend
            ):
                rows[i], timings[i] = result, timing
                write_checkpoint(files[i], points[i], result, fingerprint, timing)
                _log(
                    out,
                    f"point {i + 1}/{len(points)} {canonical(points[i])}: started {timing['started']}, "
                    f"{timing['seconds']:.3f} s, worker {timing['worker']}",
                )
                progress.update()
                if on_checkpoint is not None:
                    on_checkpoint(i)
            done = True
        finally:
            progress.close()
            close(abort=not done)
            wall = time.perf_counter() - t0
            try:  # the bookkeeping of an interrupted session never hides why it was interrupted (a full disk)
                _log(out, f"session {'finished' if done else 'interrupted'}: {wall:.3f} s")
                sessions = _sessions(out, wall, len(rows) - resumed, done)
            except OSError:
                if done:
                    raise
                sessions = []
        table = [dict(r) for i in range(len(points)) for r in rows[i]]
        write_csv(out / f"{experiment.name}.csv", table)
        result = experiment.finish(table, params, out, seed=int(seed), quick=bool(quick))
        tables = {
            f"{stem}.csv": t for stem, t in result.get("tables", {}).items()
        }  # stem == name: replaces the CSV
        for file, t in tables.items():
            write_csv(out / file, t)
        claims = [dict(v, quick=bool(quick)) for v in result.get("claims", [])]
        manifest = {
            "name": experiment.name,
            "paper": experiment.paper,
            "figure": experiment.figure,
            "summary": experiment.summary,
            "schema_version": SCHEMA_VERSION,
            "arguments": args,
            "configuration": {"mode": "quick" if quick else "full", "set": applied, "effective": params},
            "executor": how,
            "device": device(backend),
            "points": len(points),
            "resumed_points": resumed,
            "wall_seconds": round(wall, 3),
            # over every session of this run (resumes included), and each point's own time and worker
            "cumulative_wall_seconds": round(sum(x["wall_seconds"] for x in sessions), 3),
            "sessions": len(sessions),
            "point_timings": [
                dict(index=i, point=points[i], **(timings.get(i) or checkpoint_timing(files[i]) or {}))
                for i in range(len(points))
            ],
            "point_seeds": "each point's generator is numpy.random.default_rng([seed, crc32(name), "
            "crc32(canonical JSON of the point)]) (moreau.experiments._sweep.point_rng)",
            "log": "run.log",
            "csv": f"{experiment.name}.csv",
            "tables": sorted(set(tables) - {f"{experiment.name}.csv"}),
            "columns": result.get("columns", {}),
            "figures": [str(Path(p).name) for p in result.get("figures", [])],
            "claims": claims,
            "theorems": result.get("theorems", {}),
            "provenance": provenance(params, int(seed)),
        }
        atomic_write(out / "manifest.json", json.dumps(manifest, indent=1, default=jsonable))
    return manifest
