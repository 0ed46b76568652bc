r"""The rank-1 Burer–Monteiro landscape of quadratic clients whose Hessians differ: certified global
value, the stationarity and second-order test of an end point, and the instances (``pflmf.bm``'s family
"nonproportional").

Clients :math:`f_i(x) = \tfrac12(x - c_i)^\top A_i(x - c_i)` (so min f_i = 0), F(U, V) = (1/m)Σ f_i(Uv_i).
For r = 1 and a direction u ≠ 0 the best v_i is :math:`u^\top A_i c_i / u^\top A_i u`, so

.. math:: \min_V F(u, V) = g(u) := \frac1m\sum_i \tfrac12\Big(c_i^\top A_i c_i
          - \frac{(u^\top A_i c_i)^2}{u^\top A_i u}\Big),

a function of the direction u/‖u‖ only, and min F = min over the unit sphere of g (u = 0 gives F(0) =
max g, never less).  The global value is certified by exhaustive search over the sphere (a grid: the
circle for d = 2, a Fibonacci sphere for d = 3) and local refinement from the best grid points
(scipy's BFGS on g(w/‖w‖)).  With :math:`A_i = s_iA` (proportional Hessians) every local minimum is
global (Eckart–Young and Baldi–Hornik after whitening); with different A_i, g can have several wells.

Shapes: ``A`` ``(n, m, d, d)``, ``C`` ``(n, m, d)``; U ``(..., n, d)`` (r = 1: the column u), V
``(..., n, m)``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from moreau.analysis.engine.instances import log_uniform, orthogonal

__all__ = ["reduced", "sphere_grid", "certified_min", "gradient", "hessian", "classify", "draw"]

GRID = {2: 4096, 3: 20000, 4: 60000}  # points on the half sphere: spacing ~8e-4, 0.025, ~0.055 rad
REFINE = 4  # local refinements, from the best grid points


def reduced(A, C, u):
    r""":math:`g(u)` ``(..., n)`` for directions ``u`` ``(..., n, d)`` (any nonzero scale)."""
    Ac = np.einsum("nmij,nmj->nmi", A, C)
    num = np.einsum("...nd,nmd->...nm", u, Ac) ** 2
    den = np.einsum("...nd,nmde,...ne->...nm", u, A, u)
    full = np.einsum("nmi,nmi->nm", Ac, C)
    return 0.5 * np.mean(full - num / den, axis=-1)


def sphere_grid(d):
    """Unit vectors ``(N, d)`` covering the half sphere {u: u_1 >= 0} (g(u) = g(-u)), d in {2, 3, 4}:
    equispaced angles (d = 2), Fibonacci points (d = 3), a fixed (seed 0) uniform sample (d = 4)."""
    N = GRID.get(d)
    if N is None:
        raise ValueError(f"sphere_grid needs d in {sorted(GRID)} (got d={d})")
    if d == 2:
        t = np.pi * (np.arange(N) / N - 0.5)
        return np.stack([np.cos(t), np.sin(t)], axis=-1)
    if d == 4:
        G = np.random.default_rng(0).standard_normal((N, 4))
        G /= np.linalg.norm(G, axis=-1, keepdims=True)
        return G * np.sign(G[:, :1])
    k = np.arange(N) + 0.5  # Fibonacci points of the half sphere
    z = k / N
    phi = np.pi * (1 + 5**0.5) * k
    rho = np.sqrt(1 - z**2)
    return np.stack([z, rho * np.cos(phi), rho * np.sin(phi)], axis=-1)


def certified_min(A, C):
    """``(value, u)``: the global minimum of g over the sphere ``(n,)`` and a minimiser ``(n, d)``."""
    n, _, d = C.shape
    G = sphere_grid(d)
    best, arg = np.zeros(n), np.zeros((n, d))
    for j in range(n):
        Aj, Acj = A[j], np.einsum("mij,mj->mi", A[j], C[j])
        full = np.einsum("mi,mi->m", Acj, C[j])
        GA = (G @ np.swapaxes(Aj, 0, 1).reshape(d, -1)).reshape(-1, Aj.shape[0], d)  # (N, m, d): one matmul
        den = np.sum(GA * G[:, None, :], axis=-1)  # (N, m): u^T A_i u
        vals = 0.5 * np.mean(full - (G @ Acj.T) ** 2 / den, axis=-1)  # g on the grid, (N,)

        def f(w, Aj=Aj, Acj=Acj, full=full):
            p, q, Aw = Acj @ w, np.einsum("i,mij,j->m", w, Aj, w), Aj @ w
            grad = -np.mean((p / q)[:, None] * Acj - ((p / q) ** 2)[:, None] * Aw, axis=0)
            return 0.5 * np.mean(full - p**2 / q), grad

        cands = [G[i] for i in np.argpartition(vals, REFINE)[:REFINE]]
        res = [
            minimize(f, w, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 500}) for w in cands
        ]
        k = int(np.argmin([r.fun for r in res]))
        best[j] = min(res[k].fun, vals.min())
        arg[j] = res[k].x / np.linalg.norm(res[k].x)
    return best, arg


def _parts(A, C, U, V):
    E = V[..., None] * U[..., None, :] - C  # (..., n, m, d): x_i - c_i
    Ge = np.einsum("nmij,...nmj->...nmi", A, E)  # A_i (x_i - c_i)
    return E, Ge


def gradient(A, C, U, V):
    r"""``(gU, gV)`` of F at (U, V), r = 1: :math:`\nabla_u F = \tfrac1m\sum_i v_i A_i(uv_i - c_i)`,
    :math:`\partial_{v_i}F = \tfrac1m u^\top A_i(uv_i - c_i)`."""
    m = C.shape[-2]
    _, Ge = _parts(A, C, U, V)
    return np.einsum("...nm,...nmi->...ni", V, Ge) / m, np.einsum("...ni,...nmi->...nm", U, Ge) / m


def hessian(A, C, U, V):
    r"""The Hessian of F in (u, v) ``(..., n, d+m, d+m)``, r = 1:
    :math:`\partial^2_{uu} = \tfrac1m\sum v_i^2A_i`, :math:`\partial^2_{u v_i} = \tfrac1m(A_i(uv_i - c_i) + v_iA_iu)`,
    :math:`\partial^2_{v_iv_i} = \tfrac1m u^\top A_iu`."""
    m, d = C.shape[-2:]
    _, Ge = _parts(A, C, U, V)
    lead = V.shape[:-1]
    H = np.zeros(lead + (d + m, d + m))
    H[..., :d, :d] = np.einsum("...nm,nmij->...nij", V**2, A) / m
    cross = (Ge + V[..., None] * np.einsum("nmij,...nj->...nmi", A, U)) / m  # (..., n, m, d)
    H[..., :d, d:] = np.swapaxes(cross, -1, -2)
    H[..., d:, :d] = cross
    diag = np.einsum("...ni,nmij,...nj->...nm", U, A, U) / m
    idx = np.arange(m) + d
    H[..., idx, idx] = diag
    return H


def classify(A, C, U, V, value, fstar, scale, *, value_tol, grad_tol=1e-7, eig_tol=1e-7):
    """Per run ``(...,n)``: ``stationary`` (‖∇F‖ <= grad_tol·scale), ``second_order`` (the Hessian's
    eigenvalues >= -eig_tol·scale: PSD up to rounding; the scaling u -> αu, v -> v/α leaves one 0),
    ``spurious`` (both, and F above the certified global by more than value_tol·scale)."""
    gU, gV = gradient(A, C, U, V)
    gnorm = np.sqrt(np.sum(gU**2, axis=-1) + np.sum(gV**2, axis=-1))
    low = np.linalg.eigvalsh(hessian(A, C, U, V))[..., 0]
    stationary = gnorm <= grad_tol * scale
    second = low >= -eig_tol * scale
    spurious = stationary & second & (value - fstar > value_tol * scale)
    return stationary, second, spurious


def draw(rng, n, m=4, d=3, *, kappa=(4.0, 30.0)):
    r"""``n`` instances of m non-proportional clients in dimension d: each client's Hessian
    :math:`A_i = s_iQ_i\,\mathrm{diag}(1, \kappa_{i2}, \dots)\,Q_i^\top` is soft along its own centre
    (:math:`Q_ie_1 = c_i/\|c_i\|`) and stiff across it (κ log-uniform in ``kappa``), so each client is a
    well of g around its own direction; s_i in [0.5, 2], centres with norms in [0.5, 2].  Returns
    ``A`` ``(n, m, d, d)``, ``C`` ``(n, m, d)``."""
    C = rng.standard_normal((n, m, d))
    C *= (rng.uniform(0.5, 2.0, (n, m)) / np.linalg.norm(C, axis=-1))[..., None]
    Q = orthogonal(rng, n * m, d).reshape(n, m, d, d)
    e = C / np.linalg.norm(C, axis=-1, keepdims=True)
    Q[..., 0] = e  # Gram-Schmidt the rest against the centre's direction
    Q, R = np.linalg.qr(Q)
    Q *= np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]
    a = np.concatenate([np.ones((n, m, 1)), log_uniform(rng, *kappa, (n, m, d - 1))], axis=-1)
    s = rng.uniform(0.5, 2.0, (n, m))
    A = s[..., None, None] * np.einsum("nmij,nmj,nmkj->nmik", Q, a, Q)
    return (A + np.swapaxes(A, -1, -2)) / 2, C
