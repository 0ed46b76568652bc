"""Properties of prox and envelopes on hypothesis-drawn objectives (``moreau.strategies``).

Tolerances are derived per example from what the library certifies
(``ProxInfo``), the problem's curvature and condition number, and the dtype
table in ``_tol.py``; see :func:`cert` for the one modelling constant.
"""

from __future__ import annotations

import numpy as np
import pytest
from _fd import assert_derivative, rounding
from _reference import LongLogistic, refine, scipy_prox
from _tol import assert_close, eps, host, tol, vnorm
from hypothesis import given
from hypothesis import strategies as st

import moreau as mo
from moreau import strategies as ms

norm = vnorm
KINDS = sorted(ms.KINDS)
#: The default Newton tolerance models the rounding of grad h as 4 eps x (magnitude of its
#: terms): a first-order model, not a rigorous bound.  Against a longdouble reference it held on
#: 1200 random problems (worst: 0.9x) and on every hypothesis run, so certificates take it at its
#: word (factor 1).  Raise this, with the counterexample in a comment, if one ever appears.
ROUNDING_MODEL = 1.0
TINY = float(np.finfo(np.float64).tiny)  # absorbs underflow (subnormal results carry absolute errors)

any_quadratic = st.sampled_from(KINDS).flatmap(lambda k: ms.quadratics(kind=k))
logistic = st.floats(0.0, 1.0).flatmap(lambda mu: ms.logistic_problems(mu=mu, padding=True))
lams_with_ends = st.one_of(st.sampled_from([1e-4, 1e4]), ms.lams())


def cert(info, theta, w, dtype):
    """Bound on ``|theta - prox(w)|`` for a returned Newton ``theta`` in floating point.

    ``error_bound`` is the residual bound evaluated in floating point at theta: it certifies
    up to the rounding of ``grad h`` itself (ProxInfo's doc), which the default ``tol``
    models (see ROUNDING_MODEL).  When Newton iterates on the displacement (lam >= L) the
    returned ``theta = w + u`` adds one rounding, ``eps |theta|``.  ``tiny`` absorbs
    underflow.  (``w`` is unused: kept so call sites state which point was proxed.)
    """
    return (
        ROUNDING_MODEL * np.maximum(info.error_bound, info.tol)
        + eps(dtype) * norm(host(theta), axis=-1)
        + np.finfo(np.dtype(dtype)).tiny
    )


def flush_tiny(f, *points):
    """``(f, *points)`` with entries below ``sqrt(tiny)/eps`` flushed to zero (f rebuilt if needed).

    Hypothesis draws such numbers (1e-200 is a normal float64); their squared norms underflow,
    the default Newton tolerance reads 0 and the prox raises ProxConvergenceError (a known
    limitation, pinned by test_certificate_survives_tiny_data).  Flushing keeps every drawn
    example (no filtering) in the range the certificate covers.
    """
    X = host(f.X)
    limit = np.sqrt(np.finfo(X.dtype).tiny) / eps(X.dtype)
    flush = lambda a: np.where(np.abs(a) < limit, np.zeros_like(a), a)  # noqa: E731
    if np.any(flush(X) != X):
        f = mo.Logistic(flush(X), host(f.y), mu=host(f.mu), weights=host(f.weights))
    return (f,) + tuple(flush(host(p)) for p in points)


def valid_lam(f, lam):
    """Shift a drawn lam above the nonconvexity bound ``-strong_convexity``."""
    return lam + max(0.0, -float(np.min(host(f.strong_convexity()))))


def q_parts(q):
    return host(q.A), host(q.b), host(q.c)


def quad_cond(A, lam):
    return np.linalg.cond(A + lam * np.eye(A.shape[-1]))


# -- optimality -------------------------------------------------------------------------


@given(q=any_quadratic, lam=ms.lams(), data=st.data())
def test_quadratic_prox_optimality(q, lam, data):
    w = data.draw(ms.points(q))
    lam = valid_lam(q, lam)
    theta, info = mo.prox(q, w, lam, return_info=True)
    A, b, _ = q_parts(q)
    r = A @ theta - b + lam * (theta - w)
    # backward error of a stable solve: eps-level relative to the terms of the equation,
    # (|A| + lam)|theta| + |b| + lam |w| (A + lam I is itself formed with rounding eps(|A| + lam))
    terms = (np.linalg.norm(A, 2) + lam) * norm(theta) + norm(b) + lam * norm(w)
    assert norm(r) <= tol(np.float64) * terms
    # and the certificate reports the same residual level
    assert info.error_bound * (lam + float(q.strong_convexity())) <= tol(np.float64) * terms


@given(f=logistic, lam=lams_with_ends, data=st.data())
def test_logistic_prox_optimality(f, lam, data):
    w = data.draw(ms.points(f))
    f, w = flush_tiny(f, w)
    theta, info = mo.prox(f, w, lam, return_info=True)
    mu, L = float(f.mu), float(f.smoothness())
    assert info.error_bound <= info.tol
    r = host(f.grad(theta)) + lam * (theta - w)
    # |grad h(theta)| <= (lam+mu) * (certified distance of the iterate) + (L+lam) * rounding of
    # theta = w + u (see cert), plus the rounding of evaluating r here (terms: |x_j| per
    # sample, mu|theta|, lam(|theta|+|w|))
    X = host(f.X)
    terms = np.mean(norm(X, axis=-1)) + mu * norm(theta) + lam * (norm(theta) + norm(w))
    bound = (
        (lam + mu) * ROUNDING_MODEL * info.tol + (L + lam) * eps(np.float64) * norm(theta) + rounding(terms)
    )
    assert norm(r) <= bound
    # the default tolerance itself is eps-level (cannot be loosened without failing here)
    assert (
        info.tol
        <= tol(np.float64) * (norm(theta) + norm(w) + (terms + L * (norm(theta) + norm(w))) / (lam + mu))
        + TINY
    )


# -- firm nonexpansiveness --------------------------------------------------------------


def _firm(p, x, y, delta):
    """|p(x)-p(y)|^2 <= <p(x)-p(y), x-y> with p known to within delta per point."""
    dp, dx = p[0] - p[1], x - y
    slack = (
        4 * delta * norm(dp)
        + 4 * delta**2
        + 2 * delta * norm(dx)
        + rounding(norm(dp) ** 2 + norm(dp) * norm(dx))
    )  # rounding of the two dot products
    assert dp @ dp <= dp @ dx + slack


@given(q=ms.quadratics(kind="convex"), lam=lams_with_ends, data=st.data())
def test_firm_nonexpansive_quadratic(q, lam, data):
    x, y = data.draw(ms.points(q)), data.draw(ms.points(q))
    p = mo.prox(q, np.stack([x, y]), lam)
    A, b, _ = q_parts(q)
    delta = tol(np.float64) * quad_cond(A, lam) * np.max(norm(p, axis=-1))  # forward error of the solve
    _firm(p, x, y, delta)


@given(f=logistic, lam=lams_with_ends, data=st.data())
def test_firm_nonexpansive_logistic(f, lam, data):
    x, y = data.draw(ms.points(f)), data.draw(ms.points(f))
    f, x, y = flush_tiny(f, x, y)
    p, info = mo.prox(f, np.stack([x, y]), lam, return_info=True)
    _firm(p, x, y, np.max(cert(info, p, np.stack([x, y]), np.float64)))
    # strongly convex: the prox map is lam/(lam+mu)-Lipschitz (FedProx analysis, Lemma 2)
    mu = float(f.mu)
    delta = np.max(cert(info, p, np.stack([x, y]), np.float64))
    assert norm(p[0] - p[1]) <= lam / (lam + mu) * norm(x - y) + 2 * delta


# -- envelope: below f, same minimizers ------------------------------------------------


@given(q=ms.quadratics(kind="strongly_convex"), lam=lams_with_ends, data=st.data())
def test_envelope_below_f_with_same_minimizer_quadratic(q, lam, data):
    w = data.draw(ms.points(q))
    A, b, c = q_parts(q)
    F = mo.envelope(q, lam)
    vscale = np.linalg.norm(A, 2) * norm(w) ** 2 / 2 + norm(b) * norm(w) + abs(c)
    assert float(F.value(w)) <= float(q.value(w)) + tol(np.float64) * vscale
    x_star = np.linalg.solve(A, b)
    kA = np.linalg.cond(A)
    # the minimizer of f is a stationary point of F (grad F = lam (A+lam)^{-1}(A w - b))
    assert norm(host(F.grad(x_star))) <= tol(np.float64) * kA * lam * norm(b) / (
        lam + float(q.strong_convexity())
    )
    # ... and F's own minimizer (one Newton step: F is quadratic) is f's minimizer
    step = np.linalg.solve(host(F.hess(w)), host(F.grad(w)))
    assert_close(w - step, x_star, scale=norm(x_star) + norm(w), factor=kA * quad_cond(A, lam))
    # F(x*) = f(x*): the prox of a minimizer is itself (value terms at x*: rounding scale)
    xs_scale = np.linalg.norm(A, 2) * norm(x_star) ** 2 / 2 + norm(b) * norm(x_star) + abs(c)
    assert abs(float(F.value(x_star)) - float(q.value(x_star))) <= tol(np.float64) * xs_scale


@given(f=logistic, lam=lams_with_ends, data=st.data())
def test_envelope_below_f_logistic(f, lam, data):
    w = data.draw(ms.points(f))
    f, w = flush_tiny(f, w)
    F = mo.envelope(f, lam)
    z = host(f.margins(w))
    vscale = np.mean(np.abs(z)) + np.log(2) + float(f.mu) * norm(w) ** 2
    assert float(F.value(w)) <= float(f.value(w)) + rounding(vscale)
    theta = host(mo.prox(f, w, lam))
    assert float(F.value(w)) >= float(f.value(theta)) - rounding(vscale)


@given(f=logistic, lam=ms.lams(), gamma=ms.lams(), data=st.data())
def test_prox_of_envelope_logistic(f, lam, gamma, data):
    """v = prox of F = envelope(f, lam) with parameter gamma satisfies grad F(v) + gamma (v - w) = 0."""
    w = data.draw(ms.points(f))
    f, w = flush_tiny(f, w)
    F = mo.envelope(f, lam)
    v, info_v = mo.prox(F, w, gamma, return_info=True)
    _, info_in = mo.prox(f, v, lam, return_info=True)  # the prox inside grad F(v)
    r = host(F.grad(v)) + gamma * (v - w)
    # v is within cert(info_v) of the exact point where r = 0 (r is (lam + gamma)-Lipschitz
    # there, F being lam-smooth); grad F(v) = lam (v - prox_f(v)) carries lam * cert(info_in)
    bound = (
        (lam + gamma) * cert(info_v, v, w, np.float64)
        + lam * cert(info_in, v, v, np.float64)
        + rounding(lam * norm(v) + gamma * (norm(v) + norm(w)))
    )
    assert norm(r) <= bound


# -- envelope derivatives by finite differences ----------------------------------------


@given(q=any_quadratic, lam=ms.lams(min_value=1e-2, max_value=1e2), data=st.data())
def test_envelope_derivatives_fd_quadratic(q, lam, data):
    w = data.draw(ms.points(q, scale=3.0))
    lam = valid_lam(q, lam)
    F = mo.envelope(q, lam)
    A, b, c = q_parts(q)
    theta = host(mo.prox(q, w, lam))
    k = quad_cond(A, lam)
    size = norm(theta) + norm(w) + 1e-3  # the FD points move w by up to 2h = 2e-4
    v_noise = rounding(k * (np.linalg.norm(A, 2) * size**2 + norm(b) * size + abs(c) + lam * size**2))
    assert_derivative(F.value, w, F.grad(w), noise=v_noise)
    assert_derivative(F.grad, w, F.hess(w), noise=rounding(k * lam * size))


@given(f=logistic, lam=ms.lams(min_value=1e-2, max_value=1e2), data=st.data())
def test_envelope_derivatives_fd_logistic(f, lam, data):
    w = data.draw(ms.points(f, scale=3.0))
    f, w = flush_tiny(f, w)
    F = mo.envelope(f, lam)
    theta, info = mo.prox(f, w, lam, return_info=True)
    size = norm(theta) + norm(w) + 1e-3
    X = host(f.X)
    v_noise = rounding(np.mean(norm(X, axis=-1)) * size + 1 + float(f.mu) * size**2 + lam * size**2)
    # grad F = -lam u: each evaluation is off by lam times the certified error of u
    g_noise = lam * (2 * cert(info, theta, w, np.float64) + eps(np.float64) * size) + rounding(lam * size)
    assert_derivative(F.value, w, F.grad(w), noise=v_noise)
    assert_derivative(F.grad, w, F.hess(w), noise=g_noise)
    # hvp (solve with H v) against the Hessian just checked; |hess F| <= lam for convex f
    v = data.draw(ms.points(f, scale=1.0))
    Hv = np.einsum("...ij,...j->...i", host(F.hess(w)), v)
    assert_close(
        F.hvp(w, v),
        Hv,
        scale=lam * vnorm(v),
        factor=np.linalg.cond(host(f.hess(theta)) + lam * np.eye(f.dim)),
    )


# -- logistic prox against scipy and a longdouble reference ------------------------------


def _check_against_references(f, w, lam):
    g = LongLogistic(f)
    theta, info = mo.prox(f, w, lam, return_info=True)
    c = cert(info, theta, w, np.float64)
    # scipy trust-exact with the analytic Hessian; its own certified distance is added
    theta_sp, sp_bound = scipy_prox(g, w, lam)
    msg = f"lam={lam:g} cert={c:.3g} scipy bound={sp_bound:.3g} iterations={info.iterations}"
    assert norm(theta - theta_sp) <= c + sp_bound, msg
    # longdouble Newton refinement of scipy's answer: the high-accuracy reference
    u_ref, ref_bound = refine(g, w, lam, theta_sp)
    assert ref_bound <= 0.1 * c, msg  # sanity of the reference: 10x tighter than what it judges
    t_ref = np.asarray(w, np.longdouble) + u_ref
    assert float(norm(theta - t_ref)) <= c + ref_bound, msg
    # the displacement theta - w, not only theta (large lam: |u| << |w|); forming it adds
    # one rounding of |theta - w| and inherits theta's error
    u_err = float(norm((theta - w) - u_ref))
    assert u_err <= c + eps(np.float64) * norm(theta - w) + ref_bound, msg
    # envelope gradient -lam u: uses Newton's own displacement (rounded only when the
    # iterate is theta itself, lam < L)
    grad_err = float(norm(host(mo.envelope(f, lam).grad(w)) + lam * u_ref))
    mode_rounding = eps(np.float64) * (norm(theta) + norm(w)) if lam < float(f.smoothness()) else 0.0
    assert grad_err <= lam * (ROUNDING_MODEL * info.tol + mode_rounding + ref_bound + TINY), msg


@given(f=logistic, lam=lams_with_ends, data=st.data())
def test_logistic_prox_vs_scipy_and_longdouble(f, lam, data):
    w = data.draw(ms.points(f))
    f, w = flush_tiny(f, w)
    _check_against_references(f, w, lam)


@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0, 1e2, 1e4])
@pytest.mark.parametrize("mu", [0.0, 0.1])
def test_logistic_prox_references_fixed(lam, mu):
    rng = np.random.default_rng(11)
    f = mo.Logistic(rng.normal(size=(30, 4)) * 2, rng.choice([-1.0, 1.0], size=30), mu=mu)
    _check_against_references(f, rng.normal(size=4) * 5, lam)


@pytest.mark.slow
def test_logistic_prox_references_dense_lambda_grid():
    """The reference comparison on 20 problems x 41 lams spanning [1e-4, 1e4] (about 4 s)."""
    rng = np.random.default_rng(16)
    for _ in range(20):
        n, d = int(rng.integers(2, 40)), int(rng.integers(1, 6))
        f = mo.Logistic(
            rng.normal(size=(n, d)) * rng.choice([0.3, 1.0, 3.0]),
            rng.choice([-1.0, 1.0], size=n),
            mu=float(rng.choice([0.0, 0.01, 1.0])),
            weights=rng.uniform(0.0, 1.0, size=n) + 0.01,
        )
        w = rng.normal(size=d) * rng.choice([0.1, 1.0, 10.0])
        for lam in np.logspace(-4, 4, 41):
            _check_against_references(f, w, float(lam))


@pytest.mark.parametrize("lam", [1e2, 1e4])
def test_envelope_gradient_relative_accuracy_at_large_lam(lam):
    """At lam >> L, grad F = -lam u with |u| ~ |grad f|/lam tiny: it must still be accurate to
    eps *relative to u*.  Computing lam (w - theta) from a float theta loses |w|/|u| ~ lam ulps
    (and a Newton stopped at ulps of theta does the same: ~1e5 eps here); public prox codes are
    off by 16-82% at such lam.  The problems are well conditioned (L|w| ~ |grad f(w)|), so
    100 eps relative is a fair demand."""
    rng = np.random.default_rng(12)
    for _ in range(10):
        f = mo.Logistic(rng.normal(size=(20, 3)), rng.choice([-1.0, 1.0], size=20), mu=0.1)
        w = rng.normal(size=3) * 5
        g = LongLogistic(f)
        u_ref, ref_bound = refine(g, w, lam, scipy_prox(g, w, lam)[0])
        G = host(mo.envelope(f, lam).grad(w))
        rel = float(norm(G + lam * u_ref) / norm(lam * u_ref))
        assert rel <= tol(np.float64), f"relative error of the envelope gradient {rel:.3g}"


def test_small_theta_accurate_to_its_own_ulps():
    """lam < L: a prox much smaller than w keeps its own ulps (not rounded to ulps of |w|)."""
    f = mo.Logistic(np.zeros((2, 1)), np.array([1.0, -1.0]), mu=1.0)  # f = theta^2/2
    w, lam = np.array([1.0]), 1e-4
    for g in (f, mo.Quadratic(np.eye(1), np.zeros(1))):  # Newton and the closed form
        theta = mo.prox(g, w, lam)
        assert theta[0] == pytest.approx(lam / (lam + 1.0), rel=tol(np.float64), abs=0), type(g).__name__


def test_certificate_survives_tiny_data():
    # regression: norms inside Newton's tolerance once underflowed (squares of 1e-30 in float32)
    f = mo.Logistic(np.array([[2e-30]], dtype=np.float32), np.array([1.0], dtype=np.float32), mu=0.1)
    lam = 1e-4
    theta, info = mo.prox(f, np.zeros(1, dtype=np.float32), lam, return_info=True)
    exact = 2e-30 / 2 / (lam + 0.1)  # grad f(0) = -x/2 (one sample), f quadratic-like there
    assert abs(float(theta[0]) - exact) <= 1e-3 * exact


# -- batches, backends, dtypes -------------------------------------------------------------


def _slices(shape):
    return list(np.ndindex(*shape)) if shape else [()]


@given(
    q=st.sampled_from(KINDS).flatmap(lambda k: ms.quadratics(kind=k, batch=ms.batch_shapes(max_dims=2))),
    lam=ms.lams(),
    data=st.data(),
)
def test_batched_equals_loop_quadratic(q, lam, data):
    w = data.draw(ms.points(q))
    lam = valid_lam(q, lam)
    A, b, _ = q_parts(q)
    theta, F = host(mo.prox(q, w, lam)), mo.envelope(q, lam)
    G, H = host(F.grad(w)), host(F.hess(w))
    for i in _slices(q.batch_shape):
        qi = mo.Quadratic(A[i], b[i])
        k = quad_cond(A[i], lam)  # batched and single eigh may round differently
        assert_close(theta[i], mo.prox(qi, w[i], lam), scale=norm(theta[i]) + norm(w[i]), factor=k)
        Fi = mo.envelope(qi, lam)
        assert_close(G[i], Fi.grad(w[i]), scale=lam * (norm(theta[i]) + norm(w[i])), factor=k)
        assert_close(H[i], Fi.hess(w[i]), scale=lam, factor=k)


@given(
    f=st.floats(0.0, 1.0).flatmap(
        lambda mu: ms.logistic_problems(mu=mu, padding=True, batch=ms.batch_shapes(max_dims=2))
    ),
    lam=lams_with_ends,
    data=st.data(),
)
def test_batched_equals_loop_logistic(f, lam, data):
    w = data.draw(ms.points(f))
    f, w = flush_tiny(f, w)
    theta, info = mo.prox(f, w, lam, return_info=True)
    F = mo.envelope(f, lam)
    G, H = host(F.grad(w)), host(F.hess(w))
    n = f.X.shape[-2]
    X = np.broadcast_to(host(f.X), f.batch_shape + f.X.shape[-2:])
    y = np.broadcast_to(host(f.y), f.batch_shape + (n,))
    wts = np.broadcast_to(host(f.weights), f.batch_shape + (n,))
    c = cert(info, theta, w, np.float64)
    for i in _slices(f.batch_shape):
        fi = mo.Logistic(X[i], y[i], mu=float(f.mu), weights=wts[i])
        ti, ii = mo.prox(fi, w[i], lam, return_info=True)
        # two certified approximations of one point
        assert norm(theta[i] - ti) <= c[i] + cert(ii, ti, w[i], np.float64)
        Fi = mo.envelope(fi, lam)
        assert norm(G[i] - host(Fi.grad(w[i]))) <= lam * (c[i] + cert(ii, ti, w[i], np.float64))
        # Hessians at points within the certificates: |d hess F| <= lam * rho-type term; the
        # points agree to ~eps so the difference is rounding of the d x d solve
        assert_close(
            H[i],
            Fi.hess(w[i]),
            scale=float(host(f.smoothness())[i]),
            factor=np.linalg.cond(host(fi.hess(ti)) + lam * np.eye(f.dim)),
        )


@given(q=ms.quadratics(batch=ms.batch_shapes()), f=logistic, lam=ms.lams(), data=st.data())
def test_numpy_equals_array_api_strict(q, f, lam, data):
    xs = pytest.importorskip("array_api_strict")
    wq, wf = data.draw(ms.points(q)), data.draw(ms.points(f))
    f, wf = flush_tiny(f, wf)
    A, b, _ = q_parts(q)
    qs = mo.Quadratic(xs.asarray(A), xs.asarray(b))
    k = quad_cond(A, lam).max()  # forward error of the solves: cond x eps
    assert_close(
        mo.prox(qs, xs.asarray(wq), lam),
        mo.prox(q, wq, lam),
        factor=k,
        scale=np.max(norm(host(mo.prox(q, wq, lam)), axis=-1)) + np.max(norm(wq, axis=-1)),
    )
    assert_close(mo.envelope(qs, lam).hess(xs.asarray(wq)), mo.envelope(q, lam).hess(wq), factor=k, scale=lam)
    w_kw = (
        {}
        if f.weights.ndim == 1 and np.all(host(f.weights) == 1)
        else {"weights": xs.asarray(host(f.weights))}
    )
    fs = mo.Logistic(xs.asarray(host(f.X)), xs.asarray(host(f.y)), mu=xs.asarray(host(f.mu)), **w_kw)
    t_np, i_np = mo.prox(f, wf, lam, return_info=True)
    t_xs, i_xs = mo.prox(fs, xs.asarray(wf), lam, return_info=True)
    assert norm(host(t_xs) - t_np) <= cert(i_np, t_np, wf, np.float64) + cert(i_xs, t_xs, wf, np.float64)
    Hn, Hs = mo.envelope(f, lam).hess(wf), mo.envelope(fs, lam).hess(xs.asarray(wf))
    assert_close(Hs, Hn, scale=lam, factor=np.linalg.cond(host(f.hess(t_np)) + lam * np.eye(f.dim)))
    gn, gs = mo.meta_objective(f, 0.1).grad(wf), mo.meta_objective(fs, 0.1).grad(xs.asarray(wf))
    # scale: the summed terms of grad f (mean |x_j|, mu |w|), twice (grad f at w and at v)
    assert_close(gs, gn, scale=2 * np.mean(norm(host(f.X), axis=-1)) + float(f.mu) * norm(wf))


@given(
    q=ms.quadratics(dtype=np.float32, batch=ms.batch_shapes()),
    lam=ms.lams(min_value=1e-2, max_value=1e2),
    data=st.data(),
)
def test_float32_kept_quadratic(q, lam, data):
    w = data.draw(ms.points(q)).astype(np.float32)
    F = mo.envelope(q, lam)
    outs = {
        "value": q.value(w),
        "grad": q.grad(w),
        "hess": q.hess(w),
        "prox": mo.prox(q, w, lam),
        "env.value": F.value(w),
        "env.grad": F.grad(w),
        "env.hess": F.hess(w),
    }
    for name, out in outs.items():
        assert out.dtype == np.float32, name
    A, b, _ = q_parts(q)
    A64, b64, w64 = A.astype(np.float64), b.astype(np.float64), w.astype(np.float64)
    ref = np.linalg.solve(A64 + lam * np.eye(q.dim), (b64 + lam * w64)[..., None])[..., 0]
    # float32 forward error: cond * float32 tolerance (same data, rounded once to float32)
    assert_close(
        outs["prox"],
        ref,
        dtype=np.float32,
        factor=quad_cond(A64, lam).max(),
        scale=np.max(norm(ref, axis=-1)) + np.max(norm(w64, axis=-1)),
    )


@given(
    f=ms.logistic_problems(dtype=np.float32, mu=0.1, batch=ms.batch_shapes()),
    lam=lams_with_ends,
    data=st.data(),
)
def test_float32_kept_logistic(f, lam, data):
    w = data.draw(ms.points(f)).astype(np.float32)
    f, w = flush_tiny(f, w)
    F = mo.envelope(f, lam)
    theta, info = mo.prox(f, w, lam, return_info=True)
    for name, out in {
        "value": f.value(w),
        "grad": f.grad(w),
        "hess": f.hess(w),
        "prox": theta,
        "env.value": F.value(w),
        "env.grad": F.grad(w),
        "env.hess": F.hess(w),
    }.items():
        assert out.dtype == np.float32, name
    f64 = mo.Logistic(host(f.X).astype(np.float64), host(f.y).astype(np.float64), mu=0.1)
    t64, i64 = mo.prox(f64, w.astype(np.float64), lam, return_info=True)
    # each certified in its own precision (float32 certificate from the float32 eps)
    assert np.all(
        norm(theta - t64, axis=-1) <= cert(info, theta, w, np.float32) + cert(i64, t64, w, np.float64)
    )


# -- ProxInfo and tolerances -------------------------------------------------------------


def test_return_info_shapes_for_a_lambda_sweep():
    rng = np.random.default_rng(14)
    m, n, d = 4, 10, 3
    f = mo.Logistic(rng.normal(size=(m, n, d)), rng.choice([-1.0, 1.0], size=(m, n)), mu=0.1)
    lams = np.logspace(-4, 4, 5)[:, None]
    theta, info = mo.prox(f, rng.normal(size=(m, d)), lams, return_info=True)
    assert theta.shape == (5, m, d)
    for field in (info.iterations, info.error_bound, info.tol):
        assert isinstance(field, np.ndarray) and field.shape == (5, m)
    assert np.issubdtype(info.iterations.dtype, np.integer) and np.all(info.iterations >= 1)
    assert np.all(info.error_bound <= info.tol)
    # an explicit (reachable) tol is reported back and met
    _, info = mo.prox(f, rng.normal(size=(m, d)), 1.0, tol=1e-8, return_info=True)
    np.testing.assert_array_equal(info.tol, np.full(m, 1e-8))
    assert np.all(info.error_bound <= 1e-8)


@pytest.mark.parametrize("kind", ["logistic", "quadratic"])
def test_unreachable_tol_raises_with_error_bound(kind):
    rng = np.random.default_rng(15)
    if kind == "logistic":
        f = mo.Logistic(rng.normal(size=(3, 20, 3)) * 3, rng.choice([-1.0, 1.0], size=(3, 20)), mu=0.1)
    else:
        f = mo.Quadratic(np.eye(3) * np.array([1.0, 2.0, 3.0])[:, None, None], rng.normal(size=(3, 3)))
    w = rng.normal(size=(3, 3)) * 10
    with pytest.raises(mo.ProxConvergenceError) as exc:
        mo.prox(f, w, 1.0, tol=1e-30, max_iter=20)
    e = exc.value
    assert e.error_bound.shape == (3,) and np.all(np.isfinite(e.error_bound))
    assert np.any(e.error_bound > 1e-30) and np.all(np.asarray(e.tol) == 1e-30)
    # the bound reached is the rounding level: what a default-tolerance Newton run certifies,
    # or for the closed form the backward error of the solve over the modulus lam + a_1
    if kind == "logistic":
        level = ROUNDING_MODEL * mo.prox(f, w, 1.0, return_info=True)[1].tol
    else:
        theta = mo.prox(f, w, 1.0)
        level = tol(np.float64) * (4.0 * norm(theta, axis=-1) + norm(host(f.b) + w, axis=-1)) / (1.0 + 1.0)
    assert np.all(e.error_bound <= level)
