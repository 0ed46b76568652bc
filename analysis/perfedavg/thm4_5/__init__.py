r"""perfedavg.thm4_5 — Per-FedAvg, Theorem 4.5 (proof in App. G, eqs. (107)–(111)) and Corollary 4.6.

Statement (paper): for α ∈ (0, 1/L], Assumptions 1–4, Algorithm 1 run for K rounds of τ local
steps with β ≤ 1/(10τL_F),

    (1/(τK)) Σ_{k<K} Σ_{t<τ} E‖∇F(w̄_{k+1,t})‖² ≤ 4(F(w_0) − F*)/(βτK) + O(1)(βL_F(1 + βL_Fτ(τ−1))σ_F²
        + βL_Fγ_F²((1 − r)/(r(n − 1)) + βL_Fτ(τ−1)) + α²L²σ_G²/D),

w̄_{k+1,t} the average over the sampled set A_k (|A_k| = rn) of the local iterates.  The proof
ends with the explicit constants (111): rhs = 4(F(w_0) − F*)/(βτK) + 4σ_T² with (108)
σ_T² = 280(βL_F)²τ(τ−1)(2σ_F² + γ_F²) + βL_F(2σ_F² + γ_F²(1 − r)/(r(n − 1))) + 4α²L²σ_G²/D (the
printed shape with O(1) = 2240); these constants are what is checked.  Corollary 4.6:
τ = O(ε^{−1/2}), K = O(ε^{−3/2}), β = ε give an O(ε + α²σ_G²/D)-stationary point.

The claim is the theorem and corollary as printed: any fraction r ∈ (0, 1] of active users with
any τ ≥ 1 (claim entry ``sampling``: every (r, τ) admitted).  The theorem cites "L_F, σ_F and η_F
from Lemmas 4.2–4.4": η_F is γ_F (Lemma 4.4), which needs Assumption 5 although only 1–4 are
listed (Assumption 2 implies it with γ_G = 2B, γ_H = 2L); each instance's own γ's are used.  The
corollary's α²σ_G²/D drops the theorem's L² (a constant, hidden by the O).

Readings.  The proof's (99) and (105) take
E[(1/rn)Σ_{i∈A_k}∇F_i(w̄_{k+1,t}) | F^t] = ∇F(w̄_{k+1,t}), but for t ≥ 1 the point w̄_{k+1,t}
depends on A_k itself (the same clients took the t previous steps): the client-sampling error of a
round is the same in all τ steps, so it adds up to βτ·(heterogeneity) per round, where the bound
counts β.  The step is right when r = 1 (A_k is everyone) or τ = 1 (w̄_{k+1,0} = w_k): the
reading "r = 1 or τ = 1" (the repair, expected to hold; the mutants are applied to it).  The
printed statement (r < 1 allowed with τ ≥ 2) fails on the default instances (the finding's
instance and the r = 1/2 corollary sweeps, drawn by every seed): expected to fail.

Instances.  Family quadratic (exact, no Monte Carlo): n = 2 clients, m = 4 samples, d = 3,
per-sample losses ½wᵀAw − c_ijᵀw with A = diag(a), a ∈ (0, L] (Assumption 1 needs f_i bounded
below: a > 0; nonconvex f is excluded by it), see ``perfedavg.algorithm_moments``; σ_G, γ_G exact,
σ_H = γ_H = ρ = 0, B cancels (as in perfedavg.propf1); F is the convex quadratic with Hessian
Q²A, F* and F(w_0) − F* exact.  E‖∇F(w̄)‖² comes from the exact mean and covariance of w_k (client
subsets enumerated, batch means' covariances exact; for 10⁹ rounds the same by geometric sums,
``thm45_closed``).  Kinds: general (α ∈ (0, 1/L] with α = 1/L among them, β up to and at
1/(10τL_F), τ ≤ 4, S ∈ {1, 2}, full batches or D, D′ ∈ {1, 2, 4}, w_0 anywhere); converged GD
(τ = 1, S = n, α = 10⁻³/L, β = 1/(10L_F), w_0 − w* along the top eigenvector, K = 150: where
4(F(w_0) − F*)/(βτK) is closest to attained); started at the optimum w_0 = w* with client sampling
(τ = 1) or batches (the first term is 0, the lhs is not); τ = 1, β ∈ (9, 10]/L_F (outside the
condition: not applicable, the iterates diverge); the finding's instance.  Corollary 4.6 (a rate
part): ε = 1/q², q ∈ {10, 30, 100, 300, 1000}, τ = q = ε^{−1/2}, K = q³ = ε^{−3/2}, β = ε (β ≤
1/(10τL_F) holds: L = 0.1), four sweeps: full participation from w_0 ≠ w*, full participation with
batch noise, and one client of two per round (r = 1/2) from w*, with and without batch noise
(quadratics have no estimator bias, so the corollary's α²σ_G²/D is 0): the fitted slope of the
exact lhs against ε must be at least 1 (the O(ε) claim; atol 0.01: the local slopes of the exact lhs differ
from the fitted one by ~1e-4, so an exponent 1.1 is rejected).

Family logistic (Monte Carlo, as the issue asks: μ = 0): n = 4 clients of m = 8 samples, d = 3,
K = 3 rounds, τ ∈ {1, 2, 3}, S ∈ {1, ..., 4}, batches D, D′, D″ ∈ {1, 2, 3}, α ∈ (0, 1/L] (a third
at 1/L), β ∈ (0, 1/(10τL_F)] (a third at the boundary), 256 runs per instance; the lhs interval is
Hoeffding's at 99.9% (``perfedavg.logistic_runs``); the rhs uses valid upper bounds of every
constant (listed in the report), so the check is rigorous in the direction that matters.  Far from
the bound (ratio ~5e-4): evidence, not a sharp test.

Family nonconvex (Theorem 4.5 is the paper's nonconvex result): Cauchy robust regression
l = κ·½log(1 + (xᵀw − y)²) + ν Σ_k(√(δ² + w_k²) − δ) with labels from two regression modes 6 apart,
n = 4, m = 6, d = 2 (``perfedavg.thm4_5.cauchy_regression``: every constant a derived upper bound, sympy suprema of
φ′, φ″, φ‴; F* certified from below by branch and bound on the box outside which F > F(w_0), to
0.1 % of the gap; F* ≥ 0 alone would overstate the gap 1.7–10×).  Four exact runs (S = n, full
batches, no randomness; K = 600, τ ∈ {1, 2}; two started where ⟨∇F(w_0), w_0 − w*⟩ < 0, beyond a
non-global local minimum) and four Monte Carlo runs (256 runs, Hoeffding with the nonconvex range
((1 + αL)B)², client sampling and batches), ``perfedavg.thm4_5.nonconvex_family``.  Iterates with a negative
eigenvalue of ∇²F: 75 % on average over seeds 0–3 (the ridge starts 100 %, the far-side starts
0–84 % once they settle in a basin).  Mutant "convex-case gap" (F(w_0) − F* ≤ ⟨∇F(w_0), w_0 − w*⟩,
true for convex F, so no quadratic or logistic instance can reject it) is rejected only here.

Claimed by the paper: an upper bound (and a rate).  What the check shows: as printed the bound
fails (client sampling with τ ≥ 2, the findings); under the reading "r = 1 or τ = 1" it holds on
every instance; on quadratics the lhs reaches ~1/4 of the rhs only in the converged
GD case (there lhs ≈ 2(F(w_0) − F*)/((2 − βλ)βK): the 4 is loose by ~4×); with noise the 4σ_T²
term is orders of magnitude above the lhs.  On the nonconvex family the bound holds, max lhs/rhs
0.06–0.25 (seeds 0–3) on the exact runs started inside a basin, ≤ 3e-4 with noise.  Corollary 4.6's slope is 1.00 with full participation.

Findings.  (1) Theorem 4.5 fails with client sampling and τ ≥ 2, even with the proof's explicit
constants: d = 1, n = 2, f_1(w) = ½w² − w, f_2(w) = ½w² + w (L = 1, exact gradients: σ_G = σ_H =
0, γ_G = 1, γ_H = 0), α = 0.01, one client per round (r = 1/2), w_0 = w* = 0 (F(w_0) = F*),
β = 10⁻¹², τ = 50 000 (β ≤ 1/(10τL_F) = 5·10⁻⁷), K = 2·10⁹: exact lhs 2.342e-8 > rhs 4σ_T² =
1.167e-8 (ratio 2.006).  Quadratics lack the bounded gradient of Assumption 2, but every iterate
and every point where a gradient is taken lies in [−1, 1]; replacing ½w² outside [−2, 2] by a C²
extension whose curvature falls linearly to 0 over a width 6 gives B = 6, ρ = 1/6, L_F = 4 + α,
the same run, and ratio 1.997.  For the printed O(1): along β = u², τ = 1/u the lhs is ~u/2 while
the printed bracket is ~768(β + 4u²): lhs/bracket grows like 1/u (0.0013, 0.012, 0.12, 1.21 at
u = 10⁻¹ … 10⁻⁴), so no constant makes it true.  (2) Corollary 4.6 fails for r < 1: with
β = ε, τ = ε^{−1/2}, K = ε^{−3/2} and one client of two per round, the exact lhs decays like ε^{1/2}
(fitted slope 0.49 over ε = 10⁻² … 10⁻⁶), not O(ε + α²σ_G²/D) = O(ε) (σ_G = 0).  Both hold with
r = 1 or τ = 1 (the reading "r = 1 or τ = 1").
"""  # noqa: E501 (the text of moreau check --describe, docs/catalogue.md)

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Statement, scale_fields
from moreau.analysis.engine.instances import trials_at_least
from moreau.analysis.perfedavg.thm4_5.families import FINDING, _logistic, _quadratic
from moreau.analysis.perfedavg.thm4_5.nonconvex_family import nc_instances, nc_prepare
from moreau.analysis.perfedavg.thm4_5.sides import CONFIDENCE, PARTS, evaluate

__all__ = ["STATEMENTS", "CLAIM", "READINGS", "REPAIR", "FINDING", "NC_FAMILY", "PARTS", "evaluate"]

CLAIM = {
    "L_F": lambda L, alpha, rho, B: 4 * L + alpha * rho * B,
    "sigma_F2": lambda B, sG2, sH2, alpha, L, invD, invD1, invD2: (
        12 * (B**2 + sG2 * (invD1 + (alpha * L) ** 2 * invD)) * (1 + sH2 * alpha**2 / 4 * invD2) - 12 * B**2
    ),
    "gamma_F2": lambda B, alpha, gH2, gG2: 3 * B**2 * alpha**2 * gH2 + 192 * gG2,
    "sigma_T2": lambda beta, LF, tau, sF2, gF2, r, n, alpha, L, sG2, invD: (
        280 * (beta * LF) ** 2 * tau * (tau - 1) * (2 * sF2 + gF2)
        + beta * LF * (2 * sF2 + gF2 * (1 - r) / (r * (n - 1)))
        + 4 * alpha**2 * L**2 * sG2 * invD
    ),
    # F(w_0) - F* from F(w_0), (a lower bound of) F* and <grad F(w_0), w_0 - w*> (a convex-case mutant's)
    "gap": lambda F0, Fstar, lin: F0 - Fstar,
    "bound": lambda gap, beta, tau, K, sT2: 4 * gap / (beta * tau * K) + 4 * sT2,
    "beta_condition": lambda beta, tau, LF: beta <= 1 / (10 * tau * LF),
    "alpha_condition": lambda alpha, L: (alpha > 0) & (alpha <= 1 / L),
    "cor_exponent": 1.0,
    # the (r, tau) the statement admits: as printed every fraction r = S/n of active users with every tau
    "sampling": lambda S, n, tau: np.ones(np.broadcast(S, tau).shape, bool),
}

#: the repair: the proof's (99)/(105) need A_k independent of the point, i.e. full participation or one local step
REPAIR = "r = 1 or τ = 1"
READINGS = (
    Reading(
        REPAIR,
        {"sampling": lambda S, n, tau: (S >= n) | (tau <= 1)},
        why="the proof's (99) and (105) treat w_bar_{k+1,t} as independent of A_k, true only when A_k is "
        "every client (r = 1) or w_bar_{k+1,0} = w_k is the only point (tau = 1); the printed statement "
        "(client sampling r < 1 with tau >= 2) fails (findings)",
        repairs="missing hypothesis",
    ),
)

#: the family of nonconvex clients (Cauchy robust regression)
NC_FAMILY = "nonconvex"


Q_MIN = 14  # fewest quadratic instances (--trials is raised to it): the sweeps, finding, 9 designed cases distinct
trials_used = trials_at_least(Q_MIN, "quadratic instances: its sweeps, finding, designed cases", "quadratic")


# The entry point of the instances stays in the package beside the statement: ``moreau check --describe``
# documents a statement with the docstring of the module that defines its ``instances`` (this one).
def instances(family, trials, rng):
    if family == NC_FAMILY:
        return nc_instances(rng, trials or 8)
    return (
        _quadratic(rng, trials_used(family, trials)[0] if trials else 20)
        if family == "quadratic"
        else _logistic(rng, trials or 6)
    )


def prepare(batch):
    """The nonconvex family's claim-independent work (F* bounds, Monte Carlo), once per batch."""
    return nc_prepare(batch, CONFIDENCE) if "kappa" in batch else batch


def _finding_instance():
    """The finding's instance (d = 1, n = 2, f_{1,2} = w^2/2 -+ w, alpha = 0.01, one client per round,
    beta = 1e-12, tau = 50 000, K = 2e9): row 4 of the generator's batch, whatever the seed."""
    from moreau.analysis.engine.core import take

    return take(instances("quadratic", None, np.random.default_rng(0)), [4])


STATEMENTS = (
    Statement(
        id="perfedavg.thm4_5",
        source="Per-FedAvg, Theorem 4.5 (proof App. G, eqs. (108), (111)) and Corollary 4.6",
        paper="per-fedavg-maml.md",
        latex=r"\frac{1}{\tau K}\sum_{k<K}\sum_{t<\tau}\mathbb E\|\nabla F(\bar w_{k+1,t})\|^2\le"
        r"\frac{4(F(w_0)-F^*)}{\beta\tau K}+4\sigma_T^2",
        text="Per-FedAvg stationarity, as printed (any r in (0, 1], any tau): average E||grad F(w_bar)||^2 <= "
        "4(F(w_0) - F*)/(beta tau K) + 4 sigma_T^2 (the proof's constants for the printed O(1)); "
        "Corollary 4.6's O(eps)",
        assumptions=(
            "alpha in (0, 1/L]",
            "beta <= 1/(10 tau L_F)",
            "Assumptions 1-4 (gamma_F needs 5)",
            "any r in (0, 1] and any tau >= 1 (as printed; reading: r = 1 or tau = 1)",
            "clients sampled uniformly without replacement, |A_k| = rn; independent batches",
        ),
        scaling={
            "quadratic": scale_fields(
                {"a": (-2, 1), "C": (-1, 1), "alpha": (2, -1), "beta": (2, -1), "w0": (1, 0)}
            ),
            "logistic": scale_fields(
                {"X": (-1, 0), "alpha": (2, 0), "beta": (2, 0), "w0": (1, 0)}, c_free=False
            ),
            NC_FAMILY: scale_fields(
                {
                    "X": (-1, 0),
                    "kappa": (0, 1),
                    "nu": (-1, 1),
                    "delta": (1, 0),
                    "alpha": (2, -1),
                    "beta": (2, -1),
                    "w0": (1, 0),
                }
            ),
        },
        families={
            "quadratic": ("shared A, a > 0, per-sample linear terms", "Corollary 4.6 sweeps"),
            "logistic": ("mu = 0, Monte Carlo",),
            NC_FAMILY: (
                "NONCONVEX: Cauchy robust regression, two modes, pseudo-Huber ridge; exact runs",
                "Monte Carlo",
            ),
        },
        claimed="upper",
        instances=instances,
        trials_used=trials_used,
        evaluate=evaluate,
        prepare=prepare,
        claim=CLAIM,
        readings=READINGS,
        counterexamples={"quadratic": _finding_instance},
        expect="fails",
        mutants=(
            Mutant(
                "4 (F(w_0) - F*)/(beta tau K) -> (F(w_0) - F*)/(beta tau K)",
                {"bound": lambda gap, b, tau, K, s: gap / (b * tau * K) + 4 * s},
            ),
            Mutant(
                "wrong exponent: 1/(beta tau K) -> 1/(beta tau K^2)",
                {"bound": lambda gap, b, tau, K, s: 4 * gap / (b * tau * K**2) + 4 * s},
            ),
            Mutant("4 sigma_T^2 dropped", {"bound": lambda gap, b, tau, K, s: 4 * gap / (b * tau * K)}),
            Mutant(
                "condition relaxed: beta <= 10/(tau L_F)",
                {"beta_condition": lambda b, tau, LF: b <= 10 / (tau * LF)},
            ),
            Mutant("Corollary 4.6: O(eps) -> O(eps^1.5)", {"cor_exponent": 1.5}),
            Mutant("Corollary 4.6: exponent 1.1 (O(eps^1.1))", {"cor_exponent": 1.1}),
            Mutant("inequality reversed", {"flip": (PARTS[0],)}),
            Mutant(
                "convex-case gap: F(w_0) - F* -> <grad F(w_0), w_0 - w*> (a bound only for convex F)",
                {"gap": lambda F0, Fstar, lin: lin},
            ),
        ),
        equivalent_mutants={
            "4 -> 2 in the first term": "not refuted: on the converged GD instances the lhs is 2 (F(w_0) - F*)/"
            "((2 - beta lambda) beta K) ~ 1.01 (F(w_0) - F*)/(beta K), half of 2",
            "the bias term 4 alpha^2 L^2 sigma_G^2 / D dropped": "quadratics have no estimator bias; on logistic "
            "data the lhs is far below the rest of the bound",
            "280 (drift term) -> 0": "with a shared Hessian the average of the local iterates does not drift "
            "(w_bar stays at w* from w*); the sampling term covers client sampling",
        },
        findings=(
            "Theorem 4.5 fails with client sampling (r < 1) and tau >= 2, even with the proof's constants "
            "(111)/(108): d = 1, n = 2, f_1 = w^2/2 - w, f_2 = w^2/2 + w, alpha = 0.01, r = 1/2, exact gradients, "
            "w_0 = w* = 0, beta = 1e-12, tau = 50000, K = 2e9: exact lhs 2.342e-8 > rhs 1.167e-8 (ratio 2.006; "
            "1.997 with a bounded-gradient C^2 extension outside [-2, 2], B = 6, rho = 1/6). Along beta = u^2, "
            "tau = 1/u the lhs / printed O(1)-bracket grows like 1/u, so no constant makes the printed bound true. "
            "Cause: (99)/(105) treat w_bar_{k+1,t} as independent of A_k. Holds for r = 1 or tau = 1 "
            "(reading 'r = 1 or τ = 1').",
            "Corollary 4.6 fails for r < 1: beta = eps, tau = eps^(-1/2), K = eps^(-3/2), one client of two per "
            "round, exact gradients: the exact lhs decays like eps^(1/2) (fitted slope 0.49 over eps = 1e-2..1e-6), "
            "not O(eps + alpha^2 sigma_G^2/D) = O(eps). Holds with r = 1 (reading 'r = 1 or τ = 1').",
            "Corollary 4.6's rule beta = eps is not scale-consistent (found by moreau check --analyse): a step "
            "size (units 1/curvature) is set equal to an accuracy on |grad F|^2, so the same problem in other "
            "units gets other steps; over the printed eps grid 1e-2..1e-6 the fitted exponent of the exact lhs "
            "(full participation) is 1.000 in the instance's units and 0.80 after theta -> 8 theta: the O(eps) "
            "rate shows only once eps is small in the problem's own units.",
        ),
    ),
)
