"""Drawing and evaluating one batch of instances: the unit of work of the serial runner
(``moreau.analysis.engine.runner``) and of a Dask worker (``moreau.analysis.engine.distributed``)."""

from __future__ import annotations

import time
import zlib

import numpy as np

from moreau.analysis.engine.core import _batch_size
from moreau.analysis.engine.registry import StatementError

__all__ = ["rng_for", "evaluate_chunk"]


def rng_for(seed: int, statement_id: str, family: str, mutant: str = "") -> np.random.Generator:
    """A generator that depends on the seed, the id and the family only (order-free)."""
    key = [
        int(seed),
        zlib.crc32(statement_id.encode()),
        zlib.crc32(family.encode()),
        zlib.crc32(mutant.encode()),
    ]
    return np.random.default_rng(key)


def _batch_len(batch) -> int:
    try:
        return _batch_size(batch)
    except ValueError:
        return 0


def _draw(st, fam, trials, rng):
    """The statement's instances on a family; a generator that fails, or returns what is not a batch
    (a dict of arrays, no NaN), says so in one line."""
    try:
        batch = st.instances(fam, trials, rng)
    except Exception as exc:
        if st.paper in _BUILTIN_PAPERS():
            raise
        raise StatementError(
            f"{st.id} [{fam}]: its instance generator failed ({type(exc).__name__}: {exc})"
        ) from exc
    if st.paper not in _BUILTIN_PAPERS():
        _check_users_batch(st, fam, batch)
    return batch


def _check_users_batch(st, fam: str, batch: object) -> None:
    """A user's generator returned a batch: a dict of arrays without NaN (a NaN instance would be
    judged a failure of the statement, a wrong verdict), or a StatementError says what it returned."""
    if not isinstance(batch, dict):
        raise StatementError(
            f"{st.id} [{fam}]: its instance generator returned {type(batch).__name__}, not a batch "
            "(a dict of arrays, instances along the first axis)"
        )
    for k, v in batch.items():
        a = np.asarray(v) if isinstance(v, (np.ndarray, np.generic, float)) else None
        if a is not None and a.dtype.kind in "fc" and np.isnan(a).any():
            where = np.argwhere(np.isnan(a))[0]
            at = f" (instance #{int(where[0])})" if a.ndim else ""
            raise StatementError(
                f"{st.id} [{fam}]: its instance generator returned NaN in {k!r}{at} "
                "(an instance with NaN is no instance: it would be judged a failure of the statement)"
            )


def _BUILTIN_PAPERS():
    from moreau.analysis.engine.registry import paper_packages

    return {p.PAPER["key"] for p in paper_packages()}


def evaluate_chunk(st, fam, size, batch, mutants=(), prepared=None):
    """The printed claim, every reading and ``mutants`` on one batch, the claim-independent work done
    once (``prepared``: its output when the caller has it): ``(Result, {reading name: Result},
    {mutant name: Result})`` (a Dask worker's unit of work too)."""
    t0 = time.perf_counter()
    prepared = st.prepared(batch) if prepared is None else prepared
    res = st.run(fam, size, None, batch=batch, prepared=prepared)
    res.seconds = time.perf_counter() - t0
    out = {}
    for r in st.readings:  # the readings on the same instances, same prepared data
        t2 = time.perf_counter()
        out[r.name] = st.run(fam, size, None, batch=batch, prepared=prepared, reading=r)
        out[r.name].seconds = time.perf_counter() - t2
    return (
        res,
        out,
        {m.name: st.run(fam, size, None, mutant=m, batch=batch, prepared=prepared) for m in mutants},
    )


def _concat(batch, extra):
    """``batch`` followed by ``extra`` when their arrays stack, else ``extra`` alone."""
    try:
        return {k: np.concatenate([np.asarray(batch[k]), np.asarray(extra[k])]) for k in batch}
    except (KeyError, ValueError):
        return extra
