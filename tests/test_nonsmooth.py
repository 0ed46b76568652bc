"""Objectives that drop one assumption each (issue 18): AbsoluteValue, Hinge (nonsmooth, convex),
Huber (smooth, convex, not strongly convex), DoubleWell (smooth, weakly convex).

Every prox is checked three ways: against exact rational arithmetic (which also checks its
``error_bound``), against scipy on the prox objective (per coordinate, or per client for the
hinge), and against its optimality condition (a subgradient inclusion written out here).
"""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest
import scipy.optimize as so
from _tol import assert_close, eps, host

import moreau as mo
from moreau._nonsmooth import AbsoluteValue, Hinge
from moreau._piecewise_quadratic import DoubleWell, Huber

KINDS = ("abs", "hinge", "huber", "double_well")
SCIPY_ATOL = 1e-9  # what the brief asks of the references (Brent at xtol 1e-14; SLSQP on a QP)


def make(kind, rng, m=5, d=3, *, mu=0.0, dtype=np.float64, scale=1.0):
    """One objective of ``kind`` with batch ``(m,)``, parameters drawn from ``rng``."""
    s = (rng.standard_normal((m, d)) * scale).astype(dtype)
    mu = np.asarray(mu, dtype=dtype)
    if kind == "abs":
        return AbsoluteValue(s, rng.uniform(0.2, 2.0, (m, d)).astype(dtype), mu=mu)
    if kind == "hinge":
        y = np.where(rng.uniform(size=m) < 0.5, -1.0, 1.0).astype(dtype)
        return Hinge(s, y, rng.uniform(0.2, 2.0, m).astype(dtype), mu=mu)
    if kind == "huber":
        delta, c = (rng.uniform(lo, hi, (m, d)).astype(dtype) for lo, hi in ((0.1, 1.0), (0.2, 2.0)))
        return Huber(s, delta, c, mu=mu)
    a, L = (rng.uniform(0.5, 2.0, (m, d)).astype(dtype) for _ in range(2))
    return DoubleWell(s, a, L, mu=mu)


def lam_ok(f, lam):
    """``lam`` raised above a double well's threshold ``max L - mu`` (by 10%)."""
    return max(lam, 1.1 * float(np.max(host(f.weak_convexity()))))


# -- exact rational reference ---------------------------------------------------------------
def _sign(x):
    return (x > 0) - (x < 0)


def _p(f, name, i, k=None):
    """A parameter of entry ``i`` (coordinate ``k``) as an exact Fraction."""
    v = np.broadcast_to(host(getattr(f, name)), f.batch_shape + ((f.dim,) if k is not None else ()))
    return Fr(float(v[i] if k is None else v[i, k]))


def exact_prox(f, w, lam, i):
    """prox of entry ``i`` at ``w[i]`` in exact rational arithmetic (the closed forms of the
    docstrings, on the floating-point inputs: ``lam`` as rounded to the objective's dtype)."""
    mu, lam = _p(f, "mu", i), Fr(float(np.asarray(lam, dtype=host(f.mu).dtype)))
    lam2 = lam + mu
    w2 = [lam * Fr(float(x)) / lam2 for x in w[i]]
    if isinstance(f, Hinge):
        b = [_p(f, "b", i, k) for k in range(f.dim)]
        nb = sum(x * x for x in b)
        tau = (
            Fr(0)
            if nb == 0
            else min(
                max((1 - sum(x * y for x, y in zip(b, w2, strict=True))) / nb, Fr(0)), _p(f, "c", i) / lam2
            )
        )
        return [x + tau * y for x, y in zip(w2, b, strict=True)]
    out = []
    for k in range(f.dim):
        s = _p(f, "s", i, k)
        z = w2[k] - s
        if isinstance(f, AbsoluteValue):
            t = _p(f, "c", i, k) / lam2
            v = _sign(z) * max(abs(z) - t, Fr(0))
        elif isinstance(f, Huber):
            c, dl = _p(f, "c", i, k), _p(f, "delta", i, k)
            t = c / lam2
            v = z * lam2 * dl / (lam2 * dl + c) if abs(z) <= dl + t else z - t * _sign(z)
        else:
            a, L = _p(f, "a", i, k), _p(f, "L", i, k)
            tau = a * (lam2 - L) / (2 * lam2)
            v = lam2 * z / (lam2 - L) if abs(z) <= tau else (lam2 * z + L * a * _sign(z)) / (lam2 + L)
        out.append(s + v)
    return out


def breakpoints(f, w, lam):
    """Points ``w`` moved onto the prox's breakpoints (the hardest inputs for rounding)."""
    w = np.array(w, dtype=np.float64)
    lam2 = lam + np.broadcast_to(host(f.mu), f.batch_shape)[:, None]
    w2 = w * lam / lam2
    if isinstance(f, Hinge):  # margins 1 (no step), 1 - t|b|^2 (full step) and between (on the kink)
        b, c = host(f.b).astype(float), np.broadcast_to(host(f.c), f.batch_shape)[:, None]
        nb = np.sum(b * b, axis=-1, keepdims=True)
        target = 1 - np.resize([0.0, 1.0, 0.5], (len(w), 1)) * c / lam2 * nb
        w2 = w2 + (target - np.sum(b * w2, axis=-1, keepdims=True)) / nb * b
    else:
        s = np.broadcast_to(host(f.s), w.shape)
        if isinstance(f, AbsoluteValue):
            edge = np.broadcast_to(host(f.c), w.shape) / lam2
        elif isinstance(f, Huber):
            edge = np.broadcast_to(host(f.delta), w.shape) + np.broadcast_to(host(f.c), w.shape) / lam2
        else:
            a, L = (np.broadcast_to(host(getattr(f, n)), w.shape) for n in ("a", "L"))
            edge = a * (lam2 - L) / (2 * lam2)
        w2[:, 0] = s[:, 0] + edge[:, 0]
        w2[:, -1] = s[:, -1] - edge[:, -1]
    return (w2 * lam2 / lam).astype(host(f.s if hasattr(f, "s") else f.a).dtype)  # undo the ridge's scaling


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("mu", [0.0, 0.7], ids=["mu0", "ridge"])
@pytest.mark.parametrize("kind", KINDS)
def test_error_bound_holds_against_exact_arithmetic(kind, mu, dtype):
    rng = np.random.default_rng(11)
    f = make(kind, rng, mu=mu, dtype=dtype)
    for lam in (1e-3, 0.3, 1.0, 50.0, 1e5):
        lam = lam_ok(f, lam)
        for w in (rng.standard_normal((5, 3)) * 3, breakpoints(f, rng.standard_normal((5, 3)), lam)):
            w = w.astype(dtype)
            theta, info = mo.prox(f, w, lam, return_info=True)
            assert theta.dtype == dtype and info.iterations.max() == 0
            th = host(theta)
            for i in range(5):
                ref = exact_prox(f, w, lam, i)
                err2 = sum((Fr(float(a)) - b) ** 2 for a, b in zip(th[i], ref, strict=True))
                assert err2 <= Fr(float(info.error_bound[i])) ** 2, (kind, lam, i)
                # and the bound is rounding-sized: tens of eps of the magnitudes involved (the double
                # well's carries its Lipschitz constant lam/(lam - L), at most 11 here)
                size = np.linalg.norm(w[i].astype(float)) + np.linalg.norm(th[i].astype(float)) + 1 + 1 / lam
                assert info.error_bound[i] <= 600 * eps(dtype) * size


def test_double_well_bound_near_its_threshold():
    """lam just above max L: the prox's Lipschitz constant lam/(lam - L) is 1e6, and the bound says so."""
    f = DoubleWell(np.array([[0.1, -0.2]]), 1.0, np.array([1.0, 0.5]))
    lam = 1.000001
    w = np.array([[0.1 + 2e-7, -0.3]])
    theta, info = mo.prox(f, w, lam, return_info=True)
    ref = exact_prox(f, w, lam, 0)
    err2 = sum((Fr(float(a)) - b) ** 2 for a, b in zip(host(theta)[0], ref, strict=True))
    assert err2 <= Fr(float(info.error_bound[0])) ** 2


# -- scipy on the prox objective ---------------------------------------------------------------
def scalar_piece(f, i, k):
    """``g_k`` of entry ``i`` as an exact function of one rational coordinate (the docstrings' formulas)."""
    p = {
        n: Fr(float(np.broadcast_to(host(getattr(f, n)), f.batch_shape + (f.dim,))[i, k]))
        for n in ("s", "c", "delta", "a", "L")
        if hasattr(f, n)
    }
    if isinstance(f, AbsoluteValue):
        return lambda x: p["c"] * abs(x - p["s"])
    if isinstance(f, Huber):

        def h(x):
            z = abs(x - p["s"])
            return p["c"] * (z * z / (2 * p["delta"]) if z <= p["delta"] else z - p["delta"] / 2)

        return h

    def g(x):
        z = abs(x - p["s"])
        return p["L"] * (p["a"] ** 2 / 4 - z * z / 2) if z <= p["a"] / 2 else p["L"] / 2 * (z - p["a"]) ** 2

    return g


def _brent(phi, x0):
    """Brent's minimizer of ``phi`` (exact rational values), in two passes: a float objective
    resolves its minimizer only to sqrt(eps) (the values flatten), so the second pass
    minimizes ``phi - phi(x1)``, rounded once from exact arithmetic, near the first answer x1."""
    x = x0
    for _ in range(2):
        ref = phi(Fr(x))
        r = so.minimize_scalar(
            lambda v, ref=ref: float(phi(Fr(v)) - ref),
            bracket=(x - 1.0, x + 1.0),
            method="brent",
            options={"xtol": 1e-14, "maxiter": 2000},
        )
        x = float(r.x)
    return x


def scipy_prox(f, w, lam, i):
    mu = float(np.broadcast_to(host(f.mu), f.batch_shape)[i])
    if isinstance(f, Hinge):
        # the epigraph QP: min c xi + mu/2 |th|^2 + lam/2 |th - w|^2 s.t. xi >= 0, xi >= 1 - b^T th
        b, c = host(f.b)[i], float(np.broadcast_to(host(f.c), f.batch_shape)[i])
        d = f.dim

        def obj(v):
            return c * v[d] + mu / 2 * v[:d] @ v[:d] + lam / 2 * np.sum((v[:d] - w[i]) ** 2)

        def jac(v):
            return np.concatenate([mu * v[:d] + lam * (v[:d] - w[i]), [c]])

        cons = [
            {"type": "ineq", "fun": lambda v: v[d], "jac": lambda v: np.eye(d + 1)[d]},
            {
                "type": "ineq",
                "fun": lambda v: v[d] - 1 + b @ v[:d],
                "jac": lambda v: np.concatenate([b, [1.0]]),
            },
        ]
        v0 = np.concatenate([w[i], [max(0.0, 1 - b @ w[i])]])
        r = so.minimize(
            obj, v0, jac=jac, constraints=cons, method="SLSQP", options={"ftol": 1e-16, "maxiter": 500}
        )
        return r.x[:d]
    out = []
    mu, lam = Fr(mu), Fr(float(lam))
    for k in range(f.dim):
        g, wk = scalar_piece(f, i, k), Fr(float(w[i, k]))
        out.append(
            _brent(lambda x, g=g, wk=wk: g(x) + mu / 2 * x * x + lam / 2 * (x - wk) ** 2, float(w[i, k]))
        )
    return np.array(out)


@pytest.mark.parametrize("mu", [0.0, 0.4], ids=["mu0", "ridge"])
@pytest.mark.parametrize("kind", KINDS)
def test_prox_matches_scipy(kind, mu):
    rng = np.random.default_rng(5)
    f = make(kind, rng, mu=mu)
    for lam in (0.2, 1.0, 7.0):
        lam = lam_ok(f, lam)
        w = rng.standard_normal((5, 3)) * 2
        theta = host(mo.prox(f, w, lam))
        for i in range(5):
            np.testing.assert_allclose(theta[i], scipy_prox(f, w, lam, i), rtol=0, atol=SCIPY_ATOL)


# -- optimality conditions, written out -----------------------------------------------------
@pytest.mark.parametrize("mu", [0.0, 0.4], ids=["mu0", "ridge"])
@pytest.mark.parametrize("kind", KINDS)
def test_prox_optimality_condition(kind, mu):
    """``r = lam (w - theta) - mu theta`` lies in the subdifferential of g at theta."""
    rng = np.random.default_rng(8)
    f = make(kind, rng, m=10, mu=mu)
    lam = lam_ok(f, 1.5)
    w = np.concatenate(
        [rng.standard_normal((5, 3)) * 3, breakpoints(f, rng.standard_normal((10, 3)), lam)[5:]]
    )
    theta = host(mo.prox(f, w, lam))
    r = lam * (w - theta) - mu * theta
    at = 50 * eps(np.float64) * (1 + lam * (np.abs(w) + np.abs(theta)))
    if kind == "abs":
        c, s = np.broadcast_to(host(f.c), (10, 3)), np.broadcast_to(host(f.s), (10, 3))
        kink = theta == s
        assert kink.any() and (~kink).any()
        assert np.all(np.where(kink, np.abs(r) <= c + at, np.abs(r - c * np.sign(theta - s)) <= at))
    elif kind == "hinge":
        b, c = np.broadcast_to(host(f.b), (10, 3)), np.broadcast_to(host(f.c), (10,))
        t = -np.sum(r * b, axis=-1) / (c * np.sum(b * b, axis=-1))  # r = -c t b
        np.testing.assert_allclose(r, -(c * t)[:, None] * b, atol=1e-12)
        m = np.sum(b * theta, axis=-1)
        assert np.all((t >= -1e-12) & (t <= 1 + 1e-12))
        assert np.all(np.where(m > 1 + 1e-12, np.abs(t) <= 1e-12, True))
        assert np.all(np.where(m < 1 - 1e-12, np.abs(t - 1) <= 1e-12, True))
        assert np.any(np.abs(m - 1) < 1e-12)  # some prox lands on the kink b^T theta = 1
    else:  # smooth: the gradient of g vanishes against r (g's gradient checked by finite differences)
        np.testing.assert_allclose(host(f.grad(theta)) - mu * theta, r, atol=1e-12)


def test_double_well_matches_the_pfedme_closed_form():
    """A third voice: analysis/pfedme/double_wells.prox, written independently for pFedMe."""
    from moreau.analysis.pfedme import double_wells as dw

    rng = np.random.default_rng(2)
    s = rng.standard_normal((1, 4, 3))
    w = rng.standard_normal((1, 3)) * 2
    f = DoubleWell(s[0], 0.8, 1.3)
    np.testing.assert_allclose(host(mo.prox(f, w, 2.0)), dw.prox(w, s, [0.8], [1.3], [2.0])[0], atol=1e-14)


# -- derivatives ---------------------------------------------------------------------------------
def _fd_grad(fun, w, h=1e-6):
    g = np.zeros_like(w)
    for k in range(w.shape[-1]):
        e = np.zeros_like(w)
        e[..., k] = h
        g[..., k] = (host(fun(w + e)) - host(fun(w - e))) / (2 * h)
    return g


def _far_from_kinks(f, w, lam, gap=1e-3):
    """Rows of ``w`` at least ``gap`` away from every breakpoint of the envelope's gradient."""
    mu = np.broadcast_to(host(f.mu), f.batch_shape)[:, None]
    w2 = w * lam / (lam + mu)
    if isinstance(f, Hinge):  # tau = clip((1 - b^T w2)/|b|^2, 0, c/(lam + mu)) breaks at two margins
        b, c = host(f.b), np.broadcast_to(host(f.c), f.batch_shape)
        short = 1 - np.sum(b * w2, axis=-1)
        return (np.abs(short) > gap) & (np.abs(short - c / (lam + mu[:, 0]) * np.sum(b * b, axis=-1)) > gap)
    s = np.broadcast_to(host(f.s), w.shape)
    if isinstance(f, AbsoluteValue):  # |z| = c/(lam + mu), where the prox leaves the kink
        edge, z = np.broadcast_to(host(f.c), w.shape) / (lam + mu), np.abs(w2 - s)
    else:  # Huber: |theta - s| = delta; double well: |theta - s| = a/2
        edge = host(f.delta) if isinstance(f, Huber) else host(f.a) / 2
        z = np.abs(host(mo.prox(f, w, lam)) - s)
    return np.all(np.abs(z - edge) > gap, axis=-1)


@pytest.mark.parametrize("mu", [0.0, 0.3], ids=["mu0", "ridge"])
@pytest.mark.parametrize("kind", KINDS)
def test_envelope_gradient_matches_finite_differences(kind, mu):
    rng = np.random.default_rng(4)
    f = make(kind, rng, m=8, mu=mu)
    lam = lam_ok(f, 2.0)
    F = mo.envelope(f, lam)
    w = rng.standard_normal((8, 3)) * 1.5
    ok = _far_from_kinks(f, w, lam)
    assert ok.sum() >= 3
    g = host(F.grad(w))
    # h = 1e-6: the envelope is piecewise quadratic, so central differences are exact up to
    # rounding (eps |F| / h ~ 1e-10) when no breakpoint lies within h
    np.testing.assert_allclose(g[ok], _fd_grad(F.value, w)[ok], atol=1e-7)
    np.testing.assert_allclose(g, lam * (w - host(mo.prox(f, w, lam))), atol=1e-13)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(6)
    f = make(kind, rng, m=8, mu=0.2)
    w = rng.standard_normal((8, 3)) * 1.5
    fd = _fd_grad(f.value, w)
    np.testing.assert_allclose(host(f.grad(w)), fd, atol=1e-7)  # kinks are a null set: no draw hits one
    if kind in ("huber", "double_well"):  # the a.e. Hessian, diagonal
        H = host(f.hess(w))
        fd2 = np.stack([_fd_grad(lambda v, k=k: f.grad(v)[..., k], w) for k in range(3)], axis=-2)
        np.testing.assert_allclose(H, fd2, atol=1e-6)


@pytest.mark.parametrize("kind", ["abs", "hinge"])
def test_gradient_is_the_minimum_norm_subgradient(kind):
    """At a kink, grad is the limit of the envelope gradient as lam grows (the min-norm subgradient)."""
    if kind == "abs":
        f = AbsoluteValue(np.array([[1.0, -2.0, 0.5]]), np.array([0.3, 5.0, 0.1]), mu=0.4)
        x = np.array([[1.0, -2.0, 0.5]])  # every coordinate on its kink
        expect = np.array([[0.4 - 0.3, 0.0, 0.2 - 0.1]])  # mu s - clip(mu s, -c, c)
    else:
        f = Hinge(np.array([[2.0, 0.0, 0.0]]), 1.0, c=1.0, mu=0.5)
        x = np.array([[0.5, 1.0, -1.0]])  # margin exactly 1
        expect = 0.5 * x - 0.125 * np.array([[2.0, 0.0, 0.0]])  # t = mu/(c |b|^2) = 1/8
    assert_close(f.grad(x), expect)
    for lam in (1e6, 1e9):  # the envelope gradient is off by a relative mu/lam
        np.testing.assert_allclose(host(mo.envelope(f, lam).grad(x)), expect, rtol=0, atol=10 / lam)


def test_envelope_of_abs_is_huber():
    rng = np.random.default_rng(1)
    s, c, lam = rng.standard_normal((4, 3)), rng.uniform(0.5, 2, (4, 3)), 1.7
    w = rng.standard_normal((4, 3)) * 2
    F, H = mo.envelope(AbsoluteValue(s, c), lam), Huber(s, c / lam, c)
    assert_close(F.value(w), H.value(w), factor=10)
    assert_close(F.grad(w), H.grad(w), factor=10)


def test_envelope_nesting():
    """envelope(envelope(f, 2), 3) is envelope(f, 6/5): the exact prox serves Envelope._solve."""
    rng = np.random.default_rng(9)
    for kind in KINDS:
        f = make(kind, rng, mu=0.1)
        lam = lam_ok(f, 2.0)
        w = rng.standard_normal((5, 3))
        inner = lam * 3 / (lam + 3)
        if inner <= float(np.max(host(f.weak_convexity()))):
            continue
        nested, direct = mo.envelope(mo.envelope(f, lam), 3.0), mo.envelope(f, inner)
        assert_close(nested.value(w), direct.value(w), factor=100)
        assert_close(nested.grad(w), direct.grad(w), factor=100)
        _, info = mo.prox(mo.envelope(f, lam), w, 3.0, return_info=True)
        assert np.all(info.error_bound < 1e-12)


def test_huber_envelope_hessian():
    rng = np.random.default_rng(3)
    f = Huber(rng.standard_normal((4, 3)), 0.5, 2.0)
    F = mo.envelope(f, 3.0)
    w = rng.standard_normal((4, 3)) * 2
    fd2 = np.stack([_fd_grad(lambda v, k=k: F.grad(v)[..., k], w) for k in range(3)], axis=-2)
    np.testing.assert_allclose(host(F.hess(w)), fd2, atol=1e-6)
    with pytest.raises(TypeError, match="no Hessian"):
        mo.envelope(make("abs", rng, m=4), 1.0).hess(w)


# -- constants and flags --------------------------------------------------------------------------
def test_curvature_bounds_and_flags():
    s = np.zeros((2, 3))
    cases = [
        (AbsoluteValue(s, np.array([[1.0, 0, 0], [0, 0, 0]]), mu=0.5), [0.5, 0.5], [np.inf, 0.5]),
        (Hinge(np.array([[1.0, 0, 0], [0, 0, 0]]), 1.0), [0, 0], [np.inf, 0]),
        (
            Huber(s, np.array([0.5, 0.25, 1.0]), c=np.array([1.0, 1.0, 3.0]), mu=np.array([0.0, 1.0])),
            [0, 1],
            [4, 5],
        ),
        (DoubleWell(s, 1.0, np.array([1.0, 3.0, 2.0]), mu=np.array([0.0, 4.0])), [-3, 1], [3, 7]),
    ]
    for f, lo, hi in cases:
        got = f.curvature_bounds()
        np.testing.assert_array_equal(host(got[0]), lo)
        np.testing.assert_array_equal(host(got[1]), hi)
        np.testing.assert_array_equal(f.smooth, np.isfinite(hi))
        np.testing.assert_array_equal(f.convex, np.array(lo) >= 0)
        np.testing.assert_array_equal(f.strongly_convex, np.array(lo) > 0)
        np.testing.assert_array_equal(host(f.smoothness()), np.maximum(np.abs(lo), np.abs(hi)))
        np.testing.assert_array_equal(host(f.weak_convexity()), np.maximum(-np.array(lo, float), 0))


def test_bounds_are_attained():
    """hi (Huber) and lo, hi (double well) are the Hessian's values somewhere: exact, not loose."""
    hu = Huber(np.array([0.0, 1.0]), np.array([0.5, 2.0]), c=np.array([1.0, 1.0]))
    assert np.max(np.diagonal(host(hu.hess(np.array([0.0, 1.0]))))) == host(hu.curvature_bounds()[1])
    assert np.min(np.diagonal(host(hu.hess(np.array([9.0, 9.0]))))) == host(hu.curvature_bounds()[0])
    dw = DoubleWell(np.zeros(2), 1.0, np.array([1.0, 2.0]))
    diag = np.diagonal(host(dw.hess(np.array([[0.0, 0.0], [5.0, 5.0]]))), axis1=-2, axis2=-1)
    assert diag.min() == host(dw.curvature_bounds()[0]) and diag.max() == host(dw.curvature_bounds()[1])


def test_envelope_of_a_nonsmooth_objective_is_lam_smooth():
    F = mo.envelope(AbsoluteValue(np.zeros(3)), 2.0)
    lo, hi = F.curvature_bounds()
    assert float(host(lo)) == 0 and float(host(hi)) == 2.0


# -- batching, dtypes, backends ------------------------------------------------------------------
def params(f):
    """The constructor arguments of ``f`` (host arrays), ``mu`` as a keyword."""
    names = {
        AbsoluteValue: ("s", "c"),
        Hinge: ("a", "y", "c"),
        Huber: ("s", "delta", "c"),
        DoubleWell: ("s", "a", "L"),
    }
    return [host(getattr(f, n)) for n in names[type(f)]], host(f.mu)


def client(f, i):
    """Client ``i`` of ``f`` (batch ``(m,)``) as an objective of batch ``(1,)``."""
    args, mu = params(f)
    cut = [
        np.broadcast_to(a, f.batch_shape + a.shape[len(f.batch_shape) :] if a.ndim else f.batch_shape)[
            i : i + 1
        ]
        if a.ndim >= len(f.batch_shape) and a.ndim
        else a
        for a in args
    ]
    return type(f)(*cut, mu=np.broadcast_to(mu, f.batch_shape)[i : i + 1])


@pytest.mark.parametrize("kind", KINDS)
def test_batched_lam_sweep_equals_loop(kind):
    rng = np.random.default_rng(12)
    f = make(kind, rng, m=4, mu=np.array([0.0, 0.1, 0.0, 0.3]))
    lams = np.array([lam_ok(f, x) for x in (0.5, 2.0, 9.0)])
    w = rng.standard_normal((4, 3))
    theta, info = mo.prox(f, w, lams[:, None], return_info=True)
    assert theta.shape == (3, 4, 3) and info.error_bound.shape == (3, 4)
    env = mo.envelope(f, lams[:, None])
    assert env.batch_shape == (3, 4)
    v, g = host(env.value(w)), host(env.grad(w))
    for i in range(4):
        one = client(f, i)
        for j, lam in enumerate(lams):
            assert_close(theta[j, i], host(mo.prox(one, w[i], float(lam)))[0])
            assert_close(v[j, i], host(mo.envelope(one, float(lam)).value(w[i]))[0])
            assert_close(g[j, i], host(mo.envelope(one, float(lam)).grad(w[i]))[0])
    assert mo.prox(f, w[0], lams[0]).shape == (4, 3)  # one point shared by the batch: w of shape (d,)


@pytest.mark.parametrize("kind", KINDS)
def test_float32_keeps_dtype_and_agrees(kind):
    rng = np.random.default_rng(13)
    f32 = make(kind, rng, dtype=np.float32)
    f64 = make(kind, np.random.default_rng(13), dtype=np.float64)
    w = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    lam = lam_ok(f64, 1.3)
    for out32, out64 in (
        (mo.prox(f32, w, lam), mo.prox(f64, w.astype(float), lam)),
        (mo.envelope(f32, lam).grad(w), mo.envelope(f64, lam).grad(w.astype(float))),
        (f32.value(w), f64.value(w.astype(float))),
    ):
        assert out32.dtype == np.float32
        # the float32 parameters are the float64 ones rounded (u relative), moved by the
        # prox's Lipschitz constant (<= 11 here): within 100 tol(float32) of the magnitudes
        assert_close(out32, out64, dtype=np.float32, factor=100, scale=1 + float(np.max(np.abs(out64))))


@pytest.mark.parametrize("kind", KINDS)
def test_backends(kind, xp):
    rng = np.random.default_rng(14)
    f_np = make(kind, rng, mu=0.2)
    w_np = rng.standard_normal((5, 3))
    args, _ = params(f_np)
    f = type(f_np)(*(xp.asarray(a) for a in args), mu=xp.asarray(0.2))
    w = xp.asarray(w_np)
    lam = lam_ok(f_np, 1.1)
    theta, info = mo.prox(f, w, lam, return_info=True)
    F = mo.envelope(f, lam)
    for out, ref in (
        (theta, mo.prox(f_np, w_np, lam)),
        (F.grad(w), mo.envelope(f_np, lam).grad(w_np)),
        (F.value(w), mo.envelope(f_np, lam).value(w_np)),
        (f.grad(w), f_np.grad(w_np)),
    ):
        assert type(out) is type(w) and out.dtype == w.dtype
        assert_close(out, ref, factor=10)
    np.testing.assert_allclose(
        info.error_bound, mo.prox(f_np, w_np, lam, return_info=True)[1].error_bound, rtol=1e-12
    )
    np.testing.assert_array_equal(f.convex, f_np.convex)


def test_tol_below_the_rounding_level_raises():
    f = make("abs", np.random.default_rng(0))
    w = np.ones((5, 3))
    _, info = mo.prox(f, w, 1.0, tol=1e-10, return_info=True)
    assert np.all(info.tol == 1e-10) and np.all(info.error_bound <= 1e-10)
    with pytest.raises(mo.ProxConvergenceError, match="rounding level"):
        mo.prox(f, w, 1.0, tol=1e-300)


# -- bad input ------------------------------------------------------------------------------------
Z = np.zeros((2, 3))
BAD = [
    ("abs-c-negative", lambda: AbsoluteValue(Z, -1.0), "c must be >= 0"),
    ("abs-c-shape", lambda: AbsoluteValue(Z, np.ones(4)), "c must broadcast"),
    ("abs-s-scalar", lambda: AbsoluteValue(1.0), "s must have shape (..., d)"),
    ("abs-mu-negative", lambda: AbsoluteValue(Z, mu=-0.1), "mu must be >= 0"),
    ("abs-mu-shape", lambda: AbsoluteValue(Z, mu=np.ones(3)), "mu shape"),
    ("abs-s-nan", lambda: AbsoluteValue(np.array([np.nan, 1.0])), "s must be finite"),
    ("hinge-y", lambda: Hinge(Z, np.array([1.0, 2.0])), "y must hold labels"),
    ("hinge-c", lambda: Hinge(Z, 1.0, c=-1.0), "c must be >= 0"),
    ("hinge-shapes", lambda: Hinge(Z, np.ones(3)), "batch shapes do not broadcast"),
    ("huber-delta-zero", lambda: Huber(Z, 0.0), "delta must be > 0"),
    ("huber-c", lambda: Huber(Z, 1.0, c=-2.0), "c must be >= 0"),
    ("well-a", lambda: DoubleWell(Z, 0.0, 1.0), "a must be > 0"),
    ("well-L", lambda: DoubleWell(Z, 1.0, -1.0), "L must be > 0"),
    ("well-lam-below-L", lambda: mo.prox(DoubleWell(Z, 1.0, 2.0), Z, 1.5), "needs lam > 2"),
    ("well-envelope-lam", lambda: mo.envelope(DoubleWell(Z, 1.0, 2.0, mu=0.5), 1.0), "needs lam > 1.5"),
    ("prox-lam-zero", lambda: mo.prox(AbsoluteValue(Z), Z, 0.0), "lam must be > 0"),
    ("prox-lam-nan", lambda: mo.prox(Huber(Z, 1.0), Z, float("nan")), "lam must be a finite number"),
    ("prox-w-shape", lambda: mo.prox(Hinge(Z, 1.0), np.ones((2, 4)), 1.0), "w must have shape"),
    ("prox-lam-shape", lambda: mo.prox(AbsoluteValue(Z), Z, np.ones(3)), "lam batch shape"),
    ("tol-negative", lambda: mo.prox(AbsoluteValue(Z), Z, 1.0, tol=-1.0), "tol must be finite and > 0"),
]


@pytest.mark.parametrize("call, fragment", [pytest.param(c, m, id=i) for i, c, m in BAD])
def test_bad_input(call, fragment):
    with pytest.raises(ValueError) as exc:
        call()
    msg = str(exc.value)
    assert fragment in msg and "\n" not in msg


def test_degenerate_and_extreme_parameters():
    """Zero weights, a zero sample, lam * delta overflowing or underflowing: exact results, no NaN."""
    w = np.array([[0.5, -2.0, 3.0], [1.0, 1.0, 1.0]])
    h = Hinge(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]), 1.0)  # the first loss is the constant c
    assert np.array_equal(host(mo.prox(h, w, 1.0))[0], w[0])
    np.testing.assert_array_equal(h.smooth, [True, False])
    ab = AbsoluteValue(np.zeros(3), np.array([0.0, 1.0, 0.0]))
    assert np.array_equal(host(mo.prox(ab, w, 2.0))[:, [0, 2]], w[:, [0, 2]])
    hu = Huber(np.zeros((2, 3)), np.array([1e10, 1e-200, 1.0]), c=np.array([1.0, 1.0, 0.0]))
    for lam in (1e300, 1e-300):
        theta, info = mo.prox(hu, w, lam, return_info=True)
        for i in range(2):
            ref = exact_prox(hu, w, lam, i)
            err2 = sum((Fr(float(a)) - b) ** 2 for a, b in zip(host(theta)[i], ref, strict=True))
            assert err2 <= Fr(float(info.error_bound[i])) ** 2 and info.error_bound[i] < 1e-14


# -- the instance families of the checkers -------------------------------------------------------
@pytest.mark.parametrize("kind", ["abs", "hinge", "huber", "weakly_convex"])
def test_nonsmooth_batch_flags_match_the_objectives(kind):
    from moreau.analysis.engine import nonsmooth_instances as ni

    batch = ni.nonsmooth_batch(np.random.default_rng(0), 8, 3, kind)
    assert all(v.shape[0] == 8 for v in batch.values())
    f = ni.objective(batch)
    assert f.batch_shape == (8,) and ni.kind_of(batch) == kind
    lo, hi = (host(x) for x in f.curvature_bounds())
    np.testing.assert_array_equal(batch["lo"], lo)
    np.testing.assert_array_equal(batch["hi"], hi)
    for a in ni.ASSUMPTIONS:
        np.testing.assert_array_equal(batch[a], getattr(f, a))
    np.testing.assert_array_equal(batch["weak_convexity"], host(f.weak_convexity()))
    one = ni.objective(batch, idx=slice(2, 3))
    assert one.batch_shape == (1,)
    # each kind drops what the module docstring says, with the default mu
    expect = {
        "abs": (False, True, None),
        "hinge": (False, True, None),
        "huber": (True, True, False),
        "weakly_convex": (True, False, False),
    }[kind]
    for a, e in zip(ni.ASSUMPTIONS, expect, strict=True):
        if e is not None:
            assert np.all(batch[a] == e), a
    if kind in ("abs", "hinge"):  # half strongly convex: smoothness is the only assumption dropped
        assert batch["strongly_convex"].any() and not batch["strongly_convex"].all()
    np.testing.assert_array_equal(ni.applicable(batch, "convex", "strongly_convex"), batch["strongly_convex"])
    w = np.random.default_rng(1).standard_normal((8, 3))
    lam = 1.1 * float(np.max(batch["weak_convexity"])) + 0.5
    assert np.all(np.isfinite(host(mo.envelope(f, lam).grad(w))))


def test_nonsmooth_batch_bad_arguments():
    from moreau.analysis.engine import nonsmooth_instances as ni

    rng = np.random.default_rng(0)
    for call, fragment in [
        (lambda: ni.nonsmooth_batch(rng, 4, 2, "relu"), "kind must be one of"),
        (lambda: ni.nonsmooth_batch(rng, 0, 2, "abs"), "T must be an integer >= 1"),
        (lambda: ni.nonsmooth_batch(rng, 4, 2.5, "abs"), "d must be an integer >= 1"),
        (lambda: ni.nonsmooth_batch(rng, 4, 2, "abs", mu=-1.0), "mu must be finite and >= 0"),
        (lambda: ni.nonsmooth_batch(rng, 4, 2, "abs", mu=np.ones(3)), "mu must be a number"),
        (lambda: ni.applicable(ni.nonsmooth_batch(rng, 4, 2, "abs"), "lipschitz"), "assumptions"),
        (lambda: ni.objective({"mu": np.zeros(2)}), "no instance family"),
    ]:
        with pytest.raises(ValueError, match=fragment):
            call()
    b = ni.nonsmooth_batch(rng, 4, 2, "weakly_convex", mu=20.0)  # mu above every L: convex again
    assert b["convex"].all() and b["strongly_convex"].all() and np.all(b["weak_convexity"] == 0)


@pytest.mark.parametrize("cls", [AbsoluteValue, Hinge, Huber, DoubleWell], ids=lambda c: c.__name__)
def test_docstring_formula_is_the_code(cls):
    """The ``Formula (sympy)`` line of each docstring, evaluated, is what the code computes (d = 1)."""
    import sympy as sp

    from moreau import symbolic

    ((name, expr),) = symbolic.docstring_formulas(cls).items()
    p = {"s": 0.3, "c": 0.7, "delta": 0.5, "a": 1.2, "L": 0.8, "y": -1.0, "lam": 2.0}
    args = {
        AbsoluteValue: ([p["s"]], p["c"]),
        Hinge: ([p["a"]], p["y"], p["c"]),
        Huber: ([p["s"]], p["delta"], p["c"]),
        DoubleWell: ([p["s"]], p["a"], p["L"]),
    }[cls]
    f = cls(*args)
    syms = sorted(expr.free_symbols, key=str)
    formula = sp.lambdify(syms, expr, "math")
    checked = 0
    for w in np.linspace(-3, 3, 61):
        theta = float(host(mo.prox(f, [w], p["lam"]))[0])
        got = {"prox": theta, "tau": (theta - w) / (p["y"] * p["a"]), "prox_inside": theta}[name]
        inside = {
            Huber: abs(w - p["s"]) <= p["delta"] + p["c"] / p["lam"],
            DoubleWell: abs(w - p["s"]) <= p["a"] * (p["lam"] - p["L"]) / (2 * p["lam"]),
        }.get(cls, True)
        if inside:
            values = {str(x): (w if str(x) == "w" else p[str(x)]) for x in syms}
            assert got == pytest.approx(formula(**values), abs=1e-14)
            checked += 1
    assert checked >= 5
