"""moreau.fl.permfl and permfl_optimum: PerMFL (Paper II of the Dadras thesis) and the optimum of eq. (4.3).

The optimum against an independent solve of the joint problem (scipy.optimize on the stacked
variables (x, w_i, theta_ij), with its own gradient and Hessian), against a plain loop over trials,
teams and devices, and its sweeps against single calls; the algorithm against a plain loop over
teams and devices (its three update rules written out), the idealised algorithm against the
optimum, the run's round map and the authors' code's device weight (``lam_device``).

Tolerances (``_tol.assert_close``, 100 eps relative, times ``factor``): ``factor=10`` for a loop
against the batched code (same operations, other order); ``factor=1e3`` against a scipy solve or
an iteration's limit (gradient tolerance 1e-14 times the condition number, up to ~1e2 here).
"""

import numpy as np
import pytest
from _claims import check_paired_claim
from _tol import assert_close, host
from scipy import optimize

import moreau as mo
from moreau.fl._permfl import permfl, permfl_optimum

TEAMS = np.array([0, 1, 1, 2, 2, 2])  # ragged: sizes 1, 2, 3


def _quadratics(seed, T=3, d=3, mu=0.2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, len(TEAMS), d, d))
    A = X @ np.swapaxes(X, -1, -2) / d + mu * np.eye(d)
    return (A + np.swapaxes(A, -1, -2)) / 2, rng.standard_normal((T, len(TEAMS), d))


def _joint(A, b, lam, gamma, teams=TEAMS):
    """The stacked problem (4.3) of ONE trial, written out: value, gradient, Hessian of
    (1/M) sum_i (1/N_i) sum_j [f_ij(th_ij) + lam/2 |th_ij - w_i|^2 + gamma/2 |w_i - x|^2]."""
    m, d = b.shape
    M = teams.max() + 1
    N = np.bincount(teams)
    p = 1 / (M * N[teams])
    n = (1 + M + m) * d
    C = np.zeros((1 + M + m, 1 + M + m))
    for j, i in enumerate(teams):
        for u, v, c in (
            (1 + M + j, 1 + M + j, lam),
            (1 + i, 1 + i, lam + gamma),
            (0, 0, gamma),
            (1 + i, 1 + M + j, -lam),
            (1 + M + j, 1 + i, -lam),
            (0, 1 + i, -gamma),
            (1 + i, 0, -gamma),
        ):
            C[u, v] += p[j] * c
    H = np.kron(C, np.eye(d))
    for j in range(m):
        s = slice((1 + M + j) * d, (2 + M + j) * d)
        H[s, s] += p[j] * A[j]
    r = np.concatenate([np.zeros((1 + M) * d), (p[:, None] * b).ravel()])
    return (lambda z: z @ H @ z / 2 - r @ z), (lambda z: H @ z - r), (lambda z: H), n


def test_optimum_equals_a_scipy_solve_of_the_stacked_problem():
    A, b = _quadratics(0)
    lam, gamma = 0.7, 2.3
    x, w, th = (host(v) for v in permfl_optimum(mo.Quadratic(A, b), TEAMS, lam, gamma))
    for t in range(A.shape[0]):
        val, grad, hess, n = _joint(A[t], b[t], lam, gamma)
        z = optimize.minimize(
            val, np.zeros(n), jac=grad, hess=hess, method="trust-exact", options={"gtol": 1e-14}
        ).x
        d = A.shape[-1]
        assert_close(x[t], z[:d], factor=1e3)
        assert_close(w[t], z[d : 4 * d].reshape(3, d), factor=1e3)
        assert_close(th[t], z[4 * d :].reshape(6, d), factor=1e3)


def test_optimum_equals_a_loop_over_trials_teams_and_devices():
    """Per trial, per device: H = lam A (A + lam I)^-1, g = lam (A + lam I)^-1 b (solves, no eigen-
    decomposition); per team B_i, c_i the means; w(x) = (B_i + gamma I)^-1 (gamma x + c_i)."""
    A, b = _quadratics(1)
    lam, gamma = 1.3, 0.4
    x, w, th = (host(v) for v in permfl_optimum(mo.Quadratic(A, b), TEAMS, lam, gamma))
    d, eye = A.shape[-1], np.eye(A.shape[-1])
    for t in range(A.shape[0]):
        HG, r = np.zeros((d, d)), np.zeros(d)
        Bs, cs = [], []
        for i in range(3):
            devs = [j for j in range(len(TEAMS)) if TEAMS[j] == i]
            B = sum(lam * np.linalg.solve(A[t, j] + lam * eye, A[t, j]) for j in devs) / len(devs)
            c = sum(lam * np.linalg.solve(A[t, j] + lam * eye, b[t, j]) for j in devs) / len(devs)
            R = np.linalg.inv(B + gamma * eye)
            HG += gamma * (eye - gamma * R) / 3
            r += gamma * R @ c / 3
            Bs.append(B)
            cs.append(c)
        xt = np.linalg.solve(HG, r)
        assert_close(x[t], xt, factor=100)
        for j, i in enumerate(TEAMS):
            wi = np.linalg.solve(Bs[i] + gamma * eye, gamma * xt + cs[i])
            assert_close(w[t, i], wi, factor=100)
            assert_close(th[t, j], np.linalg.solve(A[t, j] + lam * eye, b[t, j] + lam * wi), factor=100)


@pytest.mark.parametrize("which", ["lam", "gamma"])
def test_a_sweep_is_one_call_and_equals_single_calls(which):
    A, b = _quadratics(2)
    f = mo.Quadratic(A, b)
    vals = np.array([0.3, 1.0, 7.0])
    kw = {"lam": 0.9, "gamma": 1.7}
    kw[which] = vals[:, None]
    xs, _, ths = permfl_optimum(f, TEAMS, kw["lam"], kw["gamma"])
    assert xs.shape == (3, A.shape[0], A.shape[-1]) and ths.shape == (3,) + b.shape
    for k, v in enumerate(vals):
        one = dict(kw, **{which: float(v)})
        x1, _, t1 = permfl_optimum(mo.Quadratic(A, b), TEAMS, one["lam"], one["gamma"])
        assert_close(xs[k], x1, factor=10)
        assert_close(ths[k], t1, factor=10)


def test_logistic_newton_solves_the_stacked_problem_with_a_small_error_estimate():
    rng = np.random.default_rng(3)
    T, m, n, d = 2, len(TEAMS), 12, 2
    X, y = rng.standard_normal((T, m, n, d)), rng.choice([-1.0, 1.0], (T, m, n))
    f = mo.Logistic(X, y, mu=0.1)
    lam, gamma = 0.8, 1.9
    x, w, th, info = permfl_optimum(f, TEAMS, lam, gamma, return_info=True)
    assert np.all(info["error_estimate"] <= 1e-10) and np.all(info["mu"] > 0)
    M, N = 3, np.bincount(TEAMS)
    p = 1 / (M * N[TEAMS])
    for t in range(T):  # the stacked gradient, from each device's own Logistic objective (no batching)
        gw = [gamma / M * (host(w)[t, i] - host(x)[t]) for i in range(M)]
        for j, i in enumerate(TEAMS):
            fj = mo.Logistic(X[t, j], y[t, j], mu=0.1)
            gth = p[j] * (host(fj.grad(th[t, j])) + lam * (host(th)[t, j] - host(w)[t, i]))
            gw[i] = gw[i] + p[j] * lam * (host(w)[t, i] - host(th)[t, j])
            assert np.linalg.norm(gth) <= 1e-12
        assert max(np.linalg.norm(g) for g in gw) <= 1e-12
        assert np.linalg.norm(sum(gamma / M * (host(x)[t] - host(w)[t, i]) for i in range(M))) <= 1e-12


def _loop(A, b, lam, gamma, alpha, eta, beta, K, L, rounds, x0, lam_device=None):
    """PerMFL's three updates written out per trial, team and device."""
    lam_d = lam if lam_device is None else lam_device
    xs = []
    for t in range(A.shape[0]):
        x = x0[t].copy()
        for _ in range(rounds):
            w = [x.copy() for _ in range(3)]
            for _ in range(K):
                theta = []
                for j, i in enumerate(TEAMS):
                    th = w[i].copy()
                    for _ in range(L):
                        th = th - alpha * (A[t, j] @ th - b[t, j] + lam_d * (th - w[i]))
                    theta.append(th)
                for i in range(3):
                    tbar = np.mean([theta[j] for j in range(len(TEAMS)) if TEAMS[j] == i], axis=0)
                    w[i] = w[i] - eta * (lam * (w[i] - tbar) + gamma * (w[i] - x))
            x = x - beta * gamma * (x - np.mean(w, axis=0))
        xs.append(x)
    return np.array(xs)


@pytest.mark.parametrize("lam_device", [None, 3.0])
def test_permfl_equals_a_loop_over_teams_and_devices(lam_device):
    A, b = _quadratics(4)
    x0 = np.random.default_rng(5).standard_normal((A.shape[0], A.shape[-1]))
    kw = dict(lam=0.6, gamma=1.4, alpha=0.1, eta=0.3, beta=0.5, K=3, L=2)
    h = permfl(mo.Quadratic(A, b), TEAMS, rounds=4, x0=x0, lam_device=lam_device, **kw)
    assert h.w_global.shape == (5, 3, 3) and h.w_team.shape == (5, 3, 3, 3) and h.theta.shape == (5, 3, 6, 3)
    assert h.grad_evals == 4 * 3 * 2 and h.local_steps == 3 * 2
    assert_close(h.w_global[-1], _loop(A, b, rounds=4, x0=x0, lam_device=lam_device, **kw), factor=10)


def test_exact_inner_solves_reach_the_optimum():
    """L = 'exact' (device proxes) and many team rounds: gradient descent on G with step beta."""
    A, b = _quadratics(6, mu=1.0)
    lam, gamma = 1.1, 2.0
    x_star = permfl_optimum(mo.Quadratic(A, b), TEAMS, lam, gamma)[0]
    h = permfl(
        mo.Quadratic(A, b),
        TEAMS,
        lam=lam,
        gamma=gamma,
        eta=1 / (lam + gamma),
        beta=1 / gamma,
        K=40,
        L="exact",
        rounds=160,
    )
    assert h.prox_evals == 160 * 40 and h.grad_evals == 0
    assert_close(h.w_global[-1], x_star, factor=1e3)


def test_finite_rounds_stop_at_a_biased_point():
    """Finding: K = 1 team round of L = 1 local step converges (linearly) to a point that is not x*."""
    A, b = _quadratics(7)
    lam, gamma = 1.0, 2.0
    x_star = host(permfl_optimum(mo.Quadratic(A, b), TEAMS, lam, gamma)[0])
    L = float(np.max(np.linalg.eigvalsh(A)))
    h = permfl(
        mo.Quadratic(A, b),
        TEAMS,
        lam=lam,
        gamma=gamma,
        alpha=1 / (L + lam),
        eta=1 / (lam + gamma),
        beta=1 / gamma,
        K=1,
        L=1,
        rounds=3000,
    )
    last = host(h.w_global)
    assert np.max(np.abs(last[-1] - last[-2])) < 1e-13  # converged
    assert np.min(np.linalg.norm(last[-1] - x_star, axis=-1)) > 1e-3  # ... elsewhere


def test_minibatches_are_seeded_and_required_to_have_an_rng():
    rng = np.random.default_rng(8)
    f = mo.LeastSquares(rng.standard_normal((2, 6, 10, 3)), rng.standard_normal((2, 6, 10)), mu=0.1)
    kw = dict(lam=1.0, gamma=2.0, alpha=0.05, eta=0.2, beta=0.4, K=2, L=2, rounds=3, batch_size=4)
    a, b2, c = (host(permfl(f, TEAMS, rng=s, **kw).w_global) for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b2)
    assert not np.allclose(a, c)
    with pytest.raises(ValueError, match="rng is required"):
        permfl(f, TEAMS, **kw)


def test_permfl_runs_on_array_api_strict():
    xps = pytest.importorskip("array_api_strict")
    A, b = _quadratics(9)
    kw = dict(lam=0.6, gamma=1.4, alpha=0.1, eta=0.3, beta=0.5, K=2, L=2, rounds=2)
    ref = permfl(mo.Quadratic(A, b), TEAMS, **kw).w_global
    h = permfl(mo.Quadratic(xps.asarray(A), xps.asarray(b)), TEAMS, **kw)
    assert type(h.w_global).__module__.startswith("array_api_strict")
    assert_close(host(h.w_global), ref, factor=10)
    x = permfl_optimum(mo.Quadratic(xps.asarray(A), xps.asarray(b)), TEAMS, 0.6, 1.4)[0]
    assert_close(host(x), permfl_optimum(mo.Quadratic(A, b), TEAMS, 0.6, 1.4)[0], factor=10)


_A, _B = _quadratics(10, T=1)
_F = mo.Quadratic(_A, _B)
_OK = dict(lam=1.0, gamma=1.0, alpha=0.1, eta=0.1, beta=0.1, K=1, L=1, rounds=1)
BAD = [
    (lambda: permfl(_F, TEAMS[:5], **_OK), ValueError, "teams must have shape"),
    (lambda: permfl(_F, np.array([0, 0, 2, 2, 2, 2]), **_OK), ValueError, "team 1 has none"),
    (lambda: permfl(_F, TEAMS - 1, **_OK), ValueError, "teams must be >= 0"),
    (lambda: permfl(_F, TEAMS + 0.5, **_OK), TypeError, "integer team indices"),
    (lambda: permfl(_F, TEAMS, **dict(_OK, L="exact")), TypeError, "takes neither"),
    (lambda: permfl(_F, TEAMS, **dict(_OK, L="approx", alpha=None)), ValueError, "L must be"),
    (lambda: permfl(_F, TEAMS, **dict(_OK, alpha=None)), TypeError, "alpha .* is required"),
    (lambda: permfl(_F, TEAMS, **dict(_OK, gamma=-1.0)), ValueError, "gamma must be"),
    (lambda: permfl(_F, TEAMS, **dict(_OK, K=0)), ValueError, "K must be >= 1"),
    (lambda: permfl(_F, TEAMS, **dict(_OK, lam_device=0.0)), ValueError, "lam_device must be"),
    (lambda: permfl_optimum(_F, TEAMS, 1.0, 0.0), ValueError, "gamma must be"),
    (lambda: permfl_optimum(mo.Quadratic(-_A, _B), TEAMS, 1.0, 1.0), ValueError, "lam >"),
]


@pytest.mark.parametrize("call, error, match", BAD, ids=[m for _, _, m in BAD])
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _uncommented(lines):
    """A CSV's lines without its comment header (``# differs from the paper: ...``)."""
    return (line for line in lines if not line.startswith("#"))


@pytest.mark.reproduce
def test_permfl_digits_quick(tmp_path, monkeypatch):
    """``moreau reproduce permfl-digits --quick``: every method on every seed, accuracies in [0, 100],
    the claims judged over the seeds, the theorems' assumptions recorded."""
    pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
    pytest.importorskip("sklearn", reason="the digits ship with scikit-learn (extra 'digits')")
    import csv

    from moreau.experiments import _sweep, registry
    from moreau.experiments.permfl_digits import EXPERIMENT, METHODS

    if EXPERIMENT.name not in registry.experiments():  # until experiments/registry.py lists the module
        get = registry.get
        monkeypatch.setattr(
            registry, "get", lambda name: EXPERIMENT if name == EXPERIMENT.name else get(name)
        )
    manifest = _sweep.run(EXPERIMENT, tmp_path, quick=True, workers=1)
    with open(tmp_path / "permfl-digits-table.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(_uncommented(fh)) if r["selection"] == "last round"]
    assert {(r["method"], r["seed"]) for r in rows} == {(m, str(s)) for m in METHODS for s in (0, 1)}
    assert all(0 <= float(r["test_accuracy"]) <= 100 for r in rows)
    assert {r["round"] for r in rows} == {"10"}
    acc = {
        m: np.array(
            [
                float(r["test_accuracy"])
                for r in sorted(rows, key=lambda r: int(r["seed"]))
                if r["method"] == m
            ]
        )
        for m in METHODS
    }  # per seed, from the table's last round
    beat_gm, beat_sota = manifest["claims"]
    pm = "PerMFL-PM"
    assert "beat its global model" in beat_gm["claim"] and "beat FedAvg and pFedMe-PM" in beat_sota["claim"]
    check_paired_claim(beat_gm, {f"{pm} − PerMFL-GM": acc[pm] - acc["PerMFL-GM"]})
    check_paired_claim(
        beat_sota,
        {f"{pm} − FedAvg": acc[pm] - acc["FedAvg"], f"{pm} − pFedMe-PM": acc[pm] - acc["pFedMe-PM"]},
    )
    for v, shown in (
        (beat_gm, (pm, "PerMFL-GM", "PerMFL-PM (code: λ_d = L)")),
        (beat_sota, (pm, "FedAvg", "pFedMe-PM")),
    ):
        assert v["value"] == pytest.approx({m: acc[m].mean() for m in shown}, rel=1e-12)
        assert v["seeds"] == 2 and v["method"].startswith("paired t over 2 seeds")
    assert manifest["theorems"]["permfl.thm1"]["assumptions"]["beta <= 1/gamma"] is True
