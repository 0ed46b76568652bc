r"""fedfw.personalized — thesis (Dadras) §4.3, "personalized FedFW": "Increasing λ_t forces all local models
to become closer to each other over iterations. [...] a fixed λ allows us to control the closeness of
the local models x_i^t to the global model x̄^t."

Statement (as printed, two parts): with a fixed λ FedFW is Frank–Wolfe on the penalised objective
Φ_λ(X) = (1/n)Σf_i(x_i) + (λ/2)Σ‖x_i − x̄‖² over Dⁿ, so its models go to the penalised optimum X_λ
(``moreau.fl.fedfw_optimum(lam=λ)``), and (a) the closeness it reaches, dist(X_λ, C) =
(Σ_i‖x_{λ,i} − x̄_λ‖²)^{1/2}, is nonincreasing in λ (the larger λ, the closer); (b) FedFW gets there at
the rate of the thesis's own Theorem 5 applied to Φ_λ: Φ_λ(X^{k+1}) − Φ_λ(X_λ) ≤ 2(L + nλ)D²/(k + 2)
after k ≥ 1 rounds (Φ_λ is (L/n + λ)-smooth, Dⁿ has diameter √n·D, the step 2/(k+1) of round k is
Theorem 5's 2/(t+2) at t = k − 1, and x_i^1 = x̄^1 ∈ D).  The thesis states (a) in words and (b) by
"a fixed λ allows us to control the closeness"; (b)'s constant is Theorem 5's.

(a) is the penalty method's monotonicity: for λ < μ, Φ_λ(X_λ) ≤ Φ_λ(X_μ) and Φ_μ(X_μ) ≤ Φ_μ(X_λ) add up
to (μ − λ)(dist²(X_λ) − dist²(X_μ)) ≥ 0 (for global minimisers; the clients here are convex).

Reading "explicit closeness (reconstructed)": dist(X_λ, C) ≤ ‖y*‖/λ with
‖y*‖ = (1/n)(Σ_i‖∇f_i(x*) − ∇F(x*)‖²)^{1/2}, x* the optimum of (4.4).  Proof (derived here): y* =
−P_{C⊥}∇f(X*) is a Lagrange multiplier of the consensus constraint (block i of the Lagrangian is
minimised at x* over D because −∇F(x*) is in the normal cone of D at x*), so f(X) − F* ≥ −‖y*‖dist(X, C);
optimality of X_λ and convexity give f(X_λ) − F* ≤ −λ dist²(X_λ, C).  Sharp: with identical
Hessians aI and no active constraint dist = ‖y*‖/(λ + a/n).

Instances (family quadratic, d = 3, m = 4, four groups, ``GROUPS``): convex clients with spread
stationary points on boxes, started at the centre, or (a quarter) at a point drawn inside the box off
its centre; a quarter convex clients whose average is singular (every client's Hessian projected off
one common direction v: Φ_λ's minimisers are unique up to a common shift along v, which leaves
dist(X_λ, C) and ∇f_i(x*) unchanged, so (a), (b) and the reading are defined) on Euclidean balls
(drawn when the box solver assumed a positive definite Hessian; it now also solves singular
boxes); a quarter Theorem 5's worst case for (b) (identical clients with curvature L along the box's
diagonal, the start x̄^1 = −h, the minimiser next to it: the LMO jumps to +h and (b)'s ratio at k = 1
is (3/4)L/(L + nλ) → 3/4 as λ0 = L/(100n) → 0); λ on the grid λ0·2^k, k = −2..4; (b) with λ = λ0 over
1000 rounds.

Sides: (a) lhs dist(X_{λ_{k+1}}), rhs dist(X_{λ_k}), the pair with the largest ratio; (b) the round
with the largest ratio.  Exact targets: box QPs by active sets, ball QPs by accelerated projected
gradient and an exact face polish, certified by their Frank–Wolfe gap.
Mutants: "a larger λ moves the models apart" (the inequality of (a) reversed), "rate 1/(k+2)²" (the
worst case's k = 1).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, worst_point
from moreau.analysis.engine.instances import split_counts
from moreau.analysis.fedfw.instances import SCALING, concat_groups, diameter, optimum, run

__all__ = ["STATEMENTS"]

M, D, ROUNDS, GRID = 4, 3, 1000, 2.0 ** np.arange(-2, 5)

#: convex clients on boxes (the first group made adversarial for (b) by ``instances``), on boxes started off
#: the centre, and with a singular average (a null direction common to all clients) on Euclidean balls
GROUPS = (
    {"kind": "convex", "sets": (0,)},
    {"kind": "convex", "sets": (0,)},
    {"kind": "convex", "sets": (0,), "start": "inside"},
    {"kind": "convex_singular", "sets": (2,)},
)

CLAIM = {"fw": lambda L, n, lam, D, k: 2 * (L + n * lam) * D**2 / (k + 2), "explicit": None}
READINGS = (
    Reading(
        "explicit closeness (reconstructed)",
        {"explicit": lambda ystar, lam: ystar / lam},
        why="dist(X_λ, C) <= ||y*||/λ, derived in this module's docstring (a Lagrange multiplier of the consensus "
        "constraint); not printed",
    ),
)
MONO = "(a) dist(X_λ, C) nonincreasing in λ (λ = λ0 2^k, k = -2..4)"
RATE = "(b) fixed λ = λ0: Φ_λ(X^{k+1}) - Φ_λ* <= 2(L + n λ) D²/(k + 2), k = 1..1000"
CLOSE = "dist(X_λ, C) <= ||y*||/λ"
CERT = "exact targets' certificate (checker, not the thesis)"


def instances(family, trials, rng):
    """Convex clients with spread stationary points; a quarter adversarial for (b): identical clients with
    curvature L along the box's diagonal u, minimiser p + ε(q − p) next to the vertex p = −h, start x̄^1 = p,
    λ0 = L/(100 n): the LMO at p jumps to q = h and Φ(X²) − Φ* → LD²/2, 3/4 of the bound at k = 1 as λ0 → 0."""
    T = trials or 16
    batch = concat_groups(rng, T, M, D, GROUPS)
    j = np.arange(split_counts(T, len(GROUPS))[0])
    h, L = batch["h"][j], batch["L"][j]
    u = h / np.linalg.norm(h, axis=-1, keepdims=True)
    P = np.eye(D) - u[:, :, None] * u[:, None, :]
    A = L[:, None, None] * u[:, :, None] * u[:, None, :] + 0.1 * L[:, None, None] * P
    z = -h + 1e-3 * 2 * h
    batch["A"][j] = A[:, None]
    batch["b"][j] = np.einsum("tij,tj->ti", A, z)[:, None]
    batch["x0"][j], batch["lam0"][j] = -h, L / (100 * M)
    return batch


def _dist(X):
    return np.sqrt(np.sum((X - X.mean(axis=-2, keepdims=True)) ** 2, axis=(-1, -2)))


def prepare(batch):
    lams = batch["lam0"][None, :] * GRID[:, None]
    sols = [optimum(batch, lam) for lam in lams]
    star = optimum(batch)
    g = np.einsum("tmij,tj->tmi", batch["A"], star["x"]) - batch["b"]
    ystar = np.sqrt(np.sum((g - g.mean(axis=1, keepdims=True)) ** 2, axis=(-1, -2))) / M
    return {
        **batch,
        "lams": lams,
        "dist": np.array([_dist(s["X"]) for s in sols]),
        "Phi": sols[2]["value"],
        "cert": np.max([s["gap"] for s in sols] + [star["gap"]], axis=0),
        "ystar": ystar,
    }


def evaluate(data, claim):
    A, b, L = data["A"], data["b"], data["L"]
    dist = data["dist"]
    hetero = dist.max(axis=0) > 1e-9 * diameter(data["h"], data["set"])
    out = {
        MONO: Sides(
            *worst_point(dist[1:], dist[:-1]),
            "upper",
            constants={
                "X_λ": "exact: moreau.fl.fedfw_optimum(lam=λ), box or ball QP certified by its FW gap "
                "(max gap recorded in the batch's cert)"
            },
            applicable=hetero,
            note="not applicable to identical clients (every λ gives consensus: dist = 0 up to rounding)",
        )
    }
    lam = data["lams"][2]
    hist = run(data, ROUNDS, lam_schedule="constant", lam=lam, per_instance=("lam",))
    X = hist["w_local"][1:]  # index k: after k rounds, X^{k+1}
    phi = (
        np.mean(0.5 * np.einsum("rtmi,tmij,rtmj->rtm", X, A, X) - np.einsum("rtmi,tmi->rtm", X, b), axis=-1)
        + lam / 2 * _dist(X) ** 2
    )
    k = np.arange(1, ROUNDS + 1, dtype=float)[:, None]
    rhs = claim["fw"](L, M, lam, diameter(data["h"], data["set"]), k)
    out[RATE] = Sides(
        *worst_point(phi - data["Phi"], rhs),
        "upper",
        constants={"Φ*": "exact: the penalised optimum at λ0", "L": "exact", "D": "exact diameter"},
    )
    scale = L * diameter(data["h"], data["set"]) ** 2 + np.abs(data["Phi"])
    out[CERT] = Sides(
        data["cert"],
        1e-10 * scale,
        "exact",
        role="auxiliary",
        note="the largest Frank-Wolfe gap of the penalised optima and of x*: value - optimum <= gap",
    )
    if claim["explicit"] is not None:
        bound = claim["explicit"](data["ystar"][None], data["lams"])
        out[CLOSE] = Sides(
            *worst_point(dist, bound),
            "upper",
            applicable=hetero,
            constants={"||y*||": "exact at the optimum x* of (4.4)"},
        )
    return out


STATEMENTS = (
    Statement(
        id="fedfw.personalized",
        implies=("x⁰ inside the set",),
        source='Dadras thesis, §4.3, "personalized FedFW"',
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\lambda\uparrow\ \Rightarrow\ \mathrm{dist}(X_\lambda, \mathcal C)\downarrow;\quad "
        r"\Phi_\lambda(X^{k+1}) - \Phi_\lambda^* \le \frac{2(L + n\lambda)D^2}{k+2}",
        text="a fixed λ controls the closeness of the local models to the global one: the penalised optimum's "
        "consensus error is nonincreasing in λ, and FedFW with that λ reaches it at Theorem 5's rate",
        assumptions=(
            "f_i convex, L-smooth",
            "D convex compact",
            "λ fixed (personalised FedFW), η_t = 2/(t+1)",
            "x_i^1 = x̄^1 ∈ D (Theorem 5's start, used by (b))",
        ),
        families={
            "quadratic": (
                "convex clients on boxes (started at the centre, off it, or at a vertex), spread stationary "
                "points; convex clients with a singular average on Euclidean balls",
            )
        },
        claimed="upper",
        instances=instances,
        prepare=prepare,
        evaluate=evaluate,
        claim=CLAIM,
        readings=READINGS,
        scaling={"quadratic": SCALING},
        mutants=(
            Mutant("a larger λ moves the models apart", {"flip": (MONO,)}),
            Mutant("rate 1/(k+2)²", {"fw": lambda L, n, lam, D, k: 2 * (L + n * lam) * D**2 / (k + 2) ** 2}),
        ),
        origin="reconstruction",
    ),
)
