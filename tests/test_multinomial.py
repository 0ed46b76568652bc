"""Multinomial (softmax) logistic: derivatives, binary equivalence, certified prox, bad input."""

import array_api_strict as xps
import numpy as np
import pytest
import scipy.optimize as so

import moreau as mo

rng = np.random.default_rng(11)
T, N, D, C = 3, 25, 3, 4
X = rng.normal(size=(T, N, D)) * 2
Y = rng.integers(0, C, size=(T, N))
F = mo.Multinomial(X, Y, n_classes=C, mu=0.05)


def _fd(fun, th, h):
    E = np.eye(th.shape[-1])
    return np.stack([(fun(th + h * e) - fun(th - h * e)) / (2 * h) for e in E], axis=-1)


def test_grad_and_hess_match_central_differences():
    th = rng.normal(size=(T, D * C))
    # h = 1e-5: truncation h^2 |f'''| ~ 1e-10, rounding eps |f| / h ~ 1e-11
    assert np.allclose(_fd(F.value, th, 1e-5), F.grad(th), atol=1e-8)
    assert np.allclose(_fd(F.grad, th, 1e-5), F.hess(th), atol=1e-8)
    H = F.hess(th)
    assert np.allclose(H, np.swapaxes(H, -1, -2), atol=1e-15)


def test_two_classes_equal_binary_logistic_of_the_column_difference():
    yb = rng.integers(0, 2, size=(T, N))
    fm, fl = mo.Multinomial(X, yb, n_classes=2), mo.Logistic(X, yb)
    W = rng.normal(size=(T, D, 2))
    assert np.allclose(fm.value(W.reshape(T, -1)), fl.value(W[..., 1] - W[..., 0]), rtol=1e-14, atol=1e-14)
    g = fm.grad(W.reshape(T, -1)).reshape(T, D, 2)
    gl = fl.grad(W[..., 1] - W[..., 0])
    assert np.allclose(g[..., 1], gl, atol=1e-14) and np.allclose(g[..., 0], -gl, atol=1e-14)


def test_curvature_upper_bound_is_valid():
    lo, hi = F.curvature_bounds()
    for scale in (0.0, 1.0, 5.0):
        th = rng.normal(size=(T, D * C)) * scale
        ev = np.linalg.eigvalsh(F.hess(th))
        assert np.all(ev[..., -1] <= hi * (1 + 1e-12)) and np.all(ev[..., 0] >= lo * (1 - 1e-12))


@pytest.mark.parametrize("lam", [1e-4, 1.0, 1e4])
def test_prox_matches_scipy_and_is_certified(lam):
    w = rng.normal(size=(T, D * C)) * 3
    theta, info = mo.prox(F, w, lam, return_info=True)
    for i in range(T):
        fi = mo.Multinomial(X[i], Y[i], n_classes=C, mu=0.05)

        def h(t, fi=fi, i=i):
            return float(fi.value(t)) + lam / 2 * np.sum((t - w[i]) ** 2)

        def g(t, fi=fi, i=i):
            return fi.grad(t) + lam * (t - w[i])

        def H(t, fi=fi):
            return fi.hess(t) + lam * np.eye(D * C)

        ref = so.minimize(h, w[i], jac=g, hess=H, method="trust-exact", options={"gtol": 1e-13}).x
        ref_err = np.linalg.norm(g(ref)) / (lam + 0.05)  # certified error of the reference itself
        assert np.linalg.norm(theta[i] - ref) <= max(info.error_bound[i], info.tol[i]) + ref_err + 1e-15 * (
            1 + np.linalg.norm(ref)
        )


def test_envelope_and_array_api_strict():
    w = rng.normal(size=(T, D * C))
    Fe = mo.envelope(F, 2.0)
    ref = Fe.grad(w)
    fs = mo.Multinomial(xps.asarray(X), xps.asarray(Y.astype(float)), n_classes=C, mu=0.05)
    out = mo.envelope(fs, 2.0).grad(xps.asarray(w))
    assert np.allclose(np.from_dlpack(out), ref, atol=1e-12)
    f32 = mo.Multinomial(X.astype(np.float32), Y, n_classes=C, mu=0.05)
    assert mo.prox(f32, w.astype(np.float32), 2.0).dtype == np.float32


@pytest.mark.parametrize(
    "y, kw, match",
    [
        (np.full((N,), 0.5), {}, r"integer class labels 0..C-1 \(got 0.5\)"),
        (np.full((N,), -1.0), {}, r"integer class labels 0..C-1 \(got -1\)"),
        (np.arange(N) % 3, {"n_classes": 2}, r"labels < n_classes=2 \(got 2\)"),
        (np.zeros(N), {"n_classes": 1}, r"n_classes must be an integer >= 2"),
    ],
)
def test_bad_labels(y, kw, match):
    with pytest.raises(ValueError, match=match):
        mo.Multinomial(X[0], y, **kw)
