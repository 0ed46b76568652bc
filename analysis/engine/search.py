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
"""
from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, assume, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from moreau.analysis.engine.core import take

__all__ = ["batch_strategy", "search"]

MAX_TRIALS = 8


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

    cfg = settings(max_examples=max_examples, database=None, deadline=None,
                   suppress_health_check=list(HealthCheck))
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
        report.update(examples=count["examples"], before_failure=first if first else count["examples"],
                      shrinks=count["examples"] - first if first else 0, failing=count["failing"],
                      found=result is not None)
        if result is not None:
            report.update(batch_size=int(len(next(v for v in found.values() if np.ndim(v) > 0))),
                          instance={k: np.asarray(v).tolist() for k, v in result.items()})
    return result
