r"""fedfw.convex — thesis (Dadras) §4.3: "FedFW guarantees O(t^{-1/2}) convergence rates when the
objective function is smooth and convex" (Paper III's convex theorem).

Statement (as printed): FedFW (4.5)–(4.6) with λ_t = λ0√(t+1) (any λ0 > 0), η_t = 2/(t+1), on
problem (4.4) with L-smooth convex f_i over a convex compact D, converges at the rate O(t^{-1/2}).
The thesis names neither the quantity nor the constant.  Reconstructed: the quantity is the
suboptimality of the server's model, F(x̄^t) − F* (x̄^t ∈ D is a convex combination of LMO outputs;
the abstract's "ε-suboptimal solution within O(ε^{-2}) iterations"), t from 1 (η_1 = 1, the authors'
code).  Checked as printed: the log-log slope of the upper envelope max_{s≥t}(F(x̄^s) − F*) over
t = 128..4096 (12 log-spaced rounds, regression interval at 95 %) is at most −1/2 (+ 0.025 for the
curvature of a finite window, from the measured slopes): a slower decay fails only when its whole
interval shows it.  A pre-asymptotic plateau can still fail it: with ``numpy.random.default_rng(6)``
one instance of 32 (ℓ1 ball, singular average) keeps F(x̄^t) − F* ≈ 0.01 up to t ≈ 4096 (window slope
−0.29) and then decays like t^{-1.5} (measured to t = 131072).  ``moreau check --seed`` 0 to 15 all hold;
the closest is seed 10, an instance of that group at slope −0.444 [−0.479, −0.409], 0.005 from failing.

Reading "explicit constant (reconstructed)": the homotopy-CGM argument (Yurtsever et al. 2018,
Thm. 3.1) on X = (x_1, …, x_n) ∈ Dⁿ, f(X) = (1/n)Σf_i(x_i) ((L/n)-smooth in the Frobenius norm),
the penalty (λ/2)dist²(X, C) to the consensus subspace C: with S_t(X) = f(X) − F* + (λ_t/2)dist²(X, C),

    S_t(X^{t+1}) ≤ 2D²(L + nλ_t)/(t + 1),   t ≥ 1,

D the diameter of D.  Proof (derived here): the smoothness of f + (λ_t/2)dist² (constant L/n + λ_t),
the LMO against X* = (x*, …, x*), convexity ⟨∇f(X), X* − X⟩ ≤ F* − f(X), and
⟨X − P_C X, X* − X⟩ = −dist²(X, C) give S_t(X^{t+1}) ≤ (1 − η_t)S_{t−1}(X^t) + (η_t²/2)(L + nλ_t)D² as
soon as (1 − η_t)(λ_t − λ_{t−1}) ≤ η_tλ_t (true for √(t+1) against 2/(t+1)), with S_1(X²) ≤
(L + nλ_1)D²/2 since η_1 = 1; induction.  (It bounds the penalised gap of the clients' models, not
F(x̄^t) − F* itself: F(x̄) − F* ≤ S_t + G·dist/√n + (L/2n)dist², and dist(X, C) = O(t^{-1/2}).)

Assumptions: f_i convex, L-smooth; D convex compact; the start x_i^1 = x̄^1 in D (reconstructed: the
thesis prints no start; a Frank–Wolfe start is feasible, and ``moreau.fl.fedfw`` refuses one outside D).

Instances (family quadratic, d = 3, m = 4 clients, four groups, ``GROUPS``): a quarter rate-tight
(``instances.client_batch``, adversarial: isotropic clients split in two camps across the face
x_1 = −h_1 where the optimum sits with a positive multiplier: F(x̄^t) − F* ≈ c/λ_t); a quarter convex
clients (a zero eigenvalue on every other client) with spread stationary points on boxes started at
the centre, a quarter the same started at a point drawn inside the box off its centre
(``instances.inside_points``); a quarter convex clients whose average is singular (every client's
Hessian projected off one common random direction: F convex, not strongly convex, its minimisers a
segment) on ℓ1 and Euclidean balls; λ0 at the problem's scale.  F* exact by
``moreau.fl.fedfw_optimum`` (boxes: active sets; balls: accelerated projected gradient and an exact
face polish; its Frank–Wolfe gap certifies F(x*) − F* ≤ gap, checked ≤ 1e-10 relative: the auxiliary
part).  The singular group lies on balls: the box solver assumed a positive definite Hessian when the
group was drawn (it returned gaps up to 8e-3 on singular boxes); it now solves singular boxes exactly
too (``tests/test_fl_fedfw_box_singular.py``), so the group could also be drawn on boxes.

Sides: the fitted slope and its interval against −1/2 (a rate); the reading adds lhs = S_t(X^{t+1}),
rhs = the bound, at the round with the largest lhs/rhs.

Claimed by the thesis: a rate.  What the check shows: slopes ≈ −0.5 on the rate-tight instances
(interval half-width ≲ 0.02), −0.6 to −1.2 on the others (faster: the penalty's bias is quadratic
in 1/λ_t when no client leaves the optimal face); the explicit bound holds with max ratio ≈ 0.1.
Mutants: the exponent −1 (centralised FW's rate, thesis Theorem 5) is rejected by the rate-tight
instances; λ_t constant (λ0: no homotopy) and summable steps η_t = 2/(t+1)² stall (slope ≈ 0).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, rate_sides, worst_point
from moreau.analysis.fedfw.instances import (
    SCALING,
    F_value,
    concat_groups,
    diameter,
    envelope_fit,
    optimum,
    run,
)

__all__ = ["STATEMENTS"]

N, WINDOW, M, D = 4096, (128, 4096), 4, 3
#: the curvature of a 12-point window over 1.5 decades, set from the measured slopes: the rate-tight instances
#: (c t^-1/2 + c2/t) fit -0.500 to -0.517 over t = 128..4096 on seeds 0-7, every other instance faster but
#: one (below); 0.025 (was 0.05 over t = 64..2048) brings the detectable change under 0.05 (docs/power.md)
ATOL = 0.025

CLAIM = {
    "exponent": -0.5,
    "eta": lambda t: 2 / (t + 1),
    "lam": lambda t: np.sqrt(t + 1),
    "explicit": None,
}
READINGS = (
    Reading(
        "explicit constant (reconstructed)",
        {"explicit": lambda L, n, lam, D, t: 2 * D**2 * (L + n * lam) / (t + 1)},
        why="the constant of the homotopy-CGM analysis the thesis's smoothing refers to, derived in this "
        "module's docstring for (4.5)-(4.6); the paper's own constant was not available",
    ),
)
PART = "F(x̄^t) - F* = O(t^{-1/2}): envelope slope, t = 128..4096"
EXPLICIT = "S_t(X^{t+1}) = f(X) - F* + (λ_t/2) dist²(X, C) <= 2 D²(L + n λ_t)/(t + 1)"
CERT = "F* certificate: Frank-Wolfe gap of the computed optimum (checker, not the thesis)"


#: the four groups of a batch (``instances.concat_groups``): rate-tight, convex clients started at the centre
#: and off it, convex clients whose average is singular (PSD, a null direction common to all) on balls
GROUPS = (
    {"kind": "convex", "sets": (0,), "adversarial": True},
    {"kind": "convex", "sets": (0,)},
    {"kind": "convex", "sets": (0,), "start": "inside"},
    {"kind": "convex_singular", "sets": (1, 2)},
)


def instances(family, trials, rng):
    return concat_groups(rng, trials or 32, M, D, GROUPS)


def prepare(batch):
    tg = optimum(batch)
    return {**batch, "Fstar": tg["value"], "cert": tg["gap"]}


def evaluate(data, claim):
    A, b, L, h = data["A"], data["b"], data["L"], data["h"]
    t = np.arange(1, N + 1, dtype=float)
    keep = ("w_global",) if claim["explicit"] is None else ("w_global", "w_local", "lam")
    hist = run(data, N, keep=keep, lam_schedule=claim["lam"](t), eta=claim["eta"](t))
    Dm = diameter(h, data["set"])
    scale = np.abs(data["Fstar"]) + L * Dm**2
    e = F_value(A, b, hist["w_global"][1:]) - data["Fstar"]
    slope, ci, ok = envelope_fit(t.astype(int), e, WINDOW, 1e-11 * scale)
    consts = {
        "F*": "exact: moreau.fl.fedfw_optimum (box QP by active sets, ball QP by accelerated projected "
        "gradient and face polish), certified by its FW gap",
        "rate": "least-squares slope of log envelope on log t, t-regression interval (95 %)",
    }
    out = {
        PART: rate_sides(
            slope,
            ci,
            claim["exponent"],
            kind="at most",
            atol=ATOL,
            applicable=ok,
            level=0.95,
            constants=consts,
            note="not applicable where the error reached the rounding floor "
            "(1e-11 of |F*| + L D^2) inside the window",
        ),
        CERT: Sides(
            data["cert"],
            1e-10 * scale,
            "exact",
            role="auxiliary",
            constants=consts,
            note="F(x*) - F* <= gap(x*) for convex F",
        ),
    }
    if claim["explicit"] is not None:
        X, lam = hist["w_local"][1:], hist["lam"]
        f = np.mean(
            0.5 * np.einsum("rtmi,tmij,rtmj->rtm", X, A, X) - np.einsum("rtmi,tmi->rtm", X, b), axis=-1
        )
        dist2 = np.sum((X - X.mean(axis=2, keepdims=True)) ** 2, axis=(-1, -2))
        lhs = f - data["Fstar"] + lam / 2 * dist2
        rhs = claim["explicit"](L, M, lam, Dm, t[:, None])
        out[EXPLICIT] = Sides(
            *worst_point(lhs, rhs),
            "upper",
            constants={**consts, "L": "exact: max |eigenvalue|", "D": "exact diameter"},
            note="t = 1..4096; S_t may be negative (X off the consensus)",
        )
    return out


STATEMENTS = (
    Statement(
        id="fedfw.convex",
        implies=("x⁰ inside the set",),
        source="Dadras thesis, §4.3 (Paper III, convex theorem)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\lambda_t = \lambda_0\sqrt{t+1},\ \eta_t = \tfrac{2}{t+1}:\ F(\bar x^t) - F^* = O(t^{-1/2})",
        text="FedFW (4.5)-(4.6) on smooth convex clients converges at the rate O(t^{-1/2}) "
        "(read: F(x̄^t) - F*; the constant is not printed)",
        assumptions=(
            "f_i convex, L-smooth",
            "D convex compact",
            "λ_t = λ0 sqrt(t+1), η_t = 2/(t+1), t >= 1",
            "x_i^1 = x̄^1 ∈ D (reconstructed: the thesis prints no start; a Frank-Wolfe start is feasible)",
        ),
        families={
            "quadratic": (
                "convex clients on boxes (started at the centre or off it), rate-tight two-camp instances, "
                "convex clients with a singular average on l1 and Euclidean balls",
            )
        },
        claimed="rate",
        instances=instances,
        prepare=prepare,
        evaluate=evaluate,
        claim=CLAIM,
        readings=READINGS,
        scaling={"quadratic": SCALING},
        mutants=(
            Mutant("rate t^{-1} (centralised FW, Theorem 5)", {"exponent": -1.0}),
            Mutant("λ_t = λ0 constant (no growing penalty)", {"lam": lambda t: np.ones_like(t)}),
            Mutant("η_t = 2/(t+1)² (summable steps)", {"eta": lambda t: 2 / (t + 1) ** 2}),
        ),
        findings=(
            "The printed rate is attained, not only an upper bound: when clients on both sides of an active face "
            "disagree, the penalised models leave the optimal face by O(1/λ_t) and F(x̄^t) - F* ≈ c/λ_t ∝ t^{-1/2}; "
            "without such disagreement the penalty's bias is quadratic in 1/λ_t and the decay is faster.",
        ),
        origin="reconstruction",
    ),
)
