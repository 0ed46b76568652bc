"""pFedMe / Per-FedAvg experiments of ``moreau reproduce`` in --quick mode."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")

import moreau as mo  # noqa: E402
from moreau import data, fl  # noqa: E402
from moreau.experiments import _sweep  # noqa: E402
from moreau.experiments.perfedavg_vs_pfedme import _maml_quadratic  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402

pytestmark = pytest.mark.reproduce


def test_maml_objective_of_quadratics_is_the_composition():
    """f_i(w - alpha grad f_i(w)) evaluated directly equals the quadratic the experiment builds (up to a
    constant), and Per-FedAvg (exact Hessian, tau = 1) converges to its minimiser."""
    P = data.least_squares(3, m=4, n=20, d=3, R=0.5, mu=1.0, L=4.0)
    f, alpha = P.objective, 0.125
    q = _maml_quadratic(f, alpha)
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((2, 4, 3))
    direct = lambda w: np.asarray(f.value(w - alpha * np.asarray(f.grad(w))))  # noqa: E731
    np.testing.assert_allclose(
        direct(w1) - direct(w2), np.asarray(q.value(w1)) - np.asarray(q.value(w2)), rtol=1e-12, atol=1e-12
    )
    w_star = np.asarray(fl.global_train(q))
    h = fl.per_fedavg(f, alpha=alpha, beta=0.1, tau=1, rounds=3000)
    np.testing.assert_allclose(np.asarray(h.w_global[-1]), w_star, rtol=0, atol=1e-9)


def test_perfedavg_vs_pfedme_quick(tmp_path):
    manifest = _sweep.run(get("perfedavg-vs-pfedme"), tmp_path, quick=True, workers=1)
    with open(tmp_path / "perfedavg-vs-pfedme.csv", newline="") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    R = sorted({float(r["R"]) for r in rows})

    def gap(method):
        return np.array(
            [
                np.mean(
                    [
                        float(r["gap_to_client_optimum"])
                        for r in rows
                        if r["method"] == method and float(r["R"]) == x
                    ]
                )
                for x in R
            ]
        )

    g = gap("GlobalTrain")
    assert np.all(np.diff(g) > 0)
    for method in ("pFedMe λ=15", "pFedMe λ=1", "Per-FedAvg α=1/(2L)"):
        assert np.all(gap(method) < g), method  # every personalised method is closer than one global model
    assert np.all(gap("pFedMe λ=1") < gap("pFedMe λ=15"))  # smaller lambda, more personalisation
    assert all(float(r["gap_to_client_optimum"]) == 0 for r in rows if r["method"] == "LocalTrain")
    (v,) = [
        v
        for v in manifest["claims"]
        if v["claim"] == "pFedMe (lambda = 15) and Per-FedAvg personalise: gap below GlobalTrain's at every R"
    ]
    assert (
        v["verdict"] == "holds" and v["method"] == "paired t over 3 seeds, Holm-adjusted over 10 comparisons"
    )


def _tiny(seed=0, m=4, n=12, d=3, C=3):
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.standard_normal((m, n, d)), np.ones((m, n, 1))], axis=-1)
    y = rng.integers(0, C, (m, n)).astype(float)
    wt = (np.arange(n) < rng.integers(n // 2, n + 1, m)[:, None]).astype(float)  # padded clients
    return X, y, wt, (y[..., None] == np.arange(C)).astype(float), wt.sum(-1).astype(int)


def test_minibatch_gradient_is_the_multinomial_gradient():
    from moreau.experiments import _pfedme_runs as runs

    X, y, wt, Y, _ = _tiny()
    theta = np.random.default_rng(1).standard_normal((4, 12))
    f = mo.Multinomial(X, y, n_classes=3, mu=0.3, weights=wt)
    np.testing.assert_allclose(
        runs.grad(X, Y, wt, 0.3, theta), np.asarray(f.grad(theta)), rtol=1e-12, atol=1e-13
    )


def test_full_batch_runs_equal_moreau_fl():
    """With full batches and S = N the FedAvg and Per-FedAvg loops of the experiments (independent
    implementations) give moreau.fl's updates."""
    from moreau.experiments import _pfedme_runs as runs

    X, y, wt, Y, n = _tiny(2)
    f = mo.Multinomial(X, y, n_classes=3, mu=0.1, weights=wt)
    rng = np.random.default_rng(0)  # unused: full batches, all clients
    w = runs.fedavg(rng, X, Y, n, 0.1, eta=0.1, tau=3, rounds=4)
    np.testing.assert_allclose(
        w, np.asarray(fl.fedavg(f, eta=0.1, tau=3, rounds=4).w_global[-1]), rtol=1e-12, atol=1e-13
    )
    w, _ = runs.per_fedavg(rng, X, Y, n, 0.1, alpha=0.05, beta=0.1, tau=3, rounds=4)
    h = fl.per_fedavg(f, alpha=0.05, beta=0.1, tau=3, rounds=4, variant="first_order")
    np.testing.assert_allclose(w, np.asarray(h.w_global[-1]), rtol=1e-12, atol=1e-13)
    # pFedMe: runs.pfedme now calls moreau.fl.pfedme itself; its independent check is the raw-row
    # reference loop in tests/test_fl_pfedme.py


def _means(rows):
    out = {}
    for r in rows:
        out.setdefault((r["setting"], r["method"]), []).append(float(r["test_accuracy"]))
    return {k: float(np.mean(v)) for k, v in out.items()}


@pytest.mark.parametrize("name", ["pfedme-synthetic", "pfedme-digits"])
def test_pfedme_comparison_quick(tmp_path, name):
    if name == "pfedme-digits":
        pytest.importorskip("sklearn", reason="pfedme-digits needs scikit-learn (extra 'digits')")
    manifest = _sweep.run(get(name), tmp_path, quick=True, workers=1)
    with open(tmp_path / f"{name}.csv", newline="") as fh:
        curves = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    with open(tmp_path / f"{name}-table.csv", newline="") as fh:
        table = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert list(curves[0]) == ["setting", "round", "method", "seed", "metric", "value"]
    assert set(manifest["columns"][f"{name}.csv"]) >= {
        "setting",
        "round",
        "method",
        "seed",
        "metric",
        "value",
        "metrics",
    }
    assert {r["metric"] for r in curves} == {"test_accuracy", "validation_accuracy", "train_loss"}
    assert {int(r["round"]) for r in curves} == set(range(11))  # quick: T = 10, every round evaluated
    rows = [r for r in table if r["selection"] == "last round"]
    assert {r["seed"] for r in rows} == {"0", "1"} and len(rows) == 2 * 2 * 5 and len(table) == 3 * len(rows)
    assert all(0 <= float(r["test_accuracy"]) <= 100 for r in rows)
    at = {
        (r["setting"], r["method"], r["seed"], int(r["round"])): float(r["value"])
        for r in curves
        if r["metric"] == "test_accuracy"
    }
    by = {(r["setting"], r["method"], r["seed"], r["selection"]): r for r in table}
    for (
        setting,
        method,
        seed,
        what,
    ), r in by.items():  # the table is the curves' numbers at the chosen rounds
        assert float(r["test_accuracy"]) == at[(setting, method, seed, int(r["round"]))]
        if what != "last round":
            assert float(r["test_accuracy"]) <= float(
                by[(setting, method, seed, "best round on test (leaks the test set)")]["test_accuracy"]
            )
    assert {r["method"] for r in rows} == {"FedAvg", "Per-FedAvg", "pFedMe-GM", "pFedMe-PM", "Local only"}
    mean = _means(rows)
    for setting in ("same", "tuned"):  # the personalised model is far ahead of both global models
        for other in ("FedAvg", "pFedMe-GM"):
            assert mean[(setting, "pFedMe-PM")] > mean[(setting, other)] + 10, (setting, other)
    # the manifest's comparisons are the last round's per-seed differences; their intervals scipy's paired t
    acc = {}
    for r in sorted(rows, key=lambda r: int(r["seed"])):
        acc.setdefault((r["setting"], r["method"]), []).append(float(r["test_accuracy"]))
    claims = {v["claim"]: v for v in manifest["claims"]}
    table1 = next(v for k, v in claims.items() if k.startswith("Table 1 ordering"))
    assert [c["comparison"] for c in table1["comparisons"]] == [
        "pFedMe-PM − Per-FedAvg",
        "Per-FedAvg − pFedMe-GM",
        "pFedMe-GM − FedAvg",
    ]
    assert table1["method"] == "paired t over 2 seeds, Holm-adjusted over 3 comparisons"
    for v in claims.values():
        setting = "same" if "same hyperparameters" in v["claim"] else "tuned"
        for c in v["comparisons"]:
            a, b = c["comparison"].split(" − ")
            d = np.subtract(acc[(setting, a)], acc[(setting, b)])
            ci = stats.ttest_1samp(d, 0.0).confidence_interval(c["level"])
            assert c["estimate"] == pytest.approx(d.mean(), rel=1e-9, abs=1e-9)
            assert c["interval"] == pytest.approx([ci.low, ci.high], rel=1e-9, abs=1e-9)
        words = {c["verdict"] for c in v["comparisons"]}
        assert v["verdict"] == (
            "fails" if "fails" in words else "holds" if words == {"holds"} else "undecided"
        )


def test_digits_split_two_labels_per_client():
    pytest.importorskip("sklearn", reason="pfedme-digits needs scikit-learn (extra 'digits')")
    from sklearn.datasets import load_digits

    from moreau.experiments.pfedme_digits import split

    d = load_digits()
    X = np.concatenate([d.data / 16.0, np.ones((d.data.shape[0], 1))], axis=1)
    (Xtr, ytr, wtr), (Xte, yte, wte) = split(X, d.target, 20, np.random.default_rng(0))
    assert wtr.sum() + wte.sum() == d.target.size  # every image used once
    for i in range(20):  # a loop in a test, over the 20 clients
        labs = set(ytr[i][wtr[i] > 0].astype(int)) | set(yte[i][wte[i] > 0].astype(int))
        assert len(labs) == 2, (i, labs)
        assert wtr[i].sum() == np.floor(0.75 * (wtr[i].sum() + wte[i].sum()))
    # the rows kept are the data set's rows: sum of pixel vectors per label is preserved
    tot = sum(
        np.einsum("nd,n->d", Xs[i], (ws[i] > 0) * (ys[i] == 3))
        for Xs, ys, ws in ((Xtr, ytr, wtr), (Xte, yte, wte))
        for i in range(20)
    )
    np.testing.assert_allclose(tot, X[d.target == 3].sum(axis=0), rtol=1e-12)
