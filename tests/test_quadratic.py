"""Quadratic objectives: closed-form prox and envelope against numpy linear algebra.

References are computed here with ``numpy.linalg`` (solve, eigvalsh) on the
matrices the test itself built; nothing is rebuilt from moreau's code paths.
Tolerances: the dtype default (``_tol``) times ``cond(A + lam I)`` wherever two
solves are compared (forward error <= cond x backward error); backward errors
(residuals) are compared without it.
"""

from __future__ import annotations

import numpy as np
import pytest
from _tol import assert_close, tol

import moreau as mo
from moreau._newton import newton_displacement

M, D = 5, 4  # clients, dimension


def make_A(rng, spectrum, m=M, d=D):
    """Symmetric matrices ``(m, d, d)`` with eigenvalues drawn uniformly in ``spectrum``."""
    Q, _ = np.linalg.qr(rng.normal(size=(m, d, d)))
    a = rng.uniform(*spectrum, size=(m, d))
    A = Q @ (a[..., :, None] * np.swapaxes(Q, -1, -2))
    return (A + np.swapaxes(A, -1, -2)) / 2


@pytest.fixture(params=[(0.1, 10.0), (-3.0, 5.0)], ids=["convex", "nonconvex"])
def problem(request):
    rng = np.random.default_rng(0)
    A = make_A(rng, request.param)
    b, w, c = rng.normal(size=(M, D)), rng.normal(size=(M, D)) * 3, rng.normal(size=M)
    return A, b, c, w


def f_np(A, b, c, theta):
    return (
        0.5 * np.einsum("...i,...ij,...j->...", theta, A, theta) - np.einsum("...i,...i->...", b, theta) + c
    )


def lam_ok(A, scale=1.0):
    """A valid lam: ``max(0, -a_min) + scale`` (``scale`` above the nonconvexity bound)."""
    return max(0.0, -np.linalg.eigvalsh(A)[..., 0].min()) + scale


def cond(A, lam):
    return np.linalg.cond(A + lam * np.eye(A.shape[-1]))


# -- prox ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_prox_matches_linear_solve(problem, scale):
    A, b, c, w = problem
    lam = lam_ok(A, scale)
    theta = mo.prox(mo.Quadratic(A, b, c), w, lam)
    ref = np.linalg.solve(A + lam * np.eye(D), (b + lam * w)[..., None])[..., 0]
    assert theta.shape == (M, D)
    for i in range(M):  # forward error of two backward-stable solves: cond * eps-level
        assert_close(theta[i], ref[i], factor=cond(A[i], lam))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_prox_optimality_condition(problem, scale):
    """(A + lam I) theta = b + lam w, to backward-error level (no condition number)."""
    A, b, c, w = problem
    lam = lam_ok(A, scale)
    theta = mo.prox(mo.Quadratic(A, b, c), w, lam)
    lhs = ((A + lam * np.eye(D)) @ theta[..., None])[..., 0]
    rhs = b + lam * w
    # backward error: (|A| + lam)|theta| + |b| + lam|w| (A + lam I is formed with rounding eps(|A| + lam))
    size = (
        (np.linalg.norm(A, 2, axis=(-2, -1)) + lam) * np.linalg.norm(theta, axis=-1)
        + np.linalg.norm(b, axis=-1)
        + lam * np.linalg.norm(w, axis=-1)
    )
    assert np.all(np.linalg.norm(lhs - rhs, axis=-1) <= tol(np.float64) * size)


@pytest.mark.parametrize("lam_scale", [1e-2, 1.0, 1e2])
def test_closed_form_matches_generic_newton(problem, lam_scale):
    A, b, c, w = problem
    q = mo.Quadratic(A, b, c)
    lam = lam_ok(A, lam_scale)
    u, info = newton_displacement(q, np.asarray(w), np.asarray(lam), info=True)
    theta = mo.prox(q, w, lam)
    assert np.all(info.iterations >= 1)
    # both are within their certificates of the same point; the closed form is a solve
    for i in range(M):
        assert_close(w[i] + u[i], theta[i], factor=cond(A[i], lam))


def test_nonconvex_accepted_above_bound_and_refused_below():
    A = np.diag([-2.0, 1.0, 3.0])
    q = mo.Quadratic(A, np.ones(3))
    w = np.array([1.0, -1.0, 2.0])
    theta = mo.prox(q, w, 2.5)  # lam > -a_min = 2: strongly convex subproblem
    assert_close(theta, np.linalg.solve(A + 2.5 * np.eye(3), np.ones(3) + 2.5 * w), factor=cond(A, 2.5))
    assert np.all(np.linalg.eigvalsh(A + 2.5 * np.eye(3)) > 0)  # it is the minimizer, not a saddle
    for lam in (2.0, 1.5):
        with pytest.raises(ValueError, match=rf"lam > 2\b.*got lam={lam:g}"):
            mo.prox(q, w, lam)


# -- lambda sweeps -----------------------------------------------------------------


def test_lambda_sweep_shape_and_loop(problem):
    A, b, c, w = problem
    q = mo.Quadratic(A, b, c)
    lams = lam_ok(A, np.logspace(-2, 2, 7))
    sweep = mo.prox(q, w, lams[:, None])
    assert sweep.shape == (7, M, D)
    for k, lam in enumerate(lams):
        ref = np.linalg.solve(A + lam * np.eye(D), (b + lam * w)[..., None])[..., 0]
        for i in range(M):
            assert_close(sweep[k, i], ref[i], factor=cond(A[i], lam))


def test_per_client_lambda(problem):
    A, b, c, w = problem
    lam = lam_ok(A, np.linspace(1.0, 3.0, M))
    theta = mo.prox(mo.Quadratic(A, b, c), w, lam)
    for i in range(M):
        ref = np.linalg.solve(A[i] + lam[i] * np.eye(D), b[i] + lam[i] * w[i])
        assert_close(theta[i], ref, factor=cond(A[i], lam[i]))


def test_sweep_info_shapes(problem):
    A, b, c, w = problem
    _, info = mo.prox(mo.Quadratic(A, b, c), w, lam_ok(A) * np.ones((3, 1)), return_info=True)
    assert info.error_bound.shape == (3, M) and info.iterations.shape == (3, M)
    assert np.all(info.iterations == 0) and info.tol is None


# -- objective and constants ---------------------------------------------------------


def test_value_grad_hess_hvp_third(problem):
    A, b, c, w = problem
    q = mo.Quadratic(A, b, c)
    v = np.random.default_rng(1).normal(size=(M, D))
    assert_close(q.value(w), f_np(A, b, c, w))
    assert_close(q.grad(w), (A @ w[..., None])[..., 0] - b)
    assert_close(q.hess(w), A)
    assert_close(q.hvp(w, v), (A @ v[..., None])[..., 0])
    assert np.all(q.third(w, v) == 0) and q.third(w, v).shape == (M, D, D)


def test_constants_vs_eigvalsh(problem):
    A, b, c, _ = problem
    q = mo.Quadratic(A, b, c)
    a = np.linalg.eigvalsh(A)
    lo, hi = q.curvature_bounds()
    assert_close(lo, a[:, 0], scale=np.abs(a).max())
    assert_close(hi, a[:, -1], scale=np.abs(a).max())
    assert_close(q.smoothness(), np.abs(a).max(axis=-1))
    assert_close(q.strong_convexity(), a[:, 0], scale=np.abs(a).max())
    assert_close(q.eigenvalues, a, scale=np.abs(a).max())


def test_minimizer():
    rng = np.random.default_rng(2)
    A, b = make_A(rng, (0.5, 4.0)), rng.normal(size=(M, D))
    q = mo.Quadratic(A, b)
    x = q.minimizer()
    for i in range(M):
        assert_close(x[i], np.linalg.solve(A[i], b[i]), factor=np.linalg.cond(A[i]))
    residual_scale = np.linalg.norm(A, 2, axis=(-2, -1)) * np.linalg.norm(x, axis=-1) + np.linalg.norm(
        b, axis=-1
    )
    assert np.all(np.linalg.norm(q.grad(x), axis=-1) <= tol(np.float64) * residual_scale)
    with pytest.raises(ValueError, match="positive definite"):
        mo.Quadratic(make_A(rng, (-1.0, -0.5)), b).minimizer()


def test_from_spectrum():
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(M, D, D)))
    a = rng.uniform(-2, 5, size=(M, D))  # unsorted on purpose
    b = rng.normal(size=(M, D))
    q = mo.Quadratic.from_spectrum(a, Q, b)
    A = Q @ (a[..., :, None] * np.swapaxes(Q, -1, -2))
    assert_close(q.A, A)
    assert_close(q.eigenvalues, np.sort(a, axis=-1))
    lam = -a.min() + 1.0
    w = rng.normal(size=(M, D))
    ref = np.linalg.solve(A + lam * np.eye(D), (b + lam * w)[..., None])[..., 0]
    for i in range(M):
        assert_close(mo.prox(q, w, lam)[i], ref[i], factor=cond(A[i], lam))
    with pytest.raises(ValueError, match="orthonormal"):
        mo.Quadratic.from_spectrum(a, Q * 1.01, b)


# -- envelopes ------------------------------------------------------------------------


@pytest.mark.parametrize("lam_scale", [1e-2, 1.0, 1e2])
def test_envelope_vs_closed_forms(problem, lam_scale):
    """F(w) = f(p) + lam/2 |p - w|^2, grad F = lam (A+lam I)^{-1}(A w - b), hess F = lam A (A+lam I)^{-1}."""
    A, b, c, w = problem
    lam = lam_ok(A, lam_scale)
    F = mo.envelope(mo.Quadratic(A, b, c), lam)
    Ml = A + lam * np.eye(D)
    p = np.linalg.solve(Ml, (b + lam * w)[..., None])[..., 0]
    value = f_np(A, b, c, p) + lam / 2 * np.sum((p - w) ** 2, axis=-1)
    grad = lam * np.linalg.solve(Ml, (A @ w[..., None] - b[..., None]))[..., 0]
    hess = lam * A @ np.linalg.inv(Ml)
    k = max(cond(A[i], lam) for i in range(M))
    # value: the closed form loses digits to cancellation between f(p) and the penalty
    vscale = np.abs(f_np(A, b, c, p)).max() + lam * np.sum((p - w) ** 2, axis=-1).max()
    assert_close(F.value(w), value, scale=vscale, factor=k)
    assert_close(F.grad(w), grad, factor=k)
    assert_close(F.hess(w), hess, factor=k)
    v = np.random.default_rng(5).normal(size=(M, D))
    assert_close(F.hvp(w, v), (hess @ v[..., None])[..., 0], factor=k)
    # eigenvalues lam a / (lam + a)
    a = np.linalg.eigvalsh(A)
    assert_close(np.linalg.eigvalsh(F.hess(w)), np.sort(lam * a / (lam + a), axis=-1), factor=k)
    lo, hi = F.curvature_bounds()
    assert_close(lo, (lam * a / (lam + a))[:, 0], scale=np.abs(lam * a / (lam + a)).max(), factor=k)
    assert_close(hi, (lam * a / (lam + a))[:, -1], factor=k)


def test_nested_envelope_eigenvalues(problem):
    """envelope(envelope(q, lam), gamma): eigenvalues a -> lam a/(lam+a) -> gamma a/(gamma+a)."""
    A, b, c, w = problem
    lam = lam_ok(A, 3.0)
    a = np.linalg.eigvalsh(A)
    a1 = lam * a / (lam + a)
    gamma = max(1.0, -a1.min() + 0.5)
    N = mo.envelope(mo.envelope(mo.Quadratic(A, b, c), lam), gamma)
    expected = np.sort(gamma * a1 / (gamma + a1), axis=-1)
    H = N.hess(w)
    # two nested solves, each with forward error cond * eps
    assert_close(np.linalg.eigvalsh(H), expected, factor=cond(A, lam).max() * cond(A, gamma).max())
    # gradient: the envelope of f with the infimal-convolution parameter lam*gamma/(lam+gamma)
    mu = lam * gamma / (lam + gamma)
    grad_ref = mu * np.linalg.solve(A + mu * np.eye(D), (A @ w[..., None] - b[..., None]))[..., 0]
    assert_close(N.grad(w), grad_ref, factor=cond(A, mu).max())
    # prox of the envelope F (a quadratic with matrix H_F = lam A (A + lam I)^{-1} and linear
    # term lam (A + lam I)^{-1} b) with parameter gamma: (H_F + gamma I)^{-1}(b_F + gamma w)
    Ml = A + lam * np.eye(D)
    H_F = lam * A @ np.linalg.inv(Ml)
    b_F = lam * np.linalg.solve(Ml, b[..., None])[..., 0]
    p_ref = np.linalg.solve(H_F + gamma * np.eye(D), (b_F + gamma * w)[..., None])[..., 0]
    p = mo.prox(mo.envelope(mo.Quadratic(A, b, c), lam), w, gamma)
    assert_close(
        p,
        p_ref,
        scale=np.abs(p_ref).max() + np.abs(w).max(),
        factor=cond(A, lam).max() * np.linalg.cond(H_F + gamma * np.eye(D)).max(),
    )


def test_envelope_of_nonconvex_refused_below_bound():
    q = mo.Quadratic(np.diag([-2.0, 1.0]), np.zeros(2))
    with pytest.raises(ValueError, match=r"lam > 2\b"):
        mo.envelope(q, 1.0)
    F = mo.envelope(q, 3.0)  # curvature -2 -> 3*(-2)/(3-2) = -6
    assert_close(F.strong_convexity(), -6.0)


# -- meta-objective -----------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.05, 0.2])
def test_meta_objective_closed_forms(problem, alpha):
    A, b, c, w = problem
    G = mo.meta_objective(mo.Quadratic(A, b, c), alpha)
    J = np.eye(D) - alpha * A
    gf = lambda x: (A @ x[..., None])[..., 0] - b  # noqa: E731
    v = w - alpha * gf(w)
    assert_close(G.value(w), f_np(A, b, c, v))
    assert_close(G.grad(w), (J @ gf(v)[..., None])[..., 0])
    assert_close(G.hess(w), J @ A @ J)
    a = np.linalg.eigvalsh(A)
    lo, hi = G.curvature_bounds()
    meta = a * (1 - alpha * a) ** 2
    assert_close(lo, meta.min(axis=-1), scale=np.abs(meta).max())
    assert_close(hi, meta.max(axis=-1), scale=np.abs(meta).max())


def test_meta_curvature_without_cancellation_near_alpha_a_one():
    """a (1 - alpha a)^2 at alpha a = 1 + 1e-9: the plain formula lost up to a factor 3.6;
    against a 40-digit mpmath evaluation of the same (float) a and alpha."""
    import mpmath as mp

    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.uniform(0.1, 10)
        alpha = 1 / a * (1 + rng.normal() * 1e-9)
        q = mo.Quadratic.from_spectrum(np.array([a, 20.0]), np.eye(2), np.zeros(2))
        lo = float(mo.meta_objective(q, alpha).curvature_bounds()[0])
        with mp.workdps(40):  # local precision: other tests' references rely on the global setting
            exact = float(mp.mpf(a) * (1 - mp.mpf(alpha) * mp.mpf(a)) ** 2)
        assert (
            abs(lo - exact) <= 8 * np.finfo(float).eps * exact
        )  # a few roundings after an exact 1 - alpha a


# -- construction: one checked copy of A (moreau._quadratic._load_matrix) -------------------
def _spd(m, d, seed=0):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((m, d, d))
    return G @ np.swapaxes(G, -1, -2) / d + np.eye(d)


def test_constructor_owns_a_copy_whatever_the_input_layout():
    A0 = _spd(40, 30)  # 36,000 entries: the load runs over several blocks
    b = np.ones((40, 30))
    layouts = {
        "C": lambda A: A,
        "F": np.asfortranarray,
        "reversed view": lambda A: A[::-1][::-1],
        "strided view": lambda A: np.repeat(A, 2, axis=0)[::2],
    }
    for name, make in layouts.items():
        given = make(A0.copy())
        q = mo.Quadratic(given, b)
        assert q.A.flags.c_contiguous and not np.may_share_memory(q.A, given), name
        np.testing.assert_array_equal(q.A, A0)
        theta = mo.prox(q, b, 1.0)
        given[...] = 0.0  # a later change of the caller's array cannot reach the objective
        np.testing.assert_array_equal(q.A, A0)
        np.testing.assert_array_equal(mo.prox(q, b, 1.0), theta)


def test_integer_A_is_converted_once_and_checked():
    A = np.stack([np.eye(4, dtype=np.int64) * (k + 1) for k in range(3)])
    q = mo.Quadratic(A, np.ones((3, 4)))
    assert q.A.dtype == np.float64
    np.testing.assert_array_equal(q.eigenvalues[:, 0], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_entry_found_in_any_block(bad):
    A = _spd(300, 20)  # 120,000 entries: two blocks of 65,536
    A[250, 3, 7] = bad  # second block; the asymmetry it creates must not mask the message
    with pytest.raises(ValueError, match=r"A must be finite.*\(250, 3, 7\)"):
        mo.Quadratic(A, np.ones((300, 20)))


def test_finite_entries_whose_sum_overflows_are_accepted():
    big = np.finfo(np.float64).max / 4
    A = np.stack([np.eye(3) * big] * 8)  # every block sum overflows to inf; every entry is finite
    q = mo.Quadratic(A, np.zeros((8, 3)))
    np.testing.assert_array_equal(q.A, A)
    A32 = np.full((2, 2), np.finfo(np.float32).max / 2, dtype=np.float32)
    assert mo.Quadratic(A32, np.zeros(2, dtype=np.float32)).dtype == np.float32


def test_asymmetry_found_in_a_later_block_and_near_symmetry_repaired():
    A = _spd(300, 20)
    B = A.copy()
    B[299, 0, 19] += 1.0
    with pytest.raises(ValueError, match=r"A must be symmetric.*\(299,\)"):
        mo.Quadratic(B, np.ones((300, 20)))
    C = A.copy()
    C[299, 0, 19] *= 1 + 4 * np.finfo(float).eps  # within 100 eps max|A|: symmetrised
    q = mo.Quadratic(C, np.ones((300, 20)))
    np.testing.assert_array_equal(q.A, np.swapaxes(q.A, -1, -2))
    assert q.A[299, 0, 19] == (C[299, 0, 19] / 2 + C[299, 19, 0] / 2)
    np.testing.assert_array_equal(q.A[:299], A[:299])  # the exactly symmetric entries kept bit for bit
