"""fedprox.thm1, bound (5) (C4 with ∧ as printed): the worst configuration found by
benchmarks/search_fedprox_thm1.py, m = 1000, d = 1, μ = L = 1e-10, σ = 0.01, n = 100, R = 1.01 n^-1/2,
where the exact ratio is 0.9917 (sup 1 as m → ∞).  The expected error is checked against a closed form
derived here, independently of the module's moments.

d = 1, A_i = μ, u_i = ±1 (Σu_i = 0), ρ² = σ²μ, b_i = μw_i + e_i with e_i ~ N(0, σ²μ/n):
w̃⁽ᵍ⁾ = mean_i b_i/μ, w̃⁽ⁱ⁾ = (b_i + λw̃⁽ᵍ⁾)/(μ + λ), so w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾ = (−λRu_i + e_i + (λ/μ)ē)/(μ + λ) and
E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² = [λ²R² + (σ²μ/n)((1 + t)² + (m − 1)t²)]/(μ + λ)², t = λ/(μm).
"""

import numpy as np
import pytest

from moreau.analysis.engine.core import take
from moreau.analysis.fedprox import thm1
from moreau.analysis.fedprox.thm1 import CLAIM
from moreau.analysis.fedprox.thm1.least_squares_moments import error_maps, exact_errors
from moreau.analysis.fedprox.thm1.sides import _configuration
from moreau.data import least_squares

M, MU, SIGMA, N = 1000, 1e-10, 1e-2, 100.0
R = 1.01 / np.sqrt(N)


def closed_form(m, mu, sigma, n, R, lam):
    t = lam / (mu * m)
    return (lam**2 * R**2 + sigma**2 * mu / n * ((1 + t) ** 2 + (m - 1) * t**2)) / (mu + lam) ** 2


def bound5(m, mu, rho, n, R):
    """The right side of (5) as printed (C4 with ∧ = min), written out from eq. (6)."""
    C1 = rho**2 / mu**2
    C2 = max(((1 + np.sqrt(1 + 2 * mu)) * rho / (2 * mu)) ** 2, 2 * rho / mu)
    C4 = min((rho * (1 + np.sqrt(1 + 4 * mu * (C2 + 1))) / (2 * mu)) ** 2, 8 * C2 + 2 * rho / mu)
    return 8 * C1 / (m * n) + C4 * min(1 / n, R / np.sqrt(n)) + 16 * min(rho**2 / (mu**2 * n), R**2)


def test_worst_case_ratio_of_5_is_at_least_099_and_holds():
    prob = least_squares(0, m=M, n=1, d=1, R=1.0, mu=MU, L=MU, sigma=SIGMA)
    A, w_g = np.asarray(prob.objective.A), prob.w_star_global
    u = prob.w_star - w_g
    np.testing.assert_allclose(np.abs(u), 1.0)
    rho = SIGMA * np.sqrt(MU)
    np.testing.assert_allclose(prob.constants["rho2"], rho**2, rtol=1e-12)
    lam = rho**2 / (N * R**2)  # R > n^-1/2: the second branch of the λ rule
    np.testing.assert_allclose(float(CLAIM["lam"](rho, R, N)), lam, rtol=1e-12)
    bias, K = error_maps(A, w_g + R * u, lam, SIGMA, N)
    module = exact_errors(bias, K)[1:]
    np.testing.assert_allclose(module, closed_form(M, MU, SIGMA, N, R, lam), rtol=1e-6)
    ratio = float(np.max(module)) / bound5(M, MU, rho, N, R)
    assert 0.99 <= ratio <= 1.0, ratio
    np.testing.assert_allclose(ratio, 0.99166, atol=1e-4)


def _recorded():
    (w,) = [w for w in thm1.WORST if w.m == M and w.d == 1 and w.mu == MU and w.sigma == SIGMA]
    return w


def test_default_batch_contains_the_recorded_worst_instance():
    """The default batch appends the recorded worst instance of (5) (flag ``worst``, its own n and R);
    the remark's batch (a statement of its own, compared on the grid) leaves it out."""
    w = _recorded()
    assert w.L == MU and w.n == N and w.R == pytest.approx(R, rel=1e-15) and w.bound == thm1.PARTS[3]
    assert "benchmarks/search_fedprox_thm1.py" in w.source
    batch = thm1.instances("quadratic", None, np.random.default_rng(0))
    (i,) = np.flatnonzero(batch["worst"] == 1)
    got = {k: batch[k][i] for k in ("m", "d", "mu", "L", "sigma", "n", "R")}
    assert got == {"m": M, "d": 1, "mu": MU, "L": MU, "sigma": SIGMA, "n": N, "R": w.R}
    assert np.all(np.isnan(batch["n"][batch["worst"] == 0]))
    remark = thm1.STATEMENTS[1].instances("quadratic", None, np.random.default_rng(0))
    assert "worst" not in remark and remark["m"].size == batch["m"].size - len(thm1.WORST)


def test_default_run_reaches_the_worst_ratio_of_5_and_holds():
    """The default run's exact (5) (C4 with ∧) has its max ratio at the recorded worst instance: in
    [0.99, 1], the closed form's ratio there, and the ratio the search recorded.  On that instance only
    the exact parts of (4) and (5) are computed; the Monte Carlo and rate parts are not applicable."""
    st = thm1.STATEMENTS[0]
    batch = st.instances("quadratic", None, np.random.default_rng(0))
    res = st.run("quadratic", None, None, batch=batch, reading=None)
    assert res.holds, [p.name for p in res.parts if not p.holds]
    parts = {p.name: p for p in res.parts}
    p5 = parts[thm1.PARTS[3]]
    (i,) = np.flatnonzero(batch["worst"] == 1)
    rho = SIGMA * np.sqrt(MU)
    lam = rho**2 / (N * R**2)
    expected = closed_form(M, MU, SIGMA, N, R, lam) / bound5(M, MU, rho, N, R)
    assert 0.99 <= p5.max_ratio <= 1.0 and p5.ratio[i] == p5.max_ratio
    np.testing.assert_allclose(p5.max_ratio, expected, rtol=1e-6)
    np.testing.assert_allclose(p5.max_ratio, _recorded().ratio, atol=1e-4)  # the 5 digits recorded
    for name, p in parts.items():
        exact_bound = name in (thm1.PARTS[1], thm1.PARTS[3], thm1.PARTS[4])
        assert bool(p.sides.applicable[i]) == exact_bound, name
        assert p.sides.applicable[np.flatnonzero(batch["worst"] == 0)].all() or name == thm1.PARTS[11], name
        assert np.isfinite(p.sides.lhs[i]) == exact_bound, name


def test_error_vs_m_tiling_is_finite_when_the_first_two_directions_coincide():
    """d = 1, m = 4, seed 0: u = (−1, −1, 1, 1), so tiling clients 1-2 would give no spread to normalise
    (0/0); the sweep tiles client 1 with the first client of the other sign, and the fitted exponents
    of the m-parts are finite and meet -1 (A_i = μ: the R → 0 error is σ²/(μmn) up to O(R²))."""
    prob = least_squares(0, m=4, n=1, d=1, R=1.0, mu=1.0, L=1.0, sigma=1.0)
    u = (prob.w_star - prob.w_star_global).ravel()
    assert u[0] == u[1]
    inst = dict(m=4, d=1, mu=1.0, L=1.0, sigma=1.0, seed=0, mc_trials=1000, worst=0)
    out = _configuration(inst, CLAIM)
    for part in (thm1.PARTS[9], thm1.PARTS[10]):
        r = out[part]
        assert np.isfinite([r["slope"], r["lo"], r["hi"]]).all(), (part, r)
        assert r["lo"] - 0.05 <= -1.0 <= r["hi"] + 0.05, (part, r)


def test_a_batch_of_the_worst_instance_alone_is_judged_on_the_exact_parts_only():
    """A chunk or a replay may hold only recorded worst instances: every part is still returned, the
    Monte Carlo and rate parts with no applicable instance, the exact (5) with the closed form's ratio."""
    st = thm1.STATEMENTS[0]
    batch = st.instances("quadratic", None, np.random.default_rng(0))
    one = take(batch, np.flatnonzero(batch["worst"] == 1))
    res = st.run("quadratic", None, None, batch=one, reading=None)
    assert res.holds and [p.name for p in res.parts] == list(thm1.PARTS[:12])
    tested = {p.name for p in res.parts if p.applicable}
    assert tested == {thm1.PARTS[1], thm1.PARTS[3], thm1.PARTS[4]}
    rho = SIGMA * np.sqrt(MU)
    lam = rho**2 / (N * R**2)
    (p5,) = [p for p in res.parts if p.name == thm1.PARTS[3]]
    np.testing.assert_allclose(
        p5.max_ratio, closed_form(M, MU, SIGMA, N, R, lam) / bound5(M, MU, rho, N, R), rtol=1e-6
    )
