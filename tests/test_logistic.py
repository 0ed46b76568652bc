"""Logistic objectives: derivatives, extreme margins, labels, padding, constants.

Derivatives are checked against central differences (``_fd.py``: step and
error model there) and against a plain numpy transcription of the formula in
THEOREMS.md; constants against numpy ``eigvalsh`` and against sampled points.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _fd import assert_derivative, rounding
from _tol import assert_close, tol

import moreau as mo

RHO_SCALAR = 1 / (6 * math.sqrt(3))  # sup |l'''| of l(z) = log(1 + e^{-z}), at z = +-log(2 + sqrt 3)


def data(seed=0, m=3, n=12, d=3, scale=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n, d)) * scale
    y = rng.choice([-1.0, 1.0], size=(m, n))
    return X, y, rng


def ref(X, y, theta, mu=0.0, weights=None):
    """numpy transcription of f, grad f, hess f (THEOREMS.md, logistic), one client."""
    p = np.ones(len(y)) if weights is None else np.asarray(weights, float)
    p = p / p.sum()
    z = y * (X @ theta)
    s = 1 / (1 + np.exp(-z))
    value = np.sum(p * np.log1p(np.exp(-z))) + mu / 2 * theta @ theta
    grad = -(X.T @ (p * y * (1 - s))) + mu * theta
    hess = (X.T * (p * s * (1 - s))) @ X + mu * np.eye(len(theta))
    return value, grad, hess


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_against_numpy_transcription(mu):
    X, y, rng = data()
    f = mo.Logistic(X, y, mu=mu)
    theta = rng.normal(size=(3, 3))
    for i in range(3):
        v, g, H = ref(X[i], y[i], theta[i], mu)
        assert_close(f.value(theta)[i], v)
        assert_close(f.grad(theta)[i], g, scale=np.abs(X[i]).max() + mu * np.abs(theta[i]).max())
        assert_close(f.hess(theta)[i], H, scale=np.abs(X[i]).max() ** 2 + mu)


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_derivatives_vs_finite_differences(mu):
    X, y, rng = data(1)
    f = mo.Logistic(X, y, mu=mu)
    theta, v = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    r = np.linalg.norm(X, axis=-1)  # rounding scales: magnitudes of the summed terms
    tn = np.linalg.norm(theta, axis=-1)
    s_val = np.mean(np.abs(X @ theta[..., None])[..., 0], axis=-1) + 1 + mu * tn**2
    s_grad = np.mean(r, axis=-1) + mu * tn
    s_hess = np.mean(r**2, axis=-1) + mu
    assert_derivative(f.value, theta, f.grad(theta), noise=rounding(s_val))
    assert_derivative(f.grad, theta, f.hess(theta), noise=rounding(s_grad))
    assert_derivative(
        lambda t: f.hvp(t, v), theta, f.third(theta, v), noise=rounding(s_hess * np.linalg.norm(v, axis=-1))
    )
    assert_close(
        f.hvp(theta, v), (f.hess(theta) @ v[..., None])[..., 0], scale=s_hess.max() * np.abs(v).max()
    )


def test_extreme_margins_are_finite_with_the_right_limits():
    """Margins y x^T theta = +-1e4: loss ~ max(0, -z), sigma terms saturate, no NaN."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, -1.0])
    f = mo.Logistic(X, y)
    theta = np.array([1e4, 1e4])  # z = (+1e4, -1e4)
    assert f.value(theta) == pytest.approx(
        np.mean(np.maximum(0, -np.array([1e4, -1e4]))), rel=tol(np.float64), abs=0
    )
    g, H, T = f.grad(theta), f.hess(theta), f.third(theta, np.ones(2))
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(H)) and np.all(np.isfinite(T))
    # row 0 is on the right side (z = +1e4): contributes nothing; row 1 contributes -p y x = (0, 1/2)
    np.testing.assert_array_equal(g, [0.0, 0.5])
    assert np.all(np.abs(H) <= 1e-300) and np.all(np.abs(T) <= 1e-300)  # e^{-1e4} underflows to 0
    # all on the right side: value and gradient vanish (not NaN)
    right = mo.Logistic(X, np.array([1.0, 1.0]))
    assert right.value(theta) == 0.0 and np.all(right.grad(theta) == 0.0)
    # prox and envelope stay finite out there too
    t, info = mo.prox(f, theta, 1.0, return_info=True)
    assert np.all(np.isfinite(t)) and info.error_bound <= info.tol
    assert np.all(np.isfinite(mo.envelope(f, 1.0).hess(theta)))


def test_zero_one_labels_read_as_plus_minus_one():
    X, y, rng = data(2)
    f_pm, f_01 = mo.Logistic(X, y, mu=0.1), mo.Logistic(X, (y + 1) / 2, mu=0.1)
    theta = rng.normal(size=(3, 3))
    for name in ("value", "grad", "hess"):
        np.testing.assert_array_equal(getattr(f_01, name)(theta), getattr(f_pm, name)(theta), err_msg=name)
    np.testing.assert_array_equal(mo.prox(f_01, theta, 2.0), mo.prox(f_pm, theta, 2.0))


def test_integer_weights_equal_repeated_rows():
    """weights (2, 1, ..., 1) is the same objective as the data with row 0 duplicated."""
    X, y, rng = data(3, m=1, n=6)
    w = np.ones(6)
    w[0] = 2.0
    f_w = mo.Logistic(X[0], y[0], mu=0.2, weights=w)
    f_dup = mo.Logistic(np.concatenate([X[0, :1], X[0]]), np.concatenate([y[0, :1], y[0]]), mu=0.2)
    theta = rng.normal(size=3)
    assert_close(f_w.value(theta), f_dup.value(theta))
    assert_close(f_w.grad(theta), f_dup.grad(theta))
    assert_close(f_w.hess(theta), f_dup.hess(theta))
    assert_close(mo.prox(f_w, theta, 0.5), mo.prox(f_dup, theta, 0.5))
    assert_close(f_w.smoothness(), f_dup.smoothness())


def test_zero_weight_padding_equals_unpadded_client():
    rng = np.random.default_rng(4)
    n0, n1, d = 3, 7, 3
    X0, X1 = rng.normal(size=(n0, d)), rng.normal(size=(n1, d))
    y0, y1 = rng.choice([-1.0, 1.0], size=n0), rng.choice([-1.0, 1.0], size=n1)
    Xp = np.zeros((2, n1, d))
    Xp[0, :n0], Xp[0, n0:], Xp[1] = X0, 50.0, X1  # padded rows: finite, large, weight 0
    yp = np.ones((2, n1))
    yp[0, :n0], yp[1] = y0, y1
    weights = np.ones((2, n1))
    weights[0, n0:] = 0.0
    padded = mo.Logistic(Xp, yp, mu=0.1, weights=weights)
    singles = [mo.Logistic(X0, y0, mu=0.1), mo.Logistic(X1, y1, mu=0.1)]
    theta = rng.normal(size=(2, d))
    for i, f in enumerate(singles):
        assert_close(padded.value(theta)[i], f.value(theta[i]))
        assert_close(padded.grad(theta)[i], f.grad(theta[i]))
        assert_close(padded.hess(theta)[i], f.hess(theta[i]))
        assert_close(mo.prox(padded, theta, 0.7)[i], mo.prox(f, theta[i], 0.7))
        assert_close(padded.curvature_bounds()[1][i], f.curvature_bounds()[1])
        assert_close(padded.hessian_lipschitz()[i], f.hessian_lipschitz())


@pytest.mark.parametrize("mu", [0.0, 0.25])
def test_curvature_bounds_vs_eigvalsh_and_attained_at_zero(mu):
    X, y, rng = data(5)
    weights = rng.uniform(0.5, 2.0, size=y.shape)
    f = mo.Logistic(X, y, mu=mu, weights=weights)
    XtWX = np.einsum("mni,mn,mnj->mij", X, weights, X)
    L = np.linalg.eigvalsh(XtWX)[:, -1] / (4 * weights.sum(-1)) + mu
    lo, hi = f.curvature_bounds()
    assert_close(hi, L)
    np.testing.assert_array_equal(lo, mu)
    assert_close(f.smoothness(), L)
    assert_close(np.linalg.eigvalsh(f.hess(np.zeros(3)))[:, -1], L)  # attained at theta = 0
    for theta in rng.normal(size=(10, 3, 3)) * 3:
        e = np.linalg.eigvalsh(f.hess(theta))
        assert np.all(e[:, -1] <= L * (1 + tol(np.float64))) and np.all(e[:, 0] >= mu - tol(np.float64) * L)


def test_hessian_lipschitz_is_valid_and_tight():
    X, y, rng = data(6)
    f = mo.Logistic(X, y, weights=rng.uniform(0.1, 1.0, size=y.shape))
    p = f.weights / f.weights.sum(-1, keepdims=True)
    rho = f.hessian_lipschitz()
    assert_close(rho, RHO_SCALAR * np.sum(p * np.linalg.norm(X, axis=-1) ** 3, axis=-1))
    for _ in range(20):
        t1 = rng.normal(size=(3, 3)) * 2
        t2 = t1 + rng.normal(size=(3, 3)) * rng.choice([1e-3, 1.0])
        lhs = np.linalg.norm(f.hess(t1) - f.hess(t2), 2, axis=(-2, -1))
        assert np.all(lhs <= rho * np.linalg.norm(t1 - t2, axis=-1) * (1 + tol(np.float64)))
    # one sample, d = 1, at the inflection z* of l'': the ratio reaches rho (the bound is tight)
    g = mo.Logistic(np.array([[1.0]]), np.array([1.0]))
    z = math.log(2 + math.sqrt(3))
    ratio = abs(g.hess(np.array([z + 1e-4]))[0, 0] - g.hess(np.array([z - 1e-4]))[0, 0]) / 2e-4
    # looser than the dtype default: the central quotient has O(h^2) = 1e-8 truncation
    assert ratio == pytest.approx(float(g.hessian_lipschitz()), rel=1e-6, abs=0)


def test_gradient_bound_is_valid_ignores_padding_and_is_tight():
    X, y, rng = data(7)
    weights = np.ones(y.shape)
    weights[:, 0] = 0.0
    X[:, 0] *= 100  # a huge padded row must not enter B
    f = mo.Logistic(X, y, weights=weights)
    B = f.gradient_bound()
    assert_close(B, np.linalg.norm(X[:, 1:], axis=-1).max(axis=-1))
    for theta in rng.normal(size=(30, 3, 3)) * rng.choice([0.1, 1, 10, 1e3], size=(30, 1, 1)):
        assert np.all(np.linalg.norm(f.grad(theta), axis=-1) <= B * (1 + tol(np.float64)))
    # one sample: theta = -t y x gives |grad| = |x| sigma(t |x|^2) -> |x|
    x = np.array([[3.0, 4.0]])
    g = mo.Logistic(x, np.array([1.0]))
    assert np.linalg.norm(g.grad(-10 * x[0])) == pytest.approx(5.0, rel=tol(np.float64), abs=0)
    with pytest.raises(ValueError, match="mu = 0"):
        mo.Logistic(x, np.array([1.0]), mu=0.1).gradient_bound()


@pytest.mark.parametrize("alpha", [0.05, 0.3])
def test_meta_objective_of_logistic_vs_finite_differences(alpha):
    """Per-FedAvg F(w) = f(w - alpha grad f(w)): value by transcription, grad and the exact
    Hessian (with the third-derivative term) by central differences."""
    X, y, rng = data(8)
    f = mo.Logistic(X, y, mu=0.1)
    G = mo.meta_objective(f, alpha)
    w = rng.normal(size=(3, 3))
    for i in range(3):
        v = w[i] - alpha * ref(X[i], y[i], w[i], 0.1)[1]
        assert_close(G.value(w)[i], ref(X[i], y[i], v, 0.1)[0])
    r = np.linalg.norm(X, axis=-1)
    s_grad = np.mean(r, axis=-1) + 0.1 * np.linalg.norm(w, axis=-1)
    s_hess = np.mean(r**2, axis=-1) + 0.1
    s_val = np.mean(r, axis=-1) * (np.linalg.norm(w, axis=-1) + alpha * s_grad) + 1
    assert_derivative(G.value, w, G.grad(w), noise=rounding(s_val))
    assert_derivative(G.grad, w, G.hess(w), noise=rounding(s_grad * (1 + alpha * s_hess)))
