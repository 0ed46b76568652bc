r"""fedprox.lemma1 — FedProx analysis (Yu, He, Sun, Xue, Li), Lemma 1, eq. (3).

Statement (paper): under Assumptions 1 and 2, for every data set,

    Σ_{i,j} (p_i/n_i) (μ‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² + ⟨∇ℓ(w⋆⁽ⁱ⁾, z_ij), w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾⟩)
        ≤ (λ/2) (R² − Σ_i p_i ‖w̃⁽ⁱ⁾ − w̃⁽ᵍ⁾‖²),

(w̃⁽ᵍ⁾, w̃⁽ⁱ⁾) the minimiser of Σ p_i (L_i(w⁽ⁱ⁾) + (λ/2)‖w⁽ᵍ⁾ − w⁽ⁱ⁾‖²), L_i the
empirical risk (1/n_i) Σ_j ℓ(·, z_ij), w⋆⁽ᵍ⁾ = Σ p_i w⋆⁽ⁱ⁾.

Assumptions: λ > 0, p_i ≥ 0 summing to 1; every L_i μ-strongly convex
(Assumption 2), μ > 0; ‖w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾‖² ≤ R² for all i (Assumption 1).
Which constants: μ is the largest common modulus, min_i λ_min(∇²L_i)
(least squares: eigvalsh of X_iᵀX_i/n_i; logistic: the ridge μ, the exact
global modulus — a pure logistic risk is not strongly convex on ℝ^d).  R² is
the smallest value Assumption 1 allows, max_i ‖w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾‖².

The proof (Appendix A.2 is not in our copy; this is the argument the
statement admits): adding the two strong-convexity inequalities between
w̃⁽ⁱ⁾ and w⋆⁽ⁱ⁾ gives μ‖Δ_i‖² + ⟨∇L_i(w⋆⁽ⁱ⁾), Δ_i⟩ ≤ ⟨∇L_i(w̃⁽ⁱ⁾), Δ_i⟩
(Δ_i = w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾); optimality gives ∇L_i(w̃⁽ⁱ⁾) = λ(w̃⁽ᵍ⁾ − w̃⁽ⁱ⁾) and
w̃⁽ᵍ⁾ = Σ p_i w̃⁽ⁱ⁾; with u_i = w̃⁽ⁱ⁾ − w̃⁽ᵍ⁾, v_i = w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾ (both with
Σ p_i u_i = Σ p_i v_i = 0) the p-weighted sum of the right side is
−λ Σ p_i ⟨u_i, u_i − v_i⟩ ≤ (λ/2)(Σ p_i‖v_i‖² − Σ p_i‖u_i‖²) (Young).  So the
proof needs only R² ≥ Σ p_i ‖v_i‖², weaker than Assumption 1 (a max), and
the w⋆⁽ⁱ⁾ may be any points (being population minimisers is not used).
For least squares it is the exact identity

    RHS − LHS = (λ/2)Σ p_i‖u_i − v_i‖² + Σ p_i Δ_iᵀ(A_i − μI)Δ_i + (λ/2)(R² − Σ p_i‖v_i‖²),

so equality holds iff u_i = v_i, every Δ_i lies in the μ-eigenspace of A_i
and R² = Σ p_i‖v_i‖² (= the max when all ‖v_i‖ are equal).  Two parts: eq.
(3) with the paper's R² (max), and with the proof's R² (Σ p_i ‖v_i‖²).

Instances.  Least squares (ℓ(w, z) = ½(y − xᵀw)², L_i = ½wᵀA_iw − b_iᵀw + c
with A_i = X_iᵀX_i/n_i, b_i = X_iᵀy_i/n_i; m = 4 clients, d = 3, n_i from 4 to
10, p_i random), in five kinds: (0) Gaussian anisotropic designs with noise;
(1) isotropic designs A_i = μI, zero noise, λ ≤ μ: natural data, ratio
1 − (λ/(λ+μ))²; (2) equality: isotropic designs, responses built so that the
FedProx solution is w̃⁽ⁱ⁾ = w⋆⁽ⁱ⁾ + c (u_i = v_i), equal ‖v_i‖ (pairs ±v with
equal weights); (3) equality for the proof's R²: anisotropic designs sharing
an eigenvector e of eigenvalue μ, c ∥ e, generic p and v (unequal ‖v_i‖);
(4) as (3) with w̃⁽ⁱ⁾ = w⋆⁽ⁱ⁾ + c + δv_i, |δ| in [1e-4, 1e-2] of either sign
(near equality from both sides; RHS < 0 when δ > 0).  Designed responses
are y_i = X_i ŵ_i + r_i, r_i ⟂ columns of X_i: a valid data set (the lemma is
for every data set).  Logistic (ℓ(w, z) = log(1 + e^{−y xᵀw}) + (μ/2)‖w‖²,
well-specified labels P(y = 1 | x) = σ(xᵀw⋆⁽ⁱ⁾), ridge μ in [0.01, 1], n_i
from 12 to 40 padded with zero weights).

The FedProx solution, exactly (``moreau.fl.fedprox_optimum``): least squares by
the closed form through the eigendecomposition (Σ p_i ∇²F_i w = Σ p_i V_i
diag(λ/(λ+a_i)) V_iᵀ b_i, one d×d solve); logistic by damped Newton on
Φ = Σ p_i F_i (F_i the Moreau envelopes; value, gradient and Hessian from one
certified ``moreau.prox`` per point), stopped on the certified bound
‖w − w̃⁽ᵍ⁾‖ ≤ (‖∇Φ(w)‖ + λ Σ p_i e_i)/μ_g ≤ 1e-12 (1 + ‖w‖) (or the rounding
floor of ∇Φ over μ_g where larger), μ_g = λμ/(λ+μ) the strong convexity of
each F_i (pFedMe Prop. 1 / fedprox.lemma2), e_i the certified prox errors;
then w̃⁽ⁱ⁾ = prox_{L_i/λ}(w̃⁽ᵍ⁾).

Sides: eq. (3)'s own sides can be negative and are both 0 in its equality
case, so lhs/rhs would not measure tightness.  Both sides get the same
data-dependent shift s = (λ/2)Σ p_i‖u_i‖² − Σ_{i,j}(p_i/n_i)⟨∇ℓ(w⋆⁽ⁱ⁾, z_ij), Δ_i⟩:
lhs = Σ (p_i/n_i) μ‖Δ_i‖² + (λ/2)Σ p_i‖u_i‖² ≥ 0, rhs = (λ/2)R² − Σ(p_i/n_i)⟨∇ℓ, Δ_i⟩.
Every instance holds or fails exactly as eq. (3) does (mutants get the same
shift), and 0 ≤ lhs/rhs ≤ 1 whenever it holds.

Claimed by the paper: an upper bound.  What the check shows: it holds on
every instance; on least squares it is attained (ratio 1 on kinds 2 and 3,
both sides nonzero); natural data approach equality only as λ/μ → 0 with
isotropic design and no noise (kind 1).  With the paper's R² (a max) the
bound is attained only when all ‖v_i‖ are equal.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
import moreau.fl  # noqa: F401  (mo.fl)
from moreau.analysis.engine.core import LOGISTIC_SCALING, Mutant, Sides, Statement, scale_fields
from moreau.analysis.engine.instances import log_uniform
from moreau.analysis.engine.solvers import envelope_newton  # noqa: F401  (re-exported for the tests)

__all__ = ["STATEMENTS", "fedprox_solution", "envelope_newton", "risks"]

CLAIM = {
    # summand of the left side, per sample: mu ||Delta_i||^2 + <grad l(w*_i, z_ij), Delta_i>
    "term": lambda mu, dist2, inner: mu * dist2 + inner,
    "rhs": lambda lam, R2, spread: lam / 2 * (R2 - spread),
    # R^2 of Assumption 1: the smallest valid value, max_i ||w*_i - w*_g||^2
    "R2": lambda het2, p: np.max(het2, axis=-1),
    # the value the proof needs: sum_i p_i ||w*_i - w*_g||^2
    "R2_proof": lambda het2, p: np.sum(p * het2, axis=-1),
}

PARTS = (
    "eq. (3), R² = max_i ‖w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾‖² (Assumption 1)",
    "eq. (3), R² = Σ p_i ‖w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾‖² (the proof's)",
)

M, D = 4, 3
N_LS, N_LOG = 10, 40
KINDS_LS = (
    "random",
    "isotropic zero noise",
    "equality, equal |v_i|",
    "equality, shared mu-eigenvector",
    "near equality (delta)",
)


# --- instances -----------------------------------------------------------------------


def instances(family, trials, rng):
    if family == "quadratic":
        return _least_squares(rng, trials or 60)
    return _logistic(rng, trials or 16)


def _mask(rng, T, nmax, nmin):
    n = rng.integers(nmin, nmax + 1, (T, M))
    return (np.arange(nmax) < n[..., None]).astype(float), n.astype(float)


def _generic_heterogeneity(rng, T):
    p = rng.dirichlet(2 * np.ones(M), T)
    g = rng.standard_normal((T, M, D)) * log_uniform(rng, 0.05, 2.0, (T, M))[..., None]
    return p, g - np.einsum("tm,tmd->td", p, g)[:, None]


def _paired_heterogeneity(rng, T):
    """p = (a, a, b, b), v = (s e1, -s e1, s e2, -s e2): sum p v = 0 and equal norms."""
    ab = rng.uniform(0.1, 1.0, (T, 2))
    ab /= 2 * ab.sum(axis=1, keepdims=True)
    p = np.repeat(ab, 2, axis=1)
    e = rng.standard_normal((T, 2, D))
    e *= (log_uniform(rng, 0.05, 2.0, T)[:, None] / np.linalg.norm(e, axis=-1))[..., None]
    return p, np.stack([e[:, 0], -e[:, 0], e[:, 1], -e[:, 1]], axis=1)


def _orthonormal_on_mask(rng, mask):
    """U (..., nmax, D): orthonormal columns supported on the mask's rows."""
    U, _ = np.linalg.qr(rng.standard_normal(mask.shape + (D,)) * mask[..., None])
    return U


def _least_squares(rng, T):
    kind = (np.arange(T) + 2) % len(KINDS_LS)  # instance 0 is an equality case (kind 2), even for trials=1
    mask, n = _mask(rng, T, N_LS, D + 1)
    p, v = _generic_heterogeneity(rng, T)
    pp, vp = _paired_heterogeneity(rng, T)
    paired = (kind == 1) | (kind == 2)
    p[paired], v[paired] = pp[paired], vp[paired]
    w_star = rng.standard_normal((T, 1, D)) + v
    mu = log_uniform(rng, 0.1, 10.0, T)
    lam = mu * np.where(kind == 1, log_uniform(rng, 1e-3, 1.0, T), log_uniform(rng, 1e-2, 1e2, T))

    # target Gram matrices A_i: kinds 1, 2 mu I; kinds 3, 4 a shared eigenvector e (eigenvalue mu)
    e = rng.standard_normal((T, D))
    e /= np.linalg.norm(e, axis=-1, keepdims=True)
    B = rng.standard_normal((T, M, D, D))
    B[..., 0] = e[:, None]
    V, _ = np.linalg.qr(B)  # first column +-e, the others an orthonormal basis of e's complement
    a = mu[:, None, None] * np.concatenate(
        [np.ones((T, M, 1)), rng.uniform(1.0, 10.0, (T, M, D - 1))], axis=-1
    )
    a[kind <= 2] = mu[kind <= 2, None, None]
    A_target = (V * a[..., None, :]) @ np.swapaxes(V, -1, -2)
    U = _orthonormal_on_mask(rng, mask)
    a_half = (V * np.sqrt(a)[..., None, :]) @ np.swapaxes(V, -1, -2)
    X = np.sqrt(n)[..., None, None] * U @ a_half  # X^T X / n = A_target exactly (up to rounding)

    # designed FedProx solutions (kinds 2-4): w~_i = w*_i + c + delta v_i, w~_g = w*_g + c
    c = np.where((kind == 2)[:, None], rng.standard_normal((T, D)), rng.standard_normal((T, 1)) * e)
    sign = np.where((np.arange(T) // len(KINDS_LS)) % 2 == 0, 1.0, -1.0)  # alternate: both sides of equality
    delta = np.where(kind == 4, sign * log_uniform(rng, 1e-4, 1e-2, T), 0.0)
    w_tilde = w_star + c[:, None] + delta[:, None, None] * v
    w_g = np.einsum("tm,tmd->td", p, w_tilde)
    b = (A_target @ w_tilde[..., None])[..., 0] + lam[:, None, None] * (w_tilde - w_g[:, None])
    w_hat = np.linalg.solve(A_target, b[..., None])[..., 0]  # y = X w_hat + r gives X^T y / n = b
    r = rng.standard_normal(mask.shape) * mask * log_uniform(rng, 0.01, 1.0, T)[:, None, None]
    r_perp = r - (U @ (np.swapaxes(U, -1, -2) @ r[..., None]))[..., 0]
    y_designed = (X @ w_hat[..., None])[..., 0] + r_perp

    # kind 0: Gaussian anisotropic design with noise; kind 1: isotropic, zero noise
    G = rng.standard_normal((T, M, N_LS, D)) * log_uniform(rng, 0.3, 3.0, (T, M, 1, D)) * mask[..., None]
    X = np.where((kind == 0)[:, None, None, None], G, X)
    y_model = (X @ w_star[..., None])[..., 0]
    noise = rng.standard_normal(mask.shape) * mask * log_uniform(rng, 0.01, 1.0, T)[:, None, None]
    y = np.where(
        (kind == 0)[:, None, None], y_model + noise, np.where((kind == 1)[:, None, None], y_model, y_designed)
    )
    return {"X": X, "y": y, "mask": mask, "p": p, "lam": lam, "w_star": w_star, "kind": kind}


def _logistic(rng, T):
    mask, _ = _mask(rng, T, N_LOG, 12)
    p, v = _generic_heterogeneity(rng, T)
    w_star = rng.standard_normal((T, 1, D)) + 2 * v
    X = rng.standard_normal((T, M, N_LOG, D)) * 1.5
    z = (X @ w_star[..., None])[..., 0]
    y = np.where(rng.uniform(size=z.shape) < 1 / (1 + np.exp(-z)), 1.0, -1.0)  # well specified
    return {
        "X": X,
        "y": y,
        "mask": mask,
        "p": p,
        "lam": log_uniform(rng, 0.01, 10.0, T),
        "mu": log_uniform(rng, 0.01, 1.0, T),
        "w_star": w_star,
    }


# --- the FedProx solution ----------------------------------------------------------------


def risks(batch):
    """The empirical risks L_i as a moreau objective of batch shape (T, m)."""
    X, y, mask = batch["X"], batch["y"], batch["mask"]
    if "mu" in batch:
        return mo.Logistic(X, y, mu=batch["mu"][:, None], weights=mask)
    n = mask.sum(axis=-1)
    Xm = X * mask[..., None]
    A = np.swapaxes(Xm, -1, -2) @ X / n[..., None, None]
    b = np.einsum("tmn,tmnd->tmd", mask * y, X) / n[..., None]
    return mo.Quadratic((A + np.swapaxes(A, -1, -2)) / 2, b, np.sum(mask * y**2, axis=-1) / (2 * n))


def fedprox_solution(batch):
    r"""``(w_g (T, d), w_i (T, m, d), certified bound on ||w_g - w~_g|| (T,))`` for either family."""
    w_g, w_loc, info = mo.fl.fedprox_optimum(risks(batch), batch["lam"], batch["p"], return_info=True)
    return w_g, w_loc, info.error_bound


def _sample_grads(batch):
    """grad l(w*_i, z_ij), shape (T, m, n, d) (numpy, independent of moreau)."""
    X, y, w_star = batch["X"], batch["y"], batch["w_star"]
    z = (X @ w_star[..., None])[..., 0]
    if "mu" in batch:  # l = log(1 + exp(-y x^T w)) + (mu/2)||w||^2
        s_neg = np.exp(-np.logaddexp(0.0, y * z))  # sigma(-y x^T w)
        return -(y * s_neg)[..., None] * X + batch["mu"][:, None, None, None] * w_star[:, :, None]
    return -(y - z)[..., None] * X  # l = (y - x^T w)^2 / 2


def _strong_convexity(batch, f):
    if "mu" in batch:
        return batch["mu"]
    return np.min(np.linalg.eigvalsh(np.asarray(f.A))[..., 0], axis=-1)


# --- sides ---------------------------------------------------------------------------------


def prepare(batch):
    """The claim-independent part: the FedProx solution, the strong convexity, the inner products."""
    p, lam, w_star, mask = batch["p"], batch["lam"], batch["w_star"], batch["mask"]
    f = risks(batch)
    mu = _strong_convexity(batch, f)
    w_g, w_loc, bound = fedprox_solution(batch)
    delta = w_loc - w_star
    inner = np.einsum("tmnd,tmd->tmn", _sample_grads(batch), delta)
    wts = mask * (p / mask.sum(axis=-1))[..., None]  # p_i / n_i on the real samples, 0 on padding
    het2 = np.sum((w_star - np.einsum("tm,tmd->td", p, w_star)[:, None]) ** 2, axis=-1)
    spread = np.sum(p * np.sum((w_loc - w_g[:, None]) ** 2, axis=-1), axis=-1)
    return dict(
        p=p,
        lam=lam,
        mu=mu,
        delta2=np.sum(delta**2, axis=-1),
        inner=inner,
        wts=wts,
        het2=het2,
        spread=spread,
        bound=bound,
        quad="mu" not in batch,
    )


def finish(prep, claim):
    p, lam, mu, delta2, inner, wts, het2, spread, bound, quad = (
        prep[k] for k in ("p", "lam", "mu", "delta2", "inner", "wts", "het2", "spread", "bound", "quad")
    )
    lhs_paper = np.sum(wts * claim["term"](mu[:, None, None], delta2[..., None], inner), axis=(1, 2))
    rhs_paper = claim["rhs"](lam, claim["R2"](het2, p), spread)
    rhs_proof = claim["rhs"](lam, claim["R2_proof"](het2, p), spread)
    shift = lam / 2 * spread - np.sum(wts * inner, axis=(1, 2))  # same on both sides: see the docstring
    consts = {
        "mu": "min_i eigvalsh(X_i^T X_i / n_i)" if quad else "ridge mu (exact global modulus)",
        "R2": "max_i ||w*_i - w*_g||^2 (paper), sum_i p_i ||w*_i - w*_g||^2 (proof)",
        "FedProx solution": "closed form (moreau.fl.fedprox_optimum)"
        if quad
        else f"Newton on sum p_i F_i, certified ||w_g - w~_g|| <= {bound.max():.1e}",
    }
    claimed = "tight" if quad else "upper"
    note = (
        "sides of eq. (3) plus the same shift (lambda/2) sum p_i ||u_i||^2 - sum (p_i/n_i) <grad l, Delta_i>"
    )
    return {
        PARTS[0]: Sides(lhs_paper + shift, rhs_paper + shift, claimed, constants=consts, note=note),
        PARTS[1]: Sides(
            lhs_paper + shift,
            rhs_proof + shift,
            claimed,
            constants=consts,
            note="the proof needs only R^2 >= sum p_i ||w*_i - w*_g||^2",
        ),
    }


def evaluate(batch, claim):
    return finish(prepare(batch), claim)


STATEMENTS = (
    Statement(
        id="fedprox.lemma1",
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
        source="FedProx analysis, Lemma 1, eq. (3)",
        paper="fedprox-personalization-analysis.md",
        latex=r"\sum_{i,j}\frac{p_i}{n_i}\big(\mu\|\tilde w^{(i)} - w_\star^{(i)}\|^2 + "
        r"\langle\nabla\ell(w_\star^{(i)}, z_{ij}), \tilde w^{(i)} - w_\star^{(i)}\rangle\big) \le "
        r"\frac{\lambda}{2}\big(R^2 - \sum_i p_i\|\tilde w^{(i)} - \tilde w^{(g)}\|^2\big)",
        text="model estimation error <= (lam/2)(R^2 - sum_i p_i ||w~_i - w~_g||^2) at the FedProx solution, "
        "for every data set",
        assumptions=(
            "lam > 0",
            "p_i >= 0, sum p_i = 1",
            "every L_i mu-strongly convex (Assumption 2)",
            "||w*_i - w*_g||^2 <= R^2 (Assumption 1)",
        ),
        scaling={
            "quadratic": scale_fields({"X": (-1, 0.5), "y": (0, 0.5), "w_star": (1, 0), "lam": (-2, 1)}),
            "logistic": scale_fields({**LOGISTIC_SCALING, "w_star": (1, 0)}, c_free=False),
        },
        families={"quadratic": KINDS_LS, "logistic": ("ridge mu in [0.01, 1], well-specified labels",)},
        claimed="upper",
        instances=instances,
        prepare=prepare,
        evaluate=finish,
        claim=CLAIM,
        mutants=(
            Mutant(
                "lam/4 instead of lam/2 on the right side",
                {"rhs": lambda lam, R2, spread: lam / 4 * (R2 - spread)},
            ),
            Mutant(
                "lam instead of lam/2 on the right side", {"rhs": lambda lam, R2, spread: lam * (R2 - spread)}
            ),
            Mutant(
                "+ instead of - before sum p_i ||u_i||^2 (true, not attained)",
                {"rhs": lambda lam, R2, spread: lam / 2 * (R2 + spread)},
            ),
            Mutant(
                "2 mu instead of mu on the left side",
                {"term": lambda mu, dist2, inner: 2 * mu * dist2 + inner},
            ),
            Mutant(
                "R^2 / 4 for R^2",
                {
                    "R2": lambda het2, p: np.max(het2, axis=-1) / 4,
                    "R2_proof": lambda het2, p: np.sum(p * het2, axis=-1) / 4,
                },
            ),
            Mutant(
                "Assumption 1 read with min_i instead of max_i", {"R2": lambda het2, p: np.min(het2, axis=-1)}
            ),
            Mutant("inequality reversed (paper's R^2)", {"flip": (PARTS[0],)}),
        ),
    ),
)
