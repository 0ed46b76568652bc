"""``perfedavg-table1``'s local-only baseline (issue 29): each user trains alone, evaluated by the
paper's protocol on its own model, in the CSV, the tables, the summary and the figures, not in the
claims; the paper's methods' numbers are those of a run without it."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
pytest.importorskip("sklearn", reason="perfedavg-table1 needs scikit-learn's digits (extra 'digits')")
from moreau.experiments import _perfedavg_runs, _pfedme_runs, _sweep  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402

NAME = "perfedavg-table1"
SMALL = {"rounds": 10, "seeds": 2, "taus": [10], "eval_every": 5}


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("table1")
    models = []  # Local only's final per-user models, as the loop returns them
    local_only = _pfedme_runs.local_only

    def spy(*args, **kw):
        W = local_only(*args, **kw)
        models.append(np.array(W))
        return W

    mp = pytest.MonkeyPatch()
    mp.setattr(_pfedme_runs, "local_only", spy)
    try:
        m = _sweep.run(get(NAME), out, quick=True, workers=1, overrides=SMALL)
    finally:
        mp.undo()
    return out, m, models


def test_local_only_is_in_the_curves_tables_summary_and_figures_not_in_the_claims(run):
    out, m, _ = run
    rows = read(out / f"{NAME}.csv")
    local = [r for r in rows if r["method"] == "Local only"]
    assert {r["metric"] for r in local} == {
        "test_accuracy",
        "validation_accuracy",
        "test_accuracy_before_update",
        "train_loss",
    }
    assert {r["round"] for r in local} == {"0", "5", "10"} and {r["seed"] for r in local} == {"0", "1"}
    table = read(out / f"{NAME}-table.csv")
    assert {r["selection"] for r in table if r["method"] == "Local only"} >= {"last round"}
    summary = [r for r in read(out / f"{NAME}-summary.csv") if r["method"] == "Local only"]
    assert summary and all(r["paper_mean"] == "" and r["seeds"] == "2" for r in summary)
    assert not any("Local only" in c["claim"] for c in m["claims"])
    assert "Local only" in m["columns"][f"{NAME}-summary.csv"]["method"]


def test_local_only_starts_where_fedavg_starts_and_its_accuracy_is_its_own_models(run):
    """Round 0: both are the zero model evaluated on the same batches (common random numbers), so every
    metric agrees; the last round: the accuracy before the update is that of the models the loop
    returned, computed here with a plain argmax per user."""
    out, _, models = run
    rows = read(out / f"{NAME}.csv")

    def value(method, rnd, seed, metric):
        (r,) = [
            r
            for r in rows
            if (r["method"], r["round"], r["seed"], r["metric"]) == (method, str(rnd), str(seed), metric)
        ]
        return float(r["value"])

    for metric in ("test_accuracy", "validation_accuracy", "test_accuracy_before_update", "train_loss"):
        for seed in (0, 1):
            assert value("Local only", 0, seed, metric) == value("FedAvg + update", 0, seed, metric)
    assert len(models) == 2  # one run per seed (one tau, one alpha)
    # the test rows of seed 0, rebuilt as compute builds them
    from moreau.experiments._sweep_points import point_rng
    from moreau.experiments.pfedme_digits import digits

    params = json.loads((out / "manifest.json").read_text())["configuration"]["effective"]
    X, y = digits()
    data_rng, _, _ = point_rng(0, NAME, {"seed": 0}).spawn(3)
    _, (Xt, yt, wt) = _perfedavg_runs.split(
        X, y, params["n_clients"], params["a"], data_rng, params["train_fraction"]
    )
    W = models[0].reshape(len(Xt), X.shape[1], 10)
    per_user = [
        np.mean(np.argmax(Xt[i][wt[i] > 0] @ W[i], axis=1) == yt[i][wt[i] > 0]) for i in range(len(Xt))
    ]
    assert value("Local only", 10, 0, "test_accuracy_before_update") == pytest.approx(
        100 * np.mean(per_user), abs=1e-9
    )
    # no communication: the models differ per user (a global model would be one row repeated)
    assert np.ptp(models[0], axis=0).max() > 0
