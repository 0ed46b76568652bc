"""fedprox.cor1's power (issue 27, item 6): on seventeen decades of λ both rate parts detect a change of
their slope of 0.05, and (14)'s ratio is bounded as λ → ∞ because K_min's denominator grows like its
logarithm (mpmath against ``k_min``), so the mutant with the logarithm made explicit is rejected."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from moreau.analysis.engine.rates import part_detectable_change
from moreau.analysis.engine.registry import get
from moreau.analysis.fedprox.round_matrix import k_min


def _k_min_mp(lam, mu, L):
    """(12) with γL_g = 1/2, η = 1/(λ+L), by hand: K = ⌈log(16(2 + 64λ²/μ²))/(−log((L − μ)/(λ + L)))⌉."""
    lam, mu, L = (mp.mpf(x) for x in (lam, mu, L))
    return int(mp.ceil(mp.log(16 * (2 + 64 * lam**2 / mu**2)) / -mp.log((L - mu) / (lam + L))))


@pytest.mark.parametrize("lam_over_L", [1e-7, 1e-2, 1.0, 1e3, 1e6, 1e10])
def test_k_min_closed_form(lam_over_L):
    mp.mp.dps = 40
    mu, L = 0.02, 1.3
    lam = lam_over_L * L
    K = int(k_min(lam, mu, L, (lam + L) / (2 * lam * L), 1 / (lam + L)))
    assert K == _k_min_mp(lam, mu, L)


def test_k_min_stays_bounded():
    """K_min's unrounded value → 2 from above as λ → ∞ (numerator 2 log λ, denominator log λ), so K_min = 3
    from λ/L = 1e10 on: the logarithm in (14) does not grow without bound."""
    mp.mp.dps = 40
    assert [_k_min_mp(mp.mpf(10) ** e, 0.02, 1.3) for e in (10, 100, 1000, 10000)] == [3, 3, 3, 3]
    lam = mp.mpf(10) ** 10000
    ratio = mp.log(16 * (2 + 64 * (lam / mp.mpf(0.02)) ** 2)) / -mp.log((1.3 - mp.mpf(0.02)) / (lam + 1.3))
    assert 2 < ratio < 2.001


def test_both_rate_parts_detect_a_change_of_0_05():
    res = get("fedprox.cor1").run("quadratic", None, np.random.default_rng(0))
    rates = [p for p in res.parts if p.claimed == "rate"]
    assert len(rates) == 2 and all(p.holds for p in rates)
    assert all(part_detectable_change(p) <= 0.05 for p in rates)
