"""moreau.fl exact optima: fedprox_optimum, local_train, global_train.

Each is checked against an independent computation: the joint stationarity system of the FedProx
problem solved by one numpy solve (quadratics), scipy.optimize on the joint objective written
from the raw data (logistic), and gradients computed from the raw data; the certificate is
checked for rigour on deliberately early stops.

Tolerances (``_tol.assert_close``, 100 eps relative to the result's size, times ``factor``):
``factor=10`` for a reference loop against the batched run (tens of rounded steps, summed in a
different order); ``factor=100`` for an iteration's limit against a closed form or a certified
solve (the rounding of each step is amplified by 1/(1 - contraction) and by the condition number,
both up to ~1e2 on these instances); larger factors are commented where used.
"""

import numpy as np
import pytest
from _tol import assert_close, host
from scipy.optimize import minimize as sp_minimize

import moreau as mo
from moreau.fl import fedprox_optimum, global_train, local_train
from moreau.fl._newton import envelope_newton

T, M, D, N = 3, 4, 3, 12


def _quadratic_data(seed, T=T, m=M, d=D):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((T, m, d, d))
    A = B @ np.swapaxes(B, -1, -2) / d + 0.05 * np.eye(d)
    return A, rng.standard_normal((T, m, d)), rng.dirichlet(np.ones(m), T)


def _logistic_data(seed, T=T, m=M, n=N, d=D):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, m, n, d))
    y = rng.choice([-1.0, 1.0], (T, m, n))
    mask = (np.arange(n) < rng.integers(n // 2, n + 1, (T, m))[..., None]).astype(float)
    return X, y, mask, rng.uniform(0.05, 0.5, T), rng.dirichlet(np.ones(m), T)


def joint_solve(A, b, p, lam):
    """Independent reference: unknowns (w_g, w_1..w_m), (A_i + lam I) w_i - lam w_g = b_i and
    w_g = sum_i p_i w_i, one dense numpy solve per trial (lam (T,))."""
    T, m, d = b.shape
    K = np.zeros((T, (m + 1) * d, (m + 1) * d))
    rhs = np.zeros((T, (m + 1) * d))
    K[:, :d, :d] = np.eye(d)
    for i in range(m):  # building the reference system, not the code under test
        s = slice((i + 1) * d, (i + 2) * d)
        K[:, :d, s] = -p[:, i, None, None] * np.eye(d)
        K[:, s, :d] = -lam[:, None, None] * np.eye(d)
        K[:, s, s] = A[:, i] + lam[:, None, None] * np.eye(d)
        rhs[:, s] = b[:, i]
    z = np.linalg.solve(K, rhs[..., None])[..., 0]
    return z[:, :d], z[:, d:].reshape(T, m, d)


def logistic_joint(X, y, mask, mu, p, lam):
    """The FedProx joint objective of one trial from the raw data: value and gradient in
    z = (w_g, w_1..w_m) (numpy only)."""
    m, n, d = X.shape
    nn = mask.sum(-1)

    def fun(z):
        wg, W = z[:d], z[d:].reshape(m, d)
        marg = y * np.einsum("mnd,md->mn", X, W)
        L = np.sum(mask * np.logaddexp(0, -marg), -1) / nn + mu / 2 * np.sum(W**2, -1)
        val = np.sum(p * (L + lam / 2 * np.sum((wg - W) ** 2, -1)))
        s = -y / (1 + np.exp(marg))
        gW = np.einsum("mn,mnd->md", mask * s, X) / nn[:, None] + mu * W
        gW = p[:, None] * (gW + lam * (W - wg))
        gg = lam * np.sum(p[:, None] * (wg - W), 0)
        return val, np.concatenate([gg, gW.reshape(-1)])

    def hess(z):
        W = z[d:].reshape(m, d)
        marg = y * np.einsum("mnd,md->mn", X, W)
        s = 1 / (1 + np.exp(-marg))
        H = np.zeros(((m + 1) * d, (m + 1) * d))
        H[:d, :d] = lam * np.sum(p) * np.eye(d)
        for i in range(m):  # the reference Hessian, block by block
            blk = slice((i + 1) * d, (i + 2) * d)
            Hi = (X[i].T * (mask[i] * s[i] * (1 - s[i]))) @ X[i] / nn[i] + (mu + lam) * np.eye(d)
            H[blk, blk] = p[i] * Hi
            H[:d, blk] = H[blk, :d] = -p[i] * lam * np.eye(d)
        return H

    return fun, hess


# --- fedprox_optimum ----------------------------------------------------------------------


def test_quadratic_matches_joint_solve():
    A, b, p = _quadratic_data(0)
    lam = np.array([0.1, 1.0, 30.0])
    w_g, w_loc = fedprox_optimum(mo.Quadratic(A, b), lam, p)
    ref_g, ref_loc = joint_solve(A, b, p, lam)
    assert_close(w_g, ref_g, factor=100)  # cond(K) <= ~1e3 here: the two solves differ by that
    assert_close(w_loc, ref_loc, factor=100)


def test_quadratic_lambda_sweep_equals_separate_calls():
    A, b, p = _quadratic_data(1)
    lams = np.array([0.01, 0.3, 5.0, 100.0])
    q = mo.Quadratic(A, b)
    w_g, w_loc = fedprox_optimum(q, lams[:, None], p)
    assert w_g.shape == (4, T, D) and w_loc.shape == (4, T, M, D)
    for k, lam in enumerate(lams):  # loop over the sweep in the test only
        ref_g, ref_loc = joint_solve(A, b, p, np.full(T, lam))
        assert_close(w_g[k], ref_g, factor=1000)  # lam = 1e-2: cond(K) ~ 1e4
        assert_close(w_loc[k], ref_loc, factor=1000)


def test_quadratic_with_singular_clients():
    """Least squares with n_i < d: singular A_i, but sum_i p_i F_i is strongly convex."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2, M, 2, D))
    A = np.swapaxes(X, -1, -2) @ X / 2
    b = rng.standard_normal((2, M, D))
    b = (A @ b[..., None])[..., 0]  # b in the range of A: LocalTrain solutions exist
    p = np.full((2, M), 1 / M)
    w_g, w_loc, info = fedprox_optimum(mo.Quadratic(A, b), 0.7, return_info=True)
    ref_g, ref_loc = joint_solve(A, b, p, np.full(2, 0.7))
    assert_close(w_g, ref_g, factor=100)
    assert np.all(host(info.mu) > 0)


@pytest.mark.parametrize("lam", [0.05, 1.0, 20.0])
def test_logistic_matches_scipy_on_the_joint_objective(lam):
    X, y, mask, mu, p = _logistic_data(3)
    f = mo.Logistic(X, y, mu=mu[:, None], weights=mask)
    w_g, w_loc, info = fedprox_optimum(f, lam, p, return_info=True)
    for t in range(T):  # scipy reference, one trial at a time
        fun, hess = logistic_joint(X[t], y[t], mask[t], mu[t], p[t], lam)
        res = sp_minimize(
            fun, np.zeros((M + 1) * D), jac=True, hess=hess, method="trust-exact", options={"gtol": 1e-13}
        )
        z = res.x
        for _ in range(2):  # trust-exact stalls near round-off: polish with plain Newton steps
            z = z - np.linalg.solve(hess(z), fun(z)[1])
        jac = fun(z)[1]
        # the reference is accurate to ||grad|| / modulus; the modulus is at least the smallest
        # eigenvalue of the Hessian without the (PSD) logistic curvature: the same Hessian at X = 0
        H0 = logistic_joint(0 * X[t], y[t], mask[t], mu[t], p[t], lam)[1](z)
        ref_err = np.linalg.norm(jac) / np.linalg.eigvalsh(H0)[0]
        assert ref_err < 1e-12
        assert np.linalg.norm(w_g[t] - z[:D]) <= info.error_bound[t] + ref_err
        assert np.abs(w_loc[t] - z[D:].reshape(M, D)).max() <= info.local_error_bound[t].max() + ref_err
    assert np.all(info.error_bound <= 1e-10)


def test_logistic_stationarity_from_raw_data():
    X, y, mask, mu, p = _logistic_data(4)
    f = mo.Logistic(X, y, mu=mu[:, None], weights=mask)
    lam = np.array([0.2, 2.0, 9.0])
    w_g, w_loc = fedprox_optimum(f, lam, p)
    for t in range(T):
        _, g = logistic_joint(X[t], y[t], mask[t], mu[t], p[t], lam[t])[0](
            np.concatenate([w_g[t], w_loc[t].ravel()])
        )
        assert np.abs(g).max() <= 1e-12


@pytest.mark.parametrize("rtol", [0.3, 1e-2, 1e-5])
def test_certificate_is_rigorous_on_early_stops(rtol):
    """Stopped early, the returned bound still covers the distance to the exact optimum."""
    X, y, mask, mu, p = _logistic_data(5)
    f = mo.Logistic(X, y, mu=mu[:, None], weights=mask)
    lam = np.full(T, 3.0)
    exact = fedprox_optimum(f, lam, p)[0]
    mu_g = lam * mu / (lam + mu)
    w, bound, _ = envelope_newton(f, p, lam, mu_g, rtol=rtol)
    assert np.all(bound > 1e-10)  # stopped early: far above the certified-to-rounding level
    assert np.all(np.linalg.norm(w - exact, axis=-1) <= bound)


def test_batched_equals_loop_over_trials():
    X, y, mask, mu, p = _logistic_data(6)
    f = mo.Logistic(X, y, mu=mu[:, None], weights=mask)
    w_g, w_loc = fedprox_optimum(f, 1.5, p)
    for t in range(T):
        g1, l1 = fedprox_optimum(mo.Logistic(X[t], y[t], mu=mu[t], weights=mask[t]), 1.5, p[t])
        assert_close(g1, w_g[t], factor=100)  # both certified to 1e-12 relative
        assert_close(l1, w_loc[t], factor=100)
    A, b, pq = _quadratic_data(7)
    wq, lq = fedprox_optimum(mo.Quadratic(A, b), 2.0, pq)
    for t in range(T):
        g1, l1 = fedprox_optimum(mo.Quadratic(A[t], b[t]), 2.0, pq[t])
        assert_close(g1, wq[t])
        assert_close(l1, lq[t])


def test_weights_are_normalised_and_default_uniform():
    A, b, _ = _quadratic_data(8)
    q = mo.Quadratic(A, b)
    a = fedprox_optimum(q, 1.0)[0]
    assert_close(fedprox_optimum(q, 1.0, np.full(M, 7.0))[0], a)
    assert_close(a, joint_solve(A, b, np.full((T, M), 1 / M), np.ones(T))[0], factor=100)


def test_runs_on_the_xp_backend(xp):
    A, b, p = _quadratic_data(9)
    w_g, _ = fedprox_optimum(mo.Quadratic(xp.asarray(A), xp.asarray(b)), 1.0, xp.asarray(p))
    assert_close(w_g, joint_solve(A, b, p, np.ones(T))[0], factor=100)
    X, y, mask, mu, p = _logistic_data(10, T=1, m=2, n=6)
    f = mo.Logistic(xp.asarray(X), xp.asarray(y), mu=0.3, weights=xp.asarray(mask))
    w_xp, _, info = fedprox_optimum(f, 1.0, xp.asarray(p), return_info=True)
    w_np = fedprox_optimum(mo.Logistic(X, y, mu=0.3, weights=mask), 1.0, p)[0]
    assert np.linalg.norm(host(w_xp) - w_np) <= 2 * info.error_bound.max() + 1e-14


def test_multinomial_optimality_conditions():
    rng = np.random.default_rng(15)
    X = rng.standard_normal((2, 3, 12, 2))
    y = rng.integers(0, 3, (2, 3, 12))
    f = mo.Multinomial(X, y, mu=0.1, n_classes=3)
    lam = np.array([0.5, 4.0])
    w_g, w_loc, info = fedprox_optimum(f, lam, return_info=True)
    assert w_g.shape == (2, 6) and w_loc.shape == (2, 3, 6)
    # stationarity in w_i: grad f_i(w_i) = lam (w_g - w_i); in w_g: w_g = mean_i w_i (up to the certificate)
    resid = f.grad(w_loc) - lam[:, None, None] * (w_g[:, None] - w_loc)
    assert np.abs(resid).max() <= 1e-12
    gap = np.linalg.norm(w_g - w_loc.mean(axis=1), axis=-1)
    assert np.all(lam * gap <= info.mu * info.error_bound + 1e-14)
    assert np.all(info.error_bound <= 1e-11)


def test_float32_runs_in_float32_to_its_rounding_level():
    X, y, mask, mu, p = _logistic_data(16)
    f32 = mo.Logistic(X.astype(np.float32), y.astype(np.float32), mu=0.3, weights=mask.astype(np.float32))
    w32, _, info = fedprox_optimum(f32, 1.0, p.astype(np.float32), return_info=True)
    w64 = fedprox_optimum(mo.Logistic(X, y, mu=0.3, weights=mask), 1.0, p)[0]
    assert w32.dtype == np.float32
    assert np.all(
        np.linalg.norm(w32 - w64, axis=-1) <= info.error_bound + 1e-6
    )  # + rounding of the data cast
    assert np.all(info.error_bound <= 1e-4)


def test_logistic_lambda_sweep_equals_separate_calls():
    X, y, mask, mu, p = _logistic_data(17)
    f = mo.Logistic(X, y, mu=mu[:, None], weights=mask)
    lams = np.array([0.1, 10.0])
    w_g, w_loc, info = fedprox_optimum(f, lams[:, None], p, return_info=True)
    assert w_g.shape == (2, T, D) and info.error_bound.shape == (2, T)
    for k, lam in enumerate(lams):
        assert np.all(
            np.linalg.norm(w_g[k] - fedprox_optimum(f, lam, p)[0], axis=-1) <= 2 * info.error_bound[k]
        )


# --- LocalTrain / GlobalTrain -------------------------------------------------------------


def test_local_and_global_train_quadratic():
    A, b, p = _quadratic_data(11)
    q = mo.Quadratic(A, b)
    assert_close(local_train(q), np.linalg.solve(A, b[..., None])[..., 0], factor=100)
    ref = np.linalg.solve(np.einsum("tm,tmij->tij", p, A), np.einsum("tm,tmi->ti", p, b)[..., None])[..., 0]
    assert_close(global_train(q, p), ref, factor=100)


def test_local_and_global_train_logistic_stationary_from_raw_data():
    X, y, mask, mu, p = _logistic_data(12)
    f = mo.Logistic(X, y, mu=mu[:, None], weights=mask)

    def grads(W):  # raw-data gradients of L_i at W (T, m, d)
        marg = y * np.einsum("tmnd,tmd->tmn", X, W)
        s = -y / (1 + np.exp(marg))
        return np.einsum("tmn,tmnd->tmd", mask * s, X) / mask.sum(-1)[..., None] + mu[:, None, None] * W

    assert np.abs(grads(local_train(f))).max() <= 1e-13
    w = global_train(f, p)
    g = np.einsum("tm,tmd->td", p, grads(np.broadcast_to(w[:, None], (T, M, D))))
    # stopped on ||g|| / mu <= 1e-12 (1 + ||w||) (mu = the ridge: the global modulus)
    assert np.all(np.linalg.norm(g, axis=-1) <= 2e-12 * mu * (1 + np.linalg.norm(w, axis=-1)))
    # the FedProx limits: lam -> 0 gives LocalTrain, lam -> inf GlobalTrain (at rate O(lam), O(1/lam))
    small, big = fedprox_optimum(f, 1e-7, p)[1], fedprox_optimum(f, 1e7, p)[0]
    assert np.abs(small - local_train(f)).max() <= 1e-5
    assert np.abs(big - w).max() <= 1e-5


# --- bad arguments --------------------------------------------------------------------------

_A, _B, _ = _quadratic_data(13)
_Q = mo.Quadratic(_A, _B)
_LOG0 = mo.Logistic(*_logistic_data(14)[:2], mu=0.0)

BAD = [
    ("lam zero", lambda: fedprox_optimum(_Q, 0.0), ValueError, "lam must be finite and > 0"),
    (
        "lam negative array",
        lambda: fedprox_optimum(_Q, np.array([1.0, -1.0, 1.0])),
        ValueError,
        "lam must be > 0",
    ),
    ("lam nan", lambda: fedprox_optimum(_Q, float("nan")), ValueError, "lam must be finite"),
    (
        "lam bad shape",
        lambda: fedprox_optimum(_Q, np.ones(5)),
        ValueError,
        "must broadcast against the trial shape",
    ),
    ("weights wrong m", lambda: fedprox_optimum(_Q, 1.0, np.ones(M + 1)), ValueError, "m=4 clients"),
    ("weights negative", lambda: fedprox_optimum(_Q, 1.0, -np.ones(M)), ValueError, "weights must be >= 0"),
    ("weights zero", lambda: fedprox_optimum(_Q, 1.0, np.zeros(M)), ValueError, "positive sum"),
    ("not an objective", lambda: fedprox_optimum(np.eye(3), 1.0), TypeError, "moreau Objective"),
    (
        "no client axis",
        lambda: fedprox_optimum(mo.Quadratic(np.eye(3), np.ones(3)), 1.0),
        ValueError,
        "client axis",
    ),
    ("not strongly convex", lambda: fedprox_optimum(_LOG0, 1.0), ValueError, "strongly convex"),
    ("local_train not strongly convex", lambda: local_train(_LOG0), ValueError, "strongly convex"),
    (
        "global_train singular",
        lambda: global_train(mo.Quadratic(np.zeros((2, 3, 3)), np.ones((2, 3)))),
        ValueError,
        "positive definite",
    ),
    ("global_train weights", lambda: global_train(_Q, np.ones(2)), ValueError, "m=4 clients"),
]


@pytest.mark.parametrize("call, exc, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
