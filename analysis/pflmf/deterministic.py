r"""pflmf.deterministic — thesis §4.1 (Paper I's convergence theorem): O(1/T) with deterministic gradients.

Statement (thesis §4.1, as printed): pFL^MF "uses alternating stochastic gradient descent and can
handle multiple local steps for feature extractors v_i as well as partial client participation
with probability p.  pFL^MF achieves a convergence rate of O(1/√T) in the stochastic gradient
setting and O(1/T) in the deterministic gradient setting."  Read with the usual nonconvex
measure (the thesis's ch. 2, Theorem 2 for GD): with exact gradients and fixed step sizes,

.. math:: \frac1T\sum_{t<T}\mathbb E\,\|\nabla F(U_t, V_t)\|_F^2 = O(1/T),\qquad
          F(U, V) = \frac1n\sum_i f_i(Uv_i),

the expectation over the client participation.  Reconstructed (the journal theorem was not
available): the measure (average squared gradient norm over rounds), the algorithm's details
(``moreau.fl.pflmf``: τ local v-steps, then the server's U-step at the new v_i with the
unbiased 1/p scaling), and the step-size assumption, checked along every run: η_v L_i‖U_t‖²
≤ 1 and η_u λ_max((1/n)Σ L_i v_i v_iᵀ) ≤ 1 for all t (the blocks' smoothness; instances where a
run leaves it are not applicable).

Assumptions: f_i L_i-smooth and bounded below (here certified quadratics
``moreau.analysis.pflmf.clients``: f_i = (s_i/2)(x − c_i)ᵀA(x − c_i), d = 4, n = 6 clients);
exact gradients; fixed steps η_v = 0.4/(L σ_1), η_u = 0.4 p/(a_d σ_1).

Instances: 2 problems for each (r, τ, p) in (1, 1, 1), (2, 3, 1), (4, 1, 1), (1, 1, ½), (2, 3, ½),
(4, 3, ½) (r = 4 = min(d, n): no rank constraint, every client reaches its own minimiser).  With
p < 1, 8 independent runs per problem (Monte Carlo over the participation draws).

Sides: per problem, the least-squares slope of log of the average over T ∈ {128, 256, 512, 1024}
(p = 1: exact, the residual interval of the fit; p < 1: the Monte Carlo mean over the runs, a 95 %
delta-method interval from their standard errors); a rate part "at most": it fails where the
whole interval lies above the claimed exponent + 0.05 (0.05: the transient of the first rounds
still weighs in the prefix averages at T = 128).

Claimed: a rate.  What the check shows: the printed sentence fails with partial participation:
at p = ½ and r < rank the server's U-step averages the sampled clients' ∇f_i(x_i)v_iᵀ; at the
optimum these terms sum to 0 but are not 0 one by one, so the sampling noise stays, and the
average decays more slowly than 1/T: slopes −0.6 to −0.95 on the grid T ≤ 1024.  Beyond the grid
it is not a steady floor: over 16 384 rounds (the recorded minimal instance and the generator's
failing rows at seed 0) the noise grows ‖U_t‖ while V_t shrinks, E‖∇F‖² keeps decaying slowly,
and the runs eventually leave the step-size condition.  At p = 1, and at r ≥ rank even with p = ½ (interpolation: every
∇f_i(x_i*) = 0, no noise at the optimum), the slope is −1: the reading "deterministic = exact
gradients and full participation" holds.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Statement, fit_exponent, rate_sides
from moreau.analysis.engine.instances import per_group, trials_in_groups
from moreau.analysis.pflmf import clients
from moreau.fl._pflmf import pflmf

__all__ = ["STATEMENTS"]

GROUPS = ((1, 1, 1.0), (2, 3, 1.0), (4, 1, 1.0), (1, 1, 0.5), (2, 3, 0.5), (4, 3, 0.5))  # (r, tau, p)
GRID = np.array([128, 256, 512, 1024])
RUNS, STEP, ATOL = 8, 0.4, 0.05

CLAIM = {
    "exponent": -1.0,  # O(1/T)
    "applies": lambda p: np.ones_like(p, bool),  # as printed: whatever the participation
}
PART = "(1/T) sum_{t<T} E||grad F(U_t, V_t)||^2 = O(1/T): fitted exponent over T = 128..1024"

FINDING = (
    "fails as printed with partial participation: at p = 1/2 and r < rank(C) the server's U-step keeps "
    "the client-sampling noise of sum_i grad f_i(x_i) v_i^T (0 in sum at the optimum, not term by term), "
    "the average decays more slowly than T^-1 on T = 128..1024 (over longer runs not a steady floor: the "
    "noise grows U while V shrinks, until the step-size condition breaks); p = 1, or r >= rank(C) "
    "(every residual 0), gives T^-1"
)


trials_used = trials_in_groups(len(GROUPS), "groups")  # what --trials becomes (instances: per_group)


def instances(family, trials, rng):
    per = per_group(trials, len(GROUPS), 2)
    n = per * len(GROUPS)
    batch = clients.certified(rng, n, 6, 4, kappa=4.0, decay=(0.5, 0.8))
    g = np.repeat(np.arange(len(GROUPS)), per)
    batch["r"], batch["tau"], batch["p"] = (np.array([G[k] for G in GROUPS])[g] for k in range(3))
    batch["r"], batch["tau"] = batch["r"].astype(int), batch["tau"].astype(int)
    U0, V0 = clients.starts(rng, batch, max(G[0] for G in GROUPS), RUNS)  # (RUNS, n, ., rmax)
    batch["U0"], batch["V0"] = np.swapaxes(U0, 0, 1), np.swapaxes(V0, 0, 1)
    batch["seed"] = rng.integers(0, 2**63, n)
    return batch


def prepare(batch):
    """Run every group (claim-independent): the fitted exponent per problem and the step condition."""
    n = batch["r"].shape[0]
    slope, lo, hi, ok = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, bool)
    for r, tau, p in GROUPS:
        g = np.flatnonzero((batch["r"] == r) & (batch["tau"] == tau) & (batch["p"] == p))
        if not g.size:
            continue
        sub = {k: v[g] for k, v in batch.items()}
        runs = RUNS if p < 1 else 1
        f = clients.objective(sub, runs)
        s1 = sub["sigma"][:, 0]
        eta_u, eta_v = STEP * p / (sub["ad"] * s1), STEP / (sub["L"] * s1)
        U0, V0 = (np.swapaxes(sub[k], 0, 1)[:runs, ..., :r] for k in ("U0", "V0"))
        h = pflmf(
            f,
            r,
            rounds=int(GRID[-1]),
            eta_u=eta_u,
            eta_v=eta_v,
            tau=tau,
            p=p,
            U0=U0 if runs > 1 else U0[0],
            V0=V0 if runs > 1 else V0[0],
            rng=np.random.default_rng(sub["seed"][0]),
        )
        avg = np.cumsum(clients.grad_norm2(f, h)[:-1], axis=0)[GRID - 1] / GRID.reshape(
            (-1,) + (1,) * (h.theta.ndim - 3)
        )
        cond = clients.step_condition(sub["Li"], h, eta_u, eta_v)
        if runs > 1:  # (grid, runs, problems): Monte Carlo mean and standard error
            y, se = avg.mean(axis=1).T, (avg.std(axis=1, ddof=1) / np.sqrt(runs)).T
            s, (a, b) = fit_exponent(GRID, y, y_se=se)
            cond = cond.all(axis=0)
        else:
            s, (a, b) = fit_exponent(GRID, avg.T)
        slope[g], lo[g], hi[g], ok[g] = s, a, b, cond
    return {"p": batch["p"], "r": batch["r"], "slope": slope, "lo": lo, "hi": hi, "steps_ok": ok}


def evaluate(data, claim):
    app = data["steps_ok"] & claim["applies"](data["p"])
    return {
        PART: rate_sides(
            data["slope"],
            (data["lo"], data["hi"]),
            claim["exponent"],
            kind="at most",
            atol=ATOL,
            applicable=app,
            level=0.95,
            constants={
                "grad F": "exact (closed-form gradients along the run)",
                "E over participation": f"Monte Carlo, {RUNS} runs (p < 1)",
            },
            note="fails only where the whole interval is above exponent + 0.05",
        )
    }


def _minimal_instance():
    r"""The recorded minimal counterexample (d = 2, m = 2 clients, r = 1, τ = 1, p = ½: the group (1, 1, ½)).

    d = 1 or m = 1 cannot fail: rank(C) <= 1 = r, every ∇f_i(x_i*) = 0 (interpolation).  A = I, s_i = 1:
    f_i(x) = ½|x − c_i|² (L_i = s_i a_d = 1), c_1 = (3, 1), c_2 = (3, −1); W = I/2, M = A^{1/2}CW^{1/2} =
    [[3, 3], [1, −1]]/√2 = P diag(3, 1) Rᵀ with P = I, R = [[1, 1], [1, −1]]/√2 (σ = (3, 1): a gap, exact).  The
    rank-1 optimum keeps σ_1: x_1* = x_2* = (3, 0), residuals ∇f_i = (0, ∓1), which sum to 0 but are not 0 one by
    one; started there, U_0 = (1, 0)ᵀ, V_0 = (3, 3)ᵀ (every Monte Carlo run), participation seed 0.  Steps
    η_v = 0.4/(Lσ_1) = 2/15, η_u = 0.4p/(a_dσ_1) = 1/15; along the 1024 rounds max_t ‖U_t‖² ≈ 5.7 <= 2.5σ_1 = 7.5
    and max_t ½Σv_i² ≈ 9.03 <= 5σ_1 = 15: the step condition holds.  (c_i = (2, ±1), σ = (2, 1), leaves it within
    1024 rounds from every start tried, entries of U_0, V_0 in {0, ±1, 2}: the noise grows ‖U_t‖² past 2.5σ_1.)"""
    r = 1 / np.sqrt(2)
    one = {
        "A": np.eye(2)[None],
        "s": np.ones((1, 2)),
        "C": np.array([[[3.0, 1.0], [3.0, -1.0]]]),
        "sigma": np.array([[3.0, 1.0]]),
        "P": np.eye(2)[None],
        "R": np.array([[[r, r], [r, -r]]]),
        "Li": np.ones((1, 2)),
        "L": np.ones(1),
        "ad": np.ones(1),
        "r": np.array([1]),
        "tau": np.array([1]),
        "p": np.array([0.5]),
    }
    one["U0"] = np.tile(np.array([1.0, 0.0]).reshape(1, 1, 2, 1), (1, RUNS, 1, 1))
    one["V0"] = np.tile(np.array([3.0, 3.0]).reshape(1, 1, 2, 1), (1, RUNS, 1, 1))
    one["seed"] = np.array([0])
    return one


STATEMENTS = (
    Statement(
        id="pflmf.deterministic",
        source="Dadras thesis, §4.1 (Paper I, TMLR 2025, convergence theorem)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\frac1T\sum_{t<T}\mathbb E\|\nabla F(U_t,V_t)\|^2 = O(1/T)\ \text{(deterministic gradients)}",
        text="pFL^MF (alternating steps, tau local v-steps, participation probability p) with deterministic "
        "gradients and fixed steps: the average squared gradient norm over T rounds is O(1/T)",
        assumptions=(
            "f_i L_i-smooth, bounded below",
            "exact gradients",
            "fixed steps below the blocks' smoothness along the run (reconstructed)",
            "participation probability p (as printed, any)",
        ),
        scaling={
            "quadratic": (
                "the step sizes (eta_u, eta_v) and the rank-r factorisation are drawn inside the checker per "
                "instance (U V^T scales as theta: the factors split the scale freely), so a batch is not "
                "rescaled here"
            )
        },
        families={"quadratic": ("certified rank-r quadratics, p in {1, 1/2}",)},
        claimed="rate",
        instances=instances,
        trials_used=trials_used,
        prepare=prepare,
        evaluate=evaluate,
        claim=CLAIM,
        expect="fails",
        # the participation noise alone, from the rank-1 optimum: fitted exponent -0.70 [-0.77, -0.63] > -1 + 0.05
        # (see _minimal_instance)
        counterexamples={"quadratic": _minimal_instance},
        readings=(
            Reading(
                "full participation (p = 1)",
                {"applies": lambda p: p == 1},
                kind="variant",
                why="'deterministic gradient setting' read as exact gradients and every client every "
                "round: the only randomness left then is none",
                repairs="missing hypothesis",
            ),
        ),
        mutants=(Mutant("rate O(1/T^2)", {"exponent": -2.0}), Mutant("rate O(1/T^1.5)", {"exponent": -1.5})),
        equivalent_mutants={
            "rate O(1/sqrt(T))": "true: weaker than O(1/T) (the stochastic statement's rate)"
        },
        findings=(FINDING,),
        origin="reconstruction",
    ),
)
