r"""``perfedavg-table1``: Per-FedAvg's Table 1 (FedAvg + update, Per-FedAvg (FO), Per-FedAvg (HF)) on the
digits stand-in with multinomial logistic regression.

**A stand-in, not the paper's models.** The paper trains a neural network (two hidden layers, 80
and 60 units, ELU) on MNIST and CIFAR-10; this is scikit-learn's 8×8 digits (1,797 images, 64
pixels scaled to [0, 1] plus an intercept; extra ``digits``) with multinomial logistic regression
(ridge μ = 0.01), a convex model.  The paper's numbers are drawn beside ours for orientation only.

Data, Per-FedAvg §5 / Appendix I (Table 2) scaled to the digits: N = 20 users; half of them hold
``a`` images of *each* of the first five classes (0–4), the other half ``a/2`` images of *one* of
the first five classes and ``2a`` of *one* of the other five (5–9), those classes balanced over the
users (each class drawn by ``N/10`` users, the pairing shuffled per seed).  The paper has n = 50
users and a = 196 (MNIST); the digits' ~178 images per class allow a ≤ 6 for 50 users, so N = 20
and a = 14 (users of 70 and 35 images).  Each user's images of each class are split 75/25 into
train and test (the paper: "the test data [divided] over the nodes with the same distribution as
the one for the training data"), and 20 % of each user's training rows are held out for validation
(``validation_fraction``; never trained on).

Algorithms (``moreau.fl``), K = ``rounds`` rounds from w = 0, S = r·N = 4 users per round (r =
0.2), τ local steps (``taus``: Table 1's MNIST rows τ = 10 and τ = 4), learning rate β = 0.001:

* FedAvg: ``moreau.fl.fedavg`` (η = β, τ mini-batch steps, batch without replacement);
* Per-FedAvg (FO): ``moreau.fl.per_fedavg(variant="first_order")``, α of the row, batches D = D';
* Per-FedAvg (HF): ``moreau.fl.per_fedavg(variant="hessian_free")``, D = D' = D'' and δ =
  ``delta`` (not stated in the paper; moreau.fl divides the gradient difference by 2δ, Appendix
  H's eq. (119)–(120), where the §5 text writes δ).

Batches: the paper's D = D' = 40 exceeds the smallest user's training rows here (21), and
``moreau.fl.fedavg`` samples without replacement, so every method uses ``batch`` = 20 rows
(Per-FedAvg draws with replacement, as its Lemma 4.3 assumes).

Evaluation (the paper's protocol, §5: "we take the output of the FedAvg method, and update it with
one step of stochastic gradient descent ... and then evaluate its performance"; the same for both
Per-FedAvg variants; "the average test accuracy among all users"): at each evaluated round the
global model w of each method is adapted per user by one stochastic gradient step of size α (the
row's α) on a mini-batch of ``batch`` rows drawn with replacement, :math:`\theta_i = w - \alpha
\tilde\nabla f_i(w, \mathcal B_i)` (:math:`f_i` the user's mean cross-entropy plus the ridge), and
the reported accuracy is the mean over users of each user's accuracy (%) on its own test rows.
``adapt_on = "train"`` (default) draws :math:`\mathcal B_i` from the user's training rows; the
paper's text says the FedAvg step is taken "with respect to the test data": ``adapt_on = "test"``
draws it from the rows being evaluated (test rows for the test accuracy, validation rows for the
validation accuracy), which leaks them.  The adaptation batches of a round are the same for every
method (common random numbers: the comparisons are paired).  Also recorded: the accuracy of the
global model before the step and the training objective of the adapted models.

Local only (the baseline beside every personalisation experiment): each user trains alone from 0,
τ mini-batch steps of size β per round (FedAvg's), no communication, on its own random stream (the
other methods' numbers are unchanged); evaluated by the same protocol on its per-user models (one
step of size α from them; "before update": the user's own model).  It is in the curves, the tables,
the summary and the figures, not in the claims.

Outputs: the curves (long CSV, every ``eval_every`` rounds), ``perfedavg-table1-table.csv``
(last round, best round on validation, best round on test per method, seed and row) and
``perfedavg-table1-summary.csv`` (mean and 95 % t interval over seeds beside the paper's value
± its 95 % interval: the paper reports its intervals without saying over what); the bar figure draws
the same 95 % t intervals, the curves figure the ``band`` over seeds (``std`` by default).  Claims (decided
on the last round, paired t over the seeds, Holm within a claim): Table 1's MNIST ordering
HF > FO > FedAvg at every row (the MNIST rows are strictly ordered so; on CIFAR-10 FO falls below
FedAvg at τ = 4, which is not claimed here); "Per-FedAvg (HF) outperforms FedAvg in all cases" (the
paper's summary); "decreasing τ leads to a decrease in the performance of all three algorithms"
(its observation (i)).  ``PAPER`` holds the whole Table 1 as transcribed in the paper's text (the
MNIST rows there read α = 0.01).
Full mode: the paper's K = 1000, β = 0.001, r = 0.2, τ ∈ {10, 4}, α = 0.01; differs in the data
(digits, N = 20, a = 14), the model (MLR) and the batch (20, not 40).  --quick: 100 rounds, 2 seeds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

from moreau import Multinomial

from . import _partial
from ._curve_figures import curves_figure, legend, selection_bars
from ._curves import LAST, SELECTION_COLUMNS, band_label, check_band, columns, long_rows, selections
from ._deviations import differing
from ._evaluate import hold_out
from ._experiment import Experiment
from ._perfedavg_runs import LOCAL, METHODS, SHOWN, Evaluator, run_local_only, run_method, split
from ._pfedme_user import check_methods, deviation_lines, trained_models
from ._plot import figure, save
from ._verdicts import by_seed, paired

__all__ = ["EXPERIMENT", "METHODS", "PAPER", "STAND_IN", "split"]

STAND_IN = (
    "digits 8x8 stand-in with multinomial logistic regression (the paper uses neural networks on "
    "MNIST/CIFAR-10)"
)

#: Per-FedAvg Table 1 (test accuracy %, ± its 95 % interval), as transcribed in the paper's text:
#: (data set, tau, alpha) -> {method: (mean, half-width)}
PAPER = {
    ("MNIST", 10, 0.01): {
        "FedAvg + update": (75.96, 0.02),
        "Per-FedAvg (FO)": (78.00, 0.02),
        "Per-FedAvg (HF)": (79.85, 0.02),
    },
    ("MNIST", 4, 0.01): {
        "FedAvg + update": (60.18, 0.02),
        "Per-FedAvg (FO)": (64.55, 0.02),
        "Per-FedAvg (HF)": (70.94, 0.03),
    },
    ("CIFAR-10", 10, 0.001): {
        "FedAvg + update": (40.49, 0.07),
        "Per-FedAvg (FO)": (46.98, 0.1),
        "Per-FedAvg (HF)": (50.44, 0.15),
    },
    ("CIFAR-10", 4, 0.001): {
        "FedAvg + update": (38.38, 0.07),
        "Per-FedAvg (FO)": (34.04, 0.08),
        "Per-FedAvg (HF)": (43.73, 0.11),
    },
    ("CIFAR-10", 4, 0.01): {
        "FedAvg + update": (35.97, 0.17),
        "Per-FedAvg (FO)": (25.32, 0.18),
        "Per-FedAvg (HF)": (46.32, 0.12),
    },
    ("CIFAR-10, diff. hetero.", 4, 0.01): {
        "FedAvg + update": (58.59, 0.11),
        "Per-FedAvg (FO)": (37.71, 0.23),
        "Per-FedAvg (HF)": (71.25, 0.05),
    },
}

DIGITS_FEWEST = 174  # images of the digits' rarest class (8); the others have 177-183
METRICS = {
    "test_accuracy": "mean over users of each user's test accuracy (%) after one stochastic gradient step of size "
    "alpha from the global model (the paper's evaluation; adapt_on says on which rows)",
    "validation_accuracy": "the same on the validation rows held out of each user's training rows",
    "test_accuracy_before_update": "mean over users of each user's test accuracy (%) of the global model itself "
    "(no step; Local only: the user's own model)",
    "train_loss": "training objective of the adapted models: sum_i n_i f_i(theta_i) / sum_i n_i (cross-entropy "
    "+ mu/2 ||theta_i||^2)",
}
GRID = {
    "tau": "local steps per round (Table 1's tau)",
    "alpha": "Per-FedAvg's step alpha, also the step of the one-step update at evaluation (Table 1's alpha)",
}


def config(quick, trials):
    return {
        "seeds": trials or (2 if quick else 5),
        "rounds": 100 if quick else 1000,
        "n_clients": 20,
        "a": 14,
        "train_fraction": 0.75,
        "validation_fraction": 0.2,
        "S": 4,
        "batch": 20,
        "beta": 0.001,
        "taus": [10, 4],
        "alphas": [0.01],
        "delta": 0.001,
        "mu": 0.01,
        "adapt_on": "train",
        "eval_every": 5 if quick else 20,
        "band": "std",
        "methods": [],
        "method_args": {},
        "data": STAND_IN,
    }


#: the paper's values of the settings that can be compared by value: {key: (paper, words)}
PAPER_SETTINGS = {
    "n_clients": (50, "users N"),
    "a": (196, "images per class a"),
    "batch": (40, "batch |D| = |D'|"),
    "rounds": (1000, "rounds K"),
    "beta": (0.001, "beta"),
    "validation_fraction": (0, "validation share held out of training rows"),
}


def deviations(params):
    """How a run with ``params`` differs from Per-FedAvg §5 (one line each; module doc)."""
    out = [
        "data and model: digits 8x8 with multinomial logistic regression (paper: MNIST/CIFAR-10, "
        "neural network 80-60 ELU)"
    ]
    out += differing(params, PAPER_SETTINGS)
    if params["S"] * 5 != params["n_clients"]:
        out.append(f"users per round r = S/N = {params['S'] / params['n_clients']:g} (paper: 0.2)")
    if params["adapt_on"] != "test":
        out.append("one-step update on each user's training rows (paper: on the test data)")
    return out + deviation_lines(params)


def _smallest_train(params):
    """Training rows (after the validation hold-out) of the smallest user: one of a/2 + 2a images."""
    a, tf = params["a"], params["train_fraction"]
    tr = math.floor(tf * (a // 2)) + math.floor(tf * 2 * a)
    return min(tr, 5 * math.floor(tf * a)) - math.floor(params["validation_fraction"] * tr)


def points(params):
    name = "perfedavg-table1"
    check_band(name, params["band"])
    N, a = params["n_clients"], params["a"]
    if N % 2 or a % 2:
        raise ValueError(
            f"{name}: n_clients and a must be even (half the users hold a/2 images of a class; "
            f"got n_clients = {N}, a = {a})"
        )
    need = max((N // 2) * a + math.ceil(N / 10) * (a // 2), math.ceil(N / 10) * 2 * a)
    if need > DIGITS_FEWEST:
        raise ValueError(
            f"{name}: n_clients = {N} and a = {a} need {need} images of a class; the digits have "
            f"{DIGITS_FEWEST} of the rarest (lower a or n_clients)"
        )
    if not 0 < params["train_fraction"] < 1 or not 0 <= params["validation_fraction"] <= 0.5:
        raise ValueError(f"{name}: train_fraction must be in (0, 1) and validation_fraction in [0, 0.5]")
    if params["S"] > N:
        raise ValueError(f"{name}: S = {params['S']} users per round exceeds n_clients = {N}")
    small = _smallest_train(params)
    if params["batch"] > small:
        raise ValueError(
            f"{name}: batch = {params['batch']} exceeds the smallest user's {small} training rows "
            "(moreau.fl.fedavg samples without replacement)"
        )
    if params["beta"] <= 0 or params["delta"] <= 0 or params["mu"] < 0 or min(params["alphas"]) < 0:
        raise ValueError(f"{name}: beta and delta must be > 0, mu and alphas >= 0")
    if params["adapt_on"] not in ("train", "test"):
        raise ValueError(f"{name}: adapt_on must be 'train' or 'test' (got {params['adapt_on']!r})")
    if params["eval_every"] > params["rounds"]:
        raise ValueError(f"{name}: eval_every = {params['eval_every']} exceeds rounds = {params['rounds']}")
    check_methods(name, params, SHOWN)
    return [{"seed": s} for s in range(params["seeds"])]


def compute(params, point, rng):
    from .pfedme_digits import digits

    X, y = digits()
    data_rng, split_rng, key_rng = rng.spawn(3)
    train, test = split(X, y, params["n_clients"], params["a"], data_rng, params["train_fraction"])
    parts = {"test": test}
    if params["validation_fraction"] > 0:
        train, parts["validation"] = hold_out(split_rng, *train, params["validation_fraction"])
    parts["train"] = train
    f = Multinomial(train[0], train[1], n_classes=10, mu=params["mu"], weights=train[2])
    key, train_seed = (int(v) for v in key_rng.integers(0, 2**62, size=2))
    # Local only's stream: spawned after the others, so it changes none of their draws
    local_seed = int(rng.spawn(1)[0].integers(0, 2**62))
    # resumable within the seed (moreau.experiments._partial): the runs finished, the running one's state
    store = _partial.current()
    saved = store.load()  # {"stage", "round", "rows", "model"} or None
    rows = [] if saved is None else saved["rows"]
    shown, T = (*METHODS, LOCAL), params["rounds"]
    stages = [(tau, alpha, method) for tau, alpha in _rows(params) for method in shown]
    for k, (tau, alpha, method) in enumerate(stages):
        if saved is not None and saved["stage"] > k:
            continue  # finished before the interruption: its rows are in ``rows``
        start = None if saved is None else (saved["round"], saved["model"])
        saved = None

        def save(t, model, k=k, rows=rows):
            store.offer(
                k * T + t, len(stages) * T, lambda: {"stage": k, "round": t, "rows": rows, "model": model()}
            )

        evaluate = Evaluator(key, parts, params, alpha)
        if method == LOCAL:
            g = np.random.default_rng(local_seed)
            ts, values = run_local_only(train, g, params, tau, evaluate, start=start, save=save)
        else:  # each method from the same training seed (common random numbers)
            g = np.random.default_rng(train_seed)
            ts, values = run_method(method, f, g, params, tau, alpha, evaluate, start=start, save=save)
        rows += long_rows(values, method=method, seed=point["seed"], rounds=ts, tau=tau, alpha=alpha)
    return rows + _user_rows(rng, f, parts, key, params, point["seed"])


def _user_rows(rng, f, parts, key, params, seed):
    """Your methods (``--method``; ``moreau.experiments._pfedme_user``): trained once per seed on their own
    streams with their own hyperparameters, their models evaluated by each row's protocol (one step
    of size α from the global model, or from each user's own model)."""
    T, every = params["rounds"], params["eval_every"]
    ts = sorted(set(range(0, T + 1, every)) | {T})
    out = []
    for label, arr in trained_models(rng, f, params).items():
        for tau, alpha in _rows(params):
            evaluate = Evaluator(key, parts, params, alpha)
            values = {}
            for t in ts:
                for k, v in evaluate(t, arr[t]).items():
                    values.setdefault(k, []).append(v)
            out += long_rows(values, method=label, seed=seed, rounds=ts, tau=tau, alpha=alpha)
    return out


def _rows(params):
    return list(itertools.product(params["taus"], params["alphas"]))


def _paper_row(tau, alpha):
    """The MNIST row of Table 1 with this (tau, alpha), or None."""
    for (data_set, t, a), vals in PAPER.items():
        if data_set == "MNIST" and t == tau and math.isclose(a, alpha):
            return vals
    return None


def _summary(table, params, shown=SHOWN):
    """Mean and 95 % t interval over seeds per row, method and selection, beside the paper's value."""
    out = []
    for tau, alpha in _rows(params):
        paper = _paper_row(tau, alpha) or {}
        for method in shown:
            for what in dict.fromkeys(r["selection"] for r in table):
                v = np.array(
                    [
                        r["test_accuracy"]
                        for r in table
                        if r["tau"] == tau
                        and r["alpha"] == alpha
                        and r["method"] == method
                        and r["selection"] == what
                    ]
                )
                if not v.size:
                    continue
                half = (
                    float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
                    if v.size > 1
                    else None
                )
                p = paper.get(method)
                out.append(
                    {
                        "tau": tau,
                        "alpha": alpha,
                        "method": method,
                        "selection": what,
                        "seeds": int(v.size),
                        "mean": float(v.mean()),
                        "ci95_half_width": half,
                        "paper_data": "MNIST (neural network)" if p else None,
                        "paper_mean": p[0] if p else None,
                        "paper_ci95_half_width": p[1] if p else None,
                        "data": STAND_IN,
                    }
                )
    return out


SUMMARY_COLUMNS = {
    "tau": GRID["tau"],
    "alpha": GRID["alpha"],
    "method": "the algorithm (its global model after one update step; Local only: each user's own model "
    "after one update step, no communication)",
    "selection": SELECTION_COLUMNS["selection"],
    "seeds": "seeds averaged",
    "mean": "mean test accuracy (%) over seeds (ours: " + STAND_IN + ")",
    "ci95_half_width": "half-width of the 95 % t interval of the mean over seeds (empty with one seed)",
    "paper_data": "the data set of the paper's value beside ours (Table 1's MNIST row with the same tau and alpha)",
    "paper_mean": "the paper's Table 1 test accuracy (%)",
    "paper_ci95_half_width": "the paper's 95 % interval "
    "(half-width, %), as reported (the paper does not say over what)",
    "data": "what our numbers are: " + STAND_IN,
}


def finish(rows, params, out, seed=0, quick=False):
    kind = params["band"]
    shown = list(dict.fromkeys([*SHOWN, *(r["method"] for r in rows)]))  # the paper's, Local only, yours
    table = [r for tau, alpha in _rows(params) for r in selections(rows, shown, tau=tau, alpha=alpha)]
    summary = _summary(table, params, shown)
    grid = _rows(params)
    fig, ax = figure(len(grid), width=min(6.8, 3.4 * len(grid)) if len(grid) > 1 else 3.4, aspect=0.95)
    handles = []
    for k, (a, (tau, alpha)) in enumerate(zip(ax[0], grid, strict=True)):
        paper = _paper_row(tau, alpha)
        handles = (
            selection_bars(
                a,
                [r for r in table if r["tau"] == tau and r["alpha"] == alpha],
                shown,
                "ci95",
                paper={m: v[0] for m, v in paper.items()} if paper else None,
                paper_label="Per-FedAvg paper, Table 1 (MNIST, neural network; ±0.02-0.03 %)",
            )
            or handles
        )
        a.set(
            ylabel="test accuracy, one step (%)",
            title=f"({'abcdefgh'[k % 8]}) τ = {tau}, α = {alpha:g}, K = {params['rounds']}",
        )
    fig.suptitle(
        "Per-FedAvg Table 1 on the digits 8×8 stand-in, multinomial logistic regression\n"
        "(the paper: neural networks on MNIST/CIFAR-10)",
        fontsize=7,
    )
    S = len({r["seed"] for r in table})
    legend(fig, handles, band_label("ci95", S).replace("lines", "bars").replace("band", "error bars"), ncol=2)
    figures = save(fig, out, "perfedavg-table1", quick)
    panels = [
        ({"tau": tau, "alpha": alpha}, f"({'abcdefgh'[k % 8]}) τ = {tau}, α = {alpha:g}")
        for k, (tau, alpha) in enumerate(grid)
    ]
    figures += curves_figure(
        rows,
        panels,
        [
            ("test_accuracy", "test accuracy after the update (%)", False),
            (
                "test_accuracy_before_update",
                "test accuracy before the update (%)",  # the global model; local only: its own
                False,
            ),
            ("train_loss", "training objective (adapted models)", False),
        ],
        shown,
        kind,
        out,
        "perfedavg-table1-curves",
        quick,
        table=table,
        suptitle="Per-FedAvg Table 1 over rounds: digits 8×8 stand-in, multinomial logistic "
        "regression\n(the paper: neural networks on MNIST/CIFAR-10)",
    )
    return {
        "figures": figures,
        "claims": _claims(table, params),
        "tables": {"perfedavg-table1-table": table, "perfedavg-table1-summary": summary},
        "columns": {
            "perfedavg-table1.csv": columns(METRICS, GRID),
            "perfedavg-table1-table.csv": {**GRID, **SELECTION_COLUMNS},
            "perfedavg-table1-summary.csv": SUMMARY_COLUMNS,
        },
    }


def _claims(table, params):
    grid = _rows(params)
    last = {
        (tau, alpha, m): by_seed(table, "test_accuracy", tau=tau, alpha=alpha, method=m, selection=LAST)
        for tau, alpha in grid
        for m in METHODS
    }
    fedavg, fo, hf = METHODS
    where = f"last round; {STAND_IN}"
    claims = []
    for tau, alpha in grid:
        pairs = [(hf, fo), (fo, fedavg)]
        claims.append(
            paired(
                f"Table 1 ordering at tau = {tau}, alpha = {alpha:g} (the paper's MNIST rows): {hf} > {fo} > {fedavg} "
                f"({where}; value: measured means, %)",
                [last[(tau, alpha, a)] - last[(tau, alpha, b)] for a, b in pairs],
                [f"{a} − {b}" for a, b in pairs],
                value={m: float(last[(tau, alpha, m)].mean()) for m in METHODS},
                units=" points",
            )
        )
    claims.append(
        paired(
            f"'Per-FedAvg (HF) outperforms FedAvg in all cases' (every tau and alpha; {where})",
            [last[(tau, alpha, hf)] - last[(tau, alpha, fedavg)] for tau, alpha in grid],
            [f"tau={tau}, alpha={alpha:g}: {hf} − {fedavg}" for tau, alpha in grid],
            value=[
                float((last[(tau, alpha, hf)] - last[(tau, alpha, fedavg)]).mean()) for tau, alpha in grid
            ],
            units=" points",
        )
    )
    taus = sorted(set(params["taus"]), reverse=True)
    if len(taus) > 1:
        comps = [
            (
                f"alpha={alpha:g}, {m}: tau={big} − tau={small}",
                last[(big, alpha, m)] - last[(small, alpha, m)],
            )
            for alpha in dict.fromkeys(params["alphas"])
            for m in METHODS
            for big, small in itertools.pairwise(taus)
        ]
        claims.append(
            paired(
                f"'decreasing tau leads to a decrease in the performance of all three algorithms' ({where})",
                [d for _, d in comps],
                [n for n, _ in comps],
                value=[float(d.mean()) for _, d in comps],
                units=" points",
            )
        )
    return claims


EXPERIMENT = Experiment(
    name="perfedavg-table1",
    paper="Per-FedAvg",
    figure="Table 1 (digits 8x8 stand-in, multinomial logistic regression; the paper: neural networks on "
    "MNIST/CIFAR-10)",
    summary="FedAvg + update, Per-FedAvg (FO) and Per-FedAvg (HF), each evaluated after one local step from the "
    "global model, with 95 % intervals over seeds beside Table 1 (" + STAND_IN + ")",
    expected=("~10 s", "~5 min"),  # full: ~63 s per seed measured (2 shared cores, one worker)
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    notes=("data",),
    deviations=deviations,
)
