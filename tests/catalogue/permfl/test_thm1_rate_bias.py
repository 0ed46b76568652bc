"""permfl.thm1's rate of the run and its fixed point's bias (issue 29), on instances written here.

The composed factor 1 − β(1 − ρ̃_team^K)μ̃_G against ``moreau.fl.permfl`` itself: with one device
(d = 1) the run's error contracts by exactly that factor per round (the bound attained), computed
here with Fractions from the scalar steps; on non-aligned d = 3 instances it bounds ρ(P) strictly.
The reweighted fixed point against a long run of ``moreau.fl.permfl`` and a hand formula (one team of
two scalar devices: x̄ = Σ_j(1 − δ_j^L)b_j/(a_j + λ) / Σ_j(1 − δ_j^L)a_j/(a_j + λ), not x*)."""

from fractions import Fraction as Fr

import numpy as np

import moreau as mo
from moreau.analysis.permfl import thm1
from moreau.analysis.permfl.round_map import (
    fixed_point,
    levels,
    reweighted_fixed_point,
    run_map,
    spectral_radius,
)
from moreau.fl import permfl, permfl_optimum


def _bound(alpha, eta, beta, mu, lam, gamma, K, L):
    c = thm1.CLAIM
    mu_ft = c["mu_F_run"](alpha, mu, lam, L, c["mu_F"](mu, lam))
    return c["run_rate"](beta, eta, gamma, K, mu_ft)


def test_one_scalar_device_contracts_at_exactly_the_composed_factor():
    a, b, lam, gam = Fr(3, 2), Fr(1), Fr(2), Fr(5)
    alpha, eta, beta = Fr(1, 5), Fr(1, 10), Fr(1, 7)  # within 1/(L + lam) = 2/7, 1/(lam + gamma), 1/gamma
    K, L = 3, 2

    def round_(x):  # one PerMFL round, scalar, exact (the steps of round_map's docstring)
        w = x
        for _ in range(K):
            th = w
            for _ in range(L):
                th = th - alpha * (a * th - b + lam * (th - w))
            w = w - eta * (lam * (w - th) + gam * (w - x))
        return x - beta * gam * (x - w)

    x0, x1, x2 = Fr(0), round_(Fr(0)), round_(round_(Fr(0)))
    factor = (x2 - x1) / (x1 - x0)  # affine scalar map: its slope
    expected = _bound(*(float(v) for v in (alpha, eta, beta, a, lam, gam)), K, L)
    assert abs(float(factor) - expected) <= 1e-15
    h = permfl(
        mo.Quadratic(np.array([[[float(a)]]]), np.array([[float(b)]])),
        np.array([0]),
        lam=float(lam),
        gamma=float(gam),
        alpha=float(alpha),
        eta=float(eta),
        beta=float(beta),
        K=K,
        L=L,
        rounds=2,
        x0=np.zeros(1),
    )
    w = np.asarray(h.w_global)[:, 0]
    assert abs((w[2] - w[1]) / (w[1] - w[0]) - expected) <= 1e-12
    assert abs(w[1] - float(x1)) <= 1e-15 and expected < 1


def test_the_composed_factor_bounds_rho_on_unaligned_instances():
    rng = np.random.default_rng(41)
    T, teams, d = 40, np.array([0, 0, 1, 1, 1]), 3
    Q, _ = np.linalg.qr(rng.standard_normal((T, 5, d, d)))
    eig = rng.uniform(0.3, 4.0, (T, 5, d))
    A = (Q * eig[..., None, :]) @ np.swapaxes(Q, -1, -2)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    mu, Lc = eig.min(axis=(1, 2)), eig.max(axis=(1, 2))
    lam, gam = rng.uniform(0.2, 5, T), rng.uniform(0.2, 5, T)
    u = rng.uniform(0.1, 1.0, (3, T))
    alpha, eta, beta = u[0] / (Lc + lam), u[1] / (lam + gam), u[2] / gam
    K, L = rng.integers(1, 6, T), rng.integers(1, 6, T)
    P, _ = run_map(A, rng.standard_normal((T, 5, d)), teams, lam, gam, alpha, eta, beta, K, L)
    rho, bound = spectral_radius(P), _bound(alpha, eta, beta, mu, lam, gam, K, L)
    assert np.all(rho <= bound * (1 + 1e-12)) and np.all(bound < 1)
    assert np.median((1 - bound) / (1 - rho)) < 0.9  # strict away from alignment: the check has slack to lose


def test_the_run_goes_to_the_reweighted_point_not_to_x_star():
    a, b = np.array([0.5, 3.0]), np.array([1.0, -2.0])  # one team of two scalar devices
    lam, gam, alpha, eta, beta, K, L = 1.0, 2.0, 0.25, 0.3, 0.5, 2, 1
    delta_L = (1 - alpha * (a + lam)) ** L
    x_hand = np.sum((1 - delta_L) * b / (a + lam)) / np.sum((1 - delta_L) * a / (a + lam))
    A3, b3 = a.reshape(1, 2, 1, 1), b.reshape(1, 2, 1)
    x_rw = reweighted_fixed_point(
        A3,
        b3,
        np.array([0, 0]),
        *(np.array([v]) for v in (lam, gam, alpha, eta)),
        np.array([K]),
        np.array([L]),
    )
    P, q = run_map(
        A3,
        b3,
        np.array([0, 0]),
        *(np.array([v]) for v in (lam, gam, alpha, eta, beta)),
        np.array([K]),
        np.array([L]),
    )
    h = permfl(
        mo.Quadratic(A3, b3),
        np.array([0, 0]),
        lam=lam,
        gamma=gam,
        alpha=alpha,
        eta=eta,
        beta=beta,
        K=K,
        L=L,
        rounds=400,
        x0=np.zeros((1, 1)),
    )
    x_star = float(np.asarray(permfl_optimum(mo.Quadratic(A3, b3), np.array([0, 0]), lam, gam)[0])[0, 0])
    assert abs(x_rw[0, 0] - x_hand) <= 1e-14 and abs(fixed_point(P, q)[0, 0] - x_hand) <= 1e-13
    assert abs(float(np.asarray(h.w_global)[-1, 0, 0]) - x_hand) <= 1e-12  # spectral radius < 0.9: 400 rounds
    assert abs(x_hand - x_star) > 0.05  # biased: (4.3)'s optimum is elsewhere
    big = reweighted_fixed_point(
        A3,
        b3,
        np.array([0, 0]),
        *(np.array([v]) for v in (lam, gam, alpha, eta)),
        np.array([300]),
        np.array([300]),
    )
    assert (
        abs(big[0, 0] - levels(A3, b3, np.array([0, 0]), np.array([lam]), np.array([gam]))["x"][0, 0])
        <= 1e-10
    )
