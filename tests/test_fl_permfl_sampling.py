"""moreau.fl.permfl with team and device sampling, and its per-round curves (PerMFLHistory.curves).

The batched run against a loop over trials, teams and devices written here (the sampling replayed from a
generator seeded alike: S teams of smallest key per global round, in each team the ``devices`` of
smallest key per team round), every round's models compared; the curves against the device losses
evaluated one by one with eq. (4.3)'s weights 1/(M N_i).

Tolerances (``_tol.assert_close``, 100 eps relative): ``factor=10`` for the loop against the batched run
(the same operations, summed in another order).
"""

import numpy as np
import pytest
from _tol import assert_close, host

import moreau as mo
from moreau.fl._permfl import permfl

TEAMS = np.array([0, 1, 1, 2, 2, 2, 3, 3])  # ragged: sizes 1, 2, 3, 2
M, m, d = 4, 8, 3
KW = dict(lam=0.6, gamma=1.4, alpha=0.1, eta=0.3, beta=0.5, K=3, L=2)


def _quadratics(seed, T=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, m, d, d))
    A = X @ np.swapaxes(X, -1, -2) / d + 0.2 * np.eye(d)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    return A, rng.standard_normal((T, m, d)), rng.standard_normal((T, d))


def _loop(A, b, x0, rounds, S, D, seed, lam, gamma, alpha, eta, beta, K, L):
    """Every round's (x, w, theta) per trial; the sampled teams run, the global step averages them."""
    T = A.shape[0]
    rng = np.random.default_rng(seed)
    x = x0.copy()
    w_rec = np.repeat(x0[:, None], M, axis=1)
    th_rec = np.repeat(x0[:, None], m, axis=1)
    xs, ws, ths = [x.copy()], [w_rec.copy()], [th_rec.copy()]
    evals = np.zeros((T, m), dtype=int)
    for _ in range(rounds):
        keys = rng.random((T, M)) if S < M else None
        w = np.repeat(x[:, None], M, axis=1)
        for _ in range(K):
            dkeys = rng.random((T, m)) if D is not None else None
            for t in range(T):
                teams = sorted(np.argsort(keys[t])[:S]) if keys is not None else range(M)
                for i in teams:
                    members = [j for j in range(m) if TEAMS[j] == i]
                    if dkeys is not None and len(members) > D:
                        members = [members[k] for k in np.argsort(dkeys[t, members])[:D]]
                    thetas = []
                    for j in members:
                        th = w[t, i].copy()
                        for _ in range(L):
                            th = th - alpha * (A[t, j] @ th - b[t, j] + lam * (th - w[t, i]))
                        th_rec[t, j] = th
                        evals[t, j] += L
                        thetas.append(th)
                    tbar = np.mean(thetas, axis=0)
                    w[t, i] = w[t, i] - eta * (lam * (w[t, i] - tbar) + gamma * (w[t, i] - x[t]))
        for t in range(T):
            teams = sorted(np.argsort(keys[t])[:S]) if keys is not None else range(M)
            w_rec[t, list(teams)] = w[t, list(teams)]
            x[t] = x[t] - beta * gamma * (x[t] - np.mean([w[t, i] for i in teams], axis=0))
        xs.append(x.copy())
        ws.append(w_rec.copy())
        ths.append(th_rec.copy())
    return np.array(xs), np.array(ws), np.array(ths), evals


@pytest.mark.parametrize("S, D", [(2, None), (4, 1), (3, 2)])
def test_sampled_permfl_equals_a_loop_over_teams_and_devices(S, D):
    A, b, x0 = _quadratics(1)
    h = permfl(mo.Quadratic(A, b), TEAMS, rounds=5, x0=x0, S=S, devices=D, rng=9, **KW)
    xs, ws, ths, evals = _loop(A, b, x0, 5, S, D, 9, **KW)
    assert_close(h.w_global, xs, factor=10)
    assert_close(h.w_team, ws, factor=10)
    assert_close(h.theta, ths, factor=10)
    ran = np.ones((5, 3, 2, m), dtype=bool) if h.sampled_devices is None else h.sampled_devices
    if h.sampled is not None:
        assert h.sampled.shape == (5, 2, S)
    if D is not None:  # per team round: min(D, N_i) devices of every sampled team
        N = np.bincount(TEAMS)
        for r, k, t in np.ndindex(5, 3, 2):
            teams = h.sampled[r, t] if h.sampled is not None else range(M)
            assert [int(ran[r, k, t, TEAMS == i].sum()) for i in teams] == [min(D, N[i]) for i in teams]
    assert np.array_equal(h.grad_evals, evals)


def test_full_sampling_is_the_unsampled_run():
    A, b, x0 = _quadratics(2)
    f = mo.Quadratic(A, b)
    a = permfl(f, TEAMS, rounds=4, x0=x0, **KW)
    c = permfl(f, TEAMS, rounds=4, x0=x0, S=M, devices=3, rng=0, **KW)  # every team, every device
    assert np.array_equal(host(a.w_global), host(c.w_global)) and c.sampled is None


def test_sampling_is_seeded():
    A, b, x0 = _quadratics(3)
    f = mo.Quadratic(A, b)
    a, c = (permfl(f, TEAMS, rounds=3, x0=x0, S=2, devices=1, rng=r, **KW) for r in (5, 5))
    e = permfl(f, TEAMS, rounds=3, x0=x0, S=2, devices=1, rng=6, **KW)
    assert np.array_equal(host(a.w_global), host(c.w_global))
    assert not np.array_equal(a.sampled_devices, e.sampled_devices)


def test_curves_are_the_weighted_losses_of_the_three_models():
    A, b, x0 = _quadratics(4)
    f = mo.Quadratic(A, b)
    h = permfl(f, TEAMS, rounds=6, x0=x0, S=3, rng=1, **KW)
    cur = h.curves(f)
    N = np.bincount(TEAMS)
    X, W, Th = host(h.w_global), host(h.w_team), host(h.theta)

    def loss(t, j, z):
        return 0.5 * z @ A[t, j] @ z - b[t, j] @ z

    for r in range(7):
        for t in range(2):
            pm = sum(loss(t, j, Th[r, t, j]) / (M * N[TEAMS[j]]) for j in range(m))
            tm = sum(loss(t, j, W[r, t, TEAMS[j]]) / (M * N[TEAMS[j]]) for j in range(m))
            gm = sum(loss(t, j, X[r, t]) / (M * N[TEAMS[j]]) for j in range(m))
            assert_close(
                np.array([cur["PM"][r, t], cur["TM"][r, t], cur["GM"][r, t]]), np.array([pm, tm, gm])
            )
    assert cur["PM"].shape == (7, 2)
    assert cur["PM"][-1].max() < cur["GM"][-1].min()  # personalised models fit their devices better here


BAD = [
    ("S above M", dict(S=5, rng=0), ValueError, "S must be <= N = 4"),
    ("S without rng", dict(S=2), ValueError, "rng is required"),
    ("devices zero", dict(devices=0, rng=0), ValueError, "devices must be >= 1"),
    ("devices a float", dict(devices=1.5, rng=0), TypeError, "devices must be an integer"),
    ("devices without rng", dict(devices=1), ValueError, "rng is required"),
]


@pytest.mark.parametrize("kw, error, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_sampling_arguments_name_themselves(kw, error, match):
    A, b, x0 = _quadratics(0)
    with pytest.raises(error, match=match):
        permfl(mo.Quadratic(A, b), TEAMS, rounds=2, **KW, **kw)


def test_sampled_permfl_and_its_curves_run_on_array_api_strict():
    xps = pytest.importorskip("array_api_strict")
    A, b, x0 = _quadratics(5)
    kw = dict(KW, rounds=3, x0=x0, S=2, devices=1, rng=4)
    ref = permfl(mo.Quadratic(A, b), TEAMS, **kw)
    fs = mo.Quadratic(xps.asarray(A), xps.asarray(b))
    h = permfl(fs, TEAMS, **dict(kw, x0=xps.asarray(x0)))
    assert type(h.theta).__module__.startswith("array_api_strict")
    assert_close(host(h.theta), host(ref.theta), factor=10)
    assert_close(h.curves(fs)["PM"], ref.curves(mo.Quadratic(A, b))["PM"], factor=10)
