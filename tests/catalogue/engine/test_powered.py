"""``Statement.powered`` (moreau.analysis.engine.power): ``moreau check --analyse`` runs a statement's powered
versions, reports each rate part's detectable change against the 0.05 target and each mutant's rejection, in
the report and the JSON (``"powered"``).  A toy whose default grid sits in a transient: y = x^{-1/2} + 4/x,
fitted on x = 1..8 (local slopes -0.85..-0.67) and, powered, on x = 10^4..10^5 (slopes -0.5 - O(x^{-1/2}))."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from moreau._cli import main
from moreau.analysis.engine import power, registry, runner
from moreau.analysis.engine.core import Mutant, Statement, fit_exponent, rate_sides
from moreau.analysis.engine.rates import part_detectable_change


def _instances(family, trials, rng):
    return {"a": rng.uniform(1.0, 4.0, trials or 3)}  # the transient's weight


def _evaluate_on(grid):
    def evaluate(batch, claim):
        y = grid**-0.5 + batch["a"][:, None] / grid  # (instances, grid)
        slope, ci = fit_exponent(np.broadcast_to(grid, y.shape), y)
        return {"y = O(x^-1/2)": rate_sides(slope, ci, claim["exponent"], kind="at most", atol=0.01)}

    return evaluate


LOWERED = Mutant("rate x^-0.55 (lowered by 0.05)", {"exponent": -0.55})
SHORT = Statement(
    id="toy.power",
    source="toy",
    paper="none.md",
    latex="",
    text="toy",
    assumptions=(),
    families={"quadratic": ("toy",)},
    claimed="rate",
    instances=_instances,
    evaluate=_evaluate_on(np.geomspace(1.0, 8.0, 4)),
    claim={"exponent": -0.5},
    mutants=(Mutant("rate x^-2", {"exponent": -2.0}),),
)
LONG = dataclasses.replace(
    SHORT,
    id="toy.power_long",
    evaluate=_evaluate_on(np.geomspace(1e4, 1e5, 4)),
    mutants=(*SHORT.mutants, LOWERED),
)
OTHER = dataclasses.replace(LONG, id="toy.power_other", families={"logistic": ("toy",)})
TOY = dataclasses.replace(SHORT, powered=(LONG, OTHER))


@pytest.fixture
def toy(monkeypatch):
    cat = {"toy.power": TOY}
    monkeypatch.setattr(registry, "catalogue", lambda: cat)
    monkeypatch.setattr(runner, "catalogue", lambda: cat)
    return cat


def test_the_default_grid_cannot_and_the_powered_one_can(toy):
    (rec,) = runner.run(seed=1)
    (p,) = rec.result.parts
    a = rec.batch["a"]
    # the default grid's slopes: the transient, against the exact local slope of x^-1/2 + a/x at x = 1
    assert np.all(p.sides.lhs < -0.6) and np.all(-(0.5 + a) / (1 + a) < -0.7)
    assert part_detectable_change(p) > 0.1
    (r,) = power.powered(rec, seed=1)  # OTHER covers another family: not run
    assert r["id"] == "toy.power_long" and r["family"] == "quadratic" and r["holds"] and r["powered"]
    (q,) = r["parts"]
    lo, hi = q["slope_range"]
    # the exact slope on x = 10^4..10^5 lies within (a x^-1/2)/(1 + a x^-1/2) of -1/2 (a <= 4: 0.04)
    assert -0.54 < lo <= hi < -0.5
    assert q["detectable_change"] <= power.TARGET and q["kind"] == "at most" and q["exponent"] == -0.5
    assert {m["name"]: m["rejected"] for m in r["mutants"]} == {"rate x^-2": True, LOWERED.name: True}
    assert power.ok([r])


def test_analyse_reports_the_powered_runs_and_writes_them_to_the_json(toy, tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["check", "--analyse", "--optimise-seconds", "0", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Powered rate checks" in out and "toy.power [quadratic] -> toy.power_long: holds" in out
    assert "mutants rejected 2/2" in out and "toy.power_other" not in out
    (j,) = json.loads(path.read_text())
    (r,) = j["powered"]
    assert r["id"] == "toy.power_long" and r["parts"][0]["detectable_change"] <= 0.05


def test_a_powered_version_short_of_the_target_fails_the_run(monkeypatch, capsys):
    weak = dataclasses.replace(SHORT, powered=(dataclasses.replace(SHORT, id="toy.power_weak"),))
    monkeypatch.setattr(registry, "catalogue", lambda: {"toy.power": weak})
    monkeypatch.setattr(runner, "catalogue", lambda: {"toy.power": weak})
    assert main(["check", "--analyse", "--optimise-seconds", "0"]) != 0
    assert "(NOT <= target)" in capsys.readouterr().out


def test_default_run_does_not_run_powered_versions(toy, tmp_path):
    path = tmp_path / "r.json"
    assert main(["check", "--json", str(path)]) == 0
    (j,) = json.loads(path.read_text())
    assert "powered" not in j


def test_powered_must_be_a_tuple_of_statements():
    with pytest.raises(TypeError, match="powered must be a tuple of Statement objects"):
        dataclasses.replace(SHORT, powered=[LONG])
    with pytest.raises(TypeError, match="powered must be a tuple of Statement objects"):
        dataclasses.replace(SHORT, powered=("toy.power_long",))
