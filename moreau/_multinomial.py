r"""Weighted multinomial (softmax) logistic regression, batched over clients."""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from ._backend import safe_norm, to_numpy
from ._multinomial_fast import hessian_blocks, max_over, softmax_blocks
from ._newton_batch import take_object
from ._samples import SampleLoss

__all__ = ["Multinomial"]

_THIRD = 1.0 / math.sqrt(2.0)  # >= sup |D^3 lse(z)[b, a, a]| / (||b|| ||a||^2); proof: hessian_lipschitz


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

    Prox certificate: the gradient is projected off those shift directions (its
    exact component there is ``mu theta``), the prox error on them is computed
    exactly and off them Newton certifies with the local curvature (the
    ``(d+1)``-th eigenvalue of the Hessian, ``_hess_error``) and the Hessian's
    Lipschitz constant :meth:`hessian_lipschitz`; see ``moreau._newton``.

    References: docs/catalogue.md, "Conventions" (multinomial logistic: the model
    of the pFedMe and FedProx experiments).
    """

    _curvature_factor = 0.5  # sup of lambda_max(diag(pi) - pi pi^T)
    # Newton forms a Hessian on part of the batch (a copy of those clients) when at most this
    # share needs one: C(C+1)/2 GEMMs per client against one pass over its rows for the copy
    _part_share = 0.75

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
        self._null_dim = self.n_features  # hess f = mu on the d shift directions v (x) 1 (see _hess_error)

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
        # the loss's gradient has zero class-mean in every row (softmax is invariant to the
        # shifts v (x) 1): projecting the computed one removes its rounding in those
        # directions, where only lam + mu curves the prox subproblem (Newton's local certificate)
        G = G - xp.mean(G, axis=-1, keepdims=True)
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

    @cached_property
    def _Yt(self):
        """The one-hot labels class-major, ``(..., C, n)`` (Newton's evaluation layout)."""
        xp = self.xp
        return xp.astype(self.y[..., None, :] == xp.arange(self.n_classes, dtype=self.dtype)[:, None], self.dtype)

    @cached_property
    def _notYt(self):
        """``1 - _Yt``."""
        return 1 - self._Yt

    def _eval(self, theta):
        """Value, gradient, :meth:`_grad_rounding` and the Hessian's state from one evaluation
        of the logits, laid out class-major (``moreau._multinomial_fast``; the same operations
        as :meth:`value`, :meth:`grad`, :meth:`_grad_rounding`, so the same bounds hold).  The
        state ``(..., 2C + 1, n)``: the probabilities, their complements ``1 - pi_c`` and the
        largest logit shift, for :meth:`_hess_at` and :meth:`_local_curvature` at ``theta``."""
        xp = self.xp
        d, C, n, D = self.n_features, self.n_classes, self.X.shape[-2], self.dim
        bshape = tuple(np.broadcast_shapes(tuple(theta.shape[:-1]), self.batch_shape))
        N = math.prod(bshape)

        def flat(a, tail):  # (N,) + tail, or the shared array itself
            if math.prod(tuple(a.shape[:a.ndim - len(tail)])) == 1:
                return xp.reshape(a, tail)
            return xp.reshape(xp.broadcast_to(a, bshape + tail), (N,) + tail)

        W = xp.reshape(xp.broadcast_to(theta, bshape + (D,)), (N, d, C))
        loss, Gt, Rn, state = softmax_blocks(xp, flat(self.X, (n, d)), W, flat(self._Yt, (C, n)),
                                             flat(self._notYt, (C, n)), flat(self._p, (n,)))
        v = xp.reshape(loss, bshape) + self.mu / 2 * xp.vecdot(theta, theta)
        state = xp.reshape(state, bshape + (2 * C + 1, n))
        E = self._grad_bound(theta, state[..., 2 * C, :], xp.reshape(Rn, bshape + (n,)))
        Gt = xp.reshape(Gt, bshape + (C, d))
        mean = Gt[..., 0, :]
        for c in range(1, C):
            mean = mean + Gt[..., c, :]
        Gt = Gt - (mean / C)[..., None, :]  # the projection of grad (see grad)
        G = xp.reshape(xp.matrix_transpose(Gt), tuple(Gt.shape[:-2]) + (self.dim,))
        g = G + self.mu[..., None] * theta
        return v, g, E, state

    def _hess_at(self, theta, state, low=False):
        """``hess(theta)`` from the state :meth:`_eval` returned at ``theta``: the blocks
        ``X^T diag(q_ac) X`` once per pair ``a <= c`` (``moreau._multinomial_fast``; the same
        products as :meth:`hess`, so :meth:`_hess_error` holds for it).  ``low=True`` (float64
        data only): the products formed in float32, a Hessian for Newton's direction only, never
        used by a certificate (:meth:`_low_hessian_ok` says where Newton uses it)."""
        xp = self.xp
        d, C, n, D = self.n_features, self.n_classes, self.X.shape[-2], self.dim
        bshape = tuple(state.shape[:-2])
        N = math.prod(bshape)
        st = xp.reshape(state, (N, 2 * C + 1, n))
        X = self.X
        X = xp.reshape(X, (n, d)) if math.prod(tuple(X.shape[:-2])) == 1 \
            else xp.reshape(xp.broadcast_to(X, bshape + (n, d)), (N, n, d))
        p = self._p
        p = xp.reshape(p, (n,)) if math.prod(tuple(p.shape[:-1])) == 1 \
            else xp.reshape(xp.broadcast_to(p, bshape + (n,)), (N, n))
        low = low and self.dtype == xp.float64
        mu = xp.reshape(xp.broadcast_to(self.mu, bshape), (N,))
        H = hessian_blocks(xp, X, st[:, :C, :], st[:, C:2 * C, :], p, mu, d, C, low)
        return xp.reshape(H, bshape + (D, D))

    def _low_hessian_ok(self, modulus, hi=None):
        r"""Where Newton may take its direction from the float32 Hessian (``_hess_at(...,
        low=True)``), given ``modulus = lam + mu <= lambda_min`` of the prox Hessian.

        Each term ``q_jac x_jk x_jl`` of the float32 blocks carries four roundings (``x_jk``,
        ``x_jl``, ``q_jac``, the scaled row) and the dot product ``gamma_n``, so the computed
        matrix differs from the exact one by at most ``(n + 4) u32`` times the entrywise
        majorant :math:`\sum_j p_j |S_j| \otimes |x_j||x_j|^\top` to first order, whose norm is
        at most :math:`\sum_j p_j \| |S_j| \| \|x_j\|^2 \le \frac12 \sum_j p_j \|x_j\|^2 \le`
        ``hi`` (``|| |S_j| ||`` is at most its largest row sum ``2 max_c pi_c (1 - pi_c) <= 1/2``;
        ``hi`` the trace bound :meth:`_smoothness_bound`), plus at most ``2 n C 2^-149 (1 + R)^2``
        from gradual underflow (the same majorant in each of the ``C^2`` blocks; ``R`` the largest
        row norm).  Allowed where that is at most ``2^-8 modulus`` and no sum can overflow (row
        norms ``<= 2^50``), the rule of :meth:`Logistic._low_hessian_ok`: Newton with a Hessian
        perturbed by ``Delta`` contracts at about ``||Delta|| / modulus`` near the solution.  A
        speed choice only: the gradient, the line search and every certificate stay in float64."""
        xp = self.xp
        if self.dtype != xp.float64:
            return xp.zeros(modulus.shape, dtype=xp.bool)
        u32 = 2.0 ** -24
        n, C = self.X.shape[-2], self.n_classes
        hi = xp.broadcast_to(self._smoothness_bound() if hi is None else hi, modulus.shape)
        R = xp.broadcast_to(xp.max(self._rownorm, axis=-1), modulus.shape)
        under = 2 * n * C * 2.0 ** -149 * (1 + R) ** 2
        return ((n + 4) * u32 * hi + under <= 2.0 ** -8 * modulus) & (R <= 2.0 ** 50)

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
        * ``X^T R``: :math:`\gamma_n \sum_j r_j \|R_j\|`; ``+ mu theta``: ``2u`` of each part;
        * the projection ``G - mean_c G`` (a contraction: the errors above do not grow):
          the row sums :math:`\gamma_C`, the division and the difference ``u`` each, at most
          :math:`\gamma_{C+3}\|\hat G\|` with :math:`\|\hat G\| \le \sum_j r_j\|R_j\|`
          plus the errors above.
        """
        xp = self.xp
        theta = self._point(theta)
        Z, _, P, Q = self._probs(theta, others="label")
        shift = xp.minimum(xp.max(xp.max(Z, axis=-1, keepdims=True) - Z, axis=-1), 2000.0)  # (..., n)
        return self._grad_bound(theta, shift, safe_norm(self._residual(P, Q), xp))

    def _grad_bound(self, theta, shift, Rnorm):
        """:meth:`_grad_rounding` from the largest logit shift ``min(max_c (max z - z_c), 2000)``
        and the computed residual norms ``||P_j - Y_j||`` (each within ``(C/2 + 2) eps``), ``(..., n)``."""
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        u = eps / 2
        n, d, C = self.X.shape[-2], self.n_features, self.n_classes

        def gam(k):
            return k * u / (1 - k * u)

        rel = (8 * u + u * shift + gam(C + 2)) * (1 + 4 * eps)  # the largest over c (monotone)
        r = self._rownorm * (1 + (d + 4) * eps)
        tn = safe_norm(theta, xp) * (1 + (d + 4) * eps)
        Rn = Rnorm * self._p * (1 + gam(n + 3))
        dR = Rn * (rel + gam(n + 2)) + self._p * (1 + gam(n + 1)) * 0.5 * gam(d) * r * tn[..., None]
        tiny = float(xp.finfo(self.dtype).smallest_normal) * eps * (n + d + C + 8)
        E = xp.sum(r * (gam(n) * Rn + dR), axis=-1) + 2 * u * (xp.sum(r * Rn, axis=-1) + self.mu * tn) \
            + tiny * (1 + xp.sum(r, axis=-1) + self.mu) * C
        E = E + gam(C + 3) * (xp.sum(r * Rn, axis=-1) + E) * (1 + 4 * eps)  # the projection
        return E * (1 + 8 * (n + d + C + 8) * eps)

    def hessian_lipschitz(self):
        r"""A valid Lipschitz constant of the Hessian (spectral norm, ``theta`` flattened):
        :math:`\rho = \frac{1}{\sqrt2}\sum_j p_j \|x_j\|^3`, ``p`` the normalised weights.

        Proof.  With :math:`\ell(z) = \log\sum_c e^{z_c} - z_y` and :math:`\pi` the softmax
        of ``z``, :math:`D^3\ell(z)[b, a, a] = \mathrm{E}[(B - \mathrm{E}B)(A - \mathrm{E}A)^2]`
        for a class :math:`K \sim \pi`, :math:`A = a_K`, :math:`B = b_K` (the third
        cumulant; ``tests/test_multinomial_local_certificate.py`` checks it with sympy).
        Put :math:`Y = (A - \mathrm{E}A)^2 \in [0, M]`, :math:`M \le (\max a - \min a)^2
        \le 2\|a\|^2`.  As :math:`\mathrm{E}[B - \mathrm{E}B] = 0`, for the constant
        :math:`M/2`: :math:`|D^3\ell[b, a, a]| = |\mathrm{E}[(B - \mathrm{E}B)(Y - M/2)]|
        \le \tfrac M2 \mathrm{E}|B - \mathrm{E}B| \le \tfrac M2 \sqrt{\mathrm{Var} B}`, and
        :math:`\mathrm{Var} B \le (\max b - \min b)^2/4 \le \|b\|^2/2` (Popoviciu), so
        :math:`|D^3\ell[b, a, a]| \le \|b\|\|a\|^2/\sqrt2`.  For ``theta`` = vec(W) and a
        direction ``v`` = vec(V) the logits move by :math:`V^\top x_j`, with
        :math:`\|V^\top x_j\| \le \|V\|_F \|x_j\| = \|v\| \|x_j\|`; so
        :math:`\|D^3 f(\theta)[v]\|_2 = \sup_{\|a\| = 1} |D^3 f(\theta)[v, a, a]|
        \le \rho \|v\|`, and ``mu`` adds a constant.  The constant is within a factor
        2.6 of the sharp one: numerically the sup of the ratio is
        :math:`2\sqrt2/(6\sqrt3) = 0.2722` (two classes, at the inflection of the
        logistic ``l''``), for every ``C`` tried (2..8).
        """
        xp = self.xp
        return xp.broadcast_to(_THIRD * xp.sum(self._p * self._rownorm**3, axis=-1), self.batch_shape)

    def _hess_error(self, theta, split=False, state=None):
        r"""``err`` ``(...)``, rigorous: every eigenvalue ``eigvalsh`` computes for
        ``hess(theta)`` is within ``err`` of the same-index eigenvalue of the exact Hessian
        at ``theta`` (Weyl: ``err >= ||fl(H) - H||_2`` + the eigensolver's error).

        ``H = sum_j p_j S_j (x) x_j x_j^T + mu I``, ``S_j = diag(pi_j) - pi_j pi_j^T``;
        ``u`` the unit roundoff, :math:`\gamma_k = k u/(1 - k u)`, ``R_j >= ||x_j||``.
        Every bound below is an entrywise majorant, so it also holds for the lower
        triangle ``eigvalsh`` reads, and ``|| |M| (x) |x||x|^T || = || |M| || ||x||^2``:

        * logits: :math:`|\hat z_{jc} - z_{jc}| \le \gamma_d R_j \|\theta\| =: \delta_j`,
          which moves :math:`\pi_c` and :math:`1 - \pi_c` by factors within
          :math:`e^{\pm 2\delta_j}` and every entry of ``S_j`` within :math:`e^{\pm 4\delta_j}`;
        * ``exp(z_c - max z)`` within :math:`e^{\pm u s_j}(1 \pm 8u)` (``s_j`` the largest
          shift, capped at 2000 where both values underflow) plus an absolute
          ``smallest_normal``; the sums :math:`\gamma_C`, the divisions ``u``; the diagonal
          :math:`\pi_c(1 - \pi_c)` is formed from the complement (no cancellation) and the
          off-diagonal :math:`\pi_c\pi_k` as one product.  Together: every entry of the
          computed :math:`\hat S_j` is within a factor :math:`F_j` of the exact one plus an
          absolute :math:`a_j = 4 (C + 2)\,\mathrm{tiny}\,F_j`, :math:`\log F_j = 4\delta_j
          + 4 u s_j + 4\log(1 + 16u) + 4\log(1 + 2\gamma_C) + 3\log(1 + 2u)`, so
          :math:`\| |\hat S_j - S_j| \| \le (F_j - 1)\sigma_j + C a_j` with
          :math:`\sigma_j = \min(1/2, 2 F_j (\max_c \hat S_{j,cc} + a_j)) \ge
          \| |S_j| \| = 2\max_c \pi_c(1 - \pi_c)` (row sums): the local curvature, so a
          confident sample adds almost nothing.  Where :math:`\delta_j > 2` only
          :math:`\| |\hat S_j - S_j| \| \le 1/2 + 9/4` (``|| |S_j| || <= 1/2``, the computed
          row sums ``<= 2 (1 + u)^3 (1 + gamma_C)/(1 - gamma_C)^2 <= 9/4``) is used;
        * ``p_j S_j``: :math:`\gamma_{n+2}` (the weights and the product); the blocks
          ``X^T (p S) X``: :math:`\gamma_{n+1}`; ``+ mu I``: ``u``;
        * the eigensolver: ``4 D eps`` times a bound on :math:`\|\hat H\|_F`
          (:math:`\| |\hat S_j| \|_F \le \sqrt C \| |\hat S_j| \|`), the convention of
          :meth:`Logistic._local_curvature`.

        ``state``: what :meth:`_eval` returned at ``theta`` (its probabilities, complements and
        shifts are formed by the same operations as ``_probs``', so the bound is the same; the
        Hessian :meth:`_hess_at` forms from it is covered entry by entry, see
        ``moreau._multinomial_fast``); ``None``: computed here.

        ``mu = 0``: ``H`` is singular in the ``d`` directions ``v (x) 1`` (softmax is
        invariant to adding one vector to every column of W) at every ``theta``; the
        first ``d`` eigenvalues are ``mu`` exactly, the next one is the curvature of
        the loss on the complement.
        """
        xp = self.xp
        theta = self._point(theta)
        eps = float(xp.finfo(self.dtype).eps)
        tiny = float(xp.finfo(self.dtype).smallest_normal)
        u = eps / 2
        n, d, C = self.X.shape[-2], self.n_features, self.n_classes
        D = d * C

        def gam(k):
            return k * u / (1 - k * u)

        if state is None:
            Z, _, P, Q = self._probs(theta, others=True)
            shift = xp.minimum(xp.max(xp.max(Z, axis=-1, keepdims=True) - Z, axis=-1), 2000.0)  # (..., n)
            pq = xp.max(P * Q, axis=-1)
        else:  # what _eval computed at theta (the same operations, class-major)
            shift = state[..., 2 * C, :]
            pq = max_over(xp, [state[..., c, :] * state[..., C + c, :] for c in range(C)])
        R = self._rownorm * (1 + (d + 4) * eps)
        tn = safe_norm(theta, xp) * (1 + (D + 4) * eps)
        delta = gam(d) * R * tn[..., None] * (1 + 4 * eps)
        c0 = (4 * math.log1p(16 * u) + 4 * math.log1p(2 * gam(C)) + 3 * math.log1p(2 * u)) * (1 + 1e-6)
        logF = (4 * xp.minimum(delta, 2.0) + 4 * u * shift) * (1 + 4 * eps) + c0
        Fm1 = xp.expm1(logF) * (1 + 16 * eps)  # F_j - 1, formed without a difference
        a = 4 * (C + 2) * tiny * (1 + Fm1)
        sig = xp.minimum(0.5, 2 * (1 + Fm1) * (pq + a) * (1 + 4 * eps))
        dS = (Fm1 * sig + C * a) * (1 + 4 * eps)
        small = delta <= 2.0
        dS = xp.where(small, dS, xp.full_like(dS, 2.75))
        nS = xp.where(small, (sig + dS) * (1 + 2 * eps), xp.full_like(dS, 2.25))  # >= || |S_hat_j| ||
        pr = self._p * R**2 * (1 + 2 * gam(n + 1)) * (1 + 4 * eps)
        k = (gam(n + 2) + (gam(n + 1) + u) * (1 + gam(n + 2)) * (1 + gam(n + 1))) * (1 + 4 * eps)
        form = xp.sum(pr * (dS + nS * k), axis=-1) + u * self.mu \
            + tiny * (n + 8) * C * (1 + xp.sum(R**2, axis=-1))
        frob = (math.sqrt(C) * xp.sum(pr * nS, axis=-1) * (1 + gam(n + 2)) * (1 + gam(n + 1))
                + math.sqrt(D) * self.mu) * (1 + 4 * eps)
        grow = 1 + 2 * (n + C + 8) * eps
        if split:  # (the Hessian's own rounding, the eigensolver's modelled error)
            return (xp.broadcast_to(form * grow, self.batch_shape),
                    xp.broadcast_to(4 * D * eps * frob * grow, self.batch_shape))
        err = (form + 4 * D * eps * frob) * grow
        return xp.broadcast_to(err, self.batch_shape)

    def _local_curvature(self, theta, state):
        """``(err, rho, eig)`` for Newton's local certificate: ``_hess_error`` split into the
        computed Hessian's own rounding ``err`` and the eigensolver's modelled error ``eig``
        (Newton reads the ``_null_dim``-th eigenvalue, the first one past the shift directions,
        and proves it with :meth:`_null_lift` and a certified Cholesky instead of trusting
        ``eig``), and ``rho`` the Hessian's Lipschitz constant, rounded up."""
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        n = self.X.shape[-2]
        rho = self.hessian_lipschitz() * (1 + (n + 8) * eps) + float(xp.finfo(self.dtype).smallest_normal)
        err, eig = self._hess_error(theta, split=True, state=state)
        return err, rho, eig

    def _null_lift(self, H, ev):
        r"""``(H + M rounded, extra)`` for computed Hessians ``H`` ``(k, D, D)`` and their
        ``_null_dim``-th eigenvalues ``ev`` ``(k,)``: ``M = c (I_d (x) 1 1^T)`` (``c`` a power
        of two, ``c C >= 2 max(ev, 0) + |mu|``) is positive semidefinite of rank ``d``, so
        ``lambda_{d+1}(H) >= lambda_min(H + M)`` (interlacing), and equal when the shift
        directions are (nearly) an eigenspace of ``H`` with eigenvalue ``mu`` as here.  The sum
        is formed in ``H``'s dtype; ``extra >= ||fl(H + M) - (H + M)||_2`` (``u`` times the
        Frobenius norm of ``|H| + M``, rounded up).  A proven lower bound on ``lambda_min`` of
        the returned matrix, less ``extra``, is one on ``lambda_{d+1}(H)``."""
        xp = self.xp
        eps = float(xp.finfo(H.dtype).eps)
        d, C = self.n_features, self.n_classes
        k = H.shape[0]
        ev_h = np.asarray(to_numpy(ev), dtype=np.float64)
        mu_max = float(np.max(np.abs(np.asarray(to_numpy(self.mu), dtype=np.float64))))
        target = 2 * np.maximum(ev_h, 0.0) + mu_max + float(np.finfo(np.float64).tiny)
        c = np.ldexp(1.0, np.ceil(np.log2(target / C)).astype(int))
        blockmask = xp.asarray(np.kron(np.eye(d), np.ones((C, C))), dtype=H.dtype)
        Hl = H + xp.asarray(c, dtype=H.dtype)[:, None, None] * blockmask
        fro_H = safe_norm(xp.reshape(H, (k, -1)), xp)
        fro = (np.asarray(to_numpy(fro_H), dtype=np.float64) + c * C * math.sqrt(d)) \
            * (1 + (H.shape[-1] ** 2 + 8) * eps)
        return Hl, fro * eps / 2 * (1 + 4 * eps)

    def _null_norm(self, v):
        r"""Upper bound on :math:`\|P v\|` for ``v`` ``(..., d*C)``, ``P`` the orthogonal projector
        on the shift directions ``a (x) 1``: :math:`\|P v\|^2 = \sum_k (\sum_c V_{kc})^2 / C`;
        each row sum within :math:`\gamma_{C}\sum_c |V_{kc}|`."""
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        d, C = self.n_features, self.n_classes
        V = xp.reshape(v, tuple(v.shape[:-1]) + (d, C))
        g = C * eps / 2 / (1 - C * eps / 2)
        rows = xp.abs(xp.sum(V, axis=-1)) + g * xp.sum(xp.abs(V), axis=-1) * (1 + 4 * eps)
        return safe_norm(rows, xp) / math.sqrt(C) * (1 + (d + 8) * eps)
