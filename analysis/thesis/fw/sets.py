r"""Compact convex sets with an exact linear minimisation oracle, for the Frank–Wolfe checkers.

A batch names each instance's set by a code in the field ``set`` (float, for ``.npz``):
0 the box [−h, h] (the default when a batch has no ``set``), 1 the Euclidean ball ‖x‖ ≤ r,
2 the scaled probability simplex {x ≥ 0, Σx_i = r}, 3 the ℓ1 ball ‖x‖₁ ≤ r, where r = h_1
and the non-box sets store h = r·(1, ..., 1): [−h, h] is then a box containing the set, so a
point outside [−h, h] is outside the set whatever its kind.  Shapes: ``g, x, h`` ``(T, d)``,
``A`` ``(T, d, d)``, ``kind`` ``(T,)``.

* LMO s ∈ argmin_{u∈B} ⟨g, u⟩: box where(g > 0, −h, h); ball −r g/‖g‖ (0 at g = 0); simplex
  r e_i, i = argmin g_i; ℓ1 ball −r sign(g_i) e_i, i = argmax |g_i|.  gap(x) = ⟨g, x − s⟩.
* Diameter R (exact): box 2‖h‖, ball 2r, simplex √2 r (d ≥ 2), ℓ1 ball 2r.
* min_B ½xᵀAx − bᵀx (A symmetric, any sign): ``set_min`` gives a certified bracket
  (F_lo, F_hi) and a feasible point with value F_hi.  Polytopes (box, simplex, ℓ1 ball): the
  global minimiser lies in the relative interior of a face on which F is stationary (a face
  whose restricted Hessian is singular there holds the same value on a smaller face), so the
  minimum over the faces' nonsingular stationary points (3^d faces of the box, 2^d − 1 of the
  simplex, 3^d − 1 faces and the interior of the ℓ1 ball) is F*; for convex F the lower end is
  also certified by max F(x) − gap(x) over those feasible candidates (the FW duality gap).  Ball:
  the trust-region subproblem by the secular equation — bisection in λ ≥ max(0, −a_1) on
  Σ c_i²/(a_i + λ)² = r² (c = Vᵀb, A = V diag(a) Vᵀ); the lower end is the Lagrange dual
  q(λ) = −½Σ c_i²/(a_i + λ) − λr²/2 at the bracket's upper end λ (weak duality, any A), the upper
  end F at x(λ) and at x(λ) + τv_1 on the sphere (the hard case).
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = [
    "SETS",
    "kind_of",
    "lmo",
    "diameter",
    "contains",
    "set_min",
    "sample_in",
    "extreme_points",
    "diametral",
    "boxes_then_sets",
]

SETS = ("box", "ball", "simplex", "l1")
TOL = 1e-12  # membership tolerance of the non-box sets (relative to r); the box is exact


def kind_of(batch):
    """The set code of every instance (0, the box, when the batch has no ``set`` field)."""
    code = np.asarray(batch.get("set", np.zeros(np.shape(batch["x0"])[0])), float)
    if not np.all(np.isin(code, np.arange(len(SETS)))):
        bad = code[~np.isin(code, np.arange(len(SETS)))]
        raise ValueError(
            f"set must hold codes 0..{len(SETS) - 1} ({', '.join(SETS)}) (got {bad[:3].tolist()})"
        )
    return code.astype(int)


def _pick(kind, *cases):
    out = cases[0]
    for k, c in enumerate(cases[1:], 1):
        out = np.where((kind == k).reshape(kind.shape + (1,) * (np.ndim(c) - 1)), c, out)
    return out


def lmo(g, h, kind):
    """A minimiser ``(T, d)`` of ⟨g, u⟩ over each instance's set."""
    T, d = g.shape
    r = h[:, :1]
    ng = np.linalg.norm(g, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        ball = np.where(ng > 0, -r * g / ng, 0.0)
    e = np.eye(d)
    simplex = r * e[np.argmin(g, axis=-1)]
    i = np.argmax(np.abs(g), axis=-1)
    l1 = -r * np.sign(g[np.arange(T), i])[:, None] * e[i]
    return _pick(kind, np.where(g > 0, -h, h), ball, simplex, l1)


def diameter(h, kind):
    """Exact diameter ``(T,)``."""
    r = h[:, 0]
    return _pick(kind, 2 * np.linalg.norm(h, axis=-1), 2 * r, np.sqrt(2) * r, 2 * r)


def contains(x, h, kind):
    """``x ∈ B`` ``(T,)`` (box exact; the others to ``TOL`` r)."""
    r = h[:, 0]
    box = np.all(np.abs(x) <= h, axis=-1)
    ball = np.linalg.norm(x, axis=-1) <= r * (1 + TOL)
    simplex = (np.min(x, axis=-1) >= -TOL * r) & (np.abs(np.sum(x, axis=-1) - r) <= TOL * r)
    l1 = np.sum(np.abs(x), axis=-1) <= r * (1 + TOL)
    return _pick(kind, box, ball, simplex, l1)


def _value(A, b, x):
    return 0.5 * np.einsum("...i,...ij,...j->...", x, A, x) - np.sum(b * x, axis=-1)


# -- faces of the polytopes: (free coordinates, normal of the face's equation or None) ----------------
def _faces(d, kind):
    if kind == 0:
        for pat in itertools.product((-1, 0, 1), repeat=d):  # coordinate at -h / free / at +h
            yield np.array(pat)
    elif kind == 2:
        for S in itertools.product((0, 1), repeat=d):
            if any(S):
                yield np.array(S)
    else:
        for sig in itertools.product((-1, 0, 1), repeat=d):  # signs on the support; all zero: interior
            yield np.array(sig)


def _face_points(A, b, h, kind):
    """Stationary points ``(F, T, d)`` of F on each face's affine hull, and whether they count
    (nonsingular system, point in B), for the instances of one polytope kind."""
    T, d = b.shape
    r = h[:, :1]
    pts, oks = [], []
    for f in _faces(d, kind):
        if kind == 0:
            free, n, rho = f == 0, None, None
            fixed = f * h
        else:
            free = f != 0
            n = f.astype(float) if kind == 3 else free.astype(float)
            fixed = np.zeros_like(h)
            rho = r[:, 0]
            if kind == 3 and not free.any():
                free, n = np.ones(d, bool), None  # the interior of the l1 ball: unconstrained
        M = np.zeros((T, d + 1, d + 1))
        M[:, :d, :d] = np.where(free[None, :, None] & free[None, None, :], A, np.eye(d))
        rhs = np.zeros((T, d + 1))
        rhs[:, :d] = np.where(free, b - np.einsum("tij,tj->ti", A * (~free)[None, None, :], fixed), fixed)
        if n is None:
            M[:, d, d] = 1.0
        else:
            M[:, :d, d] = np.where(free, n, 0.0)
            M[:, d, :d] = np.where(free, n, 0.0)
            rhs[:, d] = rho
        with np.errstate(all="ignore"):
            s = np.linalg.svd(M, compute_uv=False)
            ok = s[:, -1] > 1e-10 * s[:, 0]
            x = np.linalg.solve(np.where(ok[:, None, None], M, np.eye(d + 1)), rhs[..., None])[:, :d, 0]
        x = np.where(free, x, fixed)
        if kind == 0:
            ok &= np.all(np.abs(x) <= h * (1 + 1e-12), axis=-1)
            x = np.clip(x, -h, h)
        elif kind == 2:
            ok &= np.all(x >= -1e-12 * r, axis=-1)
            x = np.maximum(x, 0.0)
            x = x * r / np.sum(x, axis=-1, keepdims=True)
        else:
            if n is not None:
                ok &= np.all(np.where(free, f * x >= -1e-12 * r, True), axis=-1)
                x = np.where(free, f * np.maximum(f * x, 0.0), 0.0)
                x = x * r / np.maximum(np.sum(np.abs(x), axis=-1, keepdims=True), 1e-300)
            else:
                ok &= np.sum(np.abs(x), axis=-1) <= r[:, 0] * (1 + 1e-12)
                x = x * np.minimum(1.0, r / np.maximum(np.sum(np.abs(x), axis=-1, keepdims=True), 1e-300))
        pts.append(x)
        oks.append(ok)
    return np.array(pts), np.array(oks)


def _polytope_min(A, b, h, kind, convex):
    P, ok = _face_points(A, b, h, kind)
    F = _value(A[None], b[None], P)
    hi = np.min(np.where(ok, F, np.inf), axis=0)
    arg = P[np.argmin(np.where(ok, F, np.inf), axis=0), np.arange(b.shape[0])]
    if not convex:
        return hi, hi, arg
    g = np.einsum("tij,fti->ftj", A, P) - b[None]
    gap = np.stack(
        [np.sum(g[k] * (P[k] - lmo(g[k], h, np.full(b.shape[0], kind))), axis=-1) for k in range(P.shape[0])]
    )
    return np.max(F - gap, axis=0), hi, arg  # every face point is feasible: F - gap <= F* (convex)


def _ball_min(A, b, r, iters=200):
    """Trust-region subproblem min_{‖x‖ ≤ r} ½xᵀAx − bᵀx: ``(q, F_hi, x)`` (see the module doc)."""
    a, V = np.linalg.eigh(A)
    c = np.einsum("tji,tj->ti", V, b)
    lam_min = np.maximum(0.0, -a[:, 0])
    lo, hi = lam_min.copy(), lam_min + np.linalg.norm(b, axis=-1) / r + np.abs(a[:, 0]) * 1e-15 + 1e-300
    n2 = lambda lam: np.sum(c**2 / (a + lam[:, None]) ** 2, axis=-1)  # noqa: E731
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            big = ~(n2(mid) <= r**2)  # inf / nan at the pole: still on the lower side
        lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
    y = c / (a + hi[:, None])
    q = -0.5 * np.sum(c * y, axis=-1) - hi * r**2 / 2
    x1 = np.einsum("tij,tj->ti", V, y)
    # the hard case: move along the bottom eigenvector onto the sphere
    y1 = y[:, 0]
    tau = -y1 + np.sign(y1 + (y1 == 0)) * np.sqrt(np.maximum(y1**2 + r**2 - np.sum(y**2, axis=-1), 0.0))
    x2 = x1 + tau[:, None] * V[:, :, 0]
    F1, F2 = _value(A, b, x1), _value(A, b, x2)
    use2 = (F2 < F1) & (np.linalg.norm(x2, axis=-1) <= r * (1 + TOL))
    return q, np.where(use2, F2, F1), np.where(use2[:, None], x2, x1)


def set_min(A, b, h, kind, convex=True):
    """Certified bracket ``(F_lo, F_hi)`` of min_B ½xᵀAx − bᵀx and a feasible point of value
    F_hi: ``(T,), (T,), (T, d)``.  ``convex=False``: A may be indefinite (the polytope bracket
    is then the face enumeration's minimum at both ends; the ball's stays the dual bound)."""
    T, d = b.shape
    lo, hi, arg = np.full(T, -np.inf), np.full(T, np.inf), np.zeros((T, d))
    for k in range(len(SETS)):
        m = kind == k
        if not m.any():
            continue
        if k == 1:
            l_, h_, x_ = _ball_min(A[m], b[m], h[m, 0])
        else:
            l_, h_, x_ = _polytope_min(A[m], b[m], h[m], k, convex)
        lo[m], hi[m], arg[m] = l_, h_, x_
    return lo, hi, arg


def sample_in(rng, h, kind):
    """A uniform random point of each set ``(T, d)``."""
    T, d = h.shape
    r = h[:, :1]
    box = h * rng.uniform(-1, 1, (T, d))
    u = rng.standard_normal((T, d))
    ball = r * u / np.linalg.norm(u, axis=-1, keepdims=True) * rng.uniform(0, 1, (T, 1)) ** (1 / d)
    simplex = r * rng.dirichlet(np.ones(d), T)
    l1 = r * rng.dirichlet(np.ones(d + 1), T)[:, :d] * rng.choice([-1.0, 1.0], (T, d))
    return _pick(kind, box, ball, simplex, l1)


def extreme_points(h, kind, rng, n_sphere=64):
    """Candidate extreme points ``(T, P, d)`` of each set: the box's 2^d vertices, the simplex's d and
    the ℓ1 ball's 2d vertices (repeated to P), ``n_sphere`` random points of the sphere."""
    T, d = h.shape
    r = h[:, 0, None, None]
    V = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    E = np.eye(d)
    P = max(2**d, 2 * d, n_sphere)
    rep = lambda X: np.resize(X, (P, d))  # noqa: E731
    box = rep(V)[None] * h[:, None, :]
    u = rng.standard_normal((T, P, d))
    ball = r * u / np.linalg.norm(u, axis=-1, keepdims=True)
    simplex = r * rep(E)[None]
    l1 = r * rep(np.concatenate([E, -E]))[None]
    return _pick(kind, box, ball, simplex, l1)


def diametral(h, kind, rng):
    """A pair of points of B at distance R: ball ±r u (u random), simplex r e_i, r e_j, l1 ball ±r e_i."""
    T, d = h.shape
    r = h[:, :1]
    u = rng.standard_normal((T, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    i = rng.integers(0, d, T)
    jj = (i + rng.integers(1, d, T)) % d
    E = np.eye(d)
    p = np.where((kind == 1)[:, None], -r * u, np.where((kind == 2)[:, None], r * E[i], -r * E[i]))
    q = np.where((kind == 1)[:, None], r * u, r * E[np.where(kind == 2, jj, i)])
    return p, q


def boxes_then_sets(trials, rng, boxes, sets):
    """A Frank–Wolfe checker's instances: by default the 32 box instances (``boxes(T, rng)``) drawn
    as before the other sets existed, then 32 on the other sets (``sets(T, rng)``); with ``--trials T``
    the sets get ``T // 8`` instances each (none below 8: the search's small batches stay boxes) and
    the boxes the rest."""
    T = trials or 64
    n_box = 32 if trials is None else T - 3 * (T // 8)
    box = boxes(n_box, rng)
    if T == n_box:
        return box
    other = sets(T - n_box, rng)
    return {k: np.concatenate([box[k], other[k]]) for k in box}
