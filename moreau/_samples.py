"""Shared pieces of the sample-based losses (logistic, multinomial): data checks and constants."""

from __future__ import annotations

import copy
import math
from functools import cached_property

import numpy as np
from array_api_compat import is_array_api_obj

from ._backend import as_array, constructor_namespace, safe_norm
from ._least_squares import check_weights
from ._objective import Objective

__all__ = ["SampleLoss"]


class SampleLoss(Objective):
    """An l2-regularised weighted average of per-sample losses of ``x_j^T W``.

    Subclasses call :meth:`_init_samples` and set ``_curvature_factor``, the
    sup of the per-sample loss curvature (1/4 logistic, 1/2 softmax), so that
    ``curvature_bounds() = (mu, factor * lambda_max(X^T W X)/sum w + mu)``.
    """

    _curvature_factor: float | None = None

    def _init_samples(self, X, y, mu, weights):
        """Validate and store ``X (..., n, d)``, ``y (..., n)``, ``mu``, ``weights``; return ``(xp, y)``."""
        xp = constructor_namespace(X=X, y=y, mu=mu, weights=weights)
        X = as_array(X, xp, "X", host_ok=True)
        dtype = X.dtype
        _numeric_labels(y)
        y = as_array(y, xp, "y", dtype=dtype, host_ok=True)
        mu = as_array(mu, xp, "mu", dtype=dtype, host_ok=True)
        if X.ndim < 2:
            raise ValueError(f"X must have shape (..., n, d) (got shape {tuple(X.shape)})")
        n = X.shape[-2]
        if n == 0 or X.shape[-1] == 0:
            raise ValueError(f"X must have n >= 1 samples and d >= 1 features (got shape {tuple(X.shape)})")
        if y.ndim < 1 or y.shape[-1] != n:
            raise ValueError(f"y must have shape (..., n) with n={n} rows of X (got shape {tuple(y.shape)})")
        weights = check_weights(weights, xp, n, dtype)
        if not bool(xp.all(mu >= 0)):
            raise ValueError(f"mu must be >= 0 (got {float(xp.min(mu)):g})")
        try:
            shape = np.broadcast_shapes(
                tuple(X.shape[:-2]), tuple(y.shape[:-1]), tuple(weights.shape[:-1]), tuple(mu.shape)
            )
        except ValueError:
            raise ValueError(
                f"batch shapes do not broadcast: X {tuple(X.shape[:-2])}, y {tuple(y.shape[:-1])}, "
                f"weights {tuple(weights.shape[:-1])}, mu {tuple(mu.shape)}"
            ) from None
        self.xp, self.dtype, self.batch_shape = xp, dtype, tuple(shape)
        self.X, self.mu, self.weights = X, mu, weights
        self._p = weights / xp.sum(weights, axis=-1, keepdims=True)
        self._check_scale()
        return xp, y

    def _check_scale(self):
        """Refuse ``X`` (or ``mu``) so large that the curvature bound overflows the dtype:
        ``factor max_j ||x_j||^2 + mu`` bounds every entry of the Hessian, the trace bound
        :meth:`_smoothness_bound` and the certificates' sums (``p_j <= 1``); past the
        largest float they would be inf or NaN (an eigensolver failure, a NaN bound)."""
        xp = self.xp
        fi = xp.finfo(self.dtype)
        n, d = self.X.shape[-2], self.X.shape[-1]
        if self._rownorm.size == 0:  # no client or no sample (a batch of m = 0): nothing can overflow
            return
        r = float(xp.max(self._rownorm))
        grow = self._curvature_factor * (1 + 4 * (n + d + 8) * float(fi.eps))
        top = r * r * grow  # Python floats: inf, never an error
        if not top < float(fi.max):
            limit = math.sqrt(float(fi.max)) / math.sqrt(grow)
            raise ValueError(
                f"X is too large for {self.dtype}: its largest row norm {r:.3g} exceeds {limit:.3g}, "
                "where its square (the curvature bound, the Hessian) overflows; rescale X"
            )
        mu = float(xp.max(self.mu))
        if not top + mu < float(fi.max):
            raise ValueError(
                f"mu={mu:.3g} plus the curvature bound of X ({top:.3g}) overflows "
                f"{self.dtype}; rescale mu and X"
            )

    @cached_property
    def _rownorm(self):
        return safe_norm(self.X, self.xp)

    @cached_property
    def _L(self):
        xp = self.xp
        G = (xp.matrix_transpose(self.X) * self._p[..., None, :]) @ self.X
        return self._curvature_factor * xp.linalg.eigvalsh(G)[..., -1] + self.mu

    def _smoothness_bound(self):
        """``factor * sum_j p_j ||x_j||^2 + mu`` (the trace bound, >= L, no eigenvalues)."""
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        n, d = self.X.shape[-2], self.X.shape[-1]
        r2 = xp.sum(self._p * self._rownorm**2, axis=-1)
        return self._curvature_factor * r2 * (1 + 2 * (n + d + 4) * eps) + self.mu

    def strong_convexity(self):
        """``mu``: needs no eigenvalues."""
        xp = self.xp
        return xp.broadcast_to(self.mu, self.batch_shape) + xp.zeros(self.batch_shape, dtype=self.dtype)

    def curvature_bounds(self):
        return self.strong_convexity(), self.xp.broadcast_to(self._L, self.batch_shape)

    def with_weights(self, weights):
        """The same samples with new per-sample weights ``(..., n)`` (e.g. mini-batch counts).

        Validated as the constructor's ``weights`` (finite, >= 0, a positive sum
        per client); leading axes may extend the batch (one set per draw); host
        numpy weights are accepted on any backend.  Everything that does not
        depend on the weights (validated ``X``, labels, row norms)
        is shared with ``self``; caches that do (``L``) are dropped.  Returns
        an objective of the same type.
        """
        xp = self.xp
        w = check_weights(weights, xp, self.X.shape[-2], self.dtype, required=True)
        try:
            shape = np.broadcast_shapes(
                tuple(self.X.shape[:-2]), tuple(self.y.shape[:-1]), tuple(w.shape[:-1]), tuple(self.mu.shape)
            )
        except ValueError:
            raise ValueError(
                f"weights batch shape {tuple(w.shape[:-1])} does not broadcast with X "
                f"{tuple(self.X.shape[:-2])}, y {tuple(self.y.shape[:-1])}, mu "
                f"{tuple(self.mu.shape)}"
            ) from None
        new = copy.copy(self)
        for cls in type(self).__mro__:  # drop every cache except the weight-free ones
            for k, v in vars(cls).items():
                if isinstance(v, cached_property) and k not in _WEIGHT_FREE:
                    new.__dict__.pop(k, None)
        new.weights, new._p, new.batch_shape = w, w / xp.sum(w, axis=-1, keepdims=True), tuple(shape)
        return new


_WEIGHT_FREE = frozenset({"_rownorm"})  # caches that with_weights may share


def _numeric_labels(y):
    """``TypeError`` naming ``y`` for labels that are not numbers (strings, objects)."""
    if is_array_api_obj(y) and not isinstance(y, (np.ndarray, np.generic)):
        return  # a non-numpy array library: as_array checks its dtype
    kind = np.asarray(y).dtype
    if kind.kind not in "biufc":  # complex: as_array says "must be real"
        first = np.asarray(y).reshape(-1)[:1].tolist()
        raise TypeError(
            f"y must hold numeric labels (got dtype {kind}"
            + (f", first label {first[0]!r}" if first else "")
            + "); map the classes to "
            "integers first, e.g. np.unique(y, return_inverse=True)[1]"
        )
