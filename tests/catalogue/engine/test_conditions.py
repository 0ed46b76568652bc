"""The condition search (issue 27 item 3, ``moreau.analysis.engine.conditions``): the missing hypotheses of
three catalogue statements found from their instances, a toy's "a ≥ 3 or b = 1" recovered, no condition for
a claim that holds, validation on a fresh batch, and the complement's instance failing when re-judged."""

from __future__ import annotations

import numpy as np
import pytest

from moreau.analysis.engine.analyse import _always
from moreau.analysis.engine.batches import rng_for
from moreau.analysis.engine.conditions import _relaxed, conditions_found, find_condition
from moreau.analysis.engine.core import Sides, Statement, take
from moreau.analysis.engine.registry import catalogue
from moreau.analysis.engine.runner import Record

BUDGET = 6.0  # seconds per search: the tests' runtime, not the result (the atoms are few)


def _default(sid, fam="quadratic", seed=0):
    st = catalogue()[sid]
    return st, st.instances(fam, None, rng_for(seed, sid, fam))


def _every(r):
    return [r, *r.get("also", [])]


def _fails_alone(st, fam, batch, i):
    """The printed claim re-judged on instance ``i`` alone: its failing parts' (lhs, rhs)."""
    res = st.run(fam, None, None, batch=take(batch, [i]), reading=None)
    return [(float(p.sides.lhs[0]), float(p.sides.rhs[0])) for p in res.parts if not p.holds_each[0]]


def test_fw_convex_x0_inside_and_t_at_least_1():
    st, batch = _default("fw.convex")
    r = find_condition(st, "quadratic", batch, budget=BUDGET)
    assert r["op"] == "and" and sorted(r["atoms"]) == ["t ≥ 1", "x⁰ inside the set"]
    assert r["boundaries"]["t ≥ 1"] == [0.0, 1.0]  # t = 0 fails, t = 1 holds
    assert r["validated"]["holds"] and r["validated"]["instances"] > r["instances"]
    # the kept instances are the starts in B, by the checker's own membership test (not the property library)
    from moreau.analysis.thesis.fw.sets import contains, kind_of

    inside = contains(batch["x0"], batch["h"], kind_of(batch))
    assert r["kept"] == int(inside.sum())
    c = r["complement"]
    assert any(lhs > rhs for lhs, rhs in _fails_alone(st, "quadratic", batch, c["instance"]))


def test_perfedavg_thm4_5_r_1_or_tau_1():
    st, batch = _default("perfedavg.thm4_5")
    r = find_condition(st, "quadratic", batch, budget=BUDGET)
    assert r["op"] == "or"
    labels = sorted(a.split(" (")[0] for a in r["atoms"])
    assert labels == ["S = 2", "tau = 1"]  # n = 2 clients here: S = 2 is r = 1
    assert all("(in sampling; n = 2)" in a for a in r["atoms"])
    assert r["validated"]["holds"]
    c = r["complement"]
    S, tau = batch["S"][c["instance"]], batch["tau"][c["instance"]]
    assert S < 2 and tau > 1  # outside "r = 1 or tau = 1"
    assert any(lhs > rhs for lhs, rhs in _fails_alone(st, "quadratic", batch, c["instance"]))


def test_pfedme_prop1_threshold_recovered_when_dropped():
    st, batch = _default("pfedme.prop1")
    assert st.run(
        "quadratic", None, None, batch=batch, reading=None
    ).holds  # as printed: no condition to find
    assert find_condition(st, "quadratic", batch, budget=BUDGET) is None
    relaxed = {**st.claim, "condition": _relaxed(st.claim["condition"])}
    r = find_condition(st, "quadratic", batch, claim=relaxed, budget=BUDGET)
    assert r["atoms"] == ["lam/L ≥ 2 (in condition)"]
    lo, hi = r["boundaries"][r["atoms"][0]]
    assert lo < 2 <= hi < 2 + 1e-6  # fitted from both sides around lambda = 2L
    # independently: for a_1 = -L the envelope's smoothness is lam L / (lam - L) > lam exactly when lam < 2L
    assert lo / (lo - 1) > lo and hi / (hi - 1) <= hi  # (L = 1)
    assert r["validated"]["holds"]
    c = r["complement"]
    lam, L = batch["lam"][c["instance"]], batch["L"][c["instance"]]
    assert lam / L < 2 and c["lhs"] > c["rhs"]


def _toy_instances(family, trials, rng):
    T = trials or 200
    return {
        "a": rng.uniform(0.0, 6.0, T),
        "b": rng.integers(0, 4, T).astype(float),
        "noise": rng.normal(size=T),
    }


def _toy_evaluate(batch, claim):
    a, b = batch["a"], batch["b"]
    truth = (a >= 3) | (b == 1)
    return {"toy": Sides(np.where(truth, 0.5, 2.0), np.ones_like(a) * claim["c"], "upper")}


TOY = Statement(
    id="toy.conditions",
    source="toy",
    paper="none.md",
    latex="",
    text="holds where a >= 3 or b = 1",
    assumptions=(),
    families={"toy": ("toy",)},
    claimed="upper",
    instances=_toy_instances,
    evaluate=_toy_evaluate,
    claim={"c": 1.0},
)


def test_toy_a_at_least_3_or_b_1():
    batch = _toy_instances("toy", 200, np.random.default_rng(1))
    r = find_condition(TOY, "toy", batch, budget=BUDGET)
    assert r["op"] == "or"
    a_atom = next(x for x in r["atoms"] if x.startswith("a "))
    assert "b = 1" in r["atoms"] and a_atom.startswith("a ≥ ")
    lo, hi = r["boundaries"][a_atom]
    assert lo < 3 <= hi  # the largest failing a is below 3, the smallest holding one at or above it
    truth = (batch["a"] >= 3) | (batch["b"] == 1)
    assert r["kept"] == int(truth.sum()) and r["applicable"] == 200
    assert r["validated"]["holds"] and r["validated"]["instances"] == 400
    c = r["complement"]
    i = c["instance"]
    assert batch["a"][i] < 3 and batch["b"][i] != 1  # outside the true condition, and it fails there
    assert _fails_alone(TOY, "toy", batch, i) == [(2.0, 1.0)]


def test_holding_claim_gets_no_condition():
    batch = _toy_instances("toy", 50, np.random.default_rng(2))
    assert find_condition(TOY, "toy", batch, claim={"c": 3.0}, budget=BUDGET) is None
    st = Statement(**{**TOY.__dict__, "claim": {"c": 3.0}})
    rec = Record(st, st.run("toy", None, None, batch=batch), batch=batch)
    assert rec.result.holds and conditions_found(rec, budget=BUDGET) == []


def test_validation_on_a_fresh_batch_can_reject():
    """A condition that holds on the run's batch is confirmed by a fresh batch that holds inside it, and
    reported unconfirmed when the fresh batch has a failing instance inside it (there ``noise > 10``
    fails too: no instance of the run's batch has it)."""
    batch = _toy_instances("toy", 200, np.random.default_rng(3))
    good = {"a": np.array([5.9, 1.0]), "b": np.array([1.0, 1.0]), "noise": np.zeros(2)}

    def evaluate_noise(batch, claim):
        s = _toy_evaluate(batch, claim)["toy"]
        return {"toy": Sides(np.where(batch["noise"] > 10, 2.0, s.lhs), s.rhs, "upper")}

    st = Statement(**{**TOY.__dict__, "evaluate": evaluate_noise})
    ok = find_condition(st, "toy", batch, fresh=good, budget=BUDGET)
    assert ok["validated"] == {"instances": 2, "kept": 2, "holds": True}
    bad = {"a": np.array([5.9, 1.0]), "b": np.array([0.0, 2.0]), "noise": np.array([20.0, 0.0])}
    r = find_condition(st, "toy", batch, fresh=bad, budget=BUDGET)
    assert r["condition"] == ok["condition"]  # the same search; only the fresh batch differs
    assert r["validated"]["holds"] is False and r["validated"]["fails_on"] == 0
    assert "NOT confirmed on a fresh batch" in r["text"]


@pytest.mark.parametrize("relax", [False, True])
def test_conditions_found_record(relax):
    """``conditions_found`` (the --analyse hook) on a record: the printed claim's search, or the dropped
    condition's."""
    st, batch = _default("pfedme.prop1")
    if relax:
        res = st.run("quadratic", None, None, batch=batch, reading=None)
        found = conditions_found(Record(st, res, batch=batch), budget=BUDGET)
        assert [f["claim"] for f in found] == ["printed, condition dropped"]
        assert found[0]["atoms"] == ["lam/L ≥ 2 (in condition)"]
    else:
        weak = Statement(**{**st.__dict__, "claim": {**st.claim, "condition": _always}})
        res = weak.run("quadratic", None, None, batch=batch, reading=None)
        assert not res.holds
        found = conditions_found(Record(weak, res, batch=batch), budget=BUDGET)
        assert found[0]["claim"] == "printed" and found[0]["condition"] is not None
