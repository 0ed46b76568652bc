"""Issue 29: what a run does differently from the paper is in its outputs (manifest, CSV comment
header, figure caption), computed from the run's parameters, not only in docstrings."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt

from moreau.experiments import perfedavg_table1, pfedme_digits, pfedme_synthetic
from moreau.experiments._deviations import captioned, differing
from moreau.experiments._plot import save
from moreau.experiments._sweep import run
from moreau.experiments.registry import get


def test_differing_lists_only_the_settings_that_differ():
    params = {"n": 20, "a": 14, "nested": {"b": 0.5}}
    paper = {"n": (50, "users N"), "a": (14, "a"), "nested.b": (0.25, "b")}
    assert differing(params, paper) == ["users N = 20 (paper: 50)", "b = 0.5 (paper: 0.25)"]


def test_perfedavg_table1_full_run_lists_the_issue_deviations():
    lines = perfedavg_table1.deviations(perfedavg_table1.config(False, None))
    text = "\n".join(lines)
    for want in (
        "users N = 20 (paper: 50)",
        "images per class a = 14 (paper: 196)",
        "= 20 (paper: 40)",
        "training rows (paper: on the test data)",
    ):
        assert want in text
    assert "rounds" not in text  # the full run has the paper's K = 1000


def test_perfedavg_table1_paper_settings_leave_only_the_stand_in():
    params = perfedavg_table1.config(False, None)
    params.update(n_clients=50, a=196, batch=40, adapt_on="test", validation_fraction=0, S=10)
    lines = perfedavg_table1.deviations(params)
    assert len(lines) == 1 and lines[0].startswith("data and model")


def test_pfedme_synthetic_data_draw_and_seed_words():
    params = pfedme_synthetic.config(False, None)
    assert any("data_draw=authors" in ln for ln in pfedme_synthetic.EXPERIMENT.deviations(params))
    params["data_draw"] = "authors"
    assert pfedme_synthetic.EXPERIMENT.deviations(params) == [
        "validation share held out of training rows = 0.2 (paper: 0)"
    ]
    assert "fresh data set" not in pfedme_synthetic.SEED_WORDS["authors"]
    assert any("MNIST" in ln for ln in pfedme_digits.EXPERIMENT.deviations(pfedme_digits.config(False, None)))


def test_saved_figure_carries_the_deviations_in_its_caption(tmp_path):
    fig, ax = plt.subplots()
    fig.suptitle("title")
    with captioned(["users N = 20 (paper: 50)"]):
        save(fig, tmp_path, "f")
    assert "differs from the paper: users N = 20 (paper: 50)" in fig._suptitle.get_text()
    fig2, _ = plt.subplots()
    save(fig2, tmp_path, "g")  # outside an experiment's finish: no caption
    assert fig2._suptitle is None


def test_run_writes_deviations_into_manifest_csv_and_caption(tmp_path):
    overrides = {"rounds": 4, "eval_every": 2, "seeds": 2, "taus": [4], "n_clients": 10, "S": 2}
    manifest = run(get("perfedavg-table1"), tmp_path, quick=True, workers=1, overrides=overrides)
    devs = manifest["deviations"]
    assert "users N = 10 (paper: 50)" in devs and "rounds K = 4 (paper: 1000)" in devs
    assert json.loads((tmp_path / "manifest.json").read_text())["deviations"] == devs
    for name in ("perfedavg-table1.csv", "perfedavg-table1-summary.csv"):
        head = (tmp_path / name).read_text().splitlines()[: len(devs) + 2]
        assert head[0] == "# differs from the paper:"
        assert head[1:-1] == [f"# - {d}" for d in devs]
        assert not head[-1].startswith("#")
