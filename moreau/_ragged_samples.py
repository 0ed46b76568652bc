r"""The sample side of the ragged objectives: per-bucket samples, the padded view, reweighting,
gathered mini-batches (see :mod:`moreau._ragged`)."""

from __future__ import annotations

import copy
from functools import cached_property

import numpy as np

from ._backend import to_numpy
from ._least_squares import real_array

__all__ = ["RaggedSamples"]


class RaggedSamples:
    """Mixin of the ragged objectives: ``layout`` (:class:`moreau._ragged_layout.Layout`) and
    ``parts``, one padded objective of the model class per size bucket, batch ``outer + (k_b,)``.

    The padded view (:attr:`X`, :attr:`y`, :attr:`weights`) is formed on demand, each time it is
    read, in the layout of the padded objective (every entry padded to ``n_max`` samples of weight
    0); no computation of the objective reads it.
    """

    _model: type | None = None  # the padded class: Logistic, Multinomial, LeastSquares
    _fill = 0.0  # the label of a padded sample (any valid label: its weight is 0)

    def _setup(self, layout, parts, outer, mu, options):
        p0 = parts[0]
        self.layout, self.parts, self._outer = layout, tuple(parts), tuple(outer)
        self.mu, self._options = mu, dict(options)
        self.xp, self.dtype, self.dim = p0.xp, p0.dtype, p0.dim
        for k in ("n_features", "n_classes", "_null_dim"):
            if hasattr(p0, k):
                setattr(self, k, getattr(p0, k))
        self.batch_shape = self._outer + layout.shape

    @property
    def sizes(self):
        """Samples per entry (host int64, shape ``layout.shape``: the batch without ``outer``)."""
        return self.layout.sizes

    # -- the padded view (formed on demand) ------------------------------------------------------
    @property
    def X(self):
        """The samples in the padded layout ``(*shape, n_max, d)`` (zero rows past ``n_i``)."""
        return self.layout.merge_padded([p.X for p in self.parts], tail=1)

    @property
    def y(self):
        """The labels (targets) in the padded layout ``(*shape, n_max)``."""
        return self.layout.merge_padded([p.y for p in self.parts], fill=self._fill)

    @property
    def weights(self):
        """The per-sample weights in the padded layout ``(*batch, n_max)`` (0 past ``n_i``)."""
        xp = self.xp
        ws = [
            xp.broadcast_to(p.weights, self._outer + (idx.size, width))
            for p, (idx, width) in zip(self.parts, self.layout.buckets, strict=True)
        ]
        return self.layout.merge_padded(ws)

    @property
    def _p(self):
        w = self.weights
        return w / self.xp.sum(w, axis=-1, keepdims=True)

    def padded(self):
        """The same objective in the padded layout: one object of the model class (every entry
        padded to ``n_max`` samples of weight 0), e.g. for code that reads ``X`` per call."""
        return self._model(self.X, self.y, mu=self.mu, weights=self.weights, **self._options)

    # -- new objectives from this one --------------------------------------------------------------
    def _rebuilt(self, parts, outer):
        """A copy with other parts (same layout and samples), the caches dropped."""
        new = copy.copy(self)
        for cls in type(self).__mro__:
            for k, v in vars(cls).items():
                if isinstance(v, cached_property):
                    new.__dict__.pop(k, None)
        new._setup(self.layout, parts, outer, self.mu, self._options)
        return new

    def with_weights(self, weights):
        """The same samples with new per-sample weights in the padded layout ``(..., *shape, n_max)``
        (leading axes may extend the batch: one set per draw), 0 past each entry's ``n_i``
        samples; validated as the model's ``weights`` (finite, >= 0, a positive sum per entry).
        Returns a ragged objective of the same type."""
        xp, lay = self.xp, self.layout
        w = real_array(weights, xp, "weights", dtype=self.dtype)
        k = len(lay.shape)
        if w.ndim < k + 1 or w.shape[-1] != lay.n_max:
            raise ValueError(
                f"weights must have shape (..., *shape, n_max) = (..., {', '.join(map(str, lay.shape))}, "
                f"{lay.n_max}), the padded layout (got shape {tuple(w.shape)})"
            )
        try:
            full = tuple(np.broadcast_shapes(tuple(w.shape[:-1]), lay.shape))
        except ValueError:
            raise ValueError(
                f"weights batch shape {tuple(w.shape[:-1])} does not broadcast with the entries' "
                f"shape {lay.shape}"
            ) from None
        if not bool(xp.all(w >= 0)):
            raise ValueError(f"weights must be >= 0 (got min {float(xp.min(w)):.6g})")
        past = xp.arange(lay.n_max) >= xp.asarray(lay.sizes)[..., None]
        if bool(xp.any(past & (w != 0))):
            i = tuple(int(j) for j in np.argwhere(np.broadcast_to(to_numpy(past & (w != 0)), w.shape))[0])
            raise ValueError(
                f"weights must be 0 past each entry's n_i samples (the padding); got "
                f"{float(to_numpy(w)[i]):.6g} at index {i}"
            )
        total = xp.sum(w, axis=-1)
        if not bool(xp.all(total > 0)):
            i = tuple(int(j) for j in np.argwhere(np.asarray(to_numpy(total)) <= 0)[0])
            raise ValueError(
                f"weights must have a positive sum for every entry (all zero at batch index {i})"
            )
        outer = full[: len(full) - k]
        parts = [
            p.with_weights(wb[..., :width])
            for p, wb, (_, width) in zip(self.parts, lay.split(w, 1, ()), lay.buckets, strict=True)
        ]
        return self._rebuilt(parts, outer)

    def _draw_rows(self, u):
        r"""The mini-batch objective of the rows drawn by the uniforms ``u`` (host, ``S + (size,)``,
        ``S`` broadcasting against the batch): per entry the ``k``-th of its samples of positive
        weight, ``k = min(floor(u n_valid), n_valid - 1)``, gathered into one padded objective of the
        model class with unit weights (batch ``S`` broadcast with the batch, ``size`` rows each):
        the rows the padded layout's draw (:func:`moreau.fl._pfedme._minibatch`) gathers."""
        xp, lay = self.xp, self.layout
        u = np.asarray(u, dtype=float)
        full = tuple(np.broadcast_shapes(u.shape[:-1], self.batch_shape))
        u = np.broadcast_to(u, full + u.shape[-1:])
        Xs, ys = [], []
        for p, ub, (idx, width) in zip(self.parts, lay.split(u, 1, self._outer), lay.buckets, strict=True):
            valid = np.broadcast_to(np.asarray(to_numpy(p.weights)) > 0, self._outer + (idx.size, width))
            nvalid = valid.sum(axis=-1)
            k = np.minimum((ub * nvalid[..., None]).astype(np.int64), nvalid[..., None] - 1)
            if not np.array_equal(valid, np.arange(width) < nvalid[..., None]):  # not a prefix
                k = np.take_along_axis(
                    np.broadcast_to(np.argsort(~valid, axis=-1, kind="stable"), k.shape[:-1] + (width,)),
                    k,
                    axis=-1,
                )
            k = xp.asarray(k)
            X = xp.broadcast_to(p.X, tuple(k.shape[:-1]) + tuple(p.X.shape[-2:]))
            Xs.append(xp.take_along_axis(X, xp.broadcast_to(k[..., None], tuple(k.shape) + (1,)), axis=-2))
            ys.append(xp.take_along_axis(xp.broadcast_to(p.y, tuple(k.shape[:-1]) + (width,)), k, axis=-1))
        return self._model(lay.merge(Xs, 2), lay.merge(ys, 1), mu=self.mu, **self._options)
