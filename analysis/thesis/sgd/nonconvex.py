r"""sgd.nonconvex — thesis (Dadras), chapter 2, Theorem 4 (SGD, nonconvex).

Statement (thesis): SGD as in Theorem 3 (``sgd.strongly_convex``) on an L-smooth F with
(M, σ²)-bounded noise: (1/T) Σ_{t<T} ‖∇F(x^t)‖² ≤ √(8(F(x^0) − F*)Lσ²)/√T "provided that"
η = η_0/√T with η_0 ≤ min{1/(L(M+1)), √(2(F(x^0) − F*)/(Lσ²))}.  The left side is printed
without an expectation; it is read as E[·] (§2.2's criterion for stochastic methods; read
surely it fails: ``findings``).  The proof (descent lemma with E‖g‖² ≤ (M+1)‖∇F‖² + σ²,
telescoped) gives, for every η_0 ≤ 1/(L(M+1)),
(1/T) Σ_{t<T} E‖∇F(x^t)‖² ≤ 2(F(x^0) − F*)/(η_0√T) + Lη_0σ²/√T   (the proof bound),
which equals the printed bound only at η_0 = √(2(F(x^0) − F*)/(Lσ²)).  Checked: the printed
bound there, when that value is ≤ 1/(L(M+1)) (it is the min); the proof bound for every
η_0 ≤ 1/(L(M+1)).  At a smaller η_0, or when the min is 1/(L(M+1)), the printed bound fails
(``findings``: the printed claim; the reading "η₀ = the √ branch ≤ 1/(L(M+1))" holds).

Assumptions: F L-smooth, F* = inf F finite, (M, σ²)-bounded noise.

Instances: quadratics (``moreau.analysis.thesis.sgd.exact_moments``: the noise model of
``sgd.strongly_convex``) convex (a_1 = 0, F* = 0 attained) and strongly convex, d = 3,
T = 1, 2, 4, ..., 256, η_0 at the square-root branch (σ² = w·2(F(x^0) − F*)L(M+1)², w ≥ 1,
w = 1 where both branches are equal), at the min with the first branch active (w < 1,
σ² = 0 included), a fraction 0.01..1 of the min, or above 1/(L(M+1)) (not applicable; rejects
the relaxed condition); x^0 − z along the top eigenvector on a quarter (‖∇F(x^0)‖² =
2L(F(x^0) − F*)), random otherwise, scales 0.01..100.  The nonconvex case (quadratics bounded
below are convex): logistic models with μ = 0 and Per-FedAvg meta-objectives
F(w) = f(w − α∇f(w)), α = 1/L_f (nonconvex, inf F = min f), by Monte Carlo
(``moreau.analysis.thesis.sgd.monte_carlo``: T ∈ {1, 4, 16, 64}, 64 paths, 99.9 % intervals).

Sides: quadratics exactly, E‖∇F(x^t)‖² = tr(A P_t A) from the second-moment recursion, one SGD
run per horizon T (η depends on T); per instance the horizon with the largest lhs/rhs.

Claimed by the thesis: a rate (an upper bound).  What the check shows: at the square-root
branch the printed bound holds with ratios about 1/2 (0.47–0.54, seeds 0–3; at T = 1 the left side is
‖∇F(x^0)‖² ≤ 2L(F(x^0) − F*) against ≥ 4L(F(x^0) − F*)); the proof bound holds for every
η_0 ≤ 1/(L(M+1)) and is attained at T = 1 (σ² = 0, M = 0, η_0 = 1/L, x^0 − z along the top
eigenvector: ‖∇F(x^0)‖² = 2L(F(x^0) − F*) = 2(F(x^0) − F*)/η_0; drawn with more --trials).
Findings: the printed step rule (η_0 ≤ the min) fails when the min is 1/(L(M+1)) or η_0 is
below it; the left side needs an expectation.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, scale_fields, worst_point
from moreau.analysis.engine.instances import log_uniform
from moreau.analysis.thesis.gd import _newton_min
from moreau.analysis.thesis.sgd import monte_carlo as mc
from moreau.analysis.thesis.sgd.exact_moments import D, groups, noise, quadratic, second_moments

__all__ = ["STATEMENT", "averages_nc"]

T_GRID = 2 ** np.arange(9)  # Theorem 4's horizons T = 1..256


def _printed_step(eta0, L, M, h0, s2):
    """Theorem 4's step rule as printed: any eta_0 <= min{1/(L(M+1)), sqrt(2(F(x^0) - F*)/(L sigma^2))}."""
    return eta0 <= np.minimum(1 / (L * (M + 1)), _sqrt_branch(h0, L, s2))


def _sqrt_branch_is_the_min(eta0, L, M, h0, s2):
    """The reading under which the printed bound holds: eta_0 is the square-root branch, and that is the min."""
    return _isclose(eta0, _sqrt_branch(h0, L, s2)) & (_sqrt_branch(h0, L, s2) <= 1 / (L * (M + 1)))


#: Theorem 4 as printed (its step rule "eta_0 <= min{...}"; the left side read as an expectation)
CLAIM_NC = {
    "printed": lambda h0, L, s2, T: np.sqrt(8 * h0 * L * s2) / np.sqrt(T),
    "eta0_printed": _printed_step,
    "proof": lambda h0, eta0, L, s2, T: 2 * h0 / (eta0 * np.sqrt(T)) + L * eta0 * s2 / np.sqrt(T),
    "eta0_ok": lambda eta0, L, M: eta0 <= 1 / (L * (M + 1)),
}


def _sqrt_branch(h0, L, s2):
    with np.errstate(divide="ignore"):
        return np.sqrt(2 * h0 / (L * s2))


def _isclose(a, b):
    return np.abs(a - b) <= 1e-12 * np.abs(b)


def instances_nc(family, trials, rng):
    if family == "logistic":
        return mc.instances(rng, trials or 8, _newton_min)
    T = trials or 32
    r = groups(T, 4)  # eta_0: square-root branch / min = 1/(L(M+1)) / below the min / above 1/(L(M+1))
    frac = np.where(np.arange(T) % 2 == 0, 0.0, log_uniform(rng, 0.01, 1.0, T))  # convex / strongly convex
    A, a, V, L = quadratic(rng, T, frac)
    M = np.where(rng.uniform(size=T) < 0.4, 0.0, rng.uniform(0.0, 4.0, T))
    scale = log_uniform(rng, 0.01, 100.0, T)
    e0 = rng.standard_normal((T, D)) * scale[:, None]
    top = np.arange(T) % 4 == 1  # along the top eigenvector: ||grad F(x^0)||^2 = 2L(F(x^0) - F*)
    e0[top] = V[top, :, -1] * scale[top, None]
    M[r[3][: (r[3].size + 1) // 2]] = 0.0
    e0[r[3]] = V[r[3], :, -1] * scale[r[3], None]
    h0 = 0.5 * np.einsum("ti,tij,tj->t", e0, A, e0)
    first = 1 / (L * (M + 1))
    w = log_uniform(
        rng, 0.01, 100.0, T
    )  # sigma^2 = w 2 h0 L (M+1)^2: the square-root branch is first/sqrt(w)
    w[r[0]] = np.where(np.arange(r[0].size) % 3 == 0, 1.0, log_uniform(rng, 1.0, 100.0, r[0].size))
    w[r[1]] = np.where(np.arange(r[1].size) % 2 == 0, 0.0, log_uniform(rng, 1e-4, 1.0, r[1].size))
    w[r[3][: (r[3].size + 1) // 2]] = 0.0
    s2 = w * 2 * h0 * L * (M + 1) ** 2
    eta0 = np.minimum(first, _sqrt_branch(h0, L, s2))
    eta0[r[0]] = _sqrt_branch(h0, L, s2)[r[0]]
    eta0[r[2]] *= rng.uniform(0.01, 1.0, r[2].size)
    eta0[r[3]] = first[r[3]] * rng.uniform(1.1, 1.99, r[3].size)
    C, S, q = noise(rng, T, V, M, s2, rng.integers(0, 4, T), rng.integers(0, 3, T))
    return {"A": A, "C": C, "S": S, "q": q, "e0": e0, "L": L, "M": M, "s2": s2, "eta0": eta0}


def averages_nc(batch):
    """``(T_GRID, n)``: exact (1/T) Σ_{t<T} E‖∇F(x^t)‖² with η = η_0/√T, one SGD run per horizon."""
    n, G = batch["eta0"].size, T_GRID.size
    rep = lambda k: np.repeat(batch[k], G, axis=0)  # noqa: E731  (row = instance i, horizon j: i G + j)
    eta = np.tile(1 / np.sqrt(T_GRID), n) * rep("eta0")
    _, g = second_moments(
        rep("A"), rep("C"), rep("S"), rep("e0"), np.repeat(eta[:, None], T_GRID[-1], axis=1), rep("q")
    )
    csum = np.cumsum(g[:-1], axis=0)  # (T_max, n G)
    T = np.tile(T_GRID, n)
    return (csum[T - 1, np.arange(n * G)] / T).reshape(n, G).T


def prepare_nc(batch):
    """The claim-independent part, once per batch: ``h0`` and the left sides (quadratics: ``lhs``
    exactly per horizon; logistic: Monte Carlo ``mean, se``)."""
    if "X" not in batch:
        h0 = 0.5 * np.einsum("ti,tij,tj->t", batch["e0"], batch["A"], batch["e0"])
        return dict(batch, h0=h0, lhs=averages_nc(batch))
    f = mo.Logistic(batch["X"], batch["y"])
    h0 = np.asarray(mo.meta_objective(f, batch["alpha"]).value(batch["x0"])) - batch["Fstar"]
    return dict(batch, h0=h0, mc=mc.path_averages(batch))


def _evaluate_nc_logistic(batch, claim):
    L, M, s2, eta0, x0, h0 = (batch[k] for k in ("L", "M", "s2", "eta0", "x0", "h0"))
    mean, se = batch["mc"]
    lo, hi = mc.interval(mean, se)
    T, idx = mc.T_MC[:, None], np.arange(x0.shape[0])
    consts = {
        "L": "bound: L_f + alpha rho B (alpha = 0: exact L_f)",
        "F*": "min f by Newton (>= inf F: F(x^0) - F* errs low, the bound with it)",
        "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
        "E (1/T) sum ||grad F||^2": f"Monte Carlo, {mc.PATHS} paths, normal interval at level {mc.LEVEL}",
    }
    out = {}
    for name, rhs, app in (
        (NC_PRINTED, claim["printed"](h0, L, s2, T), claim["eta0_printed"](eta0, L, M, h0, s2)),
        (NC_PROOF, claim["proof"](h0, eta0, L, s2, T), claim["eta0_ok"](eta0, L, M)),
    ):
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.argmax(np.nan_to_num(lo / rhs, nan=-np.inf), axis=0)  # the horizon closest to failing
        out[name] = Sides(
            mean[k, idx],
            rhs[k, idx],
            "upper",
            applicable=app,
            lhs_ci=(lo[k, idx], hi[k, idx]),
            confidence=mc.LEVEL,
            constants=consts,
            note="T in {1, 4, 16, 64}; half F = f (convex), half F = f(w - grad f(w)/L_f) (nonconvex)",
        )
    return out


def evaluate_nc(batch, claim):
    if "X" in batch:
        return _evaluate_nc_logistic(batch, claim)
    L, M, s2, eta0, h0 = (batch[k] for k in ("L", "M", "s2", "eta0", "h0"))
    lhs, T = batch["lhs"], T_GRID[:, None]
    consts = {
        "L": "exact (spectrum)",
        "F*": "exact: 0 at z (convex or strongly convex quadratic)",
        "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
        "E ||grad F(x^t)||^2": "exact second-moment recursion (docstring)",
    }
    ok = np.ones(lhs.shape, bool)
    return {
        NC_PRINTED: Sides(
            *worst_point(lhs, claim["printed"](h0, L, s2, T), ok),
            "upper",
            applicable=claim["eta0_printed"](eta0, L, M, h0, s2),
            constants=consts,
            note="on the instances whose eta_0 the claim's step rule admits",
        ),
        NC_PROOF: Sides(
            *worst_point(lhs, claim["proof"](h0, eta0, L, s2, T), ok),
            "upper",
            applicable=claim["eta0_ok"](eta0, L, M),
            constants=consts,
            role="auxiliary",
            note="a proof step, not the printed statement: the descent lemma telescoped; equals the printed bound "
            "at the square-root branch",
        ),
    }


_SRC = "Dadras thesis, ch. 2"
_PAPER = "dadras-thesis-personalized-fl.md"
_NC_FINDINGS = (
    "Theorem 4 as printed (any eta_0 <= min{1/(L(M+1)), sqrt(2(F(x^0) - F*)/(L sigma^2))}) fails when the min is "
    "1/(L(M+1)): d = 1, F(x) = x^2/2 (L = 1, F* = 0), x^0 = 1, M = 0, sigma^2 = 0.01 (eta_0 = min{1, 10} = 1): "
    "at T = 1 the left side is ||grad F(x^0)||^2 = 1 > sqrt(8 * 0.5 * 0.01) = 0.2 (ratio 5); at T = 256 the exact "
    "E-average is 0.03257 > 0.0125 (ratio 2.6); with sigma^2 = 0 (gradient descent) the bound is 0 at every T. "
    "The proof gives 2(F(x^0) - F*)/(eta_0 sqrt T) + L eta_0 sigma^2/sqrt T (checked), which is the printed bound "
    "only at eta_0 = sqrt(2(F(x^0) - F*)/(L sigma^2)).",
    "Theorem 4 as printed also fails for eta_0 below the min (printed '<='): d = 1, F(x) = x^2/2, x^0 = 1, M = 0, "
    "sigma^2 = 1 (both branches of the min are 1), eta_0 = 0.1: the exact (1/T) sum_{t<T} E||grad F(x^t)||^2 is "
    "1.41 times sqrt(8 (F(x^0) - F*) L sigma^2/T) at T = 16 and 2.42 times at T = 256 (eta_0 = 0.01: 6.85 at "
    "T = 256).",
    "Theorem 4's left side is printed without an expectation: read surely it fails with positive probability "
    "even at the square-root branch: d = 1, F(x) = x^2/2, x^0 = 1, M = 0, Rademacher noise xi = +-1 (sigma^2 = 1, "
    "eta_0 = 1 = both branches), T = 16 (eta = 1/4): the path with xi = -1 at every step stays at x^t = 1, so "
    "(1/T) sum ||grad F(x^t)||^2 = 1 > sqrt(8 * 0.5)/4 = 0.5 (probability 2^-16), while the expectation is "
    "0.53 * 0.5 (checked).",
)

NC_PRINTED = "(1/T) sum_{t<T} E||grad F(x^t)||^2 <= sqrt(8 (F(x^0) - F*) L sigma^2 / T), T = 1..256"
NC_PROOF = (
    "proof: (1/T) sum_{t<T} E||grad F(x^t)||^2 <= 2(F(x^0) - F*)/(eta_0 sqrt T) + L eta_0 sigma^2/sqrt T, "
    "eta_0 <= 1/(L(M+1)), T = 1..256"
)

STATEMENT = Statement(
    id="sgd.nonconvex",
    source=f"{_SRC}, Theorem 4",
    paper=_PAPER,
    latex=r"\eta = \tfrac{\eta_0}{\sqrt T}:\ \frac1T\sum_{t=0}^{T-1}\mathbb{E}\|\nabla F(x^t)\|^2 \le "
    r"\frac{\sqrt{8(F(x^0) - F^*)L\sigma^2}}{\sqrt T}\ \Big(\eta_0 \le \min\Big\{\tfrac{1}{L(M+1)}, "
    r"\sqrt{\tfrac{2(F(x^0) - F^*)}{L\sigma^2}}\Big\}\Big)",
    text="SGD with eta = eta_0/sqrt(T) on an L-smooth F with (M, sigma^2)-bounded noise: (1/T) sum_{t<T} "
    "E||grad F(x^t)||^2 <= sqrt(8 (F(x^0) - F*) L sigma^2)/sqrt(T) for eta_0 <= min{1/(L(M+1)), "
    "sqrt(2(F(x^0) - F*)/(L sigma^2))} (as printed)",
    assumptions=(
        "F L-smooth, F* = inf F finite",
        "E xi = 0, E||xi||^2 <= M ||grad F||^2 + sigma^2",
        "eta = eta_0/sqrt(T), eta_0 <= min{1/(L(M+1)), sqrt(2(F(x^0) - F*)/(L sigma^2))}",
        "left side read as an expectation (printed without E)",
    ),
    families={
        "quadratic": ("convex", "strongly_convex"),
        "logistic": ("mu = 0", "Per-FedAvg meta-objective (nonconvex)"),
    },
    claimed="rate",
    instances=instances_nc,
    evaluate=evaluate_nc,
    claim=CLAIM_NC,
    prepare=prepare_nc,
    expect="fails",
    # d = 1, F = x^2/2, x^0 = 1, M = 0, sigma^2 = 0.01, eta_0 = min{1, 10} = 1: ||grad F(x^0)||^2 = 1 > 0.2 at T = 1
    counterexamples={
        "quadratic": {
            "A": np.ones((1, 1, 1)),
            "C": np.zeros((1, 1, 1)),
            "q": np.zeros((1, 1)),
            "S": np.full((1, 1, 1), 0.01),
            "e0": np.ones((1, 1)),
            "L": np.ones(1),
            "M": np.zeros(1),
            "s2": np.full(1, 0.01),
            "eta0": np.ones(1),
        }
    },
    readings=(
        Reading(
            "η₀ = the √ branch ≤ 1/(L(M+1))",
            {"eta0_printed": _sqrt_branch_is_the_min},
            why="the only step at which the proof's bound 2(F(x^0) - F*)/(eta_0 sqrt T) + L eta_0 sigma^2/"
            "sqrt T equals the printed one",
            repairs="missing hypothesis",
        ),
    ),
    scaling={
        "quadratic": scale_fields(
            {"A": (-2, 1), "L": (-2, 1), "e0": (1, 0), "S": (-2, 2), "s2": (-2, 2), "eta0": (2, -1)}
        ),
        "logistic": scale_fields(
            {
                "X": (-1, 0),
                "alpha": (2, 0),
                "L": (-2, 0),
                "B": (-1, 0),
                "x0": (1, 0),
                "s2": (-2, 0),
                "S": (-2, 0),
                "eta0": (2, 0),
            },
            c_free=False,
        ),
    },
    mutants=(
        Mutant("constant 8 -> 1", {"printed": lambda h0, L, s2, T: np.sqrt(h0 * L * s2) / np.sqrt(T)}),
        Mutant("rate 1/T for 1/sqrt(T)", {"printed": lambda h0, L, s2, T: np.sqrt(8 * h0 * L * s2) / T}),
        Mutant(
            "proof bound 2 (F(x^0) - F*) -> F(x^0) - F*",
            {"proof": lambda h0, eta0, L, s2, T: h0 / (eta0 * np.sqrt(T)) + L * eta0 * s2 / np.sqrt(T)},
        ),
        Mutant(
            "proof bound: step condition relaxed to eta_0 <= 2/(L(M+1))",
            {"eta0_ok": lambda eta0, L, M: eta0 <= 2 / (L * (M + 1))},
        ),
        Mutant("inequalities reversed", {"flip": (NC_PRINTED, NC_PROOF)}),
    ),
    findings=_NC_FINDINGS,
)
