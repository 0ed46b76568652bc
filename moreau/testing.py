r"""Theorems as tests in your own suite: a statement becomes a pytest assertion.

:func:`check` runs a :class:`moreau.analysis.api.Statement` on its instances and, with hypothesis
installed, a search over its instance generator (your hypothesis ``settings`` profile sets how
many examples), and raises :class:`AssertionError` whose message is the verdict with the
counterexample when the statement fails as printed.  :func:`assert_holds` checks one batch you
drew yourself, e.g. inside ``@given`` with :mod:`moreau.strategies`::

    from hypothesis import given
    import moreau.strategies as ms
    from moreau.testing import assert_holds, check

    def test_my_lemma():
        check(MY_LEMMA)

    @given(ms.quadratics(...))
    def test_my_lemma_on_hypothesis_quadratics(q):
        assert_holds(MY_LEMMA, {"A": ..., "b": ...}, family="quadratic")

Both assert the statement **as printed** (a reading with ``reading="name"``).
"""

from __future__ import annotations

__all__ = ["check", "assert_holds"]


def check(statement, *, family="all", trials=None, seed=0, search=True, reading=None):
    """Assert that ``statement`` holds (as printed, or under ``reading``) on its instances of every
    family (or ``family``) and, with ``search`` and hypothesis installed, on a hypothesis search
    of its generator (``max_examples`` from the active hypothesis settings profile)."""
    from moreau.analysis.engine import runner
    from moreau.analysis.engine.report import counterexample_text, group, shrunk_text

    cat = {statement.id: statement}
    records = runner.run([statement.id], family, trials, seed, cat=cat)
    for st, recs in group(records):
        results = [r.result if reading is None else r.readings[reading][0] for r in recs]
        failing = [r for r in results if not r.holds]
        if failing:
            what = "as printed" if reading is None else f"under reading {reading!r}"
            text = counterexample_text(recs, results, reading) or "a claimed-tight bound is not attained"
            if reading is None:  # the printed claim: its failing instance shrunk where the statement says how
                text += "".join(f"; {shrunk_text(*r.shrunk)}" for r in recs if r.shrunk is not None)
            raise AssertionError(f"{statement.id} fails {what}: {text}")
    if search:
        _search(statement, family, seed, reading)


def _search(statement, family, seed, reading):
    try:
        from hypothesis import settings
    except ImportError:  # the search is optional: the instances above were checked
        return
    from moreau.analysis.engine.search import search

    n = settings().max_examples
    fams = statement.families if family == "all" else (family,)
    for fam in fams:
        if reading is not None:
            return  # the search looks for failures of the printed claim only
        found = search(statement, fam, max_examples=n, seed=seed)
        if found is not None:
            assert_holds(statement, found, family=fam)


def assert_holds(statement, batch, *, family, reading=None):
    """Assert that ``statement`` holds on ``batch`` (a dict of arrays, instances along the first axis)."""
    res = statement.run(family, None, None, batch=batch, reading=reading)
    for p in res.parts:
        if p.failures.size:
            i = int(p.failures[0])
            raise AssertionError(
                f"{statement.id} [{family}] part {p.name!r} fails on instance #{i}: "
                f"lhs {p.sides.lhs[i]:.6g} > rhs {p.sides.rhs[i]:.6g}"
            )
