r"""sgd.strongly_convex — thesis (Dadras), chapter 2, Theorem 3 (SGD, strongly convex, both step rules).

Statement (thesis): SGD x^{t+1} = x^t − η_t g(x^t), g(x) = ∇F(x) + ξ(x) with E ξ(x) = 0 and
E‖ξ(x)‖² ≤ M‖∇F(x)‖² + σ² for all x (Assumption 1, (M, σ²)-bounded noise); F L-smooth and
μ-strongly convex, F* = inf F.  (i) η_t = 2/(μ(t + δ)) with δ > 0 such that η_t ≤ 1/(L(M+1))
(for all t: δ ≥ 2L(M+1)/μ) gives E[F(x^t) − F*] ≤ ν/(t + δ), ν = max((δ + 1)(F(x^0) − F*),
2Lσ²/μ²); (ii) a constant η < 1/(L(M+1)) gives E[F(x^t) − F*] ≤ (1 − ημ)^t (F(x^0) − F*)
+ ηLσ²/(2μ).  Both for every t ≥ 0 and x^0 ∈ R^d.  (Theorem 4 is ``sgd.nonconvex``,
analysis/thesis/sgd/nonconvex.py.)

Assumptions: as above; the checked range t = 1..400 (quadratics), 1..60 (logistic).

Instances (quadratic, d = 3; ``moreau.analysis.thesis.sgd.exact_moments``): F(x) = ½(x − z)ᵀA(x − z),
spectrum μ = a_1 ≤ a_2 ≤ a_3 = L, κ = L/μ from 1.0 to 100, noise ξ = ζ C∇F(x) + ζ'‖∇F(x)‖q
+ S^{1/2}w with the multiplicative part C = √M U (U the identity: along the gradient, or
Haar-random) or ‖q‖² = M (a fixed direction: the eigenvector of L, the descent lemma's worst
case, or random), and tr S = σ²: Assumption 1 with equality.  S is rank one along the eigenvector of μ
or of L, or random; σ² = 0 and M = 0 (gradient descent) are drawn.  x^0 − z zero (the noise floor alone),
along the eigenvectors of μ or L, or random, at scales 0.01..100.  Step sizes η = u/(L(M+1))
with u in [0.05, 1), δ = v·2L(M+1)/μ with v = 1 (the boundary) on a third and up to
20; an eighth outside both conditions (u in [1.8, 1.99], v in [0.5, 0.55]: not applicable,
and there the bounds fail, which rejects the relaxed conditions).  Logistic family
(``moreau.analysis.thesis.sgd.monte_carlo``): ridge-regularised logistic models (μ in [0.05, 0.3],
μ and L the exact inf / sup of the curvature, F* certified from below), the same noise
model, x^0 at the minimiser on a quarter, δ at its bound on half, η = 0.999/(L(M+1)) on half.

Sides.  Quadratics, exact: E F(x^t) − F* = ½ tr(A P_t) from the second-moment recursion
P_{t+1} = (I − η_t A) P_t (I − η_t A) + η_t² (C A P_t A Cᵀ + S) (tests: exact enumeration of
Rademacher noise paths, and Monte Carlo).  Logistic: Monte Carlo over 64 paths with 99.9 %
normal intervals (a part fails only where the whole interval is above the bound).  Per
instance the iterate with the largest lhs/rhs (Monte Carlo: largest lower end / rhs).

Claimed by the thesis: rates (upper bounds).  What the check shows: both parts hold (max
ratios 0.95–0.99 on quadratics, 0.65–0.95 on logistic, seeds 0–3).  (ii) is approached at κ = 1
with η → 1/(L(M+1)): the noise floor ησ²/(2(2 − ημ)) with the noise along the eigenvector of
μ, the transient factor (1 − ημ)² + η²μ²M → 1 − ημ.  (i) is approached at t = 1 whenever
μη_0 = 2/δ is small (δ far above its bound, or a large κ): F barely moves while
ν/(1 + δ) = F(x^0) − F*; its noise term reaches about 1/3 (floor 2σ²/(3μ(t + δ)) at κ = 1 from x^0 = x*,
against 2Lσ²/(μ²(t + δ))).  ν with δ(F(x^0) − F*) instead of (δ + 1)(F(x^0) − F*) is also
true (an equivalent mutant: the + 1 comes from the indexing of Bottou, Curtis & Nocedal 2018,
Theorem 4.7, from k = 1).
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Mutant, Sides, Statement, scale_fields, worst_point
from moreau.analysis.engine.instances import log_uniform
from moreau.analysis.thesis.gd import _newton_min
from moreau.analysis.thesis.sgd import monte_carlo as mc
from moreau.analysis.thesis.sgd.exact_moments import D, groups, noise, quadratic, second_moments
from moreau.analysis.thesis.sgd.nonconvex import STATEMENT as SGD_NONCONVEX

__all__ = ["STATEMENTS", "second_moments"]

N_SC, N_MC = 400, 60

CLAIM_SC = {
    "nu": lambda h0, L, s2, mu, delta: np.maximum((delta + 1) * h0, 2 * L * s2 / mu**2),
    "decreasing": lambda nu, t, delta: nu / (t + delta),
    # eta_t <= eta_0 = 2/(mu delta) <= 1/(L(M+1)); 1e-12: delta = 2L(M+1)/mu is drawn and rounds either way
    "delta_ok": lambda delta, mu, L, M: mu * delta >= 2 * L * (M + 1) * (1 - 1e-12),
    "constant": lambda h0, mu, eta, t, L, s2: (1 - eta * mu) ** t * h0 + eta * L * s2 / (2 * mu),
    "eta_ok": lambda eta, L, M: eta < 1 / (L * (M + 1)),
}


#: under theta -> s theta, f -> c f: curvatures c/s^2, points s, gradient-noise covariance (c/s)^2, steps s^2/c
SC_SCALING = {
    "A": (-2, 1),
    "L": (-2, 1),
    "mu": (-2, 1),
    "e0": (1, 0),
    "S": (-2, 2),
    "s2": (-2, 2),
    "eta": (2, -1),
}


def instances_sc(family, trials, rng):
    if family == "logistic":
        return mc.instances_sc(rng, trials or 8, _newton_min)
    T = trials or 48
    g = groups(T, 8)
    frac = log_uniform(rng, 0.01, 1.0, T)
    tight = np.concatenate([g[0], g[1], g[7]])
    frac[tight] = rng.uniform(0.9, 1.0, tight.size)  # kappa near 1: where the bounds are approached
    A, a, V, L = quadratic(rng, T, frac)
    M = np.where(rng.uniform(size=T) < 0.3, 0.0, rng.uniform(0.0, 4.0, T))
    M[g[0]], M[g[1]] = 0.0, rng.uniform(0.5, 4.0, g[1].size)
    M[g[7]] = rng.uniform(1.0, 4.0, g[7].size)
    scale = log_uniform(rng, 0.01, 100.0, T)
    e0 = rng.standard_normal((T, D)) * scale[:, None]
    sign = rng.choice([-1.0, 1.0], (T, 1))
    e0[g[0]] = 0.0  # start at the optimum: the noise floor alone
    e0[g[1]] = V[g[1], :, 0] * sign[g[1]]  # along the eigenvector of mu: the transient
    e0[g[2]] = V[g[2], :, -1] * sign[g[2]] * scale[g[2], None]
    e0[g[7]] = V[g[7], :, -1] * sign[g[7]]
    h0 = 0.5 * np.einsum("ti,tij,tj->t", e0, A, e0)
    s2 = np.where(rng.uniform(size=T) < 0.2, 0.0, log_uniform(rng, 1e-3, 1e2, T)) * (h0 + (h0 == 0)) * L
    s2[g[0]] = log_uniform(rng, 0.1, 10.0, g[0].size)
    s2[g[1]] = 0.0
    where_C = rng.integers(0, 4, T)
    where_C[np.concatenate([g[0], g[1], g[7]])] = 0
    where_S = rng.integers(0, 3, T)
    where_S[g[0]] = 0
    where_S[g[7]] = 1
    C, S, q = noise(rng, T, V, M, s2, where_C, where_S)
    mu = a[:, 0]
    u = rng.uniform(0.05, 1.0, T)  # eta = u/(L(M+1)), u < 1
    u[tight] = rng.uniform(0.95, 1.0, tight.size)
    u[g[7]] = rng.uniform(1.8, 1.99, g[7].size)  # outside the condition: not applicable
    v = log_uniform(rng, 1.0, 20.0, T)  # delta = v 2L(M+1)/mu, v >= 1
    v[np.concatenate([g[0], g[1], g[3]])] = 1.0  # the boundary of the condition
    v[g[7]] = rng.uniform(0.5, 0.55, g[7].size)
    # small noise on the outside group: nu = (delta + 1) h0 and eta_0 ~ 2/(L(M+1)) leaves F - F* flat at t = 1
    s2[g[7]] = (
        0.25 * (v[g[7]] * 2 * L[g[7]] * (M[g[7]] + 1) / mu[g[7]] + 1) * h0[g[7]] * mu[g[7]] ** 2 / L[g[7]]
    )
    C[g[7]], S[g[7]], q[g[7]] = noise(
        rng, g[7].size, V[g[7]], M[g[7]], s2[g[7]], where_C[g[7]], where_S[g[7]]
    )
    return {
        "A": A,
        "C": C,
        "S": S,
        "q": q,
        "e0": e0,
        "L": L,
        "mu": mu,
        "M": M,
        "s2": s2,
        "eta": u / (L * (M + 1)),
        "delta": v * 2 * L * (M + 1) / mu,
    }


def prepare_sc(batch):
    """The claim-independent part, once per batch for the statement and its mutants: the batch with
    ``h_i, h_c`` (quadratics: exact E F(x^t) − F*, t = 0..400, both rules) or the Monte Carlo means and
    standard errors ``sims`` and ``h0, mu, L`` (logistic)."""
    if "X" not in batch:
        A, C, S, e0, mu, eta, delta = (batch[k] for k in ("A", "C", "S", "e0", "mu", "eta", "delta"))
        t = np.arange(N_SC)
        q = batch["q"]
        h_i, _ = second_moments(A, C, S, e0, 2 / (mu[:, None] * (t[None, :] + delta[:, None])), q)
        h_c, _ = second_moments(A, C, S, e0, np.repeat(eta[:, None], N_SC, axis=1), q)
        return dict(batch, h_i=h_i, h_c=h_c)
    f = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
    mu, L = (np.asarray(c) for c in f.curvature_bounds())
    return dict(
        batch,
        sims=mc.gaps_sc(batch, N_MC),
        h0=np.asarray(f.value(batch["x0"])) - batch["Fstar"],
        mu_exact=mu,
        L_exact=L,
    )


def _evaluate_sc_logistic(batch, claim):
    mu, L, h0 = batch["mu_exact"], batch["L_exact"], batch["h0"]
    M, s2, eta, delta, x0 = (batch[k] for k in ("M", "s2", "eta", "delta", "x0"))
    t, idx = np.arange(1, N_MC + 1)[:, None], np.arange(x0.shape[0])
    consts = {
        "L, mu": "exact sup / inf of the curvature",
        "F*": "Newton value minus ||grad||^2/(2 mu): a certified lower bound",
        "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
        "E F(x^t) - F*": f"Monte Carlo, {mc.PATHS} paths, normal interval at level {mc.LEVEL}",
    }
    out = {}
    rhs_i = claim["decreasing"](claim["nu"](h0, L, s2, mu, delta), t, delta)
    rhs_c = claim["constant"](h0, mu, eta, t, L, s2)
    sims = batch["sims"]
    for name, (mean, se), rhs, app in (
        (SC_I, sims[0], rhs_i, claim["delta_ok"](delta, mu, L, M)),
        (SC_II, sims[1], rhs_c, claim["eta_ok"](eta, L, M)),
    ):
        lo, hi = mc.interval(mean[1:], se[1:])
        k = np.argmax(lo / rhs, axis=0)  # the iterate closest to failing
        out[name] = Sides(
            mean[1:][k, idx],
            rhs[k, idx],
            "upper",
            applicable=app,
            lhs_ci=(lo[k, idx], hi[k, idx]),
            confidence=mc.LEVEL,
            constants=consts,
            note=f"t = 1..{N_MC} on logistic models",
        )
    return out


def evaluate_sc(batch, claim):
    if "X" in batch:
        return _evaluate_sc_logistic(batch, claim)
    L, mu, M, s2, eta, delta = (batch[k] for k in ("L", "mu", "M", "s2", "eta", "delta"))
    h_i, h_c = batch["h_i"], batch["h_c"]
    h0, tt = h_i[0], np.arange(1, N_SC + 1)[:, None]
    consts = {
        "L, mu": "exact (spectrum)",
        "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
        "E F(x^t) - F*": "exact second-moment recursion (docstring)",
    }
    ok = np.ones((N_SC, h0.size), bool)
    nu = claim["nu"](h0, L, s2, mu, delta)
    return {
        SC_I: Sides(
            *worst_point(h_i[1:], claim["decreasing"](nu, tt, delta), ok),
            "upper",
            applicable=claim["delta_ok"](delta, mu, L, M),
            constants=consts,
            note="delta = 2L(M+1)/mu (the boundary) on a third; delta below it (eta_0 up to 2/(L(M+1))) "
            "not applicable",
        ),
        SC_II: Sides(
            *worst_point(h_c[1:], claim["constant"](h0, mu, eta, tt, L, s2), ok),
            "upper",
            applicable=claim["eta_ok"](eta, L, M),
            constants=consts,
            note="approached at kappa -> 1, eta -> 1/(L(M+1)); eta up to 2/(L(M+1)) not applicable",
        ),
    }


_SRC = "Dadras thesis, ch. 2"
_PAPER = "dadras-thesis-personalized-fl.md"
SC_I = "(i) eta_t = 2/(mu(t + delta)): E F(x^t) - F* <= nu/(t + delta), t = 1..400"
SC_II = (
    "(ii) eta < 1/(L(M+1)): E F(x^t) - F* <= (1 - eta mu)^t (F(x^0) - F*) + eta L sigma^2/(2 mu), t = 1..400"
)

STATEMENTS = (
    Statement(
        id="sgd.strongly_convex",
        implies=("strongly convex objective (μ > 0)",),
        waived={
            "strongly convex sample losses": (
                "the noise is the statement's additive ξ (its own fields), not the samples' "
                "gradients: the samples only define F"
            ),
            "convex sample losses": (
                "the noise is the statement's additive ξ, not the samples' gradients: the samples "
                "only define F"
            ),
        },
        source=f"{_SRC}, Theorem 3",
        paper=_PAPER,
        latex=r"\eta_t = \tfrac{2}{\mu(t+\delta)}:\ \mathbb{E}[F(x^t) - F^*] \le \frac{\nu}{t+\delta};\quad "
        r"\eta < \tfrac{1}{L(M+1)}:\ \mathbb{E}[F(x^t) - F^*] \le (1 - \eta\mu)^t (F(x^0) - F^*) "
        r"+ \eta\frac{L}{2\mu}\sigma^2",
        text="SGD on an L-smooth mu-strongly convex F with (M, sigma^2)-bounded noise: eta_t = 2/(mu(t + delta)), "
        "eta_t <= 1/(L(M+1)) gives E[F(x^t) - F*] <= nu/(t + delta), nu = max((delta + 1)(F(x^0) - F*), "
        "2 L sigma^2/mu^2); a constant eta < 1/(L(M+1)) gives (1 - eta mu)^t (F(x^0) - F*) + eta L sigma^2/(2 mu)",
        assumptions=(
            "F L-smooth, mu-strongly convex",
            "E xi = 0, E||xi||^2 <= M ||grad F||^2 + sigma^2",
            "(i) eta_t = 2/(mu(t + delta)) <= 1/(L(M+1)) for all t (delta >= 2L(M+1)/mu)",
            "(ii) eta < 1/(L(M+1))",
        ),
        families={
            "quadratic": ("strongly_convex, additive and multiplicative noise",),
            "logistic": ("mu > 0 (Monte Carlo)",),
        },
        claimed="rate",
        instances=instances_sc,
        evaluate=evaluate_sc,
        claim=CLAIM_SC,
        prepare=prepare_sc,
        scaling={
            "quadratic": scale_fields(SC_SCALING),
            "logistic": scale_fields(
                {"X": (-1, 0), "mu": (-2, 0), "x0": (1, 0), "s2": (-2, 0), "S": (-2, 0), "eta": (2, 0)},
                c_free=False,
            ),
        },
        mutants=(
            Mutant(
                "(i) nu's noise term 2 L sigma^2/mu^2 -> L sigma^2/(2 mu^2)",
                {"nu": lambda h0, L, s2, mu, delta: np.maximum((delta + 1) * h0, L * s2 / (2 * mu**2))},
            ),
            Mutant("(i) rate nu/(t + delta)^2", {"decreasing": lambda nu, t, delta: nu / (t + delta) ** 2}),
            Mutant(
                "(i) step condition relaxed: eta_t <= 2/(L(M+1))",
                {"delta_ok": lambda delta, mu, L, M: mu * delta >= L * (M + 1) * (1 - 1e-12)},
            ),
            Mutant(
                "(ii) neighbourhood eta L sigma^2/(4 mu)",
                {
                    "constant": lambda h0, mu, eta, t, L, s2: (
                        (1 - eta * mu) ** t * h0 + eta * L * s2 / (4 * mu)
                    )
                },
            ),
            Mutant(
                "(ii) neighbourhood eta^2 L sigma^2/(2 mu) (exponent of eta)",
                {
                    "constant": lambda h0, mu, eta, t, L, s2: (
                        (1 - eta * mu) ** t * h0 + eta**2 * L * s2 / (2 * mu)
                    )
                },
            ),
            Mutant(
                "(ii) rate (1 - eta mu)^(2t)",
                {
                    "constant": lambda h0, mu, eta, t, L, s2: (
                        (1 - eta * mu) ** (2 * t) * h0 + eta * L * s2 / (2 * mu)
                    )
                },
            ),
            Mutant(
                "(ii) step condition relaxed: eta < 2/(L(M+1))",
                {"eta_ok": lambda eta, L, M: eta < 2 / (L * (M + 1))},
            ),
            Mutant("inequalities reversed", {"flip": (SC_I, SC_II)}),
        ),
        equivalent_mutants={
            "(i) nu with delta (F(x^0) - F*) for (delta + 1)(F(x^0) - F*)": (
                "true: with the thesis's indexing (eta_0 = 2/(mu delta)) the induction h_{t+1} <= (1 - "
                "mu eta_t) h_t + eta_t^2 L sigma^2/2 closes with nu >= delta h_0 at t = 0; the + 1 "
                "comes from Bottou, Curtis & Nocedal's (2018, Thm. 4.7) indexing from k = 1"
            ),
        },
    ),
    SGD_NONCONVEX,  # Theorem 4: analysis/thesis/sgd/nonconvex.py
)
