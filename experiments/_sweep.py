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

The parts: ``_sweep_points`` (a point's generator and the worker entry point that computes it),
``_sweep_workers`` (the executors, their processes and the signals), ``_sweep_verdict`` (the
catalogue's verdict for a manifest); this module runs them (:func:`run`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from pathlib import Path

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
from ._deviations import captioned
from ._experiment import Experiment
from ._partial import progress_of, state_paths
from ._progress import _Progress
from ._rundir import RunConflict, _claim_directory, _log, _sessions, _writable
from ._sweep_points import point_rng
from ._sweep_verdict import catalogue_verdict
from ._sweep_workers import Interrupted, _finished, _say, _stop_on_signals, make_executor, usable_cpus
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


def _in_progress(files, rows) -> str:
    """The points in progress that saved their progress within them (``point 3 at 40 %``)."""
    parts = []
    for i, f in enumerate(files):
        got = None if i in rows else progress_of(f)
        if got is not None and got[1] > 0:
            parts.append(f"point {i + 1} at {100 * got[0] / got[1]:.0f} %")
    return ", ".join(parts)


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
    state_every=30.0,
) -> dict:
    """Run (or resume) a registered experiment into ``out``; return the manifest.

    ``overrides``: ``{key: value}`` or ``[(source, key, value)]`` over the mode's defaults
    (:func:`moreau.experiments._config.resolve`); the effective parameters are part of the run's
    arguments, so a directory holding a run with another configuration is refused.
    One run at a time writes into ``out`` (a second raises :class:`RunConflict`). SIGTERM or
    SIGINT ends the workers and raises :class:`Interrupted`; finished points stay saved.
    ``on_checkpoint(index)`` is called after each point is saved (tests use it to interrupt).
    ``state_every``: seconds between saves of a point's state within it, for the experiments that
    can resume mid-point (``moreau.experiments._partial``; local executors only: a Dask worker's
    files may not be this machine's).
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
        for i in rows:  # a state within a point that was saved whole (killed between the two writes)
            for path in state_paths(files[i]):
                path.unlink(missing_ok=True)
        resumed = len(rows)
        t0 = time.perf_counter()
        pending = [i for i in range(len(points)) if i not in rows]
        executor, close, how = make_executor(workers, scheduler)
        states = {
            i: (files[i], f"{fingerprint}:{canonical(points[i])}", float(state_every))
            for i in pending
            if not how.startswith("dask")
        }
        timings = {}  # this session's points; a resumed point's timing is read from its checkpoint
        progress = _Progress(experiment.name, len(points), resumed, detail=lambda: _in_progress(files, rows))
        done = False
        _log(
            out,
            f"session: {len(pending)} of {len(points)} points to compute ({resumed} resumed), {how}, "
            f"{'quick' if quick else 'full'}, seed {int(seed)}",
        )
        try:
            for i, (result, timing) in _finished(
                executor, experiment.name, params, points, pending, int(seed), backend, states
            ):
                rows[i], timings[i] = result, timing
                write_checkpoint(files[i], points[i], result, fingerprint, timing)
                for path in state_paths(files[i]):  # the point is saved whole: its state within is done
                    path.unlink(missing_ok=True)
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
        devs = list(experiment.deviations(params)) if experiment.deviations is not None else []
        write_csv(out / f"{experiment.name}.csv", table, devs)
        with captioned(devs):
            result = experiment.finish(table, params, out, seed=int(seed), quick=bool(quick))
        tables = {
            f"{stem}.csv": t for stem, t in result.get("tables", {}).items()
        }  # stem == name: replaces the CSV
        for file, t in tables.items():
            write_csv(out / file, t, devs)
        claims = [dict(v, quick=bool(quick)) for v in result.get("claims", [])]
        manifest = {
            "name": experiment.name,
            "paper": experiment.paper,
            "figure": experiment.figure,
            "summary": experiment.summary,
            # how this run differs from the paper, computed from its parameters (also in CSVs and figures)
            "deviations": devs,
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
