r"""Nonconvex, L-smooth clients bounded below with a closed-form prox: separable double wells.

Client i of an instance is :math:`f_i(\theta) = \sum_k g(\theta_k - s_{ik})` with

.. math:: g(u) = \begin{cases} La^2/4 - Lu^2/2, & |u| \le a/2 \\ \tfrac L2(|u| - a)^2, & |u| \ge a/2\end{cases}

(C¹, g'' = −L on the middle piece and +L outside: L-smooth, nonconvex, min 0 at ±a, so
Assumption 1(b) holds and inf f_i = 0).  For λ > L the prox is unique and piecewise affine in
z = w − s (per coordinate): with :math:`\tau = a(\lambda - L)/(2\lambda)`,
u = λz/(λ−L) for |z| ≤ τ, u = (λz + La·sign z)/(λ+L) otherwise, θ̂ = s + u; the envelope is
:math:`E(z) = La^2/4 - \lambda L z^2/(2(\lambda-L))` on |z| ≤ τ and
:math:`\lambda L(|z| - a)^2/(2(\lambda+L))` outside (curvatures −λL/(λ−L) and λL/(λ+L)).
Everything is separable, so F = (1/N)Σ F_i is a sum of one-dimensional piecewise quadratics:
F* by enumerating its pieces, σ_f² (Assumption 3) by the breakpoints of the ∇f_i, pFedMe's round
as a piecewise affine map whose fixed points are solved for exactly.

Shapes: ``s`` ``(T, N, d)``; ``a``, ``L``, ``lam``, ``eta``, ``beta`` ``(T,)``; ``R`` ``(T,)`` ints;
points ``w`` ``(..., T, d)`` (a leading axis of points is allowed).

References: pFedMe (T Dinh et al., 2020), Algorithm 1, eqs. (3), (6), Assumptions 1(b) and 3,
Theorem 2.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau._backend import as_array, constructor_namespace

__all__ = ["g", "g_prime", "prox", "envelope", "F_star", "sigma_f2", "run", "fixed_point", "DoubleWell"]


def _b(x, nd):
    """``(T,)`` -> broadcastable against ``(..., T, N, d)`` (``nd`` = 3) or ``(..., T, d)`` (2)."""
    return np.asarray(x, float).reshape((-1,) + (1,) * (nd - 1))


def g(u, a, L):
    au = np.abs(u)
    return np.where(au <= a / 2, L * a**2 / 4 - L * u**2 / 2, L / 2 * (au - a) ** 2)


def g_prime(u, a, L):
    return np.where(np.abs(u) <= a / 2, -L * u, L * (u - a * np.sign(u)))


def prox(w, s, a, L, lam):
    """θ̂_i(w) ``(..., T, N, d)`` for ``w`` ``(..., T, d)`` (closed form, module docstring)."""
    a3, L3, l3 = _b(a, 3), _b(L, 3), _b(lam, 3)
    z = w[..., None, :] - s
    tau = a3 * (l3 - L3) / (2 * l3)
    u = np.where(np.abs(z) <= tau, l3 * z / (l3 - L3), (l3 * z + L3 * a3 * np.sign(z)) / (l3 + L3))
    return s + u


def envelope(w, s, a, L, lam):
    """``(F_i(w), ∇F_i(w))``, ``(..., T, N)`` and ``(..., T, N, d)``: value from the prox, gradient as
    ∇f_i(θ̂_i(w)) (the optimality condition of (3), not λ(w − θ̂) of eq. (6))."""
    a3, L3 = _b(a, 3), _b(L, 3)
    th = prox(w, s, a, L, lam)
    val = np.sum(g(th - s, a3, L3), axis=-1) + _b(lam, 2) / 2 * np.sum((th - w[..., None, :]) ** 2, axis=-1)
    return val, g_prime(th - s, a3, L3)


def _E(z, a, L, lam):
    """The one-dimensional envelope E(z) in closed form (broadcasting)."""
    tau = a * (lam - L) / (2 * lam)
    return np.where(
        np.abs(z) <= tau,
        L * a**2 / 4 - lam * L * z**2 / (2 * (lam - L)),
        lam * L * (np.abs(z) - a) ** 2 / (2 * (lam + L)),
    )


def F_star(s, a, L, lam):
    """``(F*, argmin)``: inf of F = (1/N)Σ_i F_i, ``(T,)`` and ``(T, d)``, exact (pieces enumerated)."""
    T, N, d = s.shape
    a3, L3, l3 = _b(a, 3), _b(L, 3), _b(lam, 3)
    tau = a3 * (l3 - L3) / (2 * l3)
    bp = np.sort(np.concatenate([s - tau, s + tau], axis=1), axis=1)  # (T, 2N, d)
    lo = np.concatenate([bp[:, :1] - 1.0, bp], axis=1)  # interval ends (T, 2N+1, d)
    hi = np.concatenate([bp, bp[:, -1:] + 1.0], axis=1)
    mid = (lo + hi) / 2
    z = mid[:, :, None, :] - s[:, None]  # (T, 2N+1, N, d)
    a4, L4, l4 = (x[:, None] for x in (a3, L3, l3))
    inner = np.abs(z) <= tau[:, None]
    c_m, c_o = l4 * L4 / (l4 - L4), l4 * L4 / (l4 + L4)
    coef = np.where(inner, -c_m, c_o)  # E'' per client on the piece
    target = np.where(inner, s[:, None], s[:, None] + a4 * np.sign(z))  # E' = coef (x - target)
    curv = coef.sum(axis=2)
    x = np.sum(coef * target, axis=2) / np.where(curv != 0, curv, 1.0)
    unbounded_lo = np.arange(2 * N + 1)[None, :, None] == 0
    unbounded_hi = np.arange(2 * N + 1)[None, :, None] == 2 * N
    ok = (curv > 0) & ((x >= lo) | unbounded_lo) & ((x <= hi) | unbounded_hi)
    cand = np.concatenate([np.where(ok, x, bp[:, :1]), bp], axis=1)  # (T, 4N+1, d)
    vals = np.mean(_E(cand[:, :, None, :] - s[:, None], a4, L4, l4), axis=2)  # (T, 4N+1, d)
    k = np.argmin(vals, axis=1)
    best = np.take_along_axis(vals, k[:, None], axis=1)[:, 0]
    arg = np.take_along_axis(cand, k[:, None], axis=1)[:, 0]
    return best.sum(axis=-1), arg


def sigma_f2(s, a, L):
    """Assumption 3's σ_f² = sup_w (1/N)Σ‖∇f_i(w) − ∇f(w)‖², exact ``(T,)``: per coordinate the
    variance is a convex quadratic between breakpoints s_i ± a/2 and constant beyond them."""
    a3, L3 = _b(a, 3), _b(L, 3)
    bp = np.concatenate([s - a3 / 2, s + a3 / 2], axis=1)  # (T, 2N, d)
    gp = g_prime(bp[:, :, None, :] - s[:, None], a3[:, None], L3[:, None])  # (T, 2N, N, d)
    var = np.mean((gp - gp.mean(axis=2, keepdims=True)) ** 2, axis=2)  # (T, 2N, d)
    return var.max(axis=1).sum(axis=-1)


def run(w0, s, a, L, lam, eta, beta, R, rounds):
    """Algorithm 1 with exact inner solves, S = N: ``w_t`` ``(rounds+1, T, d)`` (closed-form prox)."""
    R = np.asarray(R, int)
    e3, b2, l3 = _b(eta, 3), _b(beta, 2), _b(lam, 3)
    active = [_b(R > r, 3) for r in range(int(R.max()))]
    w = np.asarray(w0, float)
    out = [w]
    for _ in range(rounds):
        v = np.broadcast_to(w[:, None], s.shape)
        for act in active:
            v = np.where(act, v - e3 * l3 * (v - prox_local(v, s, a, L, lam)), v)
        w = (1 - b2) * w + b2 * v.mean(axis=1)
        out.append(w)
    return np.stack(out)


def prox_local(v, s, a, L, lam):
    """θ̂_i at each client's own point ``v`` ``(T, N, d)``."""
    a3, L3, l3 = _b(a, 3), _b(L, 3), _b(lam, 3)
    z = v - s
    tau = a3 * (l3 - L3) / (2 * l3)
    return s + np.where(np.abs(z) <= tau, l3 * z / (l3 - L3), (l3 * z + L3 * a3 * np.sign(z)) / (l3 + L3))


def _affine_round(w, s, a, L, lam, eta, beta, R):
    """The round map's affine piece at ``w``, per coordinate ``(T, d)``: ``(1 - Abar, Bbar, regimes)`` with
    Φ(x) = x + β(Bbar − (1 − Abar)x) on the piece where every local step keeps its regime (Abar, Bbar: the
    clients' mean slope and intercept of R local steps; 1 − Abar from ``expm1`` of a sum of ``log1p``, so
    the fixed point Bbar/(1 − Abar) keeps its relative accuracy when 1 − Abar is tiny)."""
    R = np.asarray(R, int)
    a3, L3, l3, e3 = _b(a, 3), _b(L, 3), _b(lam, 3), _b(eta, 3)
    tau = a3 * (l3 - L3) / (2 * l3)
    logA, B = np.zeros(s.shape), np.zeros(s.shape)
    v = np.broadcast_to(w[:, None], s.shape)
    regimes = []
    for r in range(int(R.max())):
        act = _b(R > r, 3)
        z = v - s
        inner = np.abs(z) <= tau
        regimes.append(np.where(act, np.where(inner, 0, np.sign(z)), 9))
        kappa = np.where(inner, l3 / (l3 - L3), l3 / (l3 + L3))
        rho = np.where(inner, 0.0, L3 * a3 * np.sign(z) / (l3 + L3))
        c, dd = 1 - e3 * l3 * (1 - kappa), e3 * l3 * ((1 - kappa) * s + rho)
        logA = np.where(act, logA + np.log1p(-e3 * l3 * (1 - kappa)), logA)
        B = np.where(act, c * B + dd, B)
        v = np.where(act, c * v + dd, v)
    return -np.expm1(logA).mean(axis=1), B.mean(axis=1), np.stack(regimes)


def fixed_point(w_start, s, a, L, lam, eta, beta, R, max_iter=30):
    """A fixed point of the round map near ``w_start``: ``(w_inf (T, d), 1 - Abar (T, d), residual (T,),
    regimes (R_max, T, N, d))`` — Newton on the piecewise affine map (solve the piece's fixed point
    Bbar/(1 − Abar), which does not depend on β, re-read the pieces there).  ``residual`` is
    max |Φ(w) − w|/(β(1 − Abar)), the distance to the fixed point of the piece actually reached."""
    w = np.asarray(w_start, float)
    for _ in range(max_iter):
        oma, B, reg = _affine_round(w, s, a, L, lam, eta, beta, R)
        w_new = B / oma
        reg_new = _affine_round(w_new, s, a, L, lam, eta, beta, R)[2]
        w = w_new
        if np.array_equal(reg, reg_new):
            break
    step = run(w, s, a, L, lam, eta, beta, R, 1)[1]
    resid = np.max(np.abs(step - w) / (_b(beta, 2) * oma), axis=-1)
    return w, oma, resid, reg_new


class DoubleWell(mo.Objective):
    """The clients as a :class:`moreau.Objective` (certified Newton prox), for cross-checks only:
    batch ``(T, N)``, ``s`` ``(T, N, d)``, ``a``, ``L`` ``(T,)``."""

    def __init__(self, s, a, L):
        xp = constructor_namespace(s=s)
        self.s = as_array(s, xp, "s")
        self.a, self.L = np.asarray(a, float)[:, None, None], np.asarray(L, float)[:, None, None]
        self.xp, self.dtype, self.dim = xp, self.s.dtype, self.s.shape[-1]
        self.batch_shape = tuple(self.s.shape[:-1])

    def value(self, theta):
        return np.sum(g(self._point(theta) - self.s, self.a, self.L), axis=-1)

    def grad(self, theta):
        return g_prime(self._point(theta) - self.s, self.a, self.L)

    def hess(self, theta):
        u = self._point(theta) - self.s
        return np.where(np.abs(u) <= self.a / 2, -self.L, self.L)[..., None] * np.eye(self.dim)

    def curvature_bounds(self):
        L = np.broadcast_to(self.L[..., 0], self.batch_shape)
        return -L, L.copy()


# -- reporting helpers shared by the parts -----------------------------------------
def worst_pair(lhs, rhs):
    """Reduce ``(P, T)`` sides to ``(T,)``: per instance the row with the largest (lhs − rhs)/(|lhs| + |rhs|)
    (closest to failing; a ratio lhs/rhs would miss a violation where rhs < 0)."""
    lhs, rhs = np.broadcast_arrays(lhs, rhs)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (lhs - rhs) / (np.abs(lhs) + np.abs(rhs))
    r = np.where(np.isnan(r), -np.inf, r)
    k = np.argmax(r, axis=0)
    t = np.arange(lhs.shape[1])
    return lhs[k, t], rhs[k, t]


def value_range(x):
    return f"{np.min(x):.2e}..{np.max(x):.2e}" if np.size(x) else "no such instance"


def ratio_range(lhs, rhs, mask):
    if not mask.any():
        return "no such instance"
    m = mask & (rhs > 0)
    r = lhs[m] / rhs[m]
    if not m.any():
        return "no instance with rhs > 0"
    return f"{np.min(r):.3g}..{np.max(r):.3g}"


def short_range(x):
    return f"{np.min(x):.3g}..{np.max(x):.3g}" if np.size(x) else "no such instance"
