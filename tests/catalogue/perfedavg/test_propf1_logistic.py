"""perfedavg.propf1 on logistic clients: the Monte Carlo drift moments against a hand-written simulation of
the local updates (56), the per-run range behind Hoeffding's interval, the constants as valid sups, the
statement on its default batches."""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
from moreau.analysis.engine import runner
from moreau.analysis.engine.core import take
from moreau.analysis.perfedavg import propf1 as pf
from moreau.analysis.perfedavg.propf1 import logistic as lg

(ST,) = pf.STATEMENTS


def _sig(z):
    return 0.5 * (1 + np.tanh(z / 2))


def _grad(X, y, w, idx):
    """(runs, n, d): gradient of each client's logistic loss on its batch ``idx (runs, n, k)`` (None: all)."""
    Z = y[None] * np.einsum("nmd,rnd->rnm", X, w)
    G = -(y[None] * _sig(-Z))[..., None] * X[None]  # (runs, n, m, d) per-sample
    if idx is None:
        return G.mean(axis=2)
    return np.take_along_axis(G, idx[..., None], axis=2).mean(axis=2)


def _hvp(X, y, w, v, idx):
    Z = y[None] * np.einsum("nmd,rnd->rnm", X, w)
    s = _sig(Z) * _sig(-Z)  # (runs, n, m)
    Hv = (s * np.einsum("nmd,rnd->rnm", X, v))[..., None] * X[None]  # (runs, n, m, d)
    if idx is None:
        return Hv.mean(axis=2)
    return np.take_along_axis(Hv, idx[..., None], axis=2).mean(axis=2)


def _hand_drift(X, y, alpha, beta, D, w0, t, runs, rng):
    """Per-run (1/n) sum ||e_i|| and (1/n) sum ||e_i||^2 after t local steps, batches with replacement
    drawn by rng.integers (D = 0: full batch), written from eqs. (7)-(8) with D'' for the Hessian."""
    n, m, d = X.shape
    W = np.broadcast_to(w0, (runs, n, d)).copy()
    draw = lambda k: None if k == 0 else rng.integers(0, m, (runs, n, int(k)))  # noqa: E731
    for _ in range(t):
        iD, iD1, iD2 = draw(D[0]), draw(D[1]), draw(D[2])
        wt = W - alpha * _grad(X, y, W, iD)
        g1 = _grad(X, y, wt, iD1)
        W = W - beta * (g1 - alpha * _hvp(X, y, W, g1, iD2))
    e = np.linalg.norm(W - W.mean(axis=1, keepdims=True), axis=-1)
    return e.mean(axis=1), np.mean(e**2, axis=1)


def _batch(seed=0, T=8):
    return ST.instances("logistic", T, runner.rng_for(seed, ST.id, "logistic"))


def test_full_batch_drift_equals_the_hand_loop_exactly():
    b = _batch()
    full = np.flatnonzero(np.all(b["D"] == 0, axis=1))
    assert full.size >= 2
    sub = take(b, full)
    mc = lg.drift_mc(sub, runs=4)
    for j, i in enumerate(full):
        for t in range(1, lg.T_MAX + 1):
            y1, y2 = _hand_drift(
                b["X"][i],
                b["y"][i],
                b["alpha"][i],
                b["beta"][i],
                (0, 0, 0),
                b["w0"][i],
                t,
                1,
                np.random.default_rng(0),
            )
            for key, v in (("first", y1[0]), ("second", y2[0])):
                mean, lo, hi = mc[key][:, t - 1, j]
                assert mean == pytest.approx(v, rel=1e-10) and lo == mean == hi  # deterministic: exact


@pytest.mark.parametrize("D", [(1, 2, 3), (2, 1, 0), (0, 3, 1)])
def test_sampled_drift_matches_the_hand_loop(D):
    """Means agree within 5 standard errors (a seeded check); the Hoeffding interval contains the hand mean."""
    b = take(_batch(1), [0])
    b["D"] = np.array([D], float)
    b["alpha"] = 1 / lg.logistic_constants(b["X"], b["y"])[0]["L"]
    b["beta"] = np.array([0.5])
    runs = 4000
    mc = lg.drift_mc(b, runs=runs)
    rng = np.random.default_rng(11)
    for t in (1, lg.T_MAX):
        y1, y2 = _hand_drift(b["X"][0], b["y"][0], b["alpha"][0], b["beta"][0], D, b["w0"][0], t, runs, rng)
        for key, Y in (("first", y1), ("second", y2)):
            mean, lo, hi = mc[key][:, t - 1, 0]
            se = Y.std() * np.sqrt(2 / runs)
            assert abs(mean - Y.mean()) <= 5 * se and Y.std() > 0
            assert lo <= Y.mean() <= hi


def test_horizons_are_prefixes_of_one_trajectory():
    """drift_mc runs tau = t with one seed; per_fedavg's w_bar at tau = T_MAX averages the same iterates."""
    b = take(_batch(2), [1])
    X, y = b["X"][0], b["y"][0]
    runs = 50
    f = mo.Logistic(np.broadcast_to(X, (runs,) + X.shape), np.broadcast_to(y, (runs,) + y.shape))
    kw = dict(
        alpha=float(b["alpha"][0]),
        beta=float(b["beta"][0]),
        rounds=1,
        D=1,
        D_prime=2,
        D_second=1,
        w0=np.broadcast_to(b["w0"][0], (runs, X.shape[-1])),
    )
    full = mo.fl.per_fedavg(f, tau=lg.T_MAX, rng=np.random.default_rng(3), **kw)
    for t in range(1, lg.T_MAX):
        h = mo.fl.per_fedavg(f, tau=t, rng=np.random.default_rng(3), **kw)
        np.testing.assert_allclose(
            np.asarray(h.w_local[1]).mean(axis=1), np.asarray(full.w_bar)[0, t], rtol=1e-12, atol=1e-14
        )


def test_per_run_range_holds_with_large_alpha_and_small_batches():
    """||w_i - w_bar|| <= 2 t beta c B on every run, c = max(1, alpha H_max - 1), alpha up to 4/L."""
    rng = np.random.default_rng(4)
    b = _batch(3)
    for i in range(4):
        X, y = b["X"][i], b["y"][i]
        L = lg.logistic_constants(X[None], y[None])[0]["L"][0]
        for alpha in (1 / L, 4 / L, 40 / L):
            c = lg.step_bound(X[None], np.array([alpha]), np.array([1.0]))[0]
            for t in (1, 3):
                n, m, d = X.shape
                W = np.broadcast_to(rng.standard_normal(d), (500, n, d)).copy()
                for _ in range(t):
                    idx = [rng.integers(0, m, (500, n, 1)) for _ in range(3)]
                    wt = W - alpha * _grad(X, y, W, idx[0])
                    g1 = _grad(X, y, wt, idx[1])
                    W = W - 1.0 * (g1 - alpha * _hvp(X, y, W, g1, idx[2]))
                e = np.linalg.norm(W - W.mean(axis=1, keepdims=True), axis=-1)
                assert np.max(e) <= 2 * t * c * (1 + 1e-12)
                if alpha == 40 / L:
                    assert c > 1  # the Hessian factor's bound is active


def test_constants_bound_the_sups_at_sampled_points():
    b = _batch(4)
    vals, _ = lg.constants(b)
    rng = np.random.default_rng(5)
    for i in range(b["X"].shape[0]):
        X, y = b["X"][i], b["y"][i]
        f = mo.Logistic(X, y)
        for w in rng.standard_normal((20, X.shape[-1])) * 3:
            Z = y * (X @ w)
            G = -(y * _sig(-Z))[..., None] * X  # (n, m, d)
            gi = G.mean(axis=1)
            assert np.max(np.linalg.norm(gi, axis=-1)) <= vals["B"][i] * (1 + 1e-12)
            assert np.max(np.mean(np.sum((G - gi[:, None]) ** 2, -1), 1)) <= vals["sG2"][i] * (1 + 1e-12)
            assert np.mean(np.sum((gi - gi.mean(0)) ** 2, -1)) <= vals["gG2"][i] * (1 + 1e-12)
            H = np.asarray(f.hess(np.broadcast_to(w, (X.shape[0], X.shape[-1]))))
            assert np.max(np.linalg.eigvalsh(H)) <= vals["L"][i] * (1 + 1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_statement_holds_on_logistic_and_the_reversed_inequality_is_rejected(seed):
    (rec,) = runner.run([ST.id], "logistic", None, seed)
    assert rec.result.holds and all(p.applicable > 0 for p in rec.result.parts)
    for p in rec.result.parts:
        lo, hi = p.sides.lhs_ci
        assert np.all(lo <= p.sides.lhs) and np.all(p.sides.lhs <= hi) and p.sides.confidence == lg.CONFIDENCE
        assert not p.sides.applicable.all() or "(58" in p.name  # alpha > 1/L drawn: not applicable
    (flip,) = [m for m in ST.mutants if "reversed" in m.name]
    assert not ST.run("logistic", None, None, mutant=flip, batch=rec.batch).holds
