"""moreau.fl.pflmf(variant="fedper"): what the authors' pFL^MF code runs (FL-Bench's FedPer client), against
a loop over trials and clients written here: each sampled client copies U, takes tau simultaneous SGD steps
on (U_i, v_i), keeps v_i; the server averages the sampled copies of U with the weights p_i.

Tolerances (``_tol.assert_close``, 100 eps relative): ``factor=10`` for the loop against the batched run
(the same products summed in another order).
"""

import numpy as np
import pytest
from _fl_helpers import Recorder, Replay, grad, least_squares, sample_without
from _tol import assert_close, host

import moreau as mo
from moreau.fl._pflmf import pflmf


def test_fedper_equals_a_loop_over_trials_and_clients():
    (X, y, wts, mu), f = least_squares(3, T=2, m=5, n=8, d=3)
    T, m, n, d = X.shape
    r, tau, rounds, eta_u, eta_v, p, size = 2, 3, 5, 0.02, 0.03, 0.6, 4
    rng = np.random.default_rng(2)
    U0, V0, pw = rng.standard_normal((T, d, r)), rng.standard_normal((T, m, r)), rng.dirichlet(np.ones(m), T)
    rec = Recorder(5)
    h = pflmf(
        f, r, rounds=rounds, eta_u=eta_u, eta_v=eta_v, tau=tau, p=p, batch_size=size, weights=pw,
        U0=U0, V0=V0, variant="fedper", rng=rec,
    )  # fmt: skip
    for t in range(T):
        draws = Replay(rec.log, t)
        U, V = U0[t].copy(), V0[t].copy()
        for k in range(rounds):
            on = draws.random((m,)) < p
            copies = [U.copy() for _ in range(m)]
            for _ in range(tau):
                keys = draws.random((m, n))
                for i in range(m):
                    c = sample_without(keys[i], wts[t, i], size)
                    if on[i]:
                        g = grad(X[t, i], y[t, i], c, mu, copies[i] @ V[i])
                        copies[i], V[i] = (
                            copies[i] - eta_u * np.outer(g, V[i]),
                            V[i] - eta_v * copies[i].T @ g,
                        )
            if on.any():
                U = sum(pw[t, i] * copies[i] for i in range(m) if on[i]) / pw[t, on].sum()
            assert_close(h.w_global[k + 1, t], U, factor=10)
            assert_close(h.w_local[k + 1, t], V, factor=10)
            assert np.array_equal(h.sampled[k, t], on)
        assert np.array_equal(h.grad_evals[t], tau * h.sampled[:, t].sum(axis=0))


def test_fedper_is_not_the_alternating_method_and_updates_the_personal_factors():
    (X, y, wts, mu), f = least_squares(4, T=1, m=4, n=6, d=3)
    kw = dict(rounds=6, eta_u=0.1, eta_v=0.1, tau=2, rng=0)
    a, b = pflmf(f, 2, **kw), pflmf(f, 2, variant="fedper", **kw)
    assert np.max(np.abs(host(a.w_global)[-1] - host(b.w_global)[-1])) > 1e-6
    assert np.max(np.abs(host(b.w_local)[-1] - host(b.w_local)[0])) > 1e-3  # v_i move
    assert b.grad_evals == 6 * 2 and b.params["variant"] == "fedper"


def test_fedper_one_client_one_step_is_a_joint_gradient_step():
    """m = 1, tau = 1, p = 1: (U, v) <- (U - eta_u g v^T, v - eta_v U^T g), g = grad f(U v), both at the old
    point (simultaneous, unlike the alternating method's v first)."""
    rng = np.random.default_rng(6)
    A = rng.standard_normal((3, 3))
    A = A @ A.T + np.eye(3)
    bvec = rng.standard_normal(3)
    f = mo.Quadratic(A[None, None], bvec[None, None])
    U0, V0 = rng.standard_normal((1, 3, 2)), rng.standard_normal((1, 1, 2))
    h = pflmf(f, 2, rounds=1, eta_u=0.05, eta_v=0.07, U0=U0, V0=V0, variant="fedper")
    g = A @ (U0[0] @ V0[0, 0]) - bvec
    assert_close(host(h.w_global)[1, 0], U0[0] - 0.05 * np.outer(g, V0[0, 0]))
    assert_close(host(h.w_local)[1, 0, 0], V0[0, 0] - 0.07 * U0[0].T @ g)


def test_fedper_runs_on_array_api_strict():
    xps = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(8)
    A = rng.standard_normal((2, 4, 3, 3))
    A = A @ np.swapaxes(A, -1, -2) + np.eye(3)
    b = rng.standard_normal((2, 4, 3))
    kw = dict(rounds=3, eta_u=0.05, eta_v=0.05, tau=2, p=0.5, variant="fedper", rng=1)
    ref = pflmf(mo.Quadratic(A, b), 2, **kw)
    h = pflmf(mo.Quadratic(xps.asarray(A), xps.asarray(b)), 2, **kw)
    assert type(h.w_global).__module__.startswith("array_api_strict")
    assert_close(host(h.w_global), host(ref.w_global), factor=10)


def test_an_unknown_variant_is_refused():
    f = least_squares(1, T=1, m=2, n=4, d=2)[1]
    with pytest.raises(ValueError, match="variant must be one of"):
        pflmf(f, 1, rounds=1, eta_u=0.1, eta_v=0.1, variant="FedPer", rng=0)
