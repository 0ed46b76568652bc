"""Your own methods inside the pFedMe comparison (issue 29): ``--method`` beside pFedMe / Per-FedAvg in
``pfedme-synthetic`` and ``pfedme-digits``, with hyperparameters of their own (``--set
method_args.NAME.KEY``), recorded in the manifest and the CSV; the paper's numbers unchanged."""

from __future__ import annotations

import csv
import json
import textwrap

import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
pytest.importorskip("sklearn", reason="pfedme-digits needs scikit-learn's digits (extra 'digits')")
import moreau._cli as cli  # noqa: E402
from moreau.experiments._config import ConfigError, resolve  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402

NAME = "pfedme-digits"
BASE = ("--quick", "--set", "rounds=3", "--set", "seeds=1", "--workers", "1")

METHOD = '''
import numpy as np
from moreau import fl

CALLS = []


def mine(objective, *, rounds, rng, eta=0.005, tau=2):
    """FedAvg with a step of its own (what it was called with is kept in CALLS)."""
    CALLS.append({"eta": eta, "tau": tau, "rounds": rounds, "rng": type(rng).__name__})
    return fl.fedavg(objective, eta=eta, tau=tau, rounds=rounds, rng=rng)


def both(objective, *, rounds, rng):
    """pFedMe as moreau.fl runs it: a global and personalised models (reported -GM and -PM)."""
    return fl.pfedme(
        objective, lam=15.0, eta=0.01, beta=1.0, R=2, rounds=rounds, rng=rng, inner=2, inner_eta=0.01,
        personal="inner",
    )
'''


def reproduce(*args):
    return cli.main(["reproduce", *map(str, args)])


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))


@pytest.fixture(scope="module")
def method_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("methods") / "mymethods.py"
    path.write_text(textwrap.dedent(METHOD))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, method_file):
    """The same run without and with two methods of yours (one with its own step)."""
    plain, mine = tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("mine")
    assert reproduce(NAME, *BASE, "--out", plain) == 0
    args = ("--method", f"{method_file}:mine", "--method", f"{method_file}:both")
    assert reproduce(NAME, *BASE, *args, "--set", "method_args.mine.eta=0.1", "--out", mine) == 0
    return plain, mine


@pytest.mark.reproduce
def test_your_methods_run_beside_the_papers_with_their_hyperparameters_recorded(runs, method_file):
    import sys

    _, out = runs
    module = next(
        m for m in sys.modules.values() if getattr(m, "__file__", None) == str(method_file.resolve())
    )
    assert module.CALLS == [{"eta": 0.1, "tau": 2, "rounds": 3, "rng": "Generator"}]  # once per seed
    m = json.loads((out / "manifest.json").read_text())
    assert m["configuration"]["effective"]["method_args"] == {"mine": {"eta": 0.1}}
    assert m["configuration"]["set"]["method_args.mine.eta"] == 0.1
    line = (
        f"method mine ({method_file}:mine; hyperparameters: eta = 0.1) runs beside the paper's methods "
        "(not in the paper)"
    )
    assert line in m["deviations"]
    assert f"# - {line}" in (out / f"{NAME}.csv").read_text().splitlines()
    rows = read(out / f"{NAME}.csv")
    for label in ("mine", "both-GM", "both-PM"):  # under both settings, every metric, every round
        got = {(r["setting"], r["metric"], r["round"]) for r in rows if r["method"] == label}
        assert got == {
            (s, k, str(t))
            for s in ("same", "tuned")
            for k in ("test_accuracy", "validation_accuracy", "train_loss")
            for t in range(4)
        }, label
    table = read(out / f"{NAME}-table.csv")
    assert {r["method"] for r in table} >= {"mine", "both-GM", "both-PM"}
    assert not any("mine" in c["claim"] or "both" in c["claim"] for c in m["claims"])


@pytest.mark.reproduce
def test_your_methods_change_no_number_of_the_papers_methods(runs):
    plain, mine = runs
    paper = [r for r in read(plain / f"{NAME}.csv")]
    with_yours = [r for r in read(mine / f"{NAME}.csv") if r["method"] not in ("mine", "both-GM", "both-PM")]
    assert with_yours == paper
    # round 0 is the zero model for FedAvg and for yours: the same accuracy on the same test rows
    rows = read(mine / f"{NAME}.csv")

    def at0(method):
        return {
            r["setting"]: r["value"]
            for r in rows
            if r["method"] == method and r["round"] == "0" and r["metric"] == "test_accuracy"
        }

    assert at0("mine") == at0("FedAvg")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"methods": ["FedAvg"]}, "methods lists your own methods as MODULE:FUNCTION"),
        ({"methods": ["{file}:pfedme"]}, "no attribute 'pfedme'"),
        ({"methods": ["{file}:mine", "{file}:mine"]}, "two methods would be named 'mine'"),
        (
            {"methods": ["{file}:mine"], "method_args": {"other": {"eta": 1}}},
            "method_args.other names no method",
        ),
        (
            {"methods": ["{file}:mine"], "method_args": {"mine": {"lr": 1}}},
            r"method_args.mine: mine\(\) does not take",
        ),
    ],
    ids=["built-in", "no-such-function", "twice", "args-of-no-method", "unknown-keyword"],
)
def test_bad_methods_are_one_line_before_anything_is_written(method_file, overrides, message):
    exp = get("pfedme-synthetic")
    over = json.loads(json.dumps(overrides).replace("{file}", str(method_file)))
    params, _ = resolve(exp, True, None, over)
    with pytest.raises(ValueError, match=message):
        exp.points(params)


def test_method_args_is_an_open_table_of_finite_values():
    exp = get("pfedme-synthetic")
    params, applied = resolve(
        exp, True, None, [("--set", "method_args.f.lr", 0.5), ("--set", "method_args.g", {"k": 2})]
    )
    assert params["method_args"] == {"f": {"lr": 0.5}, "g": {"k": 2}}
    assert applied == {"method_args.f.lr": 0.5, "method_args.g": {"k": 2}}
    with pytest.raises(ConfigError, match=r"'method_args.f.lr' expects finite numbers"):
        resolve(exp, True, None, [("--set", "method_args.f.lr", float("nan"))])
    with pytest.raises(ConfigError, match="unknown key 'same.nope'"):  # the other tables stay closed
        resolve(exp, True, None, [("--set", "same.nope", 1)])


@pytest.mark.reproduce
def test_perfedavg_table1_takes_your_method_evaluated_by_its_one_step_protocol(tmp_path, method_file):
    plain, out = tmp_path / "plain", tmp_path / "mine"
    small = ("--quick", "--set", "rounds=5", "--set", "seeds=1", "--set", "taus=[10]", "--workers", "1")
    assert reproduce("perfedavg-table1", *small, "--out", plain) == 0
    args = ("--method", f"{method_file}:mine", "--set", "method_args.mine.tau=3")
    assert reproduce("perfedavg-table1", *small, *args, "--out", out) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert any(d.startswith("method mine (") and "tau = 3" in d for d in m["deviations"])
    rows = read(out / "perfedavg-table1.csv")
    got = {(r["metric"], r["round"]) for r in rows if r["method"] == "mine"}
    assert got == {
        (k, str(t))
        for k in ("test_accuracy", "validation_accuracy", "test_accuracy_before_update", "train_loss")
        for t in (0, 5)
    }
    summary = [r for r in read(out / "perfedavg-table1-summary.csv") if r["method"] == "mine"]
    assert summary and all(r["paper_mean"] == "" for r in summary)
    assert [r for r in rows if r["method"] != "mine"] == read(plain / "perfedavg-table1.csv")
    # round 0: the zero model, adapted on the same batches as FedAvg's: the same numbers
    at0 = {(r["method"], r["metric"]): r["value"] for r in rows if r["round"] == "0"}
    for k in ("test_accuracy", "test_accuracy_before_update", "train_loss"):
        assert at0[("mine", k)] == at0[("FedAvg + update", k)]
