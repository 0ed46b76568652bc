"""``fedprox-fig1b`` (the digits stand-in for MNIST-Logit) in --quick mode: split and CSV checks."""

from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
pytest.importorskip("sklearn", reason="fedprox-fig1b needs scikit-learn's digits (extra 'digits')")
from scipy.optimize import minimize  # noqa: E402
from scipy.special import logsumexp  # noqa: E402

from moreau.experiments import _sweep  # noqa: E402
from moreau.experiments import fedprox_fig1b as fig1b_module  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402

pytestmark = pytest.mark.reproduce


@pytest.fixture(scope="module")
def fig1b(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig1b")
    manifest = _sweep.run(get("fedprox-fig1b"), out, quick=True, workers=1)
    with open(out / "fedprox-fig1b.csv", newline="") as fh:
        return manifest, list(csv.DictReader(fh))


def _at(rows, method, s, key):
    return np.mean([float(r[key]) for r in rows if r["method"] == method and int(r["s"]) == s])


@pytest.mark.parametrize("s", [2, 4, 6, 8, 10])
def test_split_gives_each_client_s_classes_evenly_and_a_disjoint_test_set(s):
    _, y = fig1b_module.digits(pooled=True)
    train, classes, test = fig1b_module.split(np.random.default_rng(3), y, s)
    assert train.shape == (10, 120) and len(np.unique(train)) == 1200
    for i in range(10):
        labels, counts = np.unique(y[train[i]], return_counts=True)
        assert sorted(labels) == sorted((i + np.arange(s)) % 10) and np.all(counts == 120 // s)
    assert np.all(np.bincount(y[train.ravel()], minlength=10) == 120)
    assert np.intersect1d(train, test).size == 0 and len(train.ravel()) + len(test) == len(y) == 1797


def test_split_rejects_a_class_count_that_does_not_divide_n():
    _, y = fig1b_module.digits(pooled=True)
    with pytest.raises(ValueError, match="multiple of s = 7"):
        fig1b_module.split(np.random.default_rng(0), y, 7)


def test_globaltrain_accuracy_matches_an_independent_softmax_fit(fig1b):
    """GlobalTrain at s = 2 refitted with scipy's L-BFGS on a softmax loss written here."""
    manifest, rows = fig1b
    params, point = fig1b_module.config(True, None), {"s": 2, "seed": 0}
    X, y = fig1b_module.digits(pooled=True)
    rng = _sweep.point_rng(manifest["arguments"]["seed"], "fedprox-fig1b", point)
    train, _, test = fig1b_module.split(rng, y, 2)
    Xtr, ytr, p = X[train.ravel()], y[train.ravel()], X.shape[1]

    def loss(theta):
        Z = Xtr @ theta.reshape(p, 10)
        P = np.exp(Z - logsumexp(Z, axis=1, keepdims=True))
        P[np.arange(len(ytr)), ytr] -= 1
        val = np.mean(logsumexp(Z, axis=1) - Z[np.arange(len(ytr)), ytr]) + params["mu"] / 2 * theta @ theta
        return val, (Xtr.T @ P / len(ytr)).ravel() + params["mu"] * theta

    res = minimize(
        loss, np.zeros(p * 10), jac=True, method="L-BFGS-B", options={"gtol": 1e-10, "maxiter": 5000}
    )
    acc = np.mean(np.argmax(X[test] @ res.x.reshape(p, 10), axis=1) == y[test])
    assert abs(acc - _at(rows, "GlobalTrain", 2, "global_accuracy")) <= 1 / len(test) + 1e-12


def test_adaptive_lambda_is_theorem_1s_rule_with_the_plugin_R(fig1b):
    _, rows = fig1b
    for r in rows:
        if r["method"] == "FedProx adaptive λ":
            R = float(r["R_plugin"])
            expected = 2 / (np.sqrt(120) * R) if R <= 120**-0.5 else 4 / (120 * R**2)
            assert float(r["lam"]) == pytest.approx(expected, rel=1e-12)


def test_personalisation_pays_locally_under_strong_heterogeneity(fig1b):
    """s = 2: FedProx's local accuracy falls as lam grows (towards GlobalTrain) and every lam beats
    GlobalTrain on the clients' own classes; LocalTrain's averaged model is the worst global model."""
    _, rows = fig1b
    local = [_at(rows, f"FedProx λ={lam}", 2, "local_accuracy") for lam in (0.5, 1.5, 2.5)]
    assert local[0] > local[1] > local[2] > _at(rows, "GlobalTrain", 2, "local_accuracy")
    glob = {m: _at(rows, m, 2, "global_accuracy") for m in fig1b_module.METHODS}
    assert glob["LocalTrain"] == min(glob.values()) and glob["GlobalTrain"] - glob["LocalTrain"] > 0.1
    # s = 10 (every client sees every class): the global models agree to within 0.03
    at10 = [_at(rows, m, 10, "global_accuracy") for m in fig1b_module.METHODS]
    assert max(at10) - min(at10) < 0.03


def test_manifest_records_the_papers_claims_as_the_csv_shows_them(fig1b):
    manifest, rows = fig1b
    claims = manifest["claims"]
    assert len(claims) == 5
    for v in claims:  # quick: one split per s, so no comparison across seeds can decide
        assert v["verdict"] == "undecided" and "needs at least 2" in v["reason"] and v["interval"] is None
        assert v["seeds"] == 1 and v["quick"] is True
    ss = (2, 6, 10)
    gt = np.array([_at(rows, "GlobalTrain", s, "global_accuracy") for s in ss])
    others = np.array(
        [
            [_at(rows, m, s, "global_accuracy") for s in ss]
            for m in fig1b_module.METHODS
            if m != "GlobalTrain" and m != "FedProx adaptive λ"
        ]
    )

    def value(start):  # the plotted means the claim records
        (v,) = [v["value"] for v in claims if v["claim"].startswith(start)]
        return v

    assert value("GlobalTrain has the best global test accuracy at every s") == pytest.approx(gt.tolist())
    fp = others[1:]
    key = "FedProx's global test accuracy does not decrease as lambda grows (towards GlobalTrain) at every s"
    np.testing.assert_allclose(value(key), fp, rtol=1e-12)
    err = {
        m: 1 - np.array([_at(rows, m, s, "local_accuracy") for s in ss])
        for m in ("LocalTrain", "GlobalTrain", "FedProx adaptive λ")
    }
    ratio = err["FedProx adaptive λ"] / np.minimum(err["LocalTrain"], err["GlobalTrain"])
    key = "adaptive FedProx's local test error within 1.5x of min(LocalTrain, GlobalTrain) at every s"
    assert value(key) == pytest.approx(ratio.tolist()) and np.all(ratio <= 1.5)
    assert (
        manifest["theorems"]["fedprox.thm1"]["assumptions"]["w_star known (a population minimiser)"] is False
    )
