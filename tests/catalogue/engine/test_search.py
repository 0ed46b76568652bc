"""Hypothesis instance search (analysis.search): finds small counterexamples to mutants and to
printed statements that fail, none to the statements that hold."""

import numpy as np
import pytest

from moreau.analysis.engine.registry import catalogue
from moreau.analysis.engine.search import search

CAT = catalogue()


def _mutant(sid, fragment):
    return next(m for m in CAT[sid].mutants if fragment in m.name)


@pytest.mark.parametrize(
    "sid, family, fragment",
    [
        ("pfedme.prop1", "quadratic", "mu_F = lam mu / (lam - mu)"),
        ("pfedme.prop1", "quadratic", "condition relaxed"),
        ("fedprox.lemma2", "quadratic", "(lam + 2L)"),
        ("fw.convex", "quadratic", "rate 2 L R^2/(t + 2)^2"),
    ],
)
def test_search_shrinks_a_mutant_counterexample_to_one_instance(sid, family, fragment):
    st, m = CAT[sid], _mutant(sid, fragment)
    found = search(st, family, m, max_examples=40)
    assert found is not None
    assert {np.shape(v)[0] for v in found.values() if np.ndim(v)} == {1}
    assert not st.run(family, None, None, mutant=m, batch=found).holds  # it is a counterexample
    # and not one to the claim the mutant mutates (the printed statement, or the reading that holds)
    assert st.run(family, None, None, batch=found, reading=st.reference).failures.size == 0


@pytest.mark.parametrize("sid", ["pfedme.prop1", "fedprox.lemma2", "perfedavg.lemma4_2"])
def test_search_finds_nothing_against_the_statements_that_hold(sid):
    assert search(CAT[sid], "quadratic", max_examples=15) is None


def test_search_finds_a_printed_failure_from_the_printed_statement_alone():
    """fw.convex as printed (no range for t, x^0 in R^d): the search finds a failing instance with
    no mutant and no expectation involved."""
    st = CAT["fw.convex"]
    found = search(st, "quadratic", max_examples=40)
    assert found is not None
    assert not st.run("quadratic", None, None, batch=found, reading=None).holds


def test_cli_search_flag_runs():
    from moreau._cli import main

    assert main(["check", "pfedme.prop1", "--family", "quadratic", "--search", "5", "--mutants"]) == 0


# --- the default run's short search ---------------------------------------------------------------


class _Clock:
    """The short search's clock, faked: each batch the statement draws costs ``step`` seconds, so a budget of
    B seconds is ceil(B / step) batches, whatever the machine's speed (no wall-clock in the tests)."""

    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        return self.t


def _rare(sid="toy.rare", expect="holds", clock=None):
    """x ~ U(0, 1), claimed x <= 0.999: false on one draw in a thousand, which the run's four
    instances miss and a short search finds.  Each batch drawn advances ``clock`` by its step."""
    from moreau.analysis.engine.core import Sides, Statement

    def instances(family, trials, rng):
        if clock is not None:
            clock.t += clock.step
        return {"x": rng.uniform(0.0, 1.0, trials or 4)}

    return Statement(
        id=sid,
        source="toy",
        paper="none.md",
        latex=r"x \le 0.999",
        text="x <= 0.999",
        assumptions=("x in [0, 1]",),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=instances,
        evaluate=lambda batch, claim: {"x <= c": Sides(batch["x"], claim["c"] + 0 * batch["x"], "upper")},
        claim={"c": 0.999},
        expect=expect,
    )


def _first_failure(seed):
    """``(batches drawn, that batch's size, its first x > 0.999)``: the short search's draws replayed here
    (the stream ``default_rng([seed, 0x5EA7C4])``; the k-th batch (k = 0, 1, ...) 1..min(8, 2^k) instances
    x ~ U(0, 1) from a generator seeded by the stream)."""
    rng = np.random.default_rng([seed, 0x5EA7C4])
    k = 0
    while True:
        size = int(rng.integers(1, min(8, 2**k) + 1))
        x = np.random.default_rng(int(rng.integers(0, 2**32))).uniform(0.0, 1.0, size)
        k += 1
        if np.any(x > 0.999):
            return k, size, float(x[x > 0.999][0])


def _fake_clock(monkeypatch, step):
    from moreau.analysis.engine import search as search_module

    clock = _Clock(step)
    monkeypatch.setattr(search_module, "_clock", clock)
    return clock


def test_the_short_search_finds_what_the_run_s_batch_misses(monkeypatch):
    from moreau.analysis.engine import runner

    clock = _fake_clock(monkeypatch, 1 / 128)  # 5 s: 640 batches
    n, size, x = _first_failure(0)  # the run's seed
    assert n == 601 < 640  # found within the budget (a fixed fact of the replay, checked here)
    st = _rare(clock=clock)
    cat = {st.id: st}
    (plain,) = runner.run(cat=cat)  # the batch alone: four draws below 0.999
    assert plain.result.holds and not plain.searches
    (rec,) = runner.run(cat=cat, search_seconds=5.0)
    ((name, rep),) = rec.searches
    assert name == "" and rep["short"] is True and rep["found"] is True
    assert rep["examples"] == n and rep["batch_size"] == size and rep["instance"]["x"] == [x]
    assert rep["seconds"] == n / 128  # the fake clock's: n batches of 1/128 s
    assert not rec.result.holds  # its failing instance joined the batch: the verdict is the search's
    assert rec.result.instances == plain.result.instances + 1
    (rec,) = runner.run(cat=cat, search_seconds=4.0)  # 512 batches: the budget ends before batch 601
    ((_, rep),) = rec.searches
    assert rep["found"] is False and rep["examples"] == 512 and "instance" not in rep
    assert rec.result.holds


def test_the_short_search_skips_known_failures_and_stops_on_time(monkeypatch):
    from moreau.analysis.engine import runner
    from moreau.analysis.engine.search import short_search

    clock = _fake_clock(monkeypatch, 1 / 64)
    known = _rare("toy.known", expect="fails", clock=clock)
    (rec,) = runner.run(cat={known.id: known}, search_seconds=5.0)
    assert not rec.searches  # a statement expected to fail is shown by its run, not searched
    tiny = _rare(clock=clock)
    tiny = type(tiny)(**{**tiny.__dict__, "claim": {"c": 2.0}})  # true: nothing to find
    found, rep = short_search(tiny, "quadratic", 0.2, seed=3)
    # batches until the clock reaches 0.2 s: ceil(0.2 * 64) = 13 (12 batches are 0.1875 s < 0.2)
    assert found is None and rep["found"] is False and rep["examples"] == 13 and rep["seconds"] == 13 / 64
    found, rep = short_search(tiny, "quadratic", 0.0, seed=3)  # no budget: the one compulsory batch
    assert found is None and rep["examples"] == 1


def test_cli_short_search_line_json_and_bad_value(monkeypatch, tmp_path, capsys):
    import json

    from moreau._cli import main
    from moreau.analysis.engine import registry, runner

    clock = _fake_clock(monkeypatch, 1 / 128)  # 5 s: 640 batches; the failure is batch 601 (seed 0)
    n, _, x_fail = _first_failure(0)
    st = _rare(clock=clock)
    monkeypatch.setattr(registry, "catalogue", lambda: {st.id: st})
    monkeypatch.setattr(runner, "catalogue", lambda: {st.id: st})
    assert main(["check", "toy.rare", "--search-seconds", "5", "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("short search:"))
    assert "a failing instance for toy.rare [quadratic]" in line and len(line) < 120
    doc = json.loads((tmp_path / "r.json").read_text())
    rec = doc["records"][0] if isinstance(doc, dict) else doc[0]
    assert rec["search"][0]["short"] is True and rec["search"][0]["found"] is True
    assert rec["search"][0]["examples"] == n and rec["search"][0]["instance"]["x"] == [x_fail]
    assert rec["run"]["search_seconds"] == 5.0
    assert main(["check", "toy.rare", "--search-seconds", "0"]) == 0  # no search: the batch holds
    assert "short search" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:  # argparse: a usage error, exit 2, one line naming the option
        main(["check", "toy.rare", "--search-seconds", "-1"])
    assert exc.value.code == 2
    assert "--search-seconds: must be a number of seconds in [0, 3600] (got '-1')" in capsys.readouterr().err


def test_a_statement_whose_instance_costs_more_than_the_budget_is_not_searched():
    """The short search runs after the batch: a statement whose one instance costs more than its seconds is
    skipped (said in the report), not charged a compulsory batch."""
    import time

    from moreau.analysis.engine import runner

    st = _rare()
    slow = type(st)(
        **{
            **st.__dict__,
            "evaluate": lambda batch, claim: (time.sleep(0.02 * len(batch["x"])), st.evaluate(batch, claim))[
                1
            ],
        }
    )
    (rec,) = runner.run(cat={slow.id: slow}, search_seconds=0.01)
    ((_, rep),) = rec.searches
    assert (
        rep["short"]
        and rep["examples"] == 0
        and not rep["found"]
        and "more than the 0.01 s budget" in rep["skipped"]
    )
