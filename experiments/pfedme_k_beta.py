r"""``pfedme-k-beta``: the effect of K (inner computation steps) and of β (the server's step) on pFedMe's
convergence (pFedMe §5.2, Figures 1 and 2; the μ-strongly convex runs: multinomial logistic regression).

The paper runs these on MNIST (N = 20 clients, 2 labels each) with η = 0.005, S = 5, |D| = 20,
λ = 15, R = 20; Figure 1 varies K with β = 1, Figure 2 varies β (≥ 1) with K = 5.  MNIST cannot be
downloaded here: the data are scikit-learn's 8×8 digits split as ``pfedme-digits`` splits them
(N = 20 clients, 2 labels each, different local sizes, 75/25 train/test per client; extra
``digits``), with multinomial logistic regression (ridge μ = 0.01).  pFedMe is
``moreau.experiments._pfedme_runs.pfedme`` (``moreau.fl.pfedme`` one round per call, mini-batches of
|D| rows, the K inner gradient steps of size :math:`1/(L_i + \lambda)` per client, the personalised
model the last inner solution :math:`\tilde\theta_i`, as ``pfedme-digits``).  The text names K
"around 3 to 5" and 7; the figures' legends are not in the text available here: K ∈ {1, 3, 5, 7}
(``Ks``) and β ∈ {1, 2, 4} (``betas``) are our grids.  T = 800 rounds (Table 1's MNIST runs; the
figures' horizon is not stated in the text), --quick 30 rounds and 2 seeds.  Every (K, β) runs on
the same data set per seed, from the same training seed (the same client samples and mini-batches:
common random numbers), so the comparisons are paired.

Curves (long CSV, every ``eval_every`` rounds; columns ``K``, ``beta``): test accuracy (correct
predictions of all clients' test rows together, as pFedMe measures it), validation accuracy
(``validation_fraction`` of each client's training rows held out, never trained on) and the
training objective, for the personalised (pFedMe-PM) and the global model (pFedMe-GM); figures
``pfedme-k-beta-K`` (Fig. 1) and ``pfedme-k-beta-beta`` (Fig. 2): the mean and a ``band`` over seeds.
``pfedme-k-beta-table.csv``: last and best rounds; ``pfedme-k-beta-summary.csv``: the per-seed
summary the claims use, test accuracy and training objective at round ``at_round``.

Claims (the paper's qualitative statements, decided on that per-seed summary, paired t over the
seeds, Holm over the comparisons of a claim): larger K converges faster up to K = 5 (accuracy
higher, objective lower, personalised and global model); K = 7 brings no improvement over K = 5
(K = 7 at most ``tie_margin`` points ahead); β > 1 converges faster than β = 1 (accuracy and
objective); "especially the global model" (the global model's gain from β exceeds the
personalised model's).
"""

from __future__ import annotations

import itertools

import numpy as np

from . import _pfedme_runs as runs
from ._curve_figures import layered, legend
from ._curves import SELECTION_COLUMNS, band, band_label, check_band, columns, curve, long_rows, selections
from ._evaluate import Split, hold_out
from ._experiment import Experiment
from ._pfedme_compare import _Recorder
from ._plot import figure, save
from ._verdicts import paired

__all__ = ["EXPERIMENT", "MODELS", "STAND_IN", "runs_of"]

MODELS = ("pFedMe-PM", "pFedMe-GM")
STAND_IN = (
    "digits 8x8 stand-in for MNIST, multinomial logistic regression (the paper's mu-strongly convex runs)"
)
METRICS = {
    "test_accuracy": "test accuracy (%): correct predictions of all clients' test rows together",
    "validation_accuracy": "accuracy (%) on the validation rows held out of each client's training rows",
    "train_loss": "training objective sum_i n_i f_i(model_i) / sum_i n_i (cross-entropy + mu/2 ||theta||^2)",
}
GRID = {"K": "inner gradient steps per local round (pFedMe's K)", "beta": "the server's step beta"}
NAME = "pfedme-k-beta"


def config(quick, trials):
    return {
        "seeds": trials or (2 if quick else 5),
        "rounds": 30 if quick else 800,
        "n_clients": 20,
        "mu": 0.01,
        "S": 5,
        "batch": 20,
        "R": 20,
        "lam": 15.0,
        "eta": 0.005,
        "train_fraction": 0.75,
        "validation_fraction": 0.2,
        "Ks": [1, 3, 5, 7],
        "beta_for_K": 1.0,
        "betas": [1.0, 2.0, 4.0],
        "K_for_beta": 5,
        "at_round": 30 if quick else 100,
        "tie_margin": 0.5,
        "eval_every": 1 if quick else 4,
        "band": "std",
        "n_classes": 10,
        "data": STAND_IN,
    }


def runs_of(params):
    """The (K, beta) runs of a seed: every K at ``beta_for_K`` (Fig. 1), every beta at ``K_for_beta``
    (Fig. 2); the run both share once."""
    out = [(int(K), float(params["beta_for_K"])) for K in params["Ks"]]
    out += [(int(params["K_for_beta"]), float(b)) for b in params["betas"]]
    return list(dict.fromkeys(out))


def points(params):
    check_band(NAME, params["band"])
    if not 0 <= params["validation_fraction"] <= 0.5:
        raise ValueError(
            f"{NAME}: validation_fraction must be in [0, 0.5] (got {params['validation_fraction']})"
        )
    t, T, every = params["at_round"], params["rounds"], params["eval_every"]
    if t > T or (t % every and t != T):
        raise ValueError(
            f"{NAME}: at_round = {t} must be an evaluated round (a multiple of eval_every = {every}, "
            f"or rounds = {T}) not after rounds"
        )
    if params["S"] > params["n_clients"]:
        raise ValueError(f"{NAME}: S = {params['S']} exceeds n_clients = {params['n_clients']}")
    if min(params["betas"] + [params["beta_for_K"]]) <= 0 or params["eta"] <= 0 or params["lam"] <= 0:
        raise ValueError(f"{NAME}: betas, beta_for_K, eta and lam must be > 0")
    return [{"seed": s} for s in range(params["seeds"])]


def compute(params, point, rng):
    from .pfedme_digits import digits, split

    X, y = digits()
    data_rng, split_rng, key_rng = rng.spawn(3)
    train, test = split(X, y, params["n_clients"], data_rng, params["train_fraction"])
    val = None
    if params["validation_fraction"] > 0:
        train, val = hold_out(split_rng, *train, params["validation_fraction"])
    Xt, y, wt = train
    Y = (y[..., None] == np.arange(params["n_classes"])).astype(float)
    n = wt.sum(axis=-1).astype(np.int64)
    mu = params["mu"]
    f = runs.objective(Xt, Y, n, mu)
    splits = (Split(*train), None if val is None else Split(*val), Split(*test))
    train_seed = int(key_rng.integers(0, 2**62))
    rows = []
    for K, beta in runs_of(params):
        rec = _Recorder(splits, mu, params["eval_every"], params["rounds"], ("pFedMe-GM", "pFedMe-PM"), {})
        runs.pfedme(
            np.random.default_rng(train_seed),
            Xt,
            Y,
            n,
            mu,
            lam=params["lam"],
            eta=params["eta"],
            beta=beta,
            R=params["R"],
            K=K,
            inner_eta="client",
            rounds=params["rounds"],
            S=params["S"],
            B=params["batch"],
            f=f,
            record=rec,
        )
        for label, vals in rec.values.items():
            rows += long_rows(vals, method=label, seed=point["seed"], rounds=rec.rounds, K=K, beta=beta)
    return rows


def _at(rows, params, metric, model, K, beta):
    """Per seed (increasing), ``metric`` of ``model`` at round ``at_round`` of the run (K, beta)."""
    ts, v, _ = curve(rows, metric, model, K=K, beta=beta)
    return v[:, int(np.flatnonzero(ts == params["at_round"])[0])]


def _summary(rows, params):
    out = []
    for K, beta in runs_of(params):
        for model in MODELS:
            acc, loss = (_at(rows, params, m, model, K, beta) for m in ("test_accuracy", "train_loss"))
            seeds = curve(rows, "test_accuracy", model, K=K, beta=beta)[2]
            out += [
                {
                    "K": K,
                    "beta": beta,
                    "method": model,
                    "seed": s,
                    "round": params["at_round"],
                    "test_accuracy": float(a),
                    "train_loss": float(lo),
                }
                for s, a, lo in zip(seeds, acc, loss, strict=True)
            ]
    return out


def _sweep_figure(rows, params, out, quick, which):
    """pFedMe Fig. 1 (``which = "K"``) or Fig. 2 (``"beta"``): rows PM / GM, columns test accuracy and
    training objective; one curve (mean, band over seeds) per level."""
    kind = params["band"]
    if which == "K":
        levels = [(K, float(params["beta_for_K"])) for K in dict.fromkeys(params["Ks"])]
        label = lambda K, b: f"K = {K}"  # noqa: E731
        fixed = f"β = {params['beta_for_K']:g}"
        title = "Effect of K on pFedMe (pFedMe Fig. 1)"
    else:
        levels = [(int(params["K_for_beta"]), float(b)) for b in dict.fromkeys(params["betas"])]
        label = lambda K, b: f"β = {b:g}"  # noqa: E731
        fixed = f"K = {params['K_for_beta']}"
        title = "Effect of β on pFedMe (pFedMe Fig. 2)"
    fig, ax = figure(2, 2, width=6.8, aspect=0.72)
    S = 0
    for i, model in enumerate(MODELS):
        for j, (metric, ylab) in enumerate(
            (("test_accuracy", "test accuracy (%)"), ("train_loss", "training objective"))
        ):
            a = ax[i][j]
            for k, (K, b) in enumerate(levels):
                ts, v, seeds = curve(rows, metric, model, K=K, beta=b)
                if not seeds:
                    continue
                S = max(S, len(seeds))
                mean, lo, hi = band(v, kind)
                # curves that coincide (K = 3, 5, 7 once the inner solver has converged) stay visible
                a.plot(ts, mean, color=f"C{k}", label=label(K, b), **layered(k))
                a.fill_between(ts, lo, hi, color=f"C{k}", alpha=0.18, linewidth=0)
            a.axvline(params["at_round"], color="0.4", linestyle=":", linewidth=0.8)
            what = "personalised model (PM)" if model == "pFedMe-PM" else "global model (GM)"
            a.set(xlabel="communication round t", ylabel=ylab, title=f"({'abcd'[2 * i + j]}) {what}: {ylab}")
    fig.suptitle(
        f"{title}: {STAND_IN}\n{fixed}, λ = {params['lam']:g}, η = {params['eta']:g}, R = {params['R']}, "
        f"|D| = {params['batch']}, S = {params['S']}",
        fontsize=7,
    )
    handles = ax[0][0].get_legend_handles_labels()[0]
    legend(
        fig,
        handles,
        band_label(kind, S) + f"\nvertical dotted line: round {params['at_round']}, where the claims "
        "are decided; curves that coincide are drawn thinner and dashed, on top of each other",
        ncol=len(levels),
    )
    return save(fig, out, f"{NAME}-{which}", quick)


def finish(rows, params, out, seed=0, quick=False):
    table = [r for K, beta in runs_of(params) for r in selections(rows, MODELS, K=K, beta=beta)]
    summary = _summary(rows, params)
    figures = _sweep_figure(rows, params, out, quick, "K") + _sweep_figure(rows, params, out, quick, "beta")
    summary_cols = {
        **GRID,
        "method": "pFedMe-PM (personalised models) or pFedMe-GM (global model)",
        "seed": SELECTION_COLUMNS["seed"],
        "round": "the round of the summary (at_round)",
        "test_accuracy": METRICS["test_accuracy"] + " at that round",
        "train_loss": METRICS["train_loss"] + " at that round",
    }
    return {
        "figures": figures,
        "claims": _claims(rows, params),
        "tables": {f"{NAME}-table": table, f"{NAME}-summary": summary},
        "columns": {
            f"{NAME}.csv": columns(METRICS, GRID),
            f"{NAME}-table.csv": {**GRID, **SELECTION_COLUMNS},
            f"{NAME}-summary.csv": summary_cols,
        },
        "theorems": {
            "pfedme.thm1": {
                "assumptions": {
                    "clients mu-strongly convex (ridge mu > 0)": params["mu"] > 0,
                    "beta >= 1 (Theorem 1)": min(params["betas"] + [params["beta_for_K"]]) >= 1,
                    "exact or delta-approximate inner solutions (K inner GD steps; delta not certified)": False,
                }
            }
        },
    }


def _claims(rows, params):
    t = params["at_round"]
    where = f"at round {t}; {STAND_IN}"
    bK, Kb = float(params["beta_for_K"]), int(params["K_for_beta"])
    acc = lambda model, K, b: _at(rows, params, "test_accuracy", model, K, b)  # noqa: E731
    loss = lambda model, K, b: _at(rows, params, "train_loss", model, K, b)  # noqa: E731
    claims = []
    Ks = sorted({int(K) for K in params["Ks"]})
    up = [K for K in Ks if K <= 5]
    steps = list(itertools.pairwise(up))
    if steps:
        for metric, sign, unit in (
            ("test accuracy higher", 1, " points"),
            ("training objective lower", -1, ""),
        ):
            get = acc if sign > 0 else loss
            comps = [
                (
                    f"{m}: K={b} − K={a}" if sign > 0 else f"{m}: K={a} − K={b}",
                    sign * (get(m, b, bK) - get(m, a, bK)),
                )
                for m in MODELS
                for a, b in steps
            ]
            claims.append(
                paired(
                    f"Fig. 1: larger K converges faster up to K = 5 ({metric} from each K to the next, "
                    f"personalised and global model; beta = {bK:g}; {where})",
                    [d for _, d in comps],
                    [n for n, _ in comps],
                    value=[float(d.mean()) for _, d in comps],
                    units=unit,
                )
            )
    big = [K for K in Ks if K > 5]
    if 5 in Ks and big:
        delta = params["tie_margin"]
        comps = [
            (f"{m}: K=5 − K={K} + {delta:g}", acc(m, 5, bK) - acc(m, K, bK) + delta)
            for m in MODELS
            for K in big
        ]
        claims.append(
            paired(
                f"Fig. 1: larger K such as {big[0]} shows no improvement over K = 5 (test accuracy at most "
                f"{delta:g} points above K = 5's, personalised and global model; beta = {bK:g}; {where})",
                [d for _, d in comps],
                [n for n, _ in comps],
                value=[float(d.mean()) for _, d in comps],
                units=" points",
            )
        )
    betas = sorted({float(b) for b in params["betas"]})
    larger = [b for b in betas if b > 1]
    if 1.0 in betas and larger:
        for metric, sign, unit in (
            ("test accuracy higher", 1, " points"),
            ("training objective lower", -1, ""),
        ):
            get = acc if sign > 0 else loss
            comps = [
                (
                    f"{m}: beta={b:g} − beta=1" if sign > 0 else f"{m}: beta=1 − beta={b:g}",
                    sign * (get(m, Kb, b) - get(m, Kb, 1.0)),
                )
                for m in MODELS
                for b in larger
            ]
            claims.append(
                paired(
                    f"Fig. 2: beta > 1 converges faster than beta = 1 ({metric} at every beta > 1, personalised and "
                    f"global model; K = {Kb}; {where})",
                    [d for _, d in comps],
                    [n for n, _ in comps],
                    value=[float(d.mean()) for _, d in comps],
                    units=unit,
                )
            )
        comps = [
            (
                f"beta={b:g}: GM gain − PM gain",
                (acc("pFedMe-GM", Kb, b) - acc("pFedMe-GM", Kb, 1.0))
                - (acc("pFedMe-PM", Kb, b) - acc("pFedMe-PM", Kb, 1.0)),
            )
            for b in larger
        ]
        claims.append(
            paired(
                "Fig. 2: a larger beta helps 'especially the global model' (its test accuracy gain over beta = 1 "
                f"exceeds the personalised model's, at every beta > 1; K = {Kb}; {where})",
                [d for _, d in comps],
                [n for n, _ in comps],
                value=[float(d.mean()) for _, d in comps],
                units=" points",
            )
        )
    return claims


EXPERIMENT = Experiment(
    name=NAME,
    paper="pFedMe",
    figure="Figures 1 and 2 (effect of K and of beta; digits stand-in for MNIST, MLR)",
    summary="pFedMe's personalised and global models over rounds for K in {1, 3, 5, 7} (beta = 1) and beta in "
    "{1, 2, 4} (K = 5), mean and band over seeds, on the digits stand-in for MNIST with multinomial "
    "logistic regression",
    expected=(
        "~12 s",
        "~10 min",
    ),  # full: ~13 s per 100 rounds per seed measured (2 shared cores, one worker)
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    notes=("n_classes", "data"),
)
