"""moreau.fl.per_fedavg: Algorithm 1 of Per-FedAvg and its FO / HF variants (§5, Appendix H).

The Hessian variant against the eq. (7)-(8) update computed by hand with explicit mini-batch
matrices; convergence to the minimiser of F = mean f_i(w - alpha grad f_i(w)) where the algorithm
reaches it (tau = 1, exact gradients), and the points the FO variant and tau > 1 reach instead.

Tolerances (``_tol.assert_close``, 100 eps relative to the result's size, times ``factor``):
``factor=10`` for a reference loop against the batched run (tens of rounded steps, summed in a
different order); ``factor=100`` for an iteration's limit against a closed form or a certified
solve (the rounding of each step is amplified by 1/(1 - contraction) and by the condition number,
both up to ~1e2 on these instances); larger factors are commented where used.
"""

import numpy as np
import pytest
from _fl_helpers import Draws, Recorder, grad, hess, least_squares, sample_clients, sample_with
from _tol import assert_close, host
from array_api_compat import array_namespace

import moreau as mo
from moreau import fl


def _meta_optimum(A, b, alpha):
    """Minimiser of mean_i F_i on quadratics: grad F_i(w) = (I - alpha A_i)^2 (A_i w - b_i)."""
    J = np.eye(A.shape[-1]) - alpha * A
    G = J @ J
    return np.linalg.solve((G @ A).sum(1), np.einsum("tmij,tmj->ti", G, b)[..., None])[..., 0]


@pytest.mark.parametrize("variant", ["hessian", "first_order", "hessian_free"])
def test_update_by_hand_with_explicit_matrices(variant):
    (X, y, wts, mu), f = least_squares(0)
    T, m, n, d = X.shape
    alpha, beta, tau, rounds, S, D, D1, D2, delta = 0.1, 0.2, 2, 3, 3, 3, 4, 2, 1e-3
    rec = Recorder(5)
    kw = {"delta": delta} if variant == "hessian_free" else {}
    if variant != "first_order":
        kw["D_second"] = D2
    h = fl.per_fedavg(
        f,
        alpha=alpha,
        beta=beta,
        tau=tau,
        rounds=rounds,
        S=S,
        D=D,
        D_prime=D1,
        variant=variant,
        rng=rec,
        **kw,
    )
    for t in range(T):
        draws, w = Draws(rec.log, t), np.zeros(d)
        for r in range(rounds):
            chosen = sample_clients(draws.next(), S)
            W = np.tile(w, (m, 1))
            bars = []
            for _ in range(tau):
                bars.append(W[chosen].mean(axis=0))
                u, u1 = draws.next(), draws.next()
                u2 = draws.next() if variant != "first_order" else None
                for i in range(m):

                    def g(c, th, t=t, i=i):
                        return grad(X[t, i], y[t, i], c, mu, th)

                    c, c1 = sample_with(u[i], wts[t, i]), sample_with(u1[i], wts[t, i])
                    outer = g(c1, W[i] - alpha * g(c, W[i]))
                    if variant == "hessian":  # (I - alpha H(D'')) grad f(w~, D'), H an explicit d x d matrix
                        c2 = sample_with(u2[i], wts[t, i])
                        outer = (np.eye(d) - alpha * hess(X[t, i], c2, mu)) @ outer
                    elif variant == "hessian_free":  # eq. (120)
                        c2 = sample_with(u2[i], wts[t, i])
                        diff = g(c2, W[i] + delta * outer) - g(c2, W[i] - delta * outer)
                        outer = outer - alpha * diff / (2 * delta)
                    W[i] = W[i] - beta * outer
            w = W[chosen].mean(axis=0)
            assert_close(h.w_global[r + 1, t], w, factor=10)
            assert_close(h.w_bar[r, :, t], np.array(bars), factor=10)
    per = {"hessian": 2, "first_order": 2, "hessian_free": 4}[variant]
    ge = host(h.grad_evals)
    assert ge.shape == (T, m) and ge.sum() == per * tau * rounds * S * T
    assert h.w_bar.shape == (rounds, tau, T, d) and h.theta.shape == (rounds + 1, T, m, d)


@pytest.mark.parametrize("variant", ["hessian", "hessian_free"])
def test_exact_gradients_tau1_reach_the_meta_optimum(variant):
    (X, y, wts, mu), f = least_squares(1, pad=False)
    A, b = host(f.A), host(f.b)
    alpha = 0.5 / float(host(f.smoothness()).max())
    kw = {"delta": 0.1} if variant == "hessian_free" else {}  # gradients are linear: any delta is exact
    h = fl.per_fedavg(f, alpha=alpha, beta=0.5, tau=1, rounds=3000, variant=variant, **kw)
    assert_close(h.w_global[-1], _meta_optimum(A, b, alpha), factor=100)
    W = host(h.w_global[-1])[:, None]
    assert_close(h.theta[-1], W - alpha * ((A @ W[..., None])[..., 0] - b))  # one exact step per client


def test_exact_gradients_logistic_stationary_for_the_meta_objective():
    rng = np.random.default_rng(2)
    f = mo.Logistic(rng.standard_normal((2, 3, 10, 3)), rng.choice([-1.0, 1.0], (2, 3, 10)), mu=0.3)
    alpha = 0.2
    h = fl.per_fedavg(f, alpha=alpha, beta=1.0, tau=1, rounds=600)
    g = host(mo.meta_objective(f, alpha).grad(h.w_global[-1][:, None])).mean(axis=1)
    assert np.abs(g).max() <= 1e-12


def test_first_order_and_local_steps_stop_elsewhere():
    """Findings (known for FO-MAML / local SGD): with exact gradients
    - the FO variant (eq. (112)) converges to the zero of mean_i grad f_i(w - alpha grad f_i(w)),
      on quadratics sum_i A_i (I - alpha A_i)(w - c_i) = 0, not to the minimiser of F;
    - tau > 1 local steps (Hessian variant) converge to the zero of
      sum_i (I - (I - beta G_i)^tau)(w - c_i), G_i = (I - alpha A_i)^2 A_i (client drift)."""
    (X, y, wts, mu), f = least_squares(3, pad=False)
    A, b = host(f.A), host(f.b)
    alpha = 0.5 / float(host(f.smoothness()).max())
    eye = np.eye(3)
    c = np.linalg.solve(A, b[..., None])[..., 0]
    target = _meta_optimum(A, b, alpha)

    def zero(Mk):
        return np.linalg.solve(Mk.sum(1), np.einsum("tmij,tmj->ti", Mk, c)[..., None])[..., 0]

    fo = fl.per_fedavg(f, alpha=alpha, beta=0.5, tau=1, rounds=3000, variant="first_order")
    assert_close(fo.w_global[-1], zero(A @ (eye - alpha * A)), factor=100)
    beta, tau = 0.5, 4
    G = (eye - alpha * A) @ (eye - alpha * A) @ A
    drift = fl.per_fedavg(f, alpha=alpha, beta=beta, tau=tau, rounds=2000)
    pinned = zero(eye - np.linalg.matrix_power(eye - beta * G, tau))
    assert_close(drift.w_global[-1], pinned, factor=100)
    for point in (zero(A @ (eye - alpha * A)), pinned):
        assert np.linalg.norm(point - target, axis=-1).min() > 1e-4


def test_alpha_zero_is_fedavg():
    _, f = least_squares(4)
    a = fl.per_fedavg(f, alpha=0.0, beta=0.3, tau=3, rounds=5)
    b = fl.fedavg(f, eta=0.3, tau=3, rounds=5)
    assert_close(a.w_global, b.w_global)


# the xp tests compare a run on another array namespace with the numpy run (the reference, checked against
# plain loops above); numpy against itself could not fail, so they run on the other backends only
ON_OTHER_BACKENDS = pytest.mark.parametrize(
    "xp", ["array_api_strict", pytest.param("cupy", marks=pytest.mark.gpu)], indirect=True
)


@ON_OTHER_BACKENDS
def test_per_fedavg_on_the_xp_backend(xp):
    (X, y, wts, mu), f = least_squares(5)
    g = mo.LeastSquares(xp.asarray(X), xp.asarray(y), mu=mu, weights=xp.asarray(wts))
    kw = dict(alpha=0.1, beta=0.2, tau=2, rounds=2, S=2, D=2, D_prime=2, D_second=2, rng=3)
    h, ref = fl.per_fedavg(g, **kw), fl.per_fedavg(f, **kw)
    ns = array_namespace(xp.asarray(X))
    for name in ("w_global", "w_local", "theta", "w_bar"):  # the models stay in the input's namespace
        assert array_namespace(getattr(h, name)) is ns, name
        assert_close(getattr(h, name), getattr(ref, name), err_msg=name)
