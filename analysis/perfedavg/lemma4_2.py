r"""perfedavg.lemma4_2 — Per-FedAvg, Lemma 4.2 (with eq. (5) and proof in App. C).

Statement (paper): for F_i(w) = f_i(w − α∇f_i(w)) (eq. (4)) with
α ∈ [0, 1/L], under Assumptions 2 (f_i L-smooth, ‖∇f_i‖ ≤ B) and 3 (∇²f_i
ρ-Lipschitz), F_i is L_F = 4L + αρB smooth; its gradient is eq. (5):
∇F_i(w) = (I − α∇²f_i(w)) ∇f_i(w − α∇f_i(w)).

Assumptions: α ∈ [0, 1/L] (instances with α ∈ (1/L, 2/L] are generated and
reported *not applicable*); L = sup‖∇²f‖₂; ρ, B as above.  Quadratics break
the bounded-gradient half of Assumption 2, but there ρ = 0 and B enters only
through αρB (the proof's term (27) is 0), so the claim read on quadratics is
L_F = 4L.

Instances: quadratics (d = 4) of the three kinds; the weakly convex ones
include a_1 = −L with α = 1/L (where the bound is attained) and α ∈ (1/L, 2/L]
(assumption violated); a third of the convex ones have α = 0 (F = f).
Logistic models with μ = 0 (Assumption 2 holds: B = max‖x_j‖), α ∈ (0, 1/L],
a quarter at α = 1/L, Hessians of F sampled at 7 points including w = 0.

Sides (lhs <= rhs): smoothness of F is max|eigvalsh(∇²F(w))| of
``moreau.meta_objective(f, α).hess(w)`` (numpy eigvalsh; on quadratics the
Hessian is constant, so this is the exact constant max_k |a_k(1 − αa_k)²|; on
logistic the sup over the sampled points, a lower estimate of the true
constant: a violation found is real, a pass is evidence).  L is exact (the
spectrum; logistic: λ_max(XᵀX)/(4n), attained at w = 0); ρ and B are the
documented valid bounds ``hessian_lipschitz()`` and ``gradient_bound()``.
The gradient formula (5), built from f's gradient and Hessian, is compared
with central differences of F's value.

Claimed by the paper: an upper bound.  What the check shows on quadratics:
for convex f every eigenvalue a ∈ [0, L] gives a(1 − αa)² ≤ a ≤ L, so the
true constant is at most L: the 4L bound is loose by at least 4× (max ratio
1/4, reached at α = 0).  For nonconvex f with a_1 = −L and α = 1/L the
eigenvalue −L(1 + 1)² = −4L attains the bound exactly, so 4L is attained only
in the nonconvex case: that part is claimed "tight", the convex
part "upper".  On logistic data (convex) the sampled ratio is far below 1
(the Hessian-Lipschitz bound ρ is itself loose).
"""

from __future__ import annotations

from functools import partial

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import (
    LOGISTIC_SCALING,
    QUADRATIC_SCALING,
    Mutant,
    Sides,
    Statement,
    scale_fields,
)
from moreau.analysis.engine.instances import logistic_batch, quadratic_batch
from moreau.analysis.perfedavg import sharp_constants as _sharp

__all__ = ["STATEMENTS", "quadratic_kinds"]

CLAIM = {
    # eq. (5): (I - alpha H(w)) grad f(v), v = w - alpha grad f(w)
    "grad": lambda H, g_v, alpha: g_v - alpha[..., None] * (H @ g_v[..., None])[..., 0],
    "L_F": lambda L, alpha, rho, B: 4 * L + alpha * rho * B,
    "condition": lambda alpha, L: (alpha >= 0) & (alpha <= 1 / L),
}

PARTS = (
    "gradient formula (5)",
    "smoothness L_F = 4L + αρB (f convex)",
    "smoothness L_F = 4L + αρB (f nonconvex: attained at a_1 = -L, α = 1/L)",
)


def instances(family, trials, rng):
    if family == "quadratic":
        T = trials or 48
        batch, adv = quadratic_kinds(rng, T, 4)
        L = batch["L"]
        u = rng.uniform(0.0, 1.0, T)
        u[rng.uniform(size=T) < 0.25] = 1.0
        convex = np.flatnonzero(batch["eig"][:, 0] >= 0)
        u[convex[::3]] = 0.0  # alpha = 0: F = f, the convex ratio 1/4 is reached
        half = np.array_split(adv, 2)
        u[half[0]] = 1.0  # attains 4L
        u[half[1]] = rng.uniform(1.0, 2.0, half[1].size)  # alpha in (1/L, 2/L]: not applicable
        u[half[1][:1]] = 2.0
        batch["alpha"] = u / L
        batch["w"] = rng.standard_normal((T, 4)) * 3
        return batch
    T = trials or 24
    batch = logistic_batch(rng, T, 30, 3, mu=0.0, scale=2.0)
    batch = {k: batch[k] for k in ("X", "y", "mu")}
    L = np.asarray(mo.Logistic(batch["X"], batch["y"]).curvature_bounds()[1])
    u = rng.uniform(0.05, 1.0, T)
    u[: T // 4] = 1.0
    batch["alpha"] = u / L
    # sample points (w = 0, where the curvature of f is largest, is added in evaluate)
    batch["w"] = np.concatenate([rng.standard_normal((T, 4, 3)), 4 * rng.standard_normal((T, 2, 3))], axis=1)
    return batch


def quadratic_kinds(rng, T, d):
    """Weakly convex, convex, strongly convex quadratics (that order, so a small batch
    is weakly convex); the first half of the weakly convex ones (at least one) get
    a_1 = -L exactly.  Returns ``(batch, indices with a_1 = -L)``."""
    n = [len(a) for a in np.array_split(np.arange(T), 3)]
    parts = [
        quadratic_batch(rng, k, d, kind, adversarial=False)
        for k, kind in zip(n, ("weakly_convex", "convex", "strongly_convex"), strict=True)
        if k
    ]
    batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    adv = np.arange(max(1, n[0] // 2))
    a, V = np.linalg.eigh(batch["A"][adv])
    a[:, 0] = -batch["L"][adv]  # |a_k| <= L, so L is unchanged
    A = (V * a[:, None, :]) @ np.swapaxes(V, 1, 2)
    batch["A"][adv], batch["eig"][adv] = (A + np.swapaxes(A, 1, 2)) / 2, a
    return batch, adv


def evaluate(batch, claim):
    if "A" in batch:
        return _quadratic(batch, claim)
    return _logistic(batch, claim)


def _gradient_check(f, F, W, alpha, claim, h):
    """``(|fd - formula|, |fd|)`` with central differences of F's value, step h."""
    d = W.shape[-1]
    v = W - alpha[..., None] * f.grad(W)
    g = claim["grad"](f.hess(W), f.grad(v), alpha)
    fd = np.stack([(F.value(W + h * e) - F.value(W - h * e)) / (2 * h) for e in np.eye(d)], axis=-1)
    return np.linalg.norm(fd - g, axis=-1), np.linalg.norm(fd, axis=-1)


def _quadratic(batch, claim):
    A, b, w, alpha = batch["A"], batch["b"], batch["w"], batch["alpha"]
    a, L = batch["eig"], batch["L"]  # exact spectrum
    q = mo.Quadratic(A, b)
    F = mo.meta_objective(q, alpha)
    smooth_F = np.max(np.abs(np.linalg.eigvalsh(F.hess(w))), axis=-1)
    zero = np.zeros_like(L)
    bound = claim["L_F"](L, alpha, zero, zero)  # rho = 0: the alpha rho B term vanishes
    ok = claim["condition"](alpha, L)
    # F is quadratic: central differences are exact for any step up to rounding, so
    # h = 1; their rounding is ~eps * (terms of F's value) / h, the formula's ~eps L |v|.
    err, _ = _gradient_check(q, F, w, alpha, claim, 1.0)
    v = np.linalg.norm(w, axis=-1) + 3 * alpha * np.linalg.norm(q.grad(w), axis=-1)
    scale = L * v**2 + np.linalg.norm(b, axis=-1) * v
    # 1e-13 = ~450 eps: d = 4 terms per value, 2 values, cancellation in the difference
    # (observed errors ~1e-17 scale); a wrong formula is an O(1) relative error
    tol = 1e-13 * scale
    consts = {
        "L": "exact (eigenvalues of A)",
        "rho": "exact: 0 (constant Hessian)",
        "B": "not needed (rho = 0; quadratic gradients are unbounded)",
        "smoothness of F": "exact: max |eigvalsh(hess F)| (Hessian constant)",
    }
    return {
        PARTS[0]: Sides(
            err,
            tol,
            "exact",
            constants=consts,
            note="eq. (5) vs central differences of F (exact on quadratics up to rounding)",
        ),
        PARTS[1]: Sides(
            smooth_F,
            bound,
            "upper",
            applicable=ok & (a[:, 0] >= 0),
            constants=consts,
            note="a(1 - alpha a)^2 <= a <= L: ratio <= 1/4 (= 1/4 at alpha = 0); 4L never attained",
        ),
        PARTS[2]: Sides(
            smooth_F,
            bound,
            "tight",
            applicable=ok & (a[:, 0] < 0),
            constants=consts,
            note="a_1 = -L, alpha = 1/L: |-L (1 + 1)^2| = 4L exactly",
        ),
    }


def _logistic(batch, claim):
    f = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
    alpha = batch["alpha"]
    F = mo.meta_objective(f, alpha)
    T, d = batch["X"].shape[0], batch["X"].shape[-1]
    W = np.concatenate([np.zeros((T, 1, d)), batch["w"]], axis=1).transpose(1, 0, 2)  # (P, T, d)
    L = np.asarray(f.curvature_bounds()[1])
    rho, B = np.asarray(f.hessian_lipschitz()), np.asarray(f.gradient_bound())
    smooth_F = np.max(np.abs(np.linalg.eigvalsh(F.hess(W))), axis=(0, 2))
    # central differences, h = 1e-5: truncation h^2 |F'''| and rounding eps |F| / h are
    # both ~1e-10 relative; the tolerance 1e-6 leaves 4 orders of margin, while a
    # missing factor (I - alpha H) is an O(alpha L) = O(1) relative error
    err, fd = _gradient_check(f, F, W, alpha, claim, 1e-5)
    err, fd = np.max(err, axis=0), np.max(fd, axis=0)
    consts = {
        "L": "exact sup: lambda_max(X^T X)/(4n) (attained at w = 0)",
        "rho": "bound: hessian_lipschitz() = (1/(6 sqrt 3)) mean ||x_j||^3",
        "B": "bound: gradient_bound() = max ||x_j|| (mu = 0)",
        "smoothness of F": "sampled: max |eigvalsh(hess F)| over 7 points incl. w = 0 (<= true constant)",
    }
    return {
        PARTS[0]: Sides(
            err, 1e-6 * (1 + fd), "exact", constants=consts, note="eq. (5) vs central differences of F"
        ),
        PARTS[1]: Sides(
            smooth_F,
            claim["L_F"](L, alpha, rho, B),
            "upper",
            applicable=claim["condition"](alpha, L),
            constants=consts,
            note="f convex: the proof's (26) gives L (not 4L) since ||I - alpha hess f|| <= 1",
        ),
    }


STATEMENTS = (
    Statement(
        id="perfedavg.lemma4_2",
        waived={
            ("logistic", "bounded gradients"): (
                "Assumption 2 asks ‖∇f_i‖ ≤ B: the logistic family (no ridge) meets it on R^d; the "
                "quadratic family only on the bounded region evaluated"
            ),
            "convex sample losses": (
                "the lemma is about f_i, its gradient and Hessian: the samples do not enter"
            ),
        },
        source="Per-FedAvg, Lemma 4.2, eq. (5)",
        paper="per-fedavg-maml.md",
        latex=r"\nabla F_i(w) = (I - \alpha\nabla^2 f_i(w))\nabla f_i(w - \alpha\nabla f_i(w));\ "
        r"\alpha\in[0, 1/L] \Rightarrow F_i\ \text{is}\ (4L + \alpha\rho B)\text{-smooth}",
        text="F_i(w) = f_i(w - alpha grad f_i(w)) with alpha in [0, 1/L] is (4L + alpha rho B)-smooth; "
        "grad F_i = (I - alpha hess f_i(w)) grad f_i(w - alpha grad f_i(w))",
        assumptions=(
            "alpha in [0, 1/L]",
            "f_i L-smooth with ||grad f_i|| <= B (Assumption 2)",
            "hess f_i rho-Lipschitz (Assumption 3)",
        ),
        scaling={
            "quadratic": scale_fields({**QUADRATIC_SCALING, "alpha": (2, -1)}),
            "logistic": scale_fields({**LOGISTIC_SCALING, "alpha": (2, 0)}, c_free=False),
        },
        sharp={
            "quadratic": {
                PARTS[1]: partial(_sharp.perfedavg_lemma4_2, "convex"),
                PARTS[2]: partial(_sharp.perfedavg_lemma4_2, "nonconvex"),
            }
        },
        families={"quadratic": ("convex", "strongly_convex", "weakly_convex"), "logistic": ("mu = 0",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim=CLAIM,
        mutants=(
            Mutant("L_F = 2L + alpha rho B", {"L_F": lambda L, a, r, B: 2 * L + a * r * B}),
            Mutant("L_F = L + alpha rho B", {"L_F": lambda L, a, r, B: L + a * r * B}),
            Mutant("condition relaxed: alpha <= 2/L", {"condition": lambda a, L: (a >= 0) & (a <= 2 / L)}),
            Mutant("gradient without the factor (I - alpha hess f(w))", {"grad": lambda H, g_v, a: g_v}),
            Mutant(
                "inequality reversed: smoothness of F >= 4L + alpha rho B (f convex)", {"flip": (PARTS[1],)}
            ),
        ),
    ),
)
