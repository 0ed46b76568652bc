r"""fw.nonconvex — thesis (Dadras), chapter 2, Theorem 6 (Frank–Wolfe, nonconvex).

Statement (thesis): for problem (2.4), min over a convex compact B ⊂ R^d, F L-smooth and
not necessarily convex, the Frank–Wolfe algorithm (FW) — s^t ∈ argmin_{x∈B} ⟨∇F(x^t), x⟩,
x^{t+1} = (1 − η_t)x^t + η_t s^t, η_t = 2/(t+2), x^0 ∈ R^d — satisfies

    min_{0≤t≤T−1} gap(x^t) ≤ max{2(F(x^0) − F*), LR²}/√T,                     (2.5)

F* = min_B F, R the diameter of B, gap(x) = max_{u∈B} ⟨∇F(x), x − u⟩ (2.6).  No range of T
is given (read: every T ≥ 1).  The bound is Lacoste-Julien's (2016, Thm. 1), proved for
the adaptive step η_t = min{gap(x^t)/(LR²), 1} and x^0 ∈ B (his curvature constant
C ≤ LR² is a sup over x, s ∈ B); the thesis attaches it to (FW) with η_t = 2/(t+2) and
lets x^0 ∈ R^d.  Checked: (a) (FW) with η_t = 2/(t+2) and x^0 ∈ B (the printed
algorithm); (b) the adaptive step — each as printed (x^0 anywhere: the claim) and under the
reading "x⁰ ∈ B".  x^0 outside B is drawn: there the printed bound fails (``findings``).

Assumptions: F L-smooth (L = max |eigenvalue| on quadratics), B convex compact with
diameter R.

Instances (quadratic): F(x) = ½xᵀAx − bᵀx, d = 3, on boxes B = [−h, h] (R = 2‖h‖, the LMO picks
the vertex given by the gradient's signs, gap(x) = ⟨∇F(x), x⟩ + Σ|∂_iF(x)| h_i) — the default's first
32 instances, drawn as before — and on Euclidean balls, scaled simplices and ℓ1 balls (``thesis.fw.sets``:
exact LMOs, R = 2r, √2 r, 2r; the other 32, ``--trials T``: T // 8 per set).  A indefinite
(a_1 < 0 < a_3; a_1 = −L on half of them), concave (all a_k ≤ 0), convex (a_1 = 0) and strongly convex,
L log-uniform in [0.1, 10]; the unconstrained stationary point z (b = Az) inside, just outside or far
outside B; x^0 at a random point of B, at a vertex (a random point of the sphere), or (a quarter)
outside B: on convex ones at 2z − x* beyond a far z (x* the minimiser on B; F(x^0) = F* as F is
symmetric about z, and the LMO at x^0 sends x^1 to the far side of B: the finding's construction),
on the others at random points up to 20h away.  On the non-box sets up to three convex instances
per set are adversarial: a diametral pair p, q of B, curvature L along u = (q − p)/R and |A| across,
z = p + θ(q − p), x^0 = q, θ ∈ {0, ½, ¼}: gap(x^0) = (1 − θ)LR² and 2(F(x^0) − F*) = (1 − θ)²LR², so
the ratio at T = 1 is 1 − θ: θ = 0 attains the bound (equality), θ = ½ rejects R → R/2.
F* = min_B F: on polytopes (boxes, simplices, ℓ1 balls) exactly — the global minimiser lies in the
relative interior of a face where F restricted to the face is stationary, so the minimum over the
faces' stationary points (nonsingular systems; a singular face reduces to a smaller one with the same
value) and the vertices is F*; on balls the trust-region subproblem (any A, the hard case included)
by the secular equation, bracketed by its Lagrange dual; the bracket's upper end is used (F(x^0) − F*
errs low, so does the bound).

Sides (lhs <= rhs): per instance the horizon T = 1..200 with the largest lhs/rhs, lhs the
running minimum of gap(x^t).

Claimed by the thesis: a rate (an upper bound).  What the check shows: (a) and (b) hold for
x^0 ∈ B (max ratios 0.6–0.9 on the boxes of the default runs, exactly 1 on the adversarial
instances of the other sets); the largest ratios are at T = 1, where
gap(x^0) ≤ √(2(F(x^0) − F*)LR²) ≤ max{2(F(x^0) − F*), LR²} (smoothness along the segment
from x^0 ∈ B to s^0 ∈ B); both steps are equalities for a convex quadratic with curvature L along a
diametral segment, its minimiser at one end and x^0 at the other: the bound is attained at T = 1 on
every set with a diametral pair (not on the checker's boxes, whose A is not adversarial).  Each
set's instances alone reject every mutant on some seed in 0–2; "rate 1/T" is rejected only through
the adaptive step (b) on indefinite instances (a_1 = −L, slow ~1/T decay of the gap): by the box and
ball instances alone on each of seeds 0–9, by the simplex ones on 7 and the ℓ1-ball ones on 8 of them
(the whole batch on every seed).  For η_t = 2/(t+2) the textbook argument gives only
Σ_t η_t gap(x^t) ≤ F(x^0) − F* + (LR²/2)Σ_t η_t², i.e. an O(1/log T) rate, so (a) is not
covered by the proof; in an exploratory search (20000 instances of this generator, not
part of the default run) its ratio over T ≥ 20 stayed below 0.12 (the adaptive step's
below 0.39), and the slowest instances' gaps fall like 1/t² later: no counterexample
found.  For x^0 outside B the bound fails (findings).
"""

from __future__ import annotations

import itertools

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, scale_fields, worst_point
from moreau.analysis.engine.instances import log_uniform, orthogonal
from moreau.analysis.thesis.fw.sets import (
    boxes_then_sets,
    contains,
    diameter,
    diametral,
    extreme_points,
    kind_of,
    lmo,
    sample_in,
    set_min,
)

__all__ = ["STATEMENT", "box_min", "fw_gaps"]

D, N_FW = 3, 200


def _anywhere(x0, h, kind):
    return np.ones(x0.shape[0], bool)


def _in_b(x0, h, kind):
    return contains(x0, h, kind)


#: Theorem 6 as printed: x^0 in R^d
CLAIM = {
    "bound": lambda h0, L, R, T: np.maximum(2 * h0, L * R**2) / np.sqrt(T),
    "start": _anywhere,
}
READINGS = (
    Reading(
        "x⁰ ∈ B",
        {"start": _in_b},
        why="the hypothesis of the theorem the bound is (Lacoste-Julien 2016, Theorem 1): its curvature constant "
        "C <= L R^2 is a sup over x, s in B",
        repairs="missing hypothesis",
    ),
)

PART_A = "(a) eta_t = 2/(t+2): min_{t<T} gap(x^t) <= max{2(F(x^0) - F*), L R^2}/sqrt(T), T = 1..200"
PART_B = "(b) eta_t = min{gap(x^t)/(L R^2), 1} (the proof's step): same bound, T = 1..200"


def box_min(A, b, h):
    r"""Exact ``min_{[-h, h]} ½xᵀAx − bᵀx`` for any symmetric A (d small) and a minimiser: ``(T,), (T, d)``.

    Every face (each coordinate at −h_i, free, or at h_i: 3^d faces) contributes the stationary
    point of F on its affine hull when the free block of A is nonsingular and the point lies in
    the box (to 1e-12 relative, then clipped).  Shapes: ``A`` ``(T, d, d)``, ``b, h`` ``(T, d)``.
    """
    T, d = b.shape
    best, arg = np.full(T, np.inf), np.zeros((T, d))
    for pat in itertools.product((0, 1, 2), repeat=d):
        pat = np.array(pat)
        free = pat == 1
        fixed = np.where(pat == 0, -h, h)
        M = np.where(free[None, :, None] & free[None, None, :], A, np.eye(d))
        r = np.where(free, b - np.einsum("tij,tj->ti", A * (~free)[None, None, :], fixed), fixed)
        with np.errstate(all="ignore"):
            ok = np.abs(np.linalg.det(M)) > 1e-10 * np.maximum(np.max(np.abs(M), axis=(1, 2)), 1e-300) ** d
            x = np.linalg.solve(np.where(ok[:, None, None], M, np.eye(d)), r[..., None])[..., 0]
        ok &= np.all(np.abs(x) <= h * (1 + 1e-12), axis=-1)
        x = np.clip(x, -h, h)
        F = 0.5 * np.einsum("ti,tij,tj->t", x, A, x) - np.sum(b * x, axis=-1)
        better = ok & (F < best)
        best, arg = np.where(better, F, best), np.where(better[:, None], x, arg)
    return best, arg


def fw_gaps(A, b, h, x0, steps="2/(t+2)", L=None, R=None, kind=None):
    """``(gap(x^t), F(x^t))`` for ``t = 0..N_FW-1``, each ``(N_FW, T)``: FW with the given steps on each
    instance's set (``kind``: ``thesis.fw.sets`` codes; None: the box [-h, h])."""
    kind = np.zeros(b.shape[0], int) if kind is None else kind
    x, gaps, F = x0, [], []
    for t in range(N_FW):
        g = np.einsum("tij,tj->ti", A, x) - b
        s = lmo(g, h, kind)
        gap = np.sum(g * (x - s), axis=-1)
        gaps.append(gap)
        F.append(0.5 * np.einsum("ti,tij,tj->t", x, A, x) - np.sum(b * x, axis=-1))
        eta = 2 / (t + 2) if steps == "2/(t+2)" else np.clip(gap / (L * R**2), 0.0, 1.0)
        x = x + np.asarray(eta)[..., None] * (s - x)
    return np.array(gaps), np.array(F)


def instances(family, trials, rng):
    return boxes_then_sets(trials, rng, _box_instances, _set_instances)


def _curvatures(rng, T):
    """Eigenvalues ``(T, D)`` and L: indefinite (a_1 = -L on half), concave, convex (a_1 = 0), strongly convex."""
    kind = np.arange(T) % 4
    L = log_uniform(rng, 0.1, 10.0, T)
    a = L[:, None] * rng.uniform(-1.0, 1.0, (T, D))
    a[:, -1] = L
    k0 = kind == 0
    a[k0, 0] = -np.where(np.arange(k0.sum()) % 2 == 0, 1.0, rng.uniform(0.05, 1.0, k0.sum())) * L[k0]
    a[kind == 1] = -np.abs(a[kind == 1])
    a[kind == 1, 0] = -L[kind == 1]
    a[kind == 2] = np.abs(a[kind == 2])
    a[kind == 2, 0] = 0.0
    a[kind == 3] = np.maximum(np.abs(a[kind == 3]), 0.01 * L[kind == 3, None])
    a = np.sort(a, axis=1)
    V = orthogonal(rng, T, D)
    A = (V * a[:, None, :]) @ np.swapaxes(V, 1, 2)
    return (A + np.swapaxes(A, 1, 2)) / 2, a, kind


def _set_instances(T, rng):
    """Ball, simplex and l1-ball instances: the curvatures of the boxes; the stationary point z inside
    (0.6 x a random point of B), just outside (2 x) or far (10 r along a random direction); x^0 a random
    point of B or an extreme point, or (a quarter) outside B: at 2z - x* beyond a far z on the convex ones
    (F(x^0) = F*), at random points up to 20 r away on the others."""
    A, a, curv = _curvatures(rng, T)
    kind = 1 + rng.permutation(np.arange(T) % 3)
    h = np.repeat(rng.uniform(0.5, 2.0, (T, 1)), D, axis=1)
    where = rng.integers(0, 3, T)
    z = sample_in(rng, h, kind) * np.array([0.6, 2.0, 1.0])[where, None]
    u = rng.standard_normal((T, D))
    far = where == 2
    z[far] = 10 * h[far] * u[far] / np.linalg.norm(u[far], axis=-1, keepdims=True)
    x0 = sample_in(rng, h, kind)
    E = extreme_points(h, kind, rng)
    vert = rng.uniform(size=T) < 0.3
    x0[vert] = E[vert, rng.integers(0, E.shape[1], vert.sum())]
    far2 = np.zeros(T, bool)
    far2[np.flatnonzero(curv >= 2)[1::4]] = True
    far2[np.flatnonzero(curv >= 2)[::8]] = True
    z[far2] = 10 * h[far2] * u[far2] / np.linalg.norm(u[far2], axis=-1, keepdims=True)
    _, _, xs = set_min(A[far2], np.einsum("tij,tj->ti", A[far2], z[far2]), h[far2], kind[far2], convex=False)
    x0[far2] = 2 * z[far2] - xs
    rand = np.zeros(T, bool)
    rand[np.flatnonzero(curv < 2)[1::4]] = True
    x0[rand] = h[rand] * rng.choice([-1.0, 1.0], (rand.sum(), D)) * rng.uniform(1.2, 20.0, (rand.sum(), D))
    # adversarial (every fourth instance of each set): a diametral pair p, q of B, curvature L along
    # u = (q - p)/R and |A| across, z = p + theta (q - p), x^0 = q: gap(x^0) = (1 - theta) L R^2, F* = F(z),
    # 2(F(x^0) - F*) = (1 - theta)^2 L R^2: the ratio at T = 1 is 1 - theta (theta = 0: the bound is attained)
    adv = [np.flatnonzero((kind == k) & (curv >= 2) & ~far2)[:3] for k in (1, 2, 3)]  # keep the nonconvex
    theta = np.concatenate([np.array([0.0, 0.5, 0.25])[np.arange(j.size) % 3] for j in adv])
    adv = np.concatenate(adv)
    p, q = diametral(h[adv], kind[adv], rng)
    u = (q - p) / np.linalg.norm(q - p, axis=-1, keepdims=True)
    P = np.eye(D) - u[:, :, None] * u[:, None, :]
    w, V = np.linalg.eigh(A[adv])
    absA = (V * np.abs(w)[:, None, :]) @ np.swapaxes(V, 1, 2)
    Lj = np.max(np.abs(a[adv]), axis=1)
    A[adv] = Lj[:, None, None] * u[:, :, None] * u[:, None, :] + P @ absA @ P
    A[adv] = (A[adv] + np.swapaxes(A[adv], 1, 2)) / 2
    z[adv], x0[adv] = p + theta[:, None] * (q - p), q
    L = np.max(np.abs(np.linalg.eigvalsh(A)), axis=1)
    return {"A": A, "b": np.einsum("tij,tj->ti", A, z), "L": L, "h": h, "x0": x0, "set": kind.astype(float)}


def _box_instances(T, rng):
    A, a, kind = _curvatures(rng, T)
    h = rng.uniform(0.5, 2.0, (T, D))
    where = rng.integers(0, 3, T)  # stationary point inside / just outside / far outside
    z = h * rng.uniform(-1, 1, (T, D)) * np.array([0.6, 2.0, 1.0])[where, None]
    far = where == 2
    z[far] = 10 * h[far] * rng.choice([-1.0, 1.0], (far.sum(), D))
    x0 = h * rng.uniform(-1, 1, (T, D))
    vert = rng.uniform(size=T) < 0.3
    x0[vert] = h[vert] * rng.choice([-1.0, 1.0], (vert.sum(), D))
    # x^0 = 2z - x* (x* the minimiser on B) beyond a far stationary point z: F(x^0) = F* (F is symmetric
    # about z), so the bound is L R^2/sqrt(T), and the LMO at x^0 sends x^1 to the far side of B
    far2 = np.zeros(T, bool)
    far2[np.flatnonzero(kind >= 2)[1::4]] = True  # convex ones: there gap(x^0) > 0
    z[far2] = 10 * h[far2] * rng.choice([-1.0, 1.0], (far2.sum(), D))
    _, xs = box_min(A[far2], np.einsum("tij,tj->ti", A[far2], z[far2]), h[far2])
    x0[far2] = 2 * z[far2] - xs
    rand = np.zeros(T, bool)  # random points outside the box
    rand[np.flatnonzero(kind < 2)[1::4]] = True
    x0[rand] = h[rand] * rng.choice([-1.0, 1.0], (rand.sum(), D)) * rng.uniform(1.2, 20.0, (rand.sum(), D))
    return {
        "A": A,
        "b": np.einsum("tij,tj->ti", A, z),
        "L": np.max(np.abs(a), axis=1),
        "h": h,
        "x0": x0,
        "set": np.zeros(T),
    }


def evaluate(batch, claim):
    A, b, L, h, x0 = (batch[k] for k in ("A", "b", "L", "h", "x0"))
    kind = kind_of(batch)
    R = diameter(h, kind)
    Fstar, _ = box_min(A, b, h)
    other = kind != 0
    if other.any():  # the bracket's upper end: F(x^0) - F* errs low, so does the bound
        Fstar[other] = set_min(A[other], b[other], h[other], kind[other], convex=False)[1]
    T = np.arange(1, N_FW + 1)[:, None]
    consts = {
        "L": "exact: max |eigenvalue| of A",
        "R": "exact: diameter 2 ||h|| of the box",
        "F*": "exact: min over the stationary points of the 3^d faces (global, nonconvex allowed)",
        "gap": "exact: box LMO",
    }
    app = claim["start"](x0, h, kind)
    out = {}
    for name, steps in ((PART_A, "2/(t+2)"), (PART_B, "adaptive")):
        gaps, F = fw_gaps(A, b, h, x0, steps, L, R, kind)
        lhs = np.minimum.accumulate(gaps, axis=0)
        rhs = claim["bound"](F[0] - Fstar, L, R, T)
        out[name] = Sides(
            *worst_point(lhs, rhs, np.ones(lhs.shape, bool)),
            "upper",
            applicable=app,
            constants=consts,
            note="x^0 drawn in B and outside it (every start the claim admits is checked)",
        )
    return out


STATEMENT = Statement(
    id="fw.nonconvex",
    source="Dadras thesis, ch. 2, Theorem 6, eq. (2.5)",
    paper="dadras-thesis-personalized-fl.md",
    latex=r"\min_{0\le t\le T-1} \mathrm{gap}(x^t) \le \frac{\max\{2(F(x^0) - F^*), LR^2\}}{\sqrt T}"
    r"\ (x^0 \in \mathbb{R}^d)",
    text="Frank-Wolfe on an L-smooth (possibly nonconvex) F over a compact convex set of diameter R: "
    "min_{t<T} gap(x^t) <= max{2(F(x^0) - F*), L R^2}/sqrt(T) (as printed: x^0 in R^d)",
    assumptions=(
        "F L-smooth, not necessarily convex",
        "B compact convex, diameter R",
        "(a) eta_t = 2/(t+2) (the thesis's FW); (b) eta_t = min{gap/(L R^2), 1}",
        "x^0 in R^d",
    ),
    families={
        "quadratic": (
            "indefinite, concave, convex, strongly convex on boxes, Euclidean balls, simplices, l1 balls",
        )
    },
    claimed="rate",
    instances=instances,
    evaluate=evaluate,
    claim=CLAIM,
    readings=READINGS,
    expect="fails",
    # d = 1, B = [-1, 1], F = (x - 10)^2/2, x^0 = 19 outside B (F(x^0) = F*): min gap 45 times the bound at T = 1
    counterexamples={
        "quadratic": {
            "A": np.ones((1, 1, 1)),
            "b": np.full((1, 1), 10.0),
            "L": np.ones(1),
            "h": np.ones((1, 1)),
            "x0": np.full((1, 1), 19.0),
        }
    },
    scaling={
        "quadratic": scale_fields({"A": (-2, 1), "b": (-1, 1), "L": (-2, 1), "h": (1, 0), "x0": (1, 0)})
    },
    mutants=(
        Mutant(
            "max{F(x^0) - F*, L R^2/2} (both branches halved)",
            {"bound": lambda h0, L, R, T: np.maximum(h0, L * R**2 / 2) / np.sqrt(T)},
        ),
        Mutant(
            "R the radius (R/2) instead of the diameter",
            {"bound": lambda h0, L, R, T: np.maximum(2 * h0, L * R**2 / 4) / np.sqrt(T)},
        ),
        Mutant("rate 1/T for 1/sqrt(T)", {"bound": lambda h0, L, R, T: np.maximum(2 * h0, L * R**2) / T}),
        Mutant("inequalities reversed", {"flip": (PART_A, PART_B)}),
    ),
    findings=(
        "Theorem 6 as printed (x^0 in R^d) fails for x^0 outside B: d = 1, B = [-1, 1] (R = 2), F(x) = (x - 10)^2/2 "
        "(L = 1, F* = F(1) = 40.5), x^0 = 19 (F(x^0) = F*, so the bound is L R^2/sqrt(T) = 4/sqrt(T)): gap(x^0) = 180, "
        "x^1 = -1 (gap 22), x^2 = 1/3 (gap 58/9), x^3 = 2/3 (gap 28/9), x^4 = 4/5 (gap 46/25): min_{t<T} gap(x^t) "
        "is 45, 7.78, 2.79, 1.56, 1.03 times the bound at T = 1..5 (0.75 at T = 6). "
        "With x^0 in B it holds on every instance, with the thesis's eta_t = 2/(t+2) and with the adaptive step "
        "of the proof (Lacoste-Julien 2016, Theorem 1).",
    ),
)
