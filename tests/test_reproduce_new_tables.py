"""``perfedavg-table1`` (Per-FedAvg's Table 1) and ``pfedme-k-beta`` (pFedMe's Figs. 1-2) in --quick mode."""

from __future__ import annotations

import csv
import json
from collections import Counter

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")

import moreau._cli as cli  # noqa: E402
from moreau.experiments import _sweep  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402

VERDICTS = {"holds", "fails", "undecided"}
PNG = b"\x89PNG\r\n\x1a\n"


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


def run_quick(tmp_path_factory, name):
    pytest.importorskip("sklearn", reason=f"{name} needs scikit-learn (extra 'digits')")
    out = tmp_path_factory.mktemp(name)
    manifest = _sweep.run(get(name), out, quick=True, workers=1)
    return out, manifest


@pytest.fixture(scope="module")
def table1(tmp_path_factory):
    return run_quick(tmp_path_factory, "perfedavg-table1")


@pytest.fixture(scope="module")
def kbeta(tmp_path_factory):
    return run_quick(tmp_path_factory, "pfedme-k-beta")


def check_verdict_shape(v, seeds, n_comparisons):
    assert v["verdict"] in VERDICTS and v["quick"] is True and v["seeds"] == seeds
    family = "one comparison" if n_comparisons == 1 else f"Holm-adjusted over {n_comparisons} comparisons"
    assert v["method"] == f"paired t over {seeds} seeds, {family}"
    assert len(v["comparisons"]) == n_comparisons
    words = {c["verdict"] for c in v["comparisons"]}
    assert words <= VERDICTS
    assert v["verdict"] == ("fails" if "fails" in words else "holds" if words == {"holds"} else "undecided")
    for c in v["comparisons"]:
        lo, hi = c["interval"]
        assert lo <= c["estimate"] <= hi


def test_list_shows_both(capsys):
    assert cli.main(["reproduce", "--list"]) == 0
    text = capsys.readouterr().out
    assert "perfedavg-table1" in text and "pfedme-k-beta" in text


# ---------------------------------------------------------------- perfedavg-table1


@pytest.mark.reproduce
def test_perfedavg_table1_csvs_and_figures(table1):
    out, m = table1
    from moreau.experiments._perfedavg_runs import SHOWN
    from moreau.experiments.perfedavg_table1 import STAND_IN

    curves = read_csv(out / "perfedavg-table1.csv")
    assert list(curves[0]) == ["tau", "alpha", "round", "method", "seed", "metric", "value"]
    assert {r["metric"] for r in curves} == {
        "test_accuracy",
        "validation_accuracy",
        "test_accuracy_before_update",
        "train_loss",
    }
    assert {r["method"] for r in curves} == set(SHOWN)  # the paper's three and Local only
    assert {(int(r["tau"]), float(r["alpha"])) for r in curves} == {(10, 0.01), (4, 0.01)}
    assert {int(r["round"]) for r in curves} == set(range(0, 101, 5))  # quick: 100 rounds, every 5th
    assert all(0 <= float(r["value"]) <= 100 for r in curves if "accuracy" in r["metric"])
    # each (row, method, seed, metric, round) once
    assert (
        max(
            Counter(
                (r["tau"], r["alpha"], r["method"], r["seed"], r["metric"], r["round"]) for r in curves
            ).values()
        )
        == 1
    )

    table = read_csv(out / "perfedavg-table1-table.csv")
    assert list(table[0]) == [
        "tau",
        "alpha",
        "method",
        "seed",
        "selection",
        "round",
        "test_accuracy",
        "validation_accuracy",
    ]
    last = [r for r in table if r["selection"] == "last round"]
    assert len(last) == 2 * 4 * 2 and len(table) == 3 * len(last)  # rows x methods x seeds; 3 selections
    at = {
        (r["tau"], r["method"], r["seed"], r["round"]): float(r["value"])
        for r in curves
        if r["metric"] == "test_accuracy"
    }
    for r in table:  # the table holds the curves' numbers at the selected rounds
        assert float(r["test_accuracy"]) == at[(r["tau"], r["method"], r["seed"], r["round"])]

    summary = read_csv(out / "perfedavg-table1-summary.csv")
    assert list(summary[0]) == [
        "tau",
        "alpha",
        "method",
        "selection",
        "seeds",
        "mean",
        "ci95_half_width",
        "paper_data",
        "paper_mean",
        "paper_ci95_half_width",
        "data",
    ]
    assert {r["data"] for r in summary} == {STAND_IN}
    paper = {
        (r["tau"], r["method"]): float(r["paper_mean"])
        for r in summary
        if r["selection"] == "last round" and r["method"] != "Local only"  # no paper value for it
    }
    assert paper[("10", "Per-FedAvg (HF)")] == 79.85 and paper[("4", "FedAvg + update")] == 60.18
    for r in summary:  # mean and 95 % t interval over the seeds, from the table
        v = np.array(
            [
                float(t["test_accuracy"])
                for t in table
                if t["tau"] == r["tau"] and t["method"] == r["method"] and t["selection"] == r["selection"]
            ]
        )
        assert float(r["mean"]) == pytest.approx(v.mean(), rel=1e-12)
        ci = stats.ttest_1samp(v, 0.0).confidence_interval(0.95)
        assert float(r["ci95_half_width"]) == pytest.approx((ci.high - ci.low) / 2, rel=1e-9)

    for stem in ("perfedavg-table1", "perfedavg-table1-curves"):
        assert (out / f"{stem}.png").read_bytes()[:8] == PNG and (out / f"{stem}.pdf").read_bytes()[
            :5
        ] == b"%PDF-"
    assert m["figures"] == [
        "perfedavg-table1.png",
        "perfedavg-table1.pdf",
        "perfedavg-table1-curves.png",
        "perfedavg-table1-curves.pdf",
    ]
    # labelled as a stand-in in the manifest
    assert "stand-in" in m["figure"] and "multinomial logistic" in m["figure"]
    assert m["configuration"]["effective"]["data"] == STAND_IN
    assert set(m["columns"]) == {
        "perfedavg-table1.csv",
        "perfedavg-table1-table.csv",
        "perfedavg-table1-summary.csv",
    }


@pytest.mark.reproduce
def test_perfedavg_table1_claims(table1):
    out, m = table1
    claims = m["claims"]
    assert len(claims) == 4
    orderings = [v for v in claims if v["claim"].startswith("Table 1 ordering")]
    assert len(orderings) == 2
    table = read_csv(out / "perfedavg-table1-table.csv")
    acc = {}
    for r in sorted(table, key=lambda r: int(r["seed"])):
        if r["selection"] == "last round":
            acc.setdefault((int(r["tau"]), r["method"]), []).append(float(r["test_accuracy"]))
    for v, tau in zip(orderings, (10, 4), strict=True):
        check_verdict_shape(v, 2, 2)
        assert [c["comparison"] for c in v["comparisons"]] == [
            "Per-FedAvg (HF) − Per-FedAvg (FO)",
            "Per-FedAvg (FO) − FedAvg + update",
        ]
        assert f"tau = {tau}" in v["claim"] and "stand-in" in v["claim"]
        for c in v["comparisons"]:  # the per-seed paired differences of the last round, scipy's interval
            a, b = c["comparison"].split(" − ")
            d = np.subtract(acc[(tau, a)], acc[(tau, b)])
            ci = stats.ttest_1samp(d, 0.0).confidence_interval(c["level"])
            assert c["estimate"] == pytest.approx(d.mean(), rel=1e-9, abs=1e-9)
            assert c["interval"] == pytest.approx([ci.low, ci.high], rel=1e-9, abs=1e-9)
    check_verdict_shape(claims[2], 2, 2)  # HF ahead of FedAvg at both rows
    check_verdict_shape(claims[3], 2, 3)  # tau = 10 ahead of tau = 4 for the three methods


def test_perfedavg_table1_split_is_the_papers_pattern():
    pytest.importorskip("sklearn", reason="perfedavg-table1 needs scikit-learn (extra 'digits')")
    from sklearn.datasets import load_digits

    from moreau.experiments.perfedavg_table1 import split

    d = load_digits()
    index = np.arange(1, d.target.size + 1, dtype=float)[:, None]  # each image's number as its one feature
    (Xtr, ytr, wtr), (Xte, yte, wte) = split(index, d.target, 20, 14, np.random.default_rng(0))
    counts = np.stack(
        [
            np.bincount(np.concatenate([ytr[i][wtr[i] > 0], yte[i][wte[i] > 0]]).astype(int), minlength=10)
            for i in range(20)
        ]
    )
    assert np.all(counts[:10, :5] == 14) and np.all(counts[:10, 5:] == 0)  # a images of each first-five class
    for c in counts[10:]:  # a/2 of one first-five class, 2a of one other class
        assert sorted(c[:5].tolist()) == [0, 0, 0, 0, 7] and sorted(c[5:].tolist()) == [0, 0, 0, 0, 28]
    assert np.all(counts[10:, :5].sum(axis=0) == 14) and np.all(counts[10:, 5:].sum(axis=0) == 56)  # balanced
    for i in range(20):  # the train/test split keeps each user's class mix (75/25 per class)
        tr = np.bincount(ytr[i][wtr[i] > 0].astype(int), minlength=10)
        assert np.array_equal(tr, np.floor(0.75 * counts[i]).astype(int))
    # valid rows first; every image at most once across users and splits, with its own label
    assert np.all(wtr[:, :-1] >= wtr[:, 1:]) and np.all(wte[:, :-1] >= wte[:, 1:])
    used = np.concatenate([Xtr[wtr > 0][:, 0], Xte[wte > 0][:, 0]]).astype(int) - 1
    labels = np.concatenate([ytr[wtr > 0], yte[wte > 0]])
    assert used.size == counts.sum() == np.unique(used).size
    assert np.array_equal(d.target[used], labels)


@pytest.mark.parametrize(
    "override, message",
    [
        ({"batch": 40}, "exceeds the smallest user's"),
        ({"a": 13}, "must be even"),
        ({"a": 40}, "images of a class"),
        ({"adapt_on": "both"}, "adapt_on"),
    ],
)
def test_perfedavg_table1_refuses_what_it_cannot_run(tmp_path, override, message):
    with pytest.raises(ValueError, match=message):
        _sweep.run(get("perfedavg-table1"), tmp_path, quick=True, workers=1, overrides=override)
    assert not any(tmp_path.iterdir())  # refused before anything is written


# ---------------------------------------------------------------- pfedme-k-beta


@pytest.mark.reproduce
def test_pfedme_k_beta_csvs_and_figures(kbeta):
    out, m = kbeta
    from moreau.experiments.pfedme_k_beta import STAND_IN

    curves = read_csv(out / "pfedme-k-beta.csv")
    assert list(curves[0]) == ["K", "beta", "round", "method", "seed", "metric", "value"]
    assert {r["metric"] for r in curves} == {"test_accuracy", "validation_accuracy", "train_loss"}
    assert {r["method"] for r in curves} == {"pFedMe-PM", "pFedMe-GM"}
    runs = {(int(r["K"]), float(r["beta"])) for r in curves}
    assert runs == {
        (1, 1.0),
        (3, 1.0),
        (5, 1.0),
        (7, 1.0),
        (5, 2.0),
        (5, 4.0),
    }  # K = 5, beta = 1 shared, once
    assert {int(r["round"]) for r in curves} == set(range(31))  # quick: 30 rounds, every round
    assert (
        max(
            Counter(
                (r["K"], r["beta"], r["method"], r["seed"], r["metric"], r["round"]) for r in curves
            ).values()
        )
        == 1
    )

    table = read_csv(out / "pfedme-k-beta-table.csv")
    assert list(table[0]) == [
        "K",
        "beta",
        "method",
        "seed",
        "selection",
        "round",
        "test_accuracy",
        "validation_accuracy",
    ]
    assert len(table) == 6 * 2 * 2 * 3  # runs x models x seeds x selections

    summary = read_csv(out / "pfedme-k-beta-summary.csv")
    assert list(summary[0]) == ["K", "beta", "method", "seed", "round", "test_accuracy", "train_loss"]
    at = {
        (r["K"], r["beta"], r["method"], r["seed"], r["metric"]): float(r["value"])
        for r in curves
        if int(r["round"]) == 30
    }
    assert len(summary) == 6 * 2 * 2
    for r in summary:  # the claims' per-seed summary is the curves at at_round
        assert r["round"] == "30"
        for metric in ("test_accuracy", "train_loss"):
            assert float(r[metric]) == at[(r["K"], r["beta"], r["method"], r["seed"], metric)]

    for stem in ("pfedme-k-beta-K", "pfedme-k-beta-beta"):
        assert (out / f"{stem}.png").read_bytes()[:8] == PNG and (out / f"{stem}.pdf").read_bytes()[
            :5
        ] == b"%PDF-"
    assert m["figures"] == [
        "pfedme-k-beta-K.png",
        "pfedme-k-beta-K.pdf",
        "pfedme-k-beta-beta.png",
        "pfedme-k-beta-beta.pdf",
    ]
    assert m["configuration"]["effective"]["data"] == STAND_IN and "stand-in" in m["figure"]


@pytest.mark.reproduce
def test_pfedme_k_beta_claims(kbeta):
    out, m = kbeta
    claims = m["claims"]
    assert len(claims) == 6
    for v, k in zip(claims, (4, 4, 2, 4, 4, 2), strict=True):
        check_verdict_shape(v, 2, k)
        assert "at round 30" in v["claim"]
    summary = read_csv(out / "pfedme-k-beta-summary.csv")
    val = {}
    for r in sorted(summary, key=lambda r: int(r["seed"])):
        val.setdefault((int(r["K"]), float(r["beta"]), r["method"]), []).append(float(r["test_accuracy"]))
    (c,) = [c for c in claims[3]["comparisons"] if c["comparison"] == "pFedMe-GM: beta=2 − beta=1"]
    d = np.subtract(val[(5, 2.0, "pFedMe-GM")], val[(5, 1.0, "pFedMe-GM")])
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(c["level"])
    assert c["estimate"] == pytest.approx(d.mean(), rel=1e-9) and c["interval"] == pytest.approx(
        [ci.low, ci.high]
    )
    # K = 5 and K = 7 inner steps solve the inner problem alike: "no improvement" does not fail
    assert claims[2]["verdict"] != "fails"


def test_pfedme_k_beta_refuses_an_unevaluated_summary_round(tmp_path):
    with pytest.raises(ValueError, match="at_round"):
        _sweep.run(get("pfedme-k-beta"), tmp_path, quick=False, workers=1, overrides={"at_round": 101})
    assert json.dumps(get("pfedme-k-beta").config(True, None))  # JSON-able
