r"""The exact target of FedFW: the minimiser of (4.4) (or of the penalised consensus problem) over a
box, an ℓ1 or an ℓ2 ball, with a certified suboptimality bound (the Frank–Wolfe gap plus the rounding
of its own evaluation).  :func:`moreau.fl.fedfw` is in ``moreau.fl._fedfw``; this module is the
target it is measured against (Dadras thesis §4.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._backend import to_numpy
from .._objective import Objective
from .._typing import Array
from ._ball_qp import ball_qp, project
from ._common import (
    check_objective,
    count,
    lead_shape,
    positive,
)
from ._lmo import Box, ConvexSet, L1Ball, L2Ball, check_set

__all__ = ["fedfw_optimum", "FedFWTarget"]


# -- the exact target --------------------------------------------------------------------------


@dataclass(frozen=True)
class FedFWTarget:
    r"""What :func:`fedfw_optimum` returns (``x``, ``X`` in the objective's namespace, the rest host).

    ``x`` ``(*lead, d)``: the minimiser of (4.4) (``lam`` None), or the mean :math:`\bar x` of the
    penalised optimum; ``X`` ``(*lead, m, d)``: the clients' models (``x`` for every client when
    ``lam`` is None); ``value``: F(x), or :math:`\Phi_\lambda(X)`; ``gap``: the Frank–Wolfe duality gap
    of that problem at the returned (feasible) point plus the rounding bound of its evaluation: a
    certified bound on value − optimum (convexity); ``kkt``: :math:`\|z - P_{\mathcal D}(z - \nabla)\|_\infty`,
    the projected-gradient residual (0 exactly at a KKT point); ``iterations``: active-set
    iterations (box: primal–dual passes plus primal steps on a singular Hessian) or accelerated
    projected-gradient iterations (balls).
    """

    x: Array
    X: Array
    value: np.ndarray
    gap: np.ndarray
    kkt: np.ndarray
    iterations: int


def fedfw_optimum(
    objective: Objective, constraint: ConvexSet, *, lam: float | Array | None = None, max_iter: int = 100
) -> FedFWTarget:
    r"""The exact point FedFW targets, on convex quadratic clients over a :class:`Box`, an
    :class:`L1Ball` or an :class:`L2Ball` (the sets of the papers' experiments).

    ``lam`` None: the constrained optimum of (4.4), :math:`\min_{x\in\mathcal D}\frac1n\sum_i f_i(x)`,
    a QP with Hessian :math:`\bar A = \frac1n\sum_i A_i`.  ``lam`` > 0 (personalised FedFW, a fixed
    λ): :math:`\min_{X\in\mathcal D^n}\Phi_\lambda(X)`, a QP in nd variables over the product of n
    copies of the set, with Hessian
    :math:`\mathrm{blockdiag}(A_i)/n + \lambda(I_n - \frac1n\mathbf 1\mathbf 1^\top)\otimes I_d`.

    Solved on the host.  Box: the primal–dual active-set method (a semismooth Newton method on
    :math:`z = P_{[lo,hi]}(z - D^{-1}\nabla)`, D the Hessian's diagonal: fix the coordinates the
    step pushes out of the box at their bound, solve the stationarity equations on the rest, repeat
    until the sets stop changing), polished by projected gradient where the sets cycle; where the
    certified gap is still above 1e-13 of the problem's scale (a singular Hessian: the free block's
    equations have no unique solution), the primal active-set method with the free block's
    pseudo-inverse, and a step to the bounds along its null space where F decreases linearly there
    (so boxes whose Hessian is only positive semidefinite are solved exactly too).  Balls
    (:mod:`moreau.fl._ball_qp`): accelerated projected gradient with restart (projections in closed
    form: :math:`z\min(1, r/\|z\|_2)`; the sort-based ℓ1 projection), at most ``100 max_iter``
    iterations, then the exact KKT solution on the face it identifies (ℓ1: a linear system on the
    support with its signs; ℓ2: Newton on :math:`(H + \nu_i I)z = c`, :math:`\|z_i\| = r`), kept
    where its certificate is smaller; the point is pulled into each ball by a relative margin of a
    few eps, so it is feasible in exact arithmetic.

    Certificate returned with it (:class:`FedFWTarget`): the point is feasible and ``gap`` bounds its
    suboptimality, :math:`\mathrm{value} - \min \le \mathrm{gap}` (convex objective:
    :math:`F(z) - F^* \le \max_{s\in\mathcal D}\langle\nabla F(z), z - s\rangle`, the Frank–Wolfe
    gap, thesis eq. (2.6); no dual solve needed), with the rounding of its float64 evaluation added
    (an a-priori bound: the gradient within :math:`\gamma_{n+1}(|H||z| + |c|)`, then the dot
    products, norms and sums), so ``gap`` bounds the exact suboptimality of the returned point for
    the problem the float64 data represent (``value`` itself is a float64 evaluation).  At an exact
    solution ``gap`` and ``kkt`` are a few rounding units.

    Shapes: ``objective`` a :class:`moreau.Quadratic` (or LeastSquares) with batch ``(*trials, m)``
    and PSD ``A``; ``lam`` a number or an array broadcasting against the trial shape.

    References: thesis §4.3 (4.4) and "personalized FedFW"; Hintermüller, Ito, Kunisch (2003)
    for the active-set method; Duchi, Shalev-Shwartz, Singer, Chandra (2008) for the ℓ1 projection.
    """
    from .._quadratic import Quadratic

    max_iter = count(max_iter, "max_iter")  # 0 or fewer passes: no point returned is optimal
    f, m = check_objective(objective)
    if not isinstance(f, Quadratic):
        raise TypeError(
            "fedfw_optimum needs quadratic clients (moreau.Quadratic or LeastSquares); "
            f"got {type(f).__name__}"
        )
    C = check_set(constraint, f.dim, f.batch_shape[:-1])
    if not isinstance(C, Box | L1Ball | L2Ball):
        raise TypeError(f"fedfw_optimum solves over a Box, an L1Ball or an L2Ball (got {type(C).__name__})")
    lo_c, _ = f.curvature_bounds()
    low = float(np.min(np.asarray(to_numpy(lo_c))))
    if low < -1e-10 * max(1.0, float(np.max(np.asarray(to_numpy(f.smoothness()))))):
        raise ValueError(f"fedfw_optimum needs convex clients (PSD A); the smallest eigenvalue is {low:.3g}")
    xp, d = f.xp, f.dim
    lamv = None if lam is None else positive(lam, "lam", f)
    lead = lead_shape(f, *(() if lamv is None else (lamv,)))
    A = np.broadcast_to(np.asarray(to_numpy(f.A), float), lead + (m, d, d))
    b = np.broadcast_to(np.asarray(to_numpy(f.b), float), lead + (m, d))
    c0 = np.broadcast_to(np.asarray(to_numpy(f.c), float), lead + (m,)).mean(axis=-1)
    if lamv is None:
        H, c = A.mean(axis=-3), b.mean(axis=-2)
    else:
        lh = np.broadcast_to(np.asarray(to_numpy(lamv), float), lead)[..., None, None]
        P = np.kron(np.eye(m) - 1.0 / m, np.eye(d))
        H = np.zeros(lead + (m * d, m * d))
        for i in range(m):
            H[..., i * d : (i + 1) * d, i * d : (i + 1) * d] = A[..., i, :, :] / m
        H = H + lh * P
        c = b.reshape(lead + (m * d,)) / m
    blocks = 1 if lamv is None else m
    if isinstance(C, Box):
        lo, hi = (np.broadcast_to(a, lead + (d,)) for a in (C.lo, C.hi))
        blo, bhi = (np.tile(a, (1,) * len(lead) + (blocks,)) for a in (lo, hi))
        z, its = _box_qp(H, c, blo, bhi, max_iter)
        g = np.einsum("...ij,...j->...i", H, z) - c
        gap = _box_gap(H, c, z, g, blo, bhi)
        kkt = np.max(np.abs(z - np.clip(z - g, blo, bhi)), axis=-1)
    else:
        p = 1 if isinstance(C, L1Ball) else 2
        n = c.shape[-1]
        rr = np.broadcast_to(C.r, lead).reshape(-1)
        zf, gapf, its = ball_qp(H.reshape(-1, n, n), c.reshape(-1, n), rr, p, blocks, max_iter)
        z, gap = zf.reshape(c.shape), gapf.reshape(lead)
        g = np.einsum("...ij,...j->...i", H, z) - c
        proj = project((z - g).reshape(lead + (blocks, d)), np.broadcast_to(C.r, lead)[..., None], p)
        kkt = np.max(np.abs(z - proj.reshape(z.shape)), axis=-1)
    value = 0.5 * np.einsum("...i,...i->...", z, g - c) + c0
    X = np.broadcast_to(z[..., None, :], lead + (m, d)) if lamv is None else z.reshape(lead + (m, d))
    return FedFWTarget(
        x=xp.asarray(X.mean(axis=-2), dtype=f.dtype),
        X=xp.asarray(X, dtype=f.dtype),
        value=value,
        gap=gap,
        kkt=kkt,
        iterations=its,
    )


def _box_gap(
    H: np.ndarray, c: np.ndarray, z: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    r"""An upper bound on the exact Frank–Wolfe gap :math:`\sum_k g_k(z_k - s_k)` at the (feasible,
    clipped) ``z``: the computed gap plus the rounding of its evaluation (``g = fl(Hz − c)`` within
    :math:`\gamma_{n+1}(|H||z| + |c|)`, the differences z − s, the products and the sum: γ_{n+2})."""
    n = z.shape[-1]
    eps = float(np.finfo(np.float64).eps)
    gam = (n + 3) * eps / (2 - (n + 3) * eps)
    e = (n + 2) * eps / 2 * (np.einsum("...ij,...j->...i", np.abs(H), np.abs(z)) + np.abs(c)) * (1 + 8 * eps)
    s = np.where(g > 0, lo, hi)
    diff = np.maximum(np.abs(z - lo), np.abs(z - hi)) * (1 + eps)  # the exact g may pick the other bound
    computed = np.sum(g * (z - s), axis=-1)
    slack = np.sum(e * diff, axis=-1) + gam * np.sum(np.abs(g) * diff, axis=-1)
    return np.maximum(computed, 0.0) + slack * (1 + 8 * eps) + 4 * eps * np.abs(computed)


def _box_qp(
    H: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_iter: int
) -> tuple[np.ndarray, int]:
    """min ½zᵀHz − cᵀz on [lo, hi] (H PSD, batched): ``(z, iterations)``.  Primal-dual active sets from
    the clipped unconstrained solution; where the sets still change after ``max_iter`` passes, projected
    gradient (step 1/||H||) from the last point, then the active sets again.  Where the certified gap is
    then still above ~1e-13 of the problem's scale (a singular H: the free block's system has no
    unique solution, and the active sets wander), :func:`_primal_active_set` from that point, kept where
    its certificate is smaller."""
    shape, n = c.shape[:-1], c.shape[-1]
    H, c, lo, hi = (a.reshape((-1,) + a.shape[len(shape) :]) for a in (H, c, lo, hi))
    z, its, done = _active_sets(H, c, lo, hi, np.clip(_solve(H, c), lo, hi), max_iter)
    if not done:
        step = 1.0 / np.maximum(np.linalg.norm(H, ord=2, axis=(-2, -1)), 1e-300)[:, None]
        for _ in range(20 * max_iter):
            z = np.clip(z - step * (np.einsum("tij,tj->ti", H, z) - c), lo, hi)
        z, more, _ = _active_sets(H, c, lo, hi, z, max_iter)
        its += more
    gap = _box_gap(H, c, z, np.einsum("tij,tj->ti", H, z) - c, lo, hi)
    bad = np.flatnonzero(gap > 1e-13 * _gap_scale(H, c, lo, hi))
    if bad.size:
        zb, more = _primal_active_set(H[bad], c[bad], lo[bad], hi[bad], z[bad], max_iter)
        gb = _box_gap(H[bad], c[bad], zb, np.einsum("tij,tj->ti", H[bad], zb) - c[bad], lo[bad], hi[bad])
        better = gb < gap[bad]
        z[bad[better]] = zb[better]
        its += more
    return z.reshape(shape + (n,)), its


def _gap_scale(H: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The magnitude of the objective's terms on the box, ``(T,)``: ``||H|| w² + |c| w``, w = max(|lo|, |hi|)."""
    w = np.maximum(np.abs(lo), np.abs(hi))
    return np.einsum("ti,tij,tj->t", w, np.abs(H), w) + np.sum(np.abs(c) * w, axis=-1) + 1e-300


def _primal_active_set(
    H: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray, z: np.ndarray, max_iter: int
) -> tuple[np.ndarray, int]:
    r"""min ½zᵀHz − cᵀz on [lo, hi] for a PSD, possibly singular H, one instance at a time: the primal
    active-set method from the feasible ``z`` (Nocedal and Wright, Algorithm 16.3), with the free block's
    singular directions handled through its eigendecomposition :math:`H_{FF} = V\,\mathrm{diag}(w)V^	op`.
    On the free set F: where the gradient has a component in the null space of :math:`H_{FF}`, F is
    linear and decreasing along it, so the step follows it to the first bound; otherwise the
    minimum-norm Newton step :math:`-H_{FF}^{+}g_F` (the pseudo-inverse), cut at the first bound.  A
    blocking coordinate joins the bounds; after a full Newton step the bound with the most negative
    multiplier is released (none: the point is a KKT point, optimal by convexity).  At most
    ``10 max_iter`` steps per instance.  ``(z, steps)``."""
    z = z.copy()
    n, total = z.shape[-1], 0
    for t in range(z.shape[0]):
        Ht, ct, lt, ut, x = H[t], c[t], lo[t], hi[t], z[t]
        fixed = (x <= lt) | (x >= ut)
        for _ in range(10 * max_iter):
            total += 1
            g = Ht @ x - ct
            F = np.flatnonzero(~fixed)
            p = np.zeros(n)
            newton = True
            if F.size:
                w, V = np.linalg.eigh(Ht[np.ix_(F, F)])
                tol = 1e-12 * max(float(np.max(np.abs(w))), float(np.max(np.abs(Ht))), 1e-300)
                null = V[:, w <= tol]
                gn = null @ (null.T @ g[F])
                if np.linalg.norm(gn) > 1e-12 * (np.linalg.norm(g[F]) + np.linalg.norm(ct) + 1e-300):
                    p[F], newton = -gn, False  # zero curvature, F decreasing: go to a bound
                else:
                    r = w > tol
                    p[F] = -(V[:, r] / w[r]) @ (V[:, r].T @ g[F])
            if np.any(p != 0):
                with np.errstate(divide="ignore", invalid="ignore"):
                    room = np.where(p > 0, (ut - x) / p, np.where(p < 0, (lt - x) / p, np.inf))
                k = int(np.argmin(room))  # finite: p != 0 and the box is bounded
                alpha = float(room[k]) if not newton else min(1.0, float(room[k]))
                x = np.clip(x + alpha * p, lt, ut)
                if alpha < 1.0 or not newton:  # blocked by coordinate k: it joins the bounds
                    fixed[k] = True
                    x[k] = ut[k] if p[k] > 0 else lt[k]
                    continue
            g = Ht @ x - ct
            mult = np.where(x <= lt, g, np.where(x >= ut, -g, np.inf))  # >= 0 at a KKT point
            mult = np.where(fixed, mult, np.inf)
            j = int(np.argmin(mult))
            if not mult[j] < 0:
                break
            fixed[j] = False
        z[t] = x
    return z, total


def _active_sets(
    H: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray, z: np.ndarray, max_iter: int
) -> tuple[np.ndarray, int, bool]:
    """Semismooth Newton passes on z = P(z − D⁻¹∇): ``(z, passes, whether the sets settled)``."""
    n = c.shape[-1]
    scale = 1.0 / np.maximum(
        np.diagonal(H, axis1=-2, axis2=-1), 1e-12 * np.max(np.abs(H), axis=(-2, -1))[:, None] + 1e-300
    )
    pattern = None
    for its in range(1, max_iter + 1):
        g = np.einsum("tij,tj->ti", H, z) - c
        y = z - scale * g
        at_lo, at_hi = y <= lo, y >= hi
        new = np.where(at_lo, -1, np.where(at_hi, 1, 0))
        if pattern is not None and np.array_equal(new, pattern):
            return z, its, True
        pattern = new
        free = new == 0
        fixed = np.where(at_lo, lo, np.where(at_hi, hi, 0.0))
        M = np.where(free[:, :, None] & free[:, None, :], H, np.eye(n))
        rhs = np.where(free, c - np.einsum("tij,tj->ti", H, fixed), fixed)
        z = np.clip(np.where(free, _solve(M, rhs), fixed), lo, hi)
    return z, max_iter, False


def _solve(M: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``M z = r`` per instance; least squares where M is singular."""
    try:
        return np.linalg.solve(M, r[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.stack([np.linalg.lstsq(Mi, ri, rcond=None)[0] for Mi, ri in zip(M, r, strict=True)])
