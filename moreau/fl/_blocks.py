r"""Full-batch local steps run block of clients by block of clients, each block's data kept in a
CPU cache for all of its steps.

A round of FedAvg, FedProx or local gradient descent makes K gradient steps on every client, and
the clients do not interact until the server step.  On the whole batch at once every step streams
all the clients' data from main memory (``A`` of least squares at m = 1000, d = 60: 29 MB per
step); a per-client loop keeps one client's data in cache for its K steps, which is why it came
close to the batched round (1.2-1.7x) where the data do not fit in a cache.  Here the K steps run
on blocks of clients whose data fit in about 4 MB: the same operations per client on the same
numbers (a block's gradient is the rows of the batch's gradient, bit for bit: tested), so the same
iterates, with each block's data read from memory once per round instead of K times.

Only where it is the same computation and measured faster: numpy arrays, the built-in padded least
squares and logistic models (whose fast gradient ``_grad`` reads the arrays listed in
``_GRAD_READS``, sliced here without copies), and batches of more clients than one block holds;
everything else runs as one block.
"""

from __future__ import annotations

import numpy as np

from .._least_squares import LeastSquares
from .._logistic import Logistic
from .._multinomial import Multinomial
from .._newton_batch import bare_copy
from .._ragged import RaggedMultinomial
from .._ragged_samples import RaggedSamples

__all__ = ["client_blocks", "run_blocks"]

#: data of one block of clients (bytes).  Measured (FedAvg, 2 rounds of 5 steps, one core of the
#: 2-vCPU AMD EPYC development machine; benchmarks/RESULTS.md section 10): blocks of 4 MB ran the
#: round 1.8x (least squares, m = 1000, d = 60), 2.3-2.6x (logistic, d = 60 and 200) and 1.2-1.4x
#: (m = 10,000, d = 20) faster than the whole batch; 1 MB blocks lost part of it to the Python calls
#: of each step (0.9-2.1x), 8 MB blocks as 4 MB or slightly less
CACHE_BYTES = 1 << 22
#: the same for the softmax model's groups (a copy of their samples, transposed)
SOFTMAX_BYTES = 1 << 20
#: fewest clients in a block (the calls of a step cost the same for 1 or 16 clients)
MIN_CLIENTS = 16

#: what each built-in model's fast gradient (``_grad``) reads: attribute -> its per-client trailing
#: axes.  Not the softmax model: its gradient is bound by its GEMMs, not by memory, and blocks measured
#: 0.92-1.01x the whole batch (m = 1000 and 10,000, d = 20-200, C = 10).
_GRAD_READS = {
    LeastSquares: {"A": 2, "b": 1},
    Logistic: {"X": 2, "y": 1, "_py": 1, "mu": 0},
}


def client_blocks(f):
    """``[(sl, f_sl)]``: slices of the client axis and ``f`` on those clients (views of its data),
    or ``[(slice(None), f)]`` where blocks would not be the same computation or would not help."""
    reads = _GRAD_READS.get(type(f))
    whole = [(slice(None), f)]
    if type(f) in (Multinomial, RaggedMultinomial):
        return _softmax_groups(f) or whole
    if reads is None or not isinstance(getattr(f, "X", None), np.ndarray):
        return whole
    arrays = {k: getattr(f, k) for k in reads}  # cached ones (``_py``) computed once, on the whole batch
    per_client = sum(_per_client_bytes(v, t) for v, t in zip(arrays.values(), reads.values(), strict=True))
    m = f.batch_shape[-1]
    size = max(MIN_CLIENTS, CACHE_BYTES // max(per_client, 1))
    if size >= m:
        return whole
    return [
        (slice(i, min(i + size, m)), _view(f, arrays, reads, slice(i, min(i + size, m))))
        for i in range(0, m, size)
    ]


def run_blocks(blocks, W, steps, step, record=None):
    """``steps`` local steps ``W <- step(f_sl, W_sl, k)`` (``k`` = 0, 1, ...) on each block of
    ``blocks`` (:func:`client_blocks`), all steps of one block before the next; ``W`` ``(..., m, d)``.
    ``record(k, sl, W_sl)`` (optional) is called after every step.  Returns the last iterates (a new
    array where there are several blocks)."""
    if len(blocks) == 1:
        return _steps(blocks[0][1], W, slice(None), steps, step, record)
    out = np.empty(W.shape, dtype=W.dtype)
    for sl, f in blocks:
        out[..., sl, :] = _steps(f, W[..., sl, :], sl, steps, step, record)
    return out


def _steps(f, W, sl, steps, step, record):
    for k in range(steps):
        W = step(f, W, k)
        if record is not None:
            record(k, sl, W)
    return W


def _per_client_bytes(v, tail):
    """Bytes of one client's part of ``v`` (0 when ``v`` is shared by the clients)."""
    axis = v.ndim - tail - 1  # the client axis: the last batch axis (batch axes are right-aligned)
    if axis < 0 or v.shape[axis] == 1:
        return 0
    return v.nbytes // v.shape[axis]


def _view(f, arrays, reads, sl):
    """``f`` on the clients ``sl`` (:func:`~moreau._newton_batch.bare_copy`, as Newton's compacted
    batches): the arrays its ``_grad`` reads sliced (views), nothing else (read by nothing here: a
    read fails loudly instead of seeing the whole batch)."""
    new = bare_copy(f)
    for k, v in arrays.items():
        axis = v.ndim - reads[k] - 1
        new.__dict__[k] = v if axis < 0 or v.shape[axis] == 1 else v[(slice(None),) * axis + (sl,)]
    new.batch_shape = tuple(f.batch_shape[:-1]) + (sl.stop - sl.start,)
    return new


def _softmax_groups(f):
    """Softmax clients (padded or ragged, numpy, batch ``(m,)``) in groups of similar size whose
    samples fit in ``CACHE_BYTES``: ``[(idx, f_g)]``, ``idx`` the group's clients (host ints),
    ``f_g`` a :class:`~moreau.Multinomial` on a copy of their samples, transposed ``(g, d, w)`` (the
    logits' product reads them contiguously) and cut to the group's largest client ``w``; ``None``
    where this does not apply or one group would hold every client."""
    parts = f.parts if isinstance(f, RaggedSamples) else (f,)
    if len(f.batch_shape) != 1 or not all(isinstance(p.X, np.ndarray) and p.X.ndim == 3 for p in parts):
        return None
    m, d = f.batch_shape[0], f.n_features
    where = [b.reshape(-1) for b, _ in f.layout.buckets] if isinstance(f, RaggedSamples) else [np.arange(m)]
    groups = []
    for part, idx in zip(parts, where, strict=True):
        n = part.X.shape[-2]
        P = np.broadcast_to(part._p, (idx.size, n))
        size = n - np.argmax(P[:, ::-1] > 0, axis=-1)  # one past each client's last weighted row
        order = np.argsort(size, kind="stable")
        start = 0
        while start < idx.size:
            stop = start + 1
            while stop < idx.size and (
                stop - start < MIN_CLIENTS
                or (stop + 1 - start) * size[order[stop]] * d * part.X.itemsize <= SOFTMAX_BYTES
            ):
                stop += 1
            r = order[start:stop]
            groups.append((idx[r], part, r, int(size[r].max())))
            start = stop
    if len(groups) < 2:
        return None
    return [(idx, _group(part, r, w)) for idx, part, r, w in groups]


def _group(part, r, w):
    """The softmax model ``part`` on its clients ``r``, samples cut to the first ``w``."""
    n = part.X.shape[-2]
    Xt = np.empty((r.size, part.X.shape[-1], w), dtype=part.X.dtype)
    for i, j in enumerate(r):  # per client: 1.5x faster than one fancy-indexed copy (measured)
        Xt[i] = part.X[j, :w].T
    p = np.broadcast_to(part._p, part.batch_shape + (n,))[r, :w]
    y = np.broadcast_to(part.y, part.batch_shape + (n,))[r, :w].astype(np.int64)
    new = bare_copy(part)
    new.__dict__.update(
        X=Xt.transpose(0, 2, 1),
        _p=p,
        _ypos=y * w + np.arange(w),
        mu=np.broadcast_to(part.mu, part.batch_shape)[r],
        batch_shape=(r.size,),
    )
    return new
