"""fedprox.thm1's rate parts on exact expectations (issue 27, item 6): the heterogeneity cost vanishes
like R² (a closed form in mpmath, derived by hand, against the affine maps), the n- and m-rates fit their
exponent within their tolerance, and every rate part detects a change of at most 0.01 except the cost's,
whose claim has slack 1 in the exponent."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from moreau.analysis.engine.rates import part_detectable_change
from moreau.analysis.engine.registry import get
from moreau.analysis.fedprox.thm1 import lam_rule
from moreau.analysis.fedprox.thm1.least_squares_moments import baseline_errors, error_maps, exact_errors


def _local_error_mp(a, sigma, n, m, R, lam):
    """d = 1, A_i = a, w⋆⁽ⁱ⁾ = w⋆⁽ᵍ⁾ ± R: w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾ = (λ(w⋆⁽ᵍ⁾ − w⋆⁽ⁱ⁾) + e_i + λē/a)/(a + λ) with
    e_i ~ N(0, σ²a/n) independent, ē their mean (by hand from the FedProx optimality conditions), so
    E‖·‖² = (λR)²/(a+λ)² + σ²a/n ((1 + λ/(am))² + (m − 1)(λ/(am))²)/(a+λ)²."""
    a, sigma, n, R, lam = (mp.mpf(x) for x in (a, sigma, n, R, lam))
    q = lam / (a * m)
    return ((lam * R) ** 2 + sigma**2 * a / n * ((1 + q) ** 2 + (m - 1) * q**2)) / (a + lam) ** 2


def test_local_error_closed_form_matches_the_affine_maps():
    a, sigma, n, m = 3.0, 0.7, 1000.0, 2
    for R in (1e-5, 1e-3, 0.02):
        lam = float(lam_rule(sigma * np.sqrt(a), R, n))
        bias, K = error_maps(np.full((m, 1, 1), a), np.array([[R], [-R]]), lam, sigma, n)
        got = exact_errors(bias, K)[1:]
        want = float(_local_error_mp(a, sigma, n, m, R, lam))
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_heterogeneity_cost_is_three_halves_R_squared():
    """d = 1, m = 2, λ = ρ/(√n R), ρ² = σ²a: cost/R² → u² + (m − 1)/m = 3/2 (the first order in 1/λ
    cancels); mpmath at 50 digits near R = 0, and the package's maps at the sweep's R."""
    mp.mp.dps = 50
    a, sigma, n, m = 3.0, 0.7, 1000.0, 2
    rho = mp.sqrt(mp.mpf(sigma) ** 2 * a)
    floor = mp.mpf(sigma) ** 2 / (a * n * m)  # GlobalTrain at R = 0
    for R in (mp.mpf("1e-12"), mp.mpf("1e-15")):
        lam = rho / (mp.sqrt(n) * R)
        assert abs((_local_error_mp(a, sigma, n, m, R, lam) - floor) / R**2 - mp.mpf(3) / 2) < 1e-9
    Rs = np.geomspace(1e-8, 1e-6, 3)  # relative O(R³) term ~ 2e-4 at 1e-6
    lam = lam_rule(sigma * np.sqrt(a), Rs, n)
    bias, K = error_maps(np.full((m, 1, 1), a), Rs[:, None, None] * np.array([[1.0], [-1.0]]), lam, sigma, n)
    cost = (
        exact_errors(bias, K)[:, 1:].max(-1)
        - baseline_errors(np.full((m, 1, 1), a), np.zeros((m, 1)), sigma, n)[1][0]
    )
    np.testing.assert_allclose(cost / Rs**2, 1.5, rtol=1e-3)


def test_rate_parts_power():
    res = get("fedprox.thm1").run("quadratic", None, np.random.default_rng(0))
    rates = [p for p in res.parts if p.claimed == "rate"]
    assert len(rates) == 7 and all(p.holds for p in rates)
    for p in rates[:6]:  # n- and m-rates: exact expectations, the fit's residual interval and atol 0.01
        assert part_detectable_change(p) <= 0.0105, p.name
    cost = rates[6]
    s, app = cost.sides, np.asarray(cost.sides.applicable, bool)
    assert np.all(np.abs(np.asarray(s.lhs)[app] - 2) < 0.01)  # the R² law, not the claimed R
    assert 1.0 <= part_detectable_change(cost) <= 1.02  # the claim's slack: nothing below 2 is false
    # the report and the JSON (the part's note) say so, with this run's least fitted exponent and the claim
    least = float(np.min(np.asarray(s.lhs)[app]))
    assert f"fitted exponent {least:.3f}" in s.note and "claimed at least 1:" in s.note
    assert "every exponent in [1, 2.00] is true here" in s.note
    assert "no check can detect a raised exponent by less than 1.00" in s.note


def test_cost_slack_is_stated_only_where_the_claim_is_below_the_fit():
    from moreau.analysis.fedprox.thm1.sides import _cost_slack

    col = {"slope": np.array([2.004, 1.996, np.nan]), "exponent": np.array([1.0, 1.0, 1.0])}
    app = np.array([True, True, False])
    assert "fitted exponent 1.996 (the least over 2 configurations)" in _cost_slack(col, app)
    assert "by less than 1.00" in _cost_slack(col, app)
    assert _cost_slack({**col, "exponent": np.full(3, 2.1)}, app) == ""  # the O(R^2.1) mutant: no slack
    assert _cost_slack(col, np.zeros(3, bool)) == ""


@pytest.mark.parametrize(
    ("changes", "rejected"),
    [({"exp_R": 2.0}, False), ({"exp_R": 2.1}, True)],
    ids=["O(R^2) true", "O(R^2.1) false"],
)
def test_heterogeneity_cost_mutants(changes, rejected):
    from moreau.analysis.engine.core import Mutant

    st = get("fedprox.thm1")
    res = st.run("quadratic", None, np.random.default_rng(0), mutant=Mutant("test", changes))
    (p,) = [p for p in res.parts if p.name.startswith("local heterogeneity cost")]
    assert p.holds is not rejected
