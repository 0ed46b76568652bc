r"""``perfedavg-vs-pfedme``: how much each method personalises, as heterogeneity grows (quadratics, exact).

Least-squares clients (``moreau.data.least_squares``: fixed designs with spectrum in [μ, L],
heterogeneity R exact).  Each method's *personalised* model for client i, computed exactly at
the point the method converges to (no finite-run error):

* pFedMe (λ): :math:`\hat\theta_i = \mathrm{prox}_{f_i/\lambda}(w^*)`, :math:`w^*` the pFedMe optimum
  (``moreau.fl.fedprox_optimum``: the same problem);
* Per-FedAvg (α): :math:`w_i = w^* - \alpha\nabla f_i(w^*)`, :math:`w^*` the minimiser of the
  MAML objective :math:`\frac1m\sum_i f_i(w - \alpha\nabla f_i(w))` — on quadratics a quadratic
  with :math:`A_i' = (I-\alpha A_i)A_i(I-\alpha A_i)`, :math:`b_i' = (I-\alpha A_i)^2 b_i`
  (``moreau.fl.global_train`` on it);
* GlobalTrain / FedAvg's fixed point with one local step: one model for every client;
* LocalTrain: each client's own minimiser :math:`\hat w_i` (no collaboration).

Measured: the personalisation gap :math:`\frac1m\sum_i\|\text{model}_i - \hat w_i\|^2` (distance to
each client's own optimum) and the statistical error :math:`\frac1m\sum_i\|\text{model}_i -
w_\star^{(i)}\|^2`, mean over ``--trials`` data sets (default 10, quick 3) per R.  Claims: methods
compared on the same data set per seed (paired t, Holm over the levels); the slope is fitted per
seed index across R (t over those slopes).

Curves over rounds (``curves``: at its ``R_levels``, the same seeds): the algorithms themselves
(``moreau.fl.fedavg`` with τ = 1, ``per_fedavg`` with the exact Hessian, ``pfedme`` with exact inner
solutions) approach those exact points; ``perfedavg-vs-pfedme-curves.csv`` (long format, one row
per round × method × seed × metric) and ``perfedavg-vs-pfedme-curves.png`` (mean and ``band`` over
seeds).  pFedMe with ``pfedme_R`` > 1 local rounds and a fixed η stops at a floor above its optimum
(docs/findings-catalogue.md, "Where the algorithms stop").
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau import data, fl

from ._curve_figures import curves_figure
from ._curves import check_band, columns, long_rows
from ._experiment import Experiment
from ._plot import figure, save
from ._verdicts import by_seed, paired

__all__ = ["EXPERIMENT", "METHODS", "methods"]


def methods(params):
    """``GlobalTrain``, Per-FedAvg at its α, pFedMe at each λ, ``LocalTrain``."""
    c = params["alpha_times_L"]
    alpha = "1/(2L)" if c == 0.5 else f"{c:g}/L"
    return (
        "GlobalTrain",
        f"Per-FedAvg α={alpha}",
        *[f"pFedMe λ={lam:g}" for lam in params["lam"]],
        "LocalTrain",
    )


def config(quick, trials):
    return {
        "seeds": trials or (3 if quick else 10),
        "m": 10,
        "n": 50,
        "d": 5,
        "mu": 1.0,
        "L": 4.0,
        "sigma": 0.5,
        "R_grid": np.logspace(-2, 1, 5 if quick else 13).tolist(),
        "lam": [15.0, 1.0],
        "alpha_times_L": 0.5,
        "slope_from_R": 0.3,
        "band": "std",
        "curves": {
            "R_levels": [0.1, 3.0],
            "rounds": 60 if quick else 200,
            "pfedme_R": 5,
            "pfedme_eta": 0.05,
            "pfedme_beta": 1.0,
            "perfedavg_beta": 0.2,
            "fedavg_eta": 0.25,
        },
    }


METHODS = methods(config(False, None))


def points(params):
    if sum(R >= params["slope_from_R"] for R in params["R_grid"]) < 2:
        raise ValueError(
            f"perfedavg-vs-pfedme fits a slope over R >= slope_from_R = {params['slope_from_R']:g}: "
            f"R_grid needs 2 such levels (got {params['R_grid']})"
        )
    check_band("perfedavg-vs-pfedme", params["band"])
    return [{"R": R, "seed": s} for R in params["R_grid"] for s in range(params["seeds"])] + [
        {"R": R, "seed": s, "curves": True}
        for R in params["curves"]["R_levels"]
        for s in range(params["seeds"])
    ]


def _maml_quadratic(f, alpha):
    r"""The Per-FedAvg objective of quadratic clients, exactly a quadratic: with M = I − αA,
    f(w − α∇f(w)) = ½wᵀ(MAM)w − (M²b)ᵀw + const."""
    A, b = np.asarray(f.A), np.asarray(f.b)
    M = np.eye(A.shape[-1]) - alpha * A
    return mo.Quadratic(M @ A @ M, (M @ M @ b[..., None])[..., 0])


def compute(params, point, rng):
    if point.get("curves"):
        return _curves(params, point, rng)
    P = data.least_squares(
        rng,
        m=params["m"],
        n=params["n"],
        d=params["d"],
        R=point["R"],
        mu=params["mu"],
        L=params["L"],
        sigma=params["sigma"],
    )
    f, ws = P.objective, np.asarray(P.w_star)
    w_hat = np.asarray(fl.local_train(f))
    alpha = params["alpha_times_L"] / params["L"]
    w_maml = np.asarray(fl.global_train(_maml_quadratic(f, alpha)))
    models = {
        "GlobalTrain": np.broadcast_to(np.asarray(fl.global_train(f)), w_hat.shape),
        methods(params)[1]: w_maml - alpha * np.asarray(f.grad(np.broadcast_to(w_maml, w_hat.shape))),
        "LocalTrain": w_hat,
    }
    for lam in params["lam"]:
        models[f"pFedMe λ={lam:g}"] = np.asarray(fl.fedprox_optimum(f, lam)[1])
    return [
        {
            "R": point["R"],
            "seed": point["seed"],
            "method": k,
            "gap_to_client_optimum": float(np.mean(np.sum((v - w_hat) ** 2, axis=-1))),
            "statistical_error": float(np.mean(np.sum((v - ws) ** 2, axis=-1))),
        }
        for k, v in models.items()
    ]


def _mean(rows, method, key):
    Rs = sorted({r["R"] for r in rows})
    return np.array(Rs), np.array(
        [np.mean([r[key] for r in rows if r["R"] == R and r["method"] == method]) for R in Rs]
    )


def _curves(params, point, rng):
    """The algorithms over rounds on one data set (long rows): FedAvg with one local step (its fixed
    point is GlobalTrain), Per-FedAvg (exact Hessian, τ = 1), pFedMe (exact inner solutions, its
    personalised models the certified prox of w_t) at each λ; each method's models to its own exact
    optimum, to every client's optimum and to the true models, and the clients' mean objective."""
    c, names = params["curves"], methods(params)
    P = data.least_squares(
        rng,
        m=params["m"],
        n=params["n"],
        d=params["d"],
        R=point["R"],
        mu=params["mu"],
        L=params["L"],
        sigma=params["sigma"],
    )
    f, ws = P.objective, np.asarray(P.w_star)
    w_hat = np.asarray(fl.local_train(f))
    alpha = params["alpha_times_L"] / params["L"]
    w_maml = np.asarray(fl.global_train(_maml_quadratic(f, alpha)))
    T = c["rounds"]
    runs = {
        "FedAvg τ=1 (→ GlobalTrain)": (
            np.asarray(fl.fedavg(f, eta=c["fedavg_eta"], tau=1, rounds=T).w_global),
            np.asarray(fl.global_train(f)),
        ),
        names[1]: (
            np.asarray(fl.per_fedavg(f, alpha=alpha, beta=c["perfedavg_beta"], tau=1, rounds=T).theta),
            w_maml - alpha * np.asarray(f.grad(np.broadcast_to(w_maml, w_hat.shape))),
        ),
    }
    for lam in params["lam"]:
        h = fl.pfedme(
            f, lam=lam, eta=c["pfedme_eta"], beta=c["pfedme_beta"], R=c["pfedme_R"], rounds=T, inner="exact"
        )
        runs[f"pFedMe λ={lam:g}"] = (np.asarray(h.theta), np.asarray(fl.fedprox_optimum(f, lam)[1]))
    rows = []

    def sq(models, ref):  # per round, the mean over clients of |model - ref|^2
        return np.mean(np.sum((models - ref) ** 2, axis=-1), axis=-1)

    for name, (models, opt) in runs.items():
        models = np.broadcast_to(models[:, None, :] if models.ndim == 2 else models, (T + 1,) + w_hat.shape)
        rows += long_rows(
            {
                "distance_to_optimum": sq(models, opt),
                "gap_to_client_optimum": sq(models, w_hat),
                "statistical_error": sq(models, ws),
                "train_loss": np.mean(np.asarray(f.value(models)), axis=-1),
            },
            method=name,
            seed=point["seed"],
            R=point["R"],
        )
    return rows


CURVE_METRICS = {
    "distance_to_optimum": "(1/m) sum_i ||model_i,t - model_i*||^2: to the exact fixed point of the method "
    "(FedAvg tau=1: GlobalTrain; Per-FedAvg: one alpha-step from the MAML minimiser; pFedMe: "
    "the prox of its optimum, moreau.fl.fedprox_optimum)",
    "gap_to_client_optimum": "(1/m) sum_i ||model_i,t - w^_i||^2: to each client's own minimiser",
    "statistical_error": "(1/m) sum_i ||model_i,t - w*^(i)||^2: to each client's true model",
    "train_loss": "(1/m) sum_i f_i(model_i,t): the clients' mean training objective",
}


def finish(rows, params, out, seed=0, quick=False):
    curve_rows = [r for r in rows if "metric" in r]
    rows = [r for r in rows if "metric" not in r]
    names = methods(params)
    fig, ax = figure(2, width=6.8, aspect=0.78)
    styles = {**{m: "o--" for m in names}, names[0]: "D-", names[1]: "^-", names[2]: "o-", names[-1]: "s-"}
    for a, key, lab, tag in zip(
        ax[0],
        ("gap_to_client_optimum", "statistical_error"),
        (
            r"$\frac{1}{m}\sum_i\|\mathrm{model}_i-\hat w_i\|^2$",
            r"$\frac{1}{m}\sum_i\|\mathrm{model}_i-w_\star^{(i)}\|^2$",
        ),
        "ab",
        strict=True,
    ):
        for k, meth in enumerate(names):
            if key == "gap_to_client_optimum" and meth == "LocalTrain":
                continue  # zero by definition
            R, v = _mean(rows, meth, key)
            a.loglog(R, v, styles[meth], color=f"C{k}", label=meth)
        a.set(
            xlabel=r"heterogeneity $R=\|w_\star^{(i)}-w_\star^{(g)}\|$",
            ylabel=lab,
            title=f"({tag}) {'distance to each client optimum' if tag == 'a' else 'statistical error'}",
        )
        a.legend(loc="upper left")
    figures = save(fig, out, "perfedavg-vs-pfedme", quick)
    curve_names = ["FedAvg τ=1 (→ GlobalTrain)", names[1], *[f"pFedMe λ={lam:g}" for lam in params["lam"]]]
    panels = [({"R": R}, f"({'abcd'[i]}) R = {R:g}") for i, R in enumerate(params["curves"]["R_levels"])]
    figures += curves_figure(
        curve_rows,
        panels,
        [
            (k, lab, True)
            for k, lab in (
                ("distance_to_optimum", "to the method's exact optimum"),
                ("gap_to_client_optimum", "to each client's optimum"),
                ("train_loss", "training objective"),
            )
        ],
        curve_names,
        params["band"],
        out,
        "perfedavg-vs-pfedme-curves",
        quick,
        suptitle=f"over rounds (pFedMe with R = {params['curves']['pfedme_R']} local rounds "
        "stops short of its optimum: a fixed eta with R > 1, see Findings)",
    )
    alpha_ok = 0 <= params["alpha_times_L"] <= 1
    grid = {"R": "heterogeneity R = ||w*^(i) - w*^(g)||"}
    return {
        "figures": figures,
        "claims": _claims(rows, params, names),
        "tables": {"perfedavg-vs-pfedme": rows, "perfedavg-vs-pfedme-curves": curve_rows},
        "columns": {"perfedavg-vs-pfedme-curves.csv": columns(CURVE_METRICS, grid)},
        "theorems": {
            "perfedavg.lemma4_2": {"assumptions": {"alpha in [0, 1/L]": alpha_ok}},
            "pfedme.prop1": {"assumptions": {"clients mu-strongly convex (lambda > 0 any)": True}},
        },
    }


def _claims(rows, params, names):
    glob, pa, pf = names[0], names[1], names[2]
    lam = params["lam"][0]
    Rs = sorted({r["R"] for r in rows})
    gap = {m: [by_seed(rows, "gap_to_client_optimum", method=m, R=R) for R in Rs] for m in names}
    means = {m: np.array([g.mean() for g in gap[m]]) for m in names}
    big = [i for i, R in enumerate(Rs) if R >= params["slope_from_R"]]
    what = (
        f"GlobalTrain's personalisation gap grows like R^2 (slope of log gap against log R, R >= "
        f"{params['slope_from_R']:g}, within 2 +- 0.2; value: slope of the mean curve)"
    )
    x = np.log(np.array(Rs)[big])
    slope = float(np.polyfit(x, np.log(means[glob][big]), 1)[0])
    per_seed = np.polyfit(x, np.log(np.stack([gap[glob][i] for i in big])), 1)[0]  # (seeds,)
    grows = paired(
        what,
        [per_seed - 1.8, 2.2 - per_seed],
        ["slope − 1.8", "2.2 − slope"],
        value=slope,
        kind="t (per-seed fitted slopes)",
    )
    below = [(f"R={R:g}: {glob} − {m}", gap[glob][i] - gap[m][i]) for m in (pf, pa) for i, R in enumerate(Rs)]
    closer = [(f"R={R:g}: {pa} − {pf}", gap[pa][i] - gap[pf][i]) for i, R in enumerate(Rs)]
    return [
        grows,
        paired(
            f"pFedMe (lambda = {lam:g}) and Per-FedAvg personalise: gap below GlobalTrain's at every R",
            [d for _, d in below],
            [n for n, _ in below],
        ),
        paired(
            f"pFedMe's ordering (its Table 1: pFedMe-PM ahead of Per-FedAvg) on quadratics: pFedMe (lambda = "
            f"{lam:g}) closer to every client's optimum than {pa} at every R (value: gap ratio of the means)",
            [d for _, d in closer],
            [n for n, _ in closer],
            value=(means[pf] / means[pa]).tolist(),
        ),
    ]


EXPERIMENT = Experiment(
    name="perfedavg-vs-pfedme",
    paper="pFedMe and Per-FedAvg",
    figure="none (personalisation on quadratics)",
    summary="distance of each method's personalised models to every client's optimum as heterogeneity grows "
    "(pFedMe, Per-FedAvg, GlobalTrain, LocalTrain; exact on quadratics)",
    expected=("~2 s", "~4 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
)
