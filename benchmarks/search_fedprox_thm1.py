"""Search for the configurations where FedProx analysis Theorem 1, bound (5) (C4 with ∧ as printed,
exact part of ``moreau check fedprox.thm1``) is tightest: Nelder-Mead over log-parameters
(m, d, μ, L/μ, σ, n, R), restarts from random points, within the hypotheses (m ≥ 2, n ≥ d, L ≥ μ > 0,
σ > 0, R > 0; d = 1 needs L = μ and even m).  The ratio is max_i E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² over the right side
of (5), with the module's own exact moments (``least_squares_moments.error_maps``/``exact_errors``) on
``moreau.data.least_squares`` (seed 0), exactly as ``sides._configuration`` computes it.

    .venv/bin/python benchmarks/search_fedprox_thm1.py --seconds 60 [--d 1] [--m 1000]

prints the best instances found (ratio, m, d, μ, L, σ, n, R, λ, and the ratio without the 16(·) term).
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np
from scipy.optimize import minimize

from moreau.analysis.fedprox.thm1 import CLAIM
from moreau.analysis.fedprox.thm1.least_squares_moments import error_maps, exact_errors
from moreau.data import least_squares


@functools.lru_cache(maxsize=64)
def _problem(m, d, mu, L, seed=0):
    prob = least_squares(seed, m=m, n=d, d=d, R=1.0, mu=mu, L=L, sigma=1.0)
    A, w_g = np.asarray(prob.objective.A), prob.w_star_global
    return A, w_g, prob.w_star - w_g


def ratio5(m, d, mu, L, sigma, n, R, claim=CLAIM, seed=0):
    """(ratio of (5) with C4 ∧, ratio without the 16(·) term, λ) at one (configuration, n, R)."""
    A, w_g, u = _problem(int(m), int(d), float(mu), float(L), seed)
    rho = sigma * np.sqrt(np.max(np.trace(A, axis1=-2, axis2=-1)))  # ρ² = σ² max_i tr(A_i)
    mu_ = float(np.min(np.linalg.eigvalsh(A)))
    C1 = claim["C1"](rho, mu_)
    C2 = claim["C2"](rho, mu_)
    C3, C4 = claim["C3"](C1), claim["C4"](rho, mu_, C2, np.minimum)
    lam = float(claim["lam"](rho, R, n))
    bias, K = error_maps(A, w_g + R * u, lam, sigma, n)
    lhs = float(exact_errors(bias, K)[1:].max())
    extra = float(claim["local_extra"](rho, mu_, n, R))
    rest = C3 / (m * n) + C4 * float(claim["het"](n, R))
    return lhs / (rest + extra), lhs / rest, lam


def _unpack(x, d, m_fixed):
    lm, lmu, lkap, lsig, ln, lR = x
    m = m_fixed or int(np.clip(2 * round(np.exp(lm) / 2), 2, 2000))
    mu = float(np.exp(np.clip(lmu, -12, 12)))
    L = mu if d == 1 else mu * float(np.exp(np.clip(abs(lkap), 0, 12)))
    n = float(max(d, round(np.exp(np.clip(ln, 0, 16)))))
    return m, mu, L, float(np.exp(np.clip(lsig, -16, 8))), n, float(np.exp(np.clip(lR, -20, 8)))


def search(seconds, d=1, m_fixed=None, seed=0):
    rng = np.random.default_rng(seed)
    best = []
    t0 = time.time()

    def f(x):
        m, mu, L, s, n, R = _unpack(x, d, m_fixed)
        r, _, _ = ratio5(m, d, mu, L, s, n, R)
        return -r

    while time.time() - t0 < seconds:
        x0 = np.array(
            [
                np.log(m_fixed or 100),
                *rng.normal(0, 3, 2),
                rng.normal(-2, 3),
                rng.uniform(2, 9),
                rng.normal(-3, 3),
            ]
        )
        res = minimize(f, x0, method="Nelder-Mead", options=dict(maxfev=400, xatol=1e-4, fatol=1e-7))
        best.append((-res.fun, _unpack(res.x, d, m_fixed)))
    best.sort(key=lambda b: -b[0])
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="time budget of the search")
    ap.add_argument("--d", type=int, default=1)
    ap.add_argument("--m", type=int, default=None, help="fix m (default: searched, even, 2..2000)")
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args()
    for _r, (m, mu, L, s, n, R) in search(a.seconds, a.d, a.m)[: a.top]:
        r5, no16, lam = ratio5(m, a.d, mu, L, s, n, R)
        print(
            f"ratio {r5:.5f} (without 16(·): {no16:.4g})  m={m} d={a.d} mu={mu:.4g} L={L:.4g} sigma={s:.4g} "
            f"n={n:g} R={R:.4g} R*sqrt(n)={R * np.sqrt(n):.3g} lambda={lam:.4g}"
        )


if __name__ == "__main__":
    main()
