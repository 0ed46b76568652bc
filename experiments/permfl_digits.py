r"""``permfl-digits``: PerMFL (Paper II of the Dadras thesis) against FedAvg and pFedMe on the 8×8 digits.

The paper's experiments (MNIST, FMNIST, EMNIST, FEMNIST, CIFAR100, Synthetic) cannot be run here; the
stand-in is ``pfedme-digits``'s: scikit-learn's 1,797 digits (64 pixels / 16 and an intercept), N = 20
devices with 2 labels each (pFedMe's MNIST split), 75/25 train/test per device, multinomial
logistic regression with ridge μ = 0.01 (ours: the authors' code has no weight decay, so its MLR is
not strongly convex).  Teams: M = 4 teams of 5 consecutive devices (the code's sequential team
division, ``group_division 0``; consecutive devices share a label, so teams have structure).

PerMFL's settings are the paper's EMNIST-10 cell as a third-party report on the authors' code
quotes them (the paper's text was not available here): λ = 0.5, γ = 1.5, β = 0.6, α = 0.01,
K = 10 team rounds, L = 20 local steps, T = 400 global rounds, full participation; η = 0.03 is the
code's default (reconstructed).  The code's device batch of 124 exceeds every device's training
set here (~67 rows), and its DataLoader then yields the whole set: full gradients (``batch``: None).
Two PerMFL runs per seed: eq. (4.3)'s device weight λ_d = λ, and the code's λ_d = L = 20 (its
positional-argument shift, ``moreau.fl.permfl(lam_device=L)``).  Baselines with pFedMe's Table 1 MNIST
settings (``pfedme-digits``): FedAvg (η = 0.02, 20 local steps, |D| = 20) and pFedMe (λ = 15, η = 0.01,
β = 2, R = 20, K = 5, |D| = 20, inner step 1/(L_i + λ)), every device in every round.  Accuracy:
correct test predictions of all devices over their test samples: PerMFL's personalised device models
(PM), team models on their devices (TM), global model (GM).  ``permfl-digits.csv`` holds the curves
over rounds (every round; test accuracy and the training objective, long format), the figure
``permfl-digits-curves`` draws them, and ``permfl-digits-table.csv`` has per method and seed the last
round and the best round on test (which leaks the test set; there is no validation split here).
The bars and the claims are on the last round.
--quick: T = 10, 2 seeds.

Claims (the paper's, as its summaries state them): the personalised models beat the global one;
PerMFL's personalised models beat the state of the art (here FedAvg and pFedMe-PM).  Paired t
intervals over seeds (the same data set per seed), Holm over an ordering
(``moreau.experiments._verdicts``).
"""

from __future__ import annotations

import numpy as np

from moreau.fl._permfl import permfl

from . import _pfedme_runs as runs
from ._curve_figures import curves_figure
from ._curves import LAST, SELECTION_COLUMNS, columns, long_rows, selections
from ._experiment import Experiment
from ._plot import figure, save
from ._verdicts import by_seed, paired
from .pfedme_digits import digits, split

__all__ = ["EXPERIMENT", "METHODS"]

#: "Local only": each device trains alone (FedAvg's η, τ and batch per round, no communication): what
#: local training without any federation gives, beside the personalised models
METHODS = (
    "PerMFL-PM",
    "PerMFL-TM",
    "PerMFL-GM",
    "PerMFL-PM (code: λ_d = L)",
    "FedAvg",
    "pFedMe-PM",
    "Local only",
)


def config(quick, trials):
    return {
        "seeds": trials or (2 if quick else 5),
        "rounds": 10 if quick else 400,
        "n_clients": 20,
        "teams": 4,
        "mu": 0.01,
        "n_classes": 10,
        "train_fraction": 0.75,
        "permfl": {
            "lam": 0.5,
            "gamma": 1.5,
            "beta": 0.6,
            "alpha": 0.01,
            "eta": 0.03,
            "K": 10,
            "L": 20,
            "batch": None,
        },
        "fedavg": {"eta": 0.02, "tau": 20, "batch": 20},
        "pfedme": {"lam": 15.0, "eta": 0.01, "beta": 2.0, "R": 20, "K": 5, "batch": 20},
    }


def points(params):
    if params["n_clients"] % params["teams"]:
        raise ValueError(
            f"permfl-digits splits n_clients = {params['n_clients']} devices into teams = "
            f"{params['teams']} teams of equal size: teams must divide n_clients"
        )
    return [{"seed": s} for s in range(params["seeds"])]


def compute(params, point, rng):
    X, y = digits()
    N, C, mu = params["n_clients"], params["n_classes"], params["mu"]
    train, test = split(X, y, N, rng, params["train_fraction"])
    Xt, yt, wt = train
    Y = (yt[..., None] == np.arange(C)).astype(float)
    n = wt.sum(axis=-1).astype(np.int64)
    f = runs.objective(Xt, Y, n, mu)
    teams = np.arange(N) // (N // params["teams"])

    def acc(model):
        return 100 * runs.accuracy(*test, np.asarray(model))

    p = params["permfl"]
    kw = dict(
        lam=p["lam"],
        gamma=p["gamma"],
        alpha=p["alpha"],
        eta=p["eta"],
        beta=p["beta"],
        K=p["K"],
        L=p["L"],
        rounds=params["rounds"],
        batch_size=p["batch"],
        rng=rng,
    )
    T = params["rounds"]
    curves = {}  # {method: {metric: (T+1,)}}, every round 0..T

    def models_curve(method, models):  # models[t]: (m, D) per-device or (D,) global, t = 0..T
        curves[method] = {
            "test_accuracy": [acc(z) for z in models],
            "train_loss": [_train_loss(f, np.asarray(z)) for z in models],
        }

    h = permfl(f, teams, **kw)
    W_team = np.asarray(h.w_team)
    models_curve("PerMFL-PM", np.asarray(h.theta))
    models_curve("PerMFL-TM", W_team[:, teams])
    models_curve("PerMFL-GM", np.asarray(h.w_global))
    models_curve(
        "PerMFL-PM (code: λ_d = L)", np.asarray(permfl(f, teams, lam_device=float(p["L"]), **kw).theta)
    )
    fa, pf = params["fedavg"], params["pfedme"]
    seen = {"FedAvg": [], "pFedMe-PM": [], "Local only": []}

    def keep(method, personal_model):
        def record(t, w, personal):
            seen[method].append(np.array(personal() if personal_model else w))

        return record

    runs.fedavg(
        rng, Xt, Y, n, mu, eta=fa["eta"], tau=fa["tau"], rounds=T, B=fa["batch"], record=keep("FedAvg", False)
    )
    runs.pfedme(
        rng,
        Xt,
        Y,
        n,
        mu,
        lam=pf["lam"],
        eta=pf["eta"],
        beta=pf["beta"],
        R=pf["R"],
        K=pf["K"],
        inner_eta="client",
        rounds=T,
        B=pf["batch"],
        f=f,
        record=keep("pFedMe-PM", True),
    )
    (local_rng,) = rng.spawn(1)  # its own stream: the methods above draw exactly as without it
    runs.local_only(
        local_rng,
        Xt,
        Y,
        n,
        mu,
        eta=fa["eta"],
        tau=fa["tau"],
        rounds=T,
        B=fa["batch"],
        record=keep("Local only", True),
    )
    for method, models in seen.items():
        models_curve(method, models)
    L_max = float(np.max(np.asarray(f.smoothness())))
    return [
        {**r, "L_max": L_max} for m in METHODS for r in long_rows(curves[m], method=m, seed=point["seed"])
    ]


def _train_loss(f, z):
    """(1/m) sum_j f_j(z_j): the devices' training objective at their models ``z`` ``(m, D)`` or at one
    global model ``(D,)`` (eq. (4.3)'s weights 1/(M N_i) with teams of equal size)."""
    Z = np.broadcast_to(z, (f.X.shape[0], z.shape[-1]))
    return float(np.mean(np.asarray(f.value(Z))))


#: the long CSV's metrics (one row per round, method, seed and metric)
METRICS = {
    "test_accuracy": "test accuracy (%): correct predictions of all devices' test rows together",
    "train_loss": "training objective (1/m) sum_j f_j(model_j) (cross-entropy + mu/2 ||theta||^2; eq. (4.3)'s "
    "weights, the teams being of equal size)",
}


def finish(rows, params, out, seed=0, quick=False):
    table = selections(rows, METHODS)
    acc = {m: by_seed(table, "test_accuracy", method=m, selection=LAST) for m in METHODS}
    mean = {m: float(np.mean(a)) for m, a in acc.items()}
    fig, ax = figure(1, width=4.2, aspect=0.7)
    x = np.arange(len(METHODS))
    ax[0][0].bar(
        x,
        [mean[m] for m in METHODS],
        yerr=[np.std(acc[m], ddof=1) if acc[m].size > 1 else 0 for m in METHODS],
        color=[f"C{k}" for k in x],
        capsize=3,
    )
    ax[0][0].text(
        0.01,
        0.98,
        f"bars: mean over {len(next(iter(acc.values())))} seeds; error bars: ±1 std over seeds",
        transform=ax[0][0].transAxes,
        fontsize=5,
        va="top",
    )
    ax[0][0].set_xticks(x, [m.replace(" (", "\n(") for m in METHODS], fontsize=5)
    sd = [np.std(acc[m], ddof=1) if acc[m].size > 1 else 0.0 for m in METHODS]
    lo = min(mean[m] - s for m, s in zip(METHODS, sd, strict=True))
    hi = max(mean[m] + s for m, s in zip(METHODS, sd, strict=True))
    pad = max(0.5, 0.15 * (hi - lo))  # the data's range, not 0-105 %: spreads of a few points stay visible
    ax[0][0].set(
        ylabel="test accuracy (%)",
        ylim=(max(0.0, lo - pad), min(100.0, hi + pad)),
        title=f"digits 8×8, {params['n_clients']} devices in {params['teams']} teams, T = {params['rounds']}",
    )
    figures = save(fig, out, "permfl-digits", quick)
    figures += curves_figure(
        rows,
        [({}, f"digits 8×8, {params['n_clients']} devices in {params['teams']} teams")],
        [("test_accuracy", "test accuracy (%)", False), ("train_loss", "training objective", True)],
        METHODS,
        "std",
        out,
        "permfl-digits-curves",
        quick,
        table=table,
    )
    pm = "PerMFL-PM"

    def ahead(pairs):
        return [acc[a] - acc[b] for a, b in pairs], [f"{a} − {b}" for a, b in pairs]

    claims = [
        paired(
            "PerMFL's personalised models beat its global model (value: mean accuracies, %, with the code's "
            "lam_device = L run)",
            *ahead([(pm, "PerMFL-GM")]),
            value={m: mean[m] for m in (pm, "PerMFL-GM", "PerMFL-PM (code: λ_d = L)")},
            units=" points",
        ),
        paired(
            "PerMFL's personalised models beat FedAvg and pFedMe-PM (value: mean accuracies, %)",
            *ahead([(pm, "FedAvg"), (pm, "pFedMe-PM")]),
            value={m: mean[m] for m in (pm, "FedAvg", "pFedMe-PM")},
            units=" points",
        ),
    ]
    p = params["permfl"]
    L_max = max(r["L_max"] for r in rows)
    theorems = {
        "permfl.thm1": {
            "assumptions": {
                "f_ij strongly convex (ridge mu > 0, ours)": params["mu"] > 0,
                "alpha <= 1/(L + lam)": p["alpha"] <= 1 / (L_max + p["lam"]),
                "eta <= 1/(lam + gamma)": p["eta"] <= 1 / (p["lam"] + p["gamma"]),
                "beta <= 1/gamma": p["beta"] <= 1 / p["gamma"],
                "full gradients": p["batch"] is None,
            }
        },
        "permfl.thm2": {
            "assumptions": {
                "gamma > 2 lam": p["gamma"] > 2 * p["lam"],
                "lam > 2L (L the devices' smoothness)": p["lam"] > 2 * L_max,
            }
        },
    }
    L_col = {
        "L_max": "the largest device smoothness bound L of the seed's data (Theorem 1's alpha condition)"
    }
    return {
        "figures": figures,
        "claims": claims,
        "theorems": theorems,
        "tables": {"permfl-digits-table": table},
        "columns": {
            "permfl-digits.csv": {**columns(METRICS), **L_col},
            "permfl-digits-table.csv": SELECTION_COLUMNS,
        },
    }


EXPERIMENT = Experiment(
    name="permfl-digits",
    paper="PerMFL (Dadras thesis, Paper II)",
    figure="personalised vs global accuracy (EMNIST-10 settings; digits stand-in)",
    summary="PerMFL (personalised, team, global models; eq. (4.3) and the authors' code's device weight) against "
    "FedAvg and pFedMe on scikit-learn's 8x8 digits, 20 devices in 4 teams",
    expected=("~15 s", "~20 min"),  # measured, one worker: quick 2 seeds 15 s; full 220 s per seed
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    notes=("n_classes",),
)
