"""Where stochastic FedFW's O(t^{-1/3}) is attained, and the power a check has there (fedfw.stochastic's
docstring, docs/power.md).

Linear clients f_i(x) = -c·x on the box [-1, 1]^d (A = 0, every client the same c, independent gradient noise),
c_k = (σ/√d)·4·1.6^{-k}, k < d = 16: coordinate k's momentum-averaged gradient has the wrong sign with
probability Φ(-c_k/s_t), s_t ∝ t^{-1/3} the momentum noise level, and Σ_k c_k P(wrong) ∝ s_t because the
slopes are spread over the noise's scales: E[F(x̄^t) - F*] ∝ t^{-1/3}.  For one client the expectation has a
closed form (the LMO's input does not depend on x), computed here with scipy's normal CDF; four clients with a
small penalty run through moreau.fl.fedfw.  These instances are fedfw.stochastic's powered version
(``moreau.analysis.fedfw.stochastic.LINEAR``, run by ``moreau check fedfw.stochastic --analyse``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

import moreau as mo
from moreau.analysis.engine.rates import detectable_change, fit_exponent
from moreau.fl import fedfw
from moreau.fl._lmo import Box

D, N, SIGMA = 16, 4096, 1.0
C = SIGMA / np.sqrt(D) * 4.0 * 1.6 ** -np.arange(D)
T = np.arange(1, N + 1.0)
ETA, RHO, LAM = 9 / (T + 8), 4 / np.cbrt((T + 7) ** 2), np.sqrt(T + 8)
GRID = np.unique(np.geomspace(256, N, 12).round().astype(int))


def _one_client_expectation():
    """E[F(x^t)] - F* for one client, t = 1..N+1: x^{t+1} = (1-η)x^t + η s^t, s_k = -sign(c_k + e_k) with e the
    momentum average of N(0, σ²/d) draws (variance v_t = (1-ρ)² v_{t-1} + ρ² σ²/d), so E[s_k] = -(1 - 2Φ(-c_k/√v))."""
    v, x, out = 0.0, np.zeros(D), [np.sum(C)]
    for k in range(N):
        v = (1 - RHO[k]) ** 2 * v + RHO[k] ** 2 * SIGMA**2 / D
        x = (1 - ETA[k]) * x - ETA[k] * (1 - 2 * ndtr(-C / np.sqrt(v)))
        out.append(np.sum(C * (x + 1)))
    return np.array(out)


def test_one_client_expectation_decays_at_the_claimed_rate():
    e = _one_client_expectation()
    slope, _ = fit_exponent(GRID.astype(float), e[GRID])
    assert -0.36 < slope < -1 / 3  # attained to 0.03 (the finite grid of slopes makes it a little faster)


def test_one_client_closed_form_matches_fedfw():
    reps, rounds = 512, 64
    A, b = np.zeros((reps, 1, D, D)), np.broadcast_to(C, (reps, 1, D)).copy()
    h = fedfw(
        mo.Quadratic(A, b),
        Box(-np.ones((reps, D)), np.ones((reps, D))),
        rounds=rounds,
        stochastic=True,
        sigma=SIGMA,
        lam0=1.0,
        lam_schedule=LAM[:rounds],
        eta=ETA[:rounds],
        rho=RHO[:rounds],
        rng=3,
        record="server",
    )
    err = np.asarray(h.w_global) @ -C + np.sum(C)  # (rounds+1, reps)
    exact = _one_client_expectation()[: rounds + 1]
    z = (err.mean(axis=1) - exact) / (err.std(axis=1, ddof=1) / np.sqrt(reps) + 1e-300)
    assert np.all(np.abs(z[1:]) < 4.5)  # 65 rounds, 4.5 standard errors: a false alarm has odds < 1e-3


@pytest.mark.slow
def test_four_clients_attain_the_rate_and_a_lowered_exponent_is_detected():
    reps, m = 256, 4
    A, b = np.zeros((reps, m, D, D)), np.broadcast_to(C, (reps, m, D)).copy()
    lam0 = 1e-3 * np.linalg.norm(C) / (2 * np.sqrt(D)) / m  # 1e-3 of the scale the catalogue draws λ0 at
    h = fedfw(
        mo.Quadratic(A, b),
        Box(-np.ones((reps, D)), np.ones((reps, D))),
        rounds=N,
        stochastic=True,
        sigma=SIGMA,
        lam0=lam0,
        lam_schedule=LAM,
        eta=ETA,
        rho=RHO,
        rng=11,
        record="server",
    )
    err = (np.asarray(h.w_global) @ -C + np.sum(C))[GRID]
    mean, se = err.mean(axis=1), err.std(axis=1, ddof=1) / np.sqrt(reps)
    slope, (lo, hi) = fit_exponent(GRID.astype(float), mean, y_se=se, level=0.95)
    assert lo <= -1 / 3 <= hi + 0.05  # the claim holds and is nearly attained (slope -0.354 +- 0.01 here)
    assert detectable_change(lo, hi, -1 / 3, "at most", 0.0) <= 0.05  # a claim of -0.383 is rejected


def test_powered_version_is_these_instances_with_the_statements_claim():
    from moreau.analysis.engine.registry import get
    from moreau.analysis.fedfw import stochastic

    st = get("fedfw.stochastic")
    (lin,) = st.powered
    assert lin is stochastic.LINEAR and lin.claim == st.claim and lin.id == "fedfw.stochastic_linear"
    batch = lin.instances("quadratic", None, np.random.default_rng(0))
    np.testing.assert_array_equal(batch["c"], C[None])  # this module's slopes
    assert (stochastic.LINEAR_D, stochastic.LINEAR_SIGMA, stochastic.N) == (D, SIGMA, N)
    names = {m.name for m in lin.mutants} | set(lin.equivalent_mutants)
    assert names == {m.name for m in st.mutants} | {stochastic.POWER_MUTANT.name}
    assert stochastic.POWER_MUTANT.changes["exponent"] == pytest.approx(-1 / 3 - 0.05)


@pytest.mark.slow
def test_analyse_runs_the_powered_version_and_it_detects_0_05():
    from moreau.analysis.engine import power
    from moreau.analysis.engine.registry import get

    st = get("fedfw.stochastic")
    rec = type("Rec", (), {"statement": st, "result": type("Res", (), {"family": "quadratic"})()})()
    (r,) = power.powered(rec, seed=0)
    (p,) = r["parts"]
    assert r["holds"] and r["powered"] and 0 < p["detectable_change"] <= 0.05
    assert all(m["rejected"] for m in r["mutants"]), r["mutants"]
