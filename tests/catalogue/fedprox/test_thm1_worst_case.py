"""fedprox.thm1, bound (5) (C4 with ∧ as printed): the worst configuration found by
benchmarks/search_fedprox_thm1.py, m = 1000, d = 1, μ = L = 1e-10, σ = 0.01, n = 100, R = 1.01 n^-1/2,
where the exact ratio is 0.9917 (sup 1 as m → ∞).  The expected error is checked against a closed form
derived here, independently of the module's moments.

d = 1, A_i = μ, u_i = ±1 (Σu_i = 0), ρ² = σ²μ, b_i = μw_i + e_i with e_i ~ N(0, σ²μ/n):
w̃⁽ᵍ⁾ = mean_i b_i/μ, w̃⁽ⁱ⁾ = (b_i + λw̃⁽ᵍ⁾)/(μ + λ), so w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾ = (−λRu_i + e_i + (λ/μ)ē)/(μ + λ) and
E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² = [λ²R² + (σ²μ/n)((1 + t)² + (m − 1)t²)]/(μ + λ)², t = λ/(μm).
"""

import numpy as np

from moreau.analysis.fedprox.thm1 import CLAIM
from moreau.analysis.fedprox.thm1.least_squares_moments import error_maps, exact_errors
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
