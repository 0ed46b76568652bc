r"""``fedprox-fig1d``: total error against communication round (FedProx analysis, Figure 1(d)).

Algorithm 1 (``moreau.fl.fedprox``) on the paper's synthetic logistic data
(``moreau.data.fedprox_synthetic``, §6.1: 10 clients × 200 samples, d = 60, ridge μ = 0.01 of
ours since the labels are separable) for λ ∈ {0.02, 0.1, 0.5} with the §6.1 step sizes
γ = (λ+L)/(λL), η = 1/(L+λ) (times ``gamma_scale`` and ``eta_scale``, default 1:
``--set gamma_scale=0.5`` halves γ for every λ), K = 10 local steps (the paper does not state K for this panel;
Figure 2 varies it), from zero.  Total errors per round: global
:math:`\|w_t^{(g)} - w_\star^{(g)}\|^2` and local :math:`\frac1m\sum_i\|w_{t}^{(i)} - w_\star^{(i)}\|^2`
(mean ± std over seeds, ``--trials`` seeds, default 5, quick 2) at a low and a high
heterogeneity; the dotted lines are each λ's statistical error (its exact optimum,
``moreau.fl.fedprox_optimum``), which the total error approaches.  The CSV is long-format (one row
per round × method × seed × metric, the metrics of ``_fedprox_runs.METRICS``, documented in the
manifest's ``columns``); ``fedprox-fig1d-curves`` draws the test accuracy (``n_test`` rows per client,
drawn after the training rows), the training objective and the distance to the exact optimum,
the mean over seeds and a ``band`` (``std``, ``ci95`` or ``minmax``, named on the figure).

The §6.1 γ equals 1/L_g, the edge of Theorem 2's condition γ < 1/L_g (not met, strictly).
The claim compares the λ on the same data set per seed: paired t on the log of the distance
left, Holm over the consecutive λ.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from ._config import Range
from ._curve_figures import curves_figure, legend
from ._curves import band, band_label, check_band, columns, curve, long_rows
from ._experiment import Experiment
from ._fedprox_runs import METRICS, STEP_NOTE, paper_run
from ._plot import figure, plain_log_ticks, save
from ._verdicts import paired

__all__ = ["EXPERIMENT"]

LAMS = (0.02, 0.1, 0.5)
GRID = {
    "R": "R_param: the heterogeneity level (variance of the generating models' entries)",
    "lam": "FedProx's lambda of the run (also in the method's name)",
}


#: FedProx's step sizes as multiples of §6.1's (both per lambda): gamma = gamma_scale (lam + L)/(lam L),
#: eta = eta_scale/(L + lam)
RANGES = {
    "gamma_scale": Range(0, lo_open=True, why="FedProx's server step gamma, a multiple of (lam + L)/(lam L)"),
    "eta_scale": Range(0, lo_open=True, why="FedProx's local step eta, a multiple of 1/(L + lam)"),
}


def config(quick, trials):
    return {
        "seeds": trials or (2 if quick else 5),
        "rounds": 40 if quick else 200,
        "K": 10,
        "m": 10,
        "n": 200,
        "d": 20 if quick else 60,
        "mu": 0.01,
        "R_levels": [0.1, 2.0],
        "lambdas": list(LAMS),
        "n_test": 100,
        "gamma_scale": 1.0,
        "eta_scale": 1.0,
        "band": "std",
        "steps": STEP_NOTE,
    }


def points(params):
    check_band("fedprox-fig1d", params["band"])
    if len(params["lambdas"]) < 2:
        raise ValueError(f"fedprox-fig1d compares lambdas: give at least 2 (got {params['lambdas']})")
    return [{"R": R, "seed": s} for R in params["R_levels"] for s in range(params["seeds"])]


def _method(lam):
    return f"FedProx λ={lam:g}"


def compute(params, point, rng):
    """Every lambda on the same data set (one point per heterogeneity level and seed): long rows."""
    rows = []
    for lam, _, metrics in paper_run(
        rng,
        R=point["R"],
        lams=params["lambdas"],
        Ks=[params["K"]],
        rounds=params["rounds"],
        m=params["m"],
        n=params["n"],
        d=params["d"],
        mu=params["mu"],
        n_test=params["n_test"],
        gamma_scale=params["gamma_scale"],
        eta_scale=params["eta_scale"],
    ):
        rows += long_rows(metrics, method=_method(lam), seed=point["seed"], R=point["R"], lam=lam)
    return rows


def finish(rows, params, out, seed=0, quick=False):
    kind, methods = params["band"], [_method(lam) for lam in params["lambdas"]]
    fig, ax = figure(2, 2, width=6.8, aspect=0.7)
    S = 0
    for r_i, R in enumerate(params["R_levels"]):
        for c_i, (key, lab) in enumerate(
            (
                ("global_total", r"$\|w_t^{(g)}-w_\star^{(g)}\|^2$"),
                ("local_total", r"$\frac{1}{m}\sum_i\|w_t^{(i)}-w_\star^{(i)}\|^2$"),
            )
        ):
            a = ax[r_i][c_i]
            for k, meth in enumerate(methods):
                t, v, seeds = curve(rows, key, meth, R=R)
                S = max(S, len(seeds))
                mean, lo, hi = band(v, kind, log=True)
                a.plot(t, mean, color=f"C{k}", label=rf"$\lambda={params['lambdas'][k]:g}$")
                a.fill_between(t, lo, hi, color=f"C{k}", alpha=0.2, linewidth=0)
                stat = curve(rows, key.replace("total", "statistical"), meth, R=R)[1]
                a.axhline(stat[:, 0].mean(), color=f"C{k}", linestyle=":", linewidth=0.9)
            a.set_yscale("log")
            plain_log_ticks(a)
            a.set(
                xlabel="communication round t",
                ylabel=lab,
                title=f"({'abcd'[2 * r_i + c_i]}) $R_{{param}}={R:g}$, {'global' if c_i == 0 else 'local'}",
            )
    handles, _ = ax[0][0].get_legend_handles_labels()
    legend(
        fig,
        handles,
        f"{band_label(kind, S, log=True)}; dotted lines: each lambda's statistical error (exact optimum)",
        ncol=len(handles),
    )
    figures = save(fig, out, "fedprox-fig1d", quick)
    panels = [({"R": R}, f"({'ab'[i]}) $R_{{param}}={R:g}$") for i, R in enumerate(params["R_levels"])]
    figures += curves_figure(
        rows,
        panels,
        [
            ("test_accuracy", "test accuracy (%), global model", False),
            ("train_loss", "training objective, global model", True),
            ("distance_to_optimum", r"$\|w_t^{(g)}-\tilde w^{(g)}\|^2$", True),
        ],
        methods,
        kind,
        out,
        "fedprox-fig1d-curves",
        quick,
    )
    claims = []
    lams = params["lambdas"]
    for R in params["R_levels"]:
        logs = np.log([_remaining(rows, R, lam) for lam in lams])  # (lambdas, seeds)
        claims.append(
            paired(
                f"R_param = {R:g}: larger lambda converges more slowly (||w_T - w~||^2/||w_0 - w~||^2 after the last "
                "round increases with lambda; compared in log, value: geometric means over seeds)",
                np.diff(logs, axis=0),
                [f"log left(λ={b:g}) − log left(λ={a:g})" for a, b in pairwise(lams)],
                value={str(lam): float(np.exp(v)) for lam, v in zip(lams, logs.mean(axis=1), strict=True)},
            )
        )
    theorems = {
        "fedprox.thm2": {
            "assumptions": {
                "gamma < 1/L_g (the paper's gamma equals 1/L_g)": params["gamma_scale"] < 1,
                "eta <= 1/L_l": params["eta_scale"] <= 1,
                f"condition (12) with K = {params['K']}": "not checked here (see moreau check fedprox.thm2)",
            }
        }
    }
    return {
        "figures": figures,
        "claims": claims,
        "theorems": theorems,
        "columns": {"fedprox-fig1d.csv": columns(METRICS, GRID)},
    }


def _remaining(rows, R, lam):
    """Per seed (increasing), ``||w_T^(g) - w~^(g)||^2 / ||w_0^(g) - w~^(g)||^2`` after the last round:
    how much of the distance to its own optimum a run has left (the optimisation speed the paper
    compares; smaller is faster; floored at the smallest positive float so that its log exists)."""
    _, v, _ = curve(rows, "distance_to_optimum", _method(lam), R=R)
    return np.maximum(v[:, -1] / v[:, 0], np.finfo(float).tiny)


EXPERIMENT = Experiment(
    name="fedprox-fig1d",
    paper="FedProx analysis",
    figure="Figure 1(d)",
    summary="total error vs communication round of Algorithm 1 for lam in {0.02, 0.1, 0.5} (paper's step sizes), "
    "global and local, low and high heterogeneity",
    expected=("~4 s", "~20 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    notes=("steps",),
    ranges=RANGES,
)
