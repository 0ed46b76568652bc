"""moreau.fl.pfedme: Algorithm 1 of pFedMe.

Convergence to the pFedMe optimum (fedprox_optimum, uniform weights) where the algorithm reaches
it (R = 1), the point it reaches otherwise (R > 1, a finding), the deterministic recursion and
the stochastic algorithm against plain loops over trials and clients from the raw samples.

Tolerances (``_tol.assert_close``, 100 eps relative to the result's size, times ``factor``):
``factor=10`` for a reference loop against the batched run (tens of rounded steps, summed in a
different order); ``factor=100`` for an iteration's limit against a closed form or a certified
solve (the rounding of each step is amplified by 1/(1 - contraction) and by the condition number,
both up to ~1e2 on these instances); larger factors are commented where used.
"""
import numpy as np
import pytest

import moreau as mo
from moreau import fl

from _fl_helpers import Draws, Recorder, Replay, grad, least_squares, prox, sample_clients, sample_with
from _tol import assert_close, host


def _logistic(seed, T=2, m=3, n=10, d=3):
    rng = np.random.default_rng(seed)
    return mo.Logistic(rng.standard_normal((T, m, n, d)), rng.choice([-1.0, 1.0], (T, m, n)), mu=0.2)


@pytest.mark.parametrize("family", ["least_squares", "logistic"])
@pytest.mark.parametrize("beta", [1.0, 2.5])
def test_exact_full_participation_R1_reaches_the_optimum(family, beta):
    """S = N, R = 1, exact prox, full batches: gradient descent with step beta*eta on F = mean F_i."""
    f = least_squares(0)[1] if family == "least_squares" else _logistic(1)
    lam = 3.0
    w_star, theta_star = fl.fedprox_optimum(f, lam)
    L = float(np.max(host(f.smoothness())))
    L_F = lam * L / (lam + L)  # the envelopes' smoothness (FedProx analysis Lemma 2; pFedMe's L_F = lam bounds it)
    h = fl.pfedme(f, lam=lam, eta=1 / (beta * L_F), beta=beta, R=1, rounds=150)
    assert_close(h.w_global[-1], w_star, factor=100)
    assert_close(h.theta[-1], theta_star, factor=100)  # personalised models: prox of f_i at w_T


def test_R_greater_than_one_stops_at_a_drifted_point():
    """Finding: with R > 1 local rounds (exact prox, S = N, full batches) pFedMe does not converge to
    w* = argmin F.  On quadratics its fixed point solves sum_i (I - (I - eta H_i)^R)(w - c_i) = 0,
    H_i = lam A_i (A_i + lam I)^-1 the envelope Hessians, c_i = A_i^-1 b_i (each F_i's minimiser);
    beta does not move it."""
    (X, y, wts, mu), f = least_squares(2, pad=False)
    A, b = host(f.A), host(f.b)
    lam, eta, R = 2.0, 0.3, 4
    H = lam * np.linalg.solve(A + lam * np.eye(3), A)
    c = np.linalg.solve(A, b[..., None])[..., 0]
    Mk = np.eye(3) - np.linalg.matrix_power(np.eye(3) - eta * H, R)
    pinned = np.linalg.solve(Mk.sum(1), np.einsum("tmij,tmj->ti", Mk, c)[..., None])[..., 0]
    for beta in (1.0, 0.5):
        h = fl.pfedme(f, lam=lam, eta=eta, beta=beta, R=R, rounds=800)
        assert_close(h.w_global[-1], pinned, factor=100)
    w_star = fl.fedprox_optimum(f, lam)[0]
    assert np.linalg.norm(pinned - w_star, axis=-1).min() > 1e-3  # not the pFedMe optimum


def test_deterministic_recursion_written_out():
    """S = N, exact inner solves, full batches: lines 5-10 of Algorithm 1, per trial and client."""
    (X, y, wts, mu), f = least_squares(3)
    T, m, n, d = X.shape
    lam, eta, beta, R, rounds = 1.5, 0.2, 1.7, 3, 5
    w0 = np.random.default_rng(0).standard_normal((T, d))
    h = fl.pfedme(f, lam=lam, eta=eta, beta=beta, R=R, rounds=rounds, w0=w0)
    for t in range(T):
        w = w0[t]
        for r in range(rounds):
            assert_close(h.theta[r, t], [prox(X[t, i], y[t, i], wts[t, i], mu, w, lam) for i in range(m)], factor=10)
            local = []
            for i in range(m):
                wi = w.copy()
                for _ in range(R):
                    wi = wi - eta * lam * (wi - prox(X[t, i], y[t, i], wts[t, i], mu, wi, lam))
                local.append(wi)
            w = (1 - beta) * w + beta * np.mean(local, axis=0)
            assert_close(h.w_global[r + 1, t], w, factor=10)
            assert_close(h.w_local[r + 1, t], np.array(local), factor=10)
    assert (h.rounds, h.local_steps, h.prox_evals, h.grad_evals) == (rounds, R, rounds * R, 0)
    assert h.theta.shape == (rounds + 1, T, m, d) and h.w_bar.shape == (T, d)


@pytest.mark.parametrize("inner", ["exact", 4])
def test_stochastic_equals_a_loop_over_trials_and_clients(inner):
    (X, y, wts, mu), f = least_squares(4)
    T, m, n, d = X.shape
    lam, eta, beta, R, rounds, S, B, ieta = 2.0, 0.1, 1.5, 2, 3, 2, 3, 0.05
    rec = Recorder(7)
    kw = {} if inner == "exact" else {"inner_eta": ieta}
    h = fl.pfedme(f, lam=lam, eta=eta, beta=beta, R=R, rounds=rounds, S=S, batch_size=B, inner=inner, rng=rec, **kw)
    for t in range(T):
        draws, w = Draws(rec.log, t), np.zeros(d)
        for r in range(rounds):
            W = np.tile(w, (m, 1))
            for _ in range(R):
                u = draws.next()
                for i in range(m):
                    c = sample_with(u[i], wts[t, i])  # |D| samples i.i.d. from the client's data
                    if inner == "exact":
                        th = prox(X[t, i], y[t, i], c, mu, W[i], lam)
                    else:
                        th = W[i].copy()
                        for _ in range(inner):
                            th = th - ieta * (grad(X[t, i], y[t, i], c, mu, th) + lam * (th - W[i]))
                    W[i] = W[i] - eta * lam * (W[i] - th)
            chosen = sample_clients(draws.next(), S)
            w = (1 - beta) * w + beta * W[chosen].mean(axis=0)
            assert_close(h.w_global[r + 1, t], w, factor=10)
    assert h.sampled.shape == (rounds, T, S)
    assert h.grad_evals == (0 if inner == "exact" else rounds * R * inner)


def test_inner_gradient_steps_default_step_and_accuracy_nu():
    (X, y, wts, mu), f = least_squares(5)
    lam = 1.0
    exact = fl.pfedme(f, lam=lam, eta=0.3, beta=1.0, R=2, rounds=4)
    approx = fl.pfedme(f, lam=lam, eta=0.3, beta=1.0, R=2, rounds=4, inner=400)  # eta = 1/(L + lam)
    assert_close(approx.w_global, exact.w_global, factor=100)
    nu = 1e-8
    h = fl.pfedme(f, lam=lam, eta=0.3, beta=1.0, R=2, rounds=4, inner=400, nu=nu)
    # (8) held at every inner solve: theta~ within sqrt(nu)/(lam + mu) of the prox (pFedMe Lemma 1, no
    # sampling); the errors add up over the 8 local steps at most with factor 1 (each step is a contraction)
    assert np.abs(host(h.w_global) - host(exact.w_global)).max() <= 8 * 0.3 * lam * np.sqrt(nu) / (lam + mu)
    ge = host(h.grad_evals)
    assert ge.shape == (2, 4) and np.all(ge >= 8) and np.all(ge < 8 * 401)
    with pytest.raises(RuntimeError, match="accuracy"):
        fl.pfedme(f, lam=lam, eta=0.3, beta=1.0, R=1, rounds=1, inner=2, nu=1e-30)


def test_w_bar_is_theorem1_average():
    _, f = least_squares(6)
    lam, eta, T = 2.0, 0.2, 6
    h = fl.pfedme(f, lam=lam, eta=eta, beta=1.0, R=1, rounds=T)
    mu = host(f.strong_convexity()).min(axis=-1)
    mu_F = lam * mu / (lam + mu)
    alpha = (1 - eta * mu_F[None] / 2) ** -(np.arange(T)[:, None] + 1.0)  # alpha_t, t = 0..T-1
    expected = np.einsum("tk,tkd->kd", alpha, host(h.w_global[:-1])) / alpha.sum(0)[:, None]
    assert_close(h.w_bar, expected)


def test_pfedme_on_the_xp_backend(xp):
    (X, y, wts, mu), f = least_squares(8)
    g = mo.LeastSquares(xp.asarray(X), xp.asarray(y), mu=mu, weights=xp.asarray(wts))
    kw = dict(lam=1.0, eta=0.2, beta=1.2, R=2, rounds=3, S=3, batch_size=2, rng=1)
    assert_close(fl.pfedme(g, **kw).w_global, fl.pfedme(f, **kw).w_global)


def test_parameter_sweep_equals_separate_runs_on_the_same_draws():
    """lam of shape (L, 1) over trials (T,): lead (L, T); run k equals a run with lam[k] that replays
    slice k of every draw."""
    _, f = least_squares(9)
    lams = np.array([[0.5], [4.0]])
    rec = Recorder(3)
    kw = dict(eta=0.2, beta=1.3, R=2, rounds=3, S=3, batch_size=2)
    h = fl.pfedme(f, lam=lams, rng=rec, **kw)
    assert h.w_global.shape == (4, 2, 2, 3) and h.sampled.shape == (3, 2, 2, 3)
    for k in range(2):
        one = fl.pfedme(f, lam=float(lams[k, 0]), rng=Replay(rec.log, k), **kw)
        assert_close(h.w_global[:, k], one.w_global, factor=10)
        assert_close(h.theta[:, k], one.theta, factor=10)
