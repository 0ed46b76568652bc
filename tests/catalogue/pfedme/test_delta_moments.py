"""pFedMe, Theorem 2: the moments of delta (the text's E|theta~ - theta^| <= delta against Lemma 1's second
moment), S < N with delta > 0, and stochastic gradients through Lemma 1's delta.  The closed forms against
exhaustive enumeration of error and sampling sequences written out here, a seeded simulation with a Hoeffding
interval, scipy's minimiser, and the finding's minimal instance in exact rationals."""

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


def _per_round(avg_fn, t):
    """E|grad F(w_t)|^2 from Cesaro averages: (t + 1) avg_{t+1} - t avg_t (avg_0 = 0)."""
    T = np.array([max(t, 1.0), t + 1.0])
    avg = avg_fn(T)
    return (t + 1) * avg[1] - (t * avg[0] if t > 0 else 0.0)


@pytest.mark.parametrize("N,R,t_max", [(1, 2, 5), (2, 1, 5), (1, 1, 10)])
def test_two_point_closed_form_against_enumeration(N, R, t_max):
    """Every sequence of fresh two-point errors ((delta_1/p) u w.p. p, else 0; per client, step and round)
    through a plain loop of the closed-form prox, weighted by its probability: = two_point_sums per round."""
    L, a, lam = 1.0, 0.8, 3.0
    eta, beta, p, delta1 = 0.05, 1.5, 0.3, 0.07
    side = np.array([1.0, -1.0])
    u = side * np.array([0.6, 0.8])
    c = side * a
    w0 = c + side * np.array([0.4, 0.0])
    h = lam * L / (lam + L)
    k = N * R
    for t in range(t_max + 1):
        E = 0.0
        for seq in product((0, 1), repeat=k * t):
            w = w0.copy()
            for rnd in range(t):
                locs = []
                for i in range(N):
                    v = w.copy()
                    for r in range(R):
                        hit = seq[rnd * k + i * R + r]
                        th = (
                            W.prox_local(
                                v[None, None],
                                np.zeros((1, 1, 2)),
                                np.array([a]),
                                np.array([L]),
                                np.array([lam]),
                            )[0, 0]
                            + hit * (delta1 / p) * u
                        )
                        v = v - eta * lam * (v - th)
                    locs.append(v)
                w = (1 - beta) * w + beta * np.mean(locs, axis=0)
            assert np.all(side * (w - c) >= 0)  # the outward certificate
            prob = np.prod([p if b else 1 - p for b in seq])
            E += prob * np.sum((h * (w - c)) ** 2)
        one = np.array
        kap = X.kappa(one([eta]), one([h]), one([beta]), one([R]))

        def avg(T, one=one, kap=kap):
            return M.two_point_sums(
                (w0 - c - lam * delta1 / h * u)[None],
                u[None],
                one([h]),
                one([lam]),
                one([delta1]),
                one([p]),
                one([eta]),
                one([beta]),
                one([R]),
                N,
                kap,
                T=T,
            )[0][:, 0]

        assert _per_round(avg, t) == pytest.approx(E, rel=1e-11, abs=1e-15)
    # the closed form with the first moment squared as the variance's scale (the text's delta) misses
    wrong = M.two_point_sums(
        (w0 - c - lam * delta1 / h * u)[None],
        u[None],
        one([h]),
        one([lam]),
        one([delta1]),
        one([1 / 2]),
        one([eta]),
        one([beta]),
        one([R]),
        N,
        kap,
        T=np.array([t_max, t_max + 1.0]),
    )[0]
    assert abs((t_max + 1) * wrong[1, 0] - t_max * wrong[0, 0] - E) > 1e-3 * E


def test_finding_text_delta_minimal_instance_in_rationals():
    """N = 1, d = 1, L = a = 1, lam = 3, beta = R = 1, eta = eta_hat_2 = 1/2025, w_0 = argmin F = 1
    (Delta_F = 0); errors delta/p w.p. p (E|e| = delta): lim E|grad F(w_t)|^2 = lam^2 delta^2 (1 + (1/p - 1)/5399)."""
    F = Fraction
    L, lam, eta = F(1), F(3), F(1, 2025)
    assert eta == 1 / (75 * lam**3)
    h = lam * L / (lam + L)
    A = 1 - eta * h
    delta, p = F(1, 100), F(1, 10800)
    r = h**2 * eta**2 / (eta * h * (2 - eta * h))
    assert r == F(1, 5399)
    # exact recursions of the mean and variance of x_t = w_t - 1 (outer piece: x_{t+1} = A x_t + eta lam e)
    m, var, g2 = F(0), F(0), []
    for _ in range(6):
        m, var = A * m + eta * lam * delta, A**2 * var + (eta * lam) ** 2 * delta**2 * (1 / p - 1)
        g2.append(h**2 * (m**2 + var))
    assert g2[0] == h**2 * (eta * lam) ** 2 * delta**2 / p  # one step: E e^2 = delta^2/p
    lim = lam**2 * delta**2 * (1 + (1 / p - 1) * r)
    assert lim == F(9, 10000) * F(16198, 5399)  # 3.0002 lam^2 delta^2
    assert lim > 3 * lam**2 * delta**2 and lim <= lam**2 * delta**2 / p  # text's delta fails, Lemma 1's holds
    # the float closed form agrees, and the Cesaro average passes 3 lam^2 delta^2
    one = np.array
    kap = X.kappa(one([1 / 2025]), one([0.75]), one([1.0]), one([1]))
    avg, limit = M.two_point_sums(
        one([[-0.04]]),
        one([[1.0]]),
        one([0.75]),
        one([3.0]),
        one([0.01]),
        one([1 / 10800]),
        one([1 / 2025]),
        one([1.0]),
        one([1]),
        1,
        kap,
        T=np.array([1.0, 2.0, 2.0**40]),
    )
    assert limit[0] == pytest.approx(float(lim), rel=1e-12)
    assert avg[1, 0] == pytest.approx(float(g2[0]) / 2, rel=1e-9) and avg[2, 0] > 3 * 9e-4
    # (b) at the iterates: theta~ - w = -grad F(w)/lam + e, e independent of w_t with E e = delta:
    # E|theta~ - w_t|^2 = E|grad F|^2/9 - (2/3) delta E grad F(w_t) + delta^2/p -> delta^2 (1/p - 1) 5400/5399,
    # against the printed O(lam^2 delta^2 + sigma^2/lam^2 + delta^2) = O(10 delta^2) at Delta_F = 0, sigma = 0
    b_t = g2[-1] / lam**2 - 2 / lam * delta * h * m + delta**2 / p
    assert b_t > 0
    b_lim = lim / lam**2 - 2 / lam * delta * lam * delta + delta**2 / p
    assert b_lim == delta**2 * (1 / p - 1) * F(5400, 5399) and b_lim > 1000 * (lam**2 + 1) * delta**2
    assert b_lim <= 2 * lim / (lam**2 - 8 * L**2) + 2 * delta**2 / p  # Lemma 1's delta: the (b) reading holds
    # (b) at w = 1 (theta^ = w): E|theta~ - w|^2 = delta^2/p (p = 1/100: 100 delta^2) against O(delta^2)
    assert M.b_two_point(np.zeros((1, 1)), np.array([0.01]), np.array([0.01]))[0] == pytest.approx(
        1e-2, rel=1e-12
    )


def test_b_two_point_against_the_distribution():
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 2, (4, 5, 3))
    d1, p = rng.uniform(0.1, 1, 5), rng.uniform(0.01, 1, 5)
    direct = np.mean(p[:, None] * (x + (d1 / p)[:, None]) ** 2 + (1 - p[:, None]) * x**2, axis=-1)
    np.testing.assert_allclose(M.b_two_point(x, d1, p), direct, rtol=1e-13)


def _sampling_instance():
    L, a, lam = np.array([1.0]), np.array([1.0]), np.array([3.0])
    side = np.array([[[1.0, -1.0], [1.0, -1.0], [1.0, -1.0]]])
    c = np.array([[[0.05, 0.02], [-0.1, 0.0], [0.05, -0.02]]]) + side * 0.0
    s = c - side * a[0]
    return L, a, lam, side, c, s


@pytest.mark.parametrize("common", [True, False])
def test_sampling_with_errors_against_a_written_out_enumeration(common):
    """S of N = 3 clients, client i's inner solves off by delta u_i: all C(3, S)^t sequences in a plain loop
    over clients = sampling_delta_t, t <= 4; with one u for all clients the limit is exactly
    lam^2 delta^2 + the delta = 0 sampling floor (the terms add)."""
    L, a, lam, side, c, s = _sampling_instance()
    eta, beta, R = np.array([0.2]), np.array([1.2]), np.array([2])
    delta = 0.02
    rng = np.random.default_rng(1)
    u = rng.standard_normal((1, 3, 2))
    if common:
        u[:] = u[:, :1]
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    err = delta * u
    w0 = np.array([[0.03, -0.01]])
    h = X.h_outer(L, lam)
    kap = X.kappa(eta, h, beta, R)
    cp = c + lam[0] / h[0] * err
    lo, hi = np.minimum(cp.min(axis=1), w0), np.maximum(cp.max(axis=1), w0)
    assert X.outer_certified(lo, hi, s, a, L, lam, side)[0]
    for S in (1, 2):
        cf = M.sampling_delta_t(w0, c, err, h, lam, kap, X.c_S(3, S), 4)[:, 0]
        subsets = list(combinations(range(3), S))
        for t in range(5):
            E = 0.0
            for seq in product(subsets, repeat=t):
                w = w0[0].copy()
                for sub in seq:
                    locs = []
                    for i in range(3):
                        v = w.copy()
                        for _ in range(2):
                            th = W.prox_local(v[None, None], s[:, i : i + 1], a, L, lam)[0, 0] + err[0, i]
                            v = v - eta[0] * lam[0] * (v - th)
                        locs.append(v)
                    w = (1 - beta[0]) * w + beta[0] * np.mean([locs[i] for i in sub], axis=0)
                g = W.envelope(w[None], s, a, L, lam)[1].mean(axis=-2)[0]
                E += np.sum(g**2) / len(subsets) ** t
            assert cf[t] == pytest.approx(E, rel=1e-9, abs=1e-20)
        avg = M.sampling_delta_sums(w0, c, err, h, lam, kap, X.c_S(3, S), T=np.array([2.0**60]))[0, 0]
        V = np.mean(np.sum((c[0] - c[0].mean(axis=0)) ** 2, axis=-1))
        floor0 = X.sampling_sums(np.zeros(1), np.array([V]), h, kap, X.c_S(3, S))[1][0]
        if common:
            assert avg == pytest.approx((lam[0] * delta) ** 2 + floor0, rel=1e-9)
        else:
            assert avg != pytest.approx((lam[0] * delta) ** 2 + floor0, rel=1e-6)


def test_stochastic_inner_solution_against_scipy_and_lemma1():
    """argmin f(theta) + zeta theta + lam/2 (theta - w)^2 (1-d double well, scipy over each piece) =
    prox(w - zeta/lam); its error is -zeta/(lam + L) on the outer piece and within Lemma 1's
    E e^2 <= 2 gamma_D^2/(lam - L)^2 on the concave one (there |e| = |zeta|/(lam - L))."""
    L, a, lam = 1.0, 1.0, 3.0
    zs = np.zeros((1, 1, 1))
    for w, zeta in ((1.4, 0.05), (1.4, -0.05), (0.05, 0.1), (-0.02, -0.1), (-1.7, 0.3)):

        def obj(th, w=w, zeta=zeta):
            return (W.g(np.array(th), a, L) + zeta * th + lam / 2 * (th - w) ** 2).item()

        best = min(
            (
                so.minimize_scalar(obj, bounds=b, method="bounded", options={"xatol": 1e-12})
                for b in ((-6, -0.5), (-0.5, 0.5), (0.5, 6))
            ),
            key=lambda r: r.fun,
        ).x
        th = W.prox(np.array([[w - zeta / lam]]), zs, np.array([a]), np.array([L]), np.array([lam]))[0, 0, 0]
        assert th == pytest.approx(best, abs=1e-8)
        th0 = W.prox(np.array([[w]]), zs, np.array([a]), np.array([L]), np.array([lam]))[0, 0, 0]
        outer = min(abs(w - zeta / lam), abs(w)) >= a * (lam - L) / (2 * lam)
        if outer and np.sign(w) == np.sign(w - zeta / lam):
            assert th - th0 == pytest.approx(-zeta / (lam + L), rel=1e-12)
        assert (th - th0) ** 2 <= 2 * zeta**2 / (lam - L) ** 2
    # on the concave piece the error is zeta/(lam - L): the (lam + L) form of Lemma 1 would fail there
    th = W.prox(np.array([[0.0 - 0.1 / lam]]), zs, np.array([a]), np.array([L]), np.array([lam]))[0, 0, 0]
    assert abs(th) == pytest.approx(0.1 / (lam - L), rel=1e-12) and th**2 > 2 * 0.1**2 / (lam + L) ** 2


def test_stochastic_gradients_simulation_against_noise_sums():
    """pFedMe with the mini-batch inner solution prox(w - zeta/lam), zeta uniform on {+-gamma_D e_k} (fresh per
    client, step and round; seeded): the mean of |grad F(w_t)|^2 within its Hoeffding interval around
    noise_sums with E|e|^2 = gamma_D^2/(lam + L)^2; a zeta shared by the clients lies outside."""
    L, lam, a = 1.0, 3.0, 1.0
    Mc, t, N, d, alpha = 200000, 3, 3, 2, 1e-6
    h = lam * L / (lam + L)
    eta, beta, R = 0.4, 1.0, 2
    gD = 0.2
    rng = np.random.default_rng(4)
    side = np.array([1.0, -1.0])
    c = side * a
    w = np.broadcast_to(c + side * 0.1, (Mc, d)).copy()
    ar = np.full(Mc, a)
    for _ in range(t):
        v = np.broadcast_to(w[:, None], (Mc, N, d)).copy()
        for _ in range(R):
            k = rng.integers(0, d, (Mc, N))
            zeta = np.zeros((Mc, N, d))
            np.put_along_axis(zeta, k[..., None], (gD * rng.choice([-1.0, 1.0], (Mc, N)))[..., None], axis=-1)
            th = W.prox_local(v - zeta / lam, np.zeros((Mc, N, d)), ar, np.full(Mc, L), np.full(Mc, lam))
            v = v - eta * lam * (v - th)
        w = v.mean(axis=1)
    assert np.all(side * (w - c) > -0.5 + 1e-9)  # stayed on the outer pieces
    sample = np.sum((h * (w - c)) ** 2, axis=-1)
    one = np.array
    kap = X.kappa(one([eta]), one([h]), one([beta]), one([R]))

    def avg(T, scale=1.0):
        return X.noise_sums(
            one([d * 0.01]),
            one([h]),
            one([lam]),
            one([scale * gD / (lam + L)]),
            one([eta]),
            one([beta]),
            one([R]),
            N,
            kap,
            T=T,
        )[0][:, 0]

    exact = _per_round(avg, t)
    top = (h * (0.1 * np.sqrt(d) + t * R * eta * lam * gD / (lam + L))) ** 2
    assert sample.max() <= top
    half = top * np.sqrt(np.log(2 / alpha) / (2 * Mc))
    assert abs(sample.mean() - exact) <= half
    assert abs(_per_round(lambda T: avg(T, np.sqrt(N)), t) - exact) > 2 * half


def test_moment_parts_hold_and_their_mutants_are_rejected_by_them():
    (st,) = thm2.STATEMENTS
    rng = runner.rng_for(0, st.id, "quadratic")
    batch = st.instances("quadratic", None, rng)
    res = st.run("quadratic", None, rng, batch=batch, reading="fixed-η terms, drift, second-moment δ")
    found = {p.name: p for p in res.parts if p.name in M.PARTS_M}
    assert set(found) == set(M.PARTS_M)
    assert all(p.applicable >= 10 and p.holds for p in found.values())
    printed = {p.name: p for p in st.run("quadratic", None, rng, batch=batch, reading=None).parts}
    assert all(not printed[name].holds for name in M.PARTS_M[:2])  # the text's delta, as printed
    expect = {"the larger of the two terms": M.PARTS_M[3:4], "stochastic gradients ignored": M.PARTS_M[5:6]}
    for key, parts in expect.items():
        (m,) = [m for m in st.mutants if key in m.name]
        out = {p.name: p for p in st.run("quadratic", None, rng, mutant=m, batch=batch).parts}
        assert all(not out[name].holds for name in parts), key
