"""The verdict model (issue 17): verdicts on the statements as printed, readings beside them, exit
codes as test runners use them, findings computed by the run, and the regressions of the review."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from moreau._cli import main
from moreau.analysis.engine import runner
from moreau.analysis.engine.core import Mutant, Reading, Result, Sides, Statement, judge
from moreau.analysis.engine.registry import catalogue
from moreau.analysis.engine.report import counterexample_text, group, verdict_of
from moreau.analysis.engine.verdict import claim_verdict, statement_verdict, summary_line

CAT = catalogue()


def _toy(claim_c, readings=(), expect="holds", sid="toy.v"):
    """x ~ U(0.5, 2), one part 'x <= c' (c from the claim)."""

    def instances(family, trials, rng):
        return {"x": rng.uniform(0.5, 2.0, trials or 50)}

    def evaluate(batch, claim):
        return {"x <= c": Sides(batch["x"], np.full(batch["x"].shape, claim["c"]), "upper")}

    return Statement(
        id=sid,
        source="toy, Lemma 0",
        paper="toy",
        latex="x <= c",
        text="x <= c",
        assumptions=("x",),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim={"c": claim_c},
        mutants=(Mutant("c = 0.1", {"c": 0.1}),),
        readings=readings,
        expect=expect,
    )


@pytest.fixture
def toy_cat(monkeypatch):
    cat = {}

    def install(*sts):
        cat.clear()
        cat.update({s.id: s for s in sts})
        monkeypatch.setattr(runner, "catalogue", lambda: cat)
        from moreau.analysis.engine import registry

        monkeypatch.setattr(registry, "catalogue", lambda: cat)

    return install


def test_printed_failure_with_a_reading_is_expected_exit_0(toy_cat, capsys):
    st = _toy(1.5, readings=(Reading("c = 2", {"c": 2.0}),), expect="fails")
    toy_cat(st)
    assert main(["check", "toy.v"]) == 0
    out = capsys.readouterr().out
    assert "FAILS AS PRINTED" in out and "holds under reading 'c = 2'" in out
    assert "1 printed statement: 1 fails (1 repair (unclassified))" in out
    assert "every verdict as the catalogue expects" in out


def test_a_known_failure_that_no_longer_fails_exits_1(toy_cat, capsys):
    toy_cat(_toy(2.5, expect="fails"))  # x <= 2.5 always holds: the expected failure is gone
    assert main(["check", "toy.v"]) == 1
    assert "UNEXPECTED: printed holds, expected fails" in capsys.readouterr().out


def test_a_reading_that_fails_exits_1(toy_cat, capsys):
    toy_cat(_toy(2.5, readings=(Reading("c = 1", {"c": 1.0}),)))
    assert main(["check", "toy.v"]) == 1
    assert "UNEXPECTED: 'c = 1' fails, expected holds" in capsys.readouterr().out


def test_a_statement_without_an_expectation_that_fails_exits_1(toy_cat, capsys):
    toy_cat(_toy(1.0))  # a user's own false statement: default expectation "holds"
    assert main(["check", "toy.v"]) == 1


def test_the_reading_never_replaces_the_printed_claim_in_the_json(toy_cat, tmp_path):
    import json

    toy_cat(_toy(1.5, readings=(Reading("c = 2", {"c": 2.0}, repairs="constant"),), expect="fails"))
    path = tmp_path / "r.json"
    assert main(["check", "toy.v", "--json", str(path)]) == 0
    (rec,) = json.loads(path.read_text())
    assert rec["holds"] is False and rec["expected"] == "fails" and rec["schema_version"] == 3
    printed = rec["verdict"]["printed"]
    assert (printed["origin"], printed["failure_class"], printed["repaired_by"]) == (
        "printed",
        "constant",
        "c = 2",
    )
    assert rec["verdict"]["printed"]["verdict"] == "fails" and rec["verdict"]["as_expected"] is True
    (r,) = rec["readings"]
    assert r["name"] == "c = 2" and r["holds"] is True and rec["mutants_against"] == "reading: c = 2"


def test_mutants_mutate_the_reading_that_holds_when_the_printed_claim_fails():
    st = _toy(1.5, readings=(Reading("c = 2", {"c": 2.0}),), expect="fails")
    assert st.reference.name == "c = 2"
    batch = {"x": np.array([0.6, 1.9])}
    assert st.run("quadratic", None, None, batch=batch).failures.tolist() == [1]  # printed
    m = st.run("quadratic", None, None, batch=batch, mutant=st.mutants[0])  # c = 0.1 on top of the reading
    assert m.failures.tolist() == [0, 1]


def test_non_finite_sides_never_hold():
    """Regression: perfedavg.w1's mutant f = sum f_i gave lhs = inf ... holds = True."""
    p = judge("p", Sides([np.inf, np.nan, 1.0, 1.0], [np.inf, 1.0, np.nan, np.inf]))
    assert p.failures.tolist() == [
        0,
        1,
        2,
    ]  # an infinite right side with a finite left side is vacuous, holds


def test_shape_only_and_undecided_verdicts():
    from moreau.analysis.engine.core import PartResult, Result, rate_sides

    rate = judge("r", rate_sides([-1.0], ([-1.1], [-0.9]), -1.0))
    v = claim_verdict([Result("t", "quadratic", 1, [rate], 0.0)])
    assert v["verdict"] == "holds" and v["shape_only"]
    none = judge("b", Sides([1.0], [2.0], applicable=[False]))
    v = claim_verdict([Result("t", "quadratic", 1, [none], 0.0)])
    assert v["verdict"] == "undecided" and "no instance met the assumptions" in v["reason"]
    assert isinstance(rate, PartResult)


def test_the_catalogue_summary_counts_printed_failures():
    recs = runner.run(["fw.convex", "pfedme.prop1"], "all", None, 0)
    verdicts = [verdict_of(st, rs) for st, rs in group(recs)]
    line = summary_line(verdicts)
    assert line == "2 printed statements: 1 hold, 1 fail (1 missing hypothesis)"


def _verdicts(*specs):
    """Statement verdicts of toy claims: ``(origin, printed verdict, [(reading verdict, repairs)])``."""
    out = []
    for k, (origin, verdict, readings) in enumerate(specs):
        st = _toy(
            1.5,
            readings=tuple(Reading(f"r{j}", {"c": 2.0}, repairs=c) for j, (_, c) in enumerate(readings)),
            expect="fails",
        )
        st = dataclasses.replace(st, id=f"toy.{k}", origin=origin)
        res = [
            Result(st.id, "quadratic", 1, [judge("p", Sides([1.0], [2.0 if verdict == "holds" else 0.5]))], 0)
        ]
        rres = {
            f"r{j}": [
                Result(st.id, "quadratic", 1, [judge("p", Sides([1.0], [2.0 if v == "holds" else 0.5]))], 0)
            ]
            for j, (v, _) in enumerate(readings)
        }
        out.append(statement_verdict(st, res, rres))
    return out


def test_failure_class_is_the_nearest_reading_that_holds():
    """The class comes from the first reading (in the statement's order) that holds in the run, not
    from the first declared: the same statement gets another class when another reading holds."""
    a, b, c, d = _verdicts(
        ("printed", "fails", [("fails", "rate"), ("holds", "missing hypothesis"), ("holds", "constant")]),
        ("printed", "fails", [("holds", "rate"), ("holds", "missing hypothesis")]),
        ("printed", "fails", [("fails", "rate")]),
        ("printed", "holds", [("holds", "rate")]),
    )
    assert (a["printed"]["failure_class"], a["printed"]["repaired_by"]) == ("missing hypothesis", "r1")
    assert b["printed"]["failure_class"] == "rate"
    assert (c["printed"]["failure_class"], c["printed"]["repaired_by"]) == ("no repair found", None)
    assert d["printed"]["failure_class"] is None
    assert summary_line([a, b, c, d]) == (
        "4 printed statements: 1 hold, 3 fail (1 no repair found, 1 missing hypothesis, 1 rate)"
    )


def test_remarks_and_reconstructions_are_counted_apart():
    vs = _verdicts(
        ("printed", "holds", []),
        ("remark", "fails", [("holds", "constant")]),
        ("reconstruction", "holds", []),
        ("reconstruction", "fails", [("fails", "rate")]),
    )
    assert vs[1]["printed"]["failure_class"] == "remark"
    assert summary_line(vs) == (
        "1 printed statement: 1 holds · 1 remark: 1 fails · 2 reconstructions: 1 hold, 1 fail (1 no repair found)"
    )


def test_reading_and_statement_fields_are_validated():
    with pytest.raises(ValueError, match="repairs must be one of"):
        Reading("r", {"c": 2.0}, repairs="typo")
    with pytest.raises(ValueError, match="needs cite="):
        Reading("r", {"c": 2.0}, repairs="misprint")
    with pytest.raises(ValueError, match="origin must be one of"):
        dataclasses.replace(_toy(1.5), origin="folklore")


def test_every_failing_catalogue_statement_has_classed_readings():
    """Each reading a failing statement may be repaired by says what it repairs (so the class of
    every failure is computed, never "unclassified"); misprints cite the paper's own text."""
    from moreau.analysis.engine.registry import catalogue

    for st in catalogue().values():
        if st.expect != "fails":
            continue
        for r in st.readings:
            if r.kind != "inconsistency":
                assert r.repairs, f"{st.id}: reading {r.name!r} has no repairs class"


@pytest.mark.parametrize("seed", [0, 7])
def test_every_counterexample_line_is_rendered_from_the_run(seed):
    """The numbers of a finding line are the record's: both sides and the ratio at the reported
    instance, and the parameters of that instance in the record's batch."""
    recs = runner.run(["fw.convex", "sgd.nonconvex", "perfedavg.thm4_5"], "all", None, seed)
    for _st, rs in group(recs):
        text = counterexample_text(rs, [r.result for r in rs])
        m = re.search(r"\[(\w+) #(\d+)\]: lhs (\S+) > rhs (\S+)", text)
        fam, i = m.group(1), int(m.group(2))
        rec = next(r for r in rs if r.result.family == fam)
        row = rec.local(i)
        parts = [p for p in rec.result.parts if row in p.failures.tolist() or (p.index is not None)]
        lhs = [f"{p.sides.lhs[row]:.4g}" for p in parts] + [
            f"{p.sides.lhs_ci[0][row]:.4g}" for p in parts if p.sides.lhs_ci is not None
        ]
        assert m.group(3) in lhs and m.group(4) in [f"{p.sides.rhs[row]:.4g}" for p in parts]
        for key, value in rec.batch.items():
            a = np.asarray(value)[row]
            if a.size == 1 and f"{key}=" in text:
                assert f"{key}={float(a.reshape(-1)[0]):.4g}" in text


def test_two_seeds_give_different_computed_numbers(capsys):
    main(["check", "fw.convex", "fw.nonconvex"])
    a = capsys.readouterr().out
    main(["check", "fw.convex", "fw.nonconvex", "--seed", "7"])
    b = capsys.readouterr().out
    lines = lambda out, key: [x for x in out.splitlines() if key in x]  # noqa: E731
    # the random instances' worst ratio changes with the seed; the recorded exact minimal counterexample
    # does not (the same exact instance, evaluated again by each run)
    assert lines(a, "FAILS AS PRINTED") and lines(a, "FAILS AS PRINTED") != lines(b, "FAILS AS PRINTED")
    assert lines(a, "minimal counterexample") == lines(b, "minimal counterexample") != []
    assert "finding:" not in a + b  # prose lives in --describe, never in the report


def test_no_numpy_warning_leaks_into_the_report(capfd):
    """Regression: `moreau check pfedme.thm1 --seed 7` printed "divide by zero encountered"."""
    main(["check", "pfedme.thm1", "--seed", "7"])
    out, err = capfd.readouterr()
    assert "encountered" not in out + err and "RuntimeWarning" not in out + err


def test_replaying_a_mutant_labels_the_mutant(tmp_path, capsys):
    assert (
        main(
            [
                "check",
                "fedprox.lemma2",
                "--family",
                "quadratic",
                "--mutants",
                "--save-counterexamples",
                str(tmp_path),
            ]
        )
        == 0
    )
    path = next(p for p in tmp_path.iterdir() if "mutant" in p.name)
    capsys.readouterr()
    assert main(["check", "fedprox.lemma2", "--family", "quadratic", "--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^mutant '.*' of fedprox\.lemma2 \[quadratic\]", out, flags=re.M)


def test_replay_refuses_an_instance_of_another_id(tmp_path, capsys):
    assert main(["check", "fw.convex", "--save-counterexamples", str(tmp_path)]) == 0
    path = next(tmp_path.iterdir())
    assert main(["check", "pfedme.prop1", "--replay", str(path)]) == 2
    assert "holds an instance of fw.convex" in capsys.readouterr().err


def test_statement_verdict_object_has_one_shape_for_printed_and_readings():
    st = _toy(1.5, readings=(Reading("c = 2", {"c": 2.0}),), expect="fails")
    recs = [runner._run_one(st, "quadratic", None, 0, False, 0, 2048, False)]
    sv = statement_verdict(st, [r.result for r in recs], {"c = 2": [recs[0].readings["c = 2"][0]]})
    keys = set(sv["printed"]) - {"id"}
    assert all(set(v) - {"kind", "repairs"} == keys for v in sv["readings"])


def test_a_negative_right_side_shows_the_failure_not_a_small_ratio():
    """Regression (issue 18): a bound negative on most instances gave "max L/R 0.82" while failing."""
    from moreau.analysis.engine.core import Result

    p = judge("norm <= bound", Sides([1.0, 1.0, 1.0, 0.5], [-2.0, -1.0, 2.0, 1.0]))
    assert p.failures.tolist() == [0, 1] and p.max_ratio == 0.5 and p.rhs_negative == 2
    v = claim_verdict([Result("t", "quadratic", 4, [p], 0.0)])
    assert v["verdict"] == "fails" and v["rhs_negative"] == ["2/4"]


def test_failures_at_the_rounding_floor_are_inconclusive_not_a_failure():
    """A geometric rate evaluated until q^t = 1e-30: the left side stops at rounding (~1e-16 of the
    scale) while the right side keeps shrinking; with the floor declared the verdict is undecided."""
    from moreau.analysis.engine.core import Result

    t = np.arange(80)
    err = np.maximum(0.5**t, 1e-16)  # the computed distance: exact until the rounding level
    rhs = 0.5**t  # the theorem's q^t |w0 - w*|
    naive = judge("rate", Sides(err, rhs))
    assert naive.failures.size  # "FAILS, max ratio 1e8" without the floor
    floored = judge("rate", Sides(err, rhs, floor=64 * np.finfo(float).eps))
    assert not floored.failures.size and floored.at_floor == naive.failures.size
    v = claim_verdict([Result("t", "quadratic", 80, [floored], 0.0)])
    assert v["verdict"] == "undecided" and "rounding floor" in v["reason"]


def test_the_recorded_minimal_counterexample_is_evaluated_by_the_run():
    """Its line is computed: the printed claim fails there with the exact numbers of the finding, and a
    statement whose claim no longer fails there says so."""
    import dataclasses

    from moreau.analysis.engine.report import minimal_text

    st = CAT["fw.convex"]
    (rec,) = runner.run(["fw.convex"], "quadratic", None, 0)
    one, res = rec.minimal
    assert minimal_text(one, res).startswith("minimal counterexample [quadratic]: lhs 10 > rhs 4 (ratio 2.5)")
    fixed = dataclasses.replace(st, claim={**st.claim, **st.reference.changes}, readings=(), expect="holds")
    (rec,) = runner.run(["fw.convex"], "quadratic", None, 0, cat={"fw.convex": fixed})
    assert "no longer fails" in minimal_text(*rec.minimal)


def test_every_printed_failure_has_a_recorded_minimal_counterexample_that_fails():
    """Each statement that fails as printed shows its smallest known counterexample (fewest dimensions and
    clients, simple numbers), evaluated by every run: it must still fail there, as printed."""
    from moreau.analysis.engine.registry import catalogue

    failing = [st for st in catalogue().values() if st.expect == "fails"]
    assert failing
    for st in failing:
        assert st.counterexamples, f"{st.id} fails as printed but records no minimal counterexample"
        for fam in st.counterexamples:
            one = st.counterexample(fam)
            assert all(np.shape(v)[:1] == (1,) for v in one.values() if np.ndim(v)), (st.id, fam)
            res = st.run(fam, None, None, batch=one, reading=None)
            assert not res.holds, f"{st.id} [{fam}]: the recorded minimal counterexample no longer fails"


def test_a_recorded_minimal_counterexample_decides_a_run_whose_batch_holds():
    """pflmf.deterministic at --trials 1: its one drawn instance holds, its recorded minimal counterexample
    (evaluated by every run, its line printed) fails: the printed statement fails (before: "holds" printed
    above a failing counterexample); a family's verdict over several results: fails if one fails."""
    recs = runner.run(["pflmf.deterministic"], "all", 1, 0)
    assert all(r.result.holds for r in recs) and any(not r.minimal[1].holds for r in recs if r.minimal)
    assert verdict_of(CAT["pflmf.deterministic"], recs)["printed"]["verdict"] == "fails"
    st = _toy(1.5)
    hold = st.run("quadratic", None, None, batch={"x": np.array([1.0])}, reading=None)
    fail = st.run("quadratic", None, None, batch={"x": np.array([1.9])}, reading=None)
    for order in ([hold, fail], [fail, hold]):
        assert claim_verdict(order)["verdict"] == "fails" and claim_verdict(order)["families"] == {
            "quadratic": "fails"
        }
