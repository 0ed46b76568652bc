"""moreau check --scheduler: chunks on a Dask cluster give the serial run's JSON (timings apart)."""

from __future__ import annotations

import json

import pytest

from moreau._cli import main

distributed = pytest.importorskip("distributed")


def _strip(obj):
    """The JSON without timings (they differ between any two runs), the short search's extent among them:
    how many batches it drew in its seconds, or whether one instance cost more than them (what it found
    is compared)."""
    if isinstance(obj, dict):
        return {
            k: _strip(v)
            for k, v in obj.items()
            if not k.endswith("seconds")
            and k != "numerical_warnings"
            and not (k in ("examples", "skipped") and obj.get("short"))
        }
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        yield c


@pytest.mark.parametrize(
    "argv",
    [
        # --search-seconds 0: the short search is time-budgeted, so under load the two runs would draw
        # different numbers of batches (and the properties every instance shares count those instances)
        [
            "gd.strongly_convex",
            "--family",
            "quadratic",
            "--trials",
            "5000",
            "--mutants",
            "--search-seconds",
            "0",
        ],
        ["fw.convex", "--trials", "4500", "--search-seconds", "0"],
    ],
)
def test_scheduler_json_equals_the_serial_run(cluster, tmp_path, argv):
    serial, remote = tmp_path / "serial.json", tmp_path / "remote.json"
    code = main(["check", *argv, "--json", str(serial)])
    assert main(["check", *argv, "--json", str(remote), "--scheduler", cluster.scheduler_address]) == code
    a, b = json.loads(serial.read_text()), json.loads(remote.read_text())
    assert _strip(a) == _strip(b)
    with distributed.Client(cluster.scheduler_address) as client:  # the chunks did run on the cluster
        ran = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    assert "chunk_task" in ran  # the task prefix dask gives _chunk_task


def test_an_unreachable_scheduler_is_one_line_exit_2(capsys):
    assert main(["check", "gd.strongly_convex", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach the Dask scheduler" in err and len(err.strip().splitlines()) == 1
