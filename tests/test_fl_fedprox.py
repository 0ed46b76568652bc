"""moreau.fl: LocalTrain by GD, one-stage FedProx (Algorithm 1) and FedAvg.

Convergence to the exact targets (fedprox_optimum, local_train, global_train), batched runs
against plain loops over trials and clients written from the raw samples, FedAvg's client drift
pinned at its own fixed point, history shapes and counters.

Tolerances (``_tol.assert_close``, 100 eps relative to the result's size, times ``factor``):
``factor=10`` for a reference loop against the batched run (tens of rounded steps, summed in a
different order); ``factor=100`` for an iteration's limit against a closed form or a certified
solve (the rounding of each step is amplified by 1/(1 - contraction) and by the condition number,
both up to ~1e2 on these instances); larger factors are commented where used.
"""

import numpy as np
import pytest
from _fl_helpers import Draws, Recorder, grad, least_squares, sample_clients, sample_without
from _tol import assert_close, host
from array_api_compat import array_namespace

import moreau as mo
from moreau import fl


def _constants(f):
    return float(np.max(host(f.smoothness()))), float(np.min(host(f.strong_convexity())))


def _logistic(seed, T=2, m=3, n=10, d=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, m, n, d))
    y = rng.choice([-1.0, 1.0], (T, m, n))
    return mo.Logistic(X, y, mu=0.2)


# --- FedProx, Algorithm 1 -------------------------------------------------------------------


@pytest.mark.parametrize("family", ["least_squares", "logistic"])
@pytest.mark.parametrize("lam", [0.1, 1.0, 10.0])
def test_fedprox_converges_to_the_fedprox_optimum(family, lam):
    f = least_squares(0)[1] if family == "least_squares" else _logistic(1)
    L, mu = _constants(f)
    # Corollary 1's tuning: eta = 1/(lam + L), gamma = 1/(2 L_g), K ~ (lam + L)/(lam + mu)
    L_g = lam * L / (lam + L)
    K = int(np.ceil(5 * (lam + L) / (lam + mu)))
    h = fl.fedprox(f, lam=lam, gamma=1 / (2 * L_g), eta=1 / (lam + L), K=K, rounds=400)
    w_g, w_loc = fl.fedprox_optimum(f, lam)
    assert_close(h.w_global[-1], w_g, factor=100)  # linear convergence to rounding
    assert_close(h.w_local[-1], w_loc, factor=100)


def test_fedprox_equals_a_loop_over_trials_and_clients():
    (X, y, wts, mu), f = least_squares(2)
    T, m, n, d = X.shape
    lam, gamma, eta, K, rounds = 0.7, 0.9, 0.2, 3, 6
    rng = np.random.default_rng(0)
    w0, local0, p = rng.standard_normal((T, d)), rng.standard_normal((T, m, d)), rng.dirichlet(np.ones(m), T)
    h = fl.fedprox(f, lam=lam, gamma=gamma, eta=eta, K=K, rounds=rounds, w0=w0, local0=local0, weights=p)
    for t in range(T):  # Algorithm 1 line by line
        wg, W = w0[t].copy(), local0[t].copy()
        for r in range(rounds):
            for i in range(m):
                for _ in range(K):
                    W[i] = W[i] - eta * (grad(X[t, i], y[t, i], wts[t, i], mu, W[i]) + lam * (W[i] - wg))
            wg = wg - gamma * sum(p[t, i] * lam * (wg - W[i]) for i in range(m))
            assert_close(h.w_global[r + 1, t], wg, factor=10)
            assert_close(h.w_local[r + 1, t], W, factor=10)
    assert h.w_global.shape == (rounds + 1, T, d) and h.w_local.shape == (rounds + 1, T, m, d)
    assert (h.rounds, h.local_steps, h.grad_evals) == (rounds, K, rounds * K)


def test_fedprox_parameter_sweep_equals_separate_runs():
    _, f = least_squares(3)
    lams = np.array([0.3, 3.0])[:, None]
    h = fl.fedprox(f, lam=lams, gamma=0.5, eta=0.1, K=2, rounds=5)
    assert h.w_global.shape == (6, 2, 2, 3)
    for k, lam in enumerate(lams[:, 0]):
        assert_close(
            h.w_global[:, k], fl.fedprox(f, lam=float(lam), gamma=0.5, eta=0.1, K=2, rounds=5).w_global
        )


# the xp tests compare a run on another array namespace with the numpy run (the reference, checked against
# plain loops above); numpy against itself could not fail, so they run on the other backends only
ON_OTHER_BACKENDS = pytest.mark.parametrize(
    "xp", ["array_api_strict", pytest.param("cupy", marks=pytest.mark.gpu)], indirect=True
)


@ON_OTHER_BACKENDS
def test_fedprox_on_the_xp_backend(xp):
    (X, y, wts, mu), f = least_squares(4)
    g = mo.LeastSquares(xp.asarray(X), xp.asarray(y), mu=mu, weights=xp.asarray(wts))
    lam = np.array([[0.5], [2.0]])  # host parameters are accepted on every backend
    kw = dict(lam=lam, gamma=0.5, eta=0.2, K=2, rounds=3, weights=np.arange(1.0, 5.0))
    h, ref = fl.fedprox(g, **kw), fl.fedprox(f, **kw)
    ns = array_namespace(xp.asarray(X))
    for name in ("w_global", "w_local"):  # the models stay in the input's namespace
        assert array_namespace(getattr(h, name)) is ns, name
        assert_close(getattr(h, name), getattr(ref, name), err_msg=name)


# --- LocalTrain by GD, GlobalTrain by FedAvg ------------------------------------------------


@pytest.mark.parametrize("family", ["least_squares", "logistic"])
def test_gd_and_fedavg_reach_local_and_global_train(family):
    f = least_squares(5)[1] if family == "least_squares" else _logistic(6)
    L, mu = _constants(f)
    h = fl.gd(f, eta=1 / L, steps=int(40 * L / mu))
    assert_close(h.w_local[-1], fl.local_train(f), factor=100)
    assert h.w_global is None and h.w_local.shape[0] == h.grad_evals + 1
    a = fl.fedavg(f, eta=1 / L, tau=1, rounds=int(40 * L / mu))
    assert_close(a.w_global[-1], fl.global_train(f), factor=100)


def test_fedavg_client_drift_fixed_point():
    """Finding (known): with tau > 1 local steps FedAvg does not reach GlobalTrain's minimiser.
    On quadratics it converges to the w with sum_i p_i (I - (I - eta A_i)^tau)(w - A_i^-1 b_i) = 0."""
    (X, y, wts, mu), f = least_squares(7, pad=False)
    A, b = host(f.A), host(f.b)
    L, _ = _constants(f)
    eta, tau = 0.5 / L, 5
    h = fl.fedavg(f, eta=eta, tau=tau, rounds=3000)
    Mk = np.eye(3) - np.linalg.matrix_power(np.eye(3) - eta * A, tau)
    c = np.linalg.solve(A, b[..., None])[..., 0]
    pinned = np.linalg.solve(Mk.mean(1), np.einsum("tmij,tmj->ti", Mk, c)[..., None] / A.shape[1])[..., 0]
    assert_close(h.w_global[-1], pinned, factor=100)
    assert np.linalg.norm(pinned - fl.global_train(f), axis=-1).min() > 1e-3  # a different point


def test_fedavg_stochastic_equals_a_loop_over_trials_and_clients():
    (X, y, wts, mu), f = least_squares(8)
    T, m, n, d = X.shape
    eta, tau, rounds, S, B = 0.3, 3, 4, 2, 3
    p = np.array([0.1, 0.2, 0.3, 0.4])
    rec = Recorder(11)
    h = fl.fedavg(f, eta=eta, tau=tau, rounds=rounds, S=S, batch_size=B, weights=p, rng=rec)
    for t in range(T):
        draws, w = Draws(rec.log, t), np.zeros(d)
        evals = np.zeros(m, dtype=int)
        for r in range(rounds):
            chosen = sample_clients(draws.next(), S)
            np.testing.assert_array_equal(h.sampled[r, t], chosen)
            W = np.tile(w, (m, 1))
            for _ in range(tau):
                keys = draws.next()
                for i in range(m):
                    c = sample_without(keys[i], wts[t, i], B)
                    W[i] = W[i] - eta * grad(X[t, i], y[t, i], c, mu, W[i])
            w = sum(p[i] * W[i] for i in chosen) / p[chosen].sum()
            evals[chosen] += tau
            assert_close(h.w_global[r + 1, t], w, factor=10)
        np.testing.assert_array_equal(h.grad_evals[t], evals)
    assert h.sampled.shape == (rounds, T, S)


def test_minibatches_never_draw_padding_and_have_the_right_size():
    from moreau.fl._minibatches import sample_counts

    _, f = least_squares(9, n=6)
    valid = host(f.weights) > 0
    for replace in (False, True):
        c = sample_counts(np.random.default_rng(0), f, (5,) + f.batch_shape[:-1], 3, replace=replace)
        assert np.all(c * ~valid == 0)
        assert np.all(c.sum(-1) == 3)
        if not replace:
            assert c.max() == 1


def test_client_sampling_is_uniform():
    from moreau.fl._common import sample_clients as sample

    idx = sample(np.random.default_rng(0), (20000,), 5, 2)
    assert np.all(idx[:, 0] < idx[:, 1])
    freq = np.bincount(idx.ravel(), minlength=5) / idx.size
    assert np.abs(freq - 0.2).max() < 0.01  # 5 sigma of a binomial frequency with 40000 draws is 0.01


@ON_OTHER_BACKENDS
def test_gd_and_fedavg_on_the_xp_backend(xp):
    (X, y, wts, mu), f = least_squares(10)
    g = mo.LeastSquares(xp.asarray(X), xp.asarray(y), mu=mu, weights=xp.asarray(wts))
    kw = dict(eta=0.2, tau=2, rounds=3, S=3, batch_size=2, rng=4)
    ns = array_namespace(xp.asarray(X))
    avg, avg_ref = fl.fedavg(g, **kw), fl.fedavg(f, **kw)
    for name in ("w_global", "w_local"):  # the models stay in the input's namespace
        assert array_namespace(getattr(avg, name)) is ns, name
        assert_close(getattr(avg, name), getattr(avg_ref, name), err_msg=name)
    gd = fl.gd(g, eta=0.2, steps=3)
    assert array_namespace(gd.w_local) is ns
    assert_close(gd.w_local, fl.gd(f, eta=0.2, steps=3).w_local)
