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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # moreau.analysis is imported when a check runs, not with moreau.testing
    from moreau.analysis.engine.core import Statement

__all__ = ["check", "assert_holds"]


def check(
    statement: Statement,
    *,
    family: str = "all",
    trials: int | None = None,
    seed: int = 0,
    search: bool = True,
    reading: str | None = None,
) -> None:
    """Assert that ``statement`` holds (as printed, or under ``reading``) on its instances of every
    family (or ``family``) and, with ``search`` and hypothesis installed, on a hypothesis search
    of its generator (``max_examples`` from the active hypothesis settings profile).

    A check that decided nothing never passes: an :class:`AssertionError` says why when no instance
    met the statement's assumptions (the verdict is undecided) or ``evaluate`` returned no part.
    ``search=True`` without hypothesis installed: the instances are checked, then the test is
    skipped saying so under pytest (an ImportError elsewhere); ``search=False`` checks the
    instances only.  Bad arguments are a TypeError or ValueError naming them."""
    from moreau.analysis.engine import runner
    from moreau.analysis.engine.report import counterexample_text, group, shrunk_text, verdict_of

    _check_arguments(statement, family, trials, seed, reading)
    what = "as printed" if reading is None else f"under reading {reading!r}"
    cat = {statement.id: statement}
    records = runner.run([statement.id], family, trials, seed, cat=cat)
    if not records:  # a check of nothing is never a pass
        raise AssertionError(f"{statement.id}: nothing was checked (no family of {family!r} ran)")
    for st, recs in group(records):
        results = [r.result if reading is None else r.readings[reading][0] for r in recs]
        empty = [r.family for r in results if not r.parts]
        if empty:
            raise AssertionError(
                f"{statement.id}: nothing was checked on {', '.join(empty)}: evaluate returned no part "
                "(an empty dict)"
            )
        failing = [r for r in results if not r.holds]
        if failing:
            text = counterexample_text(recs, results, reading) or "a claimed-tight bound is not attained"
            if reading is None:  # the printed claim: its failing instance shrunk where the statement says how
                text += "".join(f"; {shrunk_text(*r.shrunk)}" for r in recs if r.shrunk is not None)
            raise AssertionError(f"{statement.id} fails {what}: {text}")
        v = verdict_of(st, recs)
        claim = v["printed"] if reading is None else next(c for c in v["readings"] if c["claim"] == reading)
        if claim["verdict"] != "holds":  # undecided: e.g. no instance met the assumptions
            verdict = "is undecided" if claim["verdict"] == "undecided" else claim["verdict"]
            raise AssertionError(f"{statement.id} {verdict} {what} (not a pass): {claim['reason']}")
    if search:
        _search(statement, family, seed, reading)


def _check_arguments(statement: Any, family: Any, trials: Any, seed: Any, reading: Any) -> None:
    """The arguments of :func:`check`, as ``moreau check`` checks its flags: a TypeError or ValueError
    naming the argument, the condition and the value."""
    import numbers

    from moreau._argtypes import MAX_TRIALS
    from moreau.analysis.engine.core import Statement

    if not isinstance(statement, Statement):
        raise TypeError(
            f"statement must be a moreau.analysis.api.Statement (got {type(statement).__name__} {statement!r:.80})"
        )
    families = ", ".join(map(repr, statement.families))
    if not isinstance(family, str) or (family != "all" and family not in statement.families):
        raise ValueError(
            f"family must be 'all' or one of {statement.id}'s families {families} (got {family!r})"
        )
    if trials is not None and (
        isinstance(trials, bool)
        or not isinstance(trials, numbers.Integral)
        or not 1 <= int(trials) <= MAX_TRIALS
    ):
        raise ValueError(f"trials must be None or a whole number in [1, {MAX_TRIALS:.0e}] (got {trials!r})")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0 (got {seed!r})")
    names = [r.name for r in statement.readings]
    if reading is not None and reading not in names:
        raise ValueError(
            f"reading must be None (the printed claim) or one of {statement.id}'s readings "
            f"{', '.join(map(repr, names)) or '(it has none)'} (got {reading!r})"
        )


def _search(statement: Statement, family: str, seed: int, reading: str | None) -> None:
    if reading is not None:
        return  # the search looks for failures of the printed claim only
    try:
        from hypothesis import settings
    except ImportError:  # asked for and not run: never a silent pass
        _not_searched(
            f"{statement.id}: its instances hold, but the hypothesis search (check(search=True)) did not "
            "run: hypothesis is not installed (install it, or pass search=False to check the instances only)"
        )
        return
    from moreau.analysis.engine.search import search

    n = settings().max_examples
    fams = statement.families if family == "all" else (family,)
    for fam in fams:
        found = search(statement, fam, max_examples=n, seed=seed)
        if found is not None:
            assert_holds(statement, found, family=fam)


def _not_searched(why: str) -> None:
    """A search asked for that cannot run: the test is skipped saying why under pytest, else an ImportError."""
    import os

    if os.environ.get("PYTEST_CURRENT_TEST"):
        import pytest

        pytest.skip(why)
    raise ImportError(why)


def assert_holds(
    statement: Statement, batch: dict[str, Any], *, family: str, reading: str | None = None
) -> None:
    """Assert that ``statement`` holds on ``batch`` (a dict of arrays, instances along the first axis)."""
    res = statement.run(family, None, None, batch=batch, reading=reading)
    for p in res.parts:
        if p.failures.size:
            i = int(p.failures[0])
            raise AssertionError(
                f"{statement.id} [{family}] part {p.name!r} fails on instance #{i}: "
                f"lhs {p.sides.lhs[i]:.6g} > rhs {p.sides.rhs[i]:.6g}"
            )
