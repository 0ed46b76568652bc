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
from _fl_helpers import Draws, Recorder, Replay, grad, least_squares, prox, sample_clients, sample_with
from _tol import assert_close, host
from array_api_compat import array_namespace

import moreau as mo
from moreau import fl


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
    L_F = (
        lam * L / (lam + L)
    )  # the envelopes' smoothness (FedProx analysis Lemma 2; pFedMe's L_F = lam bounds it)
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
            assert_close(
                h.theta[r, t], [prox(X[t, i], y[t, i], wts[t, i], mu, w, lam) for i in range(m)], factor=10
            )
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
    h = fl.pfedme(
        f, lam=lam, eta=eta, beta=beta, R=R, rounds=rounds, S=S, batch_size=B, inner=inner, rng=rec, **kw
    )
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


# the xp tests compare a run on another array namespace with the numpy run (the reference, checked against
# plain loops above); numpy against itself could not fail, so they run on the other backends only
ON_OTHER_BACKENDS = pytest.mark.parametrize(
    "xp", ["array_api_strict", pytest.param("cupy", marks=pytest.mark.gpu)], indirect=True
)


@ON_OTHER_BACKENDS
def test_pfedme_on_the_xp_backend(xp):
    (X, y, wts, mu), f = least_squares(8)
    g = mo.LeastSquares(xp.asarray(X), xp.asarray(y), mu=mu, weights=xp.asarray(wts))
    kw = dict(lam=1.0, eta=0.2, beta=1.2, R=2, rounds=3, S=3, batch_size=2, rng=1)
    h, ref = fl.pfedme(g, **kw), fl.pfedme(f, **kw)
    ns = array_namespace(xp.asarray(X))
    for name in ("w_global", "w_local", "theta", "w_bar"):  # the models stay in the input's namespace
        assert array_namespace(getattr(h, name)) is ns, name
        assert_close(getattr(h, name), getattr(ref, name), err_msg=name)


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


# --- personalised models without per-round certified proxes; gathered mini-batches -------------


def _multinomial_raw(seed, m=5, n=9, D=3, C=3):
    """Padded multinomial clients: raw (X, one-hot Y, valid rows n_i) and the objective."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n, D))
    y = rng.integers(0, C, (m, n))
    nv = rng.integers(3, n + 1, m)
    wts = (np.arange(n) < nv[:, None]).astype(float)
    return (X, (y[..., None] == np.arange(C)).astype(float), nv), mo.Multinomial(
        X, y, n_classes=C, mu=0.2, weights=wts
    )


def _softmax_grad(X, Y, mu, theta):
    """Mean softmax cross-entropy gradient over the rows given, plus the ridge (numpy, per client)."""
    Z = X @ theta.reshape(X.shape[-1], -1)
    P = np.exp(Z - Z.max(axis=-1, keepdims=True))
    P /= P.sum(axis=-1, keepdims=True)
    return (X.T @ (P - Y) / X.shape[0]).reshape(-1) + mu * theta


def _raw_pfedme(rng, X, Y, nv, mu, L, *, lam, eta, beta, R, K, rounds, S, B):
    """pFedMe from the raw rows, one client at a time (the loop experiments/_pfedme_runs.py ran before
    it called moreau.fl): per local round one draw rng.random((m, B)), row floor(u n_i); inner step
    1/(L_i + lam); clients picked by rng.permutation(m)[:S] (the experiment's stream)."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w, theta = np.zeros(DC), np.zeros((m, DC))
    for _ in range(rounds):
        W = np.tile(w, (m, 1))
        for _ in range(R):
            u = rng.random((m, B))
            for i in range(m):
                rows = np.minimum((u[i] * nv[i]).astype(int), nv[i] - 1)
                th = W[i].copy()
                for _ in range(K):
                    th = th - (_softmax_grad(X[i, rows], Y[i, rows], mu, th) + lam * (th - W[i])) / (
                        L[i] + lam
                    )
                theta[i] = th
                W[i] = W[i] - eta * lam * (W[i] - th)
        mask = np.zeros(m, dtype=bool)
        mask[rng.permutation(m)[:S] if S < m else np.arange(m)] = True
        w = (1 - beta) * w + beta * W[mask].mean(axis=0)
    return w, theta


def test_client_step_gathered_batches_and_inner_personal_against_raw_rows():
    """inner_eta='client', mini-batches gathered from the drawn rows, personal='inner' (the last inner
    solution), S = N: the raw per-client loop on the same draws."""
    (X, Y, nv), f = _multinomial_raw(0)
    L = host(f.smoothness())
    kw = dict(lam=3.0, eta=0.05, beta=1.4, R=3, K=4, rounds=4)
    h = fl.pfedme(
        f,
        batch_size=4,
        inner=4,
        inner_eta="client",
        rng=np.random.default_rng(5),
        personal="inner",
        **{k: v for k, v in kw.items() if k != "K"},
    )
    w, theta = _raw_pfedme(np.random.default_rng(5), X, Y, nv, 0.2, L, S=5, B=4, **kw)
    assert_close(h.w_global[-1], w, factor=10)
    assert_close(h.theta[-1], theta, factor=10)
    assert h.theta.shape == h.w_local.shape and np.array_equal(host(h.theta[0]), host(h.w_local[0]))


def test_experiment_pfedme_is_the_loop_it_replaced():
    """experiments/_pfedme_runs.pfedme (moreau.fl.pfedme, one round per call, the experiment's client
    sampling) equals the raw loop with client sampling, mini-batches and per-client steps to rounding."""
    from moreau.experiments import _pfedme_runs as runs

    (X, Y, nv), _ = _multinomial_raw(1, m=6)
    f = runs.objective(X, Y, nv, 0.2)
    L = host(f.smoothness())
    for S, B in ((2, 3), (6, None)):
        kw = dict(lam=5.0, eta=0.03, beta=2.0, R=2, K=3, rounds=4, S=S)
        w, theta = runs.pfedme(np.random.default_rng(9), X, Y, nv, 0.2, inner_eta="client", B=B, **kw)
        ref_w, ref_theta = (
            _raw_pfedme(np.random.default_rng(9), X, Y, nv, 0.2, L, B=B or 0, **kw)
            if B
            else _full_batch_reference(X, Y, nv, L, **kw)
        )
        assert_close(w, ref_w, factor=10)
        assert_close(theta, ref_theta, factor=10)
    with pytest.raises(ValueError, match="one step for every client"):
        runs.pfedme(
            np.random.default_rng(0),
            X,
            Y,
            nv,
            0.2,
            inner_eta=np.arange(1.0, 7.0) / 10,
            lam=1.0,
            eta=0.1,
            beta=1.0,
            R=1,
            K=1,
            rounds=1,
        )


def _full_batch_reference(X, Y, nv, L, *, lam, eta, beta, R, K, rounds, S):
    """B = None: every valid row each step, S = N (no draw)."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w, theta = np.zeros(DC), np.zeros((m, DC))
    for _ in range(rounds):
        W = np.tile(w, (m, 1))
        for _ in range(R):
            for i in range(m):
                th = W[i].copy()
                for _ in range(K):
                    th = th - (_softmax_grad(X[i, : nv[i]], Y[i, : nv[i]], 0.2, th) + lam * (th - W[i])) / (
                        L[i] + lam
                    )
                theta[i] = th
                W[i] = W[i] - eta * lam * (W[i] - th)
        w = (1 - beta) * w + beta * W.mean(axis=0)
    return w, theta


@pytest.mark.parametrize("family", ["least_squares", "logistic", "multinomial", "scattered padding"])
def test_gathered_minibatch_is_the_weighted_one(family):
    """The gathered mini-batch draws what sample_counts draws (same stream, same rows, as counts) and
    is the same function as the counts-weighted objective; zero weights anywhere, not only after."""
    from moreau.fl._minibatches import sample_counts
    from moreau.fl._pfedme import _minibatch, _valid_rows

    if family == "least_squares":
        f = least_squares(11)[1]
    elif family == "logistic":
        rng = np.random.default_rng(11)
        f = mo.Logistic(
            rng.standard_normal((2, 3, 7, 3)),
            rng.choice([-1.0, 1.0], (2, 3, 7)),
            mu=0.1,
            weights=(np.arange(7) < rng.integers(2, 8, (2, 3))[..., None]).astype(float),
        )
    elif family == "multinomial":
        f = _multinomial_raw(11)[1]
    else:
        rng = np.random.default_rng(12)
        wts = (rng.random((2, 3, 9)) < 0.5).astype(float)
        wts[..., 4] = 1.0  # every client keeps a row
        f = mo.Logistic(
            rng.standard_normal((2, 3, 9, 3)), rng.choice([-1.0, 1.0], (2, 3, 9)), mu=0.1, weights=wts
        )
    lead = tuple(f.batch_shape[:-1])
    rows = _valid_rows(f, lead)
    assert (rows[1] is not None) == (family == "scattered padding")
    fb = _minibatch(f, np.random.default_rng(4), lead, 5, rows)
    counts = sample_counts(np.random.default_rng(4), f, lead, 5, replace=True)
    fw = f.with_weights(counts)
    theta = np.random.default_rng(0).standard_normal(tuple(f.batch_shape) + (f.dim,))
    assert fb.X.shape[-2] == 5
    assert_close(fb.grad(theta), fw.grad(theta))
    assert_close(fb.value(theta), fw.value(theta))
    assert_close(fb.smoothness(), fw.smoothness())
    if family == "least_squares":
        assert_close(fb.A, fw.A)  # the exact inner solve uses A and b
        assert_close(fb.b, fw.b)


def test_personal_options_leave_the_iterates_unchanged():
    (X, y, wts, mu), f = least_squares(12)
    kw = dict(lam=2.0, eta=0.2, beta=1.3, R=1, rounds=4)
    cert = fl.pfedme(f, **kw)
    inner = fl.pfedme(f, personal="inner", **kw)
    none = fl.pfedme(f, personal="none", **kw)
    assert none.theta is None and none.params["personal"] == "none"
    for h in (inner, none):
        assert np.array_equal(host(h.w_global), host(cert.w_global))
    # R = 1, exact inner, full batches: round t's inner solution is prox(w_t), the certified model
    assert_close(inner.theta[1:], cert.theta[:-1])
    assert np.array_equal(
        host(inner.theta[0]), np.broadcast_to(host(inner.w_global[0])[..., None, :], inner.theta.shape[1:])
    )


PFEDME_BAD = [
    ("personal unknown", dict(personal="prox"), ValueError, "personal must be one of"),
    ("inner_eta unknown string", dict(inner=2, inner_eta="global"), ValueError, "or 'client'"),
    ("inner_eta client with exact inner", dict(inner_eta="client"), TypeError, "applies only to an inner"),
]


@pytest.mark.parametrize("kw, exc, match", [b[1:] for b in PFEDME_BAD], ids=[b[0] for b in PFEDME_BAD])
def test_bad_personal_and_step_arguments(kw, exc, match):
    _, f = least_squares(13)
    with pytest.raises(exc, match=match):
        fl.pfedme(f, lam=1.0, eta=0.1, beta=1.0, R=1, rounds=1, **kw)
