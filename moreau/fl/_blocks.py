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

Softmax clients (:class:`~moreau.Multinomial`, padded or :func:`~moreau.ragged`, numpy, batch
``(m,)``) run in groups of about ``SOFTMAX_BYTES`` of samples: the clients of each size bucket sorted
by size (their last sample of positive weight), cut into groups, each group's samples copied once per
call, transposed ``(g, d, w)`` and cut to its largest client ``w`` (the ragged buckets' padding, up
to 2x, shrinks to ~1.06x on lognormal sizes; the logits' product reads the copy contiguously, ~1.4x
the GEMM rate of the transposed view).  The gradient runs the operations of
:func:`~moreau._multinomial_fast.softmax_grad` in buffers kept across the steps, so the iterates are
the whole batch's to rounding (the products sum the same terms over other lengths and layouts), not
bit for bit.  The copy holds the samples a second time during the call.  Measured
(benchmarks/RESULTS.md section 11): FedAvg and FedProx, N = 1000 lognormal clients, d = 60, C = 10:
1.75-1.84x the whole batch; balanced 1.08-1.25x; N = 100 lognormal 1.3x.
"""

from __future__ import annotations

import numpy as np

from .._least_squares import LeastSquares
from .._logistic import Logistic
from .._multinomial import Multinomial
from .._multinomial_fast import _class_sum
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
#: samples of one group of softmax clients (bytes; a copy, transposed).  Measured (FedAvg, N = 1000
#: lognormal, d = 60, C = 10, one core of a 2-vCPU Xeon with 2 MB of L2): 512 KB-1 MB the same,
#: 2 MB 1.03x slower, 4 MB 1.1x (more padding per group)
SOFTMAX_BYTES = 1 << 20
#: fewest clients in a block (the calls of a step cost the same for 1 or 16 clients)
MIN_CLIENTS = 16

#: what each built-in model's fast gradient (``_grad``) reads: attribute -> its per-client trailing
#: axes.  Not the softmax model: views of its data measured 0.92-1.01x the whole batch (its gradient is
#: bound by its GEMMs, not by memory); it runs in groups of copies instead (``_softmax_groups``).
_GRAD_READS = {
    LeastSquares: {"A": 2, "b": 1},
    Logistic: {"X": 2, "y": 1, "_py": 1, "mu": 0},
}


def client_blocks(f):
    """``[(sl, f_sl)]``: slices of the client axis and ``f`` on those clients (views of its data; for
    the softmax model host index arrays and copies, :func:`_softmax_groups`), or
    ``[(slice(None), f)]`` where blocks would not be the same computation or would not help."""
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
    where this does not apply, where one group would hold every client, and where the groups would
    cut less than a tenth of the padded samples of a batch that fits in ``CACHE_BYTES``."""
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
        sorted_size = size[order].tolist()  # Python ints: the loop below runs once per client
        start = 0
        while start < idx.size:
            stop = start + 1
            while stop < idx.size and (
                stop - start < MIN_CLIENTS
                or (stop + 1 - start) * sorted_size[stop] * d * part.X.itemsize <= SOFTMAX_BYTES
            ):
                stop += 1
            r = order[start:stop]
            groups.append((idx[r], part, r, int(size[r].max())))
            start = stop
    held = sum(p.X.shape[-3] * p.X.shape[-2] for p in parts)  # padded samples of the batch
    cut = sum(r.size * w for _, _, r, w in groups)
    if len(groups) < 2 or (cut > 0.9 * held and held * d * parts[0].X.itemsize <= CACHE_BYTES):
        return None  # measured 0.94-0.98x the whole batch at N = 100, balanced (nothing cut, in cache)
    return [(idx, _group(part, r, w)) for idx, part, r, w in groups]


def _group(part, r, w):
    """The softmax model ``part`` on its clients ``r``, samples cut to the first ``w``."""
    n = part.X.shape[-2]
    Xt = np.empty((r.size, part.X.shape[-1], w), dtype=part.X.dtype)
    for i, j in enumerate(r):  # per client: 1.5x faster than one fancy-indexed copy (measured)
        Xt[i] = part.X[j, :w].T
    p = np.broadcast_to(part._p, part.batch_shape + (n,))[r, :w]
    y = np.broadcast_to(part.y, part.batch_shape + (n,))[r, :w].astype(np.int64)
    new = object.__new__(_SoftmaxGroup)
    new.__dict__.update(bare_copy(part).__dict__)
    ypos = y * w + np.arange(w)
    new.__dict__.update(
        X=Xt.transpose(0, 2, 1),
        _Xt=Xt,
        _p=p,
        _ypos=ypos,
        _at=((np.arange(r.size) * (part.n_classes * w))[:, None] + ypos).reshape(-1),
        mu=np.broadcast_to(part.mu, part.batch_shape)[r],
        batch_shape=(r.size,),
        _Z=np.empty((r.size, part.n_classes, w), dtype=part.X.dtype),
        _G=np.empty((r.size, part.n_classes, part.X.shape[-1]), dtype=part.X.dtype),
    )
    return new


class _SoftmaxGroup(Multinomial):
    """A group of softmax clients (:func:`_group`) whose gradient at ``(g, D)`` points runs the
    operations of :func:`~moreau._multinomial_fast.softmax_grad` on the transposed samples, in
    buffers kept across the local steps (other points: the model's own gradient)."""

    def _grad(self, theta):
        g, C, d = self.batch_shape[0], self.n_classes, self.n_features
        if theta.shape != (g, self.dim) or not isinstance(theta, np.ndarray):
            return Multinomial._grad(self, theta)
        W = theta.reshape(g, d, C)
        E = np.matmul(W.transpose(0, 2, 1), self._Xt, out=self._Z)  # (g, C, w) logits
        mx = E.max(axis=1)  # exact in any order; one call measured faster than C - 1 here
        E -= mx[:, None, :]
        np.exp(E, out=E)
        sb = _class_sum(E)
        flat = E.reshape(-1)  # a view: E is contiguous
        flat[self._at] = 0.0  # e_c (1 - Y_c)
        rest = _class_sum(E)
        rest /= sb
        E /= sb[:, None, :]
        flat[self._at] = -rest.reshape(-1)  # P - Y, -(1 - pi_y) at the label
        E *= self._p[:, None, :]
        Gt = np.matmul(E, self.X, out=self._G)  # (g, C, d): (p R) X
        mean = _class_sum(Gt)
        mean /= C
        Gt -= mean[:, None, :]
        out = np.multiply(self.mu[:, None, None], W)
        out += Gt.transpose(0, 2, 1)
        return out.reshape(g, self.dim)
