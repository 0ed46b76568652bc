r"""perfedavg.thm4_5 — Per-FedAvg, Theorem 4.5 (proof in App. G, eqs. (107)–(111)) and Corollary 4.6.

Statement (paper): for α ∈ (0, 1/L], Assumptions 1–4, Algorithm 1 run for K rounds of τ local
steps with β ≤ 1/(10τL_F),

    (1/(τK)) Σ_{k<K} Σ_{t<τ} E‖∇F(w̄_{k+1,t})‖² ≤ 4(F(w_0) − F*)/(βτK) + O(1)(βL_F(1 + βL_Fτ(τ−1))σ_F²
        + βL_Fγ_F²((1 − r)/(r(n − 1)) + βL_Fτ(τ−1)) + α²L²σ_G²/D),

w̄_{k+1,t} the average over the sampled set A_k (|A_k| = rn) of the local iterates.  The proof
ends with the explicit constants (111): rhs = 4(F(w_0) − F*)/(βτK) + 4σ_T² with (108)
σ_T² = 280(βL_F)²τ(τ−1)(2σ_F² + γ_F²) + βL_F(2σ_F² + γ_F²(1 − r)/(r(n − 1))) + 4α²L²σ_G²/D; the
O(1) as printed cannot be refuted, so these constants are what is checked (they are the printed
shape with O(1) = 2240).  Corollary 4.6: τ = O(ε^{−1/2}), K = O(ε^{−3/2}), β = ε give an
O(ε + α²σ_G²/D)-stationary point.

Readings.  The theorem cites "L_F, σ_F and η_F from Lemmas 4.2–4.4": η_F is γ_F (Lemma 4.4),
which needs Assumption 5 although only 1–4 are listed (Assumption 2 implies it with γ_G = 2B,
γ_H = 2L); each instance's own γ's are used.  The corollary's α²σ_G²/D drops the theorem's L²
(a constant, hidden by the O).  Proof remark: (99) and (105) take E[(1/rn)Σ_{i∈A_k}∇F_i(w̄_{k+1,t})
| F^t] = ∇F(w̄_{k+1,t}), but for t ≥ 1 w̄_{k+1,t} depends on A_k itself; no instance below comes
near the bound, so this gap is not shown to matter (not a finding).

Instances.  Family quadratic (exact, no Monte Carlo): n = 3 clients, m = 4 samples, d = 3,
per-sample losses ½wᵀAw − c_ijᵀw with A = diag(a), a ∈ (0, L] (Assumption 1 needs f_i bounded
below: a > 0; nonconvex f is excluded by it), see ``_perfedavg_rate_quad``; σ_G, γ_G exact,
σ_H = γ_H = ρ = 0, B cancels (as in perfedavg.propf1); F is the convex quadratic with Hessian
Q²A, F* and F(w_0) − F* exact.  E‖∇F(w̄)‖² comes from the exact mean and covariance of w_k (client
subsets enumerated, batch means' covariances exact).  Kinds: general (α ∈ (0, 1/L] with α = 1/L
among them, β up to and at 1/(10τL_F), τ ≤ 4, every S ∈ {1, 2, 3}, full batches or D, D′ ∈
{1, 2, 4}, w_0 anywhere); converged GD (τ = 1, S = n, α = 10⁻³/L, β = 1/(10L_F), w_0 − w* along
the top eigenvector, K = 150: where 4(F(w_0) − F*)/(βτK) is closest to attained); started at the
optimum w_0 = w* with client sampling or batches (the first term is 0, the lhs is not); and τ = 1,
β ∈ (9, 10]/L_F (outside the condition: reported not applicable, the iterates diverge).
Corollary 4.6 (a rate part): ε = 1/q², q ∈ {4, 5, 7, 10}, τ = q = ε^{−1/2}, K = q³ = ε^{−3/2}, β = ε
(β ≤ 1/(10τL_F) holds: L = 0.1), deterministic, with client sampling, and with batches
(quadratics have no estimator bias, so the corollary's α²σ_G²/D term is 0 here): the fitted slope
of the exact lhs against ε must be at least 1 (the O(ε) claim).

Family logistic (Monte Carlo, as the issue asks: μ = 0): n = 4 clients of m = 8 samples, d = 3,
K = 3 rounds, τ ∈ {1, 2, 3}, S ∈ {1, ..., 4}, batches D, D′, D″ ∈ {1, 2, 3}, α ∈ (0, 1/L] (a third
at 1/L), β ∈ (0, 1/(10τL_F)] (a third at the boundary), 256 runs per instance; the lhs interval is
Hoeffding's at 99.9% (``_perfedavg_rate_logistic``); the rhs uses valid upper bounds of every
constant (listed in the report), so the check is rigorous in the direction that matters.

Claimed by the paper: an upper bound (and a rate).  What the check shows: the bound holds on
every instance; on quadratics the lhs reaches ~1/4 of the rhs only in the converged GD case
(the sharp constant there is (2 − βλ)⁻¹ ≈ 1/2 of 4/4... i.e. 4 is loose by ~4×); with client
sampling or noise the 4σ_T² term is orders of magnitude above the lhs.  Corollary 4.6's slope is
1 on all three sweeps.  No finding.
"""
from __future__ import annotations

import numpy as np

from ._core import Mutant, Sides, Statement, fit_exponent, rate_sides
from ._instances import log_uniform, logistic_batch
from ._perfedavg_rate_logistic import logistic_constants, logistic_lhs
from ._perfedavg_rate_quad import client_stats, thm45_exact

__all__ = ["STATEMENTS", "CLAIM"]

CLAIM = {
    "L_F": lambda L, alpha, rho, B: 4 * L + alpha * rho * B,
    "sigma_F2": lambda B, sG2, sH2, alpha, L, invD, invD1, invD2:
        12 * (B**2 + sG2 * (invD1 + (alpha * L) ** 2 * invD)) * (1 + sH2 * alpha**2 / 4 * invD2) - 12 * B**2,
    "gamma_F2": lambda B, alpha, gH2, gG2: 3 * B**2 * alpha**2 * gH2 + 192 * gG2,
    "sigma_T2": lambda beta, LF, tau, sF2, gF2, r, n, alpha, L, sG2, invD:
        280 * (beta * LF) ** 2 * tau * (tau - 1) * (2 * sF2 + gF2)
        + beta * LF * (2 * sF2 + gF2 * (1 - r) / (r * (n - 1))) + 4 * alpha**2 * L**2 * sG2 * invD,
    "bound": lambda gap, beta, tau, K, sT2: 4 * gap / (beta * tau * K) + 4 * sT2,
    "beta_condition": lambda beta, tau, LF: beta <= 1 / (10 * tau * LF),
    "alpha_condition": lambda alpha, L: (alpha > 0) & (alpha <= 1 / L),
    "cor_exponent": 1.0,
}

PARTS = ("(111) (1/(tau K)) sum E||grad F(w_bar_{k+1,t})||^2 <= 4 (F(w_0) - F*)/(beta tau K) + 4 sigma_T^2",
         "Corollary 4.6: tau ~ eps^(-1/2), K ~ eps^(-3/2), beta = eps: lhs = O(eps)")

N, M, DIM = 3, 4, 3
Q_GRID = np.array([4, 5, 7, 10])                         # tau = q, K = q^3, beta = eps = 1/q^2
EPS = 1.0 / Q_GRID**2
CONFIDENCE = 0.999
LOG = {"n": 4, "m": 8, "d": 3, "K": 3, "R": 256}


def instances(family, trials, rng):
    return _quadratic(rng, trials or 20) if family == "quadratic" else _logistic(rng, trials or 6)


def _samples(rng, T, L, n, spread):
    delta = rng.standard_normal((T, n, DIM)) * L[:, None, None] * spread[:, None, None]
    delta -= delta.mean(axis=1, keepdims=True)
    noise = rng.standard_normal((T, n, M, DIM)) * L[:, None, None, None]
    noise -= noise.mean(axis=2, keepdims=True)
    return rng.standard_normal((T, 1, 1, DIM)) * L[:, None, None, None] + delta[:, :, None, :] + noise


def _quadratic(rng, T):
    L = log_uniform(rng, 0.2, 5.0, T)
    a = L[:, None] * rng.uniform(0.05, 1.0, (T, DIM))
    a[:, -1] = L
    a[::4, 0] = 1e-3 * L[::4]                              # nearly flat direction (convex boundary)
    C = _samples(rng, T, L, N, rng.uniform(0.0, 2.0, T))
    cbar = C.mean(axis=(1, 2))
    wstar = cbar / a
    tau = rng.integers(1, 5, T)
    S = rng.integers(1, N + 1, T)
    alpha = rng.uniform(0.0, 1.0, T) / L
    alpha[::3] = 1 / L[::3]
    alpha = np.maximum(alpha, 1e-3 / L)
    LF = 4 * L
    beta = rng.uniform(0.05, 1.0, T) / (10 * tau * LF)
    beta[1::3] = 1 / (10 * tau[1::3] * LF[1::3])
    inv = np.array([0.0, 1.0, 0.5, 0.25])
    invD, invD1 = inv[rng.integers(0, 4, T)], inv[rng.integers(0, 4, T)]
    K = rng.integers(5, 31, T)
    w0 = wstar + rng.standard_normal((T, DIM)) * log_uniform(rng, 0.1, 30.0, T)[:, None]
    g = np.arange(T)
    conv, opt, div = g[-9:-6], g[-6:-3], g[-3:]
    tau[conv], S[conv], alpha[conv], K[conv] = 1, N, 1e-3 / L[conv], 150
    beta[conv], invD[conv], invD1[conv] = 1 / (10 * LF[conv]), 0.0, 0.0
    w0[conv] = wstar[conv] + np.eye(DIM)[-1] * 10 * rng.uniform(0.5, 2, conv.size)[:, None]
    w0[opt], S[opt], tau[opt] = wstar[opt], np.array([1, 2, N]), np.array([3, 2, 1])
    invD1[opt[-1]] = 1.0                                     # S = n, tau = 1: only batch noise
    tau[div], S[div], alpha[div], K[div], invD[div], invD1[div] = 1, N, 1e-3 / L[div], 30, 0.0, 0.0
    beta[div] = rng.uniform(9.0, 10.0, div.size) / LF[div]
    sw = g[:3]                                              # Corollary 4.6 sweeps: L = 0.1, well conditioned
    a[sw] = 0.1 * np.sort(rng.uniform(0.5, 1.0, (sw.size, DIM)), axis=1)
    a[sw, -1] = 0.1
    C[sw] = C[sw] * (0.1 / L[sw])[:, None, None, None]
    alpha[sw] = rng.uniform(1.0, 4.0, sw.size)               # alpha L in [0.1, 0.4]
    w0[sw] = C[sw].mean(axis=(1, 2)) / a[sw] + rng.standard_normal((sw.size, DIM))
    S[sw], invD[sw], invD1[sw] = np.array([N, 1, N]), 0.0, np.array([0.0, 0.0, 1.0])
    return {"a": a, "C": C, "alpha": alpha, "beta": beta, "tau": tau.astype(float), "K": K.astype(float),
            "S": S.astype(float), "invD": invD, "invD1": invD1, "w0": w0,
            "sweep": (g < 3).astype(float)}


def _logistic(rng, T):
    n, m, d = LOG["n"], LOG["m"], LOG["d"]
    lb = logistic_batch(rng, T * n, m, d, scale=1.0)
    X = lb["X"].reshape(T, n, m, d) + rng.standard_normal((T, n, 1, d))
    y = lb["y"].reshape(T, n, m)
    vals, _ = logistic_constants(X, y)
    L, B, rho = vals["L"], vals["B"], vals["rho"]
    tau = rng.integers(1, 4, T)
    alpha = rng.uniform(0.05, 1.0, T) / L
    alpha[::3] = 1 / L[::3]
    LF = 4 * L + alpha * rho * B
    beta = rng.uniform(0.1, 1.0, T) / (10 * tau * LF)
    beta[1::3] = 1 / (10 * tau[1::3] * LF[1::3])
    return {"X": X, "y": y, "alpha": alpha, "beta": beta, "tau": tau.astype(float),
            "S": rng.integers(1, n + 1, T).astype(float), "D": rng.integers(1, 4, (T, 3)).astype(float),
            "w0": rng.standard_normal((T, d)) * 2, "seed": rng.integers(0, 2**31, T).astype(float)}


def evaluate(batch, claim):
    return _eval_quadratic(batch, claim) if "a" in batch else _eval_logistic(batch, claim)


def _rhs(claim, gap, L, alpha, rho, B, sG2, sH2, gG2, gH2, invD, invD1, invD2, beta, tau, K, S, n):
    LF = claim["L_F"](L, alpha, rho, B)
    sF2 = claim["sigma_F2"](B, sG2, sH2, alpha, L, invD, invD1, invD2)
    gF2 = claim["gamma_F2"](B, alpha, gH2, gG2)
    sT2 = claim["sigma_T2"](beta, LF, tau, sF2, gF2, S / n, n, alpha, L, sG2, invD)
    return claim["bound"](gap, beta, tau, K, sT2), LF


def _eval_quadratic(batch, claim):
    a, C, alpha, beta, tau, K, S = (batch[k] for k in ("a", "C", "alpha", "beta", "tau", "K", "S"))
    T = a.shape[0]
    L = np.max(a, axis=1)
    _, _, sG2, gG2 = client_stats(C)
    zero = np.zeros(T)
    sweep = batch["sweep"] > 0
    lhs, gap = np.zeros(T), np.zeros(T)
    for i in np.flatnonzero(~sweep):
        lhs[i], gap[i] = thm45_exact(a[i], C[i], alpha[i], beta[i], int(tau[i]), int(K[i]), int(S[i]),
                                     batch["invD"][i], batch["invD1"][i], batch["w0"][i])
    rhs, LF = _rhs(claim, gap, L, alpha, zero, zero, sG2, zero, gG2, zero, batch["invD"], batch["invD1"], zero,
                   beta, tau, K, S, N)
    app = ~sweep & claim["alpha_condition"](alpha, L) & claim["beta_condition"](beta, tau, LF)
    consts = {"L": "exact", "rho": "exact: 0", "sigma_G^2, gamma_G^2": "exact (constant in w)",
              "sigma_H^2, gamma_H^2": "exact: 0", "B": "cancels exactly (see perfedavg.propf1)",
              "F(w_0) - F*": "exact: (1/2)(w_0 - w*)^T Q^2 A (w_0 - w*)"}
    out = {PARTS[0]: Sides(lhs, rhs, "upper", applicable=app, constants=consts,
                           note="exact expectations (moment recursion, client subsets enumerated)")}
    slope, lo, hi = np.zeros(T), np.zeros(T), np.zeros(T)
    for i in np.flatnonzero(sweep):
        y = [thm45_exact(a[i], C[i], alpha[i], 1.0 / q**2, int(q), int(q) ** 3, int(S[i]), batch["invD"][i],
                         batch["invD1"][i], batch["w0"][i])[0] for q in Q_GRID]
        slope[i], (lo[i], hi[i]) = fit_exponent(EPS, np.array(y))
    out[PARTS[1]] = rate_sides(slope, (lo, hi), claim["cor_exponent"], kind="at least", atol=0.1,
                               applicable=sweep, level=0.95,
                               note="exact lhs at eps = 1/q^2, q = 4, 5, 7, 10 (L = 0.1 so beta = eps <= "
                                    "1/(10 tau L_F)); residual interval of the log-log fit; atol 0.1 for the "
                                    "grid's curvature")
    return out


def _eval_logistic(batch, claim):
    vals, how = logistic_constants(batch["X"], batch["y"])
    T, n = batch["X"].shape[:2]
    alpha, beta, tau, S, D = batch["alpha"], batch["beta"], batch["tau"], batch["S"], batch["D"]
    K = float(LOG["K"])
    mean, lo, hi, gap = (np.zeros(T) for _ in range(4))
    import moreau as mo
    for i in range(T):
        rng = np.random.default_rng(int(batch["seed"][i]))
        mean[i], lo[i], hi[i] = logistic_lhs(batch["X"][i], batch["y"][i], alpha[i], beta[i], int(tau[i]), int(K),
                                             int(S[i]), tuple(int(v) for v in D[i]), batch["w0"][i], LOG["R"],
                                             rng, CONFIDENCE)
        gap[i] = float(np.mean(np.asarray(mo.meta_objective(mo.Logistic(batch["X"][i], batch["y"][i]),
                                                            alpha[i]).value(batch["w0"][i]))))
    rhs, LF = _rhs(claim, gap, vals["L"], alpha, vals["rho"], vals["B"], vals["sG2"], vals["sH2"], vals["gG2"],
                   vals["gH2"], 1 / D[:, 0], 1 / D[:, 1], 1 / D[:, 2], beta, tau, K, S, n)
    app = claim["alpha_condition"](alpha, vals["L"]) & claim["beta_condition"](beta, tau, LF)
    return {PARTS[0]: Sides(mean, rhs, "upper", applicable=app, lhs_ci=(lo, hi), confidence=CONFIDENCE,
                            constants=how, note=f"Monte Carlo over {LOG['R']} runs (batches and client sets), "
                                                "Hoeffding interval; rhs from valid upper bounds")}


STATEMENTS = (
    Statement(
        id="perfedavg.thm4_5",
        source="Per-FedAvg, Theorem 4.5 (proof App. G, eqs. (108), (111)) and Corollary 4.6",
        paper="per-fedavg-maml.md",
        latex=r"\frac{1}{\tau K}\sum_{k<K}\sum_{t<\tau}\mathbb E\|\nabla F(\bar w_{k+1,t})\|^2\le"
              r"\frac{4(F(w_0)-F^*)}{\beta\tau K}+4\sigma_T^2",
        text="Per-FedAvg stationarity: average E||grad F(w_bar)||^2 <= 4(F(w_0) - F*)/(beta tau K) + 4 sigma_T^2 "
             "(the proof's constants for the printed O(1)); Corollary 4.6's O(eps)",
        assumptions=("alpha in (0, 1/L]", "beta <= 1/(10 tau L_F)", "Assumptions 1-4 (gamma_F needs 5)",
                     "clients sampled uniformly without replacement, |A_k| = rn; independent batches"),
        families={"quadratic": ("shared A, a > 0, per-sample linear terms", "Corollary 4.6 sweeps"),
                  "logistic": ("mu = 0, Monte Carlo",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim=CLAIM,
        mutants=(
            Mutant("4 (F(w_0) - F*)/(beta tau K) -> (F(w_0) - F*)/(beta tau K)",
                   {"bound": lambda gap, b, tau, K, s: gap / (b * tau * K) + 4 * s}),
            Mutant("wrong exponent: 1/(beta tau K) -> 1/(beta tau K^2)",
                   {"bound": lambda gap, b, tau, K, s: 4 * gap / (b * tau * K**2) + 4 * s}),
            Mutant("4 sigma_T^2 dropped", {"bound": lambda gap, b, tau, K, s: 4 * gap / (b * tau * K)}),
            Mutant("condition relaxed: beta <= 10/(tau L_F)", {"beta_condition": lambda b, tau, LF: b <= 10 / (tau * LF)}),
            Mutant("Corollary 4.6: O(eps) -> O(eps^1.5)", {"cor_exponent": 1.5}),
            Mutant("inequality reversed", {"flip": (PARTS[0],)}),
        ),
        equivalent_mutants={
            "4 -> 2 in the first term": "true: on the converged GD instances the lhs is at most (2 - beta lambda)^-1 "
                                        "(F(w_0) - F*)/(beta K) ~ 0.51 of (F(w_0) - F*)/(beta K)",
            "the bias term 4 alpha^2 L^2 sigma_G^2 / D dropped": "quadratics have no estimator bias; on logistic "
                                                                "data the lhs is far below the rest of the bound",
            "280 (drift term) -> 0": "with a shared Hessian the average of the local iterates does not drift "
                                     "(w_bar stays at w* from w*); the sampling term covers client sampling",
        },
    ),
)
