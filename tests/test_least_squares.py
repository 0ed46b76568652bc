"""LeastSquares and with_weights: samples -> quadratic, prox, padding, mini-batches, bad input.

Every value is checked against a computation that never forms ``A, b, c``:
the residuals ``y - X theta`` summed directly in numpy, central differences
(``_fd.py``), scipy.optimize for the prox, and ``numpy.linalg.eigvalsh`` for
the constants.  Mini-batch weights (counts) are checked against repeating the
drawn rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from _fd import assert_derivative, rounding
from _tol import assert_close, host
from scipy.optimize import minimize

import moreau as mo


def data(seed=0, m=3, n=7, d=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, n, d)), rng.normal(size=(m, n)), rng


def ref_value(X, y, theta, mu, w):
    """f from the residuals, one client (no A, b, c)."""
    r = y - X @ theta
    return np.sum(w * r**2 / 2) / np.sum(w) + mu / 2 * theta @ theta


def ref_grad(X, y, theta, mu, w):
    return -(X.T @ (w * (y - X @ theta))) / np.sum(w) + mu * theta


@pytest.mark.parametrize("mu", [0.0, 0.4])
@pytest.mark.parametrize("weighted", [False, True])
def test_against_residual_sums(mu, weighted):
    X, y, rng = data()
    w = rng.uniform(0.2, 3.0, size=y.shape) if weighted else np.ones(y.shape)
    f = mo.LeastSquares(X, y, mu=mu, weights=w if weighted else None)
    theta = rng.normal(size=(3, 3))
    for i in range(3):
        v = ref_value(X[i], y[i], theta[i], mu, w[i])
        scale = np.sum(w[i] * (y[i] ** 2 + (X[i] @ theta[i]) ** 2)) / np.sum(w[i]) + mu * theta[i] @ theta[i]
        assert_close(f.value(theta)[i], v, scale=scale)
        g_scale = np.abs(X[i]).max() * (np.abs(y[i]).max() + np.abs(X[i] @ theta[i]).max()) + mu
        assert_close(f.grad(theta)[i], ref_grad(X[i], y[i], theta[i], mu, w[i]), scale=g_scale)
        H = (X[i].T * (w[i] / w[i].sum())) @ X[i] + mu * np.eye(3)
        assert_close(f.hess(theta)[i], H)
    assert isinstance(f, mo.Quadratic)
    assert f.X is not None and f.y.shape == y.shape and f.weights.shape[-1] == 7


def test_derivatives_vs_finite_differences():
    X, y, rng = data(1)
    f = mo.LeastSquares(X, y, mu=0.3)
    theta = rng.normal(size=(3, 3))
    s = np.mean((np.abs(y) + np.abs(X @ theta[..., None])[..., 0]) ** 2, axis=-1) + 1
    assert_derivative(f.value, theta, f.grad(theta), noise=rounding(s))
    s_g = np.mean(np.linalg.norm(X, axis=-1) * (np.abs(y) + 3), axis=-1)
    assert_derivative(f.grad, theta, f.hess(theta), noise=rounding(s_g)[:, None])


def test_constants_exact():
    X, y, rng = data(2)
    w = rng.uniform(0.5, 2.0, size=y.shape)
    mu = np.array([0.0, 0.1, 1.0])
    f = mo.LeastSquares(X, y, mu=mu, weights=w)
    H = np.einsum("mnd,mn,mne->mde", X, w / w.sum(-1, keepdims=True), X) + mu[:, None, None] * np.eye(3)
    ev = np.linalg.eigvalsh(H)
    lo, hi = f.curvature_bounds()
    assert_close(lo, ev[:, 0], scale=ev.max())
    assert_close(hi, ev[:, -1])
    assert_close(f.strong_convexity(), ev[:, 0], scale=ev.max())
    assert_close(f.smoothness(), ev[:, -1])


@pytest.mark.parametrize("lam", [0.05, 1.0, 30.0])
def test_prox_vs_scipy_and_optimality(lam):
    X, y, rng = data(3)
    f = mo.LeastSquares(X, y, mu=0.2)
    w = rng.normal(size=(3, 3))
    theta = host(f.prox(w, lam))
    for i in range(3):
        # optimality from the samples: X^T (X th - y)/n + mu th + lam (th - w) = 0
        res = ref_grad(X[i], y[i], theta[i], 0.2, np.ones(7)) + lam * (theta[i] - w[i])
        scale = (
            np.abs(X[i]).max() * (np.abs(y[i]).max() + np.abs(X[i] @ theta[i]).max())
            + lam * np.abs(w[i]).max()
        )
        assert np.linalg.norm(res) <= 100 * np.finfo(float).eps * scale * 3

        def obj(t, i=i):
            return ref_value(X[i], y[i], t, 0.2, np.ones(7)) + lam / 2 * np.sum((t - w[i]) ** 2)

        def jac(t, i=i):
            return ref_grad(X[i], y[i], t, 0.2, np.ones(7)) + lam * (t - w[i])

        sol = minimize(obj, np.zeros(3), jac=jac, method="BFGS", options={"gtol": 1e-11})
        # BFGS stops at gradient 1e-11; the subproblem is (lam + mu)-strongly convex
        np.testing.assert_allclose(theta[i], sol.x, atol=1e-11 / (lam + 0.2) * 10)


def test_padding_by_zero_weights_equals_dropping_rows():
    rng = np.random.default_rng(4)
    sizes = [3, 6, 4]
    n, d = max(sizes), 2
    X = rng.normal(size=(3, n, d))
    y = rng.normal(size=(3, n))
    w = (np.arange(n) < np.array(sizes)[:, None]).astype(float)
    padded = mo.LeastSquares(X, y, mu=0.1, weights=w)
    theta, anchor = rng.normal(size=(3, d)), rng.normal(size=(3, d))
    for i, k in enumerate(sizes):
        one = mo.LeastSquares(X[i, :k], y[i, :k], mu=0.1)
        assert_close(padded.value(theta)[i], one.value(theta[i]))
        assert_close(padded.grad(theta)[i], one.grad(theta[i]))
        assert_close(padded.prox(anchor, 0.7)[i], one.prox(anchor[i], 0.7))
        assert_close(padded.curvature_bounds()[0][i], one.curvature_bounds()[0], scale=one.smoothness())
        assert_close(padded.minimizer()[i], one.minimizer())


def test_batched_equals_loop():
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(2, 3, 6, 2)), rng.normal(size=(2, 3, 6))
    mu = rng.uniform(0, 1, size=(2, 3))
    f = mo.LeastSquares(X, y, mu=mu)
    assert f.batch_shape == (2, 3)
    w = rng.normal(size=(2, 3, 2))
    batched = host(f.prox(w, 0.5))
    for t in range(2):
        for i in range(3):
            one = mo.LeastSquares(X[t, i], y[t, i], mu=mu[t, i])
            assert_close(batched[t, i], one.prox(w[t, i], 0.5))
            assert_close(f.value(w)[t, i], one.value(w[t, i]))


def test_shared_design_broadcasts():
    """One design X (n, d) with several targets y (m, n): batch (m,)."""
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(5, 2)), rng.normal(size=(4, 5))
    f = mo.LeastSquares(X, y)
    assert f.batch_shape == (4,)
    assert_close(f.minimizer(), np.linalg.lstsq(X, y.T, rcond=None)[0].T)


# -- with_weights ----------------------------------------------------------------
def _draws(rng, shape, n, k):
    """k indices drawn with replacement per client, and their counts (weights)."""
    idx = rng.integers(0, n, size=shape + (k,))
    counts = np.sum(idx[..., None] == np.arange(n), axis=-2).astype(float)
    return idx, counts


def _make(kind, X, y, **kw):
    if kind == "least_squares":
        return mo.LeastSquares(X, y, **kw)
    if kind == "logistic":
        return mo.Logistic(X, np.where(y > 0, 1.0, -1.0), **kw)
    return mo.Multinomial(X, np.floor(np.abs(y) * 2) % 3, n_classes=3, **kw)


@pytest.mark.parametrize("kind", ["least_squares", "logistic", "multinomial"])
def test_with_weights_equals_repeated_rows(kind):
    X, y, rng = data(7, m=3, n=8, d=2)
    f = _make(kind, X, y, mu=0.2)
    idx, counts = _draws(rng, (3,), 8, 5)
    g = f.with_weights(counts)
    assert type(g) is type(f) and g.batch_shape == (3,)
    assert g.X is f.X and g.y is f.y  # cheap: the samples are shared, not copied or re-validated
    theta = rng.normal(size=(3, g.dim))
    for i in range(3):
        one = _make(kind, X[i][idx[i]], y[i][idx[i]], mu=0.2)
        assert_close(g.value(theta)[i], one.value(theta[i]))
        assert_close(g.grad(theta)[i], one.grad(theta[i]))
        assert_close(g.hess(theta)[i], one.hess(theta[i]))
        assert_close(g.curvature_bounds()[1][i], one.curvature_bounds()[1])
    # the original is untouched (its weights and constants)
    fresh = _make(kind, X, y, mu=0.2)
    assert_close(f.value(theta), fresh.value(theta))
    assert_close(f.curvature_bounds()[1], fresh.curvature_bounds()[1])


@pytest.mark.parametrize("kind", ["least_squares", "logistic", "multinomial"])
def test_with_weights_adds_draw_axis(kind):
    X, y, rng = data(8, m=3, n=6, d=2)
    f = _make(kind, X, y)
    f.curvature_bounds()  # fill the caches that depend on the weights
    w = rng.uniform(0.1, 2.0, size=(4, 3, 6))
    g = f.with_weights(w)
    assert g.batch_shape == (4, 3)
    theta = rng.normal(size=(4, 3, g.dim))
    for s in range(4):
        ref = _make(kind, X, y, weights=w[s])
        assert_close(g.value(theta)[s], ref.value(theta[s]))
        assert_close(g.prox(theta, 0.8)[s], ref.prox(theta[s], 0.8), factor=10)
        assert_close(g.curvature_bounds()[1][s], ref.curvature_bounds()[1])


def test_with_weights_on_array_api_strict(xp):
    X, y, rng = data(9)
    f = mo.LeastSquares(xp.asarray(X), xp.asarray(y), mu=xp.asarray(0.1))
    w = rng.uniform(0.5, 1.5, size=y.shape)
    g = f.with_weights(xp.asarray(w))
    ref = mo.LeastSquares(X, y, mu=0.1, weights=w)
    theta = rng.normal(size=(3, 3))
    assert_close(host(g.prox(xp.asarray(theta), 0.3)), ref.prox(theta, 0.3))


# -- bad input -------------------------------------------------------------------
X0, Y0 = np.ones((2, 4, 3)), np.zeros((2, 4))
BAD = [
    ("X_1d", dict(X=np.ones(3), y=np.ones(3)), ValueError, "X must have shape"),
    ("y_len", dict(X=X0, y=np.ones((2, 5))), ValueError, "y must have shape"),
    ("batch", dict(X=X0, y=np.ones((3, 4))), ValueError, "do not broadcast"),
    ("X_nan", dict(X=np.where(X0 > 0, np.nan, 0), y=Y0), ValueError, "X must be finite"),
    ("y_inf", dict(X=X0, y=np.full((2, 4), np.inf)), ValueError, "y must be finite"),
    ("X_complex", dict(X=X0 + 1j, y=Y0), TypeError, "X must be real"),
    ("y_str", dict(X=X0, y=np.array([["a"] * 4] * 2)), TypeError, "y must be a real numeric array"),
    ("mu_neg", dict(X=X0, y=Y0, mu=-0.1), ValueError, "mu must be >= 0"),
    ("w_neg", dict(X=X0, y=Y0, weights=-np.ones(4)), ValueError, "weights must be >= 0"),
    (
        "w_zero",
        dict(X=X0, y=Y0, weights=np.array([[1.0, 0, 0, 0], [0, 0, 0, 0]])),
        ValueError,
        r"positive sum .* batch index \(1,\)",
    ),
    ("w_len", dict(X=X0, y=Y0, weights=np.ones(3)), ValueError, "weights must have shape"),
    ("w_nan", dict(X=X0, y=Y0, weights=np.full(4, np.nan)), ValueError, "weights must be finite"),
]


@pytest.mark.parametrize("kwargs, err, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        mo.LeastSquares(**kwargs)


@pytest.mark.parametrize("kind", ["least_squares", "logistic", "multinomial"])
@pytest.mark.parametrize(
    "weights, err, match",
    [
        (None, TypeError, "weights must be an array"),
        (-np.ones(6), ValueError, "weights must be >= 0"),
        (np.zeros((3, 6)), ValueError, "positive sum"),
        (np.ones(5), ValueError, "weights must have shape"),
        (np.ones((2, 6)), ValueError, "does not broadcast|do not broadcast"),
        (np.ones(6) * 1j, TypeError, "weights must be real"),
    ],
    ids=["none", "negative", "all_zero", "length", "batch", "complex"],
)
def test_with_weights_bad_input(kind, weights, err, match):
    X, y, _ = data(10, m=3, n=6, d=2)
    with pytest.raises(err, match=match):
        _make(kind, X, y).with_weights(weights)


def test_float32_stays_float32():
    X, y, rng = data(11)
    f = mo.LeastSquares(X.astype(np.float32), y.astype(np.float32), mu=0.1)
    assert f.A.dtype == np.float32 and f.prox(np.zeros(3, np.float32), 1.0).dtype == np.float32
    g = f.with_weights(np.ones(7))
    assert g.A.dtype == np.float32 and g.weights.dtype == np.float32
    ref = mo.LeastSquares(X, y, mu=0.1)
    assert_close(f.minimizer(), ref.minimizer(), dtype=np.float32, factor=10)
