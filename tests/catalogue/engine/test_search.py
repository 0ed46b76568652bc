"""Hypothesis instance search (analysis.search): finds small counterexamples to mutants,
none to the statements."""
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
    ("fw.convex", "quadratic", "range t >= 0"),
])
def test_search_shrinks_a_mutant_counterexample_to_one_instance(sid, family, fragment):
    st, m = CAT[sid], _mutant(sid, fragment)
    found = search(st, family, m, max_examples=40)
    assert found is not None
    assert {np.shape(v)[0] for v in found.values() if np.ndim(v)} == {1}
    assert not st.run(family, None, None, mutant=m, batch=found).holds  # it is a counterexample
    assert st.run(family, None, None, batch=found).failures.size == 0   # and not one to the statement


@pytest.mark.parametrize("sid", ["pfedme.prop1", "fedprox.lemma2", "perfedavg.lemma4_2", "fw.convex"])
def test_search_finds_nothing_against_the_statements(sid):
    assert search(CAT[sid], "quadratic", max_examples=15) is None


def test_cli_search_flag_runs():
    from moreau._cli import main

    assert main(["check", "pfedme.prop1", "--family", "quadratic", "--search", "5", "--mutants"]) == 0
