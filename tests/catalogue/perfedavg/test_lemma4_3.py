"""perfedavg.lemma4_3: the statement holds, every mutant is rejected, the exact moments agree with
brute-force enumeration of every batch and with the library's estimator by Monte Carlo, the
local constants are the proof's, and each finding's instance is reproduced by direct computation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _perfedavg_fixtures import (
    assert_every_mutant_rejected,
    assert_library_estimates_match,
    assert_statement_holds,
    least_squares_samples,
    logistic_samples,
    parts_by_family,
    run_fixture,
    symmetric_samples,
)

import moreau as mo
from moreau.analysis.engine.runner import rng_for
from moreau.analysis.perfedavg import lemma4_3 as l43
from moreau.analysis.perfedavg.estimators.quadratic_moments import quadratic_constants, quadratic_moments
from moreau.analysis.perfedavg.estimators.sample_moments import (
    LogisticSamples,
    QuadraticSamples,
    compositions,
    configuration_moments,
)
from moreau.analysis.perfedavg.estimators.sides import ZERO_PART, logistic_parts

SID = "perfedavg.lemma4_3"
CLAIM = l43.CLAIM

with_mutants = run_fixture(SID)


@pytest.mark.parametrize("seed", [0, 1])
def test_statement_holds(seed, with_mutants):
    assert_statement_holds(SID, seed, with_mutants, every_part_applicable=True)


def test_every_mutant_rejected(with_mutants):
    assert_every_mutant_rejected(with_mutants, at_least=8)


def test_algorithm1_is_an_inconsistency_reading_that_fails(with_mutants):
    """The lemma holds as printed; Algorithm 1's Hessian on D' (read into the lemma) breaks its bias part."""
    st = with_mutants[0].statement
    r = st.reading(l43.ALGORITHM1)
    assert st.expect == "holds" and (r.kind, r.expect) == ("inconsistency", "fails") and len(r.name) <= 40
    assert not any("hessian_batch" in m.changes for m in st.mutants)
    res = {rec.result.family: rec.readings[l43.ALGORITHM1][0] for rec in with_mutants}
    assert not res["quadratic"].parts[0].holds and all(p.holds for p in res["quadratic"].parts[1:])
    assert all(rec.result.holds for rec in with_mutants)


def test_reported_ratios(with_mutants):
    """Second moment: 1/3 exactly on the adversarial quadratics; bias: 0 on quadratics, ~0.13 on logistic."""
    parts = parts_by_family(with_mutants)
    assert parts["quadratic", l43.PARTS[1]].max_ratio == pytest.approx(1 / 3, rel=1e-12)
    assert parts["quadratic", l43.PARTS[0]].max_ratio == 0.0
    assert 0.08 < parts["logistic", l43.PARTS[0]].max_ratio < 0.14
    assert parts["quadratic", ZERO_PART].applicable and parts["logistic", ZERO_PART].applicable


# --- independent computations -------------------------------------------------------------


def _brute_quadratic(A, b, w, alpha, D, D1, D2):
    """Mean minus grad F and second moment of eq. (8) over every ordered batch triple (one instance)."""
    n, d = b.shape
    Ab, bb = A.mean(axis=0), b.mean(axis=0)
    grad = lambda x, idx: np.mean([A[j] @ x - b[j] for j in idx], axis=0)  # noqa: E731
    M = np.eye(d) - alpha * Ab
    gF = M @ (Ab @ (w - alpha * (Ab @ w - bb)) - bb)
    vals = []
    for i1 in itertools.product(range(n), repeat=D):
        u = w - alpha * grad(w, i1)
        for i2 in itertools.product(range(n), repeat=D1):
            h = grad(u, i2)
            for i3 in itertools.product(range(n), repeat=D2):
                vals.append(h - alpha * np.mean([A[j] for j in i3], axis=0) @ h)
    vals = np.array(vals)
    return vals.mean(axis=0) - gF, np.mean(np.sum((vals - gF) ** 2, axis=-1))


@pytest.mark.parametrize("sizes", [(1, 1, 1), (2, 1, 2), (1, 3, 2), (2, 2, 1)])
def test_quadratic_closed_form_against_enumeration(sizes):
    rng = np.random.default_rng(sum(sizes))
    T, n, d = 3, 3, 2
    A = symmetric_samples(rng, T, n, d)  # indefinite samples
    b, w, alpha = rng.standard_normal((T, n, d)), rng.standard_normal((T, d)), rng.uniform(0, 0.6, T)
    D = [np.full(T, float(s)) for s in sizes]
    bias, second, _ = quadratic_moments(A, b, w, alpha, alpha, *D)
    for t in range(T):
        mb, sb = _brute_quadratic(A[t], b[t], w[t], alpha[t], *sizes)
        np.testing.assert_allclose(bias[t], mb, atol=1e-13)  # unbiased: mb is rounding
        assert second[t] == pytest.approx(sb, rel=1e-12)
    # the batch engine (batch by batch, closed forms in D', D'') gives the same numbers
    c, p = compositions(n, sizes[0])
    X, phi, _, _ = configuration_moments(
        QuadraticSamples(A, b), w, alpha, np.broadcast_to(c[:, None], (len(p), T, n)), D[1], D[2], "hessian"
    )
    np.testing.assert_allclose(p @ phi, second, rtol=1e-12)
    np.testing.assert_allclose(np.einsum("p,ptd->td", p, X), 0.0, atol=1e-13)


def _logistic_grad(X, y, x, idx):
    z = y[list(idx)] * (X[list(idx)] @ x)
    return np.mean(-(1 / (1 + np.exp(z)))[:, None] * y[list(idx), None] * X[list(idx)], axis=0)


def _logistic_hess(X, y, x, idx):
    z = y[list(idx)] * (X[list(idx)] @ x)
    s = 1 / (1 + np.exp(-z))
    return np.mean((s * (1 - s))[:, None, None] * X[list(idx), :, None] * X[list(idx), None, :], axis=0)


def test_logistic_exact_moments_against_enumeration():
    rng = np.random.default_rng(3)
    T, n, d = 2, 3, 2
    X, y = logistic_samples(rng, T, n, d)
    w, D, D1, D2 = rng.standard_normal((T, d)), 2, 2, 2
    f = mo.Logistic(X, y)
    alpha = 1 / np.asarray(f.curvature_bounds()[1])
    batch = dict(
        X=X,
        y=y,
        w=w,
        alpha=alpha,
        D=np.full(T, D),
        D1=np.full(T, D1),
        D2=np.full(T, D2),
        cD=np.zeros((T, 4, n), int),
    )
    v = logistic_parts(batch, "hessian")
    for t in range(T):
        full = range(n)
        gF = (np.eye(d) - alpha[t] * _logistic_hess(X[t], y[t], w[t], full)) @ _logistic_grad(
            X[t], y[t], w[t] - alpha[t] * _logistic_grad(X[t], y[t], w[t], full), full
        )
        vals = []
        for i1 in itertools.product(range(n), repeat=D):
            h_pt = w[t] - alpha[t] * _logistic_grad(X[t], y[t], w[t], i1)
            for i2 in itertools.product(range(n), repeat=D1):
                h = _logistic_grad(X[t], y[t], h_pt, i2)
                for i3 in itertools.product(range(n), repeat=D2):
                    vals.append(h - alpha[t] * _logistic_hess(X[t], y[t], w[t], i3) @ h)
        vals = np.array(vals)
        assert v["bias"][t] == pytest.approx(np.linalg.norm(vals.mean(axis=0) - gF), rel=1e-10)
        assert v["second"][t] == pytest.approx(np.mean(np.sum((vals - gF) ** 2, axis=-1)), rel=1e-10)
        # the per-sample gradients and Hessians agree with moreau.Logistic
        one = mo.Logistic(X[t, :, None, :], y[t, :, None])
        np.testing.assert_allclose(
            LogisticSamples(X[t : t + 1], y[t : t + 1]).grads(w[t : t + 1])[0],
            one.grad(w[t]),
            rtol=1e-13,
            atol=1e-15,
        )
        np.testing.assert_allclose(
            LogisticSamples(X[t : t + 1], y[t : t + 1]).hessians(w[t : t + 1])[0],
            one.hess(w[t]),
            rtol=1e-13,
            atol=1e-15,
        )


def test_closed_form_against_library_estimator_monte_carlo():
    """moreau.fl.per_fedavg (one step, β = 1) draws the estimate of eq. (8); its sample mean and second
    moment over 40000 independent draws agree with the closed forms within 5 standard errors."""
    rng = np.random.default_rng(7)
    Xs, ys, A, b, w0 = least_squares_samples(rng, n=5, d=2)
    L = np.max(np.abs(np.linalg.eigvalsh(A.mean(axis=0))))
    alpha, sizes = 0.8 / L, (2, 1, 3)
    # eq. (8): the Hessian term's step is alpha itself; the closed-form bias is 0 exactly
    assert_library_estimates_match(Xs, ys, w0, alpha, alpha, sizes, 40000, D_second=sizes[2], rng=11)


def test_local_sigma_G_is_the_max_over_every_batch():
    """quadratic_constants' σ_G² (hull vertices) equals the max of the variance over w and every u_D."""
    rng = np.random.default_rng(5)
    T, n, d, D = 4, 3, 2, 3
    A = symmetric_samples(rng, T, n, d)
    b, w, alpha = rng.standard_normal((T, n, d)), rng.standard_normal((T, d)), rng.uniform(0.1, 1.0, T)
    c = quadratic_constants(A, b, w, alpha)
    for t in range(T):

        def var(x, t=t):
            return np.mean(np.sum(((A[t] @ x - b[t]) - (A[t] @ x - b[t]).mean(axis=0)) ** 2, axis=-1))

        grads = A[t] @ w[t] - b[t]
        pts = [w[t]] + [
            w[t] - alpha[t] * grads[list(i)].mean(axis=0) for i in itertools.product(range(n), repeat=D)
        ]
        assert c["sG2"][t] == pytest.approx(max(var(x) for x in pts), rel=1e-12)
        assert c["sH2"][t] == pytest.approx(
            np.mean([np.linalg.norm(A[t, j] - A[t].mean(axis=0), 2) ** 2 for j in range(n)]), rel=1e-12
        )


# --- findings --------------------------------------------------------------------------------


def test_finding_second_moment_one_third_attained():
    """A = diag(-1, .5, .5), b_j = (±1, 0, 0), α = 1, D = D' = D'' = 1: E‖∇̃F − ∇F‖² = 8 = σ_F²/3."""
    A = np.repeat(np.diag([-1.0, 0.5, 0.5])[None], 4, axis=0)
    b = np.array([[1.0, 0, 0], [-1.0, 0, 0], [1.0, 0, 0], [-1.0, 0, 0]])
    w = np.array([0.3, -0.2, 0.7])
    bias, second = _brute_quadratic(A, b, w, 1.0, 1, 1, 1)
    sG2, L, B = 1.0, 1.0, np.linalg.norm(np.diag([2.0, 0.5, 0.5]) @ (A[0] @ w - b.mean(axis=0)))
    sigma_F2 = CLAIM["sigma_F2"](B, sG2, 0.0, 1.0, L, 1, 1, 1)
    assert np.allclose(bias, 0, atol=1e-13) and second == pytest.approx(
        8.0, rel=1e-13
    )  # brute-force rounding
    assert sigma_F2 == pytest.approx(24.0, rel=1e-14)


def test_finding_30b_fails_with_the_spectral_norm():
    """Hessians diag(±1, ±1) (every sign pair), D'' = 2: E‖H_D'' − H‖₂² = 3/4 > σ_H²/D'' = 1/2;
    with the Frobenius norm the mean-square identity holds (σ_H,F² = 2, E‖·‖_F² = 1)."""
    H = [np.diag(s) for s in itertools.product([1.0, -1.0], repeat=2)]
    sH2 = np.mean([np.linalg.norm(h, 2) ** 2 for h in H])
    pairs = [(H[i] + H[j]) / 2 for i in range(4) for j in range(4)]
    spec = np.mean([np.linalg.norm(p, 2) ** 2 for p in pairs])
    frob = np.mean([np.linalg.norm(p, "fro") ** 2 for p in pairs])
    assert sH2 == 1.0 and spec == 0.75 > sH2 / 2
    assert frob == pytest.approx(np.mean([np.linalg.norm(h, "fro") ** 2 for h in H]) / 2)
    # the lemma itself holds on quadratic samples with these Hessians (exact moments, local constants)
    rng = np.random.default_rng(2)
    A = np.array(H)[None]
    b = rng.standard_normal((1, 4, 2))
    for alpha in (0.3, 1.0):  # L = 0 here (mean Hessian 0): every alpha is allowed
        a = np.array([alpha])
        bias, second, _ = quadratic_moments(A, b, np.zeros((1, 2)), a, a, [1.0], [1.0], [2.0])
        c = quadratic_constants(A, b, np.zeros((1, 2)), a)
        assert second[0] <= CLAIM["sigma_F2"](c["B"], c["sG2"], c["sH2"], a, c["L"], 1.0, 1.0, 2.0)[0]


def _kink_bias(s, eta, D, L=1.0, a=1.0):
    """1-d samples φ(x) − c_j x, c = ±s, φ'' = L clip((x − v)/η, −1, 1) (C², ρ = L/η), α = 1/L, w = v − a
    (φ''(w) = −L): E[∇̃F] − ∇F by enumerating the 2^D batches D (D', D'' only add zero-mean noise)."""
    alpha, v = 1 / L, 0.0
    huber = lambda t: np.where(np.abs(t) <= eta, t**2 / (2 * eta), np.abs(t) - eta / 2)  # noqa: E731
    K = L * (eta / 2 - 2 * a)  # makes w − αφ'(w) = v
    dphi = lambda x: K + L * huber(x - v)  # noqa: E731
    w = v - a
    assert abs((w - alpha * dphi(w)) - v) < 1e-12
    M = 1 - alpha * (-L)
    cs = np.array([s, -s])
    total = 0.0
    for idx in itertools.product(range(2), repeat=D):
        u = w - alpha * (dphi(w) - cs[list(idx)].mean())
        total += dphi(u) / 2**D
    return abs(M * (total - dphi(v))), CLAIM["bias"](alpha, L, s, D)


def test_bias_constant_approached_by_a_hessian_jump():
    bias, bound = _kink_bias(1.0, 0.05, 1)
    assert 0.97 < bias / bound <= 1.0
    # and the 1/sqrt(D) is needed there: at D = 16, sigma_G/D in place of sigma_G/sqrt(D) fails
    bias, bound = _kink_bias(1.0, 0.01, 16)
    assert bias / bound > 0.7 and bias > bound / 4  # bound/4 = 2 alpha L sigma_G / D


def test_instances_cover_the_boundaries():
    batch = l43.instances("quadratic", None, rng_for(0, SID, "quadratic"))
    L = np.max(np.abs(np.linalg.eigvalsh(batch["A"].mean(axis=1))), axis=-1)
    aL = batch["alpha"] * L
    assert np.any(aL == 0) and np.any(batch["alpha"] == 1 / L) and np.any(aL > 3) and np.any(aL > 1)
    assert np.any(np.linalg.eigvalsh(batch["A"].mean(axis=1))[:, 0] < 0)  # nonconvex
    assert np.any(batch["D"] >= 1e6) and np.any(batch["D1"] >= 1e6) and np.any(batch["D"] == 1)
    lb = l43.instances("logistic", None, rng_for(0, SID, "logistic"))
    assert np.any(lb["alpha"] == 0) and np.any(lb["D"] == 40) and np.any(lb["cD"].sum(axis=-1) > 0)


def test_compositions_probabilities_and_bad_input():
    c, p = compositions(3, 4)
    assert c.shape == (15, 3) and np.all(c.sum(axis=1) == 4) and p.sum() == pytest.approx(1.0)
    brute = {}
    for idx in itertools.product(range(3), repeat=4):
        key = tuple(np.bincount(idx, minlength=3))
        brute[key] = brute.get(key, 0) + 1 / 81
    assert all(brute[tuple(row)] == pytest.approx(q) for row, q in zip(c, p, strict=True))
    with pytest.raises(ValueError, match="D >= 1"):
        compositions(3, 0)
    with pytest.raises(ValueError, match="kind"):
        configuration_moments(
            QuadraticSamples(np.zeros((1, 1, 1, 1)), np.zeros((1, 1, 1))),
            np.zeros((1, 1)),
            np.zeros(1),
            np.ones((1, 1, 1), int),
            np.ones(1),
            np.ones(1),
            "second_order",
        )


def test_finding_algorithm1_batch_reuse_breaks_the_bias_bound():
    """Two samples a x²/2, a = (1.5, 0.5), w = 1, α = 0.5, D' = 1: with the Hessian on D' (Algorithm 1)
    the bias is 0.0625 for every D (the D-batches enumerated by their binomial counts), above
    2αLσ_G/√D = 0.05 at D = 100; with an independent D'' (eq. (8)) it is 0."""
    from math import comb

    a, w, alpha = np.array([1.5, 0.5]), 1.0, 0.5
    grad_F = (1 - alpha * a.mean()) * a.mean() * (w - alpha * a.mean() * w)

    def bias(D, same):
        total = 0.0
        for k in range(D + 1):  # k copies of sample 0 in D
            u = w - alpha * (k * a[0] + (D - k) * a[1]) * w / D
            for j in range(2):  # D' = 1
                hess = [a[j]] if same else a  # D'' = 1, independent: both samples
                total += comb(D, k) / 2**D / 2 * np.mean([(1 - alpha * h) * a[j] * u for h in hess])
        return total - grad_F

    var = lambda x: np.mean((a * x - np.mean(a * x)) ** 2)  # noqa: E731
    sG = np.sqrt(max(var(w), *(var(w - alpha * a[j] * w) for j in range(2))))
    assert sG == 0.5
    for D in (1, 100, 1000):
        assert bias(D, True) == pytest.approx(-0.0625, rel=1e-12) and abs(bias(D, False)) < 1e-14
    bound = CLAIM["bias"](alpha, 1.0, sG, 100)
    assert bound == pytest.approx(0.05) and abs(bias(100, True)) > bound
    # the checker's closed form agrees
    from moreau.analysis.perfedavg.estimators.quadratic_moments import algorithm1_bias

    A = a[None, :, None, None]
    np.testing.assert_allclose(
        algorithm1_bias(A, np.zeros((1, 2, 1)), np.array([[w]]), np.array([alpha]), np.array([1.0])),
        [[-0.0625]],
        rtol=1e-14,
    )


def test_algorithm1_bias_against_enumeration():
    from moreau.analysis.perfedavg.estimators.quadratic_moments import algorithm1_bias

    rng = np.random.default_rng(12)
    T, n, d, (D, D1) = 2, 3, 2, (2, 2)
    A = symmetric_samples(rng, T, n, d)
    b, w, alpha = rng.standard_normal((T, n, d)), rng.standard_normal((T, d)), rng.uniform(0.1, 0.6, T)
    got = algorithm1_bias(A, b, w, alpha, np.full(T, float(D1)))
    for t in range(T):

        def grad(x, idx, t=t):
            return np.mean([A[t, j] @ x - b[t, j] for j in idx], axis=0)

        Ab = A[t].mean(axis=0)
        gF = (np.eye(d) - alpha[t] * Ab) @ grad(w[t] - alpha[t] * grad(w[t], range(n)), range(n))
        vals = [
            (np.eye(d) - alpha[t] * np.mean(A[t, list(i2)], axis=0))
            @ grad(w[t] - alpha[t] * grad(w[t], i1), i2)
            for i1 in itertools.product(range(n), repeat=D)
            for i2 in itertools.product(range(n), repeat=D1)
        ]
        np.testing.assert_allclose(got[t], np.mean(vals, axis=0) - gF, atol=1e-13)
    # logistic samples: the engine's shift (exact enumeration) against the same brute force
    X, y = logistic_samples(rng, T, n, d)
    f = mo.Logistic(X, y)
    alpha = 0.8 / np.asarray(f.curvature_bounds()[1])
    batch = dict(
        X=X,
        y=y,
        w=w,
        alpha=alpha,
        D=np.full(T, float(D)),
        D1=np.full(T, float(D1)),
        D2=np.ones(T),
        cD=np.zeros((T, 4, n), int),
    )
    v = logistic_parts(batch, "hessian")
    for t in range(T):
        target = np.asarray(mo.meta_objective(mo.Logistic(X[t], y[t]), alpha[t]).grad(w[t]))
        vals = [
            (np.eye(d) - alpha[t] * _logistic_hess(X[t], y[t], w[t], i2))
            @ _logistic_grad(X[t], y[t], w[t] - alpha[t] * _logistic_grad(X[t], y[t], w[t], i1), i2)
            for i1 in itertools.product(range(n), repeat=D)
            for i2 in itertools.product(range(n), repeat=D1)
        ]
        assert v["bias_alg1"][t] == pytest.approx(np.linalg.norm(np.mean(vals, axis=0) - target), rel=1e-9)


def test_compositions_refuse_more_batches_than_they_can_enumerate():
    """A worst-case search that moves D (the instance enumerates only D <= EXACT_MAX) gets a ValueError,
    which the search counts as a refused point, never an enumeration that exhausts memory."""
    from math import comb

    from moreau.analysis.perfedavg.estimators.sample_moments import MAX_COMPOSITIONS, compositions

    counts, p = compositions(5, 3)
    assert counts.shape == (comb(7, 4), 5) and abs(p.sum() - 1) < 1e-15
    n = 10
    D = next(D for D in range(1, 100) if comb(D + n - 1, n - 1) > MAX_COMPOSITIONS)
    compositions(n, D - 1)  # the largest size it still enumerates
    with pytest.raises(ValueError, match=f"D={D} from n={n}"):
        compositions(n, D)
