r"""Weighted multinomial (softmax) logistic regression, batched over clients."""
from __future__ import annotations

import numpy as np

from ._backend import safe_norm, to_numpy
from ._newton_batch import take_object
from ._samples import SampleLoss

__all__ = ["Multinomial"]


class Multinomial(SampleLoss):
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

    References: docs/catalogue.md, "Conventions" (multinomial logistic: the model
    of the pFedMe and FedProx experiments).
    """

    _curvature_factor = 0.5  # sup of lambda_max(diag(pi) - pi pi^T)

    def __init__(self, X, y, n_classes=None, mu=0.0, weights=None):
        xp, y = self._init_samples(X, y, mu, weights)
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
        self.y = y
        self.n_features, self.n_classes = self.X.shape[-1], int(C)
        self.dim = self.n_features * self.n_classes
        self._Y = xp.astype(y[..., None] == xp.arange(C, dtype=self.dtype), self.dtype)  # one-hot (..., n, C)

    def matrix(self, theta):
        """``theta`` ``(..., d*C)`` as the parameter matrices ``(..., d, C)``."""
        theta = self._point(theta)
        return self.xp.reshape(theta, tuple(theta.shape[:-1]) + (self.n_features, self.n_classes))

    def _probs(self, theta, others=False):
        """(logits, log-sum-exp, softmax probabilities[, 1 - probabilities]), shapes
        (..., n, C), (..., n), (..., n, C)[, (..., n, C)].

        ``1 - pi_c`` is formed as ``sum_{c' != c} e_{c'} / s``, never as a
        difference: it is what ``P - Y`` (at the label) and the Hessian's
        diagonal ``pi_c (1 - pi_c)`` need, and ``1 - pi_c`` cancels to zero
        when ``pi_c`` is close to 1.  ``others="label"``: only at each sample's
        label, shape (..., n, 1) (what the gradient needs; O(nC) instead of O(nC^2)),
        the same sum with the label's term replaced by an exact zero.
        """
        xp = self.xp
        Z = self.X @ self.matrix(theta)
        m = xp.max(Z, axis=-1, keepdims=True)
        e = xp.exp(Z - m)
        s = xp.sum(e, axis=-1, keepdims=True)
        out = (Z, (m + xp.log(s))[..., 0], e / s)
        if not others:
            return out
        if others == "label":
            rest = xp.sum(e * (1 - self._Y), axis=-1, keepdims=True)  # sum over c' != y_j
            return out + (rest / s,)
        C = self.n_classes
        off = 1 - xp.eye(C, dtype=self.dtype)
        rest = xp.sum(e[..., None, :] * off, axis=-1)  # sum over c' != c
        return out + (rest / s,)

    def _residual(self, P, Q):
        """``P - Y`` with the label entry ``-(1 - pi_y)`` taken from ``Q`` (no cancellation)."""
        return self.xp.where(self._Y > 0, -Q, P)

    def value(self, theta):
        xp = self.xp
        Z, lse, _ = self._probs(theta)
        loss = xp.sum(self._p * (lse - xp.sum(self._Y * Z, axis=-1)), axis=-1)
        return loss + self.mu / 2 * xp.vecdot(theta, theta)

    def grad(self, theta):
        xp = self.xp
        theta = self._point(theta)
        _, _, P, Q = self._probs(theta, others="label")
        G = xp.matrix_transpose(self.X) @ (self._p[..., None] * self._residual(P, Q))  # (..., d, C)
        return xp.reshape(G, tuple(G.shape[:-2]) + (self.dim,)) + self.mu[..., None] * theta

    def hess(self, theta):
        xp = self.xp
        _, _, P, Q = self._probs(theta, others=True)
        C = self.n_classes
        eye = xp.eye(C, dtype=self.dtype)
        # diag(pi) - pi pi^T with the diagonal pi_c (1 - pi_c) formed from Q (no cancellation)
        S = eye * (P * Q)[..., :, None] - (1 - eye) * (P[..., :, None] * P[..., None, :])  # (..., n, C, C)
        Q = self._p[..., None, None] * S
        k = Q.ndim
        Q = xp.permute_dims(Q, tuple(range(k - 3)) + (k - 2, k - 1, k - 3))  # (..., C, C, n)
        Xt = xp.matrix_transpose(self.X)[..., None, None, :, :]                # (..., 1, 1, d, n)
        blocks = (Xt * Q[..., None, :]) @ self.X[..., None, None, :, :]       # (..., C, C, d, d)
        k = blocks.ndim
        H = xp.permute_dims(blocks, tuple(range(k - 4)) + (k - 2, k - 4, k - 1, k - 3))  # (..., d, C, d, C)
        H = xp.reshape(H, tuple(H.shape[:-4]) + (self.dim, self.dim))
        return H + self.mu[..., None, None] * xp.eye(self.dim, dtype=self.dtype)

    def _take(self, idx, shape):
        """Newton's working copy for the entries ``idx`` of the batch ``shape`` (see
        :meth:`Objective._take`); ``L`` is taken when already computed, else computed
        for those entries only if needed."""
        self._rownorm  # noqa: B018  (computed once on the whole batch, then taken)
        arrays = {"X": 2, "y": 1, "_Y": 2, "_p": 1, "mu": 0, "_rownorm": 1, "_L": 0}
        return take_object(self, idx, shape, arrays)

    def curvature_bounds(self):
        """``(mu, lambda_max(X^T W X)/(2 sum w) + mu)``: valid bounds (the upper one is not attained in general)."""
        return super().curvature_bounds()

    def _grad_error_scale(self, theta):
        xp = self.xp
        _, _, P = self._probs(theta)
        r = self._rownorm
        tn = safe_norm(theta, xp)
        return xp.sum(self._p * r * safe_norm(P - self._Y, xp), axis=-1) + self.smoothness() * tn

    def _grad_rounding(self, theta):
        r"""Rigorous bound on ``||fl(grad f(theta)) - grad f(theta)||`` (Higham-style).

        ``grad = vec(X^T R) + mu theta``, ``R_j = p_j (pi_j - y_j)``; ``u`` the unit
        roundoff, :math:`\gamma_k = k u/(1-k u)`, ``r_j >= ||x_j||``:

        * logits: :math:`\|\hat z_j - z_j\| \le \gamma_d r_j \|\theta\|`, moved to the
          probabilities with the softmax Jacobian's norm ``<= 1/2``;
        * ``exp(z_c - max z)``: relative ``8u + u |z_c - max z|`` (the shift's rounding,
          capped where both values underflow), the sums ``gamma_C``, the division ``u``;
          ``pi - y`` is formed without a difference at the label, so each entry
          keeps that relative error; ``p`` and the product: ``gamma_{n+2}``;
        * ``X^T R``: :math:`\gamma_n \sum_j r_j \|R_j\|`; ``+ mu theta``: ``2u`` of each part.
        """
        xp = self.xp
        theta = self._point(theta)
        eps = float(xp.finfo(self.dtype).eps)
        u = eps / 2
        n, d, C = self.X.shape[-2], self.n_features, self.n_classes

        def gam(k):
            return k * u / (1 - k * u)

        Z, _, P, Q = self._probs(theta, others="label")
        m = xp.max(Z, axis=-1, keepdims=True)
        rel = 8 * u + u * xp.minimum(m - Z, 2000.0) + gam(C + 2)
        rel = xp.max(rel, axis=-1) * (1 + 4 * eps)
        r = self._rownorm * (1 + (d + 4) * eps)
        tn = safe_norm(theta, xp) * (1 + (d + 4) * eps)
        Rn = safe_norm(self._residual(P, Q), xp) * self._p * (1 + gam(n + 3))
        dR = Rn * (rel + gam(n + 2)) + self._p * (1 + gam(n + 1)) * 0.5 * gam(d) * r * tn[..., None]
        tiny = float(xp.finfo(self.dtype).smallest_normal) * eps * (n + d + C + 8)
        E = xp.sum(r * (gam(n) * Rn + dR), axis=-1) + 2 * u * (xp.sum(r * Rn, axis=-1) + self.mu * tn) \
            + tiny * (1 + xp.sum(r, axis=-1) + self.mu) * C
        return E * (1 + 8 * (n + d + C + 8) * eps)
