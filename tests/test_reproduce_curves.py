"""Curves over rounds (issue 21): long-format rows, bands over seeds, last and best rounds, the
validation split, per-round evaluation, the figures' axes and the demos' CSV.

References are computed here independently: numpy / scipy statistics for the bands, a direct
``moreau.Multinomial`` for the training objective, a Python loop for accuracies.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
import moreau as mo  # noqa: E402
from moreau.experiments import _curves, _evaluate  # noqa: E402
from moreau.experiments import _pfedme_runs as runs  # noqa: E402

BEST_TEST, BEST_VAL, LAST = _curves.BEST_TEST, _curves.BEST_VAL, _curves.LAST


def test_long_rows_round_trip_and_nan_left_out():
    rows = _curves.long_rows(
        {"acc": [1.0, 2.0, np.nan, 4.0]}, method="A", seed=1, setting="s"
    ) + _curves.long_rows({"acc": [5.0, 6.0, 7.0, 8.0]}, method="A", seed=0, setting="s")
    assert list(rows[0]) == ["setting", "round", "method", "seed", "metric", "value"]
    ts, v, seeds = _curves.curve(rows, "acc", "A", setting="s")
    assert seeds == [0, 1] and ts.tolist() == [0, 1, 3]  # round 2 of seed 1 is missing: only shared rounds
    np.testing.assert_array_equal(v, [[5, 6, 8], [1, 2, 4]])


@pytest.mark.parametrize("kind", list(_curves.BANDS))
def test_bands_against_numpy_and_scipy(kind):
    v = np.random.default_rng(0).lognormal(size=(5, 7))
    mean, lo, hi = _curves.band(v, kind)
    np.testing.assert_allclose(mean, v.mean(axis=0), rtol=1e-15)
    if kind == "std":
        half = v.std(axis=0, ddof=1)
        np.testing.assert_allclose([lo, hi], [mean - half, mean + half], rtol=1e-14)
    elif kind == "ci95":
        ci = stats.t.interval(0.95, 4, loc=v.mean(axis=0), scale=stats.sem(v, axis=0))
        np.testing.assert_allclose([lo, hi], ci, rtol=1e-12)
    else:
        np.testing.assert_array_equal([lo, hi], [v.min(axis=0), v.max(axis=0)])
    g = _curves.band(v, kind, log=True)  # on a log axis: the band of the logarithms
    np.testing.assert_allclose(g, np.exp(_curves.band(np.log(v), kind)), rtol=1e-13)
    one = _curves.band(v[:1], kind)
    assert all(np.array_equal(b, v[0]) for b in one)  # one seed: no band
    assert kind in _curves.band_label(kind, 5) or _curves.BANDS[kind] in _curves.band_label(kind, 5)
    assert "no band" in _curves.band_label(kind, 1)


def test_selections_last_best_on_test_and_on_validation():
    acc = {0: [10, 50, 40, 30], 1: [10, 20, 60, 60]}
    val = {0: [5, 20, 90, 10], 1: [5, 70, 20, 70]}  # validation disagrees with test
    rows = [
        r
        for s in (0, 1)
        for r in _curves.long_rows(
            {"test_accuracy": acc[s], "validation_accuracy": val[s]}, method="M", seed=s
        )
    ]
    table = {
        (r["seed"], r["selection"]): (r["round"], r["test_accuracy"]) for r in _curves.selections(rows, ["M"])
    }
    assert table[(0, LAST)] == (3, 30) and table[(1, LAST)] == (3, 60)
    assert table[(0, BEST_TEST)] == (1, 50) and table[(1, BEST_TEST)] == (2, 60)  # ties: the earliest round
    assert table[(0, BEST_VAL)] == (2, 40) and table[(1, BEST_VAL)] == (1, 20)  # honest: not the test's best
    no_val = [r for r in rows if r["metric"] == "test_accuracy"]
    assert {r["selection"] for r in _curves.selections(no_val, ["M"])} == {LAST, BEST_TEST}


def test_hold_out_splits_each_clients_rows():
    rng = np.random.default_rng(0)
    m, n, D = 4, 9, 2
    sizes = np.array([9, 1, 5, 7])
    w = (np.arange(n) < sizes[:, None]).astype(float)
    X = rng.standard_normal((m, n, D)) * w[..., None]
    y = rng.integers(0, 3, (m, n)) * w
    (Xk, yk, wk), (Xh, yh, wh) = _evaluate.hold_out(np.random.default_rng(1), X, y, w, 0.3)
    np.testing.assert_array_equal(wh.sum(axis=1), np.floor(0.3 * sizes))
    np.testing.assert_array_equal(wk.sum(axis=1), sizes - np.floor(0.3 * sizes))
    for i in range(m):  # a loop over the clients: the rows kept and held are the client's, each once
        rows = {tuple(r) for r in np.c_[X[i], y[i]][w[i] > 0]}
        kept = [tuple(r) for r in np.c_[Xk[i], yk[i]][wk[i] > 0]]
        held = [tuple(r) for r in np.c_[Xh[i], yh[i]][wh[i] > 0]]
        assert sorted(kept + held) == sorted(rows)
        assert np.all(Xk[i][wk[i] == 0] == 0) and np.all(Xh[i][wh[i] == 0] == 0)  # padding stays zero


def _clients(seed=0, m=5, D=3, C=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 12, m)
    n = sizes.max()
    w = (np.arange(n) < sizes[:, None]).astype(float)
    X = rng.standard_normal((m, n, D)) * w[..., None]
    y = (rng.integers(0, C, (m, n)) * w).astype(float)
    return X, y, w


def test_split_accuracy_and_loss_against_a_loop_and_multinomial():
    X, y, w = _clients()
    m, _, D = X.shape
    mu, rng = 0.3, np.random.default_rng(2)
    split = _evaluate.Split(X, y, w)
    f = mo.Multinomial(X, y, n_classes=3, mu=mu, weights=w)
    for theta in (rng.standard_normal(D * 3), rng.standard_normal((m, D * 3))):
        per = np.broadcast_to(theta, (m, D * 3))
        hits = [
            np.argmax(X[i, j] @ per[i].reshape(D, 3)) == y[i, j]
            for i in range(m)
            for j in range(X.shape[1])
            if w[i, j] > 0
        ]
        assert split.accuracy(theta) == pytest.approx(100 * np.mean(hits), rel=1e-15)
        n_i = w.sum(axis=1)
        expected = float(np.sum(n_i * np.asarray(f.value(per))) / n_i.sum())
        assert split.loss(theta, mu) == pytest.approx(expected, rel=1e-12)


def test_recording_every_round_leaves_the_runs_unchanged():
    """The record hooks evaluate without touching the training stream: final models equal those of
    runs without them, and the last recorded models are the returned ones."""
    X, y, w = _clients(3)
    C = 3
    Y = (y[..., None] == np.arange(C)).astype(float)
    n = w.sum(axis=1).astype(np.int64)
    common = {"rounds": 3, "S": 3, "B": 4}
    seen = {}

    def rec(name):
        def record(t, g, personal):
            seen.setdefault(name, []).append((t, np.array(g), personal()))

        return record

    eval_rng = np.random.default_rng(99)
    plain = (
        runs.fedavg(np.random.default_rng(0), X, Y, n, 0.1, eta=0.1, tau=2, **common),
        runs.per_fedavg(np.random.default_rng(0), X, Y, n, 0.1, alpha=0.05, beta=0.1, tau=2, **common),
        runs.pfedme(
            np.random.default_rng(0),
            X,
            Y,
            n,
            0.1,
            lam=5.0,
            eta=0.05,
            beta=1.0,
            R=2,
            K=2,
            inner_eta="client",
            **common,
        ),
    )
    hooked = (
        runs.fedavg(np.random.default_rng(0), X, Y, n, 0.1, eta=0.1, tau=2, record=rec("fa"), **common),
        runs.per_fedavg(
            np.random.default_rng(0),
            X,
            Y,
            n,
            0.1,
            alpha=0.05,
            beta=0.1,
            tau=2,
            record=rec("pa"),
            eval_rng=eval_rng,
            **common,
        ),
        runs.pfedme(
            np.random.default_rng(0),
            X,
            Y,
            n,
            0.1,
            lam=5.0,
            eta=0.05,
            beta=1.0,
            R=2,
            K=2,
            inner_eta="client",
            record=rec("pf"),
            **common,
        ),
    )
    np.testing.assert_array_equal(plain[0], hooked[0])
    for a, b in zip(plain[1:], hooked[1:], strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    for name, final in (("fa", (hooked[0], None)), ("pa", hooked[1]), ("pf", hooked[2])):
        assert [t for t, _, _ in seen[name]] == [0, 1, 2, 3]
        np.testing.assert_array_equal(seen[name][-1][1], final[0])
        if final[1] is not None:
            np.testing.assert_array_equal(seen[name][-1][2], final[1])


def test_bars_use_the_data_range_and_show_the_paper_in_every_panel(tmp_path):
    from moreau.experiments._curve_figures import selection_bars
    from moreau.experiments._plot import figure, save

    table = [
        {"method": m, "seed": s, "selection": what, "round": 5, "test_accuracy": acc + s + k}
        for m, acc in (("A", 80.0), ("B", 90.0))
        for s in (0, 1)
        for k, what in enumerate((LAST, BEST_TEST))
    ]
    fig, ax = figure(2)
    for a in ax[0]:
        handles = selection_bars(
            a, table, ["A", "B"], "std", paper={"A": 95.0, "B": 70.0}, paper_label="paper"
        )
        lo, hi = a.get_ylim()
        assert 60 < lo < 70 and 95 < hi < 110  # the data and the paper's values, not 0 to 119
        stars = [ln for ln in a.get_lines() if ln.get_marker() == "*"]
        assert len(stars) == 1 and stars[0].get_ydata().tolist() == [95.0, 70.0]
    assert [h.get_label() for h in handles] == [LAST, BEST_TEST, "paper"]
    save(fig, tmp_path, "bars")  # closes it and restores the caller's matplotlib settings


def test_pfedme_without_validation_has_no_validation_round(tmp_path):
    pytest.importorskip("sklearn", reason="pfedme-digits needs scikit-learn (extra 'digits')")
    from moreau.experiments import _sweep
    from moreau.experiments.registry import get

    m = _sweep.run(
        get("pfedme-digits"),
        tmp_path,
        quick=True,
        workers=1,
        overrides={"validation_fraction": 0.0, "rounds": 4, "eval_every": 2, "seeds": 1, "band": "minmax"},
    )
    with open(tmp_path / "pfedme-digits.csv", newline="") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    with open(tmp_path / "pfedme-digits-table.csv", newline="") as fh:
        table = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert {r["metric"] for r in rows} == {"test_accuracy", "train_loss"}
    assert {r["round"] for r in rows} == {"0", "2", "4"}
    assert {r["selection"] for r in table} == {LAST, BEST_TEST}
    assert "pfedme-digits-curves.png" in m["figures"] and m["tables"] == ["pfedme-digits-table.csv"]


@pytest.mark.parametrize("name", list(__import__("moreau.experiments.demos", fromlist=["DEMOS"]).DEMOS))
def test_every_demo_writes_its_plotted_numbers(tmp_path, name):
    from moreau.experiments import _sweep
    from moreau.experiments.registry import get

    m = _sweep.run(get(name), tmp_path, workers=1)
    with open(tmp_path / f"{name}.csv", newline="") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert len(rows) > 50 and list(rows[0]) == ["panel", "series", "x", "y"]
    assert all(np.isfinite(float(r["y"])) for r in rows)
    assert set(m["columns"][f"{name}.csv"]) == {"panel", "series", "x", "y"}


def test_pfedme_comparison_measures_the_distance_to_the_exact_optima():
    """optimum = true on a tiny problem: FedAvg to GlobalTrain, pFedMe's models to the pFedMe optimum
    (round 0 is the zero model: the distance is the optimum's squared norm), none for Per-FedAvg."""
    from moreau import fl
    from moreau.experiments._pfedme_compare import compare

    X, y, w = _clients(4, m=4, D=3, C=3)
    test = _clients(5, m=4, D=3, C=3)
    hp = {"fedavg_eta": 0.1, "alpha": 0.05, "beta_hat": 0.05, "lam": 5.0, "eta": 0.05, "beta": 1.0}
    params = {
        "n_classes": 3,
        "rounds": 6,
        "eval_every": 3,
        "S": None,
        "batch": None,
        "R": 2,
        "K": 3,
        "validation_fraction": 0.0,
        "optimum": True,
        "same": hp,
        "tuned": dict(hp, lam=8.0),
    }
    rows = compare(np.random.default_rng(0), (X, y, w), test, 0.1, params, seed=0)
    f = mo.Multinomial(X, y, n_classes=3, mu=0.1, weights=w)
    for setting, lam in (("same", 5.0), ("tuned", 8.0)):
        d = {
            (r["method"], r["round"]): r["value"]
            for r in rows
            if r["metric"] == "distance_to_optimum" and r["setting"] == setting
        }
        assert {m for m, _ in d} == {"FedAvg", "pFedMe-GM", "pFedMe-PM"} and {t for _, t in d} == {0, 3, 6}
        w_g, w_l = (np.asarray(a) for a in fl.fedprox_optimum(f, lam))
        assert d[("FedAvg", 0)] == pytest.approx(np.sum(np.asarray(fl.global_train(f)) ** 2), rel=1e-9)
        assert d[("pFedMe-GM", 0)] == pytest.approx(np.sum(w_g**2), rel=1e-9)
        assert d[("pFedMe-PM", 0)] == pytest.approx(np.mean(np.sum(w_l**2, axis=-1)), rel=1e-9)
        assert d[("pFedMe-GM", 6)] < d[("pFedMe-GM", 0)]
