"""moreau.fl.fedfw with several local steps (K), partial participation (S of n clients) and the authors'
restart: the batched run against a per-trial, per-client loop written here (scalar oracles, the client
sampling and noise replayed from a generator seeded alike), and the restart against the distributed
Frank–Wolfe step it reduces to with one local step.

Tolerances (``_tol.assert_close``, 100 eps relative): ``factor=10`` for the loop against the batched run
(the same operations, summed in another order).
"""

import numpy as np
import pytest
from _tol import assert_close, host

import moreau as mo
from moreau.fl._fedfw import fedfw, schedules
from moreau.fl._lmo import Box, L1Ball, L2Ball

SETS = {
    "box": lambda T, d, rng: Box(-rng.uniform(0.5, 2, (T, d)), rng.uniform(0.5, 2, (T, d))),
    "l1": lambda T, d, rng: L1Ball(rng.uniform(0.5, 2, T)),
    "l2": lambda T, d, rng: L2Ball(rng.uniform(0.5, 2, T)),
}


def _clients(seed, T=2, m=5, d=3):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((T, m, d, d))
    A = M @ np.swapaxes(M, -1, -2) / d + 0.1 * np.eye(d)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    b = rng.standard_normal((T, m, d)) * 3
    return A, b, mo.Quadratic(A, b)


def _lmo(C, t, g):
    """argmin over the set of <g, x>, written plainly for one trial."""
    if isinstance(C, L2Ball):
        n = np.linalg.norm(g)
        return -C.r[t] * g / n if n > 0 else np.zeros_like(g)
    if isinstance(C, L1Ball):
        k = int(np.argmax(np.abs(g)))
        s = np.zeros_like(g)
        s[k] = -C.r[t] * np.sign(g[k])
        return s
    return np.where(g > 0, C.lo[t], C.hi[t])


def _center(C, T, d):
    c = np.asarray(C.center(d), dtype=float)
    return np.broadcast_to(c, (T, d)).copy()


def _loop(A, b, C, R, lam, eta, K, S, restart, seed, sigma=None, rho=None, dual_step=None):
    """Round by round, trial by trial, client by client: S clients from the smallest of m uniform keys, K
    steps (4.5)-(4.6) for each with the round's lam, eta and xbar, the others kept; xbar the mean of all
    models (restart: every client from xbar, xbar the mean of the sampled ones).  ``dual_step`` (one per
    trial): FedFW+, y_i += dual_step (x_i - xbar) before each step, y_i added to the oracle's input."""
    T, m, d = b.shape
    rng = np.random.default_rng(seed)
    xbar = _center(C, T, d)
    X = np.repeat(xbar[:, None], m, axis=1)
    mom = {}
    y = np.zeros((T, m, d))
    xs, picks, evals = [xbar.copy()], [], np.zeros((T, m), dtype=int)
    for k in range(R):
        if S < m:
            keys = rng.random((T, m))
            chosen = [sorted(np.argsort(keys[t])[:S]) for t in range(T)]
            picks.append(chosen)
        else:
            chosen = [list(range(m))] * T
        if restart:
            X = np.repeat(xbar[:, None], m, axis=1)
        for _ in range(K):
            noise = rng.standard_normal((T, m, d)) if sigma is not None else None
            Xn = X.copy()
            for t in range(T):
                for i in chosen[t]:
                    g = A[t, i] @ X[t, i] - b[t, i]
                    if noise is not None:
                        g = g + sigma * noise[t, i] / np.sqrt(d)
                    if rho is not None:
                        mom[t, i] = g if (t, i) not in mom else (1 - rho[k]) * mom[t, i] + rho[k] * g
                        g = mom[t, i]
                    v = g / m + lam[k][t] * (X[t, i] - xbar[t])
                    if dual_step is not None:
                        y[t, i] = y[t, i] + dual_step[t] * (X[t, i] - xbar[t])
                        v = v + y[t, i]
                    s = _lmo(C, t, v)
                    Xn[t, i] = (1 - eta[k]) * X[t, i] + eta[k] * s
                    evals[t, i] += 1
            X = Xn
        if restart:
            xbar = np.stack([X[t, chosen[t]].mean(axis=0) for t in range(T)])
        else:
            xbar = X.mean(axis=1)
        xs.append(xbar.copy())
    return np.array(xs), X, np.array(picks), evals


@pytest.mark.parametrize("name", list(SETS))
@pytest.mark.parametrize("restart", [False, True])
def test_local_steps_and_sampling_equal_a_loop(name, restart):
    A, b, f = _clients(1)
    C = SETS[name](2, 3, np.random.default_rng(2))
    R, K, S, lam0 = 12, 3, 2, np.array([0.5, 2.0])
    h = fedfw(f, C, rounds=R, lam0=lam0, K=K, S=S, restart=restart, rng=7)
    c, eta, _ = schedules(R)
    xs, X, picks, evals = _loop(A, b, C, R, c[:, None] * lam0, eta, K, S, restart, 7)
    assert_close(h.w_global, xs, factor=10)
    assert_close(h.w_local[-1], X, factor=10)
    assert np.array_equal(h.sampled, picks)
    assert np.array_equal(h.grad_evals, evals) and h.local_steps == K
    D, nnz = host(h.directions), h.nnz
    assert D.shape == (R * K, 2, 5, 3) and nnz.shape == (R * K, 2, 5)
    on = np.zeros((R, 2, 5), dtype=bool)
    np.put_along_axis(on, picks, True, axis=-1)
    on = np.repeat(on, K, axis=0)  # one row per local step
    assert np.all(nnz[~on] == 0) and np.all(D[~on] == 0)  # a client not sampled sends nothing
    if name == "l1":
        assert np.all(nnz[on] == 1)


def test_stochastic_with_sampling_keeps_each_clients_momentum():
    A, b, f = _clients(3)
    C = L2Ball(np.array([1.0, 1.5]))  # a continuous oracle: every change of the momentum shows
    R, K, S, sigma = 10, 2, 3, 0.7
    h = fedfw(f, C, rounds=R, stochastic=True, sigma=sigma, K=K, S=S, rng=11)
    c, eta, rho = schedules(R, stochastic=True)
    xs, X, _, _ = _loop(A, b, C, R, c[:, None] * np.ones(2), eta, K, S, False, 11, sigma=sigma, rho=rho)
    assert_close(h.w_global, xs, factor=10)
    assert_close(h.w_local[-1], X, factor=10)


def test_one_step_every_client_is_the_thesis_iteration():
    """K = 1, S = n, no restart: the same numbers as the default call (the thesis's (4.5)-(4.6))."""
    _, _, f = _clients(4)
    C = L2Ball(1.0)
    a, b_ = fedfw(f, C, rounds=15), fedfw(f, C, rounds=15, K=1, S=5, restart=False)
    assert np.array_equal(host(a.w_local), host(b_.w_local)) and a.sampled is None and b_.grad_evals == 15


def test_restart_with_one_step_is_a_distributed_frank_wolfe_step_from_xbar():
    """restart, K = 1, all clients: xbar <- (1 - eta) xbar + eta mean_i lmo(grad f_i(xbar)/n) (the
    penalty is zero at xbar); without restart the clients' models persist and the runs differ."""
    A, b, f = _clients(5)
    C = L1Ball(np.array([1.0, 2.0]))
    R = 8
    h = fedfw(f, C, rounds=R, restart=True, lam0=3.0)
    _, eta, _ = schedules(R)
    xbar = np.zeros((2, 3))
    for k in range(R):
        s = np.stack(
            [
                np.mean([_lmo(C, t, (A[t, i] @ xbar[t] - b[t, i]) / 5) for i in range(5)], axis=0)
                for t in range(2)
            ]
        )
        xbar = (1 - eta[k]) * xbar + eta[k] * s
    assert_close(host(h.w_global)[-1], xbar, factor=10)
    plain = fedfw(f, C, rounds=R, lam0=3.0)
    assert np.max(np.abs(host(plain.w_global)[-1] - xbar)) > 1e-3


def test_the_sampling_is_seeded():
    _, _, f = _clients(6)
    a = fedfw(f, Box(-np.ones(3), np.ones(3)), rounds=6, S=2, K=2, rng=3)
    b_ = fedfw(f, Box(-np.ones(3), np.ones(3)), rounds=6, S=2, K=2, rng=np.random.default_rng(3))
    c = fedfw(f, Box(-np.ones(3), np.ones(3)), rounds=6, S=2, K=2, rng=4)
    assert np.array_equal(a.sampled, b_.sampled) and np.array_equal(host(a.w_global), host(b_.w_global))
    assert not np.array_equal(a.sampled, c.sampled)


_F = _clients(0)[2]
BAD = [
    ("K zero", lambda: fedfw(_F, L2Ball(1.0), rounds=2, K=0), ValueError, "K must be >= 1"),
    ("K a float", lambda: fedfw(_F, L2Ball(1.0), rounds=2, K=2.0), TypeError, "K must be an integer"),
    ("S above n", lambda: fedfw(_F, L2Ball(1.0), rounds=2, S=6, rng=0), ValueError, "S must be <= N = 5"),
    ("S without rng", lambda: fedfw(_F, L2Ball(1.0), rounds=2, S=2), ValueError, "rng is required"),
    ("restart not a bool", lambda: fedfw(_F, L2Ball(1.0), rounds=2, restart=1), TypeError, "restart must be"),
    (
        "record unknown",
        lambda: fedfw(_F, L2Ball(1.0), rounds=2, record="local"),
        ValueError,
        "record must be",
    ),
]


@pytest.mark.parametrize("call, error, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments_name_what_was_expected(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_sampled_local_steps_run_on_array_api_strict():
    xps = pytest.importorskip("array_api_strict")
    A, b, f = _clients(8)
    C = L2Ball(np.array([1.0, 2.0]))
    kw = dict(rounds=5, K=2, S=3, restart=True, stochastic=True, sigma=0.5, rng=2)
    ref = fedfw(f, C, **kw)
    h = fedfw(mo.Quadratic(xps.asarray(A), xps.asarray(b)), C, **kw)
    assert type(h.w_global).__module__.startswith("array_api_strict")
    assert_close(host(h.w_local), host(ref.w_local), factor=10)


@pytest.mark.parametrize("kw", [{}, {"stochastic": True, "sigma": 0.7, "rng": 5}, {"K": 2, "S": 3, "rng": 1}])
def test_record_server_keeps_the_same_server_models_and_drops_the_clients(kw):
    f = _clients(3)[2]
    C = Box(-np.ones(3), np.ones(3))
    full = fedfw(f, C, rounds=9, **kw)  # an int seed: both runs draw the same noise and samples
    server = fedfw(f, C, rounds=9, record="server", **kw)
    assert np.array_equal(host(server.w_global), host(full.w_global))
    assert server.w_local is None and server.directions is None and server.nnz is None
    assert server.params["record"] == "server" and full.params["record"] == "all"


@pytest.mark.parametrize("name", list(SETS))
@pytest.mark.parametrize("K, S, restart", [(1, 5, False), (3, 2, False), (2, 3, True)])
def test_fedfw_plus_equals_a_loop_with_a_dual_variable_per_client(name, K, S, restart):
    """FedFW+ (variant="plus"): y_i += λ0 (x_i − x̄^t) before each step, then (4.5) with y_i added; the batched
    run against the loop to 1e-14 of the set's scale (the same operations in another order)."""
    A, b, f = _clients(12)
    C = SETS[name](2, 3, np.random.default_rng(13))
    R, lam0 = 15, np.array([0.4, 3.0])
    h = fedfw(f, C, rounds=R, lam0=lam0, K=K, S=S, restart=restart, rng=5, variant="plus")
    c, eta, _ = schedules(R)
    xs, X, _, _ = _loop(A, b, C, R, c[:, None] * lam0, eta, K, S, restart, 5, dual_step=lam0)
    assert np.max(np.abs(host(h.w_global) - xs)) <= 1e-14 * 4  # sets of radius / half-width <= 2
    assert np.max(np.abs(host(h.w_local[-1]) - X)) <= 1e-14 * 4
    assert h.params["variant"] == "plus"
    plain = fedfw(f, C, rounds=R, lam0=lam0, K=K, S=S, restart=restart, rng=5)
    if not (restart and K == 1):  # the dual variable changes the run (with restart and K = 1 it stays 0)
        assert not np.allclose(host(plain.w_global), host(h.w_global))


def test_fedfw_plus_with_the_codes_restart_and_one_step_is_fedfw():
    """The authors' default (restart, one local step): x_i = x̄ at the dual update, so y_i stays 0 and FedFW+ is
    FedFW (``analysis/fedfw`` item 18)."""
    f = _clients(14)[2]
    C = L2Ball(np.array([1.0, 2.0]))
    a = fedfw(f, C, rounds=9, restart=True, variant="plus")
    b_ = fedfw(f, C, rounds=9, restart=True)
    assert np.array_equal(host(a.w_global), host(b_.w_global))
