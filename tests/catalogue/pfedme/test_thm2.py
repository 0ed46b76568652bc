"""pFedMe, Theorem 2, on double-well clients: the closed-form prox, envelope, F*, sigma_f^2 and round map
against independent computations (scipy, finite differences, dense grids, a plain loop over clients,
exact rationals), the findings' minimal instances by direct computation, the statement on its default
run (the printed claim fails, the repair holds, each printed element alone fails) and every mutant
rejected; the sampling (S < N) and inexact-solve (delta > 0) closed forms against
exhaustive enumeration, a written-out loop and seeded Monte Carlo of moreau.fl.pfedme."""

from fractions import Fraction
from itertools import combinations, product

import numpy as np
import pytest
import scipy.optimize as so

from moreau.analysis.engine import runner
from moreau.analysis.pfedme import delta_moments as M
from moreau.analysis.pfedme import double_wells as W
from moreau.analysis.pfedme import outer_pieces as X
from moreau.analysis.pfedme import thm2
from moreau.analysis.pfedme.thm2 import sampling_parts as P
from moreau.fl import pfedme


def _g(u, a, L):  # the double well, written out again (scalars)
    return L * a * a / 4 - L * u * u / 2 if abs(u) <= a / 2 else L / 2 * (abs(u) - a) ** 2


def _g_vec(u, a, L):
    au = np.abs(u)
    return np.where(au <= a / 2, L * a * a / 4 - L * u * u / 2, L / 2 * (au - a) ** 2)


def _prox_scipy(w, s, a, L, lam):
    """argmin_theta sum_k g(theta_k - s_k) + lam/2 |theta - w|^2 coordinate by coordinate (bounded Brent)."""
    out = []
    for wk, sk in zip(w, s, strict=True):

        def h(t, wk=wk, sk=sk):
            return _g(t - sk, a, L) + lam / 2 * (t - wk) ** 2

        out.append(
            so.minimize_scalar(
                h, bounds=(wk - 10 * a - 10, wk + 10 * a + 10), method="bounded", options={"xatol": 1e-13}
            ).x
        )
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
                np.testing.assert_allclose(th[p, t, i], ref, atol=1e-8)  # Brent's xatol 1e-13 on a flat-ish h
    # optimality: g'(theta - s) + lam (theta - w) = 0
    resid = W.g_prime(th - s, a[:, None, None], L[:, None, None]) + lam[:, None, None] * (
        th - w[..., None, :]
    )
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
        np.testing.assert_allclose(
            grad[..., k], fd, atol=1e-7
        )  # central difference of a C^1 piecewise quadratic
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
        np.testing.assert_allclose(
            W.envelope(arg[t : t + 1], s[t : t + 1], a[t : t + 1], L[t : t + 1], lam[t : t + 1])[0].mean(),
            Fs[t],
            atol=1e-12,
        )
        exact = W.sigma_f2(s[t : t + 1], a[t : t + 1], L[t : t + 1])[0]
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
    direct = np.array(
        [sum((1 + e * lam_k) ** r - 1 for r in range(n)) / n for e, lam_k, n in zip(eta, lam, R, strict=True)]
    )
    np.testing.assert_allclose(thm2._k(eta, lam, R), direct, rtol=1e-12)
    assert thm2._k(eta, lam, R)[0] == 0.0


# --- the findings, by direct computation --------------------------------------------------


def _E1(z, a, L, lam):  # the 1-d envelope, min over the three pieces of the prox problem
    cand = [lam * z / (lam - L), (lam * z + L * a) / (lam + L), (lam * z - L * a) / (lam + L)]
    return min(_g(u, a, L) + lam / 2 * (u - z) ** 2 for u in cand)


def test_finding_eta_minimal_instance():
    L, a, lam = 1.0, 1.0, 3.0
    eta_hat = 1 / (75 * lam**3)
    w0 = 0.25
    Delta = _E1(w0, a, L, lam) - 0.0  # inf F = inf g = 0 (the envelope keeps the infimum)
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
    printed = Delta / (eta_hat * T)  # the first term with constant 1
    assert small / printed > 3.4  # 0.1417 against 0.0411
    assert largest / printed == pytest.approx(0.9994, abs=1e-3)
    assert largest <= 2 * Delta / (eta_hat * T)  # the reading that holds (beta R eta = eta_hat here)
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
    x = F(-1, 5)  # argmin F: stationary, and below a dense grid of F
    assert _gradF_fraction(x, s, lam, L, a) == 0
    xs = np.linspace(-4, 4, 80001)
    Fgrid = np.mean([[_E1(z, 1.0, 1.0, 4.0) for z in xs - float(si)] for si in s], axis=0)
    Fx = np.mean([_E1(float(x - si), 1.0, 1.0, 4.0) for si in s])
    assert Fx <= Fgrid.min() + 1e-12 and Fx == pytest.approx(0.086)
    assert abs(x - s[1]) < a * (lam - L) / (2 * lam)  # client 2 on its concave piece
    w1 = _round_fraction(x, s, lam, L, a, eta, beta, R)
    g1 = _gradF_fraction(w1, s, lam, L, a)
    assert g1 != 0 and float(g1**2) == pytest.approx(7.5267e-20, rel=1e-4)
    # the fixed point: the round is affine on this piece, Phi(w) = p w + q, solved exactly
    h = F(1, 10**6)  # small enough to stay on every client's piece
    p = (_round_fraction(x + h, s, lam, L, a, eta, beta, R) - w1) / h
    q = w1 - p * x
    w_inf = q / (1 - p)
    assert _round_fraction(w_inf, s, lam, L, a, eta, beta, R) == w_inf  # same piece: an exact fixed point
    g_inf = _gradF_fraction(w_inf, s, lam, L, a)
    assert float(w_inf) == pytest.approx(-0.200167, abs=1e-6)
    assert float(g_inf**2) == pytest.approx(2.1974e-10, rel=1e-4)
    # the module's float fixed point agrees
    w_mod, _, resid, _ = W.fixed_point(
        np.array([[-0.2]]),
        np.array(s, float).reshape(1, 3, 1),
        np.array([1.0]),
        np.array([1.0]),
        np.array([4.0]),
        np.array([float(eta)]),
        np.array([1.0]),
        np.array([2]),
    )
    assert w_mod[0, 0] == pytest.approx(float(w_inf), abs=1e-12)
    # and the derived bound holds: |grad F(w_inf)|^2 <= 2 k^2 sigma_F2^2/(1 - k^2 lam^2/(lam^2 - 8L^2))
    k = thm2._k(np.array([float(eta)]), np.array([4.0]), np.array([2]))[0]
    sF2 = 16 * W.sigma_f2(np.array(s, float).reshape(1, 3, 1), np.array([1.0]), np.array([1.0]))[0] / (16 - 8)
    assert float(g_inf**2) <= 2 * k**2 * sF2 / (1 - k**2 * 16 / 8)


# --- the statement --------------------------------------------------------------------------

REPAIR = "fixed-η terms, drift, second-moment δ"


def test_printed_fails_repair_holds_and_every_mutant_rejected():
    (st,) = thm2.STATEMENTS
    rng = runner.rng_for(0, st.id, "quadratic")
    batch = st.instances("quadratic", None, rng)
    res = st.run("quadratic", None, rng, batch=batch, reading=REPAIR)
    assert res.holds, [(p.name, p.failures) for p in res.parts if not p.holds]
    assert all(p.applicable for p in res.parts)
    assert st.expect == "fails" and not st.run("quadratic", None, rng, batch=batch, reading=None).holds
    # each printed element alone fails, on the part it concerns
    where = {
        "printed first term Δ_F/(η̂₂T) only": thm2.PARTS[1],
        "printed no-drift limit only": thm2.PARTS[3],
        "printed S < N term at fixed η only": P.PARTS_S[1],
        "printed (N/S − 1)^(1/2) only": P.PARTS_S[2],
        "text's first-moment δ only": M.PARTS_M[0],
    }
    assert set(where) == {r.name for r in st.readings if r.expect == "fails"}
    for name, part in where.items():
        out = {p.name: p for p in st.run("quadratic", None, rng, batch=batch, reading=name).parts}
        assert not out[part].holds, name
        assert all(p.holds for p in out.values() if p.name not in (part, M.PARTS_M[1], M.PARTS_M[3])), name
    survivors = [m.name for m in st.mutants if st.run("quadratic", None, rng, mutant=m, batch=batch).holds]
    assert not survivors
    assert len(st.findings) == 5


def test_instances_cover_the_boundaries():
    (st,) = thm2.STATEMENTS
    b = st.instances("quadratic", None, np.random.default_rng(11))
    thr = np.sqrt(8 * b["L"] ** 2 + 1)
    assert np.any(np.isclose(b["lam"], thr))  # lam at the theorem's threshold
    assert np.any(b["lam"] < 2 * np.sqrt(2) * b["L"]) and np.any(
        (b["lam"] > 2 * np.sqrt(2) * b["L"]) & (b["lam"] < thr)
    )
    eh = 1 / (75 * b["lam"] ** 3)
    ratio = b["eta"] * b["beta"] * b["R"] / eh
    assert np.any(np.isclose(ratio, 1.0)) and np.any(
        ratio <= 2.0**-8 * (1 + 1e-12)
    )  # the largest step and small ones
    assert np.any(b["ident"]) and np.any(~b["ident"])


# --- client sampling (S < N) and inexact inner solves (delta > 0) ---------------------------------


@pytest.mark.parametrize("N", [2, 3, 4, 6])
def test_c_S_is_the_variance_of_a_subset_mean(N):
    rng = np.random.default_rng(N)
    x = rng.standard_normal(N)
    V = np.mean((x - x.mean()) ** 2)
    for S in range(1, N + 1):
        means = np.array(
            [x[list(c)].mean() for c in combinations(range(N), S)]
        )  # all subsets, equally likely
        np.testing.assert_allclose(np.mean((means - x.mean()) ** 2), X.c_S(N, S) * V, atol=1e-14)
    with pytest.raises(ValueError, match="1 <= S <= N"):
        X.c_S(3, 4)


def _sampling_instance(kappa_target=0.3, S_w0=0.0):
    """One certified 1-d instance (N = 3 on outer pieces) with a large step (the closed forms hold for any
    0 < kappa < 1), as batch arrays of one instance."""
    L, a, lam = np.array([1.0]), np.array([1.0]), np.array([3.0])
    c = np.array([[[-0.2], [0.05], [0.15]]])
    side = np.array([[[1.0], [-1.0], [1.0]]])
    s = c - side * a[:, None, None]
    h = X.h_outer(L, lam)
    eta = kappa_target / h
    w0 = np.array([[S_w0]])
    return s, c, side, a, L, lam, eta, np.array([1.0]), np.array([1]), w0, h


def test_enumeration_equals_a_written_out_loop_over_sequences():
    s, _, _, a, L, lam, eta, beta, R, w0, _ = _sampling_instance(0.3, 0.1)
    for S in (1, 2):
        E, _ = X.enumerate_sampling(w0, s, a, L, lam, eta, beta, R, S, 3)
        subsets = list(combinations(range(3), S))
        for t in range(4):
            tot = 0.0
            for seq in product(subsets, repeat=t):
                w = 0.1
                for sub in seq:
                    loc = [
                        w - eta[0] * lam[0] * (w - (s[0, i, 0] + _prox_1d(w - s[0, i, 0], 1.0, 1.0, 3.0)))
                        for i in range(3)
                    ]
                    w = np.mean([loc[i] for i in sub])
                g = np.mean(
                    [3.0 * ((w - s[0, i, 0]) - _prox_1d(w - s[0, i, 0], 1.0, 1.0, 3.0)) for i in range(3)]
                )
                tot += g * g
            np.testing.assert_allclose(E[t, 0], tot / len(subsets) ** t, rtol=1e-12, atol=1e-18)


def test_sampling_closed_form_against_enumeration_and_certificate():
    s, c, side, a, L, lam, eta, beta, R, w0, h = _sampling_instance(0.3, 0.1)
    assert X.outer_certified(np.array([[-0.2]]), np.array([[0.15]]), s, a, L, lam, side)[0]
    kap = X.kappa(eta, h, beta, R)
    V = np.mean((c - c.mean()) ** 2)
    e0 = (w0[0, 0] - c.mean()) ** 2
    for S in (1, 2):
        E, var = X.enumerate_sampling(w0, s, a, L, lam, eta, beta, R, S, 6)
        t = np.arange(7)
        q2t = (1 - kap[0]) ** (2 * t)
        floor = h[0] ** 2 * kap[0] * X.c_S(3, S) * V / (2 - kap[0])
        np.testing.assert_allclose(E[:, 0], h[0] ** 2 * q2t * e0 + floor * (1 - q2t), rtol=1e-12)
        np.testing.assert_allclose(var[:, 0], floor * (1 - q2t), rtol=1e-11, atol=1e-300)
        # the Cesaro averages of the closed form against a direct sum of the enumerated values (T = 1, 2, 4)
        avg = X.sampling_sums(np.array([e0]), np.array([V]), h, kap, X.c_S(3, S))[0][:3, 0]
        np.testing.assert_allclose(avg, [E[:T, 0].mean() for T in (1, 2, 4)], rtol=1e-12)
    # a box reaching the concave piece is not certified
    assert not X.outer_certified(np.array([[-0.2]]), np.array([[0.9]]), s, a, L, lam, side)[0]


@pytest.mark.parametrize("S", [1, 2])
def test_sampling_expectation_against_moreau_pfedme_monte_carlo(S):
    """moreau.fl.pfedme (certified Newton prox, its own sampling without replacement, seeded) on M copies of
    the instance: the exact value lies in the empirical-Bernstein interval of the sample mean of |grad F(w_t)|^2
    (Maurer & Pontil 2009, Thm 4, two-sided at 1 - alpha, on samples in [0, top]).
    Range (proven): w_t - c_bar = q^t e_0 + kappa sum_{j<t} q^{t-1-j}(m_j - c_bar) with |m_j - c_bar| <= width,
    so |grad F(w_t)| <= h (q^t |e_0| + (1 - q^t) width)."""
    s, c, _, a, L, lam, eta, beta, R, w0, h = _sampling_instance(0.4, 0.0)
    M, t, alpha = 40000, 3, 1e-6
    rep = lambda x: np.repeat(x, M, axis=0)  # noqa: E731
    hist = pfedme(
        W.DoubleWell(rep(s), rep(a), rep(L)),
        lam=3.0,
        eta=float(eta[0]),
        beta=1.0,
        R=1,
        rounds=t,
        S=S,
        w0=rep(w0),
        rng=np.random.default_rng(100 + S),
        personal="none",
    )
    g = W.envelope(hist.w_global[t], rep(s), rep(a), rep(L), rep(lam))[1].mean(axis=-2)
    sample = np.sum(g**2, axis=-1)
    kap = X.kappa(eta, h, beta, R)[0]
    q = 1 - kap
    width = np.ptp(c)
    e0 = abs(w0[0, 0] - c.mean())
    top = (h[0] * (q**t * e0 + (1 - q**t) * width)) ** 2
    assert sample.max() <= top * (1 + 1e-9)
    lg = np.log(4 / alpha)
    half = np.sqrt(2 * sample.var(ddof=1) * lg / M) + 7 * top * lg / (3 * (M - 1))
    V = np.mean((c - c.mean()) ** 2)
    exact = h[0] ** 2 * (q ** (2 * t) * e0**2 + kap * X.c_S(3, S) * V / (2 - kap) * (1 - q ** (2 * t)))
    assert abs(sample.mean() - exact) <= half
    # the interval separates sampling with replacement (variance V/S) at S = 2: the check can fail
    if S == 2:
        wrong = h[0] ** 2 * (kap * (V / 2) / (2 - kap) * (1 - q ** (2 * t)))
        assert abs(wrong - exact) > 2 * half


def test_bias_closed_form_limit_is_lam_delta():
    """Identical clients, theta~ = theta^ + delta u every step: the closed-form prox loop converges to
    grad F = lam delta u (|grad F|^2 -> lam^2 delta^2, the lam^2 delta^2 term with constant 1 attained),
    and its Cesaro averages equal bias_sums."""
    L, a, lam = np.array([1.0]), np.array([1.0]), np.array([3.0])
    s = np.zeros((1, 3, 1))
    h = X.h_outer(L, lam)
    eta, beta, R = np.array([0.2]), np.array([1.5]), np.array([2])
    delta, u = 0.05, np.array([[1.0]])
    w0 = np.array([[1.3]])
    ws = X.biased_run(w0, s, a, L, lam, eta, beta, R, 400, np.full((1, 3, 1), delta))
    g = W.envelope(ws, s, a, L, lam)[1].mean(axis=-2)[:, 0, 0]
    assert g[-1] == pytest.approx(3.0 * delta, rel=1e-12)
    kap = X.kappa(eta, h, beta, R)
    cprime = 1.0 + 3.0 * delta / h[0]
    avg = X.bias_sums(w0 - cprime, u, h, lam, np.array([delta]), kap, T=np.array([1.0, 2.0, 8.0, 64.0]))[:, 0]
    np.testing.assert_allclose(avg, [np.mean(g[:T] ** 2) for T in (1, 2, 8, 64)], rtol=1e-12)
    # the bound's reading: <= 2 Delta_F/(beta R eta T) + lam^2 delta^2, and the lam^2 delta^2/2 mutant fails late
    Delta = W.envelope(w0, s, a, L, lam)[0].mean()
    T = np.array([1.0, 10.0, 1e3, 1e6])
    lhs = X.bias_sums(w0 - cprime, u, h, lam, np.array([delta]), kap, T=T)[:, 0]
    rhs = 2 * Delta / (1.5 * 2 * 0.2 * T) + (3 * delta) ** 2
    assert np.all(lhs <= rhs) and lhs[-1] / rhs[-1] > 0.999
    assert lhs[-1] > 2 * Delta / (1.5 * 2 * 0.2 * T[-1]) + (3 * delta) ** 2 / 2


def test_random_errors_closed_form_against_monte_carlo():
    """Fresh uniform random unit errors (d = 2, seeded) through the closed-form prox loop: the mean of
    |grad F(w_t)|^2 within its Hoeffding interval around noise_sums' value (range: the certified ball)."""
    L, lam = np.array([1.0]), np.array([3.0])
    M, t, N, d, alpha = 20000, 4, 3, 2, 1e-6
    h = X.h_outer(L, lam)[0]
    eta, beta, R = np.array([0.5]), np.array([1.0]), np.array([2])
    delta = 0.1
    rng = np.random.default_rng(5)
    side = np.array([1.0, -1.0])
    w = np.broadcast_to(side * 1.1, (M, d)).copy()
    c = side * 1.0
    for _ in range(t):
        v = np.broadcast_to(w[:, None], (M, N, d)).copy()
        for _ in range(2):
            u = rng.standard_normal((M, N, d))
            u /= np.linalg.norm(u, axis=-1, keepdims=True)
            th = (
                W.prox_local(v, np.zeros((M, N, d)), np.full(M, 1.0), np.full(M, 1.0), np.full(M, 3.0))
                + delta * u
            )
            v = v - eta[0] * 3.0 * (v - th)
        w = v.mean(axis=1)
    sample = np.sum((h * (w - c)) ** 2, axis=-1)
    kap = X.kappa(eta, np.array([h]), beta, R)
    q = 1 - kap[0]
    top = (h * (q**t * np.sqrt(d) * 0.1 + 3.0 * delta / h)) ** 2  # |w_t - c| <= q^t |e_0| + lam delta/h
    assert sample.max() <= top
    e0 = np.array([d * 0.1**2])
    # noise_sums gives Cesaro averages; the value at round t is T (avg_T) - (T - 1) avg_{T-1}
    avg = X.noise_sums(
        e0, np.array([h]), lam, np.array([delta]), eta, beta, R, N, kap, T=np.array([t, t + 1.0])
    )[0][:, 0]
    exact = (t + 1) * avg[1] - t * avg[0]
    half = top * np.sqrt(np.log(2 / alpha) / (2 * M))
    assert abs(sample.mean() - exact) <= half
    # one error shared by the N clients (variance N times larger) lies outside: the check can fail
    avg_w = X.noise_sums(
        e0, np.array([h]), lam, np.array([delta * np.sqrt(N)]), eta, beta, R, N, kap, T=np.array([t, t + 1.0])
    )[0][:, 0]
    assert abs((t + 1) * avg_w[1] - t * avg_w[0] - exact) > 2 * half


def test_pfedme_inner_gradient_steps_are_delta_accurate():
    """moreau.fl.pfedme with inner = K gradient steps stopped by (8) (nu): every recorded inner solution is
    within sqrt(nu)/(lam - L) of the exact prox (h~ is (lam - L)-strongly convex), so Lemma 1's
    delta^2 = 2 nu/(lam - L)^2 (gamma_f = 0) holds; and the round is the biased round with that error."""
    rng = np.random.default_rng(8)
    s = rng.uniform(-1.5, 1.5, (2, 3, 2))
    a, L, lam = np.array([1.0, 0.7]), np.array([1.0, 0.5]), np.array([3.0, 2.0])
    nu = 1e-6
    hist = pfedme(
        W.DoubleWell(s, a, L),
        lam=lam,
        eta=0.05,
        beta=1.0,
        R=1,
        rounds=4,
        inner=50,
        nu=nu,
        w0=rng.standard_normal((2, 2)),
        personal="inner",
    )
    for t in range(4):
        w = hist.w_global[t]
        exact = W.prox(w, s, a, L, lam)
        err = np.linalg.norm(hist.theta[t + 1] - exact, axis=-1)
        assert np.all(err <= np.sqrt(nu) / (lam - L)[:, None] * (1 + 1e-9))
        assert np.all(err <= np.sqrt(2 * nu) / (lam - L)[:, None])  # Lemma 1's delta
        step = w - 0.05 * lam[:, None] * (w - hist.theta[t + 1].mean(axis=1))
        np.testing.assert_allclose(hist.w_global[t + 1], step, atol=1e-13)


def test_b_delta_adversarial_direction_is_the_worst():
    """(1/N) sum |theta~_i - w|^2 over |theta~_i - theta^_i| <= delta is largest for theta~ = theta^ + delta
    (theta^ - w)/|theta^ - w| (the part's lhs): random directions never exceed it."""
    rng = np.random.default_rng(9)
    s, a, L, lam = _instance(rng, T=3)
    w = rng.standard_normal((3, 2))
    th = W.prox(w, s, a, L, lam)
    delta = 0.3
    worst = np.mean((np.linalg.norm(th - w[:, None], axis=-1) + delta) ** 2, axis=-1)
    for _ in range(200):
        u = rng.standard_normal(th.shape)
        u *= delta * rng.uniform(0, 1, th.shape[:-1] + (1,)) / np.linalg.norm(u, axis=-1, keepdims=True)
        assert np.all(np.mean(np.sum((th + u - w[:, None]) ** 2, axis=-1), axis=-1) <= worst + 1e-12)


def test_finding_sampling_minimal_instance_in_rationals():
    F = Fraction
    lam, L, a, beta = F(3), F(1), F(1), F(1)
    s = [F(-1), F(-8, 10)]
    eta = 1 / (75 * lam**3)
    assert eta == F(1, 2025)
    x = F(1, 10)
    assert _gradF_fraction(x, s, lam, L, a) == 0  # argmin F (F* = 3/800 there, Delta_F = 0)
    xs = np.linspace(-4, 4, 80001)
    Fgrid = np.mean([[_E1(z, 1.0, 1.0, 3.0) for z in xs - float(si)] for si in s], axis=0)
    assert np.mean([_E1(float(x - si), 1.0, 1.0, 3.0) for si in s]) <= Fgrid.min() + 1e-12
    # S = 1 of N = 2, R = 1: round 1 is x - eta grad F_i(x) for the sampled client
    E1 = (
        sum(_gradF_fraction(_round_fraction(x, [si], lam, L, a, eta, beta, 1), s, lam, L, a) ** 2 for si in s)
        / 2
    )
    assert E1 == F(1, 1296000000)  # > 0 = the printed bound at Delta_F = 0
    # the floor: h^2 kappa c_S V/(2 - kappa), h = 3/4, kappa = eta h, c_S = 1, V = 1/100
    h = lam * L / (lam + L)
    kap = eta * h
    floor = h**2 * kap * F(1, 100) / (2 - kap)
    assert floor == F(9, 8638400)
    sA = np.array([[[-1.0], [-0.8]]])
    one = np.array([1.0])
    avg, fl = X.sampling_sums(
        np.array([0.0]),
        np.array([0.01]),
        np.array([0.75]),
        np.array([float(kap)]),
        X.c_S(2, 1),
        T=np.array([2.0, 2.0**40]),
    )
    assert fl[0] == pytest.approx(float(floor), rel=1e-12) and avg[1, 0] == pytest.approx(
        float(floor), rel=1e-9
    )
    assert avg[0, 0] == pytest.approx(float(E1) / 2, rel=1e-9)  # (0 + E|grad F(w_1)|^2)/2
    assert X.outer_certified(
        np.array([[0.0]]), np.array([[0.2]]), sA, one, one, np.array([3.0]), np.ones((1, 2, 1))
    )[0]
    # the fixed-eta reading holds: 2 lam eta c_S sigma_F2^2 = 2 * 3 / 2025 * 9 * 0.01
    assert float(floor) <= 2 * 3 / 2025 * 9 * W.sigma_f2(sA, one, one)[0]


def test_new_parts_are_applicable_on_the_default_batch():
    (st,) = thm2.STATEMENTS
    rng = runner.rng_for(0, st.id, "quadratic")
    res = st.run("quadratic", None, rng, reading=REPAIR)
    names = set(P.PARTS_S) | set(P.PARTS_D)
    found = {p.name: p for p in res.parts if p.name in names}
    assert set(found) == names
    assert all(p.applicable >= 10 and p.holds for p in found.values())
