"""perfedavg.appendix_h (Lemmas H.1, H.2): the statement holds, every mutant is rejected, the exact
moments of the first-order and Hessian-free estimates agree with brute-force enumeration and with
the library's estimators by Monte Carlo, and each finding is reproduced by direct computation."""

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
from moreau.analysis.perfedavg import appendix_h as ah
from moreau.analysis.perfedavg.estimators.quadratic_moments import quadratic_constants, quadratic_moments
from moreau.analysis.perfedavg.estimators.sides import logistic_parts

SID = "perfedavg.appendix_h"
CLAIM = ah.CLAIM

with_mutants = run_fixture(SID)


@pytest.mark.parametrize("seed", [0, 1])
def test_statement_holds(seed, with_mutants):
    assert_statement_holds(SID, seed, with_mutants)


def test_every_mutant_rejected(with_mutants):
    assert_every_mutant_rejected(with_mutants, at_least=10)


def test_section5_divisor_is_an_inconsistency_reading_that_fails(with_mutants):
    """Lemmas H.1 and H.2 hold as printed; §5's divisor delta (read into H.2) breaks H.2's bias bound."""
    st = with_mutants[0].statement
    r = st.reading(ah.SECTION5)
    assert st.expect == "holds" and (r.kind, r.expect) == ("inconsistency", "fails") and len(r.name) <= 40
    assert not any("divisor" in m.changes for m in st.mutants)
    for rec in with_mutants:
        parts = {p.name: p for p in rec.readings[ah.SECTION5][0].parts}
        assert rec.result.holds and not parts[ah.PARTS[2]].holds, rec.result.family
        assert parts[ah.PARTS[0]].holds and parts[ah.PARTS[1]].holds  # H.1 does not use the divisor


def test_reported_ratios(with_mutants):
    parts = parts_by_family(with_mutants)
    assert parts["quadratic", ah.PARTS[0]].max_ratio == pytest.approx(1.0, rel=1e-12)  # H.1 bias attained
    assert parts["quadratic", ah.PARTS[1]].max_ratio == pytest.approx(0.5, rel=1e-9)  # H.1 second: 1/2
    assert parts["quadratic", ah.PARTS[2]].max_ratio == 0.0  # HF unbiased
    assert 0.3 < parts["quadratic", ah.PARTS[3]].max_ratio <= 1 / 3 + 1e-12
    assert parts["quadratic", ah.PARTS[4]].applicable and parts["quadratic", ah.PARTS[4]].holds


# --- independent computations -------------------------------------------------------------


def _brute(grad, w, alpha, sizes, n, kind, delta=1.0, divisor=2.0):
    """All estimates over every ordered batch triple; ``grad(x, idx)`` a batch gradient (None: all)."""
    D, D1, D2 = sizes
    vals = []
    for i1 in itertools.product(range(n), repeat=D):
        u = w - alpha * grad(w, i1)
        for i2 in itertools.product(range(n), repeat=D1):
            h = grad(u, i2)
            if kind == "first_order":
                vals.append(h)
                continue
            for i3 in itertools.product(range(n), repeat=D2):
                vals.append(
                    h - alpha * (grad(w + delta * h, i3) - grad(w - delta * h, i3)) / (divisor * delta)
                )
    return np.array(vals)


def _quad_grad(A, b):
    def grad(x, idx):
        idx = range(len(b)) if idx is None else idx
        return np.mean([A[j] @ x - b[j] for j in idx], axis=0)

    return grad


@pytest.mark.parametrize("kind,divisor", [("first_order", 2.0), ("hessian_free", 2.0), ("hessian_free", 1.0)])
@pytest.mark.parametrize("sizes", [(1, 1, 1), (2, 1, 2), (1, 2, 1)])
def test_quadratic_closed_forms_against_enumeration(kind, divisor, sizes):
    rng = np.random.default_rng(sum(sizes) + int(divisor))
    T, n, d = 2, 3, 2
    A = symmetric_samples(rng, T, n, d)
    b, w, alpha = rng.standard_normal((T, n, d)), rng.standard_normal((T, d)), rng.uniform(0.1, 0.6, T)
    outer = {"first_order": 0 * alpha, "hessian_free": 2 * alpha / divisor}[kind]
    bias, second, gF = quadratic_moments(A, b, w, alpha, outer, *[np.full(T, float(s)) for s in sizes])
    for t in range(T):
        grad = _quad_grad(A[t], b[t])
        vals = _brute(grad, w[t], alpha[t], sizes, n, kind, delta=0.37, divisor=divisor)
        full = range(n)
        target = grad(w[t] - alpha[t] * grad(w[t], full), full)
        target = target - alpha[t] * A[t].mean(axis=0) @ target  # eq. (5)
        np.testing.assert_allclose(gF[t], target, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(bias[t], vals.mean(axis=0) - target, rtol=1e-10, atol=1e-12)
        assert second[t] == pytest.approx(np.mean(np.sum((vals - target) ** 2, axis=-1)), rel=1e-11)


def test_logistic_hessian_free_exact_against_enumeration():
    rng = np.random.default_rng(4)
    T, n, d, sizes = 2, 3, 2, (1, 2, 2)
    X, y = logistic_samples(rng, T, n, d)
    w, delta = rng.standard_normal((T, d)), np.array([0.05, 0.7])
    f = mo.Logistic(X, y)
    alpha = 0.9 / np.asarray(f.curvature_bounds()[1])
    batch = dict(
        X=X,
        y=y,
        w=w,
        alpha=alpha,
        delta=delta,
        D=np.full(T, 1.0),
        D1=np.full(T, 2.0),
        D2=np.full(T, 2.0),
        cD=np.zeros((T, 4, n), int),
        cD1=np.zeros((T, 4, n), int),
    )
    for kind in ("hessian_free", "first_order"):
        v = logistic_parts(batch, kind)
        for t in range(T):
            one = mo.Logistic(X[t, :, None, :], y[t, :, None])  # n single-sample losses

            def grad(x, idx, one=one):
                return np.mean(np.asarray(one.grad(x))[list(range(n) if idx is None else idx)], axis=0)

            vals = _brute(grad, w[t], alpha[t], sizes, n, kind, delta=delta[t])
            ft = mo.Logistic(X[t], y[t])
            target = np.asarray(mo.meta_objective(ft, alpha[t]).grad(w[t]))
            assert v["bias"][t] == pytest.approx(
                np.linalg.norm(vals.mean(axis=0) - target), rel=1e-9, abs=1e-14
            )
            assert v["second"][t] == pytest.approx(np.mean(np.sum((vals - target) ** 2, axis=-1)), rel=1e-10)


@pytest.mark.parametrize("variant", ["first_order", "hessian_free"])
def test_closed_forms_against_library_estimators_monte_carlo(variant):
    """moreau.fl.per_fedavg's FO and HF estimates (one step, β = 1) on least squares: mean and second
    moment over 40000 draws agree with the closed forms within 5 standard errors."""
    rng = np.random.default_rng(8)
    Xs, ys, A, b, w0 = least_squares_samples(rng, n=5, d=2)
    alpha = 0.7 / np.max(np.abs(np.linalg.eigvalsh(A.mean(axis=0))))
    sizes = (2, 1, 3)
    kw = dict(D_second=sizes[2], delta=0.5) if variant == "hessian_free" else {}
    outer = alpha if variant == "hessian_free" else 0.0
    assert_library_estimates_match(Xs, ys, w0, alpha, outer, sizes, 40000, variant=variant, rng=3, **kw)


def test_hessian_free_sigma_G_is_the_max_over_every_batch_pair():
    rng = np.random.default_rng(9)
    T, n, d = 3, 2, 2
    A = symmetric_samples(rng, T, n, d)
    b, w = rng.standard_normal((T, n, d)), rng.standard_normal((T, d))
    alpha, delta = rng.uniform(0.1, 0.8, T), rng.uniform(0.1, 3.0, T)
    c = quadratic_constants(A, b, w, alpha, delta)
    for t in range(T):
        grad = _quad_grad(A[t], b[t])

        def var(x, t=t, grad=grad):
            return np.mean([np.sum((A[t, j] @ x - b[t, j] - grad(x, None)) ** 2) for j in range(n)])

        pts = [w[t]]
        for D, D1 in ((1, 1), (2, 2), (3, 2)):
            for i1 in itertools.product(range(n), repeat=D):
                u = w[t] - alpha[t] * grad(w[t], i1)
                pts.append(u)
                for i2 in itertools.product(range(n), repeat=D1):
                    h = grad(u, i2)
                    pts += [w[t] + delta[t] * h, w[t] - delta[t] * h]
        # the vertices are batches with D (or D') copies of one sample: every size reaches the max
        assert c["sG2_hf"][t] == pytest.approx(max(var(x) for x in pts), rel=1e-12)


def test_logistic_rho_is_exact_for_shared_features():
    """ρ = ‖x‖³/(6√3) for samples sharing x: the sup of |ℓ'''| ‖x‖³ (ℓ''' = σ'(1 − 2σ), max 1/(6√3))."""
    z = np.linspace(-6, 6, 200001)
    s = 1 / (1 + np.exp(-z))
    assert np.max(np.abs(s * (1 - s) * (1 - 2 * s))) == pytest.approx(1 / (6 * np.sqrt(3)), rel=1e-8)
    x = np.array([[0.6, -1.1]])
    X = np.repeat(x[None], 6, axis=1)
    y = np.array([[1.0, -1, 1, -1, -1, 1]])
    v = logistic_parts(
        dict(
            X=X,
            y=y,
            w=np.zeros((1, 2)),
            alpha=np.ones(1),
            D=np.ones(1),
            D1=np.ones(1),
            D2=np.ones(1),
            delta=np.ones(1),
            cD=np.zeros((1, 2, 6), int),
            cD1=np.zeros((1, 2, 6), int),
        ),
        "hessian_free",
    )
    assert v["rho"][0] == pytest.approx(np.linalg.norm(x) ** 3 / (6 * np.sqrt(3)), rel=1e-14)
    assert v["rho"][0] == pytest.approx(
        float(np.asarray(mo.Logistic(X[0], y[0]).hessian_lipschitz())), rel=1e-14
    )


# --- findings --------------------------------------------------------------------------------


def _section5_instance(divisor):
    """One logistic sample x = y = 1, w = 0, α = 1/L = 4, δ = 0.1 (σ_G = 0): |estimate − ∇F(0)|."""
    sig = lambda t: 1 / (1 + np.exp(-t))  # noqa: E731
    df = lambda t: -sig(-t)  # noqa: E731
    alpha, delta, w = 4.0, 0.1, 0.0
    g = df(w - alpha * df(w))
    hess = sig(w) * sig(-w)
    grad_F = (1 - alpha * hess) * g
    est = g - alpha * (df(w + delta * g) - df(w - delta * g)) / (divisor * delta)
    rho, B = 1 / (6 * np.sqrt(3)), 1.0  # Assumption 3 and 2 constants (sup |f'''|, sup |f'|)
    return abs(est - grad_F), CLAIM["m_HF"](alpha, 0.25, 0.0, rho, delta, B, 1.0, 1.0)


def test_finding_section5_divisor_breaks_h2():
    bias5, bound = _section5_instance(1.0)
    bias_h, _ = _section5_instance(2.0)
    assert bound == pytest.approx(0.0385, abs=5e-5)
    assert bias5 == pytest.approx(0.119, abs=5e-4) and bias5 > 3 * bound
    assert bias_h < bound / 100  # (121) as printed: within the bound


def test_finding_h1_bias_attained():
    A = np.diag([-1.0, 0.5])
    b, w, alpha = np.array([-1.0, 0.0]), np.zeros(2), 0.5
    grad = lambda x: A @ x - b  # noqa: E731
    G = grad(w - alpha * grad(w))
    grad_F = (np.eye(2) - alpha * A) @ G
    assert np.allclose(G, [1.5, 0.0])
    bias = np.linalg.norm(G - grad_F)  # σ_G = 0: the FO estimate is G itself
    assert bias == pytest.approx(0.75, rel=1e-15)
    assert bias == pytest.approx(CLAIM["m_FO"](alpha, 1.0, 0.0, np.linalg.norm(G), 1.0), rel=1e-15)
