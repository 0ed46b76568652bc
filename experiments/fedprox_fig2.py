r"""``fedprox-fig2``: the effect of the number of local updates K (FedProx analysis, Figure 2).

Algorithm 1 (``moreau.fl.fedprox``) on the paper's synthetic logistic data
(``moreau.data.fedprox_synthetic``, §6.1, ridge μ = 0.01 of ours) with the §6.1 step sizes
γ = (λ+L)/(λL), η = 1/(L+λ), for a small (0.02) and a large (0.5) λ and K ∈ {1, 5, 20, 50}
local steps.  Plotted: the distance to the run's own exact optimum
:math:`\|w_t^{(g)} - \tilde w^{(g)}\|^2` (``moreau.fl.fedprox_optimum``) per round, mean over
``--trials`` seeds (default 5, quick 2).  The paper's claim: a small λ gains much from more
local updates (it needs less communication), a large λ only marginally.  Compared on the same
data set per seed: the log of each λ's gain (distance left with K = Ks[0] over K = Ks[-1]),
paired t over the seeds.
"""
from __future__ import annotations

import numpy as np

from ._fedprox_runs import STEP_NOTE, mean_curves, paper_run
from ._plot import figure, save
from ._experiment import Experiment
from ._verdicts import by_seed, paired

__all__ = ["EXPERIMENT"]


def config(quick, trials):
    return {"seeds": trials or (2 if quick else 5), "rounds": 40 if quick else 150, "m": 10, "n": 200,
            "d": 20 if quick else 60, "mu": 0.01, "R": 1.0, "lambdas": [0.02, 0.5], "Ks": [1, 5, 20, 50],
            "steps": STEP_NOTE}


def points(params):
    if len(params["lambdas"]) != 2 or len(params["Ks"]) < 2:
        raise ValueError("fedprox-fig2 compares a small and a large lambda over at least 2 K: lambdas needs 2 values "
                         f"and Ks at least 2 (got lambdas = {params['lambdas']}, Ks = {params['Ks']})")
    return [{"seed": s} for s in range(params["seeds"])]


def compute(params, point, rng):
    """Every (lambda, K) on the same data set (one point per seed)."""
    rows = []
    for lam, K, g, _, to_opt, _, _ in paper_run(rng, R=params["R"], lams=params["lambdas"], Ks=params["Ks"],
                                                rounds=params["rounds"], m=params["m"], n=params["n"],
                                                d=params["d"], mu=params["mu"]):
        rows += [{"lam": lam, "K": K, "seed": point["seed"], "round": t, "global_to_optimum": float(to_opt[t]),
                  "global_total": float(g[t])} for t in range(len(g))]
    return rows


def finish(rows, params, out, seed=0, quick=False):
    fig, ax = figure(2, width=6.8, aspect=0.72)
    gain = {}
    for a, lam, tag in zip(ax[0], params["lambdas"], "ab"):
        left = {}
        for k, K in enumerate(params["Ks"]):
            t, mean, _ = mean_curves(rows, "global_to_optimum", lam=lam, K=K)
            a.semilogy(t, mean, color=f"C{k}", label=f"K = {K}")
            left[K] = float(mean[-1] / mean[0])
        gain[lam] = left[params["Ks"][0]] / left[params["Ks"][-1]]
        a.set(xlabel="communication round t", ylabel=r"$\|w_t^{(g)}-\tilde w^{(g)}\|^2$",
              title=rf"({tag}) $\lambda={lam:g}$")
        a.legend(loc="lower left")
    figures = save(fig, out, "fedprox-fig2", quick)
    small, large = params["lambdas"]
    K0, K1 = params["Ks"][0], params["Ks"][-1]

    def log_gain(lam):  # per seed: log(left(K0) / left(K1)), left = distance after the last round / at round 0
        last, first = max(r["round"] for r in rows), 0
        left = {K: by_seed(rows, "global_to_optimum", lam=lam, K=K, round=last)
                / by_seed(rows, "global_to_optimum", lam=lam, K=K, round=first) for K in (K0, K1)}
        return np.log(left[K0]) - np.log(left[K1])

    claims = [paired(f"more local updates help a small lambda more than a large one (gain in remaining distance, "
                     f"K = {K0} vs K = {K1}; compared in log; value: the gains of the mean curves)",
                     [log_gain(small) - log_gain(large)], [f"log gain(λ={small:g}) − log gain(λ={large:g})"],
                     value={str(k): v for k, v in gain.items()})]
    theorems = {"fedprox.thm2": {"assumptions": {"gamma < 1/L_g (the paper's gamma equals 1/L_g)": False,
                                                 "eta <= 1/L_l": True}}}
    return {"figures": figures, "claims": claims, "theorems": theorems}


EXPERIMENT = Experiment(
    name="fedprox-fig2", paper="FedProx analysis", figure="Figure 2",
    summary="distance to the optimum per round for K in {1, 5, 20, 50} local steps, small and large lambda",
    expected=("~3 s", "~16 s"), config=config, points=points, compute=compute, finish=finish, notes=("steps",))
