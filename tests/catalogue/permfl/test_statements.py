"""PerMFL's statements (permfl.objective, permfl.thm1, permfl.thm2): the round map against a plain loop
over teams and devices, the level Hessians against their eigenvalue formulas, the reconstructed
bounds attained where the checkers say, the findings (the run's biased fixed point, its slower
rate) on instances written here, and each statement's verdicts and mutants on seeds 0 and 1."""

import numpy as np
import pytest

from moreau.analysis.engine import runner
from moreau.analysis.engine.report import mutant_verdicts, verdict_of
from moreau.analysis.permfl import thm1, thm2
from moreau.analysis.permfl.round_map import (
    fixed_point,
    levels,
    run_map,
    spectral_radius,
)

TEAMS = np.array([0, 1, 1, 2, 2, 2])


def _devices(seed, T=2, d=2, lo=0.2, hi=2.0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((T, len(TEAMS), d, d)))
    a = rng.uniform(lo, hi, (T, len(TEAMS), d))
    A = (Q * a[..., None, :]) @ np.swapaxes(Q, -1, -2)
    return (A + np.swapaxes(A, -1, -2)) / 2, rng.standard_normal((T, len(TEAMS), d))


def test_round_map_equals_a_plain_loop_over_teams_and_devices():
    A, b = _devices(0)
    lam, gam, alpha, eta, beta = (
        np.array(v) for v in ([0.5, 2.0], [1.5, 0.3], [0.2, 0.1], [0.3, 0.4], [0.6, 1.0])
    )
    K, L = np.array([2, 3]), np.array([3, 1])
    P, q = run_map(A, b, TEAMS, lam, gam, alpha, eta, beta, K, L)
    x = np.random.default_rng(1).standard_normal((2, 2))
    for t in range(2):
        w = [x[t].copy() for _ in range(3)]
        for _ in range(K[t]):
            th = []
            for j, i in enumerate(TEAMS):
                v = w[i].copy()
                for _ in range(L[t]):
                    v = v - alpha[t] * (A[t, j] @ v - b[t, j] + lam[t] * (v - w[i]))
                th.append(v)
            w = [
                w[i]
                - eta[t]
                * (
                    lam[t] * (w[i] - np.mean([th[j] for j in range(6) if TEAMS[j] == i], axis=0))
                    + gam[t] * (w[i] - x[t])
                )
                for i in range(3)
            ]
        expected = x[t] - beta[t] * gam[t] * (x[t] - np.mean(w, axis=0))
        np.testing.assert_allclose(P[t] @ x[t] + q[t], expected, rtol=1e-13, atol=1e-13)


def test_level_hessians_have_the_nested_eigenvalues_when_aligned():
    """Shared eigenbasis: every level's eigenvalues are the maps a -> lam a/(lam + a) (device), the
    team means of those, then b -> gamma b/(gamma + b) averaged over teams."""
    rng = np.random.default_rng(2)
    d = 2
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    a = rng.uniform(0.1, 3.0, (1, len(TEAMS), d))
    A = (V * a[..., None, :]) @ V.T
    lam, gam = np.array([0.7]), np.array([1.9])
    lv = levels(A, np.zeros((1, len(TEAMS), d)), TEAMS, lam, gam)
    env = lam[:, None, None] * a / (lam[:, None, None] + a)
    team = np.stack([env[:, TEAMS == i].mean(axis=1) for i in range(3)], axis=1)
    glob = (gam[:, None, None] * team / (gam[:, None, None] + team)).mean(axis=1)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(lv["HG"]), -1), np.sort(glob, -1), rtol=1e-12)


def test_exact_inner_limit_is_the_optimum_and_finite_rounds_are_biased():
    """K, L large with the bounds met: the round map tends to x -> x - beta grad G(x), fixed point x*;
    K = L = 1: a contraction whose fixed point is elsewhere, and slower than the exact-inner map."""
    A, b = _devices(3, T=3)
    lam, gam = np.full(3, 1.2), np.full(3, 2.5)
    Lmax = np.linalg.eigvalsh(A).max(axis=(-1, -2))
    alpha, eta, beta = 1 / (Lmax + lam), 1 / (lam + gam), 1 / gam
    lv = levels(A, b, TEAMS, lam, gam)
    x_star = lv["x"]
    P, q = run_map(A, b, TEAMS, lam, gam, alpha, eta, beta, np.full(3, 200), np.full(3, 200))
    np.testing.assert_allclose(fixed_point(P, q), x_star, rtol=1e-9, atol=1e-9)
    P1, q1 = run_map(A, b, TEAMS, lam, gam, alpha, eta, beta, np.ones(3, int), np.ones(3, int))
    assert np.all(spectral_radius(P1) < 1)
    assert np.all(np.linalg.norm(fixed_point(P1, q1) - x_star, axis=-1) > 1e-3)
    assert np.all(spectral_radius(P1) > spectral_radius(np.eye(2) - beta[:, None, None] * lv["HG"]))


def test_thm1_level_factors_are_attained_and_the_variant_fails_on_the_run():
    (rec,) = runner.run(["permfl.thm1"], seed=0)
    parts = {p.name: p for p in rec.result.parts}
    for name in thm1.PARTS[2:5]:
        assert parts[name].holds and parts[name].tight, name
    assert parts[thm1.PARTS[5]].holds and parts[thm1.PARTS[5]].tight  # the composed run factor, attained
    assert parts[thm1.PARTS[6]].holds and parts[thm1.PARTS[7]].holds
    assert np.nanmax(parts[thm1.PARTS[7]].sides.lhs) > 0.1  # the run's limit is far from x* somewhere
    (variant,) = rec.readings.values()
    assert not {p.name: p for p in variant[0].parts}[thm1.PARTS[5]].holds


def test_thm2_run_leaves_the_optimum_while_exact_inner_solves_stay():
    (rec,) = runner.run(["permfl.thm2"], seed=0)
    parts = {p.name: p for p in rec.result.parts}
    assert all(p.holds for p in parts.values())
    assert 0.5 <= parts[thm2.PARTS[3]].max_ratio < 1  # 1/(2 - beta h): the bound within a factor 2
    (variant,) = rec.readings.values()
    bad = {p.name: p for p in variant[0].parts}[thm2.PARTS[3]]
    assert not bad.holds and np.isinf(bad.ratio[bad.failures]).any()  # started at x*: bound 0, lhs > 0


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sid", ["permfl.objective", "permfl.thm1", "permfl.thm2"])
def test_statement_verdicts_and_mutants(sid, seed):
    recs = runner.run([sid], seed=seed, mutants=True)
    sv = verdict_of(recs[0].statement, recs)
    assert sv["as_expected"] and sv["printed"]["verdict"] == "holds"
    survivors = [name for (_, name), fams in mutant_verdicts(recs).items() if not fams]
    assert not survivors
