"""``moreau reproduce compare``: your federated data (.npz, .csv) and your method (``--method``).

The data sets are written here: two groups of clients whose labels follow the same feature with
opposite signs, so that one global model cannot fit them and each client's own model can; the
user's method is local training only (``moreau.fl.gd``, no server), in a file of its own.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
import moreau._cli as cli  # noqa: E402

pytestmark = pytest.mark.reproduce

LOCAL_ONLY = '''
from moreau import fl


def local_only(objective, *, rounds, rng, eta=2.0):
    """Each client trains alone (gradient descent, no communication): the shared interface."""
    return fl.gd(objective, eta=eta, steps=rounds)


def not_a_history(objective, *, rounds, rng):
    return {"w": 0}
'''


def reproduce(*args):
    return cli.main(["reproduce", *map(str, args)])


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def opposite_clients(seed=0, sizes=(30, 45, 24, 60)):
    """Clients of different sizes, 2 features; even clients label x_0 > 0 as 1, odd ones as 0."""
    rng = np.random.default_rng(seed)
    out = []
    for k, n in enumerate(sizes):
        X = rng.standard_normal((n, 2))
        y = ((X[:, 0] > 0) == (k % 2 == 0)).astype(int)
        out.append((X, y))
    return out


@pytest.fixture
def method_file(tmp_path):
    path = tmp_path / "my_methods.py"
    path.write_text(LOCAL_ONLY)
    return path


@pytest.fixture
def npz(tmp_path):
    path = tmp_path / "clients.npz"
    np.savez(
        path,
        **{f"{a}_{k}": v for k, (X, y) in enumerate(opposite_clients()) for a, v in (("X", X), ("y", y))},
    )
    return path


def run_compare(out, data, *more):
    assert (
        reproduce(
            "compare",
            "--quick",
            "--workers",
            1,
            "--out",
            out,
            "--data",
            data,
            "--set",
            "rounds=30",
            "--set",
            "batch=0",
            *more,
        )
        == 0
    )
    return (
        read_csv(out / "compare.csv"),
        read_csv(out / "compare-table.csv"),
        json.loads((out / "manifest.json").read_text()),
    )


def last(table, method):
    return np.array(
        [float(r["test_accuracy"]) for r in table if r["method"] == method and r["selection"] == "last round"]
    )


def test_your_data_and_your_method_join_the_comparison(tmp_path, npz, method_file):
    rows, table, m = run_compare(
        tmp_path / "o", npz, "--set", 'methods=["FedAvg"]', "--method", f"{method_file}:local_only"
    )
    assert m["configuration"]["effective"]["methods"] == ["FedAvg", f"{method_file}:local_only"]
    assert list(rows[0]) == ["round", "method", "seed", "metric", "value"]
    assert set(m["columns"]["compare.csv"]) >= {"round", "method", "seed", "metric", "value", "metrics"}
    assert {r["method"] for r in rows} == {"FedAvg", "local_only"}
    assert {r["selection"] for r in table} == {
        "last round",
        "best round on validation",
        "best round on test (leaks the test set)",
    }
    # opposite labelling: each client's own model fits its data, one global model cannot
    assert np.all(last(table, "local_only") > 85) and np.all(last(table, "FedAvg") < 75)
    # round 0 is the zero model: every score ties, argmax predicts class 0, the accuracy is the share of
    # class 0 among the seed's test rows (the split redrawn from the point's stream), for every method
    from moreau.experiments import _sweep, _userdata
    from moreau.experiments.compare import _stream

    zero = {
        (r["method"], int(r["seed"])): float(r["value"])
        for r in rows
        if r["round"] == "0" and r["metric"] == "test_accuracy"
    }
    for seed in range(m["arguments"]["params"]["seeds"]):
        rng = _sweep.point_rng(0, "compare", {"seed": seed, "data_sha256": _userdata.digest(npz)})
        _, _, test = _userdata.split(_stream(rng, "split"), opposite_clients(), 0.25, 0.2)
        share = 100 * np.mean(np.concatenate([y for _, y in test]) == 0)
        assert zero[("FedAvg", seed)] == zero[("local_only", seed)] == pytest.approx(share, rel=1e-12)


def test_a_method_added_changes_no_other_method(tmp_path, npz, method_file):
    alone, _, _ = run_compare(tmp_path / "a", npz, "--set", 'methods=["FedAvg", "pFedMe"]')
    both, _, _ = run_compare(
        tmp_path / "b", npz, "--set", 'methods=["FedAvg", "pFedMe"]', "--method", f"{method_file}:local_only"
    )
    assert alone == [r for r in both if r["method"] != "local_only"]


def test_the_distance_to_the_exact_optimum_where_one_exists(tmp_path, npz, method_file):
    rows, _, m = run_compare(
        tmp_path / "o", npz, "--set", "optimum=true", "--method", f"{method_file}:local_only"
    )
    has = {r["method"] for r in rows if r["metric"] == "distance_to_optimum"}
    assert has == {"FedAvg", "pFedMe-GM", "pFedMe-PM"}  # Per-FedAvg's and the user's problems: none computed
    for method in has:  # full batches, every client: each run approaches its optimum
        for seed in ("0", "1"):
            d = [
                float(r["value"])
                for r in rows
                if r["metric"] == "distance_to_optimum" and r["method"] == method and r["seed"] == seed
            ]
            assert d[-1] < 0.5 * d[0], (method, seed)
    assert "distance_to_optimum" in m["columns"]["compare.csv"]["metrics"]


def test_csv_with_string_labels_and_a_module_name(tmp_path, monkeypatch):
    (tmp_path / "methods_csv_case.py").write_text(LOCAL_ONLY)
    monkeypatch.chdir(tmp_path)  # a dotted name is found in the working directory
    path = tmp_path / "clients.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x0", "client", "x1", "label"])
        for k, (X, y) in enumerate(opposite_clients(1)):
            for x, lab in zip(X, y, strict=True):
                w.writerow([x[0], f"site-{k}", x[1], "dog" if lab else "cat"])
    rows, table, _ = run_compare(tmp_path / "o", path, "--set", 'methods=["methods_csv_case:local_only"]')
    assert {r["method"] for r in rows} == {"local_only"} and np.all(last(table, "local_only") > 85)


def test_print_config_shows_the_methods_and_the_data(capsys, npz, method_file):
    assert (
        reproduce(
            "compare", "--quick", "--data", npz, "--method", f"{method_file}:local_only", "--print-config"
        )
        == 0
    )
    text = capsys.readouterr().out
    assert f'data = "{npz}"' in text and f'"{method_file}:local_only"]' in text and '"FedAvg"' in text


def _write(tmp_path, name, content):
    path = tmp_path / name
    if name.endswith(".npz"):
        np.savez(path, **content)
    else:
        path.write_text(content)
    return path


X2, Y2 = np.ones((3, 2)), np.array([0, 1, 0])


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("gap.npz", {"X_0": X2, "y_0": Y2, "X_2": X2, "y_2": Y2}, "client 1 has no X_1 and no y_1"),
        ("short.npz", {"X_0": X2, "y_0": Y2[:2]}, "X_0 must be (n, d) and y_0 (n,) with the same n"),
        ("names.npz", {"features": X2}, "unexpected array 'features'"),
        ("nan.npz", {"X_0": np.full((3, 2), np.nan), "y_0": Y2}, "NaN or infinite"),
        (
            "widths.npz",
            {"X_0": X2, "y_0": Y2, "X_1": np.ones((3, 3)), "y_1": Y2},
            "different numbers of features",
        ),
        ("one.npz", {"X_0": X2, "y_0": Y2, "X_1": X2[:1], "y_1": Y2[:1]}, "client 1 has 1 row(s)"),
        ("oneclass.npz", {"X_0": X2, "y_0": np.zeros(3)}, "at least 2"),
        ("noclient.csv", "x,label\n1,0\n2,1\n", "must name a 'client' column"),
        ("text.csv", "x,client,label\n1,a,0\nabc,a,1\n", "feature column 'x' is not numeric (line 3: 'abc')"),
        ("fields.csv", "x,client,label\n1,a,0\n2,a\n", "line 3 has 2 fields"),
        ("data.txt", "1 2 3\n", "expected a .npz file"),
    ],
    ids=lambda v: v if isinstance(v, str) and "." in v and len(v) < 16 else "",
)
def test_malformed_data_is_one_line_and_exit_2(tmp_path, capsys, name, content, message):
    path = _write(tmp_path, name, content)
    out = tmp_path / "o"
    assert reproduce("compare", "--quick", "--out", out, "--data", path) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and str(path) in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (("--data", "missing.npz"), "no such file"),
        (("--method", "no_such_module_xyz:f"), "cannot import it"),
        (("--method", "{file}:missing"), "has no attribute 'missing'"),
        (("--method", "not a spec"), "expected MODULE:FUNCTION"),
        (("--method", "FedAvg"), "two methods are named 'FedAvg'"),
        (("--set", "band=wide"), "band must be one of std, ci95, minmax"),
        (("--data", "{npz}", "--set", "batch=20"), "batch = 20 exceeds client 2's 15 training rows"),
    ],
    ids=["missing-data", "no-module", "no-function", "bad-spec", "duplicate", "band", "batch"],
)
def test_bad_methods_and_settings_are_one_line_and_exit_2(tmp_path, capsys, method_file, npz, args, message):
    args = tuple(a.format(file=method_file, npz=npz) for a in args)
    out = tmp_path / "o"
    assert reproduce("compare", "--quick", "--out", out, *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_a_method_that_returns_no_history_is_named(tmp_path, capsys, npz, method_file):
    assert (
        reproduce(
            "compare",
            "--quick",
            "--workers",
            1,
            "--out",
            tmp_path / "o",
            "--data",
            npz,
            "--set",
            f'methods=["{method_file}:not_a_history"]',
        )
        == 2
    )
    (err,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("moreau reproduce:")]
    assert "not_a_history: returned dict, not a moreau.fl.History" in err  # (the other lines: progress)


def test_data_and_method_flags_belong_to_compare(capsys, npz):
    assert reproduce("fedprox-fig2", "--quick", "--data", npz, "--print-config") == 2
    assert "--data applies to experiments with a 'data' parameter" in capsys.readouterr().err


def test_compare_on_your_data_is_titled_by_the_file_name_without_the_quick_banner(tmp_path, npz, monkeypatch):
    """Issue 29: the panel title was the data file's absolute path and a quick run on a user's own data
    carried the "quick: not the paper's size" banner (there is no paper whose size it falls short of)."""
    from moreau.experiments import _plot, compare

    seen = []

    def spy(fig, out, stem, quick=False):
        titles = [a.get_title() for a in fig.axes]
        paths = _plot.save(fig, out, stem, quick)
        sup = fig._suptitle.get_text() if fig._suptitle is not None else ""  # as saved, banner included
        seen.append((stem, titles, quick, sup))
        return paths

    monkeypatch.setattr(compare, "save", spy)
    run_compare(tmp_path / "o", npz, "--set", 'methods=["FedAvg"]')
    ((stem, titles, quick, sup),) = seen
    assert stem == "compare" and titles[0] == f"{npz.name}, T = 30"
    assert str(tmp_path) not in " ".join(titles)
    assert not quick and _plot.QUICK_NOTE not in sup
