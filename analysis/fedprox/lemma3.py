r"""fedprox.lemma3 — FedProx analysis (Yu, He, Sun, Xue, Li), Lemma 3
(quoted from Lemaréchal & Sagastizábal 1997).

Statement (paper): under Assumption 2 (L_i μ-strongly convex) each Moreau
envelope F_i(w) = min_θ L_i(θ) + (λ/2)‖w − θ‖² is continuously
differentiable, with ∇F_i(w) = λ(w − prox_{L_i/λ}(w)).

Assumptions: λ > 0; L_i μ-strongly convex, μ > 0 (Assumption 2 only: no
smoothness, Assumption 4 is not used by this lemma).

Instances: strongly convex quadratics (exact spectra, λ from 0.05 L to 20 L)
and logistic risks with ridge μ in [0.01, 1] (well-specified labels), one
point w per instance (random, far: margins in the hundreds, and
w = ∇L_i(0)/λ where prox(w) = 0), and a second point w' at distance 1e-4 to
10 from w.

Sides (lhs <= rhs):
* gradient identity ("exact"): lhs = ‖∇F_i(w) − λ(w − prox(w))‖ with the
  reference gradient computed without the formula — on quadratics the
  closed form λ(A + λI)⁻¹(Aw − b) by numpy solve, on logistic central
  differences of F_i's value (``moreau.envelope(f, λ).value``, a certified
  prox inside); rhs the rounding/truncation the reference allows (below).
* continuity: the paper claims only C¹, which no finite sample can refute
  as such; the check is the quantitative form that Lemma 3's own
  assumptions give: ∇F_i = λ(I − prox) is λ-Lipschitz (I − prox is
  nonexpansive because prox is firmly nonexpansive for convex L_i), so
  lhs = ‖g(w) − g(w')‖ with g the claimed formula, rhs = λ‖w − w'‖.  The
  sharper modulus L_g = λL/(λ+L) needs Assumption 4 and is fedprox.lemma2's
  part "F_i smooth"; repeating it here would duplicate that check.

Claimed by the paper: an identity (and C¹).  What the check shows: the
identity holds to rounding on both families; the modulus λ holds and is
not attained (sup over a quadratic's points: λa_d/(λ+a_d) < λ; it is the
best modulus free of L, approached as L/λ → ∞).
"""

from __future__ import annotations

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

__all__ = ["STATEMENTS"]

CLAIM = {
    "grad": lambda lam, w, theta: lam[..., None] * (w - theta),
    "prox_lam": lambda lam: lam,  # the prox in the formula is prox_{L_i/lam}
    "modulus": lambda lam: lam,  # C^1, quantified: grad F_i is lam-Lipschitz (convex L_i)
}

PARTS = ("gradient ∇F_i(w) = λ(w − prox(w))", "∇F_i continuous (λ-Lipschitz)")

D_QUAD, N_LOG, D_LOG = 4, 30, 3


def instances(family, trials, rng):
    T = trials or 48
    if family == "quadratic":
        batch = quadratic_batch(rng, T, D_QUAD, "strongly_convex")
        batch["lam"] = batch["L"] * log_uniform(rng, 0.05, 20.0, T)
        d = D_QUAD
        batch["w"] = rng.standard_normal((T, d)) * 3
    else:
        batch = logistic_batch(rng, T, N_LOG, D_LOG, mu=log_uniform(rng, 0.01, 1.0, T), scale=2.0)
        del batch["w_star"]
        d = D_LOG
        lam = log_uniform(rng, 0.1, 10.0, T)
        kind = np.arange(T) % 3  # 0 random, 1 far, 2 w = grad L_i(0)/lam (prox(w) = 0)
        w = rng.standard_normal((T, d))
        w[kind == 1] *= 300.0
        grad0 = -np.einsum("tn,tnd->td", batch["y"], batch["X"]) / (2 * N_LOG)
        w[kind == 2] = grad0[kind == 2] / lam[kind == 2, None]
        batch.update(lam=lam, w=w)
    batch["w2"] = batch["w"] + log_uniform(rng, 1e-4, 10.0, T)[:, None] * _unit(rng.standard_normal((T, d)))
    return batch


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def evaluate(batch, claim):
    lam, w, w2 = batch["lam"], batch["w"], batch["w2"]
    if "A" in batch:
        f = mo.Quadratic(batch["A"], batch["b"])
        ref, tol, how = _reference_quadratic(batch)
    else:
        f = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
        ref, tol, how = _reference_logistic(f, batch)
    lam_p = claim["prox_lam"](lam)
    g, g2 = (claim["grad"](lam, v, mo.prox(f, v, lam_p)) for v in (w, w2))
    err = np.linalg.norm(g - ref, axis=-1)
    consts = {"reference gradient": how, "modulus": "lam (I - prox nonexpansive for convex L_i)"}
    return {
        PARTS[0]: Sides(err, tol, "exact", constants=consts, note="error of the formula vs " + how),
        PARTS[1]: Sides(
            np.linalg.norm(g - g2, axis=-1),
            claim["modulus"](lam) * np.linalg.norm(w - w2, axis=-1),
            "upper",
            constants=consts,
            note="difference quotients of the formula between w and w' (1e-4 to 10 apart)",
        ),
    }


def _reference_quadratic(batch):
    A, b, w, lam = batch["A"], batch["b"], batch["w"], batch["lam"]
    M = A + lam[:, None, None] * np.eye(A.shape[-1])
    ref = lam[:, None] * np.linalg.solve(M, ((A @ w[..., None])[..., 0] - b)[..., None])[..., 0]
    # rounding of the two computations: a few hundred ulps of the combined magnitudes
    # (cond(A + lam I) <= (L + lam)/lam <= 21 here)
    theta_scale = np.linalg.norm(w, axis=-1) + np.linalg.norm(b, axis=-1) / lam
    tol = 1e-12 * (np.linalg.norm(ref, axis=-1) + lam * (np.linalg.norm(w, axis=-1) + theta_scale))
    return ref, tol, "lam (A + lam I)^-1 (A w - b) (numpy solve)"


def _reference_logistic(f, batch):
    r"""Central differences of F = envelope value, step h, with an explicit error budget.

    Per coordinate |fd - dF/dw_k| <= h^2/6 sup|F'''| + (|F(w+he)| + |F(w-he)|) e_v / (2h).
    sup|F'''| <= rho (the Hessian-Lipschitz constant of L_i, ``hessian_lipschitz``): the
    envelope's third derivative is rho's times a product of three contractions
    lam (H + lam I)^-1.  e_v is the relative error of a value: the certified prox (error
    bound <~ 1e-14) enters F only to second order, so e_v is rounding of the sums, taken
    as 64 eps.  h = (3 e_v |F| / rho)^(1/3) balances the two terms (about 1e-5 here).
    """
    lam, w = batch["lam"], batch["w"]
    F = mo.envelope(f, lam)
    d = w.shape[-1]
    rho = np.asarray(f.hessian_lipschitz())
    Fw = np.abs(F.value(w)) + 1.0
    e_v = 64 * np.finfo(float).eps
    h = (3 * e_v * Fw / rho) ** (1 / 3)
    fd = np.stack(
        [(F.value(w + h[:, None] * e) - F.value(w - h[:, None] * e)) / (2 * h) for e in np.eye(d)], axis=-1
    )
    per_coord = h**2 / 6 * rho + 2 * Fw * e_v / (2 * h)
    tol = (
        4 * np.sqrt(d) * per_coord
    )  # factor 4: |F(w +- h e)| may exceed |F(w)| + 1 by that much at most here
    return (
        fd,
        tol,
        "central differences of moreau.envelope(f, lam).value (step balancing h^2 rho against eps/h)",
    )


STATEMENTS = (
    Statement(
        id="fedprox.lemma3",
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
        source="FedProx analysis, Lemma 3",
        paper="fedprox-personalization-analysis.md",
        latex=r"F_i \in C^1,\ \nabla F_i(w) = \lambda\,(w - \mathrm{prox}_{L_i/\lambda}(w))",
        text="F_i is continuously differentiable with grad F_i(w) = lam (w - prox_{L_i/lam}(w))",
        assumptions=("lam > 0", "L_i mu-strongly convex (Assumption 2)"),
        scaling={
            "quadratic": scale_fields(QUADRATIC_SCALING),
            "logistic": scale_fields(LOGISTIC_SCALING, c_free=False),
        },
        families={"quadratic": ("strongly_convex",), "logistic": ("ridge mu in [0.01, 1]",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim=CLAIM,
        mutants=(
            Mutant("sign flipped: lam (prox(w) - w)", {"grad": lambda lam, w, t: lam[..., None] * (t - w)}),
            Mutant(
                "1/lam for lam: (w - prox(w)) / lam", {"grad": lambda lam, w, t: (w - t) / lam[..., None]}
            ),
            Mutant(
                "factor lam / 2: (lam/2) (w - prox(w))",
                {"grad": lambda lam, w, t: lam[..., None] / 2 * (w - t)},
            ),
            Mutant("prox with 2 lam: lam (w - prox_{L_i/(2 lam)}(w))", {"prox_lam": lambda lam: 2 * lam}),
            Mutant("modulus lam / 2", {"modulus": lambda lam: lam / 2}),
        ),
    ),
)
