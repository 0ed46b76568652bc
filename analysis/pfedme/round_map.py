r"""One round of pFedMe (Algorithm 1, exact inner solves, S = N) on quadratics, as an affine map.

For clients :math:`f_i(\theta) = \tfrac12\theta^\top A_i\theta - b_i^\top\theta` the personalised
model is :math:`\hat\theta_i(w) = P_i(\lambda w + b_i)`, :math:`P_i = (A_i + \lambda I)^{-1}`; with an
inexact :math:`\tilde\theta_i = \hat\theta_i + \delta u_i` (a fixed bias) one local update
:math:`w \leftarrow w - \eta\lambda(w - \tilde\theta_i)` is :math:`w \leftarrow C_i w + c_i`,
:math:`C_i = I - \eta\lambda(I - \lambda P_i)`, :math:`c_i = \eta\lambda(P_i b_i + \delta u_i)`; R of
them give :math:`C_i^R w + S_i c_i` (:math:`S_i = \sum_{r<R} C_i^r`) and the server step
:math:`w_{t+1} = (1-\beta)w_t + \beta\frac1N\sum_i w_{i,R}^t` is :math:`w_{t+1} = Q w_t + q` with

.. math:: Q = (1-\beta)I + \beta\tfrac1N\textstyle\sum_i C_i^R,\qquad q = \beta\tfrac1N\sum_i S_i c_i .

Its fixed point :math:`w_\infty = (I-Q)^{-1}q` does not depend on β; for R = 1 and δ = 0 it
is the pFedMe (= FedProx) optimum w*.  Shapes: ``A`` ``(T, N, d, d)``, ``b`` ``(T, N, d)``, λ, η,
β ``(T,)``, R an int or ``(T,)``; ``Q`` ``(T, d, d)``, ``q`` ``(T, d)``.

References: pFedMe (T Dinh et al., 2020), §3.2, Algorithm 1, eqs. (3), (6), Theorem 1.
"""

from __future__ import annotations

import numpy as np

__all__ = ["constants", "round_map", "limit_point", "average_error", "average_exponent", "drift"]


def constants(lam, mu, beta):
    r"""``(mu_F, L_F, kappa_F, eta_hat_1)``: Proposition 1's μ_F = λμ/(λ+μ), L_F = λ, κ_F = L_F/μ_F and
    Theorem 1's :math:`\hat\eta_1 = 1/(6L_F(3 + 128\kappa_F/\beta))`."""
    lam, mu, beta = (np.asarray(x, float) for x in (lam, mu, beta))
    mu_F, L_F = lam * mu / (lam + mu), lam
    kappa_F = L_F / mu_F
    return mu_F, L_F, kappa_F, 1 / (6 * L_F * (3 + 128 * kappa_F / beta))


def round_map(A, b, lam, eta, beta, R, bias=None):
    """``(Q, q)`` of one round (module docstring); ``bias`` ``(T, N, d)`` is δ u_i (default 0)."""
    A, b = np.asarray(A, float), np.asarray(b, float)
    T, N, d, _ = A.shape
    lam, eta, beta = (np.broadcast_to(np.asarray(x, float), (T,))[:, None, None] for x in (lam, eta, beta))
    R = np.broadcast_to(np.asarray(R, float), (T,))[:, None, None]
    a, U = np.linalg.eigh(A)
    c = 1 - eta * lam * a / (a + lam)  # eigenvalues of C_i (T, N, d)
    cR = c**R
    s = np.where(c < 1, (1 - cR) / np.where(c < 1, 1 - c, 1.0), R)  # eigenvalues of S_i
    Ut = np.swapaxes(U, -1, -2)
    proj = lambda v: np.einsum("tnij,tnj->tni", Ut, v)  # noqa: E731 (into the eigenbasis)
    back = lambda v: np.einsum("tnij,tnj->tni", U, v)  # noqa: E731
    cvec = eta * lam * (proj(b) / (a + lam) + (0 if bias is None else proj(np.asarray(bias, float))))
    CR = (U * cR[..., None, :]) @ Ut
    Q = (1 - beta) * np.eye(d) + beta * CR.mean(axis=1)
    q = beta[..., 0] * back(s * cvec).mean(axis=1)
    return Q, q


def limit_point(Q, q):
    """The fixed point ``(I - Q)^{-1} q`` ``(T, d)``."""
    d = Q.shape[-1]
    return np.linalg.solve(np.eye(d) - Q, q[..., None])[..., 0]


def average_error(Q, e0, p, T):
    r"""Theorem 1's :math:`\bar w_T - w_\infty = \sum_{t<T}\alpha_t (w_t - w_\infty)/A_T` for
    :math:`w_t - w_\infty = Q^t e_0`, :math:`\alpha_t = p^{-(t+1)}` (p = 1 − ημ_F/2), by the
    normalised weights :math:`p^{T-1-t}`; ``T`` an int (a loop over rounds)."""
    e, num, den = np.asarray(e0, float), 0.0, 0.0
    p = np.asarray(p, float)[..., None]
    for t in range(T):
        w = p ** (T - 1 - t)
        num, den = num + w * e, den + w
        e = np.einsum("tij,tj->ti", Q, e)
    return num / den


def average_exponent(Q, p):
    r"""The exact asymptotic decay exponent per round of :math:`F(\bar w_T) - F(w^*)`:
    :math:`-2\log\max(p, \rho(Q))` (the weighted average of iterates decaying like
    :math:`\rho(Q)^t` decays like the slower of :math:`\rho(Q)^T` and :math:`p^T`)."""
    rho = np.max(np.abs(np.linalg.eigvals(Q)), axis=-1)
    return -2 * np.log(np.maximum(np.asarray(p, float), rho))


def drift(A, b, lam, eta, beta, R, w_star):
    r"""``w_∞ − w*`` without cancellation (exact inner solves, δ = 0), ``(T, d)``.

    With :math:`g_i = \nabla F_i(w^*) = \lambda(A_i+\lambda I)^{-1}(A_i w^* - b_i)` (Σ_i g_i = 0) the map's
    residual at w* is :math:`-\beta\eta\frac1N\sum_i (S_i - RI)g_i - \beta\eta R\,\frac1N\sum_i g_i` and
    :math:`I - Q = \beta\frac1N\sum_i (I - C_i^R)`; the eigenvalues :math:`s - R = \sum_{r<R}(c^r - 1)` and
    :math:`1 - c^R` come from ``expm1``/``log1p`` of :math:`c - 1 = -\eta\lambda a/(a+\lambda)`, so the
    O(η²) residual keeps its relative accuracy however small η is.
    """
    A, b, w_star = (np.asarray(x, float) for x in (A, b, w_star))
    T, N, d, _ = A.shape
    lam, eta, beta = (np.broadcast_to(np.asarray(x, float), (T,)) for x in (lam, eta, beta))
    R = np.broadcast_to(np.asarray(R), (T,)).astype(int)
    a, U = np.linalg.eigh(A)
    l3 = lam[:, None, None]
    Ut = np.swapaxes(U, -1, -2)
    g = (
        l3 * (np.einsum("tnij,tj->tni", Ut, w_star) * a - np.einsum("tnij,tnj->tni", Ut, b)) / (a + l3)
    )  # eigenbasis
    log_c = np.log1p(-eta[:, None, None] * l3 * a / (a + l3))
    r_max = int(R.max())
    ks = np.arange(r_max)[:, None, None, None]
    terms = np.where(ks < R[None, :, None, None], np.expm1(ks * log_c[None]), 0.0)
    s_minus_R = terms.sum(axis=0)  # eigenvalues of S_i - R I
    one_minus_cR = -np.expm1(R[:, None, None] * log_c)  # eigenvalues of I - C_i^R
    back = lambda v: np.einsum("tnij,tnj->tni", U, v)  # noqa: E731
    resid = -(beta * eta)[:, None] * (back(s_minus_R * g).mean(axis=1) + R[:, None] * back(g).mean(axis=1))
    IQ = beta[:, None, None] * ((U * one_minus_cR[..., None, :]) @ Ut).mean(axis=1)
    return np.linalg.solve(IQ, resid[..., None])[..., 0]
