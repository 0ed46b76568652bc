"""fedprox.thm1: the exact moments and the fast Monte Carlo against independent computations
(moreau.fl on samples and on resampled sufficient statistics, scalar closed forms), and the checker."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from moreau.analysis.fedprox import thm1
from moreau.analysis.fedprox.thm1.least_squares_moments import (
    baseline_errors,
    error_maps,
    exact_errors,
    monte_carlo_errors,
)
from moreau.data import least_squares
from moreau.fl import fedprox_optimum, global_train, local_train


def _problem(seed=0, m=3, d=3, n=40, R=0.7, mu=0.5, L=3.0, sigma=0.8):
    return least_squares(seed, m=m, n=n, d=d, R=R, mu=mu, L=L, sigma=sigma)


def test_affine_map_reproduces_fedprox_optimum_on_samples():
    """bias + K ξ, with ξ recovered from the data's sufficient statistics, is fedprox_optimum(data) − w⋆."""
    P, lam, sigma, n = _problem(), 0.37, 0.8, 40
    A, b = np.asarray(P.objective.A), np.asarray(P.objective.b)
    a, V = np.linalg.eigh(A)
    inv_root = (V / np.sqrt(a)[..., None, :]) @ np.swapaxes(V, -1, -2)
    xi = (inv_root @ (b - (A @ P.w_star[..., None])[..., 0])[..., None])[..., 0] * np.sqrt(n) / sigma
    bias, K = error_maps(A, P.w_star, lam, sigma, n)
    err = bias + (K @ xi.reshape(-1)).reshape(bias.shape)
    w_g, w_loc = fedprox_optimum(P.objective, lam)
    np.testing.assert_allclose(err[0], w_g - P.w_star_global, atol=1e-12)
    np.testing.assert_allclose(err[1:], w_loc - P.w_star, atol=1e-12)


def test_exact_errors_against_moreau_fl_on_resampled_data():
    """E‖·‖² of FedProx, LocalTrain and GlobalTrain: the closed forms against the mean over 20000 data sets
    drawn by the generator's sufficient-statistic sampler and solved by moreau.fl (99.99% CLT intervals)."""
    P, lam, sigma, n, T = _problem(seed=3), 0.9, 0.8, 40, 20000
    f = P.resample(np.random.default_rng(1), T)
    w_g, w_loc = fedprox_optimum(f, lam)
    truth = np.concatenate([P.w_star_global[None], P.w_star])
    sq = np.sum((np.concatenate([w_g[:, None], w_loc], axis=1) - truth) ** 2, axis=-1)  # (T, m+1)
    sq_lt = np.sum((local_train(f) - P.w_star) ** 2, axis=-1)
    sq_gt = np.sum((global_train(f)[:, None] - truth) ** 2, axis=-1)
    A = np.asarray(P.objective.A)
    lt, gt = baseline_errors(A, P.w_star, sigma, n)
    z = stats.norm.ppf(1 - 1e-4 / 2)
    for samples, exact in (
        (sq, exact_errors(*error_maps(A, P.w_star, lam, sigma, n))),
        (sq_lt, lt[1:]),
        (sq_gt, gt),
    ):
        half = z * samples.std(axis=0, ddof=1) / np.sqrt(T)
        assert np.all(np.abs(samples.mean(axis=0) - exact) <= half), (samples.mean(axis=0), exact, half)


def test_monte_carlo_interval_contains_the_exact_value():
    """Over 60 configurations x 4 rows, the 99% intervals of the fast Monte Carlo miss the exact value
    about 1% of the time: the count of misses stays at most 10 (binomial(240, 0.01): P(> 10) < 1e-4)."""
    rng = np.random.default_rng(5)
    P = least_squares(2, m=3, d=2, n=2, R=1.0, mu=0.3, L=5.0)
    A, u = np.asarray(P.objective.A), P.w_star - P.w_star_global
    lam = np.geomspace(1e-3, 1e3, 60)
    R = np.geomspace(1e-3, 10, 60)[::-1]
    bias, K = error_maps(A, P.w_star_global + R[:, None, None] * u, lam, 0.8, 50.0)
    mean, se = monte_carlo_errors(bias, K, 3000, rng, chunk=512)
    exact = exact_errors(bias, K)
    z = stats.norm.ppf(0.995)
    misses = int(np.sum(np.abs(mean - exact) > z * se))
    assert misses <= 10 and stats.binom.sf(10, 240, 0.01) < 1e-4


def test_chunking_changes_memory_not_results():
    """The same draws in chunks of 7 or all at once give the same moments (one configuration)."""
    P = _problem()
    bias, K = error_maps(np.asarray(P.objective.A), P.w_star, 0.5, 0.8, 40)
    m1, s1 = monte_carlo_errors(bias, K, 1000, np.random.default_rng(0), chunk=7)
    m2, s2 = monte_carlo_errors(bias, K, 1000, np.random.default_rng(0), chunk=4096)
    np.testing.assert_allclose(m1, m2, rtol=1e-12)
    np.testing.assert_allclose(s1, s2, rtol=1e-9)


def test_isotropic_design_attains_C1_over_N():
    """A_i = μI: E‖w̃⁽ᵍ⁾ − w⋆⁽ᵍ⁾‖² = σ²d/(μmn) = C1/N for every λ (the finding that C1 is attained)."""
    m, d, mu, sigma, n = 4, 3, 2.0, 0.7, 25
    P = least_squares(1, m=m, n=n, d=d, R=0.3, mu=mu, sigma=sigma)
    for lam in (1e-3, 1.0, 1e4):
        E = exact_errors(*error_maps(np.asarray(P.objective.A), P.w_star, lam, sigma, n))
        assert E[0] == pytest.approx(sigma**2 * d / (mu * m * n), rel=1e-10)
    rho2 = P.constants["rho2"]
    assert rho2 / mu**2 / (m * n) == pytest.approx(sigma**2 * d / (mu * m * n), rel=1e-12)


def test_localtrain_finding_instance_by_scalar_closed_forms():
    """m = 2, d = 1, A = (1, 100), σ = 1, n = 100, w⋆ = (1, −1): λ = ρ²/(nR²) = 1 and client 1's error is
    44.6x LocalTrain's.  Scalars: w̃ᵍ = Σ h_i b_i/a_i / Σ h_i, h_i = λa_i/(a_i+λ); w̃ⁱ = (b_i + λw̃ᵍ)/(a_i+λ)."""
    a, w, sigma, n = np.array([1.0, 100.0]), np.array([1.0, -1.0]), 1.0, 100
    rho2, R = sigma**2 * a.max(), 1.0
    lam = float(thm1.lam_rule(np.sqrt(rho2), R, n))
    assert lam == pytest.approx(1.0)
    h = lam * a / (a + lam)
    cg = h / a / h.sum()  # w̃ᵍ = Σ cg_i b_i
    bias_g = np.sum(cg * a * w) - w.mean()
    var_b = sigma**2 * a / n  # Var b_i
    var_g = np.sum(cg**2 * var_b)
    # w̃¹ − w⋆¹ = (b_1 + λ w̃ᵍ)/(a_1 + λ) − w⋆¹: coefficients on b_1, b_2
    c1 = (np.array([1.0, 0.0]) + lam * cg) / (a[0] + lam)
    bias_1 = np.sum(c1 * a * w) - w[0]
    E1 = bias_1**2 + np.sum(c1**2 * var_b)
    E = exact_errors(*error_maps(a[:, None, None], w[:, None], lam, sigma, n))
    assert E[0] == pytest.approx(bias_g**2 + var_g, rel=1e-12) and E[1] == pytest.approx(E1, rel=1e-12)
    assert E1 / (sigma**2 / (n * a[0])) == pytest.approx(44.6, abs=0.05)


def test_lambda_rule_regimes():
    rho, n = 2.0, 100.0
    assert thm1.lam_rule(rho, 0.1, n) == pytest.approx(2.0)  # R = n^-1/2: first branch ρ/(√n R)
    assert thm1.lam_rule(rho, 0.1 * (1 + 1e-12), n) == pytest.approx(4.0)  # just above: ρ²/(nR²), a jump
    assert thm1.lam_rule(rho, 1e-3, n) == pytest.approx(rho / (10 * 1e-3))
    assert thm1.lam_rule(rho, 1.0, n) == pytest.approx(rho**2 / n)


def test_checker_scales_with_trials_and_reports_rates():
    """--trials sets the Monte Carlo draws per grid point; the rate parts carry slope, interval and exponent."""
    st = thm1.STATEMENTS[0]
    batch = st.instances("quadratic", 300, np.random.default_rng(0))
    assert set(batch["mc_trials"]) == {300}
    res = st.run("quadratic", None, None, batch=batch, reading=None)  # eqs. (4)-(6) as printed
    assert res.holds, [p.name for p in res.parts if not p.holds]
    remark = thm1.STATEMENTS[1]  # 'no worse than LocalTrain': its own statement, failing on its own
    printed = remark.run("quadratic", None, None, batch=batch, reading=None)
    assert [p.name for p in printed.parts if not p.holds] == ["no worse than LocalTrain (R > n^-1/2)"]
    assert remark.run("quadratic", None, None, batch=batch, reading="no worse than LocalTrain's rate").holds
    rates = [p for p in res.parts if p.claimed == "rate"]
    assert rates and all(p.sides.lhs_ci is not None and p.sides.kind for p in rates)
    mc = [p for p in res.parts if "Monte Carlo" in p.name]
    assert mc and all(p.sides.confidence == thm1.LEVEL for p in mc)


def test_logistic_family_intervals_bracket_the_estimate_and_rigorous_solver_margin():
    """Logistic: certified solves widen the squared errors by the solver bound; the interval brackets
    the estimate; the truth is the population minimiser, so local errors shrink as n grows
    (n = 50 -> 200 at R = 0.5: about 4x, the LocalTrain regime)."""
    from moreau.analysis.fedprox.thm1.logistic_monte_carlo import _solve, logistic_parts

    st = thm1.STATEMENTS[0]
    batch = st.instances("logistic", 60, np.random.default_rng(0))
    parts = logistic_parts({k: v[0] for k, v in batch.items()}, thm1.CLAIM, thm1.LEVEL)
    for p in parts.values():
        assert p["lo"] <= p["lhs"] <= p["hi"] and p["lhs"] < p["rhs"]
    seed = int(batch["seed"][0])
    ((_, _), (lo50, hi50)), _, _ = _solve(seed, 4, 3, 0.05, 50, 0.5, 60, thm1.lam_rule)
    ((_, _), (lo200, hi200)), _, _ = _solve(seed, 4, 3, 0.05, 200, 0.5, 60, thm1.lam_rule)
    assert np.all(hi50 - lo50 < 1e-9) and np.all(lo50 <= hi50)
    assert 2.5 < lo50.mean() / hi200.mean() < 6.5


def test_no_worse_than_localtrain_compares_with_localtrains_error_on_the_same_data():
    """The printed 'no worse than LocalTrain' compares FedProx's exact local error with LocalTrain's exact
    error on the same configuration (not a rate): the part's rhs is the LocalTrain error itself.  The
    sentence is a remark after the theorem: its own statement (fedprox.thm1_remark)."""
    st = thm1.STATEMENTS[1]
    batch = st.instances("quadratic", 30, np.random.default_rng(1))
    (p,) = [
        p
        for p in st.run("quadratic", None, None, batch=batch, reading=None).parts
        if p.name.startswith("no worse than LocalTrain")
    ]
    (q,) = [
        q
        for q in st.run("quadratic", None, None, batch=batch, reading="no worse than LocalTrain's rate").parts
        if q.name.startswith("no worse than LocalTrain")
    ]
    assert np.all(p.sides.lhs == q.sides.lhs) and np.all(p.sides.rhs < q.sides.rhs)
    assert p.failures.size and not q.failures.size
