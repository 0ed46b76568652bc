r"""Resumable sweeps: one experiment = independent grid points, checkpointed, run by any executor.

An :class:`Experiment` declares its parameters, its grid points and a pure
``compute(params, point, rng) -> rows`` for one point.  :func:`run` executes
the points that are not yet checkpointed through one ``concurrent.futures``
executor — a local process pool, the calling process (``workers=1``), or a
Dask cluster (``dask.distributed.Client(address).get_executor()`` is a
``concurrent.futures.Executor``: one code path) — writes each finished point
to ``DIR/points/`` atomically (write to a temporary file, then rename), and
when all are done writes the CSV, the figures and the manifest.

Reproducibility: each point's generator is seeded from ``(seed, experiment
name, the point's parameters)`` only, never from execution order, so a
resumed, parallel or Dask run gives the same numbers as a serial one.
A directory remembers the arguments of the run it holds (``DIR/run.json``);
a different run into it is refused (:class:`RunConflict`), never mixed.
"""
from __future__ import annotations

import concurrent.futures as cf
import csv
import hashlib
import json
import math
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from ._experiment import Experiment

__all__ = ["Experiment", "RunConflict", "run", "point_rng", "atomic_write", "canonical", "catalogue_verdict"]


class RunConflict(RuntimeError):
    """The output directory holds a run with other arguments."""


def canonical(obj) -> str:
    """Canonical JSON (sorted keys, no spaces): the text that fingerprints and seeds hash."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def point_rng(seed: int, name: str, point: dict) -> np.random.Generator:
    """The generator of one grid point: a function of the run seed, the experiment and the point."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode()), zlib.crc32(canonical(point).encode())])


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader (or a crash) never sees a partial file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def catalogue_verdict(sid: str, family: str = "quadratic") -> dict:
    """The catalogue's verdict on statement ``sid`` (default instances, seed 0), for a manifest."""
    from moreau.analysis.engine.runner import run as run_check

    rec = run_check([sid], family)[0]
    return {"holds": rec.result.holds, "max_ratio": rec.result.max_ratio, "instances": rec.result.instances}


def _compute_point(name: str, params: dict, point: dict, seed: int, backend: str):
    """Worker entry point (picklable by reference): the rows of one point."""
    from .registry import get

    if backend != "numpy":
        import moreau

        moreau.set_backend(backend)
    exp = get(name)
    rows = exp.compute(params, point, point_rng(seed, name, point))
    return json.loads(json.dumps(rows, default=_jsonable))  # plain JSON types, column order kept


class _Serial(cf.Executor):
    """The calling process as an executor (``workers=1``): no pickling, no start-up."""

    def submit(self, fn, /, *args, **kwargs):
        fut = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, as a pool would
            fut.set_exception(exc)
        return fut


def make_executor(workers: int | None = None, scheduler: str | None = None):
    """``(executor, closer, description)``: Dask when ``scheduler`` is an address, else local."""
    if scheduler:
        try:
            from dask.distributed import Client
        except ImportError:
            raise RunConflict("--scheduler needs dask.distributed: pip install 'moreau[dask]'") from None
        _probe(scheduler)
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ConnectionError(f"cannot reach the Dask scheduler at {scheduler!r} ({type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else 'no answer'})") from None
        return client.get_executor(), client.close, f"dask ({scheduler})"
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        return _Serial(), lambda: None, "serial (this process)"
    import multiprocessing as mp

    # each worker gets its share of the cores for BLAS (workers x default threads oversubscribe the
    # machine: measured 4x slower on 2 cores); set for the spawned children only, restored after
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    saved = {k: os.environ.get(k) for k in _BLAS_VARS}
    for k in _BLAS_VARS:
        os.environ.setdefault(k, threads)
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
    for _ in range(workers):  # start the workers now, while the variables are set
        pool.submit(int)

    def close():
        pool.shutdown(cancel_futures=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    return pool, close, f"local process pool ({workers} workers, {threads} BLAS thread(s) each)"


_BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


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
        raise ConnectionError(f"cannot reach the Dask scheduler at {address!r} "
                              f"({exc.strerror or type(exc).__name__})") from None


def _progress(total: int, done: int, label: str):
    """A tqdm bar on a terminal, nothing otherwise (quiet in CI and pipes)."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=done, desc=label, unit="point", file=sys.stderr)


def run(experiment: Experiment, out, *, quick=False, trials=None, seed=0, backend="numpy",
        workers=None, scheduler=None, on_checkpoint=None) -> dict:
    """Run (or resume) a registered experiment into ``out``; return the manifest.

    ``on_checkpoint(index)`` is called after each point is saved (tests use it to interrupt).
    """
    out = Path(out)
    params = experiment.config(quick, trials)
    args = {"name": experiment.name, "params": params, "seed": int(seed), "backend": backend,
            "quick": bool(quick), "trials": trials}
    fingerprint = hashlib.sha256(canonical(args).encode()).hexdigest()
    _claim_directory(out, args, fingerprint)
    points = experiment.points(params)
    ckpt = out / "points"
    ckpt.mkdir(exist_ok=True)
    files = [ckpt / f"{i:04d}-{hashlib.sha256(canonical(p).encode()).hexdigest()[:12]}.json"
             for i, p in enumerate(points)]
    rows = {i: json.loads(f.read_text(encoding="utf-8"))["rows"] for i, f in enumerate(files) if f.exists()}
    resumed = len(rows)
    t0 = time.perf_counter()
    pending = [i for i in range(len(points)) if i not in rows]
    executor, close, how = make_executor(workers, scheduler)
    bar = _progress(len(points), resumed, experiment.name)
    try:
        futures = {executor.submit(_compute_point, experiment.name, params, points[i], int(seed), backend): i
                   for i in pending}
        for fut in cf.as_completed(futures):
            i = futures[fut]
            rows[i] = fut.result()
            atomic_write(files[i], json.dumps({"point": points[i], "rows": rows[i]}, default=_jsonable))
            if bar is not None:
                bar.update(1)
            if on_checkpoint is not None:
                on_checkpoint(i)
    finally:
        if bar is not None:
            bar.close()
        close()
    table = [dict(r) for i in range(len(points)) for r in rows[i]]
    _write_csv(out / f"{experiment.name}.csv", table)
    result = experiment.finish(table, params, out, seed=int(seed))
    from ._artifact import provenance

    manifest = {"name": experiment.name, "paper": experiment.paper, "figure": experiment.figure,
                "summary": experiment.summary, "arguments": args, "executor": how,
                "device": _device(backend), "points": len(points), "resumed_points": resumed,
                "wall_seconds": round(time.perf_counter() - t0, 3),
                "csv": f"{experiment.name}.csv",
                "figures": [str(Path(p).name) for p in result.get("figures", [])],
                "claims": result.get("claims", {}), "theorems": result.get("theorems", {}),
                "provenance": provenance(params, int(seed))}
    atomic_write(out / "manifest.json", json.dumps(manifest, indent=1, default=_jsonable))
    return manifest


def _claim_directory(out: Path, args: dict, fingerprint: str) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PermissionError(f"--out {str(out)!r} is not a writable directory ({exc.strerror or exc})") from None
    meta = out / "run.json"
    if meta.exists():
        try:
            held = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise RunConflict(f"{meta} is unreadable: remove it or choose another --out") from None
        if held.get("fingerprint") != fingerprint:
            diff = sorted(k for k in set(held.get("arguments", {})) | set(args)
                          if held.get("arguments", {}).get(k) != json.loads(canonical(args)).get(k))
            raise RunConflict(f"{out} holds a run with other arguments (differs in: {', '.join(diff) or '?'}); "
                              f"rerun with the same arguments to resume, or choose another --out")
        return
    atomic_write(meta, json.dumps({"fingerprint": fingerprint, "arguments": json.loads(canonical(args))}, indent=1))


def _write_csv(path: Path, rows: list) -> None:
    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    lines = []

    class _W:
        def write(self, s):
            lines.append(s)

    w = csv.DictWriter(_W(), fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(v) for k, v in r.items()})
    atomic_write(path, "".join(lines))


def _fmt(v):
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return v


def _device(backend: str) -> str:
    if backend == "numpy":
        import platform

        return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    from moreau._backend import gpu_status

    ok, why = gpu_status()
    return f"cupy: {why}"
