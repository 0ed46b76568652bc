"""Verdicts of ``moreau reproduce`` claims: paired t intervals, Holm over a claim's comparisons,
three values in ``moreau check``'s words, and the manifest's shape."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from moreau.analysis.engine.verdict import FAILS, HOLDS, SCHEMA_VERSION, UNDECIDED
from moreau.experiments._verdicts import exact, holm, line, paired, welch

S = 6


def _with_p(p, sign=1.0, shift=0):
    """S per-seed differences whose paired t test (two-sided) has p-value ``p`` exactly."""
    z = np.roll(np.linspace(-1, 1, S), shift)
    z = (z - z.mean()) / z.std(ddof=1)
    return sign * stats.t.ppf(1 - p / 2, S - 1) / np.sqrt(S) + z


@pytest.mark.parametrize(
    "diffs, expected",
    [
        (_with_p(1e-6), HOLDS),
        (_with_p(1e-6, sign=-1), FAILS),
        (_with_p(1.0), UNDECIDED),  # a tie: mean 0
        (_with_p(0.5), UNDECIDED),
    ],
    ids=["clear-win", "clear-loss", "tie", "weak-win"],
)
def test_one_comparison(diffs, expected):
    v = paired("A ahead of B", [diffs], ["A − B"])
    assert v["verdict"] == expected
    assert (
        v["method"] == f"paired t over {S} seeds, one comparison" and v["seeds"] == S and v["level"] == 0.95
    )
    ci = stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)  # scipy as the second voice
    np.testing.assert_allclose(v["interval"], [ci.low, ci.high], rtol=1e-12)
    (c,) = v["comparisons"]
    assert c["p"] == pytest.approx(stats.ttest_1samp(diffs, 0.0).pvalue, rel=1e-9)


def test_multiplicity_changes_a_borderline_case():
    """p = 0.03 alone holds at 95 %; two such comparisons under Holm (0.06 > 0.05) do not."""
    alone = paired("A ahead of B", [_with_p(0.03)], ["A − B"])
    both = paired("A > B > C", [_with_p(0.03), _with_p(0.03, shift=1)], ["A − B", "B − C"])
    assert alone["verdict"] == HOLDS and both["verdict"] == UNDECIDED
    assert both["method"] == f"paired t over {S} seeds, Holm-adjusted over 2 comparisons"
    assert all(c["p_holm"] == pytest.approx(0.06) for c in both["comparisons"])
    for c in both["comparisons"]:  # the interval agrees with the decision: at Holm's level it contains 0
        assert c["interval"][0] < 0 < c["interval"][1] and c["level"] == pytest.approx(1 - 0.05 / 2)


def test_holm_steps_down_where_bonferroni_would_not():
    """p = (0.001, 0.04): Holm tests the second at 0.05 (Bonferroni at 0.025): the ordering holds, and
    the second interval is the plain 95 % one."""
    v = paired("A > B > C", [_with_p(0.001), _with_p(0.04, shift=2)], ["A − B", "B − C"])
    assert v["verdict"] == HOLDS
    first, second = v["comparisons"]
    assert first["level"] == pytest.approx(0.975) and second["level"] == pytest.approx(0.95)
    assert second["interval"][0] > 0 and v["interval"] == second["interval"]  # the weakest decides


def test_one_reversed_comparison_fails_the_claim():
    v = paired("A > B > C", [_with_p(1e-6), _with_p(1e-6, sign=-1, shift=1)], ["A − B", "B − C"])
    assert v["verdict"] == FAILS and v["interval"][1] < 0 and "B − C" in v["reason"]


def test_holm_adjusted_p_values_by_hand():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])


def test_fewer_than_two_seeds_is_undecided_with_that_reason():
    v = paired("A ahead of B", [[3.0]], ["A − B"])
    assert v["verdict"] == UNDECIDED and v["interval"] is None and "at least 2" in v["reason"]


def test_welch_interval_is_scipys():
    rng = np.random.default_rng(0)
    x, y = rng.normal(2, 1, 7), rng.normal(0, 3, 5)
    v = welch("x above y", [(x, y, 1.0, 1.0)], ["x − y"])
    ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    np.testing.assert_allclose(v["interval"], [ci.low, ci.high], rtol=1e-10)


@pytest.mark.parametrize("seed", range(20))
def test_every_comparison_verdict_is_the_side_of_its_interval(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 5))
    d = rng.normal(rng.normal(0, 1, (k, 1)), 1, (k, 4))
    v = paired("claim", d, [f"c{i}" for i in range(k)])
    for c in v["comparisons"]:
        lo, hi = c["interval"]
        assert c["verdict"] == (HOLDS if lo > 0 else FAILS if hi < 0 else UNDECIDED)
    words = {c["verdict"] for c in v["comparisons"]}
    assert v["verdict"] == (FAILS if FAILS in words else HOLDS if words == {HOLDS} else UNDECIDED)


def test_exact_claims_keep_their_rule_in_the_same_shape():
    v = exact("x <= y", False, 1.5)
    assert {k: v[k] for k in ("verdict", "interval", "method")} == {
        "verdict": FAILS,
        "interval": None,
        "method": "exact",
    }
    assert line({**v, "quick": True}).startswith(
        "FAILS: x <= y (exact; value 1.5) [quick: not the paper's size]"
    )


@pytest.mark.reproduce
def test_a_quick_run_records_the_verdict_shape_and_prints_one_line_per_claim(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
    import moreau._cli as cli

    assert (
        cli.main(["reproduce", "perfedavg-vs-pfedme", "--quick", "--workers", "1", "--out", str(tmp_path)])
        == 0
    )
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["schema_version"] == SCHEMA_VERSION
    keys = {"claim", "verdict", "reason", "interval", "level", "method", "seeds", "quick"}
    assert m["claims"] and all(keys <= v.keys() for v in m["claims"])
    for v in m["claims"]:
        assert v["verdict"] in (HOLDS, FAILS, UNDECIDED) and v["quick"] is True and v["seeds"] == 3
        assert v["method"].startswith(("paired t over 3 seeds", "t (per-seed fitted slopes) over 3 seeds"))
        assert len(v["interval"]) == 2 and v["level"] == 0.95
    out = capsys.readouterr().out.splitlines()
    printed = [s for s in out if s.startswith("  ")]
    assert len(printed) == len(m["claims"])
    assert all(s.endswith("[quick: not the paper's size]") for s in printed)
    assert all(s.strip().split(":")[0] in ("holds", "FAILS", "UNDECIDED") for s in printed)


def test_catalogue_verdict_in_a_manifest_is_check_s_verdict():
    """reproduce's manifests carry the catalogue's verdict in ``moreau check --json``'s shape and words:
    the printed statement and each reading, what the catalogue expects of them, the schema version."""
    from moreau.analysis.engine.records import record_json
    from moreau.analysis.engine.report import verdict_of
    from moreau.analysis.engine.runner import run
    from moreau.experiments._sweep import catalogue_verdict

    for sid, printed in (("fedprox.lemma2", HOLDS), ("pfedme.cor1", FAILS)):
        v = json.loads(json.dumps(catalogue_verdict(sid)))  # plain JSON, as written to the manifest
        assert v["schema_version"] == SCHEMA_VERSION and v["statement"] == sid and v["instances"] > 0
        assert v["printed"]["verdict"] == printed and v["printed"]["claim"] == "printed"
        assert v["as_expected"] is True
        recs = run([sid], "quadratic")  # the same run through check's own JSON
        ref = record_json(recs[0], verdict=verdict_of(recs[0].statement, recs))["verdict"]
        assert {k: v[k] for k in ref} == json.loads(json.dumps(ref))
        if printed == FAILS:  # a failing statement shows the reading that holds beside it, never in its place
            assert any(r["verdict"] == HOLDS for r in v["readings"])
