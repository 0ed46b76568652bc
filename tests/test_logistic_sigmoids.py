"""``Logistic._sigmoids``' in-place numpy path: the bits of the documented selection
``sigma(-z) = where(z >= 0, e sigma(|z|), sigma(|z|))`` with ``e = exp(-|z|)``, at the awkward
margins (signed zeros, subnormal, huge, both signs), and within a few ulps of scipy's ``expit``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

import moreau as mo


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sigmoids_match_the_documented_selection(dtype):
    fi = np.finfo(dtype)
    rng = np.random.default_rng(0)
    awkward = [0.0, -0.0, fi.smallest_subnormal, fi.smallest_normal, 30.0, 88.0, 745.0, fi.max]
    awkward = np.array(awkward + [-v for v in awkward], dtype=dtype)
    x = np.concatenate([awkward, (rng.normal(size=200) * 10.0 ** rng.uniform(-3, 3, 200)).astype(dtype)])
    n = x.size
    # one sample per client with feature 1 and label +1: the margins are theta exactly
    f = mo.Logistic(np.ones((n, 1, 1), dtype=dtype), np.ones((n, 1), dtype=dtype))
    z, e, big, s_neg = (v[:, 0] for v in f._sigmoids(x[:, None]))
    assert np.array_equal(z, x)
    with np.errstate(over="ignore"):
        e_ref = np.exp(np.minimum(z, -z))
        big_ref = 1 / (1 + e_ref)
        s_ref = np.where(z >= 0, e_ref * big_ref, big_ref)
    assert np.array_equal(e, e_ref)
    assert np.array_equal(big, big_ref)
    assert np.array_equal(s_neg, s_ref)
    ref = expit(-z.astype(np.float64))
    assert np.all(np.abs(s_neg - ref) <= 8 * fi.eps * ref + fi.smallest_subnormal)  # a few ulps (sigmoid)
