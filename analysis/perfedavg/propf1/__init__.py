r"""perfedavg.propf1 — Per-FedAvg, Proposition F.1 (eqs. (57a), (57b)) and Corollary F.2 (eqs. (58a), (58b)).

Statement (paper, App. F): let every one of the n agents run the local updates (56),
w_{k,0}^i = w_{k−1}, w_{k,t}^i = w_{k,t−1}^i − β∇̃F_i(w_{k,t−1}^i) (the estimate (8) on independent
batches D, D′, D″), and w_{k,t} = (1/n)Σ_i w_{k,t}^i.  Under Assumptions 2–4, for any α ∈ [0, 1/L]
and any t ≥ 0

    (57a)  E[(1/n)Σ‖w_{k,t}^i − w_{k,t}‖]  ≤ 2βt(1 + 2βL_F)^{t−1}(σ_F + γ_F),
    (57b)  E[(1/n)Σ‖w_{k,t}^i − w_{k,t}‖²] ≤ 4β²(1 + 1/φ)t(1 + φ + 16(1 + 1/φ)β²L_F²)^{t−1}(2σ_F² + γ_F²)
           for every φ > 0;

Corollary F.2: for β ≤ 1/(10τL_F) and 0 ≤ t ≤ τ, (58a) E[...‖·‖] ≤ 4βt(σ_F + γ_F) and
(58b) E[...‖·‖²] ≤ 35β²tτ(2σ_F² + γ_F²).  L_F = 4L + αρB (Lemma 4.2), σ_F² = 12[B² + σ_G²(1/D′ +
(αL)²/D)][1 + σ_H²α²/(4D″)] − 12B² (Lemma 4.3), γ_F² = 3B²α²γ_H² + 192γ_G² (Lemma 4.4).

Assumptions and readings.  The proposition lists Assumptions 2–4 but its γ_F (Lemma 4.4) needs
Assumption 5; it holds under Assumption 2 with γ_G = 2B, γ_H = 2L, so nothing is lost: the exact
γ's of each instance are used.  No condition on β in F.1 (β is drawn up to 3/L_F and beyond the
Corollary's 1/(10τL_F)); α ∈ [0, 1/L] (instances with α ∈ (1/L, 4/L] are generated and reported
not applicable); Assumption 1 is not needed, so f may be nonconvex.

Instances (family quadratic; n = 4 clients, m = 3 samples each, d = 3): per-sample losses
l_ij(w) = ½wᵀAw − c_ijᵀw with one A = diag(a) of the three kinds (convex a_1 = 0, strongly
convex, weakly convex down to a_1 = −L), see ``perfedavg.algorithm_moments``: σ_H = γ_H = ρ = 0 and
σ_G² = max_i tr Σ_i, γ_G² = (1/n)Σ‖c̄_i − c̄‖² are exact sups.  Quadratics break ‖∇f_i‖ ≤ B, but B
cancels exactly: it enters only through αρB (ρ = 0), 12B²·1 − 12B² (σ_H = 0) and 3B²α²γ_H² (γ_H = 0).
Full batches (σ_F = 0) and batches D, D′ ∈ {1, 2, 4} drawn with replacement; τ ∈ {1, ..., 8};
every t in 1..8 is checked for F.1, t ≤ τ for F.2; β log-uniform over [10⁻³, 3]/L_F, a third at the
Corollary's boundary β = 1/(10τL_F) exactly.  Adversarial instances: a_1 = −L, α = 1/L (then
P = I − βQ²A has the eigenvalue 1 + βL_F, the largest the proof allows), c̄_i − c̄ = ±s e_1 (equal
norms, so (1/n)Σ‖δ_i‖ = γ_G).  Homogeneous clients (γ_G = 0) with batches D = 1, D′ = 2: the
drift is batch noise alone.

Instances (family logistic; ``perfedavg.propf1.logistic``): n = 4 clients of m = 6 samples, d = 3, μ = 0,
client-shifted features and, on half the instances, half the clients' labels flipped (heterogeneous
clients); α ∈ (0, 1/L] with α = 1/L on a third and a few in (1/L, 4/L] (not applicable); τ ∈ 1..4,
every t ≤ 4 checked for F.1, t ≤ τ for F.2; β log-uniform in [10⁻², 3]/L_F, a third at the
Corollary's boundary; D, D′, D″ ∈ {full, 1, 2, 3} (full on a quarter).  The drift moments are not
closed-form: Monte Carlo over 1000 runs of ``moreau.fl.per_fedavg`` per instance and t (one seed for
all horizons: the t-step iterates are prefixes of one trajectory), with Hoeffding intervals on a
proven per-run range, Y ∈ [0, 2tβcB] (square for the second moment), c = max(1, α max‖x_ij‖²/4 − 1)
bounding ‖I − αH̃‖ on any batch: each local step moves a client by at most βcB, wherever it is
(level 1 − 10⁻³/4 per t; exact with full batches).  Constants (``perfedavg.logistic_runs.
logistic_constants``) are sups over all of R^d, so no region has to contain the iterates: L exact
(λ_max(X_iᵀX_i)/(4m), attained at 0), B = max‖x_ij‖, ρ the documented Hessian-Lipschitz bound,
σ_G², σ_H², γ_G², γ_H² valid sup bounds (those of perfedavg.lemma4_4); the rhs they give is at least
the paper's with the exact sups, so an interval above it would be a certified failure.  Scaling
θ → sθ declared (X/s, α s², β s², w_0 s; c = 1 only: a logistic loss times c is not logistic).

Sides (quadratic), all exact (no Monte Carlo): the local offsets are affine in independent batch means, so the
drift's mean and covariance follow exact recursions (``local_moments``); the second moment is exact,
and the first moment lies in the rigorous bracket [(1/n)Σ‖E e_i‖, (1/n)Σ(E‖e_i‖²)^½] (equal with
full batches).  A bound fails only when the bracket's lower end exceeds it.  (57b) is checked
against the smallest rhs over φ ∈ 10^[-4, 4] (49 points) and φ = 1/(2τ).  The closed forms are
checked against Per-FedAvg itself (``moreau.fl.per_fedavg``) and a brute-force simulation in the tests.

Claimed by the paper: upper bounds.  What the check shows: all four hold on every instance and are
loose (max ratios ≈ 0.15 (upper end of the first-moment bracket), 0.021, 0.075, 0.0026 for (57a),
(57b), (58a), (58b)).  The sharp deterministic drift here is 4[(1 + βL_F)^t − 1]/L_F · γ_G (at
a_1 = −L, α = 1/L, equal client offsets), so with full batches the ratio to (57a) is at most
4/(2√192) ≈ 0.14 (t = 1); (58a) keeps a factor √192 of
slack, and with γ_F² = γ_G² instead of 192γ_G² it fails at β = 1/(10τL_F), t = τ ≥ 2 (the proof's
(1 + 1/(5τ))^{t−1} ≤ e^{0.2} step is nearly attained there).  Adversarial large steps (τ = 8,
β ∈ [8, 10]/(τL_F), outside the Corollary's condition) reject its relaxation to β ≤ 10/(τL_F), and
α = 4/L the relaxation α ≤ 4/L.  On logistic clients all four hold with much larger slack (max
ratios of the Monte Carlo means ≈ 0.015, 4·10⁻⁴, 0.008, 3·10⁻⁵ at seed 0): the drift is
small next to 2βt(σ_F + γ_F) with √192 γ_G and the sup bounds of σ_G, γ_G; only the reversed
inequality is rejected there (the quadratic family rejects every mutant).  No finding.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Sides, Statement, scale_fields
from moreau.analysis.engine.instances import log_uniform, quadratic_batch, split_counts, trials_at_least
from moreau.analysis.perfedavg.algorithm_moments import client_stats, drift_moments, local_moments
from moreau.analysis.perfedavg.propf1 import logistic as lg
from moreau.analysis.perfedavg.propf1.worst_round import worst_t

__all__ = ["STATEMENTS", "CLAIM", "constants"]

CLAIM = {
    "L_F": lambda L, alpha, rho, B: 4 * L + alpha * rho * B,
    "sigma_F2": lambda B, sG2, sH2, alpha, L, invD, invD1, invD2: (
        12 * (B**2 + sG2 * (invD1 + (alpha * L) ** 2 * invD)) * (1 + sH2 * alpha**2 / 4 * invD2) - 12 * B**2
    ),
    "gamma_F2": lambda B, alpha, gH2, gG2: 3 * B**2 * alpha**2 * gH2 + 192 * gG2,
    "drift1": lambda beta, t, LF, sF, gF: 2 * beta * t * (1 + 2 * beta * LF) ** (t - 1) * (sF + gF),
    "drift2": lambda beta, t, phi, LF, sF2, gF2: (
        4
        * beta**2
        * (1 + 1 / phi)
        * t
        * (1 + phi + 16 * (1 + 1 / phi) * beta**2 * LF**2) ** (t - 1)
        * (2 * sF2 + gF2)
    ),
    "cor1": lambda beta, t, tau, sF, gF: 4 * beta * t * (sF + gF),
    "cor2": lambda beta, t, tau, sF2, gF2: 35 * beta**2 * t * tau * (2 * sF2 + gF2),
    "beta_condition": lambda beta, tau, LF: beta <= 1 / (10 * tau * LF),
    "alpha_condition": lambda alpha, L: (alpha >= 0) & (alpha <= 1 / L),
}

PARTS = (
    "(57a) E (1/n) sum ||w_i - w_bar|| <= 2 beta t (1 + 2 beta L_F)^(t-1) (sigma_F + gamma_F)",
    "(57b) E (1/n) sum ||w_i - w_bar||^2 <= 4 beta^2 (1 + 1/phi) t (1 + phi + 16(1 + 1/phi) beta^2 L_F^2)^(t-1)"
    " (2 sigma_F^2 + gamma_F^2), every phi > 0",
    "(58a) beta <= 1/(10 tau L_F), t <= tau: E (1/n) sum ||w_i - w_bar|| <= 4 beta t (sigma_F + gamma_F)",
    "(58b) beta <= 1/(10 tau L_F), t <= tau: E (1/n) sum ||w_i - w_bar||^2 <= 35 beta^2 t tau"
    " (2 sigma_F^2 + gamma_F^2)",
)

N, M, DIM, TMAX = 4, 3, 3, 8
PHIS = np.logspace(-4, 4, 49)


#: fewest quadratic instances: the last quarter's adversarial ones (a_1 = -L), at least one in each half
Q_MIN = 8


trials_used = trials_at_least(Q_MIN, "quadratic instances: its adversarial ones", "quadratic")


def instances(family, trials, rng):
    if family == "logistic":
        return lg.instances(rng, trials or 8)
    T = trials_used(family, trials)[0] if trials else 48
    sizes = split_counts(T, 4)
    kinds = ("weakly_convex", "convex", "strongly_convex")
    a = np.concatenate(
        [quadratic_batch(rng, k, DIM, kinds[i % 3])["eig"] for i, k in enumerate(sizes[:3])]
        + [quadratic_batch(rng, sizes[3], DIM, "weakly_convex")["eig"]]
    )
    L = np.max(np.abs(a), axis=1)
    adv = np.arange(T - sizes[3], T)  # a_1 = -L, alpha = 1/L, aligned, full batches
    a[adv, 0] = -L[adv]
    tau = rng.integers(1, TMAX + 1, T)
    alpha = rng.uniform(0.0, 1.0, T) / L
    alpha[::5] = 1 / L[::5]
    alpha[1::7] = 0.0
    alpha[3::11] = rng.uniform(1.0, 4.0, alpha[3::11].size) / L[3::11]  # outside [0, 1/L]: not applicable
    alpha[adv] = 1 / L[adv]
    LF = 4 * L
    beta = log_uniform(rng, 1e-3, 3.0, T) / LF
    beta[::3] = 1 / (10 * tau[::3] * LF[::3])  # the Corollary's boundary
    delta = rng.standard_normal((T, N, DIM)) * L[:, None, None]
    half = np.array_split(adv, 2)
    signs = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
    delta[adv] = 0.0
    delta[adv, :, 0] = signs * L[adv, None] * log_uniform(rng, 0.1, 3.0, adv.size)[:, None]
    tau[half[0]] = rng.choice([5, 8], half[0].size)
    beta[half[0]] = 1 / (10 * tau[half[0]] * LF[half[0]])  # rejects gamma_F^2 -> gamma_G^2 in (58a)
    tau[half[1]] = TMAX  # large steps: the exponents, and beyond the
    beta[half[1]] = rng.uniform(8.0, 10.0, half[1].size) / (TMAX * LF[half[1]])  # Corollary's condition
    alpha[half[1][-1]] = 4 / L[half[1][-1]]  # not applicable; rejects alpha <= 4/L
    homog = np.setdiff1d(np.arange(2, T, 9), adv)  # gamma_G = 0: the drift is batch noise alone
    delta[homog] = 0.0
    delta -= delta.mean(axis=1, keepdims=True)
    noise = rng.standard_normal((T, N, M, DIM)) * L[:, None, None, None] * rng.uniform(0.1, 2.0, (T, 1, 1, 1))
    noise -= noise.mean(axis=2, keepdims=True)
    C = rng.standard_normal((T, 1, 1, DIM)) * L[:, None, None, None] + delta[:, :, None, :] + noise
    inv = np.array([0.0, 1.0, 0.5, 0.25])
    invD, invD1 = inv[rng.integers(0, 4, T)], inv[rng.integers(0, 4, T)]
    invD[::4], invD1[::4] = 0.0, 0.0
    invD[adv], invD1[adv] = 0.0, 0.0
    invD[homog], invD1[homog] = 1.0, 0.5
    return {
        "a": a,
        "C": C,
        "alpha": alpha,
        "beta": beta,
        "tau": tau.astype(float),
        "invD": invD,
        "invD1": invD1,
    }


def constants(batch, claim):
    """``(L, L_F, sigma_F^2, gamma_F^2)`` of the instances (exact; B = 0 cancels, see the docstring)."""
    a, alpha = batch["a"], batch["alpha"]
    L = np.max(np.abs(a), axis=1)
    _, _, sG2, gG2 = client_stats(batch["C"])
    zero = np.zeros_like(L)
    LF = claim["L_F"](L, alpha, zero, zero)
    sF2 = claim["sigma_F2"](zero, sG2, zero, alpha, L, batch["invD"], batch["invD1"], zero)
    gF2 = claim["gamma_F2"](zero, alpha, zero, gG2)
    return L, LF, sF2, gF2


CONSTS = {
    "L": "exact: max |a_k|",
    "rho": "exact: 0 (every sample Hessian is A)",
    "B": "unbounded on quadratics; cancels exactly (multiplies rho = 0, sigma_H = 0, gamma_H = 0)",
    "sigma_G^2": "exact: max_i tr Sigma_i (constant in w)",
    "sigma_H^2": "exact: 0",
    "gamma_G^2": "exact: (1/n) sum ||cbar_i - cbar||^2 (constant in w)",
    "gamma_H^2": "exact: 0",
}


def prepare(batch):
    """Logistic batches: the Monte Carlo drift moments (claim-independent, drawn once for the statement
    and its mutants); quadratic batches are evaluated in closed form from the batch itself."""
    return {**batch, "mc": lg.drift_mc(batch)} if "X" in batch else batch


def evaluate(batch, claim):
    if "X" in batch:
        return lg.evaluate(batch, claim, PARTS, _rhs)
    L, LF, sF2, gF2 = constants(batch, claim)
    alpha, beta, tau = batch["alpha"], batch["beta"], batch["tau"]
    mu, cov, _ = local_moments(batch["a"], batch["C"], alpha, beta, batch["invD"], batch["invD1"], TMAX)
    second, lo, hi = (x[1:] for x in drift_moments(mu, cov))  # (TMAX, T), t = 1..TMAX
    t = np.arange(1, TMAX + 1, dtype=float)[:, None]
    ok_alpha = claim["alpha_condition"](alpha, L)
    r1, r2, r3, r4 = _rhs(claim, beta, tau, L, LF, sF2, gF2)
    within = t <= tau
    cor_ok = ok_alpha & claim["beta_condition"](beta, tau, LF)
    out = {}
    for name, lhs, rhs, mask, app in (
        (PARTS[0], (lo, hi), r1, None, ok_alpha),
        (PARTS[1], second, r2, None, ok_alpha),
        (PARTS[2], (lo, hi), r3, within, cor_ok),
        (PARTS[3], second, r4, within, cor_ok),
    ):
        out[name] = _worst(name, lhs, rhs, mask, app)
    return out


def _rhs(claim, beta, tau, L, LF, sF2, gF2):
    """The four right-hand sides ``(TMAX, T)``: (57a), (57b) (min over phi), (58a), (58b)."""
    t = np.arange(1, TMAX + 1, dtype=float)[:, None]
    sF, gF = np.sqrt(sF2), np.sqrt(gF2)
    phis = np.concatenate(
        [np.broadcast_to(PHIS[:, None, None], (PHIS.size, 1, tau.size)), (1 / (2 * tau))[None, None, :]]
    )
    with np.errstate(over="ignore"):
        r2 = np.min(claim["drift2"](beta, t[None], phis, LF, sF2, gF2), axis=0)
    return (
        claim["drift1"](beta, t, LF, sF, gF),
        r2,
        claim["cor1"](beta, t, tau, sF, gF),
        claim["cor2"](beta, t, tau, sF2, gF2),
    )


def _worst(name, lhs, rhs, mask, app):
    """Per instance the t with the largest (upper lhs)/rhs; a bracket (lo, hi) stays a bracket."""
    lo, hi = lhs if isinstance(lhs, tuple) else (lhs, lhs)
    r, k, i = worst_t(hi, rhs, mask)
    bracket = isinstance(lhs, tuple)
    note = (
        "first moment: rigorous bracket [(1/n) sum ||E e_i||, (1/n) sum sqrt(E||e_i||^2)] (equal with full "
        "batches); fails only if the lower end exceeds the bound"
        if bracket
        else "exact second moment (closed-form recursion)"
    )
    if "(57b)" in name:
        note += "; rhs = min over phi in 10^[-4, 4] and phi = 1/(2 tau)"
    return Sides(
        hi[k, i],
        rhs[k, i],
        "upper",
        applicable=app,
        lhs_ci=(lo[k, i], hi[k, i]) if bracket else None,
        confidence=1.0 if bracket else None,
        constants=CONSTS,
        note=note,
    )


STATEMENTS = (
    Statement(
        id="perfedavg.propf1",
        source="Per-FedAvg, Proposition F.1 (eqs. (57a), (57b)) and Corollary F.2 (eqs. (58a), (58b))",
        paper="per-fedavg-maml.md",
        latex=r"\mathbb E\big[\tfrac1n\sum_i\|w^i_{k,t}-w_{k,t}\|\big]\le 2\beta t(1+2\beta L_F)^{t-1}"
        r"(\sigma_F+\gamma_F),\ \ \mathbb E\big[\tfrac1n\sum_i\|w^i_{k,t}-w_{k,t}\|^2\big]\le 35\beta^2t\tau"
        r"(2\sigma_F^2+\gamma_F^2)\ (\beta\le 1/(10\tau L_F))",
        text="client drift of Per-FedAvg's local iterates: (57a), (57b) for any beta; (58a), (58b) for "
        "beta <= 1/(10 tau L_F), t <= tau",
        assumptions=(
            "alpha in [0, 1/L], L = max L_i",
            "Assumptions 2-4 (gamma_F also needs Assumption 5)",
            "every agent runs the local steps (56) from w_{k-1} with independent batches",
            "(58a), (58b): beta <= 1/(10 tau L_F), 0 <= t <= tau",
        ),
        scaling={
            "quadratic": scale_fields({"a": (-2, 1), "C": (-1, 1), "alpha": (2, -1), "beta": (2, -1)}),
            "logistic": scale_fields(
                {"X": (-1, 0), "alpha": (2, 0), "beta": (2, 0), "w0": (1, 0)}, c_free=False
            ),
        },
        families={
            "quadratic": (
                "shared A, per-sample linear terms: convex",
                "strongly_convex",
                "weakly_convex",
                "full batches and D, D' in {1, 2, 4}",
            ),
            "logistic": (
                "n = 4 clients, m = 6 samples, mu = 0, heterogeneous features and labels",
                "full batches and D, D', D'' in {1, 2, 3}: Monte Carlo",
            ),
        },
        claimed="upper",
        instances=instances,
        trials_used=trials_used,
        prepare=prepare,
        evaluate=evaluate,
        claim=CLAIM,
        mutants=(
            Mutant(
                "gamma_F^2 = 192 gamma_G^2 -> gamma_G^2",
                {"gamma_F2": lambda B, a, h, g: 3 * B**2 * a**2 * h + g},
            ),
            Mutant(
                "(57a) exponent t-1 -> 0: 2 beta t (sigma_F + gamma_F)",
                {"drift1": lambda b, t, LF, sF, gF: 2 * b * t * (sF + gF)},
            ),
            Mutant(
                "(57b) exponent t-1 -> 0",
                {"drift2": lambda b, t, phi, LF, s2, g2: 4 * b**2 * (1 + 1 / phi) * t * (2 * s2 + g2)},
            ),
            Mutant(
                "(57b) sigma_F dropped: (2 sigma_F^2 + gamma_F^2) -> gamma_F^2",
                {
                    "drift2": lambda b, t, phi, LF, s2, g2: (
                        4
                        * b**2
                        * (1 + 1 / phi)
                        * t
                        * (1 + phi + 16 * (1 + 1 / phi) * b**2 * LF**2) ** (t - 1)
                        * g2
                    )
                },
            ),
            Mutant(
                "(58b) beta^2 -> beta^3",
                {"cor2": lambda b, t, tau, s2, g2: 35 * b**3 * t * tau * (2 * s2 + g2)},
            ),
            Mutant(
                "condition relaxed: beta <= 10/(tau L_F)",
                {"beta_condition": lambda b, tau, LF: b <= 10 / (tau * LF)},
            ),
            Mutant(
                "condition relaxed: alpha <= 4/L", {"alpha_condition": lambda a, L: (a >= 0) & (a <= 4 / L)}
            ),
            Mutant("(57a) inequality reversed", {"flip": (PARTS[0],)}),
        ),
        equivalent_mutants={
            "35 -> 12e (~32.6) in (58b)": "the proof's own constant 4 (1 + 2 tau) tau^-1 e <= 12 e; still true",
        },
    ),
)
