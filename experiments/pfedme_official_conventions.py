r"""``pfedme-official-conventions``: what each of the pFedMe authors' implementation conventions does to
pFedMe's Table 1 comparison (Synthetic(0.5, 0.5), multinomial logistic regression).

The authors' code (github.com/CharlieDinh/pFedMe) deviates from the pFedMe and Per-FedAvg papers;
``moreau.experiments._official`` reads each deviation there (file and function in its docstring) and
makes it a switch: (1) ``warm-start``: pFedMe's inner solve starts from the previous local step's θ
(within a round; every round restarts at w_t); (2) ``hidden-L2``: an L2 term ``hidden_mu``
(0.001, ``pFedMeOptimizer``'s default) in the inner problem; (3) ``sample-weights``: the server
averages the sampled clients by their training sample counts, not uniformly (pFedMe and
Per-FedAvg); (4) ``local-as-personal``: pFedMe's "personalised" accuracy is that of the local
model :math:`w_{i,R}^t` (the code's ``persionalized_model_bar`` aliases it), not of the last inner
solution :math:`\tilde\theta_i`; (5) ``test-adaptation``: Per-FedAvg's evaluated model takes an
α-step and a β-step on batches of the client's **test** rows before it is tested (**it uses the test
set: the number leaks it**).  One run per convention alone, ``all`` of them together, and ``paper``
(none: the papers' algorithms); each run trains only the algorithms its convention changes
(``paper`` and ``all`` run both).  Every run of a seed uses the same data, split and training seed
(the same mini-batches and client samples: common random numbers), so every comparison is paired.

Data and sizes as ``pfedme-synthetic`` (``moreau.data.synthetic(0.5, 0.5)``, N = 100 clients,
ridge μ = 0.01, 75/25 train/test per client, 20 % of the training rows held out for validation);
Table 1's tuned values: pFedMe λ = 20, η = 0.01, β = 2, R = 20, K = 5, |D| = 20, S = 10;
Per-FedAvg first order (as the authors' code) with (α, β) = (0.02, 0.002), τ = 20; the inner step
``inner_eta`` = 0 means :math:`1/(L_i + \lambda)` per client (``pfedme-synthetic``'s; the code's
``personal_learning_rate`` is 0.01: ``--set inner_eta=0.01``).  Full: the paper's sizes
(``size_scale = 5``), T = 600, 5 seeds.  Quick (*not the paper's size*): ``size_scale = 1``,
clients capped at 400 samples (sizes still differ, so sample weights matter), T = 20, 3 seeds.
The papers' personalised models: pFedMe the last inner solution; Per-FedAvg one gradient step on
the client's training rows (Per-FedAvg eq. (3)).  Accuracy: correct test predictions of all
clients together, as pFedMe (and its code) measure it.

Outputs: the long CSV (``convention``, round, method, seed, metric, value; every ``eval_every``
rounds), ``-table.csv`` (last round, best round on validation, best round on test: leaks it), the
figures (last-round accuracy per convention beside Table 1, the change from ``paper`` with 95 %
intervals; the curves) and the claims, decided on the last round by paired t over the seeds,
Holm over a claim's comparisons (``moreau.experiments._verdicts``): holds, fails or undecided.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from moreau import Multinomial, data

from . import _official as official
from . import _pfedme_runs as runs
from ._curve_figures import layered, legend
from ._curves import LAST, SELECTION_COLUMNS, band, band_label, check_band, columns, curve, selections
from ._evaluate import Split, hold_out
from ._experiment import Experiment
from ._pfedme_compare import _Recorder
from ._plot import figure, save
from ._verdicts import by_seed, paired
from .pfedme_synthetic import PAPER as TABLE1

__all__ = ["CONVENTIONS", "EXPERIMENT", "METHODS", "PAPER", "switches"]

NAME = "pfedme-official-conventions"
METHODS = ("pFedMe-PM", "pFedMe-GM", "Per-FedAvg")
PAPER = {m: TABLE1[m] for m in METHODS}  # pFedMe Table 1, Synthetic, MLR (%)
CONVENTIONS = (
    "paper",
    "warm-start",
    "hidden-L2",
    "sample-weights",
    "local-as-personal",
    "test-adaptation",
    "all",
)
WHAT = {
    "warm-start": "pFedMe's inner solve warm-started from the previous local step's theta",
    "hidden-L2": "a hidden L2 term (hidden_mu) in pFedMe's inner problem",
    "sample-weights": "the server's average weighted by sample counts (pFedMe and Per-FedAvg)",
    "local-as-personal": "pFedMe's 'personalised' model evaluated = the local model w_{i,R}",
    "test-adaptation": "Per-FedAvg adapted on the client's test batches before testing (leaks the test set)",
    "all": "all five together",
    "paper": "none: the papers' algorithms",
}
METRICS = {
    "test_accuracy": "test accuracy (%): correct predictions of all clients' test rows together",
    "validation_accuracy": "accuracy (%) on the validation rows held out of each client's training rows",
    "train_loss": "training objective sum_i n_i f_i(model_i) / sum_i n_i (cross-entropy + mu/2 ||theta||^2)",
}
GRID = {
    "convention": "the run: 'paper' (no convention), one of the authors' conventions alone, or 'all' of them: "
    + "; ".join(f"{c}: {w}" for c, w in WHAT.items())
}


def config(quick, trials):
    return {
        "seeds": trials or (3 if quick else 5),
        "rounds": 20 if quick else 600,
        "n_clients": 100,
        "size_scale": 1 if quick else 5,
        "max_size": 400 if quick else None,
        "alpha": 0.5,
        "beta_data": 0.5,
        "mu": 0.01,
        "n_classes": 10,
        "d": 60,
        "train_fraction": 0.75,
        "S": 10,
        "batch": 20,
        "R": 20,
        "K": 5,
        "lam": 20.0,
        "eta": 0.01,
        "beta": 2.0,
        "inner_eta": 0.0,
        "perfedavg_alpha": 0.02,
        "perfedavg_beta": 0.002,
        "hidden_mu": official.OFFICIAL_MU,
        "validation_fraction": 0.2,
        "eval_every": 1 if quick else 10,
        "band": "std",
        "conventions": list(CONVENTIONS),
    }


def switches(convention, params):
    """``(pFedMe keywords or None, Per-FedAvg keywords or None)`` of a run: None where the
    convention leaves that algorithm as in ``paper`` (not rerun)."""
    p = {
        "warm-start": {"warm_start": True},
        "hidden-L2": {"hidden_mu": params["hidden_mu"]},
        "sample-weights": {"sample_weights": True},
        "local-as-personal": {"personal": "local"},
    }
    a = {"sample-weights": {"sample_weights": True}, "test-adaptation": {"test_adaptation": True}}
    if convention == "paper":
        return {}, {}
    if convention == "all":
        return {k: v for d in p.values() for k, v in d.items()}, {
            k: v for d in a.values() for k, v in d.items()
        }
    return p.get(convention), a.get(convention)


def points(params):
    check_band(NAME, params["band"])
    bad = [c for c in params["conventions"] if c not in CONVENTIONS]
    if bad or not params["conventions"]:
        raise ValueError(
            f"{NAME}: conventions must be a non-empty list of {', '.join(CONVENTIONS)} (got {bad})"
        )
    if not 0 <= params["validation_fraction"] <= 0.5:
        raise ValueError(
            f"{NAME}: validation_fraction must be in [0, 0.5] (got {params['validation_fraction']})"
        )
    if params["inner_eta"] < 0 or params["hidden_mu"] < 0:
        raise ValueError(f"{NAME}: inner_eta and hidden_mu must be >= 0")
    if params["S"] > params["n_clients"]:
        raise ValueError(
            f"{NAME}: S = {params['S']} clients per round exceeds n_clients = {params['n_clients']}: "
            "set S <= n_clients"
        )
    bad = [k for k in ("lam", "eta", "beta", "perfedavg_alpha", "perfedavg_beta") if not params[k] > 0]
    if bad:
        raise ValueError(f"{NAME}: {bad[0]} must be > 0 (got {params[bad[0]]})")
    return [{"seed": s} for s in range(params["seeds"])]


def compute(params, point, rng):
    P = data.synthetic(
        params["alpha"],
        params["beta_data"],
        rng,
        n_clients=params["n_clients"],
        size_scale=params["size_scale"],
        max_size=params["max_size"],
        mu=params["mu"],
        n_classes=params["n_classes"],
        d=params["d"],
        train_fraction=params["train_fraction"],
    )
    split_rng, key_rng = rng.spawn(2)
    train = tuple(np.asarray(a) for a in (P.objective.X, P.objective.y, P.objective.weights))
    test = tuple(np.asarray(a) for a in (P.test.X, P.test.y, P.test.weights))
    val = None
    if params["validation_fraction"] > 0:
        train, val = hold_out(split_rng, *train, params["validation_fraction"])
    mu, C = params["mu"], params["n_classes"]
    X, y, wt = train
    f = runs.objective(X, (y[..., None] == np.arange(C)).astype(float), wt.sum(axis=-1).astype(np.int64), mu)
    ft = Multinomial(test[0], test[1].astype(np.int64), n_classes=C, mu=mu, weights=test[2])
    splits = (Split(*train), None if val is None else Split(*val), Split(*test))
    train_seed = int(key_rng.integers(0, 2**62))
    T, every = params["rounds"], params["eval_every"]
    common = {"rounds": T, "S": params["S"], "record": None, "keep": False}
    rows = []
    for conv in params["conventions"]:
        on_p, on_a = switches(conv, params)
        if on_p is not None:
            rec = _Recorder(splits, mu, every, T, ("pFedMe-GM", "pFedMe-PM"), {})
            official.pfedme(
                f,
                lam=params["lam"],
                eta=params["eta"],
                beta=params["beta"],
                R=params["R"],
                K=params["K"],
                inner_eta=params["inner_eta"] or "client",
                batch_size=params["batch"],
                rng=np.random.default_rng(train_seed),
                **{**common, "record": rec},
                **on_p,
            )
            rows += _rows(rec, point["seed"], conv)
        if on_a is not None:
            rec = _Recorder(splits, mu, every, T, (None, "Per-FedAvg"), {})
            official.per_fedavg(
                f,
                alpha=params["perfedavg_alpha"],
                beta=params["perfedavg_beta"],
                tau=params["R"],
                D=params["batch"],
                D_prime=params["batch"],
                variant="first_order",
                test=ft,
                test_batch_size=params["batch"],
                rng=np.random.default_rng(train_seed),
                **{**common, "record": rec},
                **on_a,
            )
            rows += _rows(rec, point["seed"], conv)
    return rows


def _rows(rec, seed, conv):
    return [
        {"convention": conv, **{k: v for k, v in r.items() if k != "setting"}} for r in rec.rows(seed, conv)
    ]


def _last(rows, method, conv):
    return by_seed(
        [r for r in rows if r["metric"] == "test_accuracy"],
        "value",
        method=method,
        convention=conv,
        round=max(int(r["round"]) for r in rows),
    )


def _claims(rows, convs):
    acc = {(m, c): _last(rows, m, c) for m in METHODS for c in convs}
    has = {k for k, v in acc.items() if v.size}

    def diff(m, c):  # per-seed change from the papers' algorithms (points)
        return acc[(m, c)] - acc[(m, "paper")]

    claims = []
    if "paper" not in convs:
        return claims
    for m, what in (
        ("pFedMe-PM", "pFedMe's personalised accuracy"),
        ("pFedMe-GM", "pFedMe's global-model accuracy"),
        ("Per-FedAvg", "Per-FedAvg's accuracy (with the test-data adaptation, which leaks the test set)"),
    ):
        if "all" in convs:
            d = diff(m, "all")
            claims.append(
                paired(
                    f"the authors' conventions together raise {what} ({m}: all − paper, last round)",
                    d,
                    [f"{m}: all − paper"],
                    value=float(d.mean()),
                    units=" points",
                )
            )
    for c in convs:
        if c in ("paper", "all"):
            continue
        touched = [
            m for m in METHODS if (m, c) in has and not (c == "local-as-personal" and m == "pFedMe-GM")
        ]
        comps = [(f"{m}: {c} − paper", diff(m, c)) for m in touched]
        claims.append(
            paired(
                f"{c} alone ({WHAT[c]}) raises the accuracy of every model it changes "
                f"({', '.join(touched)}; last round)",
                [d for _, d in comps],
                [n for n, _ in comps],
                value={n: float(d.mean()) for n, d in comps},
                units=" points",
            )
        )
    gap = {c: acc[("pFedMe-PM", c)] - acc[("Per-FedAvg", c)] for c in ("paper", "all") if c in convs}
    for c, words in (("paper", "with the papers' algorithms"), ("all", "with the authors' conventions")):
        if c in gap:
            claims.append(
                paired(
                    f"Table 1's ordering: pFedMe-PM ahead of Per-FedAvg {words} (last round)",
                    gap[c],
                    [f"pFedMe-PM − Per-FedAvg ({c})"],
                    value=float(gap[c].mean()),
                    units=" points",
                )
            )
    if len(gap) == 2:
        d = gap["all"] - gap["paper"]
        claims.append(
            paired(
                "the authors' conventions widen pFedMe-PM's lead over Per-FedAvg (Table 1's gap, last round)",
                d,
                ["(PM − Per-FedAvg)_all − (PM − Per-FedAvg)_paper"],
                value=float(d.mean()),
                units=" points",
            )
        )
    return claims


def _bars_figure(rows, table, params, out, quick):
    """(a) last-round test accuracy per convention and method (error bars: the band), Table 1's values
    as dotted lines; (b) the change from ``paper``: mean paired difference and its 95 % t interval."""
    convs = params["conventions"]
    fig, ax = figure(2, width=6.8, aspect=0.9)
    x = np.arange(len(convs))
    width = 0.8 / len(METHODS)
    S = 0
    for k, m in enumerate(METHODS):
        pos = x + (k - (len(METHODS) - 1) / 2) * width
        mean, lo, hi, dm, dlo, dhi = (np.full(len(convs), np.nan) for _ in range(6))
        for j, c in enumerate(convs):
            v = np.array(
                [
                    r["test_accuracy"]
                    for r in sorted(table, key=lambda r: r["seed"])
                    if r["method"] == m and r["convention"] == c and r["selection"] == LAST
                ]
            )
            if v.size:
                S = max(S, v.size)
                b = band(v[:, None], params["band"])
                mean[j], lo[j], hi[j] = b[0][0], b[1][0], b[2][0]
            if "paper" in convs and c != "paper" and v.size:
                d = _last(rows, m, c) - _last(rows, m, "paper")
                q = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size) if d.size > 1 else 0.0
                dm[j], dlo[j], dhi[j] = d.mean(), d.mean() - q, d.mean() + q
        ax[0][0].bar(
            pos,
            mean,
            width * 0.95,
            yerr=np.array([mean - lo, hi - mean]),
            color=f"C{k}",
            capsize=1.5,
            edgecolor="k",
            linewidth=0.3,
            label=m,
            error_kw={"linewidth": 0.7},
        )
        ax[0][0].axhline(PAPER[m], color=f"C{k}", linestyle=":", linewidth=1)
        ax[0][1].errorbar(
            pos, dm, yerr=np.array([dm - dlo, dhi - dm]), fmt="o", color=f"C{k}", capsize=1.5, markersize=3
        )
    vals = [
        v
        for v in (list(PAPER.values()) + [r["test_accuracy"] for r in table if r["selection"] == LAST])
        if np.isfinite(v)
    ]
    ax[0][0].set_ylim(min(vals) - 2, max(vals) + 2)
    ax[0][1].axhline(0, color="k", linewidth=0.6)
    titles = (
        (f"(a) last round (T = {params['rounds']}); dotted: pFedMe Table 1", "test accuracy (%)"),
        ("(b) change from 'paper' (paired; 95 % t interval)", "accuracy change (points)"),
    )
    for a, (title, ylabel) in zip(ax[0], titles, strict=True):
        a.set_xticks(x, convs, rotation=30, ha="right")
        a.set(title=title, ylabel=ylabel)
    legend(
        fig,
        ax[0][0].get_legend_handles_labels()[0],
        band_label(params["band"], S).replace("lines", "bars").replace("band", "error bars (a)")
        + "; test-adaptation and all: Per-FedAvg adapted on test data (leaks)",
        ncol=3,
    )
    return save(fig, out, NAME, quick)


def _curves_figure(rows, params, out, quick):
    """Test accuracy over rounds, one panel per method, one line (mean, band) per convention run."""
    fig, ax = figure(3, width=6.8, aspect=1.1)
    S = 0
    for a, m in zip(ax[0], METHODS, strict=True):
        for k, c in enumerate(params["conventions"]):
            ts, v, seeds = curve(rows, "test_accuracy", m, convention=c)
            if not seeds:
                continue
            S = max(S, len(seeds))
            mean, lo, hi = band(v, params["band"])
            a.plot(ts, mean, color=f"C{k}", label=c, **layered(k))
            a.fill_between(ts, lo, hi, color=f"C{k}", alpha=0.15, linewidth=0)
        a.axhline(PAPER[m], color="k", linestyle=":", linewidth=0.8)
        a.set(xlabel="communication round t", ylabel="test accuracy (%)", title=f"{m} (dotted: Table 1)")
    handles, labels = [], []
    for a in ax[0]:
        for h, lab in zip(*a.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    legend(
        fig,
        handles,
        band_label(params["band"], S) + "; curves that coincide: thinner and dashed, on top",
        ncol=4,
    )
    return save(fig, out, f"{NAME}-curves", quick)


def finish(rows, params, out, seed=0, quick=False):
    convs = params["conventions"]
    table = [r for c in convs for r in selections(rows, METHODS, convention=c)]
    figures = _bars_figure(rows, table, params, out, quick) + _curves_figure(rows, params, out, quick)
    return {
        "figures": figures,
        "claims": _claims(rows, convs),
        "tables": {f"{NAME}-table": table},
        "columns": {
            f"{NAME}.csv": columns(METRICS, GRID),
            f"{NAME}-table.csv": {**GRID, **SELECTION_COLUMNS},
        },
        "theorems": {
            "pfedme.thm1": {
                "assumptions": {
                    "clients mu-strongly convex (ridge mu > 0)": params["mu"] > 0,
                    "beta >= 1 (Theorem 1)": params["beta"] >= 1,
                    "exact or delta-approximate inner solutions (K inner GD steps; delta not certified)": False,
                }
            }
        },
    }


EXPERIMENT = Experiment(
    name=NAME,
    paper="pFedMe",
    figure="Table 1 (Synthetic, MLR) under the authors' code conventions",
    summary="pFedMe and Per-FedAvg on Synthetic(0.5, 0.5) with each of the authors' implementation conventions "
    "switched on alone, all together, and none (the papers' algorithms): what each does to Table 1",
    expected=("~65 s", "~1 h"),  # quick: 63 s measured (one worker); full: estimated, not run
    config=config,
    points=points,
    compute=compute,
    finish=finish,
)
