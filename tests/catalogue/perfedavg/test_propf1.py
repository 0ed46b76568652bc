"""perfedavg.propf1 (Per-FedAvg Proposition F.1 / Corollary F.2): holds, every mutant rejected, and the
exact drift moments agree with Per-FedAvg itself and with a brute-force simulation with batches."""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
from moreau.analysis.engine.runner import rng_for
from moreau.analysis.perfedavg import propf1 as pf
from moreau.analysis.perfedavg.algorithm_moments import client_stats, drift_moments, local_moments

(ST,) = pf.STATEMENTS


def _run(seed, mutant=None):
    rng = rng_for(seed, ST.id, "quadratic")
    batch = ST.instances("quadratic", None, rng)
    return batch, ST.run("quadratic", None, rng, mutant=mutant, batch=batch)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_statement_holds_and_mutants_rejected(seed):
    _, res = _run(seed)
    assert res.holds, [(p.name, p.failures) for p in res.parts if not p.holds]
    assert all(p.applicable > 0 for p in res.parts)
    survivors = [m.name for m in ST.mutants if _run(seed, m)[1].holds]
    assert not survivors and len(ST.mutants) >= 2


def _instance(rng, d=3, n=4, m=3):
    a = np.sort(rng.uniform(-1.0, 1.0, d))
    C = rng.standard_normal((n, m, d)) * 2
    return a, C


def test_deterministic_drift_equals_per_fedavg():
    """Full batches: the recursion's drift is Per-FedAvg's own (moreau.fl.per_fedavg, all clients, t steps)."""
    rng = np.random.default_rng(1)
    for _ in range(4):
        a, C = _instance(rng)
        alpha, beta = rng.uniform(0, 1) / np.max(np.abs(a)), rng.uniform(0.01, 1.0)
        n, d = C.shape[0], a.size
        one = lambda x: np.array([x])  # noqa: E731
        mu, cov, _ = local_moments(a[None], C[None], one(alpha), one(beta), one(0.0), one(0.0), 5)
        second, lo, hi = drift_moments(mu, cov)
        f = mo.Quadratic(np.broadcast_to(np.diag(a), (n, d, d)), C.mean(axis=1))
        w0 = rng.standard_normal(d) * 5
        for t in range(1, 6):
            W = np.asarray(mo.fl.per_fedavg(f, alpha=alpha, beta=beta, tau=t, rounds=1, w0=w0).w_local[1])
            e = W - W.mean(axis=0)
            np.testing.assert_allclose(np.mean(np.sum(e**2, axis=-1)), second[t, 0], rtol=1e-10)
            np.testing.assert_allclose(np.mean(np.linalg.norm(e, axis=-1)), lo[t, 0], rtol=1e-10)
            assert lo[t, 0] == pytest.approx(hi[t, 0], rel=1e-12)


def _brute_drift(a, C, alpha, beta, D, D1, t, R, rng):
    """Brute force: R runs of t Hessian-variant Per-FedAvg steps on every client, batches drawn with
    replacement (D, D' sample indices per step; None = all samples), written from eq. (7)-(8)."""
    n, m, d = C.shape
    A = np.diag(a)
    W = np.zeros((R, n, d))

    def batch_mean(size):
        if size is None:
            return np.broadcast_to(C.mean(axis=1), (R, n, d))
        idx = rng.integers(0, m, (R, n, size))
        return np.take_along_axis(C[None], idx[..., None], axis=2).mean(axis=2)

    for _ in range(t):
        cD, cD1 = batch_mean(D), batch_mean(D1)
        g = W @ A - cD  # grad of f_i on D at w
        wt = W - alpha * g
        g1 = wt @ A - cD1  # grad of f_i on D' at w~
        W = W - beta * (g1 - alpha * g1 @ A)  # (I - alpha hess) grad, hess = A on any batch
    e = W - W.mean(axis=1, keepdims=True)
    return np.mean(np.sum(e**2, -1), 1), np.mean(np.linalg.norm(e, axis=-1), 1)


@pytest.mark.parametrize("D, D1", [(1, 2), (None, 1), (4, None)])
def test_sampled_drift_second_moment_matches_brute_force(D, D1):
    rng = np.random.default_rng(7)
    a, C = _instance(rng)
    alpha, beta, t, R = 0.7 / np.max(np.abs(a)), 0.3, 4, 40000
    inv = lambda s: 0.0 if s is None else 1.0 / s  # noqa: E731
    one = lambda x: np.array([x])  # noqa: E731
    mu, cov, _ = local_moments(a[None], C[None], one(alpha), one(beta), one(inv(D)), one(inv(D1)), t)
    second, lo, hi = (x[t, 0] for x in drift_moments(mu, cov))
    sq, first = _brute_drift(a, C, alpha, beta, D, D1, t, R, rng)
    assert abs(sq.mean() - second) < 5 * sq.std() / np.sqrt(R)  # 5 sigma: a seeded, not a flaky, bound
    se = first.std() / np.sqrt(R)
    assert lo - 5 * se <= first.mean() <= hi + 5 * se
    assert lo < hi  # noise present: the bracket is a real interval


def test_constants_are_exact_sups():
    """sigma_G^2, gamma_G^2 from per-sample gradients at random points (constant in w); L_F = 4L is the
    exact smoothness of F at a_1 = -L, alpha = 1/L (moreau.meta_objective Hessian)."""
    rng = np.random.default_rng(3)
    a, C = _instance(rng)
    _, _, sG2, gG2 = client_stats(C)
    for w in rng.standard_normal((3, a.size)) * 10:
        g = a * w - C  # (n, m, d) per-sample gradients
        gi = g.mean(axis=1)
        var = np.max(np.mean(np.sum((g - gi[:, None]) ** 2, -1), 1))
        div = np.mean(np.sum((gi - gi.mean(0)) ** 2, -1))
        assert var == pytest.approx(sG2, rel=1e-12) and div == pytest.approx(gG2, rel=1e-12)
    L = 2.0
    a = np.array([-L, 0.3, L])
    F = mo.meta_objective(mo.Quadratic(np.diag(a), np.zeros(3)), 1 / L)
    H = np.asarray(F.hess(np.zeros(3)))
    assert np.max(np.abs(np.linalg.eigvalsh(H))) == pytest.approx(4 * L, rel=1e-12)


def test_sigma_F_of_lemma_4_3_bounds_the_estimator_error():
    """The sigma_F^2 used (Lemma 4.3 with B cancelling) bounds E||grad~F_i - grad F_i||^2, by simulation."""
    rng = np.random.default_rng(5)
    a, C = _instance(rng, n=1, m=5)
    alpha, D, D1, R = 1 / np.max(np.abs(a)), 2, 1, 200000
    A, w = np.diag(a), rng.standard_normal(a.size)
    idx, idx1 = rng.integers(0, 5, (R, D)), rng.integers(0, 5, (R, D1))
    cD, cD1 = C[0][idx].mean(1), C[0][idx1].mean(1)
    q = np.eye(a.size) - alpha * A
    est = ((w - alpha * (A @ w - cD)) @ A - cD1) @ q
    exact = q @ (A @ (w - alpha * (A @ w - C[0].mean(0))) - C[0].mean(0))
    err = np.mean(np.sum((est - exact) ** 2, -1))
    _, _, sG2, _ = client_stats(C)
    L = np.max(np.abs(a))
    sF2 = pf.CLAIM["sigma_F2"](0.0, sG2, 0.0, alpha, L, 1 / D, 1 / D1, 0.0)
    assert 0 < err <= sF2
