r"""One round of Algorithm 1 of the FedProx analysis on quadratics, as a matrix; condition (12).

On quadratic clients :math:`L_i(w) = \tfrac12 w^\top A_i w - b_i^\top w` one round of Algorithm 1
(K warm-started local steps of size η on :math:`h_i(\cdot, w^{(g)})`, then the server step γ on
:math:`\frac1m\sum_i\lambda(w^{(g)} - w_{t,K}^{(i)})`) is an affine map of the state
:math:`(w_t^{(g)}, w_{t,0}^{(1)}, \dots, w_{t,0}^{(m)})`.  Its fixed point is the FedProx optimum
:math:`(\tilde w^{(g)}, \tilde w^{(i)})`, and the errors :math:`e = (w^{(g)} - \tilde w^{(g)},
w_{t,0}^{(i)} - \tilde w^{(i)})` obey :math:`e_{t+1} = M e_t` with, for
:math:`B_i = I - \eta(A_i + \lambda I)` and :math:`G_i = (I - B_i^K)\lambda(A_i + \lambda I)^{-1}`,

.. math::
    e^{(i)}_{t+1} = B_i^K e^{(i)}_t + G_i e^{(g)}_t,\qquad
    e^{(g)}_{t+1} = (1 - \gamma\lambda)e^{(g)}_t + \gamma\lambda\sum_i p_i e^{(i)}_{t+1}.

The spectral radius of M is the exact asymptotic contraction factor per round (of the global
and of the local errors, in any norm).  Shapes: ``A`` ``(T, m, d, d)``, λ, γ, η, K ``(T,)``;
M is ``(T, (m+1)d, (m+1)d)``, state order ``(e^{(g)}, e^{(1)}, ..., e^{(m)})``.

References: FedProx analysis (Yu et al.), §5, eqs. (10)-(12), Algorithm 1, Lemma 2, Theorem 2.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lemma2", "k_min", "condition_12", "round_matrix", "spectral_radius"]


def lemma2(lam, mu, L):
    r"""Lemma 2's constants ``(mu_g, L_g, mu_l, L_l, L_w)`` (numpy, broadcasting)."""
    lam, mu, L = (np.asarray(x, float) for x in (lam, mu, L))
    return lam * mu / (lam + mu), lam * L / (lam + L), mu + lam, L + lam, lam / (lam + mu)


def _sides_12(lam, mu, L, gamma, eta):
    """``(c, q, r)``: (12) reads ``c q^K <= r``; ``q = |1 - eta mu_l|`` (the printed base for eta <= 1/mu_l)."""
    mu_g, L_g, mu_l, _, L_w = lemma2(lam, mu, L)
    c = 2 + 64 * L_w**2 * (1 / mu_g) ** 2 * np.asarray(lam, float) ** 2
    return c, np.abs(1 - np.asarray(eta, float) * mu_l), (1 - np.asarray(gamma, float) * L_g) ** 4


def condition_12(lam, mu, L, gamma, eta, K):
    r"""Condition (12): :math:`(2 + 64L_w^2(1/\mu_g)^2\lambda^2)(1-\eta\mu_\ell)^K \le (1-\gamma L_g)^4`."""
    c, q, r = _sides_12(lam, mu, L, gamma, eta)
    return c * q ** np.asarray(K, float) <= r


def k_min(lam, mu, L, gamma, eta):
    r"""The smallest integer K >= 1 satisfying (12), in closed form.

    .. math:: K_{\min} = \Big\lceil \frac{\log\big((2 + 64L_w^2\lambda^2/\mu_g^2)/(1-\gamma L_g)^4\big)}
              {-\log(1 - \eta\mu_\ell)} \Big\rceil

    (:math:`L_w^2\lambda^2/\mu_g^2 = \lambda^2/\mu^2`), then moved by one where rounding put the
    ceiling on the wrong side of the floating-point condition :func:`condition_12`.  Inputs
    broadcast; γ L_g = 1 gives no finite K (returned as 2^62).  Needs
    η μ_ℓ <= 1 (η <= 1/L_ℓ does it); η μ_ℓ = 1 gives K = 1.
    """
    c, q, r = _sides_12(lam, mu, L, gamma, eta)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.ceil((np.log(c) - np.log(r)) / -np.log(q))
    k = np.where(np.isfinite(k), k, np.where(q == 0, 1.0, 2.0**62))
    k = np.maximum(k, 1.0)
    k = np.where((k > 1) & (c * q ** (k - 1) <= r), k - 1, k)
    k = np.where(c * q**k <= r, k, k + 1)
    return np.where(r > 0, k, 2.0**62).astype(np.int64)


def round_matrix(A, lam, gamma, eta, K, p=None):
    """The matrix M of one round (module docstring); ``p`` the client weights (default 1/m)."""
    A = np.asarray(A, float)
    T, m, d, _ = A.shape
    lam, gamma, eta = (np.broadcast_to(np.asarray(x, float), (T,)) for x in (lam, gamma, eta))
    K = np.broadcast_to(np.asarray(K, float), (T,))
    p = np.full((T, m), 1 / m) if p is None else np.broadcast_to(np.asarray(p, float), (T, m))
    a, U = np.linalg.eigh(A)  # (T, m, d), (T, m, d, d)
    l3 = lam[:, None, None]
    bk = (1 - eta[:, None, None] * (a + l3)) ** K[:, None, None]  # eigenvalues of B_i^K
    g = (1 - bk) * l3 / (a + l3)  # eigenvalues of G_i
    Ut = np.swapaxes(U, -1, -2)
    BK, G = (U * bk[..., None, :]) @ Ut, (U * g[..., None, :]) @ Ut
    gl = (gamma * lam)[:, None, None]
    n = (m + 1) * d
    M = np.zeros((T, n, n))
    M[:, :d, :d] = (1 - gl) * np.eye(d) + gl * np.einsum("ti,tijk->tjk", p, G)
    M[:, :d, d:] = (gl[..., None] * p[:, None, :, None] * np.swapaxes(BK, 1, 2)).reshape(T, d, m * d)
    M[:, d:, :d] = G.reshape(T, m * d, d)
    M[:, d:, d:] = (np.eye(m)[None, :, None, :, None] * BK[:, :, :, None, :]).reshape(T, m * d, m * d)
    return M


def spectral_radius(M):
    """``(rho (T,), v (T, n) complex)``: spectral radius and a unit eigenvector of modulus rho."""
    ev, V = np.linalg.eig(M)
    k = np.argmax(np.abs(ev), axis=-1)
    t = np.arange(M.shape[0])
    lam, v = ev[t, k], V[t, :, k]
    # LAPACK's balancing can leave eigenvectors inaccurate when M holds entries like 1e-60
    # ((1 - eta a)^K underflowing): two steps of inverse iteration on M itself restore them
    shift = (lam + 1e-9 * np.maximum(np.abs(lam), 1e-300))[:, None, None] * np.eye(M.shape[-1])
    for _ in range(2):
        v = v / np.linalg.norm(v, axis=-1, keepdims=True)
        v = np.linalg.solve(M - shift, v[..., None])[..., 0]
    return np.abs(lam), v / np.linalg.norm(v, axis=-1, keepdims=True)
