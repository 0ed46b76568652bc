r"""The certificate side of :class:`moreau.Multinomial`: rounding bounds of its gradient and
Hessian, the Hessian's Lipschitz constant, and what Newton's local certificate needs (the
Hessian's error split from the eigensolver's, the lift along the shift directions, the norm
of a vector's component on them).  A mixin: it reads the objective's data (``X``, ``_p``,
``mu``, ``_rownorm``, ``n_features``, ``n_classes``) and its ``_probs``."""

from __future__ import annotations

import math

import numpy as np

from ._backend import safe_norm, to_numpy
from ._multinomial_fast import max_over

__all__ = ["MultinomialCertificates", "THIRD"]

THIRD = 1.0 / math.sqrt(2.0)  # >= sup |D^3 lse(z)[b, a, a]| / (||b|| ||a||^2); proof: hessian_lipschitz


class MultinomialCertificates:
    """Rigorous bounds of :class:`moreau.Multinomial` (see the module doc)."""

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
        E = (
            xp.sum(r * (gam(n) * Rn + dR), axis=-1)
            + 2 * u * (xp.sum(r * Rn, axis=-1) + self.mu * tn)
            + tiny * (1 + xp.sum(r, axis=-1) + self.mu) * C
        )
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
        return xp.broadcast_to(THIRD * xp.sum(self._p * self._rownorm**3, axis=-1), self.batch_shape)

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
        form = (
            xp.sum(pr * (dS + nS * k), axis=-1)
            + u * self.mu
            + tiny * (n + 8) * C * (1 + xp.sum(R**2, axis=-1))
        )
        frob = (
            math.sqrt(C) * xp.sum(pr * nS, axis=-1) * (1 + gam(n + 2)) * (1 + gam(n + 1))
            + math.sqrt(D) * self.mu
        ) * (1 + 4 * eps)
        grow = 1 + 2 * (n + C + 8) * eps
        if split:  # (the Hessian's own rounding, the eigensolver's modelled error)
            return (
                xp.broadcast_to(form * grow, self.batch_shape),
                xp.broadcast_to(4 * D * eps * frob * grow, self.batch_shape),
            )
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
        fro = (np.asarray(to_numpy(fro_H), dtype=np.float64) + c * C * math.sqrt(d)) * (
            1 + (H.shape[-1] ** 2 + 8) * eps
        )
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
