r"""fedprox.lemma2 — FedProx analysis (Yu, He, Sun, Xue, Li), Lemma 2.

Statement (paper): under Assumption 2 (the empirical risk L_i is
μ-strongly convex) and Assumption 4 (ℓ(·, z) is L-smooth), the Moreau
envelope F_i(w) = min_θ L_i(θ) + (λ/2)‖w − θ‖² is μ_g = λμ/(λ+μ)-strongly
convex and L_g = λL/(λ+L)-smooth; h_i(θ, w) = L_i(θ) + (λ/2)‖w − θ‖² is
μ_ℓ = μ+λ-strongly convex and L_ℓ = L+λ-smooth in θ; the map
w ↦ prox_{L_i/λ}(w) is L_w = λ/(λ+μ)-Lipschitz.

Assumptions: λ > 0; μ > 0 (Assumption 2; the convex case μ = 0 is
pfedme.prop1's); L is the smoothness of L_i.  Assumption 4 asks it of every ℓ(·, z), whose
constant is ≥ that of the average L_i: the checked reading, with the
smallest valid L, is the strongest one.

Instances: strongly convex quadratics L_i = ½θᵀAθ − bᵀθ (a_1 = μ > 0,
exact spectra, μ/L from 0.01 to 1), λ from 0.05 L to 20 L, one point w each.
Logistic L_i (ridge μ log-uniform in [0.01, 1]; well-specified labels), one point per
instance, of three kinds in turn: a random point; a far point (|margins| in
the hundreds, where the curvature of L_i has decayed to μ in floating
point: the infima and the sup of ‖∇prox‖ are approached there); and
w = ∇L_i(0)/λ, where prox(w) = 0 and the curvature of L_i is maximal (the
suprema of F_i's and h_i's curvature are attained there).  A second point
w' per instance gives difference quotients of the prox map.

Sides (lhs <= rhs), per instance; lower bounds are written claimed <= true:
  μ_g <= λ_min ∇²F_i(w);  ‖∇²F_i(w)‖ <= L_g;  μ_ℓ <= λ_min ∇²_θ h_i(θ̂);
  ‖∇²_θ h_i(θ̂)‖ <= L_ℓ;  ‖∂prox(w)‖ (and ‖prox(w) − prox(w')‖/‖w − w'‖) <= L_w,
with θ̂ = prox(w).  μ and L are computed from each instance, never from
moreau's ``curvature_bounds``: the exact spectrum of A (quadratic); the ridge
μ and λ_max(XᵀX)/(4n) + μ by numpy eigvalsh (logistic; the exact inf and
sup of the curvature).  The true constants: quadratics — ∇²F_i by central
differences of ``moreau.envelope(q, λ).grad`` and ∂prox by central
differences of ``moreau.prox`` (both maps are affine, so unit steps are
exact up to rounding), ∇²h = A + λI by numpy; logistic — eigenvalues of
``moreau.envelope(f, λ).hess`` (implicit-function Hessian),
∇²h = ∇²L_i(θ̂) + λI, and ∂prox(w) = λ(∇²L_i(θ̂) + λI)⁻¹ by numpy solve.

Claimed by the paper: upper bounds (the constants are valid).  What the
check shows: on quadratics all five constants are exact (attained on every
instance: the curvature of F_i, h_i and the prox map are functions of one
eigenvalue a, monotone in a); on logistic they are the exact sup/inf over w.
So a smaller constant is false and a larger one is true but not attained,
which the quadratic family rejects ("tight" there).
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
from moreau.analysis.engine.instances import log_uniform, logistic_batch, quadratic_batch
from moreau.analysis.fedprox import sharp_constants as _sharp

__all__ = ["STATEMENTS"]

CLAIM = {
    "mu_g": lambda lam, mu: lam * mu / (lam + mu),
    "L_g": lambda lam, L: lam * L / (lam + L),
    "mu_l": lambda lam, mu: mu + lam,
    "L_l": lambda lam, L: L + lam,
    "L_w": lambda lam, mu: lam / (lam + mu),
}

PARTS = (
    "F_i strongly convex, μ_g = λμ/(λ+μ)",
    "F_i smooth, L_g = λL/(λ+L)",
    "h_i strongly convex, μ_ℓ = μ+λ",
    "h_i smooth, L_ℓ = L+λ",
    "prox map Lipschitz, L_w = λ/(λ+μ)",
)

D_QUAD, N_LOG, D_LOG = 4, 30, 3


def instances(family, trials, rng):
    if family == "quadratic":
        T = trials or 48
        batch = quadratic_batch(rng, T, D_QUAD, "strongly_convex")
        batch["lam"] = batch["L"] * log_uniform(rng, 0.05, 20.0, T)
        batch["w"] = rng.standard_normal((T, D_QUAD)) * 3
        return batch
    T = trials or 48
    batch = logistic_batch(rng, T, N_LOG, D_LOG, mu=log_uniform(rng, 0.01, 1.0, T), scale=2.0)
    del batch["w_star"]
    lam = log_uniform(rng, 0.1, 10.0, T)
    X, y = batch["X"], batch["y"]
    kind = np.arange(T) % 3  # 0 random, 1 far, 2 w = grad L_i(0)/lam (prox(w) = 0)
    w = rng.standard_normal((T, D_LOG))
    w[kind == 1] *= 300.0
    grad0 = -np.einsum("tn,tnd->td", y, X) / (2 * N_LOG)  # grad L_i(0): sigma(0) = 1/2, ridge term 0
    w[kind == 2] = grad0[kind == 2] / lam[kind == 2, None]
    step = log_uniform(rng, 1e-3, 10.0, T)[:, None] * rng.standard_normal((T, D_LOG))
    batch.update(lam=lam, w=w, w2=w + step, kind=kind)
    return batch


def evaluate(batch, claim):
    if "A" in batch:
        return _quadratic(batch, claim)
    return _logistic(batch, claim)


def _central_jacobian(fun, w):
    """Columns ``(fun(w + e_k) - fun(w - e_k)) / 2``: exact up to rounding for an affine map."""
    d = w.shape[-1]
    return np.stack([(fun(w + e) - fun(w - e)) / 2 for e in np.eye(d)], axis=-1)


def _quadratic(batch, claim):
    A, b, w, lam = batch["A"], batch["b"], batch["w"], batch["lam"]
    mu, L = batch["eig"][:, 0], batch["eig"][:, -1]  # the instance's exact spectrum (a_1 > 0: L = a_d)
    q = mo.Quadratic(A, b)
    F = mo.envelope(q, lam)
    eig_F = np.linalg.eigvalsh(_sym(_central_jacobian(F.grad, w)))
    eig_h = np.linalg.eigvalsh(A + lam[:, None, None] * np.eye(A.shape[-1]))
    J = _central_jacobian(lambda v: mo.prox(q, v, lam), w)
    lip = np.linalg.norm(J, ord=2, axis=(-2, -1))
    consts = {
        "mu, L": "exact (a_1, a_d of the constructed spectrum)",
        "hess F": "central differences of moreau.envelope(q, lam).grad (affine: exact)",
        "hess h": "numpy eigvalsh(A + lam I)",
        "d prox": "central differences of moreau.prox, spectral norm",
    }
    return _sides(
        claim,
        lam,
        mu,
        L,
        eig_F,
        eig_h,
        lip,
        consts,
        "tight",
        note="quadratic: the true constant equals the claimed one on every instance",
    )


def _logistic(batch, claim):
    X, y, mu, lam, w, w2 = (batch[k] for k in ("X", "y", "mu", "lam", "w", "w2"))
    n, d = X.shape[-2:]
    L = np.linalg.eigvalsh(np.swapaxes(X, 1, 2) @ X / n)[:, -1] / 4 + mu  # exact sup of the curvature
    f = mo.Logistic(X, y, mu=mu)
    F = mo.envelope(f, lam)
    theta, theta2 = mo.prox(f, w, lam), mo.prox(f, w2, lam)
    H = f.hess(theta)
    eye = np.eye(d)
    eig_F = np.linalg.eigvalsh(F.hess(w))
    eig_h = np.linalg.eigvalsh(H + lam[:, None, None] * eye)
    J = lam[:, None, None] * np.linalg.solve(H + lam[:, None, None] * eye, np.broadcast_to(eye, H.shape))
    dq = np.linalg.norm(theta - theta2, axis=-1) / np.linalg.norm(w - w2, axis=-1)
    lip = np.maximum(np.linalg.norm(J, ord=2, axis=(-2, -1)), dq)
    consts = {
        "mu": "exact inf (the ridge mu)",
        "L": "exact sup: numpy lambda_max(X^T X)/(4n) + mu (at theta = 0)",
        "hess F": "eigvalsh of moreau.envelope(f, lam).hess at the instance's point",
        "hess h": "hess L_i(prox(w)) + lam I",
        "d prox": "max of ||lam (hess L_i + lam I)^-1|| and the difference quotient to w'",
    }
    return _sides(
        claim,
        lam,
        mu,
        L,
        eig_F,
        eig_h,
        lip,
        consts,
        "upper",
        note="logistic: sups attained at w = grad L_i(0)/lam, infs approached at far points",
    )


def _sides(claim, lam, mu, L, eig_F, eig_h, lip, consts, claimed, note):
    return {
        PARTS[0]: Sides(
            claim["mu_g"](lam, mu),
            eig_F[:, 0],
            claimed,
            constants=consts,
            note="lhs claimed mu_g, rhs smallest eigenvalue of hess F_i; " + note,
        ),
        PARTS[1]: Sides(np.max(np.abs(eig_F), axis=1), claim["L_g"](lam, L), claimed, constants=consts),
        PARTS[2]: Sides(
            claim["mu_l"](lam, mu),
            eig_h[:, 0],
            claimed,
            constants=consts,
            note="lhs claimed mu_l, rhs smallest eigenvalue of hess_theta h_i",
        ),
        PARTS[3]: Sides(np.max(np.abs(eig_h), axis=1), claim["L_l"](lam, L), claimed, constants=consts),
        PARTS[4]: Sides(
            lip,
            claim["L_w"](lam, mu),
            claimed,
            constants=consts,
            note="lhs: norm of the Jacobian of w -> prox(w) (and difference quotients)",
        ),
    }


def _sym(M):
    return (M + np.swapaxes(M, -1, -2)) / 2


STATEMENTS = (
    Statement(
        id="fedprox.lemma2",
        implies=("strongly convex objective (μ > 0)",),
        waived={
            "strongly convex sample losses": (
                "the statement is about the clients' objectives only: how an objective splits into "
                "samples does not enter"
            ),
            "convex sample losses": (
                "the statement is about the clients' objectives only: how an objective splits into "
                "samples does not enter"
            ),
        },
        source="FedProx analysis, Lemma 2",
        paper="fedprox-personalization-analysis.md",
        latex=r"\mu_g = \frac{\lambda\mu}{\lambda+\mu},\ L_g = \frac{\lambda L}{\lambda+L},\ "
        r"\mu_\ell = \mu+\lambda,\ L_\ell = L+\lambda,\ L_w = \frac{\lambda}{\lambda+\mu}",
        text="F_i is lam mu/(lam+mu)-strongly convex and lam L/(lam+L)-smooth; h_i is (mu+lam)-strongly convex "
        "and (L+lam)-smooth; w -> prox(w) is lam/(lam+mu)-Lipschitz",
        assumptions=("lam > 0", "L_i mu-strongly convex (Assumption 2)", "L_i L-smooth (Assumption 4)"),
        scaling={
            "quadratic": scale_fields(QUADRATIC_SCALING),
            "logistic": scale_fields(LOGISTIC_SCALING, c_free=False),
        },
        sharp={
            "quadratic": {
                part: partial(_sharp.fedprox_lemma2, key)
                for part, key in zip(PARTS, ("mu_g", "L_g", "mu_l", "L_l", "L_w"), strict=True)
            }
        },
        families={"quadratic": ("strongly_convex",), "logistic": ("ridge mu in [0.01, 1]",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim=CLAIM,
        mutants=(
            Mutant(
                "L_g = lam L / (lam + 2L) (the issue's example mutant)",
                {"L_g": lambda lam, L: lam * L / (lam + 2 * L)},
            ),
            Mutant("mu_g = lam mu / (lam - mu)", {"mu_g": lambda lam, mu: lam * mu / (lam - mu)}),
            Mutant("mu_g = mu (no shrinkage by the envelope)", {"mu_g": lambda lam, mu: mu + 0 * lam}),
            Mutant(
                "L_w = lam / (lam + 2 mu) (smaller than attained: false)",
                {"L_w": lambda lam, mu: lam / (lam + 2 * mu)},
            ),
            Mutant(
                "L_w = 1 (nonexpansive: true, never attained when mu > 0)",
                {"L_w": lambda lam, mu: 1 + 0 * lam},
            ),
            Mutant("L_l = L + lam / 2", {"L_l": lambda lam, L: L + lam / 2}),
            Mutant("mu_l = mu + 2 lam", {"mu_l": lambda lam, mu: mu + 2 * lam}),
            Mutant("inequality reversed: ||hess F_i(w)|| >= L_g at every w", {"flip": (PARTS[1],)}),
        ),
    ),
)
