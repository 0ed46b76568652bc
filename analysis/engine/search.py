r"""Instance search with hypothesis: a small instance on which a statement (or a mutant) fails.

The checkers' batches hold random and adversarial instances; this module
adds a search over the checker's own instance generator, driven by
hypothesis: it draws the generator's seed and a batch size, runs the
(mutated) statement, and keeps what fails.  Hypothesis shrinks the batch
size towards 1 and the seed towards 0, and the first failing instance of the
shrunk batch is returned alone, so a failure is reported as one small,
replayable instance.  A checker may give its own ``strategy(family)`` of
batches (``Statement.strategy``) for a finer-grained search.

Only failed inequalities count: a mutant rejected because a claimed-tight
constant is no longer attained needs the whole batch, not one instance.

:func:`short_search` is the default run's search: the same space (the generator's seed and a
batch of 1 to ``MAX_TRIALS`` instances, from the run's seed), drawn in order until a failure or
a time budget is spent, no shrinking; ``--search N`` searches further with hypothesis.
"""

from __future__ import annotations

import random
import time

import numpy as np
from hypothesis import HealthCheck, assume, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from moreau.analysis.engine.core import take
from moreau.analysis.engine.judge import judged_over

__all__ = ["batch_strategy", "search", "short_search", "search_statement"]

MAX_TRIALS = 8

#: the short search's clock (seconds); a test replaces it with a fake one to count the budget deterministically
_clock = time.perf_counter


def batch_strategy(statement, family):
    """Hypothesis strategy of instance batches for ``statement`` on ``family``."""
    own = getattr(statement, "strategy", None)
    if own is not None:
        return own(family)

    @st.composite
    def batches(draw):
        seed = draw(st.integers(0, 2**32 - 1))
        trials = draw(st.integers(1, MAX_TRIALS))
        try:
            return statement.instances(family, trials, np.random.default_rng(seed))
        except (ValueError, IndexError, ZeroDivisionError):
            assume(False)  # the generator needs more instances than this draw gave it

    return batches()


def search(statement, family, mutant=None, *, max_examples=60, seed=0, report=None):
    """A one-instance batch on which the statement (or ``mutant``) fails, or ``None``.

    Deterministic for a given ``seed``; at most ``max_examples`` batches are generated before a
    failure (hypothesis then shrinks it).  ``report``: a dict filled with what was searched —
    ``examples`` (batches evaluated in all), ``before_failure`` (batches generated until the first
    failure; all of them when none fails), ``shrinks`` (evaluations while shrinking),
    ``failing`` (evaluations that failed), ``found`` and, when found, ``batch_size`` (instances in
    the shrunk batch) and ``instance`` (the returned failing instance's arrays, as lists).
    """
    count = {"examples": 0, "failing": 0, "first": None}

    def failures(batch):
        return statement.run(family, None, None, mutant=mutant, batch=batch).failures

    def fails(batch):
        bad = failures(batch).size > 0
        count["examples"] += 1
        if bad:
            count["failing"] += 1
            if count["first"] is None:
                count["first"] = count["examples"]
        return bad

    cfg = settings(
        max_examples=max_examples, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    try:
        found = find(batch_strategy(statement, family), fails, settings=cfg, random=random.Random(seed))
    except NoSuchExample:
        found = None
    if found is not None:
        one = take(found, failures(found)[:1])
        result = one if failures(one).size else found
    else:
        result = None
    if report is not None:
        first = count["first"]
        report.update(
            examples=count["examples"],
            before_failure=first if first else count["examples"],
            shrinks=count["examples"] - first if first else 0,
            failing=count["failing"],
            found=result is not None,
        )
        if result is not None:
            report.update(
                batch_size=int(len(next(v for v in found.values() if np.ndim(v) > 0))),
                instance={k: np.asarray(v).tolist() for k, v in result.items()},
            )
    return result


def short_search(statement, family, budget_s, *, seed=0):
    """``(one failing instance or None, report)``: batches of the generator drawn from ``seed`` (their
    own seeds and sizes 1..``MAX_TRIALS``, as :func:`batch_strategy`, the k-th batch at most 2^k
    instances), evaluated in order until one fails or ``budget_s`` seconds are spent (at least one
    batch is evaluated).  ``report``: ``examples``,
    ``seconds``, ``found`` and, when found, ``batch_size`` and ``instance`` (as :func:`search`'s)."""
    rng = np.random.default_rng([seed, 0x5EA7C4])
    t0 = _clock()
    n, found, size = 0, None, 0
    while found is None and (n == 0 or _clock() - t0 < budget_s):
        # batches grow 1, <= 2, <= 4, ... up to MAX_TRIALS: a statement whose instances are costly (a rate
        # fitted per instance) spends its first, compulsory batch on one instance, not eight
        size = int(rng.integers(1, min(MAX_TRIALS, 2**n) + 1))
        gen = np.random.default_rng(int(rng.integers(0, 2**32)))
        try:
            batch = statement.instances(family, size, gen)
        except (ValueError, IndexError, ZeroDivisionError):
            continue  # the generator needs more instances than this draw gave it (as batch_strategy)
        finally:
            n += 1
        bad = statement.run(family, None, None, batch=batch).failures
        if bad.size:
            found = take(batch, bad[:1])
    report = {"examples": n, "seconds": _clock() - t0, "found": found is not None, "short": True}
    if found is not None:
        report.update(batch_size=size, instance={k: np.asarray(v).tolist() for k, v in found.items()})
    return found, report


#: the instances a short search is reckoned to examine at most, for the joint level of Monte Carlo
#: intervals (``judge.familywise``): a search judges many batches, and one 95 % interval per batch
#: would make a statement that holds "fail" by chance somewhere among them
SHORT_SEARCH_INSTANCES = 1 << 14


def search_statement(statement, family, seed, examples=0, seconds=0.0, per_instance=0.0):
    """:func:`_search_statement` with Monte Carlo intervals held jointly over every instance the search
    may examine (``examples`` x MAX_TRIALS for ``--search``, :data:`SHORT_SEARCH_INSTANCES` for the short
    search)."""
    with judged_over(examples * MAX_TRIALS if examples else SHORT_SEARCH_INSTANCES):
        return _search_statement(statement, family, seed, examples, seconds, per_instance)


def _search_statement(statement, family, seed, examples=0, seconds=0.0, per_instance=0.0):
    """``(found or None, report or None)``: the statement's own search in a run — ``examples``
    hypothesis examples (``--search N``), else the short search of ``seconds`` (the default run's;
    only for a statement the catalogue expects to hold: a known failure is found by the run's batch
    and shown by its recorded minimal counterexample), else none.  A statement whose one instance
    costs more than ``seconds`` (``per_instance``, measured on the run's batch) is not searched: the
    report says so (``skipped``), and ``--search N`` searches it."""
    if examples:
        report = {}
        return search(statement, family, max_examples=examples, seed=seed, report=report), report
    if seconds and statement.expect == "holds":
        if per_instance > seconds:
            return None, {
                "examples": 0,
                "seconds": 0.0,
                "found": False,
                "short": True,
                "skipped": f"one instance costs {per_instance:.3g} s, more than the {seconds:g} s budget",
            }
        return short_search(statement, family, seconds, seed=seed)
    return None, None
