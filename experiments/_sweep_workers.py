"""The executors that run a sweep's points and the lifetime of their processes: a local process pool
capped at the CPUs this process may use (each worker with its share of the BLAS threads, dying with
its parent: ``PR_SET_PDEATHSIG`` on Linux), the calling process itself (``workers=1``) or a Dask
cluster (``Client(address).get_executor()``), all one ``concurrent.futures`` code path; SIGTERM and
SIGINT end the workers before :class:`Interrupted` is raised.  The runner is
``moreau.experiments._sweep``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
import sys
import threading

from ._rundir import RunConflict
from ._sweep_points import _timed_point

__all__ = ["Interrupted", "make_executor", "usable_cpus"]


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


def _finished(executor, name, params, points, pending, seed, backend, states=None):
    """``(index, (rows, timing))`` of each pending point as it finishes; ``states[i]``: the
    ``state`` argument of :func:`_timed_point` for point ``i`` (None: no state within points)."""
    states = states or {}
    if isinstance(executor, _Serial):
        for i in pending:
            yield i, _timed_point(name, params, points[i], seed, backend, states.get(i))
        return
    futures = {
        executor.submit(_timed_point, name, params, points[i], seed, backend, states.get(i)): i
        for i in pending
    }
    for fut in cf.as_completed(futures):
        yield futures[fut], fut.result()
