"""The 50-digit references themselves: ``_mpref.multinomial_prox`` converges where the softmax
probability of the label is within 1e-30 of 1 and where it is within 1e-50 of 1 (below 50 digits:
there ``π_c(1 − π_c)`` formed as ``π_c − π_c²`` is rounding noise and Newton does not converge)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from _mpref import multinomial_prox


def _residual(t, margin, lam):
    """Prox optimality residual and 1 − π_0 for one sample x = 1, label 0, C = 3, w = (margin, 0, 0),
    mu = 0: ``∇(f + lam/2 ||θ − w||²)(t) = π(t) − e_0 + lam (t − w)``, the textbook formula in
    100 digits (its cancellation in π_0 − 1 costs at most 54 of them here)."""
    with mp.workdps(100):
        z = [mp.mpf(t[c]) for c in range(3)]
        s = mp.fsum(mp.exp(v) for v in z)
        pi = [mp.exp(v) / s for v in z]
        w = [mp.mpf(margin), mp.mpf(0), mp.mpf(0)]
        g = [pi[c] - (1 if c == 0 else 0) + mp.mpf(lam) * (z[c] - w[c]) for c in range(3)]
        return mp.norm(mp.matrix(g)), 1 - pi[0]


@pytest.mark.parametrize(
    "margin,lam,gap_max", [(70.0, 1e-32, 1e-30), (120.0, 1e-54, 1e-50)], ids=["1-pi ~ 1e-32", "1-pi ~ 1e-54"]
)
def test_multinomial_prox_converges_when_pi_is_close_to_one(margin, lam, gap_max):
    w = np.array([margin, 0.0, 0.0])
    t = multinomial_prox(np.array([[1.0]]), np.array([0]), np.ones(1), 3, 0.0, w, lam, w)
    res, gap = _residual(t, margin, lam)
    assert 0 < gap < gap_max  # the instance is in the regime it is meant for
    # the two terms of the first component, 1 - pi_0 and lam (t_0 - margin), are each ~gap and cancel
    # to 40 more digits (Newton stops at a step <= 1e-45 relative)
    assert res < 1e-40 * gap
    assert float(t[0]) > margin  # the prox raises the label's logit (and lowers the others)
    assert float(t[1]) == float(t[2]) < 0
