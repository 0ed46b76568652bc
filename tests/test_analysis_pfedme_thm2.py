"""pFedMe, Theorem 2, on double-well clients: the closed-form prox, envelope, F*, sigma_f^2 and round map
against independent computations (scipy, finite differences, dense grids, a plain loop over clients,
exact rationals), both findings' minimal instances by direct computation, the statement on its default
run and every mutant rejected."""
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize as so

from moreau.analysis import pfedme_thm2 as thm2
from moreau.analysis import runner
from moreau.analysis import _pfedme_thm2_wells as W


def _g(u, a, L):            # the double well, written out again (scalars)
    return L * a * a / 4 - L * u * u / 2 if abs(u) <= a / 2 else L / 2 * (abs(u) - a) ** 2


def _g_vec(u, a, L):
    au = np.abs(u)
    return np.where(au <= a / 2, L * a * a / 4 - L * u * u / 2, L / 2 * (au - a) ** 2)


def _prox_scipy(w, s, a, L, lam):
    """argmin_theta sum_k g(theta_k - s_k) + lam/2 |theta - w|^2 coordinate by coordinate (bounded Brent)."""
    out = []
    for wk, sk in zip(w, s):
        h = lambda t: _g(t - sk, a, L) + lam / 2 * (t - wk) ** 2  # noqa: E731
        out.append(so.minimize_scalar(h, bounds=(wk - 10 * a - 10, wk + 10 * a + 10), method="bounded",
                                      options={"xatol": 1e-13}).x)
    return np.array(out)


def _instance(rng, T=4, N=3, d=2):
    L = rng.uniform(0.2, 1.5, T)
    a = rng.uniform(0.5, 2.0, T)
    lam = np.sqrt(8 * L**2 + 1) * rng.uniform(1.0, 2.0, T)
    s = rng.uniform(-1.5, 1.5, (T, N, d)) * a[:, None, None]
    return s, a, L, lam


def test_prox_against_scipy_and_optimality():
    rng = np.random.default_rng(0)
    s, a, L, lam = _instance(rng)
    w = rng.standard_normal((5, 4, 2)) * 2
    th = W.prox(w, s, a, L, lam)
    for p in range(5):
        for t in range(4):
            for i in range(3):
                ref = _prox_scipy(w[p, t], s[t, i], a[t], L[t], lam[t])
                np.testing.assert_allclose(th[p, t, i], ref, atol=1e-8)   # Brent's xatol 1e-13 on a flat-ish h
    # optimality: g'(theta - s) + lam (theta - w) = 0
    resid = W.g_prime(th - s, a[:, None, None], L[:, None, None]) + lam[:, None, None] * (th - w[..., None, :])
    assert np.max(np.abs(resid)) < 1e-13


def test_envelope_gradient_by_finite_differences():
    rng = np.random.default_rng(1)
    s, a, L, lam = _instance(rng)
    w = rng.standard_normal((4, 2)) * 2
    val, grad = W.envelope(w, s, a, L, lam)
    h = 1e-6
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        fd = (W.envelope(w + e, s, a, L, lam)[0] - W.envelope(w - e, s, a, L, lam)[0]) / (2 * h)
        np.testing.assert_allclose(grad[..., k], fd, atol=1e-7)   # central difference of a C^1 piecewise quadratic
    # eq. (6): grad F_i = lam (w - theta_i)
    np.testing.assert_allclose(grad, lam[:, None, None] * (w[:, None] - W.prox(w, s, a, L, lam)), atol=1e-13)


def test_F_star_and_sigma_f2_against_dense_grids():
    rng = np.random.default_rng(2)
    s, a, L, lam = _instance(rng, T=5)
    Fs, arg = W.F_star(s, a, L, lam)
    xs = np.linspace(-12, 12, 240001)
    for t in range(5):
        grid_min, sup = 0.0, 0.0
        for k in range(2):
            F = np.zeros_like(xs)
            gp = []
            for i in range(3):
                z = xs - s[t, i, k]
                # the 1-d envelope by brute force: min over theta of g(theta) + lam/2 (theta - z)^2 on a grid
                th = z[::4000, None] + np.linspace(-4, 4, 8001)[None]
                env = np.min(_g_vec(th, a[t], L[t]) + lam[t] / 2 * (th - z[::4000, None]) ** 2, axis=1)
                np.testing.assert_allclose(W._E(z[::4000], a[t], L[t], lam[t]), env, atol=1e-5)
                F += W._E(z, a[t], L[t], lam[t]) / 3
                gp.append(np.where(np.abs(z) <= a[t] / 2, -L[t] * z, L[t] * (z - a[t] * np.sign(z))))
            grid_min += F.min()
            gp = np.array(gp)
            sup += np.max(np.mean((gp - gp.mean(axis=0)) ** 2, axis=0))
        assert Fs[t] <= grid_min + 1e-12 and grid_min - Fs[t] < 1e-6
        np.testing.assert_allclose(W.envelope(arg[t:t + 1], s[t:t + 1], a[t:t + 1], L[t:t + 1],
                                              lam[t:t + 1])[0].mean(), Fs[t], atol=1e-12)
        exact = W.sigma_f2(s[t:t + 1], a[t:t + 1], L[t:t + 1])[0]
        assert sup <= exact + 1e-12 and exact - sup < 1e-6


def test_run_equals_algorithm_1_written_out():
    rng = np.random.default_rng(3)
    s, a, L, lam = _instance(rng, T=3)
    eta, beta, R = 1 / (75 * lam**3) * np.array([1, 4, 16.0]), np.array([1.0, 2.0, 3.0]), np.array([1, 3, 2])
    w0 = rng.standard_normal((3, 2)) * 2
    ws = W.run(w0, s, a, L, lam, eta, beta, R, 2)
    for t in range(3):
        w = w0[t].copy()
        for rnd in range(2):
            locals_ = []
            for i in range(3):
                v = w.copy()
                for _ in range(R[t]):
                    v = v - eta[t] * lam[t] * (v - _prox_scipy(v, s[t, i], a[t], L[t], lam[t]))
                locals_.append(v)
            w = (1 - beta[t]) * w + beta[t] * np.mean(locals_, axis=0)
            np.testing.assert_allclose(ws[rnd + 1, t], w, atol=1e-9)


def test_drift_constant_k():
    eta, lam, R = np.array([1e-3, 0.1, 0.5]), np.array([2.0, 3.0, 1.5]), np.array([1, 3, 5])
    direct = np.array([sum((1 + e * l) ** r - 1 for r in range(n)) / n for e, l, n in zip(eta, lam, R)])
    np.testing.assert_allclose(thm2._k(eta, lam, R), direct, rtol=1e-12)
    assert thm2._k(eta, lam, R)[0] == 0.0


# --- the findings, by direct computation --------------------------------------------------

def _E1(z, a, L, lam):      # the 1-d envelope, min over the three pieces of the prox problem
    cand = [lam * z / (lam - L), (lam * z + L * a) / (lam + L), (lam * z - L * a) / (lam + L)]
    return min(_g(u, a, L) + lam / 2 * (u - z) ** 2 for u in cand)


def test_finding_eta_minimal_instance():
    L, a, lam = 1.0, 1.0, 3.0
    eta_hat = 1 / (75 * lam**3)
    w0 = 0.25
    Delta = _E1(w0, a, L, lam) - 0.0           # inf F = inf g = 0 (the envelope keeps the infimum)
    assert Delta == pytest.approx(13 / 64)

    def avg_grad2(eta, T):
        w, tot = w0, 0.0
        for _ in range(T):
            th = _prox_1d(w, a, L, lam)
            tot += (lam * (w - th)) ** 2
            w = w - eta * lam * (w - th)
        return tot / T

    T = 10_000
    small, largest = avg_grad2(eta_hat / 1000, T), avg_grad2(eta_hat, T)
    printed = Delta / (eta_hat * T)                  # the first term with constant 1
    assert small / printed > 3.4                     # 0.1417 against 0.0411
    assert largest / printed == pytest.approx(0.9994, abs=1e-3)
    assert largest <= 2 * Delta / (eta_hat * T)      # the reading that holds (beta R eta = eta_hat here)
    assert small <= 2 * Delta / (eta_hat / 1000 * T)


def _prox_1d(w, a, L, lam):
    tau = a * (lam - L) / (2 * lam)
    return lam * w / (lam - L) if abs(w) <= tau else (lam * w + L * a * np.sign(w)) / (lam + L)


def _round_fraction(w, s, lam, L, a, eta, beta, R):
    """One pFedMe round in exact rationals (1-d, double wells), the prox piece read from the point."""
    local = []
    for si in s:
        v = w
        for _ in range(R):
            z = v - si
            tau = a * (lam - L) / (2 * lam)
            u = lam * z / (lam - L) if abs(z) <= tau else (lam * z + L * a * (1 if z > 0 else -1)) / (lam + L)
            v = v - eta * lam * (v - (si + u))
        local.append(v)
    return (1 - beta) * w + beta * sum(local) / len(local)


def _gradF_fraction(w, s, lam, L, a):
    tot = 0
    for si in s:
        z = w - si
        tau = a * (lam - L) / (2 * lam)
        u = lam * z / (lam - L) if abs(z) <= tau else (lam * z + L * a * (1 if z > 0 else -1)) / (lam + L)
        tot += lam * (z - u)
    return tot / len(s)


def test_finding_drift_minimal_instance_in_rationals():
    F = Fraction
    lam, L, a, beta, R = F(4), F(1), F(1), F(1), 2
    s = [F(9, 10), F(1, 10), F(-8, 10)]
    eta = 1 / (75 * lam**3) / 2
    assert eta == F(1, 9600)
    x = F(-1, 5)                                   # argmin F: stationary, and below a dense grid of F
    assert _gradF_fraction(x, s, lam, L, a) == 0
    xs = np.linspace(-4, 4, 80001)
    Fgrid = np.mean([[_E1(z, 1.0, 1.0, 4.0) for z in xs - float(si)] for si in s], axis=0)
    Fx = np.mean([_E1(float(x - si), 1.0, 1.0, 4.0) for si in s])
    assert Fx <= Fgrid.min() + 1e-12 and Fx == pytest.approx(0.086)
    assert abs(x - s[1]) < a * (lam - L) / (2 * lam)      # client 2 on its concave piece
    w1 = _round_fraction(x, s, lam, L, a, eta, beta, R)
    g1 = _gradF_fraction(w1, s, lam, L, a)
    assert g1 != 0 and float(g1**2) == pytest.approx(7.5267e-20, rel=1e-4)
    # the fixed point: the round is affine on this piece, Phi(w) = p w + q, solved exactly
    h = F(1, 10**6)                                # small enough to stay on every client's piece
    p = (_round_fraction(x + h, s, lam, L, a, eta, beta, R) - w1) / h
    q = w1 - p * x
    w_inf = q / (1 - p)
    assert _round_fraction(w_inf, s, lam, L, a, eta, beta, R) == w_inf          # same piece: an exact fixed point
    g_inf = _gradF_fraction(w_inf, s, lam, L, a)
    assert float(w_inf) == pytest.approx(-0.200167, abs=1e-6)
    assert float(g_inf**2) == pytest.approx(2.1974e-10, rel=1e-4)
    # the module's float fixed point agrees
    w_mod, _, resid, _ = W.fixed_point(np.array([[-0.2]]), np.array(s, float).reshape(1, 3, 1), np.array([1.0]),
                                       np.array([1.0]), np.array([4.0]), np.array([float(eta)]), np.array([1.0]),
                                       np.array([2]))
    assert w_mod[0, 0] == pytest.approx(float(w_inf), abs=1e-12)
    # and the derived bound holds: |grad F(w_inf)|^2 <= 2 k^2 sigma_F2^2/(1 - k^2 lam^2/(lam^2 - 8L^2))
    k = thm2._k(np.array([float(eta)]), np.array([4.0]), np.array([2]))[0]
    sF2 = 16 * W.sigma_f2(np.array(s, float).reshape(1, 3, 1), np.array([1.0]), np.array([1.0]))[0] / (16 - 8)
    assert float(g_inf**2) <= 2 * k**2 * sF2 / (1 - k**2 * 16 / 8)


# --- the statement --------------------------------------------------------------------------

def test_statement_holds_and_every_mutant_rejected():
    (st,) = thm2.STATEMENTS
    rng = runner.rng_for(0, st.id, "quadratic")
    batch = st.instances("quadratic", None, rng)
    res = st.run("quadratic", None, rng, batch=batch)
    assert res.holds, [(p.name, p.failures) for p in res.parts if not p.holds]
    assert all(p.applicable for p in res.parts)
    survivors = [m.name for m in st.mutants if st.run("quadratic", None, rng, mutant=m, batch=batch).holds]
    assert not survivors
    assert len(st.findings) == 3


def test_instances_cover_the_boundaries():
    (st,) = thm2.STATEMENTS
    b = st.instances("quadratic", None, np.random.default_rng(11))
    thr = np.sqrt(8 * b["L"] ** 2 + 1)
    assert np.any(np.isclose(b["lam"], thr))                                   # lam at the theorem's threshold
    assert np.any(b["lam"] < 2 * np.sqrt(2) * b["L"]) and np.any((b["lam"] > 2 * np.sqrt(2) * b["L"]) & (b["lam"] < thr))
    eh = 1 / (75 * b["lam"] ** 3)
    ratio = b["eta"] * b["beta"] * b["R"] / eh
    assert np.any(np.isclose(ratio, 1.0)) and np.any(ratio <= 2.0**-8 * (1 + 1e-12))   # the largest step and small ones
    assert np.any(b["ident"]) and np.any(~b["ident"])
