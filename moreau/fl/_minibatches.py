"""The mini-batches of ``moreau.fl``'s algorithms: which rows each client draws (the randomness layout
of :func:`sample_counts`) and the mini-batch objective of a draw."""

from __future__ import annotations

import numpy as np

from .._backend import to_numpy
from .._ragged_samples import RaggedSamples
from ._common import _gathers, gathered

__all__ = ["MiniBatches", "sample_counts", "valid_rows"]

#: keys of a draw without replacement formed at a time (the draw's stream is the same)
CHUNK_BYTES = 1 << 25


def sample_counts(rng, f, lead, size, *, replace):
    r"""Mini-batch weights ``(*lead, m, n)`` (host): how often each sample is drawn.

    Draws ``size`` of the samples with positive weight (the padding, weight 0, is never drawn),
    uniformly.  Without replacement: one draw ``rng.random((*lead, m, n))``, the ``size`` smallest
    keys among the valid samples.  With replacement: one draw ``rng.random((*lead, m, size))``,
    each mapped to the k-th valid sample (inverse transform)."""
    batches = MiniBatches(f, lead)
    return batches.counts(batches.rows(rng, size, replace=replace))


class MiniBatches:
    """The mini-batches of one run on ``f`` (batch ``(*lead, m)``), drawn as :func:`sample_counts`
    documents, the samples of positive weight read once.  :meth:`objective`: the drawn rows gathered
    (:func:`gathered`; repeats as rows) for the sample losses, else ``f.with_weights(counts)``.

    Memory: where every client's samples of positive weight come first (the padding after them, as
    in every ragged objective and any padded one without zero weights inside), only their counts are
    kept, and the keys of a draw without replacement are drawn and reduced ``CHUNK_BYTES`` at a time
    (the same stream as one draw of ``(*lead, m, n_max)``: the same rows), so that a run on 10^5 ragged
    clients never forms an array of ``m x n_max`` (a ragged objective's padded weights are not read)."""

    def __init__(self, f, lead):
        self.f = f
        lead = tuple(lead)
        if isinstance(f, RaggedSamples) and not f._outer and not lead:
            nvalid, prefix = _ragged_counts(f)
            if prefix:
                self.valid, self.nvalid, self.order = None, nvalid, None
                self.shape = nvalid.shape + (f.layout.n_max,)
                return
        w = f.weights
        self.shape = lead + tuple(f.batch_shape[-1:]) + (w.shape[-1],)
        self.valid, self.nvalid, self.order = valid_rows(w, self.shape)

    def rows(self, rng, size, *, replace):
        """The drawn rows ``(*lead, m, size)`` (host indices into each client's samples)."""
        nvalid, n = self.nvalid, self.shape[-1]
        if not replace:
            if np.any(nvalid < size):
                raise ValueError(
                    f"batch_size={size} exceeds the number of samples of a client "
                    f"({int(nvalid.min())}) for sampling without replacement"
                )
            flat = nvalid.reshape(-1)
            out = np.empty((flat.size, size), dtype=np.int64)
            step = max(1, CHUNK_BYTES // (8 * n))
            vflat = None if self.valid is None else self.valid.reshape(-1, n)
            for i in range(0, flat.size, step):  # consecutive rows of the one draw (*lead, m, n)
                j = min(i + step, flat.size)
                # one chunk: the draw in its documented shape (the same stream either way)
                keys = rng.random(self.shape).reshape(-1, n) if j - i == flat.size else rng.random((j - i, n))
                valid = np.arange(n) < flat[i:j, None] if vflat is None else vflat[i:j]
                keys[~valid] = np.inf
                # the size smallest keys (argpartition: the set argsort's first size would give, in O(n))
                chosen = (
                    np.argpartition(keys, size - 1, axis=-1)[:, :size]
                    if size < n
                    else np.argsort(keys, axis=-1)[:, :size]
                )
                out[i:j] = np.sort(chosen, axis=-1)
            return out.reshape(nvalid.shape + (size,))
        u = rng.random(nvalid.shape + (size,))
        k = np.minimum((u * nvalid[..., None]).astype(np.int64), nvalid[..., None] - 1)  # k-th valid sample
        return k if self.order is None else np.take_along_axis(self.order, k, axis=-1)

    def counts(self, idx):
        """How often each sample is in the draw ``idx``: ``(*lead, m, n)`` (host floats)."""
        n = self.shape[-1]
        rows = np.arange(idx.size // idx.shape[-1]).reshape(idx.shape[:-1] + (1,))
        return np.bincount((rows * n + idx).reshape(-1), minlength=rows.size * n).reshape(self.shape) * 1.0

    def objective(self, rng, size, *, replace):
        """The mini-batch objective of one draw (batch ``(*lead, m)``)."""
        f, idx = self.f, self.rows(rng, size, replace=replace)
        return (
            gathered(f, idx) if _gathers(f) else f.with_weights(f.xp.asarray(self.counts(idx), dtype=f.dtype))
        )


def valid_rows(weights, shape):
    """``(valid or None, nvalid, order or None)`` of per-sample ``weights`` broadcast to ``shape``
    ``(..., n)`` (host): the mask of positive weights, each entry's count of them and their indices
    first (``argsort``); mask and order ``None`` where they already come first (the padding after
    them: the common case, kept as counts only)."""
    valid = np.broadcast_to(np.asarray(to_numpy(weights)) > 0, tuple(shape))
    nvalid = valid.sum(axis=-1)
    if np.array_equal(valid, np.arange(shape[-1]) < nvalid[..., None]):
        return None, nvalid, None
    return valid, nvalid, np.argsort(~valid, axis=-1, kind="stable")


def _ragged_counts(f):
    """``(samples of positive weight per client, whether they come first in every client)`` of a
    ragged objective, from its size buckets (its padded weights are never formed)."""
    lay = f.layout
    nvalid, prefix = np.zeros(lay.N, dtype=np.int64), True
    for p, (idx, width) in zip(f.parts, lay.buckets, strict=True):
        valid, nvalid[idx], _ = valid_rows(p.weights, (idx.size, width))
        prefix = prefix and valid is None
    return nvalid.reshape(lay.shape), prefix
