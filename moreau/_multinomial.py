r"""Weighted multinomial (softmax) logistic regression, batched over clients."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ._backend import as_array, constructor_namespace, safe_norm, to_numpy
from ._objective import Objective

__all__ = ["Multinomial"]


class Multinomial(Objective):
    r"""A batch of softmax (multinomial logistic) losses with C classes

    .. math:: f(\theta) = \frac{\sum_j w_j \big(\log\sum_c e^{(W^\top x_j)_c} - (W^\top x_j)_{y_j}\big)}{\sum_j w_j}
              + \frac{\mu}{2}\|\theta\|^2,

    the parameter matrix :math:`W \in \mathbb{R}^{d\times C}` flattened row-major into
    ``theta`` of length ``D = d*C`` (``theta[k*C + c] = W[k, c]``; use
    :meth:`matrix` / ``reshape``).  ``X`` ``(..., n, d)``; ``y`` ``(..., n)``
    integer labels in ``{0, ..., C-1}`` (floats with integral values accepted);
    ``n_classes`` C (default ``max(y) + 1``, at least 2); ``mu`` >= 0;
    ``weights`` ``(..., n)`` as in :class:`~moreau.Logistic` (zeros pad clients).

    Hessian: :math:`\sum_j p_j (\mathrm{diag}(\pi_j) - \pi_j\pi_j^\top)\otimes x_j x_j^\top + \mu I`
    (:math:`\pi_j` the softmax probabilities, ordered to match ``theta``).
    Curvature bounds ``(mu, lambda_max(X^T W X)/(2 sum w) + mu)`` are valid
    bounds, not exact: ``lambda_max(diag(pi) - pi pi^T) <= 1/2``, reached only
    when the mass sits on two classes.  Softmax is invariant to adding one
    vector to every column of W, so with ``mu = 0`` the loss is not strongly
    convex and a prox needs ``lam > 0`` only.

    References: THEOREMS.md, "Conventions" (multinomial logistic: the model
    of the pFedMe and FedProx experiments).
    """

    def __init__(self, X, y, n_classes=None, mu=0.0, weights=None):
        xp = constructor_namespace(X=X, y=y, mu=mu, weights=weights)
        X = as_array(X, xp, "X", host_ok=True)
        dtype = X.dtype
        y = as_array(y, xp, "y", dtype=dtype, host_ok=True)
        mu = as_array(mu, xp, "mu", dtype=dtype, host_ok=True)
        if X.ndim < 2:
            raise ValueError(f"X must have shape (..., n, d) (got shape {tuple(X.shape)})")
        n, d = X.shape[-2:]
        if y.ndim < 1 or y.shape[-1] != n:
            raise ValueError(f"y must have shape (..., n) with n={n} rows of X (got shape {tuple(y.shape)})")
        yh = to_numpy(y)
        if np.any(yh != np.round(yh)) or np.any(yh < 0):
            bad = yh[(yh != np.round(yh)) | (yh < 0)][0]
            raise ValueError(f"y must hold integer class labels 0..C-1 (got {float(bad):g})")
        C = int(yh.max()) + 1 if n_classes is None else n_classes
        if isinstance(C, bool) or not isinstance(C, int | np.integer) or C < 2:
            raise ValueError(f"n_classes must be an integer >= 2 (got {C!r}"
                             + (" = max(y) + 1)" if n_classes is None else ")"))
        if yh.max() >= C:
            raise ValueError(f"y must hold labels < n_classes={C} (got {float(yh.max()):g})")
        if weights is None:
            weights = xp.ones((n,), dtype=dtype)
        else:
            weights = as_array(weights, xp, "weights", dtype=dtype, host_ok=True)
            if weights.ndim < 1 or weights.shape[-1] != n:
                raise ValueError(f"weights must have shape (..., n) with n={n} (got shape {tuple(weights.shape)})")
            if not bool(xp.all(weights >= 0)) or not bool(xp.all(xp.sum(weights, axis=-1) > 0)):
                raise ValueError("weights must be >= 0 with a positive sum for every client")
        if not bool(xp.all(mu >= 0)):
            raise ValueError(f"mu must be >= 0 (got {float(xp.min(mu)):g})")
        try:
            shape = np.broadcast_shapes(tuple(X.shape[:-2]), tuple(y.shape[:-1]),
                                        tuple(weights.shape[:-1]), tuple(mu.shape))
        except ValueError:
            raise ValueError(f"batch shapes do not broadcast: X {tuple(X.shape[:-2])}, y {tuple(y.shape[:-1])}, "
                             f"weights {tuple(weights.shape[:-1])}, mu {tuple(mu.shape)}") from None
        self.xp, self.dtype, self.dim, self.batch_shape = xp, dtype, d * C, tuple(shape)
        self.X, self.y, self.mu, self.weights = X, y, mu, weights
        self.n_features, self.n_classes = d, C
        self._Y = xp.astype(y[..., None] == xp.arange(C, dtype=dtype), dtype)  # one-hot (..., n, C)
        self._p = weights / xp.sum(weights, axis=-1, keepdims=True)

    def matrix(self, theta):
        """``theta`` ``(..., d*C)`` as the parameter matrices ``(..., d, C)``."""
        theta = self._point(theta)
        return self.xp.reshape(theta, tuple(theta.shape[:-1]) + (self.n_features, self.n_classes))

    def _probs(self, theta):
        """(logits, log-sum-exp, softmax probabilities), shapes (..., n, C), (..., n), (..., n, C)."""
        xp = self.xp
        Z = self.X @ self.matrix(theta)
        m = xp.max(Z, axis=-1, keepdims=True)
        e = xp.exp(Z - m)
        s = xp.sum(e, axis=-1, keepdims=True)
        return Z, (m + xp.log(s))[..., 0], e / s

    def value(self, theta):
        xp = self.xp
        Z, lse, _ = self._probs(theta)
        loss = xp.sum(self._p * (lse - xp.sum(self._Y * Z, axis=-1)), axis=-1)
        return loss + self.mu / 2 * xp.vecdot(theta, theta)

    def grad(self, theta):
        xp = self.xp
        _, _, P = self._probs(theta)
        G = xp.matrix_transpose(self.X) @ (self._p[..., None] * (P - self._Y))  # (..., d, C)
        return xp.reshape(G, tuple(G.shape[:-2]) + (self.dim,)) + self.mu[..., None] * theta

    def hess(self, theta):
        xp = self.xp
        _, _, P = self._probs(theta)
        C, d = self.n_classes, self.n_features
        S = (P[..., :, None] * xp.eye(C, dtype=self.dtype)) - P[..., :, None] * P[..., None, :]  # (..., n, C, C)
        Q = self._p[..., None, None] * S
        k = Q.ndim
        Q = xp.permute_dims(Q, tuple(range(k - 3)) + (k - 2, k - 1, k - 3))  # (..., C, C, n)
        Xt = xp.matrix_transpose(self.X)[..., None, None, :, :]                # (..., 1, 1, d, n)
        blocks = (Xt * Q[..., None, :]) @ self.X[..., None, None, :, :]       # (..., C, C, d, d)
        k = blocks.ndim
        H = xp.permute_dims(blocks, tuple(range(k - 4)) + (k - 2, k - 4, k - 1, k - 3))  # (..., d, C, d, C)
        H = xp.reshape(H, tuple(H.shape[:-4]) + (self.dim, self.dim))
        return H + self.mu[..., None, None] * xp.eye(self.dim, dtype=self.dtype)

    @cached_property
    def _L(self):
        xp = self.xp
        G = (xp.matrix_transpose(self.X) * self._p[..., None, :]) @ self.X
        return xp.linalg.eigvalsh(G)[..., -1] / 2 + self.mu

    def curvature_bounds(self):
        """``(mu, lambda_max(X^T W X)/(2 sum w) + mu)``: valid bounds (the upper one is not attained in general)."""
        xp = self.xp
        return (xp.broadcast_to(self.mu, self.batch_shape) + xp.zeros(self.batch_shape, dtype=self.dtype),
                xp.broadcast_to(self._L, self.batch_shape))

    def _grad_error_scale(self, theta):
        xp = self.xp
        _, _, P = self._probs(theta)
        r = safe_norm(self.X, xp)
        tn = safe_norm(theta, xp)
        return xp.sum(self._p * r * safe_norm(P - self._Y, xp), axis=-1) + self.smoothness() * tn
