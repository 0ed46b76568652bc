r"""pflmf.stochastic — thesis §4.1 (Paper I's convergence theorem): O(1/√T) with stochastic gradients.

Statement (thesis §4.1, as printed): pFL^MF "achieves a convergence rate of O(1/√T) in the
stochastic gradient setting" (with τ local v-steps and participation probability p).  Read, as
for SGD on a nonconvex objective (the thesis's ch. 2, Theorem 4), with unbiased stochastic
gradients of bounded variance and the step sizes scaled with the horizon, η = η_0/√T:

.. math:: \frac1T\sum_{t<T}\mathbb E\,\|\nabla F(U_t, V_t)\|_F^2 = O(1/\sqrt T).

Reconstructed (the journal theorem was not available): the measure, the step rule η ∝ 1/√T (a
fixed step leaves a noise floor and no rate), and the step-size assumption checked along
every run (as in ``pflmf.deterministic``).  ∇F is F's exact gradient at the iterates.

Assumptions: f_i L_i-smooth least squares, f_i(x) = (1/2k)‖X_i x − y_i‖² on k = 6 samples in
d = 3 (rows normal, targets from a rank-2 model plus noise 0.5: no interpolation, so the
mini-batch noise stays at every stationary point), n = 4 clients; stochastic gradients on
mini-batches of 2 samples drawn without replacement, fresh for every gradient (unbiased);
η_v = 0.075 √(64/T)/L, η_u = 0.3 p √(64/T)/L with L = max_i L_i.

Instances: 3 problems for each (r, τ, p) in (1, 1, 1), (2, 2, ½); per problem and horizon
T ∈ {64, 128, 256} 12 independent runs from one start (Monte Carlo over mini-batches and
participation).  Sides: the slope of log of the Monte Carlo mean of the average on log T, with
a 95 % delta-method interval from the standard errors; a rate part "at most" −1/2 (+ 0.05).
These horizons are short (the checker's time budget) and the statement is about T → ∞: a slope
on a short grid can carry the transient in either direction, and some problems are still on their
way in far beyond it: seed 0, ``--trials 50``, problem 5 (r = τ = p = 1): local slopes −0.32,
−0.30, −0.35 from T = 64 to 512, then −0.51, −0.48, −0.49, −0.51 up to T = 8192; ``--trials
1000``, problem 94: −0.41 over T = 1024..4096 (local −0.38, −0.44), then −0.50, −0.47, −0.49 up to
T = 32768.  So a problem whose whole interval lies above the printed exponent + 0.05 is fitted
again on horizons 16, 64 and at most 256 times as long (``RUNGS``: T up to 65,536), each rung only
for the problems still failing, and judged on the last rung it reached: it fails only if it fails
there too (the part's constants say which horizons were used).  The re-fits are part of the
claim-independent preparation (every mutant is judged on the same fits).

Claimed: a rate.  What the check shows: slopes −0.5 to −0.8 on the short grid, and on the long
grid where the short one is still in its transient; the deterministic rate O(1/T) is rejected (a
mutant).

Power (docs/power.md): on the short grid the part detects only a lowered exponent by 0.1 to 0.25 (the
transient's slopes plus the Monte Carlo interval plus atol 0.05).  ``LONG_HORIZONS`` is the statement on
T = 1024..4096 with 24 runs per horizon and atol 0.02, outside the default run (30-50 s): ``moreau check
pflmf.stochastic --analyse`` runs it (``Statement.powered``); slopes −0.49 to −0.66, detectable change 0.037
(seed 0), both mutants and the exponent lowered by 0.05 rejected (the slow test
``tests/catalogue/pflmf/test_stochastic_power.py``).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Mutant, Statement, fit_exponent, rate_sides
from moreau.analysis.engine.instances import per_group, trials_in_groups
from moreau.analysis.pflmf import clients
from moreau.fl._pflmf import pflmf

__all__ = ["STATEMENTS"]

GROUPS = ((1, 1, 1.0), (2, 2, 0.5))  # (r, tau, p)
GRID = np.array([64, 128, 256])
RUNGS = (16, 64, 256)  # a failure on GRID is fitted again on GRID * rung, rung by rung
LONG = RUNGS[0] * GRID
RUNS, M, D, K, BATCH, ATOL = 12, 4, 3, 6, 2, 0.05

CLAIM = {"exponent": -0.5}  # O(1/sqrt(T))
PART = "(1/T) sum_{t<T} E||grad F(U_t, V_t)||^2 = O(1/sqrt(T)), eta ~ 1/sqrt(T): fitted exponent over T = 64..256"


trials_used = trials_in_groups(len(GROUPS), "groups")  # what --trials becomes (instances: per_group)


def instances(family, trials, rng):
    per = per_group(trials, len(GROUPS), 3)
    n = per * len(GROUPS)
    X = rng.standard_normal((n, M, K, D))
    theta = np.einsum("ndk,nmk->nmd", rng.standard_normal((n, D, 2)), rng.standard_normal((n, M, 2)))
    y = np.einsum("nmkd,nmd->nmk", X, theta) + 0.5 * rng.standard_normal((n, M, K))
    g = np.repeat(np.arange(len(GROUPS)), per)
    r, tau, p = (np.array([G[k] for G in GROUPS])[g] for k in range(3))
    rmax = max(G[0] for G in GROUPS)
    return {
        "X": X,
        "y": y,
        "r": r.astype(int),
        "tau": tau.astype(int),
        "p": p,
        "U0": rng.standard_normal((n, D, rmax)),
        "V0": rng.standard_normal((n, M, rmax)),
        "seed": rng.integers(0, 2**63, n),
    }


def prepare(batch, grid=GRID, runs=RUNS, rungs=RUNGS, atol=ATOL):
    """Run every group and horizon (claim-independent): the fitted exponent per problem, on the
    horizons ``grid`` (``runs`` runs each), or on the first rung of ``rungs`` (the last one at most) where
    its whole interval is no longer above the printed exponent + ``atol``; ``atol`` is also the part's
    tolerance (``evaluate``).  The defaults are the default run's; :data:`LONG_HORIZONS` passes its own."""
    grid = np.asarray(grid)
    n = batch["r"].shape[0]
    slope, lo, hi, ok = np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n, bool)
    A = np.einsum("nmkd,nmke->nmde", batch["X"], batch["X"]) / K
    Li = np.linalg.eigvalsh(A)[..., -1]
    horizon = np.full(n, grid[-1])
    for r, tau, p in GROUPS:
        g = np.flatnonzero((batch["r"] == r) & (batch["tau"] == tau) & (batch["p"] == p))
        if not g.size:
            continue
        slope[g], lo[g], hi[g], ok[g] = _fit(batch, g, Li[g], r, tau, p, grid, runs)
        for rung in rungs:
            again = g[lo[g] > CLAIM["exponent"] + atol]
            if not again.size:
                break
            slope[again], lo[again], hi[again], ok_long = _fit(
                batch, again, Li[again], r, tau, p, rung * grid, runs
            )
            ok[again] &= ok_long
            horizon[again] = rung * grid[-1]
    return {
        "slope": slope,
        "lo": lo,
        "hi": hi,
        "steps_ok": ok,
        "p": batch["p"],
        "horizon": horizon,
        "grid": grid,
        "rungs": tuple(rungs),
        "runs": runs,
        "atol": atol,
    }


def _fit(batch, g, Li, r, tau, p, grid, runs=RUNS):
    """``(slope, lo, hi, steps_ok)`` of the problems ``g`` (one group) on the horizons ``grid``, ``runs``
    independent runs per horizon."""
    f = mo.LeastSquares(
        np.broadcast_to(batch["X"][g], (runs,) + batch["X"][g].shape),
        np.broadcast_to(batch["y"][g], (runs,) + batch["y"][g].shape),
    )
    L = Li.max(axis=1)
    ok = np.ones(g.size, bool)
    y, se = [], []
    for T in grid:
        scale = np.sqrt(GRID[0] / T)
        eta_u, eta_v = 0.3 * p * scale / L, 0.075 * scale / L
        h = pflmf(
            f,
            r,
            rounds=int(T),
            eta_u=eta_u,
            eta_v=eta_v,
            tau=tau,
            p=p,
            batch_size=BATCH,
            U0=batch["U0"][g][..., :r],
            V0=batch["V0"][g][..., :r],
            rng=np.random.default_rng([int(batch["seed"][g[0]]), int(T)]),
        )
        avg = clients.grad_norm2(f, h)[:-1].mean(axis=0)  # (RUNS, problems)
        y.append(avg.mean(axis=0))
        se.append(avg.std(axis=0, ddof=1) / np.sqrt(runs))
        ok &= clients.step_condition(Li, h, eta_u, eta_v).all(axis=0)
    slope, (lo, hi) = fit_exponent(grid, np.array(y).T, y_se=np.array(se).T)
    return slope, lo, hi, ok


def evaluate(data, claim):
    grid, rungs = np.asarray(data.get("grid", GRID)), data.get("rungs", RUNGS)
    runs, atol = data.get("runs", RUNS), data.get("atol", ATOL)
    name = PART if np.array_equal(grid, GRID) else PART.replace("64..256", f"{grid[0]}..{grid[-1]}")
    return {
        name: rate_sides(
            data["slope"],
            (data["lo"], data["hi"]),
            claim["exponent"],
            kind="at most",
            atol=atol,
            applicable=data["steps_ok"],
            level=0.95,
            constants={
                "grad F": "exact (closed-form gradients along the run)",
                "E": f"Monte Carlo, {runs} runs per horizon",
                "T": f"{grid[0]}..{grid[-1]}"
                + "".join(
                    f"; {rung * grid[0]}..{rung * grid[-1]} for "
                    f"{int(np.sum(data['horizon'] == rung * grid[-1]))} problem(s)"
                    for rung in rungs
                    if np.any(data["horizon"] == rung * grid[-1])
                ),
            },
            note=f"fails only where the whole interval is above exponent + {atol:g}",
        )
    }


_STATEMENT = (
    Statement(
        id="pflmf.stochastic",
        source="Dadras thesis, §4.1 (Paper I, TMLR 2025, convergence theorem)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\frac1T\sum_{t<T}\mathbb E\|\nabla F(U_t,V_t)\|^2 = O(1/\sqrt T)\ \text{(stochastic gradients)}",
        text="pFL^MF with unbiased mini-batch gradients, tau local v-steps, participation probability p and "
        "steps ~ 1/sqrt(T): the average squared gradient norm over T rounds is O(1/sqrt(T))",
        assumptions=(
            "f_i L_i-smooth, bounded below",
            "unbiased stochastic gradients of bounded variance",
            "steps eta_0/sqrt(T) below the blocks' smoothness along the run (reconstructed)",
        ),
        scaling={
            "quadratic": (
                "the step sizes (eta_u, eta_v) and the rank-r factorisation are drawn inside the checker per "
                "instance (U V^T scales as theta: the factors split the scale freely), so a batch is not "
                "rescaled here"
            )
        },
        families={"quadratic": ("least-squares clients, mini-batch gradients, p in {1, 1/2}",)},
        claimed="rate",
        instances=instances,
        trials_used=trials_used,
        prepare=prepare,
        evaluate=evaluate,
        claim=CLAIM,
        mutants=(
            Mutant("rate O(1/T) (the deterministic rate)", {"exponent": -1.0}),
            Mutant("rate O(1/T^0.75)", {"exponent": -0.75}),
        ),
        equivalent_mutants={"rate O(1/T^0.4)": "true: weaker than the claim"},
        origin="reconstruction",
    ),
)

#: the long-horizon check (not in the default run: 30-50 s): T = 1024..4096, where the local slopes have come
#: to -1/2 within ~0.03 (the docstring's problems), ``LONG_RUNS`` runs per horizon, no rungs
LONG_GRID, LONG_RUNS, LONG_ATOL = np.array([1024, 2048, 4096]), 24, 0.02
#: the mutant that only a powered check rejects: the claimed exponent lowered by 0.05 (issue 27 item 6)
POWER_MUTANT = Mutant("rate O(1/T^0.55) (the exponent lowered by 0.05)", {"exponent": -0.55})

#: the statement on the long horizons: its rate part detects a change of the exponent of at most 0.05
#: (docs/power.md), which the default's short grid cannot (its transient bends the slopes to -0.5..-0.8);
#: run by ``moreau check pflmf.stochastic --analyse`` (``Statement.powered``, moreau.analysis.engine.power)
LONG_HORIZONS = dataclasses.replace(
    _STATEMENT[0],
    id="pflmf.stochastic_long",
    text=_STATEMENT[0].text + " (on T = 1024..4096, 24 runs per horizon)",
    prepare=functools.partial(prepare, grid=LONG_GRID, runs=LONG_RUNS, rungs=(), atol=LONG_ATOL),
    mutants=(*_STATEMENT[0].mutants, POWER_MUTANT),
)

STATEMENTS = (dataclasses.replace(_STATEMENT[0], powered=(LONG_HORIZONS,)),)
