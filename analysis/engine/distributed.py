r"""``moreau check --scheduler ADDRESS``: the chunks of a large ``--trials`` on a Dask cluster.

Each chunk is one task: a worker rebuilds the statement from the registry (the catalogue, the
installed entry points and the ``--module`` files or names, which every worker must be able to
load: same environment, same paths), draws the chunk's instances from their own stream
(``rng_for(seed, id, family, "chunk k")``, exactly as the serial run does) and evaluates the printed
claim, every reading and every mutant on them.  The parent consumes the results in chunk order and
reduces them as the serial run does, so the JSON equals the serial run's apart from timings.  At
most ``window`` tasks are in flight, so the parent holds a bounded number of chunks however large
``--trials`` is, and a worker holds one chunk (memory bounded per worker).

A real cluster: start ``dask scheduler`` on one machine and ``dask worker tcp://HOST:8786`` on
each of the others (all with moreau installed, ``pip install "moreau-pfl[dask]"``), then
``moreau check --trials 100000000 --scheduler tcp://HOST:8786``.
"""

from __future__ import annotations

from collections import deque

from moreau.analysis.engine.registry import StatementError

__all__ = ["connect", "remote_outputs"]


def connect(address):
    """A ``dask.distributed.Client`` at ``address``; a one-line :class:`StatementError` when
    distributed is missing or nothing answers there."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise StatementError("--scheduler needs dask.distributed: pip install 'moreau-pfl[dask]'") from None
    try:
        return Client(address, timeout="10s")
    except Exception as exc:  # OSError, TimeoutError, ValueError from a malformed address
        raise StatementError(
            f"cannot reach the Dask scheduler at {address!r} ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''})"
        ) from None


def _chunk_task(sid, modules, fam, size, seed, k, mutants, total):
    """On a worker: chunk ``k`` of ``sid`` on ``fam`` (its own stream), every claim and mutant; Monte
    Carlo levels held over the run's ``total`` instances, as in the serial run."""
    from moreau.analysis.engine.batches import _draw, evaluate_chunk, rng_for
    from moreau.analysis.engine.judge import judged_over
    from moreau.analysis.engine.registry import full_catalogue

    st = full_catalogue(modules)[sid]
    rng = rng_for(seed, sid, fam) if k == 0 else rng_for(seed, sid, fam, f"chunk {k}")
    batch = _draw(st, fam, size, rng)
    chosen = [m for m in st.mutants if m.name in mutants]
    with judged_over(total):
        res, readings, mres = evaluate_chunk(st, fam, size, batch, chosen)
    return batch, res, readings, mres


def remote_outputs(
    client,
    st,
    fam,
    trials,
    seed,
    chunk,
    mutants,
    modules,
    search_examples=0,
    searches=None,
    search_seconds=0.0,
    window=8,
    timings=None,
):
    """Per chunk, in order, what :func:`moreau.analysis.engine.runner._local_outputs` yields, computed
    on the cluster (``trials`` above ``chunk``; every mutant evaluated on every chunk).  With
    a search (``--search``, or the default run's short search) the last chunk is computed here: the
    search's instances join it as in the serial run.  ``timings`` (a ``Record.timings``): the seconds of
    that chunk's draw and of the search (the other chunks' draws are the workers', not counted)."""
    import time

    from moreau.analysis.engine.batches import _concat, _draw, evaluate_chunk, rng_for
    from moreau.analysis.engine.search import search_statement

    n = -(-trials // chunk)
    names = tuple(m.name for m in st.mutants) if mutants else ()
    sizes = [min(chunk, trials - k * chunk) for k in range(n)]
    queue = deque()
    k_next = 0
    timings = {"draw": 0.0, "search": 0.0, "claim": 0.0, "readings": 0.0} if timings is None else timings
    remote = n - 1 if search_examples or (search_seconds and st.expect == "holds") else n
    for k in range(n):
        if k == remote:  # the last chunk, with the search's instances, here
            t0 = time.perf_counter()
            batch = _draw(st, fam, sizes[k], rng_for(seed, st.id, fam, f"chunk {k}"))
            timings["draw"] += time.perf_counter() - t0
            chosen = [m for m in st.mutants if m.name in names]
            if search_examples:  # as the serial run: --search before the batch is judged
                t0 = time.perf_counter()
                found, report = search_statement(st, fam, seed, search_examples)
                timings["search"] += time.perf_counter() - t0
                searches.append(("", report))
                if found is not None:
                    batch = _concat(batch, found)
            res, readings, mres = evaluate_chunk(st, fam, sizes[k], batch, chosen)
            if not search_examples:  # the short search after it, as the serial run
                t0 = time.perf_counter()
                found, report = search_statement(
                    st, fam, seed, 0, search_seconds, per_instance=res.seconds / max(res.instances, 1)
                )
                timings["search"] += time.perf_counter() - t0
                searches.append(("", report))
                if found is not None:
                    batch = _concat(batch, found)
                    timings["claim"] += res.seconds  # the first evaluation, superseded: still spent
                    timings["readings"] += sum(r.seconds for r in readings.values())
                    res, readings, mres = evaluate_chunk(st, fam, sizes[k], batch, chosen)
            yield sizes[k], batch, n, res, readings, (lambda m, mres=mres: mres[m.name])
            continue
        while k_next < remote and len(queue) < window:
            queue.append(
                client.submit(
                    _chunk_task,
                    st.id,
                    tuple(modules),
                    fam,
                    sizes[k_next],
                    seed,
                    k_next,
                    names,
                    trials,
                    pure=False,
                )
            )
            k_next += 1
        future = queue.popleft()
        batch, res, readings, mres = future.result()
        del future
        yield sizes[k], batch, n, res, readings, (lambda m, mres=mres: mres[m.name])
