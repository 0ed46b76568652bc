"""perfedavg.thm4_5's nonconvex family: the derivative constants against sympy, the losses against finite
differences, every constant of the bound against what dense sampling observes, F* against multi-start
L-BFGS, the simulator against moreau.fl.per_fedavg (same seed, same batches) and against a written-out
loop, exact runs against gradient descent on F, and the family on the default run."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so
import sympy as sp

import moreau as mo
from moreau.analysis.engine.runner import rng_for
from moreau.analysis.perfedavg import thm4_5 as th
from moreau.analysis.perfedavg.thm4_5 import cauchy_regression as nc
from moreau.analysis.perfedavg.thm4_5.nonconvex_family import NC, nc_clients, nc_instances
from moreau.analysis.perfedavg.thm4_5.nonconvex_runs import (
    _batch_weights,
    nc_lhs,
    negative_curvature,
    simulate,
)

(ST,) = th.STATEMENTS


def _sup_abs(expr, z):
    crit = sp.solve(sp.diff(expr, z), z)
    return max(abs(float(expr.subs(z, c))) for c in crit if c.is_real)


def test_derivative_constants_are_the_sympy_suprema():
    z = sp.symbols("z", real=True)
    phi = sp.log(1 + z**2) / 2
    d1, d2, d3 = (sp.diff(phi, z, k) for k in (1, 2, 3))
    assert nc.PHI1 == pytest.approx(_sup_abs(d1, z), rel=1e-14)
    assert nc.PHI2 == pytest.approx(_sup_abs(d2, z), rel=1e-14)
    assert nc.PHI2_MIN == pytest.approx(
        min(float(d2.subs(z, c)) for c in sp.solve(sp.diff(d2, z), z)), rel=1e-14
    )
    assert nc.PHI3 == pytest.approx(_sup_abs(d3, z), rel=1e-14)
    h = sp.sqrt(1 + z**2)  # delta = nu = 1; h''' scales as nu/delta^2
    assert nc.H3 == pytest.approx(_sup_abs(sp.diff(h, z, 3), z), rel=1e-14)
    t = np.linspace(-50, 50, 2_000_001)  # dense sampling: attained, never exceeded
    f3 = sp.lambdify(z, d3)(t)
    assert np.max(np.abs(f3)) <= nc.PHI3 and np.max(np.abs(f3)) > nc.PHI3 * (1 - 1e-9)


def _instance(seed=0, n=3, m=5, d=2):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m, d)) * rng.uniform(0.5, 2)
    y = rng.standard_normal((n, m)) * 3
    return nc.Clients(X, y, rng.uniform(0.5, 2), rng.uniform(0.02, 0.3), rng.uniform(0.3, 2)), rng


def test_gradients_and_hessians_against_finite_differences():
    cl, rng = _instance(1)
    n, m, d = cl.X.shape
    w = rng.standard_normal((7, n, d)) * 2
    p = rng.dirichlet(np.ones(m), (7, n))
    h, E = 1e-6, np.eye(d)
    fd = np.stack([(cl.value(w + h * E[k], p) - cl.value(w - h * E[k], p)) / (2 * h) for k in range(d)], -1)
    np.testing.assert_allclose(cl.grad(w, p), fd, atol=1e-8)
    v = rng.standard_normal((7, n, d))
    fdh = (cl.grad(w + h * v, p) - cl.grad(w - h * v, p)) / (2 * h)
    np.testing.assert_allclose(cl.hvp(w, v, p), fdh, atol=1e-7)
    alpha, x = 0.2, rng.standard_normal((5, d)) * 2
    fdF = np.stack([(cl.F(x + h * E[k], alpha) - cl.F(x - h * E[k], alpha)) / (2 * h) for k in range(d)], -1)
    np.testing.assert_allclose(cl.F_grad(x, alpha), fdF, atol=1e-8)
    W = np.broadcast_to(x[:, None], (5, n, d))  # F = mean_i f_i(w - alpha grad f_i(w))
    np.testing.assert_allclose(cl.F(x, alpha), cl.value(W - alpha * cl.grad(W)).mean(-1), rtol=1e-14)


def _hess(cl, w, p=None):
    d = w.shape[-1]
    return np.stack([cl.hvp(w, np.broadcast_to(e, w.shape), p) for e in np.eye(d)], -1)


def test_every_constant_bounds_what_dense_sampling_observes():
    cl, rng = _instance(2)
    n, m, d = cl.X.shape
    vals, _ = nc.nc_constants(cl.X[None], cl.y[None], [cl.kappa], [cl.nu], [cl.delta])
    L, B, rho = (float(vals[k][0]) for k in ("L", "B", "rho"))
    P = 4000
    w = np.concatenate([rng.standard_normal((P, 1, d)) * s for s in (0.3, 1, 3, 30)])  # (4P, 1, d)
    W = np.broadcast_to(w, (w.shape[0], n, d))
    G, H = cl.grad(W), _hess(cl, W)
    assert 0.5 * B < np.linalg.norm(G, axis=-1).max() <= B  # valid, and not vacuous (a halved
    assert 0.5 * L < np.abs(np.linalg.eigvalsh(H)).max() <= L  # constant fails one side or the other)
    u = W + rng.standard_normal(W.shape) * 1e-2
    dH = np.linalg.norm(_hess(cl, u) - H, ord=2, axis=(-2, -1)) / np.linalg.norm(u - W, axis=-1)
    assert 0.4 * rho < dH.max() <= rho
    eye = np.eye(m)  # per-sample gradients and Hessians (weights e_j)
    Gj = np.stack([cl.grad(W[:4000], np.broadcast_to(eye[j], (4000, n, m))) for j in range(m)], -2)
    Hj = np.stack([_hess(cl, W[:4000], np.broadcast_to(eye[j], (4000, n, m))) for j in range(m)], -3)
    sG = np.mean(np.sum((Gj - G[:4000, :, None]) ** 2, -1), -1)
    sH = np.mean(np.linalg.norm(Hj - H[:4000, :, None], ord=2, axis=(-2, -1)) ** 2, -1)
    assert (
        0.5 * vals["sG2"][0] < sG.max() <= vals["sG2"][0]
        and 0.4 * vals["sH2"][0] < sH.max() <= vals["sH2"][0]
    )
    gG = np.mean(np.sum((G - G.mean(-2, keepdims=True)) ** 2, -1), -1)
    gH = np.mean(np.linalg.norm(H - H.mean(-3, keepdims=True), ord=2, axis=(-2, -1)) ** 2, -1)
    assert (
        0.2 * vals["gG2"][0] < gG.max() <= vals["gG2"][0]
        and 0.1 * vals["gH2"][0] < gH.max() <= vals["gH2"][0]
    )
    alpha = 1 / L  # the smoothness and gradient bound of F (module doc)
    x = w[:2000, 0]
    assert np.linalg.norm(cl.F_grad(x, alpha), axis=-1).max() <= (1 + alpha * L) * B
    _, lam = negative_curvature(cl, alpha, x)
    h = 1e-5
    HF = np.stack(
        [(cl.F_grad(x + h * e, alpha) - cl.F_grad(x - h * e, alpha)) / (2 * h) for e in np.eye(d)], -1
    )
    assert (
        np.abs(np.linalg.eigvalsh((HF + np.swapaxes(HF, -1, -2)) / 2)).max()
        <= (1 + alpha * L) ** 2 * L + alpha * rho * B
    )
    assert lam.min() < 0  # F itself is nonconvex here


def test_f_star_brackets_multistart_lbfgs():
    batch = nc_instances(np.random.default_rng(5), 3)
    vals, _ = nc.nc_constants(batch["X"], batch["y"], batch["kappa"], batch["nu"], batch["delta"])
    for i in range(3):
        cl, al = nc_clients(batch, i), float(batch["alpha"][i])
        lo, up, best = nc.f_star(cl, al, batch["w0"][i], vals["L"][i], vals["rho"][i], vals["B"][i])
        starts = np.random.default_rng(i).uniform(-8, 8, (40, 2))
        found = min(
            so.minimize(
                lambda w, cl=cl, al=al: float(cl.F(w, al)),
                s,
                jac=lambda w, cl=cl, al=al: cl.F_grad(w, al),
                method="L-BFGS-B",
            ).fun
            for s in starts
        )
        assert lo <= found <= float(cl.F(batch["w0"][i], al))
        assert up == pytest.approx(float(cl.F(best, al)), rel=1e-14) and up - lo <= 2e-3 * (
            cl.F(batch["w0"][i], al) - lo
        )
        assert (
            found - lo <= 2e-3 * (cl.F(batch["w0"][i], al) - lo) and lo > 0.1
        )  # far above the trivial F* >= 0


class _LogisticClients:
    """Per-sample log(1 + exp(-y x^T w)), y = +-1, as moreau.Logistic (for the simulator test)."""

    def __init__(self, X, y):
        self.X, self.y = X, y

    def _c(self, w, p):
        z = self.y * np.einsum("nmd,...nd->...nm", self.X, w)
        p = np.full(z.shape, 1 / self.y.shape[-1]) if p is None else p
        return z, p

    def grad(self, w, p=None):
        z, p = self._c(w, p)
        return np.einsum("...nm,nmd->...nd", -p * self.y / (1 + np.exp(z)), self.X)

    def hvp(self, w, v, p=None):
        z, p = self._c(w, p)
        s = 1 / (1 + np.exp(-z))
        return np.einsum(
            "...nm,nmd->...nd", p * s * (1 - s) * np.einsum("nmd,...nd->...nm", self.X, v), self.X
        )


@pytest.mark.parametrize("S,D", [(2, (2, 1, 3)), (3, (None, 2, None)), (1, (None, None, None))])
def test_simulator_reproduces_per_fedavg_run_for_run(S, D):
    rng = np.random.default_rng(3)
    n, m, d, R, tau, K = 3, 5, 2, 7, 2, 3
    X, y = rng.standard_normal((n, m, d)), rng.choice([-1.0, 1.0], (n, m))
    w0 = rng.standard_normal(d)
    mine = simulate(_LogisticClients(X, y), m, 0.3, 0.2, tau, K, S, D, w0, R, np.random.default_rng(17))
    f = mo.Logistic(np.broadcast_to(X, (R, n, m, d)), np.broadcast_to(y, (R, n, m)))
    h = mo.fl.per_fedavg(
        f,
        alpha=0.3,
        beta=0.2,
        tau=tau,
        rounds=K,
        S=S,
        D=D[0],
        D_prime=D[1],
        D_second=D[2],
        w0=np.broadcast_to(w0, (R, d)),
        rng=np.random.default_rng(17),
    )
    np.testing.assert_allclose(mine, np.asarray(h.w_bar), rtol=1e-12, atol=1e-13)


def test_simulator_against_a_written_out_loop_on_cauchy_clients():
    cl, _ = _instance(4)
    n, m, d = cl.X.shape
    alpha, beta, tau, K, S, D, R = 0.1, 0.05, 2, 3, 2, (2, 1, 3), 4
    w0 = np.array([0.5, -1.0])
    bars = simulate(cl, m, alpha, beta, tau, K, S, D, w0, R, np.random.default_rng(8))
    rng = np.random.default_rng(8)

    def grad(i, w, cnt):  # written out per sample: kappa phi'(z) x + nu w / sqrt(delta^2 + w^2)
        g = np.zeros(d)
        for j in range(m):
            z = cl.X[i, j] @ w - cl.y[i, j]
            g += cnt[j] * cl.kappa * z / (1 + z * z) * cl.X[i, j]
        return g / cnt.sum() + cl.nu * w / np.sqrt(cl.delta**2 + w**2)

    def hess(i, w, cnt):
        H = np.diag(cl.nu * cl.delta**2 / (cl.delta**2 + w**2) ** 1.5)
        for j in range(m):
            z = cl.X[i, j] @ w - cl.y[i, j]
            H = H + cnt[j] / cnt.sum() * cl.kappa * (1 - z * z) / (1 + z * z) ** 2 * np.outer(
                cl.X[i, j], cl.X[i, j]
            )
        return H

    w = np.tile(w0, (R, 1))
    for k in range(K):
        keys = rng.random((R, n))
        A = [sorted(np.argsort(keys[r])[:S]) for r in range(R)]
        Wl = np.repeat(w[:, None], n, 1)
        for t in range(tau):
            for r in range(R):
                np.testing.assert_allclose(bars[k, t, r], Wl[r, A[r]].mean(0), rtol=1e-12, atol=1e-14)
            draws = [np.minimum((rng.random((R, n, s)) * m).astype(int), m - 1) for s in D]
            for r in range(R):
                for i in range(n):
                    c = [np.bincount(dr[r, i], minlength=m).astype(float) for dr in draws]
                    wt = Wl[r, i] - alpha * grad(i, Wl[r, i], c[0])
                    g = grad(i, wt, c[1])
                    Wl[r, i] = Wl[r, i] - beta * (g - alpha * hess(i, Wl[r, i], c[2]) @ g)
        w = np.stack([Wl[r, A[r]].mean(0) for r in range(R)])


def test_batch_weights_match_moreau_sample_counts():
    from moreau.fl._minibatches import sample_counts

    f = mo.Logistic(np.zeros((5, 3, 6, 2)), np.ones((5, 3, 6)))
    a = _batch_weights(np.random.default_rng(2), 5, 3, 6, 4)
    b = sample_counts(np.random.default_rng(2), f, (5,), 4, replace=True)
    np.testing.assert_array_equal(a * 4, b)


def test_exact_run_is_gradient_descent_on_F():
    """S = n, full batches, tau = 1: w_{k+1} = w_k - beta grad F(w_k) and the lhs is mean ||grad F(w_k)||^2."""
    cl, _ = _instance(6)
    alpha, beta, K = 0.2, 0.01, 50
    w, total = np.array([1.0, 2.0]), 0.0
    for _ in range(K):
        g = cl.F_grad(w, alpha)
        total += g @ g
        w = w - beta * g
    mean, lo, hi, wb = nc_lhs(
        cl, alpha, beta, 1, K, cl.X.shape[0], (None,) * 3, np.array([1.0, 2.0]), 99, None, 0.999, 1.0, 1.0
    )
    assert wb.shape[2] == 1 and lo == mean == hi
    assert mean == pytest.approx(total / K, rel=1e-12)


def test_hoeffding_range_holds_for_every_run():
    batch = nc_instances(np.random.default_rng(7), 6)
    vals, _ = nc.nc_constants(batch["X"], batch["y"], batch["kappa"], batch["nu"], batch["delta"])
    i = NC["exact"]  # a Monte Carlo instance
    cl, al = nc_clients(batch, i), float(batch["alpha"][i])
    D = tuple(None if v == 0 else int(v) for v in batch["D"][i])
    wb = simulate(
        cl,
        cl.y.shape[1],
        al,
        float(batch["beta"][i]),
        int(batch["tau"][i]),
        int(batch["K"][i]),
        int(batch["S"][i]),
        D,
        batch["w0"][i],
        512,
        np.random.default_rng(0),
    )
    runs = np.mean(np.sum(cl.F_grad(wb, al) ** 2, -1), axis=(0, 1))
    assert runs.max() <= ((1 + al * vals["L"][i]) * vals["B"][i]) ** 2


@pytest.mark.parametrize("seed", [0, 1])
def test_family_holds_is_nonconvex_and_rejects_the_convex_case_gap(seed):
    rng = rng_for(seed, ST.id, th.NC_FAMILY)
    batch = ST.instances(th.NC_FAMILY, None, rng)
    prep = ST.prepared(batch)
    res = ST.run(th.NC_FAMILY, None, rng, batch=batch, prepared=prep, reading=th.REPAIR)
    assert res.holds and res.parts[0].applicable >= 5
    assert np.mean(prep["negfrac"] > 0.5) >= 0.5  # most runs go where grad^2 F has a negative eigenvalue
    assert np.all(prep["lin"][:2] < 0)  # the far-side starts
    rejected = {
        m.name
        for m in ST.mutants
        if not ST.run(th.NC_FAMILY, None, rng, mutant=m, batch=batch, prepared=prep).holds
    }
    assert {"inequality reversed", "wrong exponent: 1/(beta tau K) -> 1/(beta tau K^2)"} <= rejected
    assert any(n.startswith("convex-case gap") for n in rejected)


def test_bad_input_named():
    with pytest.raises(ValueError, match="nu"):
        nc.Clients(np.zeros((2, 3, 2)), np.zeros((2, 3)), 1.0, -1.0, 1.0)
    cl, _ = _instance(0)
    with pytest.raises(ValueError, match="d = 2"):
        nc.f_star(cl, 0.1, np.zeros(3), 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="S=5"):
        simulate(cl, 5, 0.1, 0.1, 1, 1, 5, (None,) * 3, np.zeros(2), 1, None)
