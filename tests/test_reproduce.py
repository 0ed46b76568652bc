"""``moreau reproduce``: outputs, resumable checkpoints, refused mixes, executors, CLI errors.

The experiments' own numbers are checked against closed forms computed here from the CSV
(``test_experiment_*``); the machinery is checked on the cheapest experiment.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
import moreau._cli as cli  # noqa: E402
from moreau.experiments import _sweep  # noqa: E402
from moreau.experiments.registry import experiments, get  # noqa: E402

NAME = "pfedme-prop1"


def reproduce(*args):
    return cli.main(["reproduce", *map(str, args)])


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    assert reproduce(NAME, "--out", out, "--quick", "--workers", 1) == 0
    return out


def test_list_names_every_experiment(capsys):
    assert reproduce("--list") == 0
    text = capsys.readouterr().out
    for name in experiments():
        assert name in text


@pytest.mark.reproduce
def test_outputs_png_pdf_csv_manifest(serial):
    assert (serial / f"{NAME}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (serial / f"{NAME}.pdf").read_bytes()[:5] == b"%PDF-"
    rows = read_csv(serial / f"{NAME}.csv")
    m = json.loads((serial / "manifest.json").read_text())
    assert len(rows) == m["points"] > 0
    for key in ("name", "arguments", "device", "wall_seconds", "claims", "theorems", "provenance"):
        assert key in m
    assert m["arguments"]["seed"] == 0 and m["arguments"]["quick"] is True
    assert m["provenance"]["versions"]["numpy"] == np.__version__
    assert m["provenance"]["git_commit"]


def test_experiment_pfedme_prop1_against_closed_forms(serial):
    """Measured envelope constants (eigenvalues of moreau's Hessian) against the formulas, from the CSV."""
    rows = read_csv(serial / f"{NAME}.csv")
    p = json.loads((serial / "manifest.json").read_text())["arguments"]["params"]
    L, mu = p["L"], p["mu"]
    for r in rows:
        lam, sm, lo = float(r["lam"]), float(r["smoothness_measured"]), float(r["curvature_min_measured"])
        if r["case"] == "convex":
            assert sm == pytest.approx(lam * L / (lam + L), rel=1e-12)
            assert lo == pytest.approx(lam * mu / (lam + mu), rel=1e-12)
            assert sm < lam
        else:
            assert sm == pytest.approx(lam * L / (lam - L), rel=1e-12)
            assert (sm <= lam * (1 + 1e-12)) == (lam >= 2 * L)
    claims = json.loads((serial / "manifest.json").read_text())["claims"]
    assert claims and all(v["verdict"] == "holds" and v["method"] == "exact" for v in claims)


def test_resume_recomputes_nothing_finished_and_gives_the_same_csv(tmp_path, serial):
    exp = get(NAME)
    out = tmp_path / "resumed"

    class Killed(Exception):
        pass

    def kill_after_third(i, seen=[]):  # noqa: B006 - a per-call counter
        seen.append(i)
        if len(seen) == 3:
            raise Killed

    with pytest.raises(Killed):
        _sweep.run(exp, out, quick=True, workers=1, on_checkpoint=kill_after_third)
    saved = sorted((out / "points").glob("*.json"))
    assert len(saved) == 3 and not (out / f"{NAME}.csv").exists()
    stamps = {f.name: f.stat().st_mtime_ns for f in saved}
    m = _sweep.run(exp, out, quick=True, workers=1)
    assert m["resumed_points"] == 3
    assert {f.name: f.stat().st_mtime_ns for f in saved} == stamps  # finished points not rewritten
    assert (out / f"{NAME}.csv").read_text() == (serial / f"{NAME}.csv").read_text()


def test_process_pool_gives_the_serial_numbers(tmp_path, serial):
    out = tmp_path / "pool"
    assert reproduce(NAME, "--out", out, "--quick", "--workers", 2) == 0
    assert (out / f"{NAME}.csv").read_text() == (serial / f"{NAME}.csv").read_text()


def test_dask_local_cluster_gives_the_serial_numbers(tmp_path, serial):
    distributed = pytest.importorskip("dask.distributed", reason="the [dask] extra is not installed")
    exp = get(NAME)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        m = _sweep.run(exp, tmp_path / "dask", quick=True, scheduler=cluster.scheduler_address)
    assert m["executor"].startswith("dask")
    assert (tmp_path / "dask" / f"{NAME}.csv").read_text() == (serial / f"{NAME}.csv").read_text()


def test_point_seeds_depend_on_seed_name_and_point_only():
    a = _sweep.point_rng(3, NAME, {"lam": 1.0, "case": "x"}).random(4)
    b = _sweep.point_rng(3, NAME, {"case": "x", "lam": 1.0}).random(4)  # key order is irrelevant
    c = _sweep.point_rng(4, NAME, {"lam": 1.0, "case": "x"}).random(4)
    d = _sweep.point_rng(3, NAME, {"lam": 2.0, "case": "x"}).random(4)
    assert np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(a, d)


@pytest.mark.parametrize(
    "args, message",
    [
        (("no-such-experiment",), "unknown experiment"),
        ((), "name an experiment"),
        ((NAME, "--trials", 5, "--quick"), "--trials does not apply"),
        ((NAME, "--out", "/proc/forbidden", "--quick"), "not a writable directory"),
        ((NAME, "--quick", "--scheduler", "tcp://127.0.0.1:9"), "scheduler"),
    ],
    ids=["unknown-name", "no-name", "trials-on-exact", "unwritable-out", "unreachable-scheduler"],
)
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, capsys, args, message):
    if "--scheduler" in args:
        pytest.importorskip("dask.distributed", reason="the [dask] extra is not installed")
    if "--out" not in args and args and args[0] == NAME:
        args = args + ("--out", tmp_path / "o")
    assert reproduce(*args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--trials=0", "--seed=-1", "--workers=0"])
def test_argument_types_are_usage_errors(flag):
    with pytest.raises(SystemExit) as exc:
        reproduce(NAME, flag)
    assert exc.value.code == 2


def test_a_directory_holding_another_run_is_refused(tmp_path, capsys):
    out = tmp_path / "held"
    assert reproduce(NAME, "--out", out, "--quick", "--workers", 1) == 0
    capsys.readouterr()
    assert reproduce(NAME, "--out", out, "--quick", "--workers", 1, "--seed", 7) == 2
    err = capsys.readouterr().err
    assert "other arguments" in err and "seed" in err
    assert reproduce(NAME, "--out", out, "--quick", "--workers", 1) == 0  # the same arguments resume
    assert json.loads((out / "manifest.json").read_text())["resumed_points"] > 0


@pytest.mark.parametrize("name", list(__import__("moreau.experiments.demos", fromlist=["DEMOS"]).DEMOS))
def test_every_demo_runs_and_its_claims_hold(tmp_path, name):
    from moreau.experiments.demos import run_demo

    ns = run_demo(name, tmp_path, seed=0)
    assert ns["FIGURES"] and all(p.exists() for p in ns["FIGURES"])
    assert ns["CLAIMS"] and all(v["holds"] for v in ns["CLAIMS"].values()), ns["CLAIMS"]


def test_demo_numbers_against_closed_forms(tmp_path):
    from moreau.experiments.demos import run_demo

    ns = run_demo("demo-prox-abs", tmp_path)
    lam, a, k = ns["lam_q"], ns["a"], np.arange(len(ns["implicit"]))
    np.testing.assert_allclose(ns["implicit"], (lam / (lam + a)) ** k, rtol=1e-13)  # proximal point
    np.testing.assert_allclose(ns["explicit"], abs(1 - a / lam) ** k, rtol=1e-13)  # gradient steps
    w = np.array([-2.0, -0.3, 0.0, 0.7, 3.0])
    np.testing.assert_allclose(
        ns["soft_threshold"](w, 2.0), [-1.5, 0.0, 0.0, 0.2, 2.5], rtol=1e-15, atol=1e-15
    )
    np.testing.assert_allclose(ns["huber"](w, 2.0), [1.75, 0.09, 0.0, 0.45, 2.75])
    ns = run_demo("demo-weakly-convex", tmp_path)
    lams, L = ns["lams"], ns["L"]
    np.testing.assert_allclose(ns["curv"], -lams * L / (lams - L), rtol=1e-12)
