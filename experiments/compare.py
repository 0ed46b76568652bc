r"""``compare``: pFedMe, FedAvg and Per-FedAvg (and your methods) on your federated data set.

``moreau reproduce compare --data FILE [--method MODULE:FUNCTION ...]``: ``FILE`` an ``.npz`` of
per-client arrays ``X_0, y_0, X_1, y_1, …`` (ragged sizes allowed) or a ``.csv`` with a header,
a ``client`` column, a ``label`` column and numeric feature columns (``moreau.experiments._userdata``);
without ``--data``, a built-in example (Synthetic(0.5, 0.5), ``example`` keys).  ``--data FILE``
is ``--set data=FILE``; each ``--method`` appends to ``methods`` (default the built-ins ``FedAvg``,
``Per-FedAvg``, ``pFedMe``; ``--set methods=[...]`` replaces the list).  A method is any function
``algorithm(objective, *, rounds, rng) -> moreau.fl.History`` (``moreau.experiments._methods``).

Per seed (``seeds``): each client's rows split at random into test (``test_fraction``), validation
(``validation_fraction`` of the rest, never trained on) and training rows; the model is multinomial
logistic regression (``moreau.Multinomial``, an intercept column when ``intercept``, ridge ``mu``)
on the clients' training rows (:func:`moreau.ragged`: clients of different sizes in buckets); ``S``
clients per round (0: all) and mini-batches of ``batch`` rows (0: full batches; pFedMe's are 20).  Every
method runs on that split with its own random stream; every ``eval_every`` rounds (and the last)
its models are evaluated: test and validation accuracy over all clients' rows together, the
training objective, and with ``optimum = true`` the squared distance to the exact optimum of the
built-ins' problems (FedAvg: GlobalTrain; pFedMe: the pFedMe optimum, ``moreau.fl.fedprox_optimum``).

Writes ``compare.csv`` (long format: round, method, seed, metric, value; the manifest's
``columns``), ``compare-table.csv`` (per method and seed: the last round, the best round on
validation, the best round on test, which leaks the test set), ``compare.png`` (the three side by
side) and ``compare-curves.png`` (mean and ``band`` over seeds).  No claims: there is no paper.
The run's points carry the data file's sha256 (changed data is recomputed, not mixed), not your
method's code: after changing a method, write to a fresh ``--out``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

import moreau
from moreau import data, fl

from . import _methods, _userdata
from ._config import FRACTION, NONNEGATIVE, Range
from ._curve_figures import curves_figure, legend, selection_bars
from ._curves import SELECTION_COLUMNS, band_label, check_band, columns, long_rows, selections
from ._evaluate import Split
from ._experiment import Experiment
from ._plot import figure, save

__all__ = ["EXPERIMENT"]

METRICS = {
    "test_accuracy": "test accuracy (%): correct predictions of all clients' test rows together",
    "validation_accuracy": "accuracy (%) on the validation rows held out of each client's rows (never trained on)",
    "train_loss": "training objective sum_i n_i f_i(model_i) / sum_i n_i (cross-entropy + mu/2 ||theta||^2)",
    "distance_to_optimum": "squared distance to the exact optimum (optimum = true; FedAvg: GlobalTrain; pFedMe-GM/PM:"
    " the pFedMe optimum and its personalised models), global: ||w_t - w*||^2, personalised: "
    "(1/m) sum_i ||theta_i - theta_i*||^2",
}


def config(quick, trials):
    return {
        "data": "",
        "seeds": trials or (2 if quick else 5),
        "rounds": 10 if quick else 200,
        "methods": ["FedAvg", "Per-FedAvg", "pFedMe"],
        "test_fraction": 0.25,
        "validation_fraction": 0.2,
        "mu": 0.01,
        "intercept": True,
        "S": 0,
        "batch": 0,
        "eval_every": 1,
        "band": "std",
        "optimum": False,
        "fedavg": {"eta": 0.02, "tau": 20},
        "per_fedavg": {"alpha": 0.02, "beta": 0.002, "tau": 20, "variant": "first_order"},
        "pfedme": {"lam": 15.0, "eta": 0.01, "beta": 2.0, "R": 20, "K": 5},
        "example": {"n_clients": 20, "max_size": 100 if quick else 300, "alpha": 0.5, "beta": 0.5},
    }


#: the values each numeric parameter may take (checked before anything is written)
RANGES = {
    "mu": NONNEGATIVE,
    "test_fraction": FRACTION,
    "validation_fraction": FRACTION,
    "fedavg.eta": Range(0, lo_open=True, why="FedAvg's step size"),
    "per_fedavg.alpha": Range(0, lo_open=True, why="Per-FedAvg's inner step size"),
    "per_fedavg.beta": Range(0, lo_open=True, why="Per-FedAvg's outer step size"),
    "pfedme.lam": Range(
        0, lo_open=True, why="pFedMe's regularisation lambda (the Moreau envelope's parameter)"
    ),
    "pfedme.eta": Range(0, lo_open=True, why="pFedMe's step size"),
    "pfedme.beta": Range(0, lo_open=True, why="pFedMe's global mixing parameter beta"),
    "example.n_clients": Range(2, 100_000, why="the example data set's clients"),
    "example.max_size": Range(2, 1_000_000, why="the example data set's largest client"),
    "example.alpha": NONNEGATIVE,
    "example.beta": NONNEGATIVE,
}


def rules(params):
    """The cross-field rules: S clients per round are at most the example data set's clients (a user's
    data set is checked when it is read, in :func:`points`)."""
    if not params["data"] and params["S"] > params["example"]["n_clients"]:
        raise ValueError(
            f"compare: S = {params['S']} clients per round exceeds the {params['example']['n_clients']} clients "
            "of the example data set (example.n_clients): set S <= that, or 0 for every client"
        )


def points(params):
    """One point per seed; the methods imported and the data read now (errors before anything is
    written)."""
    check_band("compare", params["band"])
    for key, lo, hi in (("test_fraction", 0, 1), ("validation_fraction", 0, 1)):
        if not lo <= params[key] < hi:
            raise ValueError(f"compare: {key} must be in [{lo}, {hi}) (got {params[key]})")
    for key in ("S", "batch"):
        if params[key] < 0:
            raise ValueError(
                f"compare: {key} must be >= 0 (0: every client / the full batch; got {params[key]})"
            )
    if params["per_fedavg"]["variant"] not in ("first_order", "hessian"):
        raise ValueError(
            f"compare: per_fedavg.variant must be 'first_order' or 'hessian' "
            f"(got {params['per_fedavg']['variant']!r})"
        )
    names = [_methods.load(spec, params)[0] for spec in params["methods"]]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"compare: two methods are named {dup[0]!r} (methods = {params['methods']})")
    digest = "example"
    if params["data"]:
        clients, _ = _userdata.load(params["data"])
        digest = _userdata.digest(params["data"])
        train = [
            len(y) - sum(_userdata.counts(len(y), params["test_fraction"], params["validation_fraction"]))
            for _, y in clients
        ]
        if params["S"] > len(clients):
            raise ValueError(
                f"compare: S = {params['S']} clients per round exceeds the {len(clients)} clients of "
                f"--data {params['data']}: set S <= {len(clients)}, or 0 for every client"
            )
        k = int(np.argmin(train))
        if params["batch"] > train[k] and "FedAvg" in params["methods"]:
            raise ValueError(
                f"compare: batch = {params['batch']} exceeds client {k}'s {train[k]} training rows (FedAvg "
                f"samples its mini-batches without replacement): set batch <= {train[k]}, or 0 for full "
                "batches"
            )
    return [{"seed": s, "data_sha256": digest} for s in range(params["seeds"])]


def _stream(rng, tag):
    """An independent generator for ``tag`` derived from the point's seed sequence (not its state):
    the split and each method get their own stream, whatever the other methods are."""
    base = rng.bit_generator.seed_seq
    return np.random.default_rng(
        np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, zlib.crc32(tag.encode())))
    )


def _clients(params, rng):
    if params["data"]:
        return _userdata.load(params["data"])[0]
    ex = params["example"]
    P = data.synthetic(
        ex["alpha"], ex["beta"], rng, n_clients=ex["n_clients"], max_size=ex["max_size"], ragged=False
    )
    out = []
    for obj in (P.objective, P.test):
        X, y, w = (np.asarray(a) for a in (obj.X, obj.y, obj.weights))
        out.append([(X[i][w[i] > 0][:, :-1], y[i][w[i] > 0].astype(np.int64)) for i in range(X.shape[0])])
    return [(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]])) for a, b in zip(*out, strict=True)]


def compute(params, point, rng):
    clients = _clients(params, _stream(rng, "data"))
    if params["intercept"]:
        clients = [(np.hstack([X, np.ones((len(X), 1))]), y) for X, y in clients]
    C = int(max(int(y.max()) for _, y in clients)) + 1
    train, val, test = _userdata.split(
        _stream(rng, "split"), clients, params["test_fraction"], params["validation_fraction"]
    )
    sizes = np.array([len(y) for _, y in train])
    f = moreau.ragged(
        moreau.Multinomial,
        np.concatenate([X for X, _ in train]),
        np.concatenate([y for _, y in train]),
        sizes,
        mu=params["mu"],
        n_classes=C,
    )
    splits = {
        "train": Split.from_clients(train),
        "validation": Split.from_clients(val),
        "test": Split.from_clients(test),
    }
    optima = {}
    if params["optimum"]:
        optima["FedAvg"] = np.asarray(fl.global_train(f))
        optima["pFedMe-GM"], optima["pFedMe-PM"] = (
            np.asarray(a) for a in fl.fedprox_optimum(f, params["pfedme"]["lam"])
        )
    T, every = params["rounds"], params["eval_every"]
    ts = sorted(set(range(0, T + 1, every)) | {T})
    rows = []
    for spec in params["methods"]:
        _, algorithm = _methods.load(spec, params)
        h = algorithm(f, rounds=T, rng=_stream(rng, f"method:{spec}"))
        for label, arr in _methods.models(spec, h, len(train), f.dim, T).items():
            vals = {
                "test_accuracy": [splits["test"].accuracy(arr[t]) for t in ts],
                "validation_accuracy": [splits["validation"].accuracy(arr[t]) for t in ts],
                "train_loss": [splits["train"].loss(arr[t], params["mu"]) for t in ts],
            }
            if label in optima:
                vals["distance_to_optimum"] = [
                    float(np.mean(np.sum((arr[t] - optima[label]) ** 2, axis=-1))) for t in ts
                ]
            rows += long_rows(vals, method=label, seed=point["seed"], rounds=ts)
    return rows


def finish(rows, params, out, seed=0, quick=False):
    methods = list(dict.fromkeys(r["method"] for r in rows))
    table = selections(rows, methods)
    kind = params["band"]
    where = Path(params["data"]).name if params["data"] else "built-in example, Synthetic(0.5, 0.5)"
    # a user's data set has no paper whose size a quick run falls short of: no "quick" banner there
    # (the rounds are in the panel titles); the manifest still records the mode
    quick = quick and not params["data"]
    fig, ax = figure(1, width=max(3.4, 0.9 * len(methods) + 1.5), aspect=0.6)
    handles = selection_bars(ax[0][0], table, methods, kind)
    ax[0][0].set(ylabel="test accuracy (%)", title=f"{where}, T = {params['rounds']}")
    legend(
        fig,
        handles,
        band_label(kind, len({r["seed"] for r in table}))
        .replace("lines", "bars")
        .replace("band", "error bars"),
        ncol=2,
    )
    figures = save(fig, out, "compare", quick)
    figures += curves_figure(
        rows,
        [({}, where)],
        [
            ("test_accuracy", "test accuracy (%)", False),
            ("train_loss", "training objective", False),
            ("distance_to_optimum", "squared distance to the optimum", True),
        ],
        methods,
        kind,
        out,
        "compare-curves",
        quick,
        table=table,
    )
    return {
        "figures": figures,
        "claims": [],
        "tables": {"compare-table": table},
        "columns": {"compare.csv": columns(METRICS), "compare-table.csv": SELECTION_COLUMNS},
    }


EXPERIMENT = Experiment(
    name="compare",
    paper="your data",
    figure="pFedMe, FedAvg, Per-FedAvg and your methods on your data",
    summary="pFedMe, FedAvg, Per-FedAvg and your methods (--method MODULE:FUNCTION) on your federated data set "
    "(--data FILE.npz or .csv): curves over rounds, last and best rounds",
    expected=("~5 s", "~2 min"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    ranges=RANGES,
    rules=rules,
)
