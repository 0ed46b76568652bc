r"""The pFedMe §5 comparison shared by ``pfedme-synthetic`` and ``pfedme-digits``.

Two hyperparameter settings per data set, on the same data per seed:

* ``same`` (pFedMe Fig. 3/4: the same parameters for every algorithm): η = 0.005,
  |D| = 20, R = 20 local steps, K = 5, β = 1, λ = 15; FedAvg η = 0.005; Per-FedAvg
  α = β̂ = 0.005 (our reading of "the same learning rate");
* ``tuned`` (Table 1's fine-tuned values): FedAvg η = 0.02; Per-FedAvg (α̂, β̂) of the table;
  pFedMe λ, η = 0.01 and β = 2 of the table.

pFedMe's inner step (its "personal learning rate") is ``inner_eta``; the default 0 means
:math:`1/(L_i + \lambda)`, :math:`L_i` the Multinomial curvature bound of client i on its training
rows (valid, so the K inner steps contract; the paper does not state its step, the authors' code
uses 0.01 on Synthetic): pFedMe runs :func:`moreau.fl.pfedme` with ``inner_eta="client"``, or the
number set (``--set inner_eta=0.01``).
Accuracy as the paper measures it: correct test predictions of all N clients together over
their test samples (75/25 split per client), the personalised models (pFedMe-PM: the last
inner solution :math:`\tilde\theta_i`; Per-FedAvg: one α-step from the global model) or the
global model (FedAvg, pFedMe-GM) on every client's test data.

Curves over rounds (every ``eval_every`` rounds and the last; long-format CSV, one row per round ×
method × seed × metric): test accuracy, validation accuracy, the training objective
(``moreau.experiments._evaluate``) and, with ``optimum = true``, the squared distance to the exact
optimum of the method's own problem (FedAvg: GlobalTrain, ``moreau.fl.global_train``; pFedMe:
``moreau.fl.fedprox_optimum``, the pFedMe optimum, global model and personalised models;
Per-FedAvg's MAML problem has none computed here).  A fraction ``validation_fraction`` of each
client's training rows is held out, at random, and never trained on: the honest *best round on
validation*.  Reported side by side: the last round, the best round on validation and the best
round on test (which leaks the test set: the paper's code reports it).  The claims are decided on
the last round.  Every method runs on the same data set per seed, so the claims compare them by
paired t intervals over the seeds, an ordering or "most accurate" with Holm over its comparisons
(``moreau.experiments._verdicts``).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from moreau import fl

from . import _partial
from . import _pfedme_runs as runs
from ._config import NONNEGATIVE, Range
from ._curve_figures import curves_figure, legend, selection_bars
from ._curves import LAST, SELECTION_COLUMNS, band_label, check_band, columns, long_rows, selections
from ._deviations import differing
from ._evaluate import Split, hold_out
from ._pfedme_user import check_methods, deviation_lines, user_rows
from ._plot import figure, save
from ._verdicts import by_seed, paired

__all__ = ["LOCAL", "METHODS", "METRICS", "SETTINGS", "SHOWN", "check", "compare", "finish_compare"]

METHODS = ("FedAvg", "Per-FedAvg", "pFedMe-GM", "pFedMe-PM")
#: the baseline beside them: each client trains alone (no communication), FedAvg's η and R steps per
#: round; shown in the figures and tables, not part of the paper's claims
LOCAL = "Local only"
SHOWN = (*METHODS, LOCAL)
SETTINGS = ("same", "tuned")
METRICS = {
    "test_accuracy": "test accuracy (%): correct predictions of all clients' test rows together",
    "validation_accuracy": "accuracy (%) on the validation rows held out of each client's training rows",
    "train_loss": "training objective sum_i n_i f_i(model_i) / sum_i n_i (cross-entropy + mu/2 ||theta||^2)",
    "distance_to_optimum": "squared distance to the exact optimum of the method's problem: ||w_t - w*||^2 for a "
    "global model, (1/m) sum_i ||theta_i - theta_i*||^2 for personalised ones (optimum = true)",
}


#: the values the comparisons' numeric parameters may take (pfedme-synthetic, pfedme-digits), checked
#: with :func:`rules` before anything is written
RANGES = {
    "mu": NONNEGATIVE,
    "R": Range(1, why="pFedMe's local rounds and FedAvg's / Per-FedAvg's local steps per round"),
    "K": Range(1, why="pFedMe's inner gradient steps on the personalised problem (7)"),
    "inner_eta": Range(0, why="pFedMe's personal learning rate (inner step); 0: 1/(L_i + lambda) per client"),
    "train_fraction": Range(
        0, 1, lo_open=True, hi_open=True, why="the share of each client's rows that trains"
    ),
    **{
        f"{table}.{key}": Range(0, lo_open=True, why=why)
        for table in ("same", "tuned")
        for key, why in (
            ("fedavg_eta", "FedAvg's step size"),
            ("alpha", "Per-FedAvg's inner step size"),
            ("beta_hat", "Per-FedAvg's outer step size"),
            ("lam", "pFedMe's regularisation lambda"),
            ("eta", "pFedMe's step size"),
            ("beta", "pFedMe's global mixing parameter"),
        )
    },
}


def rules_for(name):
    """The cross-field rule of the comparison ``name``: S clients per round are at most n_clients."""

    def rules(params):
        if params["S"] > params["n_clients"]:
            raise ValueError(
                f"{name}: S = {params['S']} clients per round exceeds n_clients = {params['n_clients']}: "
                "set S <= n_clients"
            )

    return rules


#: pFedMe §5's values shared by both data sets: {key: (paper, words)} (moreau.experiments._deviations)
PAPER_SETTINGS = {
    "S": (None, "clients per round S"),  # filled per data set
    "batch": (20, "batch |D|"),
    "R": (20, "local rounds R"),
    "K": (5, "inner steps K"),
    "validation_fraction": (0, "validation share held out of training rows"),
}


def deviations_for(paper_settings, fixed=()):
    """``deviations(params)`` of a comparison: the fixed lines, then each setting of
    ``paper_settings`` (``{key: (paper, words)}``) whose value differs."""

    def deviations(params):
        return [*fixed, *differing(params, paper_settings), *deviation_lines(_with_methods(params))]

    return deviations


def check(name, params):
    """Refuse parameters the comparison cannot run (one-line ``ValueError``)."""
    check_band(name, params["band"])
    if not 0 <= params["validation_fraction"] <= 0.5:
        raise ValueError(
            f"{name}: validation_fraction must be in [0, 0.5] (got {params['validation_fraction']})"
        )
    check_methods(name, _with_methods(params), SHOWN)


def _with_methods(params):
    """``params`` with the keys of your methods (``methods``, ``method_args``) where a caller left them out."""
    return {"methods": [], "method_args": {}, **params}


class _Recorder:
    """Metrics of one run at the evaluated rounds, as ``record`` callbacks of ``_pfedme_runs``."""

    def __init__(self, splits, mu, every, last, labels, optima):
        self.splits, self.mu, self.every, self.last = splits, mu, every, last
        self.labels, self.optima = labels, optima  # (global label, personal label); {label: optimum}
        self.rounds, self.values = [], {}

    def __call__(self, t, w, personal):
        if t % self.every and t != self.last:
            return
        self.rounds.append(t)
        models = ((self.labels[0], w), (self.labels[1], personal() if self.labels[1] else None))
        for label, theta in models:
            if label is None:
                continue
            train, val, test = self.splits
            vals = {"test_accuracy": test.accuracy(theta), "train_loss": train.loss(theta, self.mu)}
            if val is not None:
                vals["validation_accuracy"] = val.accuracy(theta)
            if label in self.optima:
                d = np.sum((np.asarray(theta) - self.optima[label]) ** 2, axis=-1)
                vals["distance_to_optimum"] = float(np.mean(d))
            for k, v in vals.items():
                self.values.setdefault(label, {}).setdefault(k, []).append(v)

    def rows(self, seed, setting):
        return [
            r
            for label, vals in self.values.items()
            for r in long_rows(vals, method=label, seed=seed, rounds=self.rounds, setting=setting)
        ]


def compare(rng, train, test, mu, params, seed):
    """Long rows ``{setting, round, method, seed, metric, value}`` of one seed: ``train``/``test`` =
    (X, y, weights) padded ``(N, n, D)``.  ``rng`` drives the algorithms as before; the validation
    split and the evaluation's own draws come from generators spawned from it (the training stream
    is the same with or without them).

    Resumable within the seed (``moreau.experiments._partial``): after every round the runner's store
    may save the generators' states, the running method's models and the metrics so far; a resumed
    run restores them and continues with the numbers of an uninterrupted run."""
    split_rng, eval_rng = rng.spawn(2)
    # Local only's streams, one per setting (spawning depends on the seed sequence's count of children
    # only, not on the generator's state: the streams of spawning each before its run)
    local_rngs = dict(zip(SETTINGS, rng.spawn(len(SETTINGS)), strict=True))
    val = None
    if params["validation_fraction"] > 0:
        train, val = hold_out(split_rng, *train, params["validation_fraction"])
    X, y, wt = train
    C = params["n_classes"]
    Y = (y[..., None] == np.arange(C)).astype(float)
    n = wt.sum(axis=-1).astype(np.int64)
    # the methods here take gradient steps only: no prox of size D^2 per client, whose memory the
    # Multinomial's check estimates, unless the exact optima are asked for (MNIST: D = 7,850)
    f = runs.objective(X, Y, n, mu, **({} if params["optimum"] else {"max_bytes": float("inf")}))
    splits = (Split(*train), None if val is None else Split(*val), Split(*test))
    T, every = params["rounds"], params["eval_every"]
    common = {"rounds": T, "S": params["S"], "B": params["batch"]}
    optima, cache = {}, {}
    if params["optimum"]:
        optima["FedAvg"] = np.asarray(fl.global_train(f))
    gens = {"rng": rng, "eval": eval_rng, **{f"local:{st}": g for st, g in local_rngs.items()}}
    store = _partial.current()
    saved = store.load()  # {"stage", "round", "rows", "recorders", "generators", "model"} or None
    if saved is not None:
        for key, g in gens.items():
            g.bit_generator.state = saved["generators"][key]
    rows = [] if saved is None else saved["rows"]
    labels = (("FedAvg", None), (None, "Per-FedAvg"), ("pFedMe-GM", "pFedMe-PM"), (None, LOCAL))
    total = len(SETTINGS) * len(labels) * T
    for s, setting in enumerate(SETTINGS):
        hp = params[setting]
        if params["optimum"]:
            if hp["lam"] not in cache:
                cache[hp["lam"]] = tuple(np.asarray(a) for a in fl.fedprox_optimum(f, hp["lam"]))
            optima["pFedMe-GM"], optima["pFedMe-PM"] = cache[hp["lam"]]
        rec = [_Recorder(splits, mu, every, T, lab, optima) for lab in labels]
        if saved is not None and saved["stage"] // len(labels) > s:
            continue  # a setting the interrupted run finished: its rows are in ``rows``
        if saved is not None and saved["stage"] // len(labels) == s:
            for rc, (rounds_done, values) in zip(rec, saved["recorders"], strict=True):
                rc.rounds, rc.values = rounds_done, values

        def stage(j, rec=rec, s=s, saved=saved, rows=rows):
            """``(start, save)`` of method ``j`` of this setting."""
            k = s * len(labels) + j
            start = None
            if saved is not None and saved["stage"] == k:
                start = (saved["round"], saved["model"])

            def save(t, model):
                store.offer(
                    k * T + t,
                    total,
                    lambda: {
                        "stage": k,
                        "round": t,
                        "rows": rows,
                        "recorders": [(rc.rounds, rc.values) for rc in rec],
                        "generators": {key: g.bit_generator.state for key, g in gens.items()},
                        "model": model(),
                    },
                )

            skip = saved is not None and saved["stage"] > k
            return skip, {"start": start, "save": save}

        done, kw = stage(0)
        if not done:
            runs.fedavg(
                rng, X, Y, n, mu, eta=hp["fedavg_eta"], tau=params["R"], record=rec[0], **common, **kw
            )
        done, kw = stage(1)
        if not done:
            runs.per_fedavg(
                rng,
                X,
                Y,
                n,
                mu,
                alpha=hp["alpha"],
                beta=hp["beta_hat"],
                tau=params["R"],
                record=rec[1],
                eval_rng=eval_rng,
                **common,
                **kw,
            )
        done, kw = stage(2)
        if not done:
            runs.pfedme(
                rng,
                X,
                Y,
                n,
                mu,
                lam=hp["lam"],
                eta=hp["eta"],
                beta=hp["beta"],
                R=params["R"],
                K=params["K"],
                inner_eta=params.get("inner_eta", 0) or "client",  # 0 or absent: 1/(L_i + lam) per client
                f=f,
                record=rec[2],
                **common,
                **kw,
            )
        done, kw = stage(3)
        if not done:  # its own stream: the methods above draw exactly as without it
            runs.local_only(
                local_rngs[setting],
                X,
                Y,
                n,
                mu,
                eta=hp["fedavg_eta"],
                tau=params["R"],
                rounds=T,
                B=params["batch"],
                record=rec[3],
                **kw,
            )
        saved = None  # past the resumed stage, every later one runs from its start
        rows += [r for rc in rec for r in rc.rows(seed, setting)]
    # your methods (--method), each on a stream of its own: the numbers above are the same without them
    return rows + user_rows(rng, f, splits, mu, _with_methods(params), seed, SETTINGS)


def _panel_title(tag, setting, data_label, params):
    what = "same hyperparameters (Fig. 3/4)" if setting == "same" else "tuned (Table 1)"
    return f"({tag}) {data_label}: {what}, T = {params['rounds']}"


def finish_compare(rows, params, out, stem, paper, data_label, paper_label, quick=False):
    """Bars (last round, best round on validation, best round on test beside the paper's Table 1
    in every panel), curves over rounds (pFedMe Figs. 3–4 style), the table of selected rounds, and
    the ordering claims (decided on the last round)."""
    kind = params["band"]
    shown = list(dict.fromkeys([*SHOWN, *(r["method"] for r in rows)]))  # the paper's, Local only, yours
    table = [r for st in SETTINGS for r in selections(rows, shown, setting=st)]
    fig, ax = figure(2, width=6.8, aspect=0.95)
    for a, setting, tag in zip(ax[0], SETTINGS, "ab", strict=True):
        handles = selection_bars(
            a,
            [r for r in table if r["setting"] == setting],
            shown,
            kind,
            paper=paper,
            paper_label=f"pFedMe paper, Table 1 ({paper_label}; tuned, best round on test)",
        )
        a.set(ylabel="test accuracy (%)", title=_panel_title(tag, setting, data_label, params))
    S = len({r["seed"] for r in table})
    legend(fig, handles, band_label(kind, S).replace("lines", "bars").replace("band", "error bars"), ncol=2)
    figures = save(fig, out, stem, quick)
    figures += _curves_figure(rows, table, params, out, stem, data_label, quick, shown)

    last = {
        (st, m): by_seed(table, "test_accuracy", setting=st, method=m, selection=LAST)
        for st in SETTINGS
        for m in METHODS
    }
    means = {m: float(last[("tuned", m)].mean()) for m in METHODS}
    paper_order = sorted(METHODS, key=lambda m: -paper[m])

    def ahead(setting, pairs):  # per-seed accuracy differences (points) of (a ahead of b) pairs
        return [last[(setting, a)] - last[(setting, b)] for a, b in pairs], [f"{a} − {b}" for a, b in pairs]

    best = [("pFedMe-PM", m) for m in METHODS if m != "pFedMe-PM"]
    claims = [
        paired(
            "Table 1 ordering (tuned, last round): "
            + " > ".join(paper_order)
            + " (value: measured means, %)",
            *ahead("tuned", list(pairwise(paper_order))),
            value=means,
            units=" points",
        ),
        paired(
            "pFedMe's personalised model is the most accurate (tuned, last round)",
            *ahead("tuned", best),
            value=max(METHODS, key=lambda m: means[m]),
            units=" points",
        ),
        paired(
            "pFedMe's personalised model is the most accurate (same hyperparameters, Fig. 3/4, last round)",
            *ahead("same", best),
            value={m: float(last[("same", m)].mean()) for m in METHODS},
            units=" points",
        ),
        paired(
            "pFedMe-GM beats FedAvg (tuned, last round; 'the global model of pFedMe only performs better than "
            "FedAvg')",
            *ahead("tuned", [("pFedMe-GM", "FedAvg")]),
            value=means["pFedMe-GM"] - means["FedAvg"],
            units=" points",
        ),
    ]
    setting_col = {
        "setting": "hyperparameters: 'same' (pFedMe Fig. 3/4, the same for every method) or 'tuned' "
        "(Table 1's fine-tuned values)"
    }
    return {
        "figures": figures,
        "claims": claims,
        "tables": {f"{stem}-table": table},
        "columns": {
            f"{stem}.csv": columns(METRICS, setting_col),
            f"{stem}-table.csv": {**setting_col, **SELECTION_COLUMNS},
        },
    }


def _curves_figure(rows, table, params, out, stem, data_label, quick, shown=SHOWN):
    """Rows: the two settings; columns: test accuracy (last and best rounds marked), training
    objective, distance to the exact optimum (when computed)."""
    panels = [
        ({"setting": st}, _panel_title(f"{tag}", st, data_label, params))
        for st, tag in zip(SETTINGS, "ab", strict=True)
    ]
    metrics = [
        ("test_accuracy", "test accuracy (%)", False),
        ("train_loss", "training objective", False),
        ("distance_to_optimum", "squared distance to the optimum", True),
    ]
    return curves_figure(
        rows, panels, metrics, shown, params["band"], out, f"{stem}-curves", quick, table=table
    )
