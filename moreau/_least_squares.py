r"""Weighted, ridge-regularised least squares built from samples: a Quadratic."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from array_api_compat import array_namespace, is_array_api_obj

from ._backend import as_array, constructor_namespace, to_numpy
from ._matrices import matvec
from ._objective import Objective, _broadcast
from ._quadratic import Quadratic
from ._typing import Array, DType, Namespace

__all__ = ["LeastSquares", "RowsLeastSquares", "point_view"]


class LeastSquares(Quadratic):
    r"""A batch of weighted least-squares losses

    .. math:: f(\theta) = \frac{\sum_j w_j \tfrac12 (y_j - x_j^\top\theta)^2}{\sum_j w_j}
              + \frac{\mu}{2}\|\theta\|^2
              = \tfrac12\theta^\top A\theta - b^\top\theta + c,

    with :math:`A = X^\top W X/\sum_j w_j + \mu I`, :math:`b = X^\top W y/\sum_j w_j`
    and :math:`c = \sum_j w_j y_j^2/(2\sum_j w_j)`, ``W = diag(w)``.

    ``X`` has shape ``(..., n, d)`` (rows :math:`x_j`), ``y`` ``(..., n)``,
    ``mu`` is :math:`\mu` (a scalar or ``(...)``, >= 0) and ``weights``
    ``(..., n)`` the :math:`w_j` (>= 0, a positive sum per client; default
    all ones).  Zero weights pad clients of different sizes into one batch:
    a row of weight 0 contributes nothing, exactly as if it were dropped
    (its features and target must still be finite).  The batch shape is the
    broadcast of ``X.shape[:-2]``, ``y.shape[:-1]``, ``weights.shape[:-1]``
    and ``mu.shape``.

    A subclass of :class:`~moreau.Quadratic`: the constants (curvature
    bounds, smoothness, strong convexity) are exact, from the cached
    eigendecomposition of ``A``, and the prox
    :math:`\mathrm{argmin}_\theta f(\theta) + \tfrac{\lambda}{2}\|\theta - w\|^2
    = (A + \lambda I)^{-1}(b + \lambda w)` is the closed form of the parent.
    The samples stay available as ``.X``, ``.y``, ``.weights`` and ``.mu``;
    :meth:`with_weights` reweights them (a mini-batch).

    References: the FedProx analysis, Section 3 (the empirical risk
    :math:`L_i(w, S_i) = \sum_j \ell(w, z_{ij})/n_i`, here with the squared loss
    and per-sample weights); pFedMe, Section 3.1 (the prox of :math:`f_i`).
    """

    def __init__(self, X: Any, y: Any, mu: Any = 0.0, weights: Any = None) -> None:
        xp = constructor_namespace(X=X, y=y, mu=mu, weights=weights)
        X = real_array(X, xp, "X")
        dtype = X.dtype
        y = real_array(y, xp, "y", dtype=dtype)
        mu = real_array(mu, xp, "mu", dtype=dtype)
        if X.ndim < 2:
            raise ValueError(f"X must have shape (..., n, d) (got shape {tuple(X.shape)})")
        n = X.shape[-2]
        if n < 1 or X.shape[-1] < 1:
            raise ValueError(f"X must have at least one row and one column (got shape {tuple(X.shape)})")
        if y.ndim < 1 or y.shape[-1] != n:
            raise ValueError(f"y must have shape (..., n) with n={n} rows of X (got shape {tuple(y.shape)})")
        if not bool(xp.all(mu >= 0)):
            raise ValueError(f"mu must be >= 0 (got {float(xp.min(mu)):g})")
        weights = check_weights(weights, xp, n, dtype)
        self._build(xp, X, y, mu, weights)

    def _build(self, xp: Namespace, X: Array, y: Array, mu: Array, weights: Array) -> None:
        """Form ``A, b, c`` from validated samples and initialise the Quadratic."""
        try:
            shape = np.broadcast_shapes(
                tuple(X.shape[:-2]), tuple(y.shape[:-1]), tuple(weights.shape[:-1]), tuple(mu.shape)
            )
        except ValueError:
            raise ValueError(
                f"batch shapes do not broadcast: X {tuple(X.shape[:-2])}, y {tuple(y.shape[:-1])}, "
                f"weights {tuple(weights.shape[:-1])}, mu {tuple(mu.shape)}"
            ) from None
        p = weights / xp.sum(weights, axis=-1, keepdims=True)
        d = X.shape[-1]
        Xt = xp.matrix_transpose(X)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
            G = (Xt * p[..., None, :]) @ X
            G = (G + xp.matrix_transpose(G)) / 2  # exact symmetry: no rounding asymmetry for large n
            A = G + mu[..., None, None] * xp.eye(d, dtype=X.dtype)
            b = (Xt @ (p * y)[..., None])[..., 0]
            c = xp.sum(p * y * y, axis=-1) / 2
        _check_formed(xp, X, y, mu, A, b, c)
        Quadratic.__init__(self, A, b, c)
        self.batch_shape = tuple(shape)
        self.X, self.y, self.mu, self.weights = X, y, mu, weights

    def grad(self, theta: Array) -> Array:
        """``A theta - b`` (:meth:`Quadratic.grad`, the same bits) without the defensive copy of ``theta``
        (and, for points without extra leading axes, without ``matvec``'s bookkeeping: its product)."""
        return self._grad(point_view(self, theta))

    def _grad(self, theta: Array) -> Array:  # at a point already checked (moreau.fl's own iterates)
        A = self.A
        return ((A @ theta[..., None])[..., 0] if theta.ndim < A.ndim else matvec(A, theta)) - self.b

    def with_weights(self, weights: Any) -> LeastSquares:
        r"""The same samples with new per-sample weights ``(..., n)`` (e.g. a mini-batch).

        ``weights`` are validated as in the constructor (finite, >= 0, a
        positive sum per client) and may add leading batch axes (one set of
        weights per draw); host numpy weights are accepted on any backend.
        ``X``, ``y`` and ``mu`` are reused without re-validation; ``A``,
        ``b``, ``c`` and the eigendecomposition depend on the weights and are
        recomputed.  Returns a :class:`LeastSquares`.
        """
        xp = self.xp
        w = check_weights(weights, xp, self.X.shape[-2], self.dtype, required=True)
        new = object.__new__(type(self))
        new._build(xp, self.X, self.y, self.mu, w)
        return new


class RowsLeastSquares(LeastSquares):
    r""":class:`LeastSquares` on rows an objective has validated (``moreau.fl``'s mini-batches):
    nothing is checked again, the moments ``A, b, c`` are formed when first read (the prox, the
    constants: then as :class:`LeastSquares` forms them), and the gradient
    :math:`X^\top (p \odot (X\theta - y)) + \mu\theta`, the value and the Hessian-vector product
    come from the rows: ``O(k d)`` per entry for ``k`` rows where ``A`` costs ``O(k d^2)``."""

    def __init__(
        self, xp: Namespace, X: Array, y: Array, mu: Array, weights: Array, batch_shape: tuple[int, ...]
    ) -> None:
        self.xp, self.dtype, self.dim, self.batch_shape = xp, X.dtype, X.shape[-1], tuple(batch_shape)
        self.X, self.y, self.mu, self.weights = X, y, mu, weights
        self._p = weights / xp.sum(weights, axis=-1, keepdims=True)

    @cached_property
    def _moments(self) -> tuple[Array, Array, Array]:
        q = object.__new__(LeastSquares)
        q._build(self.xp, self.X, self.y, self.mu, self.weights)
        return q.A, q.b, q.c

    A = property(lambda self: self._moments[0])
    b = property(lambda self: self._moments[1])
    c = property(lambda self: self._moments[2])

    def _residual(self, theta: Array) -> Array:
        return (self.X @ theta[..., None])[..., 0] - self.y

    def _grad(self, theta: Array) -> Array:
        r = self._p * self._residual(theta)
        return (self.xp.matrix_transpose(self.X) @ r[..., None])[..., 0] + self.mu[..., None] * theta

    def value(self, theta: Array) -> Array:
        theta = point_view(self, theta)
        r = self._residual(theta)
        return self.xp.sum(self._p * r * r, axis=-1) / 2 + self.mu / 2 * self.xp.vecdot(theta, theta)

    def hvp(self, theta: Array, v: Array) -> Array:
        point_view(self, theta)
        v = point_view(self, v, "v")
        Xv = self._p * (self.X @ v[..., None])[..., 0]
        return (self.xp.matrix_transpose(self.X) @ Xv[..., None])[..., 0] + self.mu[..., None] * v


def _check_formed(xp: Namespace, X: Array, y: Array, mu: Array, A: Array, b: Array, c: Array) -> None:
    """``ValueError`` naming the samples whose moments ``A, b, c`` overflow the dtype."""

    def big(v: Array) -> str:
        return f"{float(xp.max(xp.abs(v))):.3g}"

    lim = f"{float(xp.finfo(X.dtype).max):.3g}"
    if not bool(xp.all(xp.isfinite(A))):
        raise ValueError(
            f"X is too large for {X.dtype}: A = X^T W X / sum w + mu I overflows (largest |X| "
            f"{big(X)}, largest mu {big(mu)}; the squares must stay below {lim}); rescale X"
        )
    if not bool(xp.all(xp.isfinite(b))):
        raise ValueError(
            f"X and y are too large for {X.dtype}: b = X^T W y / sum w overflows (largest |X| "
            f"{big(X)}, largest |y| {big(y)}); rescale them"
        )
    if not bool(xp.all(xp.isfinite(c))):
        raise ValueError(
            f"y is too large for {X.dtype}: c = sum_j w_j y_j^2 / (2 sum w) overflows (largest |y| "
            f"{big(y)}); rescale y"
        )


def check_weights(weights: Any, xp: Namespace, n: int, dtype: DType, *, required: bool = False) -> Array:
    """Validated per-sample weights ``(..., n)``: finite, >= 0, a positive and finite sum per
    client (a sum that overflows would make every normalised weight ``w / sum w`` zero).

    ``None`` gives ones ``(n,)`` unless ``required``.
    """
    if weights is None:
        if required:
            raise TypeError("weights must be an array of shape (..., n) (got None)")
        return xp.ones((n,), dtype=dtype)
    weights = real_array(weights, xp, "weights", dtype=dtype)
    if weights.ndim < 1 or weights.shape[-1] != n:
        raise ValueError(f"weights must have shape (..., n) with n={n} (got shape {tuple(weights.shape)})")
    if not bool(xp.all(weights >= 0)):
        raise ValueError(f"weights must be >= 0 (got min {float(xp.min(weights)):.6g})")
    with np.errstate(over="ignore"):  # an overflow is reported below, naming the client
        total = xp.sum(weights, axis=-1)
    if not bool(xp.all(total > 0)):
        i = tuple(int(k) for k in np.argwhere(np.asarray(to_numpy(total)) <= 0)[0])
        raise ValueError(f"weights must have a positive sum for every client (all zero at batch index {i})")
    if not bool(xp.all(xp.isfinite(total))):  # the normalised weights w / sum w would all be 0
        i = tuple(int(k) for k in np.argwhere(~np.isfinite(np.asarray(to_numpy(total))))[0])
        raise ValueError(
            f"weights must have a finite sum for every client: the sum overflows {dtype} at "
            f"batch index {i} (largest weight {float(xp.max(weights)):.3g}); rescale them "
            "(only their ratios matter)"
        )
    return weights


def point_view(f: Objective, theta: Any, name: str = "theta") -> Array:
    """``f._point(theta)`` without its defensive copy, for evaluations that keep nothing of
    ``theta`` (gradients, Hessian-vector products: one array fewer per call): the same checks
    (real, finite, shape ``(..., d)`` broadcasting with the batch shape)."""
    theta = as_array(theta, f.xp, name, dtype=f.dtype, copy=False)
    if theta.ndim == 0 or theta.shape[-1] != f.dim:
        raise ValueError(f"{name} must have shape (..., d) with d={f.dim} (got shape {tuple(theta.shape)})")
    _broadcast(f.batch_shape, tuple(theta.shape[:-1]), name)
    return theta


def real_array(x: Any, xp: Namespace, name: str, *, dtype: DType = None) -> Array:
    """``as_array`` (host data accepted) after refusing non-real input *before* any cast:
    a complex or non-numeric array is a ``TypeError``, never silently truncated."""
    if not is_array_api_obj(x) or isinstance(x, (np.ndarray, np.generic)):
        kind = np.asarray(x).dtype.kind
        if kind == "c":
            raise TypeError(f"{name} must be real (got {np.asarray(x).dtype})")
        if kind not in "biuf":
            raise TypeError(f"{name} must be a real numeric array (got dtype {np.asarray(x).dtype})")
    elif array_namespace(x).isdtype(x.dtype, "complex floating"):
        raise TypeError(f"{name} must be real (got {x.dtype})")
    return as_array(x, xp, name, dtype=dtype, host_ok=True)
