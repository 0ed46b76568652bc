r"""fw.convex — thesis (Dadras), chapter 2, Theorem 5 (Frank–Wolfe, convex).

Statement (thesis): Frank–Wolfe s^t ∈ argmin_{x∈B} ⟨∇F(x^t), x⟩,
x^{t+1} = (1 − η_t)x^t + η_t s^t with η_t = 2/(t+2); F* := min_B F.
* Theorem 5: F(x^t) − F* ≤ 2LR²/(t+2).  The
  thesis gives no range for t and lets x^0 ∈ R^d: that is the claim checked (``CLAIM_FW``); the
  standard theorem (Jaggi 2013, Thm. 1) is for x^0 ∈ B and t ≥ 1: the reading "x⁰ ∈ B, t ≥ 1".  x^1 = s^0 lies in
  B whatever x^0 (η_0 = 1), but that does not give the bound: the proof's first
  step F(x^1) ≤ F(x^0) + ⟨∇F(x^0), s^0 − x^0⟩ + (L/2)‖s^0 − x^0‖² ≤ F* + LR²/2
  needs ‖s^0 − x^0‖ ≤ R, i.e. x^0 ∈ B, and from x^0 outside B the LMO picks
  s^0 by the gradient at a point outside B, possibly the vertex farthest from
  the minimiser.  Each printed element fails on its own (``findings``): t = 0 even for
  x^0 ∈ B (reading "x⁰ ∈ B, t ≥ 0"), and t ≥ 1 for x^0 outside B (reading "t ≥ 1, x⁰ anywhere").

Assumptions: F convex and L-smooth, B compact convex with diameter R.

Instances.  Convex quadratics (a_1 = 0 or > 0, d = 3) on four kinds of compact convex set with an
exact LMO (``thesis.fw.sets``; field ``set``, a batch without it is all boxes): boxes [−h, h] (R = 2‖h‖,
the vertex given by the gradient's signs), Euclidean balls ‖x‖ ≤ r (R = 2r, LMO −r g/‖g‖), scaled
simplices {x ≥ 0, Σx = r} (R = √2 r, the vertex r e_i of the smallest g_i) and ℓ1 balls ‖x‖₁ ≤ r
(R = 2r, the signed vertex −r sign(g_i) e_i of the largest |g_i|).  The default draws the 32 box
instances as before and 32 more on the other three sets (``--trials T``: T // 8 per set).  On each
set: minimisers inside, just outside, far outside (on balls, simplices, ℓ1 balls along a perturbed
top eigenvector), and adversarial: a diametral pair p, q of B (box ∓h, ball ∓r u, simplex r e_i, r e_j,
ℓ1 ball ∓r e_i), curvature L along q − p, minimiser p + 5·10⁻⁴(q − p), x^0 = p: the LMO jumps to q
and F(x^1) − F* → LR²/2; x^0 random in B or at its worst point (the best vertex; on the ball the
trust-region maximiser); a quarter of the instances start outside B (not applicable to the reading
checked; they reject the printed x^0 ∈ R^d): half of the far-minimiser ones at x^0 = 2z beyond the
minimiser z (the finding's construction), half of the just-outside ones at random points up to 20h
outside the box [−h, h] (which contains every set: the non-box sets store h = r(1, ..., 1)).  F* is
certified by a bracket (lower end used, so lhs errs high): boxes by enumerating the 3^d active sets
(candidates clipped to B; upper end min F, lower end max F(x) − gap(x), the Frank–Wolfe duality gap);
simplices and ℓ1 balls the same over their faces (2^d − 1, resp. 3^d); balls by the trust-region
secular equation (bisection in λ) with the Lagrange dual −½bᵀ(A + λI)⁻¹b − λr²/2 as lower end.
Observed width ≤ 1e-15 relative on every set.

Sides (lhs <= rhs): per instance the iterate (t = 1..100) with the largest lhs/rhs.

Claimed by the thesis: a rate (an upper bound).  Theorem 5 reaches 3/4 at t = 1 on every set
(h_1 ≤ LR²/2 in the proof's recursion, attained in the limit: 0.7493 at ε = 5·10⁻⁴); every mutant
is rejected by each set's instances alone (seeds 0–2), and x^0 outside B fails the printed reading
on balls, simplices and ℓ1 balls as on boxes (max ratios 4–10 per set, seeds 0–2).  Theorem 6
(fw.nonconvex, listed after this one): ``thesis/fw/nonconvex.py``; gradient descent
(Theorems 1, 2): ``thesis/gd.py``.
"""

from __future__ import annotations

import itertools

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, scale_fields, worst_point
from moreau.analysis.engine.instances import quadratic_batch
from moreau.analysis.thesis.fw.class_worst import CLASS_WORST
from moreau.analysis.thesis.fw.nonconvex import STATEMENT as FW_NONCONVEX
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

__all__ = ["STATEMENTS"]

N_FW = 100


def _anywhere(x0, h, kind):
    return np.ones(x0.shape[0], bool)


def _in_b(x0, h, kind):
    return contains(x0, h, kind)


#: Theorem 5 as printed: no range for t (t >= 0), x^0 anywhere in R^d
CLAIM_FW = {
    "bound": lambda L, R, t: 2 * L * R**2 / (t + 2),
    "t_min": 0,
    "start": _anywhere,
}
READINGS_FW = (
    Reading(
        "x⁰ ∈ B, t ≥ 1",
        {"t_min": 1, "start": _in_b},
        why="the hypotheses of the standard theorem (Jaggi 2013, Theorem 1): the proof's first step needs "
        "||s^0 - x^0|| <= R, i.e. x^0 in B, and the bound at t = 0 is not implied",
        repairs="missing hypothesis",
    ),
    Reading(
        "t ≥ 1, x⁰ anywhere",
        {"t_min": 1},
        expect="fails",
        why="the printed x^0 in R^d alone: fails at t >= 1 for x^0 outside B",
        repairs="missing hypothesis",
    ),
    Reading(
        "x⁰ ∈ B, t ≥ 0",
        {"start": _in_b},
        expect="fails",
        why="the printed range of t alone: fails at t = 0 even for x^0 in B",
        repairs="missing hypothesis",
    ),
)


# -- instances -------------------------------------------------------------------
def instances_fw(family, trials, rng):
    return boxes_then_sets(trials, rng, _box_instances, _set_instances)


def _box_instances(T, rng):
    d = 3
    k = [len(a) for a in np.array_split(np.arange(T), 2)]
    parts = [
        quadratic_batch(rng, m, d, kind) for m, kind in zip(k, ("convex", "strongly_convex"), strict=True)
    ]
    A, L = np.concatenate([p["A"] for p in parts]), np.concatenate([p["L"] for p in parts])
    h = rng.uniform(0.5, 2.0, (T, d))
    grp = np.array_split(rng.permutation(T), 4)  # minimiser inside / just outside / far outside / adversarial
    z = h * rng.uniform(-1, 1, (T, d))
    z[grp[0]] *= 0.6
    z[grp[1]] *= 2.0
    z[grp[2]] = 10 * h[grp[2]] * rng.choice([-1.0, 1.0], (grp[2].size, d))  # large gradients on B
    x0 = h * rng.uniform(-1, 1, (T, d))
    V = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))[None] * h[:, None, :]  # vertices (T, 2^d, d)
    b = np.einsum("tij,tj->ti", A, z)
    Fv = 0.5 * np.einsum("tvi,tij,tvj->tv", V, A, V) - np.einsum("tvi,ti->tv", V, b)
    worst = V[np.arange(T), np.argmax(Fv, axis=1)]
    x0[::2], x0[grp[2]] = worst[::2], worst[grp[2]]  # start at the worst vertex: half, and all far ones
    # x^0 outside B (the thesis lets x^0 be anywhere in R^d): a quarter of the far-minimiser instances
    # start beyond the minimiser (x^0 = 2 z: the LMO at x^0 picks the vertex away from z, as in the
    # finding's d = 1 instance), a quarter of the others at random points outside the box
    far, near = grp[2][: (grp[2].size + 1) // 2], grp[1][: (grp[1].size + 1) // 2]
    x0[far] = 2 * z[far]
    x0[near] = h[near] * rng.choice([-1.0, 1.0], (near.size, d)) * rng.uniform(1.2, 20.0, (near.size, d))
    # adversarial: curvature L along the diagonal h, minimiser next to the vertex -h, x^0 = -h:
    # the LMO jumps to +h and F(x^1) - F* -> L R^2/2, ratio -> 3/4 at t = 1
    j = grp[3]
    u = h[j] / np.linalg.norm(h[j], axis=-1, keepdims=True)
    P = np.eye(d) - u[:, :, None] * u[:, None, :]
    A[j] = L[j, None, None] * u[:, :, None] * u[:, None, :] + P @ A[j] @ P
    z[j], x0[j] = -(1 - 1e-3) * h[j], -h[j]
    b[j] = np.einsum("tij,tj->ti", A[j], z[j])
    return {"A": A, "b": b, "L": L, "h": h, "x0": x0, "set": np.zeros(T)}


def _set_instances(T, rng):
    """Ball, simplex and l1-ball instances (``thesis.fw.sets``), the box's four groups on each set: minimiser
    inside / just outside / far outside (starts at the worst extreme point, half of them outside B at
    x^0 = 2z) / adversarial (a diametral pair p, q of B, curvature L along q - p, minimiser
    z = p + 5e-4 (q - p), x^0 = p: the LMO jumps to q, ratio -> 3/4 at t = 1)."""
    d = 3
    kind = 1 + np.arange(T) % 3
    k = [len(a) for a in np.array_split(np.arange(T), 2)]
    parts = [quadratic_batch(rng, m, d, c) for m, c in zip(k, ("convex", "strongly_convex"), strict=True)]
    A, L = np.concatenate([p["A"] for p in parts]), np.concatenate([p["L"] for p in parts])
    h = np.repeat(rng.uniform(0.5, 2.0, (T, 1)), d, axis=1)
    # the four groups on each set (stratified: every set gets each group when T >= 12)
    split = [np.array_split(rng.permutation(np.flatnonzero(kind == k)), 4) for k in (1, 2, 3)]
    grp = [np.concatenate([sp[g] for sp in split]) for g in range(4)]
    z = sample_in(rng, h, kind)
    z[grp[0]] *= 0.6
    z[grp[1]] *= 2.0
    # far minimisers along a direction of large curvature (the top eigenvector, perturbed), so that
    # F(x^0) - F* exceeds L R^2 at the worst start and the LMO at x^0 = 2z (gradient A z) points back
    top = np.linalg.eigh(A[grp[2]])[1][:, :, -1] * rng.choice([-1.0, 1.0], (grp[2].size, 1))
    u = top + 0.3 * rng.standard_normal((grp[2].size, d))
    z[grp[2]] = 10 * h[grp[2]] * u / np.linalg.norm(u, axis=-1, keepdims=True)
    x0 = sample_in(rng, h, kind)
    b = np.einsum("tij,tj->ti", A, z)
    worst, _ = _worst_points(A, b, h, kind, rng)
    x0[::2], x0[grp[2]] = worst[::2], worst[grp[2]]
    far = np.concatenate([sp[2][: (sp[2].size + 1) // 2] for sp in split])
    near = np.concatenate([sp[1][: (sp[1].size + 1) // 2] for sp in split])
    x0[far] = 2 * z[far]
    x0[near] = h[near] * rng.choice([-1.0, 1.0], (near.size, d)) * rng.uniform(1.2, 20.0, (near.size, d))
    j = grp[3]
    p, q = diametral(h[j], kind[j], rng)
    u = (q - p) / np.linalg.norm(q - p, axis=-1, keepdims=True)
    P = np.eye(d) - u[:, :, None] * u[:, None, :]
    A[j] = L[j, None, None] * u[:, :, None] * u[:, None, :] + P @ A[j] @ P
    z[j], x0[j] = p + 5e-4 * (q - p), p
    b[j] = np.einsum("tij,tj->ti", A[j], z[j])
    return {"A": A, "b": b, "L": L, "h": h, "x0": x0, "set": kind.astype(float)}


def _worst_points(A, b, h, kind, rng):
    """The maximiser of the convex F over B: the best extreme point (polytopes: a vertex, exact);
    on the ball the trust-region maximiser (``set_min`` of -F)."""
    E = extreme_points(h, kind, rng)
    FE = 0.5 * np.einsum("tvi,tij,tvj->tv", E, A, E) - np.einsum("tvi,ti->tv", E, b)
    worst = E[np.arange(b.shape[0]), np.argmax(FE, axis=1)]
    ball = kind == 1
    if ball.any():
        worst[ball] = set_min(-A[ball], -b[ball], h[ball], kind[ball], convex=False)[2]
    return worst, E


# -- evaluation ------------------------------------------------------------------
def _box_qp_min(A, b, lo, hi):
    """Certified bracket ``(F_lo, F_hi)`` of min over the box of ½xᵀAx − bᵀx (A PSD): 3^d active sets."""
    T, d = b.shape
    best_lo, best_hi = np.full(T, -np.inf), np.full(T, np.inf)
    for pat in itertools.product((0, 1, 2), repeat=d):  # lower / free / upper
        pat = np.array(pat)
        free = pat == 1
        M = np.where(free[None, :, None], A, np.eye(d))
        r = np.where(free, b, np.where(pat == 0, lo, hi))
        Mp = np.linalg.pinv(M)
        x = (Mp @ r[..., None])[..., 0]
        x = np.clip(x + (Mp @ (r - np.einsum("tij,tj->ti", M, x))[..., None])[..., 0], lo, hi)  # 1 refinement
        g = np.einsum("tij,tj->ti", A, x) - b
        F = 0.5 * np.einsum("ti,ti->t", x, g - b)
        gap = np.sum(g * (x - np.where(g > 0, lo, hi)), axis=-1)  # FW gap >= F(x) - F*
        best_lo, best_hi = np.maximum(best_lo, F - gap), np.minimum(best_hi, F)
    return best_lo, best_hi


def f_star(A, b, h, kind):
    """Certified bracket of F* = min_B F (convex F): boxes by :func:`_box_qp_min`, the other sets by
    ``thesis.fw.sets.set_min``."""
    lo, hi = _box_qp_min(A, b, -h, h)
    other = kind != 0
    if other.any():
        lo[other], hi[other], _ = set_min(A[other], b[other], h[other], kind[other])
    return lo, hi


FW_PART = "F(x^t) - F* <= 2 L R^2/(t + 2), t <= 100"


def evaluate_fw(batch, claim):
    A, b, L, h, x = batch["A"], batch["b"], batch["L"], batch["h"], batch["x0"]
    kind = kind_of(batch)
    R = diameter(h, kind)
    value = lambda x: 0.5 * np.einsum("ti,tij,tj->t", x, A, x) - np.sum(b * x, axis=-1)  # noqa: E731
    F = [value(x)]
    for t in range(N_FW):
        s = lmo(np.einsum("tij,tj->ti", A, x) - b, h, kind)
        x = x + 2 / (t + 2) * (s - x)
        F.append(value(x))
    F_lo, F_hi = f_star(A, b, h, kind)
    t = np.arange(N_FW + 1)[:, None]
    lhs = np.array(F) - F_lo  # with the certified lower end: lhs errs high
    rhs = claim["bound"](L, R, t)
    consts = {
        "L": "exact (a_d)",
        "R": "exact: diameter 2 ||h|| of the box [-h, h]; ball, l1 ball 2r; simplex sqrt(2) r",
        "F*": "certified bracket, lower end used: boxes, simplices, l1 balls by face enumeration and the "
        "FW duality gap; balls by the trust-region secular equation and its Lagrange dual",
    }
    return {
        FW_PART: Sides(
            *worst_point(lhs, rhs, t >= claim["t_min"]),
            "upper",
            applicable=claim["start"](batch["x0"], h, kind),
            constants=consts,
            note=f"t >= {claim['t_min']}; x^0 drawn in B and outside it (every start the claim admits is checked)",
        ),
        "F* bracket width (certificate, not the thesis)": Sides(
            F_hi - F_lo,
            1e-13 * (np.abs(F_hi) + L * R**2),
            "exact",
            constants=consts,
            role="auxiliary",
            note="upper end min F at feasible candidates, lower end max F - gap or the dual bound (1e-13 ~ "
            "450 eps)",
        ),
    }


_SRC = "Dadras thesis, ch. 2"
STATEMENTS = (
    Statement(
        id="fw.convex",
        source=f"{_SRC}, Theorem 5",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\eta_t = \tfrac{2}{t+2}:\ F(x^t) - F^* \le \frac{2LR^2}{t+2}\ (x^0 \in \mathbb{R}^d)",
        text="Frank-Wolfe with eta_t = 2/(t+2) on a compact convex set of diameter R: "
        "F(x^t) - F* <= 2 L R^2/(t + 2) (as printed: no range for t, x^0 in R^d)",
        assumptions=("F convex, L-smooth", "B compact convex, diameter R", "eta_t = 2/(t+2)", "x^0 in R^d"),
        families={"quadratic": ("convex, strongly_convex on boxes, Euclidean balls, simplices, l1 balls",)},
        claimed="rate",
        instances=instances_fw,
        evaluate=evaluate_fw,
        claim=CLAIM_FW,
        readings=READINGS_FW,
        class_worst={"quadratic": CLASS_WORST},  # the PEP values beside the instances (class_worst.py)
        expect="fails",
        # d = 1, B = [-1, 1] (R = 2), F = x^2/2 - 5x (L = 1), x^0 = -1 in B: F(x^0) - F* = 10 > L R^2 = 4 at t = 0
        counterexamples={
            "quadratic": {
                "A": np.ones((1, 1, 1)),
                "b": np.full((1, 1), 5.0),
                "L": np.ones(1),
                "h": np.ones((1, 1)),
                "x0": -np.ones((1, 1)),
            }
        },
        scaling={
            "quadratic": scale_fields({"A": (-2, 1), "b": (-1, 1), "L": (-2, 1), "h": (1, 0), "x0": (1, 0)})
        },
        mutants=(
            Mutant("2 L R^2 -> L R^2 / 4", {"bound": lambda L, R, t: L * R**2 / (4 * (t + 2))}),
            Mutant("rate 2 L R^2/(t + 2)^2", {"bound": lambda L, R, t: 2 * L * R**2 / (t + 2) ** 2}),
            Mutant(
                "R the radius (R/2) instead of the diameter",
                {"bound": lambda L, R, t: 2 * L * (R / 2) ** 2 / (t + 2)},
            ),
            Mutant("inequality reversed", {"flip": (FW_PART,)}),
        ),
        findings=(
            "Theorem 5 as printed (no range for t, x^0 in R^d) fails at t = 0: with x^0 in B, d = 1, "
            "B = [-1, 1] (R = 2), F(x) = x^2/2 - 5x (L = 1), x^0 = -1: F(x^0) - F* = 5.5 - (-4.5) = 10 > "
            "2 L R^2/2 = 4 (reading 'x⁰ ∈ B, t ≥ 0').",
            "Theorem 5 as printed (x^0 in R^d) fails at t >= 1 when x^0 is outside B: d = 1, B = [-1, 1] "
            "(R = 2), F(x) = (x - 10)^2/2 (L = 1, F* = F(1) = 40.5), x^0 = 20: s^0 = -1 = x^1, "
            "F(x^1) - F* = 60.5 - 40.5 = 20 > 2 L R^2/3 = 8/3 (ratio 7.5; 3.11 at t = 2, 1.06 at t = 5); "
            "with 100 for 10 and x^0 = 200 the ratio is 75 at t = 1 and stays above 1 up to t = 50 "
            "(reading 't ≥ 1, x⁰ anywhere'). The standard statement (Jaggi 2013, Theorem 1: x^0 in B, "
            "t >= 1) holds: reading 'x⁰ ∈ B, t ≥ 1'.",
        ),
    ),
    FW_NONCONVEX,  # Theorem 6: analysis/thesis/fw/nonconvex.py
)
