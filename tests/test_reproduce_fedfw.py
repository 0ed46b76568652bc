"""The FedFW experiment of ``moreau reproduce`` (``fedfw-synthetic``) in --quick mode: its CSV against its claims.

Until ``moreau.experiments.fedfw_synthetic`` is listed in ``experiments/registry.py`` the fixture adds it to
the registry for this module (the sweep looks experiments up by name, also in its own process).
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
from moreau.experiments import _sweep, registry  # noqa: E402

pytestmark = pytest.mark.reproduce
MODULE = "moreau.experiments.fedfw_synthetic"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    if MODULE not in registry.MODULES:
        patch.setattr(registry, "MODULES", registry.MODULES + (MODULE,))
    registry.experiments.cache_clear()
    try:
        out = tmp_path_factory.mktemp("fedfw")  # 3 seeds: enough for the paired intervals to decide
        manifest = _sweep.run(
            registry.get("fedfw-synthetic"), out, quick=True, workers=1, overrides={"seeds": 3}
        )
        with open(out / "fedfw-synthetic.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
    finally:
        patch.undo()
        registry.experiments.cache_clear()
    return manifest, rows


def test_every_claim_of_the_quick_run_holds(run):
    manifest, _ = run
    verdicts = {c["claim"]: c["verdict"] for c in manifest["claims"]}
    assert len(verdicts) == 6 and set(verdicts.values()) == {"holds"}, verdicts
    assert json.dumps(manifest)


def test_the_csv_shows_feasibility_and_one_nonzero_per_round(run):
    manifest, rows = run
    fw = [r for r in rows if r["method"] == "FedFW (4.5)-(4.6)"]
    kappa = manifest["params"]["kappa"] if "params" in manifest else 10.0
    assert all(float(r["max_norm"]) <= kappa * (1 + 1e-12) for r in fw)
    assert {int(r["uplink"]) for r in fw if r["set"] == "l1"} == {1}
    assert {int(r["uplink"]) for r in rows if r["method"].startswith("FedAvg")} == {610}


def test_the_printed_iteration_trails_fedavg_and_the_coded_one_stalls(run):
    _, rows = run
    last = max(int(r["round"]) for r in rows)

    def loss(method, kind, t):
        return np.mean(
            [
                float(r["loss"])
                for r in rows
                if r["method"] == method and r["set"] == kind and int(r["round"]) == t
            ]
        )

    for kind in ("l2", "l1"):
        assert loss("FedAvg + projection", kind, last) < loss("FedFW (4.5)-(4.6)", kind, last)
        code = [loss("FedFW, code iteration", kind, t) for t in (last // 2, last)]
        assert abs(code[0] - code[1]) < 0.02 * code[0]  # flat over the second half
        assert loss("FedAvg + projection", kind, last) < 0.95 * loss("FedAvg + projection", kind, last // 2)


def test_the_lam0_sweep_reports_the_loss_per_lam0(run):
    """One batched FedFW run per value of lam0_sweep: its rows, its table and the claim's value agree."""
    manifest, rows = run
    sweep = manifest["params"]["lam0_sweep"] if "params" in manifest else [0.001, 0.01, 0.1, 1.0, 10.0]
    last = max(int(r["round"]) for r in rows)
    claim = next(c for c in manifest["claims"] if "best lambda0" in c["claim"])
    for kind in ("l2", "l1"):
        for v in sweep:
            got = [
                float(r["loss"])
                for r in rows
                if r["method"].endswith("lambda0 sweep")
                and r["set"] == kind
                and float(r["lam0"]) == v
                and int(r["round"]) == last
            ]
            assert len(got) == 3
            assert abs(claim["value"][kind][f"{v:g}"] - np.mean(got)) < 1e-4
    main = [float(r["loss"]) for r in rows if r["method"] == "FedFW (4.5)-(4.6)" and int(r["round"]) == last]
    swept = [
        float(r["loss"])
        for r in rows
        if r["method"].endswith("lambda0 sweep") and float(r["lam0"]) == 0.001 and int(r["round"]) == last
    ]
    assert np.allclose(sorted(main), sorted(swept), rtol=1e-12)  # the sweep's lam0 = 0.001 is the main run
