r"""Quadratic clients with a certified rank-r optimum, starts, step sizes and the stationarity measure.

Clients :math:`f_i(x) = \tfrac{s_i}2 (x - c_i)^\top A (x - c_i)` (A positive definite, shared;
s_i > 0), so that :math:`F(U, V) = \tfrac1m\sum_i f_i(Uv_i) = \tfrac12\|A^{1/2}(UV^\top - C)W^{1/2}\|_F^2`
with :math:`W = \mathrm{diag}(s_i/m)`: the instances are drawn through the whitened matrix
:math:`M = A^{1/2} C W^{1/2}` with prescribed singular values, so the rank-r optimum and its gap
:math:`\sigma_r/\sigma_{r+1}` are known (``moreau.fl.low_rank_optimum`` recomputes them).

Used by every pflmf statement (``bm``, ``deterministic``, ``stochastic``).
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.instances import orthogonal

__all__ = ["certified", "objective", "starts", "grad_norm2", "step_condition"]


def certified(rng, n, m, d, *, kappa=4.0, decay=(0.3, 0.6)):
    r"""``n`` instances of m clients in dimension d: ``A`` ``(n, d, d)`` (spectrum in [1, kappa],
    both ends attained), ``s`` ``(n, m)`` in [0.5, 2], centres ``C`` ``(n, m, d)``, ``sigma``
    ``(n, min(d, m))`` the singular values of M (σ_1 in [1, 3], then ratios σ_{k+1}/σ_k drawn in
    ``decay``: every rank has a gap), ``P`` ``(n, d, k)``, ``R`` ``(n, m, k)`` its singular vectors,
    ``Li`` ``(n, m)`` the clients' smoothness s_i a_d ``L`` ``(n,)`` their largest,
    ``ad`` ``(n,)`` the largest eigenvalue of A."""
    k = min(d, m)
    Q = orthogonal(rng, n, d)
    a = np.sort(rng.uniform(1.0, kappa, (n, d)), axis=-1)
    a[:, 0], a[:, -1] = 1.0, kappa
    A = np.einsum("nij,nj,nkj->nik", Q, a, Q)
    s = rng.uniform(0.5, 2.0, (n, m))
    sigma = rng.uniform(1.0, 3.0, (n, 1)) * np.cumprod(
        np.concatenate([np.ones((n, 1)), rng.uniform(*decay, (n, k - 1))], axis=1), axis=1
    )
    P, R = orthogonal(rng, n, d)[:, :, :k], orthogonal(rng, n, m)[:, :, :k]
    M = np.einsum("ndk,nk,nmk->ndm", P, sigma, R)
    half_inv = np.einsum("nij,nj,nkj->nik", Q, a**-0.5, Q)
    C = np.einsum("nij,njm->nmi", half_inv, M) / np.sqrt(s / m)[..., None]  # C = A^{-1/2} M W^{-1/2}
    return {
        "A": A,
        "s": s,
        "C": C,
        "sigma": sigma,
        "P": P,
        "R": R,
        "Li": s * kappa,
        "L": s.max(axis=1) * kappa,
        "ad": np.full(n, float(kappa)),
    }


def objective(batch, reps=1):
    """The clients as one :class:`moreau.Quadratic`, batch ``(n, m)`` (``(reps, n, m)`` with reps > 1):
    A_i = s_i A, b_i = s_i A c_i, c = s_i c_i^T A c_i / 2 (so min f_i = 0)."""
    Ai = batch["s"][..., None, None] * batch["A"][:, None]
    b = np.einsum("nmij,nmj->nmi", Ai, batch["C"])
    c = 0.5 * np.einsum("nmi,nmi->nm", b, batch["C"])
    if reps > 1:
        Ai, b, c = (np.broadcast_to(x, (reps,) + x.shape) for x in (Ai, b, c))
    return mo.Quadratic(Ai, b, c)


def starts(rng, batch, r, reps=1):
    r"""Random starts at the scale of the solution: ``U0`` ``(n, d, r)``, ``V0`` ``(n, m, r)`` (with a
    leading ``reps`` axis when reps > 1), entries normal with :math:`\|U_0\|^2, \|W^{1/2}V_0\|^2 \approx σ_1`."""
    n, m, d = batch["C"].shape
    lead = (reps, n) if reps > 1 else (n,)
    root = np.sqrt(batch["sigma"][:, 0])[:, None, None]
    U0 = root * rng.standard_normal(lead + (d, r)) / (np.sqrt(d) + np.sqrt(r))
    V0 = (
        root
        * rng.standard_normal(lead + (m, r))
        / (np.sqrt(m) + np.sqrt(r))
        / np.sqrt(batch["s"] / m)[..., None]
    )
    return U0, V0


def grad_norm2(f, h):
    r""":math:`\|\nabla F(U_t, V_t)\|_F^2` ``(rounds+1, *lead)`` along a :func:`moreau.fl.pflmf` history,
    F = (1/m)Σ f_i(U v_i): :math:`\nabla_U F = \tfrac1m\sum_i \nabla f_i(x_i) v_i^\top`,
    :math:`\nabla_{v_i}F = \tfrac1m U^\top\nabla f_i(x_i)`."""
    U, V, X = (np.asarray(a) for a in (h.w_global, h.w_local, h.theta))
    G = np.asarray(f.grad(X)) / X.shape[-2]
    gU = np.einsum("...md,...mr->...dr", G, V)
    gV = np.einsum("...md,...dr->...mr", G, U)
    return np.sum(gU**2, axis=(-2, -1)) + np.sum(gV**2, axis=(-2, -1))


def step_condition(Li, h, eta_u, eta_v):
    r"""Whether the steps stay below the blocks' smoothness along the whole run (reconstructed
    assumption, see the statements), with ``Li`` ``(n, m)`` the clients' smoothness constants:
    :math:`\eta_v L_i\|U_t\|_2^2 \le 1` for every client (the v_i-block of f_i(U v_i)) and
    :math:`\eta_u \lambda_{\max}(\tfrac1m\sum_i L_i v_i v_i^\top) \le 1` (a bound on the U-block's
    smoothness, exact when A_i = s_i A with L_i = s_i a_d) for every t.  Returns ``(*lead,)`` booleans;
    ``eta_*`` broadcast to ``(*lead,)``."""
    U, V = np.asarray(h.w_global), np.asarray(h.w_local)
    m = V.shape[-2]
    nu = np.max(np.linalg.norm(U, 2, axis=(-2, -1)), axis=0)  # max_t ||U_t||_2
    Lv = Li.max(axis=-1) * nu**2
    H = np.einsum("...m,...mr,...ms->...rs", np.broadcast_to(Li / m, V.shape[1:-1]), V, V)
    Lu = np.max(np.linalg.eigvalsh(H)[..., -1], axis=0)
    return (eta_v * Lv <= 1) & (eta_u * Lu <= 1)
