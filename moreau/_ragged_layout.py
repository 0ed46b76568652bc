r"""Size buckets: where the samples of each batch entry of a ragged objective live.

A ragged batch has entries (clients, trials) with ``n_i`` samples each.  The entries are
sorted by size and cut into geometric buckets: a bucket starts at the smallest size ``s`` not
yet placed and takes every entry of size ``<= ratio * s``; it is one padded batch of its own,
``(k_b, width_b, ...)`` with ``width_b`` its largest size, so a bucket holds at most ``ratio``
times the samples of its entries and the whole layout at most ``ratio`` times the total.
There are at most ``1 + log(n_max / n_min) / log(ratio)`` buckets.

:class:`Layout` maps arrays of the ragged batch shape ``outer + shape`` (``outer``: leading
axes added by ``with_weights``) to one array per bucket (:meth:`Layout.split`, a ``take`` of the
bucket's entries along the flattened entry axis) and back (:meth:`Layout.merge`, a
concatenation in bucket order and one ``take`` with the inverse permutation): array-API
operations only, so numpy, cupy and array-api-strict run the same code.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from array_api_compat import array_namespace, is_array_api_obj

__all__ = ["Layout", "check_sizes", "check_ratio"]

#: the most samples a ragged batch may hold in all (integers stay exact in float64 below it)
MAX_ROWS = 2**53


def check_ratio(ratio):
    """The bucket ratio: a finite real number > 1."""
    if (
        isinstance(ratio, bool)
        or not isinstance(ratio, numbers.Real)
        or not math.isfinite(ratio)
        or not ratio > 1
    ):
        raise ValueError(f"ratio must be a finite number > 1 (got {ratio!r})")
    return float(ratio)


def check_sizes(sizes):
    """``sizes`` as a host int64 array (at least one axis), every entry >= 1."""
    s = np.asarray(sizes)
    if s.dtype == bool or s.dtype.kind not in "iuf":
        raise ValueError(f"sizes must be an array of integer sample counts (got dtype {s.dtype})")
    if s.dtype.kind == "f" and not np.all(np.isfinite(s)):  # inf cast to int64 is garbage (an endless loop)
        i = tuple(int(k) for k in np.argwhere(~np.isfinite(s))[0])
        raise ValueError(f"sizes must be finite integer sample counts (got {float(s[i])} at index {i})")
    if s.dtype.kind == "f" and not np.all(s == np.round(s)):
        raise ValueError(f"sizes must be an array of integer sample counts (got dtype {s.dtype})")
    if s.ndim == 0 or s.size == 0:
        raise ValueError(
            f"sizes must have at least one entry and one axis, the batch shape (got shape {s.shape})"
        )
    if np.any(s < 1):
        i = tuple(int(k) for k in np.argwhere(s < 1)[0])
        raise ValueError(f"sizes must be >= 1 for every entry (got {s[i]!r} at index {i})")
    total = float(np.sum(s, dtype=np.float64))  # a float sum: an int64 one may wrap around
    if total > MAX_ROWS:
        raise ValueError(
            f"sizes must sum to the number of rows of X, at most 2^53 (got sizes.sum() = {total:.4g})"
        )
    return s.astype(np.int64)


class Layout:
    """The size buckets of a batch of ``sizes`` (host ints, the batch shape ``shape``).

    ``buckets``: ``(idx, width)`` per bucket, ``idx`` the entries' flat indices (C order,
    ascending), ``width`` the bucket's padded sample count; ``offsets``: where each entry's
    samples start in the concatenated samples (C order of the entries).
    """

    def __init__(self, sizes, ratio=2.0):
        self.sizes = check_sizes(sizes)
        self.ratio = check_ratio(ratio)
        self.shape = tuple(self.sizes.shape)
        flat = self.sizes.reshape(-1)
        self.N = int(flat.size)
        self.n_max = int(flat.max())
        self.offsets = np.concatenate([[0], np.cumsum(flat)[:-1]]).astype(np.int64)
        order = np.argsort(flat, kind="stable")
        ranked = flat[order]
        self.buckets, i = [], 0
        while i < self.N:
            j = int(np.searchsorted(ranked, ranked[i] * self.ratio, side="right"))
            self.buckets.append((np.sort(order[i:j]), int(ranked[j - 1])))
            i = j
        cat = np.concatenate([idx for idx, _ in self.buckets])
        self.inverse = np.argsort(cat, kind="stable")
        self._identity = bool(np.array_equal(cat, np.arange(self.N)))

    @property
    def slots(self):
        """Padded samples held by the buckets (``sum_b k_b width_b``)."""
        return sum(idx.size * w for idx, w in self.buckets)

    def rows(self, b):
        """``(rows (k_b, width_b), valid (k_b, width_b))`` of bucket ``b``: indices into the
        concatenated samples (clamped to the entry's last sample where padded) and the mask of
        real samples."""
        idx, width = self.buckets[b]
        j = np.arange(width)
        n = self.sizes.reshape(-1)[idx][:, None]
        return self.offsets[idx][:, None] + np.minimum(j, n - 1), j < n

    # -- arrays of the ragged batch <-> one array per bucket ----------------------------------
    def split(self, a, tail, outer=()):
        """``a`` (shape ``S + tail``, ``S`` broadcasting against ``outer + shape``) as one array per
        bucket, shape ``L + outer + (k_b,) + tail`` (``L`` the axes ``S`` adds in front).  Python
        numbers, ``None`` and arrays without batch axes are handed to every bucket unchanged."""
        if a is None or not is_array_api_obj(a) or a.ndim <= tail:
            return [a] * len(self.buckets)
        xp = array_namespace(a)
        batch = tuple(outer) + self.shape
        S = tuple(a.shape[: a.ndim - tail])
        full = tuple(np.broadcast_shapes(S, batch))
        L = full[: len(full) - len(batch)]
        tshape = tuple(a.shape[a.ndim - tail :])
        a = xp.reshape(xp.broadcast_to(a, full + tshape), L + tuple(outer) + (self.N,) + tshape)
        ax = len(L) + len(outer)
        if len(self.buckets) == 1 and self._identity:
            return [a]
        return [xp.take(a, xp.asarray(idx), axis=ax) for idx, _ in self.buckets]

    def merge(self, parts, tail):
        """The inverse of :meth:`split`: per-bucket arrays ``L + outer + (k_b,) + tail`` into one
        ``L + outer + shape + tail`` (host numpy arrays stay numpy; ``None`` stays ``None``)."""
        if parts[0] is None:
            return None
        xp = array_namespace(*parts)
        ax = parts[0].ndim - tail - 1
        if not self._identity and len(parts) > 1 and all(type(p) is np.ndarray for p in parts):
            # numpy: each bucket written to its entries (one copy, not a concatenation and a take)
            first = parts[0]
            dtype = np.result_type(*parts)
            a = np.empty(tuple(first.shape[:ax]) + (self.N,) + tuple(first.shape[ax + 1 :]), dtype=dtype)
            for p, (idx, _) in zip(parts, self.buckets, strict=True):
                a[(slice(None),) * ax + (idx,)] = p
            return np.reshape(a, tuple(a.shape[:ax]) + self.shape + tuple(a.shape[ax + 1 :]))
        a = parts[0] if len(parts) == 1 else xp.concat(parts, axis=ax)
        if not self._identity:
            a = xp.take(a, xp.asarray(self.inverse), axis=ax)
        return xp.reshape(a, tuple(a.shape[:ax]) + self.shape + tuple(a.shape[ax + 1 :]))

    def merge_padded(self, parts, tail=0, fill=0):
        """Per-bucket per-sample arrays ``outer + (k_b, width_b) + tail`` as the padded layout
        ``outer + shape + (n_max,) + tail``, the samples past ``width_b`` filled with ``fill``."""
        xp = array_namespace(*parts)
        out = []
        for p, (_, w) in zip(parts, self.buckets, strict=True):
            if w < self.n_max:
                pad = list(p.shape)
                pad[p.ndim - tail - 1] = self.n_max - w
                p = xp.concat([p, xp.full(tuple(pad), fill, dtype=p.dtype)], axis=p.ndim - tail - 1)
            out.append(p)
        return self.merge(out, tail + 1)
