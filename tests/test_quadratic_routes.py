"""The three routes of the quadratic prox (certified Cholesky, tridiagonal, eigh).

Every route is checked against references computed here, independently of
moreau's code paths: 50-digit mpmath solves (``_mpref``), dense numpy solves of
the matrices the test built, numpy ``eigvalsh``.  The certificate
(``error_bound``) is asserted ``>=`` the true error with no tolerance; route
agreement and reference comparisons use the dtype default (``_tol``) times the
condition number of ``A + lam I`` (forward error of a backward-stable solve).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from _mpref import error, quadratic_prox
from _tol import assert_close, eps, host

import moreau as mo
from moreau._chol import _mu, chol_proves_exists, chol_solve
from moreau._tridiag import tri_min_eig, tri_solve, tridiagonalize

ROUTES = ("chol", "tri", "eigh")


def make_A(rng, spectrum, m, d):
    """Symmetric ``(m, d, d)`` with eigenvalues uniform in ``spectrum`` (exactly symmetric)."""
    Q, _ = np.linalg.qr(rng.normal(size=(m, d, d)))
    a = rng.uniform(*spectrum, size=(m, d))
    A = Q @ (a[..., :, None] * np.swapaxes(Q, -1, -2))
    return (A + np.swapaxes(A, -1, -2)) / 2


def dense_ref(A, b, w, lam):
    """``(A + lam I)^{-1}(b + lam w)`` with numpy's LU, broadcasting lam ``(..., 1)``-style."""
    lam = np.asarray(lam, dtype=float)
    d = A.shape[-1]
    return np.linalg.solve(A + lam[..., None, None] * np.eye(d), (b + lam[..., None] * w)[..., None])[..., 0]


def cond(A, lam):
    lam = np.asarray(lam, dtype=float)
    return float(np.linalg.cond(A + lam[..., None, None] * np.eye(A.shape[-1])).max())


def solve(q, w, lam, route, info=False, want_u=True):
    """One route of ``q``'s prox on validated inputs (``_solve`` is the prox entry point)."""
    return q._solve(q._point(w, "w"), q._lam(lam, convexity=False), route=route, info=info, want_u=want_u)


@pytest.fixture(params=[(0.1, 10.0), (-3.0, 5.0)], ids=["convex", "nonconvex"])
def sweep(request):
    rng = np.random.default_rng(1)
    m, d = 6, 7
    A = make_A(rng, request.param, m, d)
    b, w = rng.normal(size=(m, d)), rng.normal(size=(m, d)) * 3
    lo = max(0.0, -np.linalg.eigvalsh(A)[..., 0].min())
    lam = (lo + np.logspace(-2, 2, 5))[:, None]  # (5, 1): a lambda-sweep over the 6 clients
    return A, b, w, lam


# -- each route against an independent reference ------------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_route_matches_dense_solve_and_displacement(sweep, route):
    A, b, w, lam = sweep
    q = mo.Quadratic(A, b)
    theta, u, _ = solve(q, w, lam, route)
    ref = dense_ref(A, b, w, lam)
    assert theta.shape == u.shape == (5, 6, 7)
    k = cond(A, lam)
    assert_close(theta, ref, factor=k)
    assert_close(u, ref - w, factor=k)  # the displacement, computed on its own


@pytest.mark.parametrize("route", ROUTES)
def test_routes_agree(sweep, route):
    """Results identical between routes to the conditioning of the solve (~1e-13 here)."""
    A, b, w, lam = sweep
    thetas = {r: solve(mo.Quadratic(A, b), w, lam, r)[0] for r in ROUTES}
    assert_close(thetas[route], thetas["eigh"], factor=cond(A, lam))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("shape", ["scalar", "per-client", "one-matrix", "batch-of-one"])
def test_route_broadcasting(route, shape):
    rng = np.random.default_rng(2)
    A = make_A(rng, (0.5, 4.0), 4, 5)
    b, w = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    if shape == "scalar":
        lam = 0.7
    elif shape == "per-client":
        lam = np.array([0.1, 1.0, 10.0, 100.0])
    elif shape == "one-matrix":  # one matrix shared by four b and w
        A = A[0]
        lam = np.array([[0.3], [3.0]])
    else:  # a batch of one matrix broadcast against four clients (the general layout)
        A = A[:1]
        lam = np.array([[0.3], [3.0]])
    theta = solve(mo.Quadratic(A, b), w, lam, route)[0]
    ref = dense_ref(A, b, w, np.asarray(lam, dtype=float))
    assert theta.shape == ref.shape
    assert_close(theta, ref, factor=cond(A, lam))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_tiny_dimensions(route, d):
    """d = 1, 2: the Householder reduction has nothing (or one trivial reflector) to do."""
    rng = np.random.default_rng(d)
    A = make_A(rng, (-0.5, 2.0), 3, d)
    b, w = rng.normal(size=(3, d)), rng.normal(size=(3, d))
    lam = 1.0 + max(0.0, -np.linalg.eigvalsh(A).min())
    theta, info = solve(mo.Quadratic(A, b), w, lam, route, info=True)[::2]
    for i in range(3):
        assert error(theta[i], quadratic_prox(A[i], b[i], w[i], lam)) <= info.error_bound[i]


@pytest.mark.parametrize("route", ROUTES)
def test_float32(route):
    rng = np.random.default_rng(3)
    A = make_A(rng, (0.5, 4.0), 5, 6).astype(np.float32)
    b, w = rng.normal(size=(5, 6)).astype(np.float32), rng.normal(size=(5, 6)).astype(np.float32)
    theta, _, info = solve(mo.Quadratic(A, b), w, np.float32(0.5), route, info=True)
    assert theta.dtype == np.float32
    for i in range(5):
        ref = quadratic_prox(A[i].astype(np.float64), b[i].astype(np.float64), w[i].astype(np.float64), 0.5)
        assert error(theta[i], ref) <= info.error_bound[i]


# -- the certificate is a theorem on every route ------------------------------------


def _spectral(a, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(len(a), len(a))))[0]
    A = (Q * np.asarray(a)) @ Q.T
    return (A + A.T) / 2, rng.normal(size=len(a))


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "a,lam",
    [
        ([1e6, 3.0, 1.0, -1e-3], 1e-3 * (1 + 1e-2)),  # near the threshold, certifiable
        ([1e6, 3.0, 1.0, 1e-10], 1e-8),  # tiny smallest eigenvalue, tiny lam
        ([1e12, 1.0, 1e-6, 2.0, 5.0], 1e-2),  # badly conditioned: cond(A + lam I) = 1e14
        ([1.0, 2.0, 5.0], 1e8),  # lam >> ||A||
        ([1e8, 1.0, -0.5], 0.6),
    ],
)
def test_bound_holds_mpmath(route, a, lam):
    A, b = _spectral(a)
    w = np.linspace(-1.0, 2.0, len(a))
    q = mo.Quadratic(A, b)
    theta, _, info = solve(q, w, lam, route, info=True)
    assert error(theta, quadratic_prox(host(q.A), b, w, lam)) <= info.error_bound


def test_default_prox_of_a_badly_conditioned_matrix_is_accurate():
    """No certificate asked for: the Cholesky route runs (or hands over); the answer is
    still within the conditioning of the 50-digit solution."""
    A, b = _spectral([1e12, 1.0, 1e-6, 2.0, 5.0])
    w = np.linspace(-1.0, 2.0, 5)
    theta = mo.prox(mo.Quadratic(A, b), w, 1e-2)
    ref = quadratic_prox(A, b, w, 1e-2)
    k = cond(A, 1e-2)
    assert error(theta, ref) <= 100 * eps(np.float64) * k * float(np.linalg.norm(theta))


@pytest.mark.parametrize("lam", [1e-3 * (1 + 1e-8), 1e-3, 0.9e-3])
def test_every_route_refuses_an_uncertifiable_lam(lam):
    """||A|| = 1e6, a_min = -1e-3: lam within the eigenvalue error of the threshold (or
    below it) is refused on every route, the Cholesky route included (it hands over)."""
    A, b = _spectral([1e6, 3.0, 1.0, -1e-3])
    for route in ROUTES:
        with pytest.raises(ValueError, match="nonconvex"):
            solve(mo.Quadratic(A, b), np.zeros(4), lam, route)


# -- the Cholesky certificate itself -------------------------------------------------


def test_cholesky_mu_is_a_lower_bound_on_the_smallest_eigenvalue():
    """mu > 0 certifies existence: it never exceeds lambda_min(A + lam I) (numpy eigvalsh,
    exact to ~d eps ||A||, far below the gap measured here)."""
    rng = np.random.default_rng(4)
    A = make_A(rng, (-1.0, 3.0), 20, 8)
    amin = np.linalg.eigvalsh(A)[..., 0]
    lam = -amin + np.logspace(-4, 1, 20)  # from near the threshold to far above it
    q = mo.Quadratic(A, rng.normal(size=(20, 8)))
    out = chol_solve(q.A, lam, rng.normal(size=(20, 8, 1)), q.xp)
    assert out is not None
    _, mu = out
    true_min = np.linalg.eigvalsh(A + lam[:, None, None] * np.eye(8))[..., 0]
    slack = 16 * 8 * eps(np.float64) * np.abs(A).sum(axis=(-2, -1))  # eigvalsh's own error
    assert np.all(mu > 0)
    assert np.all(mu <= true_min + slack)


def test_cholesky_refuses_a_singular_matrix_that_factors_without_the_shift():
    """A + lam I = G exactly singular (G = M^T M, M integer 5 x 6; A = G - 2^-30 I and
    lam = 2^-30 are exact): the prox does not exist.  Plain floating-point Cholesky of G
    completes on about half of them (rounding makes the last pivot positive); the
    certified route must refuse every one, prox must raise, and an unshifted mu (the
    mutant s = lam) is never positive."""
    rng = np.random.default_rng(5)
    M = rng.integers(-3, 4, size=(40, 5, 6)).astype(float)
    G = np.swapaxes(M, -1, -2) @ M
    lam = 2.0**-30
    A = G - lam * np.eye(6)
    completes = 0
    for g in G:
        try:
            np.linalg.cholesky(g)
            completes += 1
        except np.linalg.LinAlgError:
            pass
    assert completes >= 10  # the trap is real: uncertified Cholesky would accept these
    q = mo.Quadratic(A, np.ones((40, 6)))
    assert chol_solve(q.A, np.asarray(lam), np.ones((40, 6, 1)), q.xp) is None
    with pytest.raises(ValueError, match="nonconvex threshold"):
        mo.prox(q, np.zeros(6), lam)
    diag = np.diagonal(G, axis1=-2, axis2=-1)
    assert np.all(_mu(diag, np.full(40, lam), np.full(40, lam), eps(np.float64)) < 0)


def test_existence_proof_of_the_spectral_routes():
    """The tridiagonal route's existence proof (one certified Cholesky per matrix at its
    smallest lam) on the singular A + lam I above: never proven at lam itself (A + lam I is
    singular: it cannot be), nor just below; proven 1e-9 above the threshold; and the
    tridiagonal prox refuses the singular lam with a clear error, as the default route does."""
    rng = np.random.default_rng(5)
    M = rng.integers(-3, 4, size=(40, 5, 6)).astype(float)
    lam = 2.0**-30
    A = np.swapaxes(M, -1, -2) @ M - lam * np.eye(6)  # lambda_min(A) = -lam exactly
    assert not any(chol_proves_exists(A[j], lam, np) for j in range(40))
    assert not chol_proves_exists(A, np.full(40, lam * (1 - 1e-6)), np)
    assert chol_proves_exists(A, np.full(40, lam + 1e-9), np)
    q = mo.Quadratic(A, np.ones((40, 6)))
    with pytest.raises(ValueError, match="nonconvex threshold"):
        q._solve(np.zeros((40, 6)), np.full(40, lam), route="tri", want_u=False)
    theta = q._solve(np.zeros((40, 6)), np.full(40, lam + 1e-6), route="tri", want_u=False)[0]
    assert np.all(np.isfinite(theta))


def test_cholesky_hands_over_near_the_threshold():
    """lam a hair above -a_min (certifiable by the spectrum, not by the shifted Cholesky):
    the default prox still answers, through the spectral route."""
    A, b = _spectral([4.0, 3.0, 1.0, -1.0])
    lam = 1.0 + 1e-13
    q = mo.Quadratic(A, b)
    assert chol_solve(q.A, np.asarray(lam), np.ones((4, 1)), q.xp) is None
    theta, info = mo.prox(q, np.zeros(4), lam, return_info=True)
    assert error(theta, quadratic_prox(host(q.A), b, np.zeros(4), lam)) <= info.error_bound


# -- the building blocks ---------------------------------------------------------------


def test_tridiagonalization_and_its_smallest_eigenvalue():
    rng = np.random.default_rng(6)
    A = make_A(rng, (-2.0, 5.0), 4, 9)
    Q, D, E = tridiagonalize(A)
    T = np.zeros_like(A)
    i = np.arange(9)
    T[:, i, i] = D
    T[:, i[:-1], i[1:]] = E
    T[:, i[1:], i[:-1]] = E
    assert_close(Q @ np.swapaxes(Q, -1, -2), np.broadcast_to(np.eye(9), A.shape), factor=9)
    assert_close(Q @ T @ np.swapaxes(Q, -1, -2), A, factor=9 * 5)  # backward error ~ d eps ||A||
    assert_close(tri_min_eig(D, E), np.linalg.eigvalsh(A)[..., 0], factor=9 * 5)


def test_tridiagonal_solve_against_dense():
    rng = np.random.default_rng(7)
    D, E = rng.uniform(2.0, 3.0, size=(3, 6)), rng.uniform(-1.0, 1.0, size=(3, 5))
    lam = np.array([[0.01], [1.0]])  # (2, 1) against 3 matrices
    R = rng.normal(size=(2, 2, 3, 6))  # k = 2 right-hand sides first
    T = np.zeros((3, 6, 6))
    i = np.arange(6)
    T[:, i, i], T[:, i[:-1], i[1:]], T[:, i[1:], i[:-1]] = D, E, E
    Dt, Et = np.moveaxis(D, -1, 0), np.moveaxis(E, -1, 0)  # d first, against systems (2, 2, 3)
    X = np.moveaxis(tri_solve(Dt, Et, lam, np.moveaxis(R, -1, 0).copy()), 0, -1)
    ref = np.linalg.solve(T + lam[..., None, None] * np.eye(6), R[..., None])[..., 0]
    assert X.shape == (2, 2, 3, 6)
    assert_close(X, ref, factor=10)


# -- the route choice --------------------------------------------------------------------


def test_route_choice_numpy():
    rng = np.random.default_rng(8)
    A = make_A(rng, (0.5, 2.0), 10, 4)
    b, w = rng.normal(size=(10, 4)), rng.normal(size=(10, 4))
    q = mo.Quadratic(A, b)
    one, many = q._lam(1.0, convexity=False), q._lam(np.logspace(-1, 1, 50)[:, None], convexity=False)
    assert q._route(one, w) == "chol"
    assert q._route(many, w) == "tri"
    assert q._route(one, w) == "chol"  # a certificate adds T alone and one proof per matrix
    mo.prox(q, w, 1.0)
    assert "_eigh" not in q.__dict__ and "_tri" not in q.__dict__  # one lam: no decomposition at all
    mo.prox(q, w, np.logspace(-1, 1, 50)[:, None])
    assert "_tri" in q.__dict__ and "_eigh" not in q.__dict__
    assert q._route(one, w) == "tri"  # the reduction is cached: reuse it
    _ = q.eigenvalues  # the property computes and caches the eigendecomposition
    assert q._route(many, w) == "eigh"


@pytest.mark.gpu
def test_route_on_cupy_is_eigh(gpu_xp):
    """On a GPU the per-system Cholesky is the slow route (benchmarks/RESULTS.md section 9):
    cupy takes eigh for one lam too, with the same answer and a certificate that holds."""
    rng = np.random.default_rng(9)
    A = make_A(rng, (0.5, 2.0), 6, 4)
    b, w = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    q = mo.Quadratic(gpu_xp.asarray(A), gpu_xp.asarray(b))
    assert q._route(q._lam(1.0, convexity=False), gpu_xp.asarray(w)) == "eigh"
    theta, info = mo.prox(q, gpu_xp.asarray(w), 0.5, return_info=True)
    assert np.all(np.linalg.norm(host(theta) - dense_ref(A, b, w, 0.5), axis=-1) <= info.error_bound)


def test_route_choice_array_api_strict():
    xs = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(9)
    A = make_A(rng, (0.5, 2.0), 6, 4)
    b, w = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    q = mo.Quadratic(xs.asarray(A), xs.asarray(b))
    wx = xs.asarray(w)
    lams = np.logspace(-1, 1, 20)[:, None]
    assert q._route(q._lam(1.0, convexity=False), wx) == "chol"
    assert q._route(q._lam(xs.asarray(lams), convexity=False), wx) == "eigh"
    for lam in (0.5, lams):
        theta = mo.prox(q, wx, xs.asarray(lam) if isinstance(lam, np.ndarray) else lam)
        assert isinstance(theta, type(wx))
        assert_close(host(theta), dense_ref(A, b, w, lam), factor=cond(A, lam))
    theta, info = mo.prox(q, wx, 0.5, return_info=True)
    assert np.all(np.linalg.norm(host(theta) - dense_ref(A, b, w, 0.5), axis=-1) <= info.error_bound)


def test_strict_cholesky_route_against_numpy():
    xs = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(10)
    A = make_A(rng, (-1.0, 2.0), 5, 6)
    b, w = rng.normal(size=(5, 6)), rng.normal(size=(5, 6))
    q = mo.Quadratic(xs.asarray(A), xs.asarray(b))
    theta, u, _ = q._solve(xs.asarray(w), q._lam(2.0, convexity=False), route="chol")
    ref = dense_ref(A, b, w, 2.0)
    assert_close(host(theta), ref, factor=cond(A, 2.0))
    assert_close(host(u), ref - w, factor=cond(A, 2.0))


# -- memory and the copy of A ---------------------------------------------------------------


def test_constructor_keeps_one_copy_and_no_large_transient():
    """An exactly symmetric A is kept bit for bit (a copy, not the caller's array), and the
    constructor's peak allocation stays near that one copy (it used to be 3x)."""
    rng = np.random.default_rng(11)
    M = rng.normal(size=(300, 40, 40))
    A = M @ np.swapaxes(M, -1, -2)
    A[0, 0, 1] = A[0, 1, 0] = 5e-324  # a subnormal pair: halving it would change it
    b = rng.normal(size=(300, 40))
    tracemalloc.start()
    q = mo.Quadratic(A, b)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert q.A is not A and np.array_equal(q.A, A)
    assert peak <= 1.3 * A.nbytes  # the copy plus blocks of 2 MB
    A[0, 0, 0] = 1e9
    assert q.A[0, 0, 0] != 1e9


def test_nearly_symmetric_A_is_symmetrised():
    rng = np.random.default_rng(12)
    A = make_A(rng, (1.0, 2.0), 3, 4)
    A[:, 0, 1] += 1e-15
    q = mo.Quadratic(A, np.ones((3, 4)))
    assert np.array_equal(q.A, np.swapaxes(q.A, -1, -2))
    assert_close(q.A, A)
