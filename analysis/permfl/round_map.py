r"""PerMFL on quadratic devices, exactly: the nested-envelope Hessians and one round as an affine map.

Devices :math:`f_{ij}(\theta) = \frac12\theta^\top A_{ij}\theta - b_{ij}^\top\theta` in teams
(membership ``E`` ``(m, M)``, sizes ``N`` ``(M,)``).  With :math:`A = V\mathrm{diag}(a)V^\top`:

* device step :math:`\theta \leftarrow D\theta + \alpha(b + \lambda_d w)`, :math:`D = I - \alpha(A +
  \lambda_d I)`; L steps from θ = w give :math:`\theta^L = M_\theta w + m_\theta`,
  :math:`M_\theta = V\mathrm{diag}(\delta^L + (1-\delta^L)\lambda_d/(a+\lambda_d))V^\top`,
  :math:`m_\theta = V\mathrm{diag}((1-\delta^L)/(a+\lambda_d))V^\top b`, δ = 1 − α(a + λ_d);
* team step :math:`w \leftarrow T_i w + \eta\gamma x + c_i`, :math:`T_i = (1-\eta\lambda-\eta\gamma)I +
  \eta\lambda\,\mathrm{mean}_j M_{\theta,ij}` (symmetric), :math:`c_i = \eta\lambda\,\mathrm{mean}_j m_{\theta,ij}`;
  K of them from w = x give :math:`T_i^K x + S_i(\eta\gamma x + c_i)`, :math:`S_i = \sum_{k<K}T_i^k`;
* global step :math:`x^{t+1} = Px^t + q`, :math:`P = (1-\beta\gamma)I + \beta\gamma\,\mathrm{mean}_i(T_i^K +
  \eta\gamma S_i)`, :math:`q = \beta\gamma\,\mathrm{mean}_i S_i c_i` (P symmetric: ρ(P) = max |eig|).

The idealised maps (exact inner solves): device envelope Hessian :math:`H = \lambda A(A+\lambda I)^{-1}`,
team :math:`B_i = \mathrm{mean}_j H_{ij}`, global :math:`\nabla^2 G = \mathrm{mean}_i\,\gamma B_i(B_i+\gamma I)^{-1}`;
PerMFL with exact device proxes and exact team solves is gradient descent on G with step β.

Plain numpy over T instances (no ``moreau.fl`` code: the checkers compare this map with
``moreau.fl.permfl``).  Shapes: ``A`` ``(T, m, d, d)``, ``b`` ``(T, m, d)``, parameters ``(T,)``,
``K``, ``L`` ints ``(T,)``.

Where the run goes (:func:`reweighted_fixed_point`): with :math:`\tilde B_i = \lambda(I -
\mathrm{mean}_j M_{\theta,ij})`, :math:`\tilde c_i = \lambda\,\mathrm{mean}_j m_{\theta,ij}` (the team
problem as L local steps see it) the team map's own fixed point is :math:`w_i^\infty(x) = (\gamma I +
\tilde B_i)^{-1}(\gamma x + \tilde c_i)` and K team steps give :math:`T_i^Kx + (I - T_i^K)w_i^\infty(x)`
(:math:`S_i = (I - T_i^K)(I - T_i)^{-1}`, :math:`I - T_i = \eta(\gamma I + \tilde B_i)`), so the run's fixed
point :math:`\bar x` solves :math:`\mathrm{mean}_i W_i(\tilde B_i\bar x - \tilde c_i) = 0`,
:math:`W_i = (I - T_i^K)(\gamma I + \tilde B_i)^{-1}`; x* solves the same with :math:`\tilde B_i = B_i`,
:math:`\tilde c_i = c_i` and :math:`W_i = (\gamma I + B_i)^{-1}` (K, L → ∞): finite K reweights the teams,
finite L the devices within a team.

References: Dadras thesis eq. (4.3); Paper II, Algorithm 1 (as the authors' code computes it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fixed_point", "levels", "membership", "reweighted_fixed_point", "run_map", "spectral_radius"]


def membership(teams):
    """``(E (m, M), N (M,))`` of a team vector ``(m,)``."""
    t = np.asarray(teams, int)
    N = np.bincount(t)
    return (t[:, None] == np.arange(N.size)).astype(float), N


def _col(v, k=2):
    v = np.asarray(v, float)
    return v.reshape(v.shape + (1,) * k)


def _team_mean(E, N, X):
    """``mean_j X_ij`` per team: ``X`` ``(T, m, ...)`` → ``(T, M, ...)``."""
    return np.tensordot(E / N, X, axes=([0], [1])).swapaxes(0, 1)


def levels(A, b, teams, lam, gamma):
    r"""``dict(H (T,m,d,d), B (T,M,d,d), c (T,M,d), HG (T,d,d), x (T,d))``: the envelope Hessians of
    every level and the optimum :math:`x^*` of (4.3) (:math:`\nabla^2 G\,x^* = \mathrm{mean}_i\,\gamma
    (B_i+\gamma I)^{-1}c_i`, :math:`\nabla F_{ij}(w) = H_{ij}w - g_{ij}`, :math:`c_i = \mathrm{mean}_j g_{ij}`)."""
    E, N = membership(teams)
    a, V = np.linalg.eigh(A)
    Vt = np.swapaxes(V, -1, -2)
    lam3 = _col(lam)
    H = (V * (lam3 * a / (lam3 + a))[..., None, :]) @ Vt
    g = np.einsum("tmij,tmj->tmi", V, lam3 / (lam3 + a) * np.einsum("tmij,tmj->tmi", Vt, b))
    B, c = _team_mean(E, N, H), _team_mean(E, N, g)
    d = A.shape[-1]
    g4 = _col(gamma, 3)
    R = np.linalg.inv(B + g4 * np.eye(d))
    HG = np.mean(g4 * (np.eye(d) - g4 * R), axis=1)
    r = np.mean(_col(gamma, 2) * np.einsum("tmij,tmj->tmi", R, c), axis=1)
    return {
        "H": H,
        "B": (B + np.swapaxes(B, -1, -2)) / 2,
        "c": c,
        "HG": (HG + np.swapaxes(HG, -1, -2)) / 2,
        "x": np.linalg.solve(HG, r[..., None])[..., 0],
    }


def run_map(A, b, teams, lam, gamma, alpha, eta, beta, K, L, lam_device=None):
    """``(P (T, d, d), q (T, d))`` of one PerMFL round (module docstring); ``lam_device`` the
    device prox weight λ_d (default λ)."""
    E, N = membership(teams)
    d = A.shape[-1]
    lam_d = lam if lam_device is None else lam_device
    a, V = np.linalg.eigh(A)
    Vt = np.swapaxes(V, -1, -2)
    ld = _col(lam_d)
    delta = 1 - _col(alpha) * (a + ld)
    dL = delta ** _col(L)
    Mth = (V * (dL + (1 - dL) * ld / (a + ld))[..., None, :]) @ Vt
    mth = np.einsum("tmij,tmj->tmi", V, (1 - dL) / (a + ld) * np.einsum("tmij,tmj->tmi", Vt, b))
    lam4, gam4, eta4 = _col(lam, 3), _col(gamma, 3), _col(eta, 3)
    Tm = (1 - eta4 * lam4 - eta4 * gam4) * np.eye(d) + eta4 * lam4 * _team_mean(E, N, Mth)
    c = _col(eta) * _col(lam) * _team_mean(E, N, mth)
    t, U = np.linalg.eigh((Tm + np.swapaxes(Tm, -1, -2)) / 2)
    Kc = _col(K)
    tK = t**Kc
    s = np.where(np.abs(1 - t) > 1e-12, (1 - tK) / np.where(np.abs(1 - t) > 1e-12, 1 - t, 1.0), Kc)
    Ut = np.swapaxes(U, -1, -2)
    TK = (U * tK[..., None, :]) @ Ut
    S = (U * s[..., None, :]) @ Ut
    bg = _col(np.asarray(beta, float) * gamma)
    P = (1 - bg) * np.eye(d) + bg * np.mean(TK + eta4 * gam4 * S, axis=1)
    q = bg[:, 0] * np.mean(np.einsum("tmij,tmj->tmi", S, c), axis=1)
    return (P + np.swapaxes(P, -1, -2)) / 2, q


def reweighted_fixed_point(A, b, teams, lam, gamma, alpha, eta, K, L):
    """``x_bar (T, d)``: the run's fixed point from the reweighted stationarity equation (module
    docstring), computed from the device maps directly (not through ``run_map``'s P, q)."""
    E, N = membership(teams)
    d = A.shape[-1]
    a, V = np.linalg.eigh(A)
    Vt = np.swapaxes(V, -1, -2)
    lam2 = _col(lam)
    dL = (1 - _col(alpha) * (a + lam2)) ** _col(L)
    one_minus_M = (V * ((1 - dL) * a / (a + lam2))[..., None, :]) @ Vt  # I - M_theta, per device
    g = np.einsum("tmij,tmj->tmi", V, (1 - dL) / (a + lam2) * np.einsum("tmij,tmj->tmi", Vt, b))
    lam4, gam4 = _col(lam, 3), _col(gamma, 3)
    Bt = lam4 * _team_mean(E, N, one_minus_M)
    ct = _col(lam) * _team_mean(E, N, g)
    Tm = np.eye(d) - _col(eta, 3) * (gam4 * np.eye(d) + Bt)
    TK = np.stack([np.linalg.matrix_power(Tm[t], int(k)) for t, k in enumerate(np.asarray(K))])
    W = (np.eye(d) - TK) @ np.linalg.inv(gam4 * np.eye(d) + Bt)
    lhs = np.mean(W @ Bt, axis=1)
    rhs = np.mean(np.einsum("tmij,tmj->tmi", W, ct), axis=1)
    return np.linalg.solve(lhs, rhs[..., None])[..., 0]


def fixed_point(P, q):
    """``(I - P)^{-1} q`` ``(T, d)``."""
    return np.linalg.solve(np.eye(P.shape[-1]) - P, q[..., None])[..., 0]


def spectral_radius(M):
    """max |eigenvalue| of symmetric ``M`` ``(..., d, d)``."""
    return np.max(np.abs(np.linalg.eigvalsh(M)), axis=-1)
