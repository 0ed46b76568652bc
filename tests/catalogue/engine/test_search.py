"""Hypothesis instance search (analysis.search): finds small counterexamples to mutants and to
printed statements that fail, none to the statements that hold."""
import numpy as np
import pytest

from moreau.analysis.engine.registry import catalogue
from moreau.analysis.engine.search import search

CAT = catalogue()


def _mutant(sid, fragment):
    return next(m for m in CAT[sid].mutants if fragment in m.name)


@pytest.mark.parametrize("sid, family, fragment", [
    ("pfedme.prop1", "quadratic", "mu_F = lam mu / (lam - mu)"),
    ("pfedme.prop1", "quadratic", "condition relaxed"),
    ("fedprox.lemma2", "quadratic", "(lam + 2L)"),
    ("fw.convex", "quadratic", "rate 2 L R^2/(t + 2)^2"),
])
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
