r"""``fedprox-fig2``: the effect of the number of local updates K (FedProx analysis, Figure 2).

Algorithm 1 (``moreau.fl.fedprox``) on the paper's synthetic logistic data
(``moreau.data.fedprox_synthetic``, §6.1, ridge μ = 0.01 of ours) with the §6.1 step sizes
γ = (λ+L)/(λL), η = 1/(L+λ), for a small (0.02) and a large (0.5) λ and K ∈ {1, 5, 20, 50}
local steps.  Plotted: the distance to the run's own exact optimum
:math:`\|w_t^{(g)} - \tilde w^{(g)}\|^2` (``moreau.fl.fedprox_optimum``) per round, mean over
``--trials`` seeds (default 5, quick 2).  The paper's claim: a small λ gains much from more
local updates (it needs less communication), a large λ only marginally.  Compared on the same
data set per seed: the log of each λ's gain (distance left with K = Ks[0] over K = Ks[-1]),
paired t over the seeds.  The CSV is long-format (one row per round × method × seed × metric,
documented in the manifest's ``columns``); ``fedprox-fig2-curves`` adds the test accuracy
(``n_test`` rows per client) and the training objective; bands over seeds as ``band`` says.
"""

from __future__ import annotations

import numpy as np

from ._curve_figures import curves_figure, legend
from ._curves import band, band_label, check_band, columns, curve, long_rows
from ._experiment import Experiment
from ._fedprox_runs import METRICS, STEP_NOTE, paper_run
from ._plot import figure, save
from ._verdicts import paired

__all__ = ["EXPERIMENT"]

GRID = {"lam": "FedProx's lambda of the run", "K": "local steps per round of the run"}


def config(quick, trials):
    return {
        "seeds": trials or (2 if quick else 5),
        "rounds": 40 if quick else 150,
        "m": 10,
        "n": 200,
        "d": 20 if quick else 60,
        "mu": 0.01,
        "R": 1.0,
        "lambdas": [0.02, 0.5],
        "Ks": [1, 5, 20, 50],
        "n_test": 100,
        "band": "std",
        "steps": STEP_NOTE,
    }


def points(params):
    check_band("fedprox-fig2", params["band"])
    if len(params["lambdas"]) != 2 or len(params["Ks"]) < 2:
        raise ValueError(
            "fedprox-fig2 compares a small and a large lambda over at least 2 K: lambdas needs 2 values "
            f"and Ks at least 2 (got lambdas = {params['lambdas']}, Ks = {params['Ks']})"
        )
    return [{"seed": s} for s in range(params["seeds"])]


def _method(lam, K):
    return f"FedProx λ={lam:g}, K={K}"


def compute(params, point, rng):
    """Every (lambda, K) on the same data set (one point per seed): long rows."""
    rows = []
    for lam, K, metrics in paper_run(
        rng,
        R=params["R"],
        lams=params["lambdas"],
        Ks=params["Ks"],
        rounds=params["rounds"],
        m=params["m"],
        n=params["n"],
        d=params["d"],
        mu=params["mu"],
        n_test=params["n_test"],
    ):
        rows += long_rows(metrics, method=_method(lam, K), seed=point["seed"], lam=lam, K=K)
    return rows


def finish(rows, params, out, seed=0, quick=False):
    kind = params["band"]
    fig, ax = figure(2, width=6.8, aspect=0.72)
    gain, S = {}, 0
    for a, lam, tag in zip(ax[0], params["lambdas"], "ab", strict=True):
        left = {}
        for k, K in enumerate(params["Ks"]):
            t, v, seeds = curve(rows, "distance_to_optimum", _method(lam, K))
            S = max(S, len(seeds))
            mean, lo, hi = band(v, kind, log=True)
            a.semilogy(t, mean, color=f"C{k}", label=f"K = {K}")
            a.fill_between(t, lo, hi, color=f"C{k}", alpha=0.2, linewidth=0)
            left[K] = float(v.mean(axis=0)[-1] / v.mean(axis=0)[0])  # the arithmetic mean curve
        gain[lam] = left[params["Ks"][0]] / left[params["Ks"][-1]]
        a.set(
            xlabel="communication round t",
            ylabel=r"$\|w_t^{(g)}-\tilde w^{(g)}\|^2$",
            title=rf"({tag}) $\lambda={lam:g}$",
        )
    legend(fig, ax[0][0].get_legend_handles_labels()[0], band_label(kind, S, log=True))
    figures = save(fig, out, "fedprox-fig2", quick)
    methods = [_method(lam, K) for lam in params["lambdas"] for K in params["Ks"]]
    panels = [({"lam": lam}, f"({'ab'[i]}) $\\lambda={lam:g}$") for i, lam in enumerate(params["lambdas"])]
    figures += curves_figure(
        rows,
        panels,
        [
            ("test_accuracy", "test accuracy (%), global model", False),
            ("train_loss", "training objective, global model", True),
        ],
        methods,
        kind,
        out,
        "fedprox-fig2-curves",
        quick,
    )
    small, large = params["lambdas"]
    K0, K1 = params["Ks"][0], params["Ks"][-1]

    def log_gain(
        lam,
    ):  # per seed: log(left(K0) / left(K1)), left = distance after the last round / at round 0
        left = {}
        for K in (K0, K1):
            v = curve(rows, "distance_to_optimum", _method(lam, K))[1]
            left[K] = v[:, -1] / v[:, 0]
        return np.log(left[K0]) - np.log(left[K1])

    claims = [
        paired(
            f"more local updates help a small lambda more than a large one (gain in remaining distance, "
            f"K = {K0} vs K = {K1}; compared in log; value: the gains of the mean curves)",
            [log_gain(small) - log_gain(large)],
            [f"log gain(λ={small:g}) − log gain(λ={large:g})"],
            value={str(k): v for k, v in gain.items()},
        )
    ]
    theorems = {
        "fedprox.thm2": {
            "assumptions": {"gamma < 1/L_g (the paper's gamma equals 1/L_g)": False, "eta <= 1/L_l": True}
        }
    }
    return {
        "figures": figures,
        "claims": claims,
        "theorems": theorems,
        "columns": {"fedprox-fig2.csv": columns(METRICS, GRID)},
    }


EXPERIMENT = Experiment(
    name="fedprox-fig2",
    paper="FedProx analysis",
    figure="Figure 2",
    summary="distance to the optimum per round for K in {1, 5, 20, 50} local steps, small and large lambda",
    expected=("~3 s", "~16 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    notes=("steps",),
)
