r"""Convex quadratics over products of ℓ1 or ℓ2 balls, solved on the host with a rounding-proof
Frank–Wolfe certificate: the exact targets of FedFW on the papers' sets (:func:`fedfw_optimum`).

Problem, per instance (batched over the leading axis): :math:`\min_z \tfrac12 z^\top H z - c^\top z`
over :math:`z = (z_1, \dots, z_m) \in \mathcal B^m`, :math:`z_i \in \mathbb R^d`, :math:`\mathcal B`
the ball :math:`\|u\|_p \le r` (p = 1 or 2), H symmetric PSD ``(N, md, md)``.

Solver: accelerated projected gradient (FISTA with gradient restart, step 1/‖H‖₂; projections in
closed form: :math:`z\min(1, r/\|z\|_2)`, and the sort-based projection onto the ℓ1 ball, Duchi et
al. 2008, Fig. 1), then a face polish: on the face the iterate identifies (ℓ1: the support and
signs of each block on its sphere; ℓ2: the blocks on their sphere) the KKT system is solved
exactly (ℓ1: one linear system; ℓ2: Newton on :math:`(H + \mathrm{diag}(\nu_i I))z = c`,
:math:`\|z_i\| = r`), and the polished point is kept where its certified gap is smaller.  The
returned point is pulled inside each ball by a relative margin covering the rounding of its norm,
so it is feasible in exact arithmetic.

Certificate (:func:`certified_gap`): the Frank–Wolfe gap :math:`\mathrm{gap}(z) = \max_{s\in\mathcal
B^m}\langle\nabla(z), z - s\rangle = \sum_i \langle g_i, z_i\rangle + r\|g_i\|_*` (dual norm: ℓ∞ for
ℓ1, ℓ2 for ℓ2) bounds :math:`F(z) - F^*` for convex F and feasible z (thesis eq. (2.6)); it is
evaluated in float64 and an a-priori bound on that evaluation's rounding is added, so the number
returned is an upper bound on the exact gap of the exact problem at the returned point.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ball_qp", "certified_gap", "project"]

_EPS = float(np.finfo(np.float64).eps)


def _gamma(k: int) -> float:
    """Higham's γ_k = k u / (1 − k u), u = eps/2."""
    u = _EPS / 2
    return k * u / (1 - k * u)


def project(Z: np.ndarray, r: np.ndarray, p: int) -> np.ndarray:
    """Euclidean projection of each block ``Z[..., i, :]`` onto the ball ``||u||_p <= r`` (``r``
    broadcasting against ``Z.shape[:-1]``); p = 2 closed form, p = 1 sort based."""
    r = np.asarray(r, float)
    if p == 2:
        n = np.linalg.norm(Z, axis=-1)
        return Z * np.minimum(1.0, r / np.where(n > 0, n, 1.0))[..., None]
    a = np.abs(Z)
    u = -np.sort(-a, axis=-1)
    css = np.cumsum(u, axis=-1) - np.asarray(r)[..., None]
    k = np.arange(1, Z.shape[-1] + 1)
    n_pos = np.maximum(np.sum(u - css / k > 0, axis=-1), 1)
    tau = np.take_along_axis(css, (n_pos - 1)[..., None], axis=-1) / n_pos[..., None]
    w = np.sign(Z) * np.maximum(a - tau, 0.0)
    return np.where((np.sum(a, axis=-1) <= r)[..., None], Z, w)


def _blocks(z: np.ndarray, m: int) -> np.ndarray:
    return z.reshape(z.shape[:-1] + (m, z.shape[-1] // m))


def certified_gap(
    H: np.ndarray, c: np.ndarray, z: np.ndarray, r: np.ndarray, p: int, m: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""``(gap, computed)`` ``(N,)``: an upper bound on the exact Frank–Wolfe gap at ``z`` (the computed
    gap plus the rounding bound of its evaluation) and the computed gap itself.

    Rounding (u = eps/2, γ_k = ku/(1 − ku)): :math:`\hat g = fl(Hz - c)` is within
    :math:`e = \gamma_{n+1}(|H||z| + |c|)` of the exact gradient elementwise (n = md), so
    :math:`|\langle g_i, z_i\rangle - \langle\hat g_i, z_i\rangle| \le \langle e_i, |z_i|\rangle` and
    :math:`\|g_i\|_* \le \|\hat g_i\|_* + \|e_i\|_*`; the computed dot products (γ_d), the ℓ2 norms
    (γ_{d+2}) and the sum over blocks (γ_m) add their own terms; the total is rounded up."""
    g = np.einsum("tij,tj->ti", H, z) - c
    n = z.shape[-1]
    e = _gamma(n + 1) * (np.einsum("tij,tj->ti", np.abs(H), np.abs(z)) + np.abs(c)) * (1 + 4 * _EPS)
    gb, zb, eb = _blocks(g, m), _blocks(z, m), _blocks(e, m)
    d = zb.shape[-1]
    dual = (lambda v: np.linalg.norm(v, axis=-1)) if p == 2 else (lambda v: np.max(np.abs(v), axis=-1))
    rr = np.asarray(r, float)[..., None]
    terms = np.sum(gb * zb, axis=-1) + rr * dual(gb)
    computed = np.sum(terms, axis=-1)
    slack = (
        np.sum(eb * np.abs(zb), axis=-1)
        + _gamma(d) * np.sum(np.abs(gb * zb), axis=-1)
        + rr * (dual(eb) + (_gamma(d + 2) if p == 2 else 0.0) * dual(gb)) * (1 + 2 * _EPS)
    )
    total = np.sum(slack, axis=-1) + _gamma(m + 1) * np.sum(np.abs(terms) + slack, axis=-1)
    return np.maximum(computed, 0.0) + total * (1 + 8 * _EPS) + 4 * _EPS * np.abs(computed), computed


def _inside(z: np.ndarray, r: np.ndarray, p: int, m: int) -> np.ndarray:
    """``z`` with every block scaled into its ball by a margin covering its norm's rounding: a block
    whose computed norm exceeds r(1 − 2(d+2)eps) is scaled to r(1 − 4(d+4)eps), so its exact norm is
    below r."""
    zb = _blocks(z, m)
    d = zb.shape[-1]
    nrm = np.linalg.norm(zb, axis=-1) if p == 2 else np.sum(np.abs(zb), axis=-1)
    rr = np.asarray(r, float)[..., None]
    over = nrm > rr * (1 - 2 * (d + 2) * _EPS)
    s = np.where(over, rr * (1 - 4 * (d + 4) * _EPS) / np.where(nrm > 0, nrm, 1.0), 1.0)
    return (zb * s[..., None]).reshape(z.shape)


def _fista(H: np.ndarray, c: np.ndarray, r: np.ndarray, p: int, m: int, iters: int) -> tuple[np.ndarray, int]:
    """Accelerated projected gradient with gradient restart (O'Donoghue & Candès 2015), from 0."""
    N, n = c.shape
    step = 1.0 / np.maximum(np.linalg.eigvalsh(H)[:, -1], 1e-300)[:, None]
    rr = np.asarray(r, float)[:, None]

    def prox(v: np.ndarray) -> np.ndarray:
        return project(_blocks(v, m), rr, p).reshape(v.shape)

    z = np.zeros((N, n))
    y, t = z.copy(), np.ones(N)
    k = 0
    for k in range(1, iters + 1):
        g = np.einsum("tij,tj->ti", H, y) - c
        z_new = prox(y - step * g)
        restart = np.sum(g * (z_new - z), axis=-1) > 0
        t = np.where(restart, 1.0, t)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        y = z_new + ((t - 1) / t_new)[:, None] * (z_new - z)
        y = np.where(restart[:, None], z_new, y)
        moved = np.max(np.abs(z_new - z), axis=-1)
        z, t = z_new, t_new
        if k % 50 == 0 and np.all(moved <= 1e-15 * (1 + np.max(np.abs(z), axis=-1))):
            break
    return z, k


def _polish_one(H: np.ndarray, c: np.ndarray, z: np.ndarray, r: float, p: int, m: int) -> np.ndarray | None:
    """The exact KKT point on the face that ``z`` identifies (one instance), or None."""
    n = z.size
    d = n // m
    zb = z.reshape(m, d)
    nrm = np.linalg.norm(zb, axis=-1) if p == 2 else np.sum(np.abs(zb), axis=-1)
    active = nrm >= r * (1 - 1e-9)
    if p == 1:
        tol = 1e-12 * max(r, 1.0)
        free = ~(active[:, None] & (np.abs(zb) <= tol)).ravel()
        sig = np.sign(zb).ravel()
        rows = [np.where(np.arange(n) // d == i, sig, 0.0)[free] for i in np.flatnonzero(active)]
        F = np.flatnonzero(free)
        B = np.array(rows).reshape(len(rows), F.size)
        K = np.block([[H[np.ix_(F, F)], B.T], [B, np.zeros((len(rows), len(rows)))]])
        rhs = np.concatenate([c[F], np.full(len(rows), r)])
        try:
            sol = np.linalg.solve(K, rhs)
        except np.linalg.LinAlgError:
            return None
        out = np.zeros(n)
        out[F] = sol[: F.size]
        on_sphere = np.repeat(active, d)[F]
        if np.any((np.sign(out[F]) * sig[F] < 0) & on_sphere):
            return None  # the face's solution changed a sign: not this face
        return out
    act = np.flatnonzero(active)
    x = z.copy()
    g = H @ x - c
    nu = np.array([max(-(g[i * d : (i + 1) * d] @ x[i * d : (i + 1) * d]) / r**2, 0.0) for i in act])
    E = np.zeros((n, act.size))
    for _ in range(30):
        D = np.zeros(n)
        for j, i in enumerate(act):
            D[i * d : (i + 1) * d] = nu[j]
            E[:, j] = 0.0
            E[i * d : (i + 1) * d, j] = x[i * d : (i + 1) * d]
        res = np.concatenate(
            [H @ x + D * x - c, [(x[i * d : (i + 1) * d] @ x[i * d : (i + 1) * d] - r * r) / 2 for i in act]]
        )
        J = np.block([[H + np.diag(D), E], [E.T, np.zeros((act.size, act.size))]])
        try:
            step = np.linalg.solve(J, -res)
        except np.linalg.LinAlgError:
            return None
        x, nu = x + step[:n], nu + step[n:]
        if np.max(np.abs(step)) <= 1e-16 * (1 + np.max(np.abs(x))):
            break
    return x if np.all(nu >= 0) and np.all(np.isfinite(x)) else None


def ball_qp(
    H: np.ndarray, c: np.ndarray, r: np.ndarray, p: int, m: int, max_iter: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(z (N, n), certified gap (N,), iterations)``: min ½zᵀHz − cᵀz over the product of m balls
    ``||z_i||_p <= r`` (module docstring); ``max_iter`` bounds the FISTA iterations (times 100)."""
    rr = np.asarray(r, float)
    z, its = _fista(H, c, rr, p, m, 100 * max_iter)
    z = _inside(z, rr, p, m)
    gap, _ = certified_gap(H, c, z, rr, p, m)
    for t in range(c.shape[0]):
        cand = _polish_one(H[t], c[t], z[t], float(rr[t]), p, m)
        if cand is None:
            continue
        cand = _inside(cand[None], rr[t : t + 1], p, m)
        g2, _ = certified_gap(H[t : t + 1], c[t : t + 1], cand, rr[t : t + 1], p, m)
        if g2[0] < gap[t]:
            z[t], gap[t] = cand[0], g2[0]
    return z, gap, its
