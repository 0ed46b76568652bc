"""Thesis ch. 2, Theorems 3 and 4 (SGD): verdicts, mutants, the exact recursion, the findings.

The checkers live in ``analysis/thesis/sgd/__init__.py``.  The exact second-moment recursion is
checked two independent ways: exact enumeration of every noise path (Rademacher signs,
short horizons) and Monte Carlo with confidence intervals (long horizons).  The findings'
minimal instances are recomputed here with exact rationals and explicit paths.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from moreau.analysis.engine import runner
from moreau.analysis.engine.core import Mutant, take
from moreau.analysis.engine.registry import get
from moreau.analysis.engine.report import mutant_verdicts
from moreau.analysis.thesis import sgd as thesis_sgd

IDS = ("sgd.strongly_convex", "sgd.nonconvex")
Z = 4.5  # Monte Carlo: |mean - exact| <= Z standard errors (two-sided ~7e-6 per comparison)


def _record(sid, seed=0):
    (rec,) = runner.run([sid], "quadratic", None, seed)
    return rec


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sid", IDS)
def test_statement_holds_and_every_mutant_is_rejected(sid, seed):
    records = runner.run([sid], "all", None, seed, mutants=True)
    assert {r.result.family for r in records} == set(get(sid).families)
    st = get(sid)
    for rec in records:  # the printed statement, or (expected to fail as printed) the reading that holds
        res = rec.result if st.reference is None else rec.readings[st.reference.name][0]
        assert res.holds, [(p.name, p.failures[:3].tolist()) for p in res.parts if not p.holds]
        assert all(p.applicable for p in res.parts)
    survived = [name for (_, name), fams in mutant_verdicts(records).items() if not fams]
    assert not survived and len(get(sid).mutants) >= 2


def test_noise_model_meets_assumption_1_with_equality():
    b = _record("sgd.strongly_convex").batch
    rng = np.random.default_rng(3)
    v = rng.standard_normal(b["e0"].shape)  # any gradient direction
    # ||C v||^2 + ||v||^2 ||q||^2 = M ||v||^2 for every v (C = sqrt(M) x orthogonal, q = 0, or C = 0 and
    # ||q||^2 = M) and tr S = sigma^2, S PSD: E||xi||^2 = M ||grad F||^2 + sigma^2
    Cv2 = np.sum(np.einsum("tij,tj->ti", b["C"], v) ** 2, -1) + np.sum(v**2, -1) * np.sum(b["q"] ** 2, -1)
    assert np.allclose(Cv2, b["M"] * np.sum(v**2, -1), rtol=1e-12)
    both = (np.abs(b["C"]).max(axis=(1, 2)) > 0) & (np.abs(b["q"]).max(axis=1) > 0)
    assert not both.any() and np.sum(np.abs(b["q"]).max(axis=1) > 0) >= 4  # the directional noise is drawn
    assert np.allclose(np.trace(b["S"], axis1=1, axis2=2), b["s2"], rtol=1e-12, atol=1e-300)
    assert np.all(np.linalg.eigvalsh(b["S"])[:, 0] >= -1e-12 * np.maximum(b["s2"], 1e-300))


def _sgd_paths(A, C, S, e0, steps, zeta, w, q=None, zeta2=None):
    """e^t for explicit noise draws: zeta, zeta2 (P, N) and w (P, N, d) give
    xi = zeta C A e + zeta2 ||A e|| q + S^(1/2) w."""
    ev, V = np.linalg.eigh(S)
    Sh = (V * np.sqrt(np.maximum(ev, 0))) @ V.T
    e = np.broadcast_to(e0, (zeta.shape[0], e0.size)).copy()
    out = [e]
    for k, eta in enumerate(steps):
        grad = e @ A.T
        xi = zeta[:, k, None] * (grad @ C.T) + w[:, k] @ Sh.T
        if q is not None:
            xi = xi + zeta2[:, k, None] * np.linalg.norm(grad, axis=-1, keepdims=True) * q
        e = e - eta * (grad + xi)
        out.append(e)
    return np.array(out)  # (N + 1, P, d)


def _enumeration_cases():
    b = _record("sgd.strongly_convex").batch
    directional = np.flatnonzero(np.abs(b["q"]).max(axis=1) > 0)
    return [0, 7, 13, 20, 30, 41] + directional[:3].tolist()


@pytest.mark.parametrize("i", _enumeration_cases())
def test_recursion_equals_enumeration_of_every_noise_path(i):
    """Rademacher zeta, zeta' and w: 2^(2 + d) equally likely draws per step; N = 3 steps: every path."""
    b = take(_record("sgd.strongly_convex").batch, [i])
    A, C, S, e0, q = b["A"][0], b["C"][0], b["S"][0], b["e0"][0], b["q"][0]
    d, N = e0.size, 3
    steps = np.array([b["eta"][0], 0.5 * b["eta"][0], 0.25 * b["eta"][0]])
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=(2 + d) * N))).reshape(-1, N, 2 + d)
    e = _sgd_paths(A, C, S, e0, steps, signs[:, :, 0], signs[:, :, 2:], q, signs[:, :, 1])
    F = 0.5 * np.einsum("tpi,ij,tpj->tp", e, A, e).mean(axis=1)
    G = np.sum(np.einsum("ij,tpj->tpi", A, e) ** 2, axis=-1).mean(axis=1)
    h, g = thesis_sgd.second_moments(b["A"], b["C"], b["S"], b["e0"], steps[None], b["q"])
    assert np.allclose(h[:, 0], F, rtol=1e-10, atol=1e-14 * (F[0] + b["s2"][0]))
    assert np.allclose(g[:, 0], G, rtol=1e-10, atol=1e-14 * (G[0] + b["s2"][0]))


@pytest.mark.parametrize("k", range(4))
def test_recursion_matches_monte_carlo_over_long_runs(k):
    """Additive noise (M = 0) over 60 steps.  With M > 0 the F-values are products of random
    factors, heavy-tailed (the mean is carried by rare paths): Monte Carlo intervals are not
    reliable there, and the enumeration test above checks the multiplicative part exactly."""
    full = _record("sgd.strongly_convex").batch
    (idx,) = np.nonzero((full["M"] == 0) & (full["s2"] > 0))
    i = int(idx[k * (idx.size - 1) // 3])
    b = take(full, [i])
    A, C, S, e0, eta = b["A"][0], b["C"][0], b["S"][0], b["e0"][0], b["eta"][0]
    N, P = 60, 20000
    rng = np.random.default_rng(i)
    zeta = rng.choice([-1.0, 1.0], (P, N))
    w = rng.standard_normal((P, N, e0.size))  # Gaussian w: the recursion needs only E w = 0, E ww^T = I
    e = _sgd_paths(A, C, S, e0, np.full(N, eta), zeta, w)
    F = 0.5 * np.einsum("tpi,ij,tpj->tp", e, A, e)
    h, _ = thesis_sgd.second_moments(b["A"], b["C"], b["S"], b["e0"], np.full((1, N), eta))
    for t in (1, 10, 60):
        mean, se = F[t].mean(), F[t].std(ddof=1) / np.sqrt(P)
        assert abs(mean - h[t, 0]) <= Z * se + 1e-12 * h[t, 0], (t, mean, se, h[t, 0])


def test_conditions_matter_outside_instances_exceed_the_bounds():
    rec = _record("sgd.strongly_convex")
    for p in rec.result.parts:
        out = ~p.sides.applicable
        assert out.any() and np.any(p.ratio[out] > 1), p.name


def test_documented_equivalent_mutant_holds():
    st = get("sgd.strongly_convex")
    (name,) = st.equivalent_mutants
    m = Mutant(name, {"nu": lambda h0, L, s2, mu, delta: np.maximum(delta * h0, 2 * L * s2 / mu**2)})
    for seed in (0, 1):
        assert st.run(
            "quadratic", None, None, mutant=m, batch=_record("sgd.strongly_convex", seed).batch
        ).holds


def _mean_avg_grad2_1d(x0, s2, eta0, T):
    """Exact (1/T) sum_{t<T} E x_t^2 for F = x^2/2, additive noise of variance s2, eta = eta0/sqrt(T) (rationals)."""
    eta = Fraction(eta0) / Fraction(int(np.sqrt(T)))
    assert eta * eta * T == Fraction(eta0) ** 2  # T a perfect square: eta rational
    p, tot = Fraction(x0) ** 2, Fraction(0)
    for _ in range(T):
        tot += p
        p = (1 - eta) ** 2 * p + eta**2 * Fraction(s2)
    return tot / T


def test_finding_first_branch_of_the_min():
    # d = 1, F = x^2/2 (L = 1), x^0 = 1 (h0 = 1/2), M = 0, sigma^2 = 1/100: eta_0 = min{1, 10} = 1
    s2, h0 = Fraction(1, 100), Fraction(1, 2)
    assert np.sqrt(float(2 * h0 / s2)) == 10.0
    assert _mean_avg_grad2_1d(1, s2, 1, 1) == 1 and (8 * h0 * s2) == Fraction(4, 100)  # 1 > sqrt(0.04) = 0.2
    lhs = _mean_avg_grad2_1d(1, s2, 1, 256)
    assert abs(float(lhs) - 0.03257) < 5e-6 and float(lhs) / np.sqrt(float(8 * h0 * s2) / 256) > 2.6
    st = get("sgd.nonconvex")
    batch = {
        "A": np.ones((1, 1, 1)),
        "C": np.zeros((1, 1, 1)),
        "q": np.zeros((1, 1)),
        "S": np.full((1, 1, 1), 0.01),
        "e0": np.ones((1, 1)),
        "L": np.ones(1),
        "M": np.zeros(1),
        "s2": np.full(1, 0.01),
        "eta0": np.ones(1),
    }
    assert st.run(
        "quadratic", None, None, batch=batch, reading=st.reference
    ).holds  # not applicable there ...
    res = st.run("quadratic", None, None, batch=batch, reading=None)  # ... the printed step rule fails
    assert not res.holds and abs(res.parts[0].max_ratio - 5.0) < 1e-9
    assert len(st.findings) == 3


def test_finding_eta0_below_the_min_exact_enumeration():
    # sigma^2 = 1, Rademacher noise, eta_0 = 1/10, T = 16 (eta = 1/40): every one of the 2^16 noise paths
    T, eta = 16, 1 / 40
    xi = np.array(list(itertools.product((-1.0, 1.0), repeat=T)))
    x, tot = np.ones(xi.shape[0]), np.zeros(xi.shape[0])
    for t in range(T):
        tot += x**2
        x = x - eta * (x + xi[:, t])
    ratio = tot.mean() / T / (np.sqrt(8 * 0.5 * 1.0) / np.sqrt(T))
    assert ratio == pytest.approx(float(_mean_avg_grad2_1d(1, 1, Fraction(1, 10), T)) / 0.5, rel=1e-12)
    assert 1.41 < ratio < 1.42
    assert 2.42 < float(_mean_avg_grad2_1d(1, 1, Fraction(1, 10), 256)) / (2 / 16) < 2.43


def test_finding_no_expectation_a_path_violates_the_bound():
    # sigma^2 = 1 (xi = +-1), eta_0 = 1 (both branches), T = 16, eta = 1/4: xi = -1 always keeps x^t = 1
    x, tot = Fraction(1), Fraction(0)
    for _ in range(16):
        tot += x * x
        x = x - Fraction(1, 4) * (x + (-1))
    assert x == 1 and tot / 16 == 1 > Fraction(1, 2)  # sqrt(8 * 1/2 * 1)/sqrt(16) = 1/2
    mean = _mean_avg_grad2_1d(1, 1, 1, 16)
    assert 0.26 < float(mean) < 0.27  # the expectation holds: 0.53 * 1/2


def test_nonconvex_reading_is_checked_on_instances_and_printed_rule_is_drawn():
    rec = _record("sgd.nonconvex")
    b = rec.batch
    printed, proof = rec.readings[get("sgd.nonconvex").reference.name][0].parts  # the reading's applicability
    h0 = 0.5 * np.einsum("ti,tij,tj->t", b["e0"], b["A"], b["e0"])
    first = 1 / (b["L"] * (b["M"] + 1))
    with np.errstate(divide="ignore"):
        sq = np.sqrt(2 * h0 / (b["L"] * b["s2"]))
    allowed = b["eta0"] <= np.minimum(first, sq) * (1 + 1e-12)  # the printed step rule
    assert printed.applicable >= 4 and np.sum(allowed & ~printed.sides.applicable) >= 8
    assert np.any(printed.ratio[allowed & ~printed.sides.applicable] > 1)  # the finding, on drawn instances
    assert 0.45 < printed.max_ratio <= 0.55 + 0.05  # about 1/2 (T = 1, gradient along the top eigenvector)


def test_meta_gradient_matches_moreau_meta_objective_and_instances_are_nonconvex():
    import moreau as mo
    from moreau.analysis.thesis.sgd import monte_carlo as mc

    b = runner.run(["sgd.nonconvex"], "logistic", None, 0)[0].batch
    f = mo.Logistic(b["X"], b["y"])
    W = 2 * np.random.default_rng(4).standard_normal((30,) + b["x0"].shape)
    ref = np.asarray(mo.meta_objective(f, b["alpha"]).grad(W))
    assert np.allclose(mc.meta_grad(f, b["alpha"], W), ref, rtol=1e-12, atol=1e-14)
    lowest = np.linalg.eigvalsh(np.asarray(mo.meta_objective(f, b["alpha"]).hess(W)))[..., 0].min(axis=0)
    meta = b["alpha"] > 0
    assert np.sum(lowest[meta] < 0) >= meta.sum() // 2  # negative curvature somewhere on most meta-objectives
    # the gradient bound that makes the path averages bounded variables: ||grad F|| <= (1 + alpha L_f) B
    assert np.all(np.linalg.norm(ref, axis=-1) <= b["B"] * (1 + 1e-12))


def test_logistic_monte_carlo_is_seeded_by_the_batch():
    from moreau.analysis.thesis.sgd import monte_carlo as mc

    b = runner.run(["sgd.nonconvex"], "logistic", None, 0)[0].batch
    m1, s1 = mc.path_averages(b)
    m2, s2 = mc.path_averages({k: np.copy(v) for k, v in b.items()})
    assert np.array_equal(m1, m2) and np.array_equal(s1, s2)
    assert np.all(s1[1:] > 0) and np.allclose(s1[0], 0)  # T = 1: the left side is deterministic


def test_monte_carlo_simulator_against_the_exact_recursion_on_a_quadratic():
    """The logistic family's path simulator, run on a quadratic gradient, matches the exact expectations."""
    from moreau.analysis.thesis.sgd import monte_carlo as mc

    full = _record("sgd.strongly_convex").batch
    (idx,) = np.nonzero((full["M"] == 0) & (full["s2"] > 0))
    b = take(full, idx[:6])
    A = b["A"]
    grad = lambda e: np.einsum("nij,pnj->pni", A, e)  # noqa: E731  (F(z + e) - F* = e^T A e / 2)
    value = lambda e: 0.5 * np.einsum("pni,nij,pnj->pn", e, A, e)  # noqa: E731
    N = 30
    steps = np.broadcast_to(b["eta"], (N, b["eta"].size))
    _, v = mc._simulate(grad, b["e0"], b["C"], b["S"], b["q"], np.arange(6) + 11, steps, value)
    h, _ = thesis_sgd.second_moments(A, b["C"], b["S"], b["e0"], np.ascontiguousarray(steps.T), b["q"])
    mean, se = v.mean(axis=1), v.std(axis=1, ddof=1) / np.sqrt(mc.PATHS)
    z = np.abs(mean[1:] - h[1:]) / se[1:]
    assert np.mean(z <= 3.29) >= 0.95 and np.max(z) < 6  # 99.9% intervals: coverage, no gross misses
