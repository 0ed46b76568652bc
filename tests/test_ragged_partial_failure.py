"""A ragged prox where one size bucket certifies and another does not (found by mypy: the
certified buckets' ProxInfo was None without return_info, and the batch's error read it)."""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo


@pytest.mark.parametrize("return_info", [False, True])
def test_one_bucket_fails_the_other_certifies(return_info):
    rng = np.random.default_rng(0)
    sizes = np.array([3, 20])  # two buckets (ratio 2)
    X = rng.standard_normal((int(sizes.sum()), 4))
    y = rng.choice([-1.0, 1.0], size=int(sizes.sum()))
    f = mo.ragged(mo.Logistic, X, y, sizes, mu=0.1)
    assert len(f.layout.buckets) == 2
    w = rng.standard_normal((2, 4))
    with pytest.raises(mo.ProxConvergenceError) as err:
        f.prox(w, 1.0, tol=np.array([1e-3, 1e-300]), return_info=return_info)
    e = err.value
    assert e.failed.tolist() == [False, True]
    assert e.error_bound.shape == (2,) and e.error_bound[0] <= 1e-3
    assert e.theta.shape == (2, 4) and "batch index (1,)" in str(e)
