r"""``pflmf-rank``: how the rank r trades personalisation against sharing (pFL^MF, thesis §4.1, Paper I).

Setting (a reconstruction of Paper I's motivating scenario, clustered FL without known cluster
memberships, at a size a CPU runs in seconds; the paper's own experiments train deep networks on
MNIST/CIFAR in FL-Bench): m clients in K clusters; client i's true model is its cluster's
:math:`\theta_{k(i)}` (normal, d-dimensional), and it holds n samples :math:`y = Z\theta_{k(i)} + \varepsilon`
with a design Z shared by all clients (``noise`` the standard deviation of ε).  Its loss is the
least-squares risk :math:`f_i(x) = \|Zx - y_i\|^2/(2n)`; all Hessians equal :math:`Z^\top Z/n`, so
the rank-r optimum of (4.1) is certified (``moreau.fl.low_rank_optimum``, Eckart–Young).  For each
r in ``ranks`` (from 1 to min(d, m)), Algorithm 1 (``moreau.fl.pflmf``, exact gradients, full
participation, τ = 5 local v-steps, η_v = η_u = 0.8/(a_d σ_1), a_d the largest eigenvalue of Z^T Z/n)
runs ``rounds`` rounds from a random start at the solution's scale.  Reconstructed: the data model,
sizes (m = 20, d = 8, K = 3, n = 40, noise 2), steps and rounds: none is the paper's.

Recorded per seed, r and (about 60) rounds: the relative distance of :math:`U_tV_t^\top` to the
certified optimum, the optimum's value gap ½Σ_{k>r}σ_k² over LocalTrain's, the estimation error
:math:`\frac1m\sum_i\|x_i - \theta_{k(i)}\|^2` of Algorithm 1's models and of the optimum's.
r = min(d, m) is LocalTrain (every client alone); r = 1 shares one direction each client scales.

Claims: (1) Algorithm 1 reaches the certified rank-r optimum for every r ≤ K (exact: relative
distance ≤ 1e-6 on every seed; for r > K the kept directions are noise with small singular-value
gaps and the quick run's rounds do not finish them: the figure shows how far they get);
(2) personalisation through a shared K-dimensional subspace helps: the rank-K optimum's error is
below LocalTrain's (r = min(d, m)) and below r = 1's, paired t over seeds, Holm over the two.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.fl._pflmf import low_rank_optimum, pflmf

from ._experiment import Experiment
from ._plot import figure, save
from ._verdicts import by_seed, exact, paired

__all__ = ["EXPERIMENT"]


def config(quick, trials):
    return {
        "seeds": trials or (4 if quick else 10),
        "m": 20,
        "d": 8,
        "K": 3,
        "n": 40,
        "noise": 2.0,
        "rounds": 400 if quick else 2000,
        "tau": 5,
        "step": 0.8,
        "ranks": [1, 2, 3, 4, 6, 8],
    }


def points(params):
    ranks = params["ranks"]
    if (
        sorted(set(ranks)) != list(ranks)
        or ranks[0] != 1
        or ranks[-1] != min(params["d"], params["m"])
        or params["K"] not in ranks
    ):
        raise ValueError(
            f"pflmf-rank needs ranks increasing from 1 to min(d, m) = {min(params['d'], params['m'])} "
            f"and containing K = {params['K']} (got {ranks})"
        )
    if not 1 <= params["K"] < min(params["d"], params["m"]):
        raise ValueError(
            f"pflmf-rank needs 1 <= K < min(d, m) clusters (got K = {params['K']}, d = {params['d']}, "
            f"m = {params['m']})"
        )
    return [{"seed": s} for s in range(params["seeds"])]


def problem(rng, m, d, K, n, noise):
    """The clustered data set of one seed: the objective, the true models (m, d) and the clusters (m,)."""
    theta = rng.standard_normal((K, d))
    cluster = np.arange(m) % K
    truth = theta[cluster]
    Z = rng.standard_normal((n, d))
    y = truth @ Z.T + noise * rng.standard_normal((m, n))
    return mo.LeastSquares(np.broadcast_to(Z, (m, n, d)), y), truth, cluster


def compute(params, point, rng):
    m, d, K = params["m"], params["d"], params["K"]
    f, truth, _ = problem(rng, m, d, K, params["n"], params["noise"])
    ad = float(np.max(np.asarray(f.eigenvalues)))
    rows = []
    for r in params["ranks"]:
        opt = low_rank_optimum(f, r)
        s1 = float(np.asarray(opt.sigma)[0])
        U0 = np.sqrt(s1) * rng.standard_normal((d, r)) / (np.sqrt(d) + np.sqrt(r))
        V0 = np.sqrt(s1 * m) * rng.standard_normal((m, r)) / (np.sqrt(m) + np.sqrt(r))
        h = pflmf(
            f,
            r,
            rounds=params["rounds"],
            eta_u=params["step"] / (ad * s1),
            eta_v=params["step"] / (ad * s1),
            tau=params["tau"],
            U0=U0,
            V0=V0,
        )
        X, Xs = np.asarray(h.theta), np.asarray(opt.X)
        dist = np.linalg.norm(X - Xs, axis=(-2, -1)) / np.linalg.norm(Xs)
        gap = float(np.asarray(opt.value) - np.asarray(opt.unconstrained))
        err = np.mean(np.sum((X - truth) ** 2, axis=-1), axis=-1)  # (rounds+1,)
        kept = sorted(
            set(range(0, len(dist), max(1, len(dist) // 60))) | {len(dist) - 1}
        )  # ~60 rounds per curve
        err_opt = float(np.mean(np.sum((Xs - truth) ** 2, axis=-1)))
        rows += [
            {
                "seed": point["seed"],
                "r": r,
                "round": t,
                "to_optimum": float(dist[t]),
                "error": float(err[t]),
                "error_optimum": err_opt,
                "value_gap": gap,
            }
            for t in kept
        ]
    return rows


def finish(rows, params, out, seed=0, quick=False):
    K = params["K"]
    ranks = params["ranks"]
    last = max(r["round"] for r in rows)
    err = {r: by_seed(rows, "error_optimum", r=r, round=last) for r in ranks}
    dist = {r: by_seed(rows, "to_optimum", r=r, round=last) for r in ranks}
    fig, ax = figure(2, width=6.8, aspect=0.72)
    for k, r in enumerate(ranks):
        sel = sorted((x for x in rows if x["r"] == r and x["seed"] == 0), key=lambda x: x["round"])
        ax[0][0].semilogy(
            [x["round"] for x in sel],
            [max(x["to_optimum"], 1e-17) for x in sel],
            color=f"C{k}",
            label=f"r = {r}",
        )
    ax[0][0].set(
        xlabel="round t",
        ylabel=r"$\|U_tV_t^\top - X^\star\|_F/\|X^\star\|_F$",
        title="(a) to the rank-r optimum",
    )
    ax[0][0].legend(fontsize=6, ncol=2)
    mean = [float(np.mean(err[r])) for r in ranks]
    ax[0][1].plot(ranks, mean, "o-", label="rank-r optimum")
    ax[0][1].plot(
        ranks,
        [float(np.mean(by_seed(rows, "error", r=r, round=last))) for r in ranks],
        "x--",
        label=f"Algorithm 1 after {last} rounds",
    )
    ax[0][1].axvline(K, color="0.6", ls=":", label=f"K = {K} clusters")
    ax[0][1].set(
        xlabel="rank r",
        ylabel=r"$\frac{1}{m}\sum_i\|x_i-\theta_{k(i)}\|^2$",
        title="(b) personalisation vs sharing",
    )
    ax[0][1].legend()
    figures = save(fig, out, "pflmf-rank", quick)
    worst = max(float(np.max(dist[r])) for r in ranks if r <= K)
    claims = [
        exact(
            f"Algorithm 1 reaches the certified rank-r optimum for every r <= K = {K} (relative distance <= 1e-6)",
            worst <= 1e-6,
            value=worst,
            rule="max over seeds and r <= K of ||U_T V_T^T - X*||_F/||X*||_F <= 1e-6",
        ),
        paired(
            f"at the rank-r optimum, sharing a K = {K}-dimensional subspace beats LocalTrain (r = {ranks[-1]}) and "
            "one shared direction (r = 1) in estimation error",
            [err[ranks[-1]] - err[K], err[1] - err[K]],
            [f"error(r={ranks[-1]}) - error(r={K})", f"error(r=1) - error(r={K})"],
            value={str(r): v for r, v in zip(ranks, mean, strict=True)},
        ),
    ]
    theorems = {
        "pflmf.bm": {
            "assumptions": {
                "proportional Hessians (shared design): certified optimum": True,
                "full participation, exact gradients": True,
            }
        }
    }
    return {"figures": figures, "claims": claims, "theorems": theorems}


EXPERIMENT = Experiment(
    name="pflmf-rank",
    paper="pFL^MF (Dadras thesis §4.1, Paper I)",
    figure="reconstruction (clustered FL)",
    summary="rank r from one shared direction to LocalTrain: distance to the certified optimum, estimation error",
    expected=("~5 s", "~60 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
)
