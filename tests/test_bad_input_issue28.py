"""Regression tests for issue 28 (a newcomer's sweep): bad input is a clear one-line error naming
the argument, the condition and the value; a check that checked nothing never passes; the user's
own code and data are reported as theirs (exit 2, naming the statement), not as internal errors.

Each row: a call, the exception it must raise and a message fragment naming the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
from moreau import fl
from moreau.fl import Box

RNG = np.random.default_rng(28)
X20 = RNG.standard_normal((20, 3))
Y20 = np.where(RNG.standard_normal(20) > 0, 1.0, -1.0)
Q = mo.Quadratic(np.tile(np.eye(2), (3, 1, 1)), RNG.standard_normal((3, 2)))
BOX = Box(-np.ones(2), np.ones(2))


def _row(name, call, exc, match):
    return pytest.param(call, exc, match, id=name)


CASES = [
    # 1. ragged sizes: an infinite or astronomically large size looped forever, memory growing
    _row(
        "ragged-infinite-size",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([np.inf, 3, 12, 5])),
        ValueError,
        r"sizes must be finite integer sample counts \(got inf at index \(0,\)\)",
    ),
    _row(
        "ragged-nan-size",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([np.nan, 3, 12, 5])),
        ValueError,
        r"sizes must be finite integer sample counts \(got nan at index \(0,\)\)",
    ),
    _row(
        "ragged-size-1e300",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([1e300, 3, 12, 5])),
        ValueError,
        r"sizes must sum to the number of rows of X, at most 2\^53 \(got sizes.sum\(\) = 1e\+300\)",
    ),
    _row(
        "ragged-sizes-sum-overflows-int64",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.full(20, 2**60)),
        ValueError,
        r"sizes must sum to the number of rows of X, at most 2\^53",
    ),
    _row(
        "ragged-sizes-sum-not-rows",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([4, 3, 12, 5])),
        ValueError,
        r"N = sizes.sum\(\) = 24 rows.*got shape \(20, 3\)",
    ),
    # 2. fedfw_optimum: max_iter 0 or negative returned a non-optimal point with iterations -2/-10
    _row(
        "fedfw-optimum-max-iter-0",
        lambda: fl.fedfw_optimum(Q, BOX, max_iter=0),
        ValueError,
        r"max_iter must be >= 1 \(got 0\)",
    ),
    _row(
        "fedfw-optimum-max-iter-negative",
        lambda: fl.fedfw_optimum(Q, BOX, max_iter=-10),
        ValueError,
        r"max_iter must be >= 1 \(got -10\)",
    ),
    _row(
        "fedfw-optimum-max-iter-float",
        lambda: fl.fedfw_optimum(Q, BOX, max_iter=2.5),
        TypeError,
        r"max_iter must be an integer \(got 2.5\)",
    ),
]


@pytest.mark.parametrize("call, exc, match", CASES)
def test_bad_input_is_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert len(str(info.value).splitlines()) == 1


def test_fedfw_optimum_max_iter_1_still_returns_a_point():
    tg = fl.fedfw_optimum(Q, BOX, max_iter=1)
    assert tg.iterations >= 1 and np.all(np.isfinite(tg.gap))
