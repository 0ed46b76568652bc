"""pFedMe, Theorem 1 with client sampling (S < N): the exact moments of the random affine round
against all C(N, S)^T sampling sequences through a plain loop, the stationary sampling part against
the moments at large T, its closed form where the curvatures agree, sigma_F1 against moreau.prox,
and bad S."""

from itertools import combinations, product

import numpy as np
import pytest

import moreau as mo
from moreau.analysis.engine.instances import orthogonal
from moreau.analysis.pfedme.thm1.client_sampling import moments, sampling_part, sigma_F1
from moreau.analysis.pfedme.thm1.text_delta import average_factor
from moreau.fl import fedprox_optimum


def _clients(rng, T, N, d, same_curvature=False):
    a = rng.uniform(0.3, 3.0, (T, N, d))
    U = orthogonal(rng, T * N, d).reshape(T, N, d, d)
    if same_curvature:
        a[:], U[:] = a[:, :1], U[:, :1]
    A = (U * a[..., None, :]) @ np.swapaxes(U, -1, -2)
    return (A + np.swapaxes(A, -1, -2)) / 2, rng.standard_normal((T, N, d)) * 2


def _mu_F(A, lam):
    mu = np.linalg.eigvalsh(A)[..., 0].min(axis=-1)
    return lam * mu / (lam + mu)


@pytest.mark.parametrize("S, R", [(1, 1), (2, 2), (1, 3)])
def test_moments_equal_every_sampling_sequence_through_a_plain_loop(S, R):
    rng = np.random.default_rng(S + 10 * R)
    A, b = _clients(rng, 2, 3, 2)
    lam, eta, beta = np.array([0.7, 2.5]), np.array([0.2, 0.1]), np.array([1.0, 1.7])
    mu_F = _mu_F(A, lam)
    w0 = rng.standard_normal((2, 2))
    Tr = 3
    K = moments(A, b, lam, eta, beta, R, S, mu_F, w0, Tr)
    subsets = list(combinations(range(3), S))
    for k in range(2):
        rho = 1 - eta[k] * mu_F[k] / 2
        EY = np.zeros((5, 5))
        for seq in product(subsets, repeat=Tr):
            w, ws = w0[k], []
            for sub in seq:  # Algorithm 1 written out: prox by a linear solve, S sampled clients
                ws.append(w)
                locs = []
                for i in sub:
                    v = w.copy()
                    for _ in range(R):
                        v = v - eta[k] * lam[k] * (
                            v - np.linalg.solve(A[k, i] + lam[k] * np.eye(2), b[k, i] + lam[k] * v)
                        )
                    locs.append(v)
                w = (1 - beta[k]) * w + beta[k] * np.mean(locs, axis=0)
            wts = rho ** -(np.arange(Tr) + 1.0)
            Y = np.concatenate([w, np.sum(wts[:, None] * np.array(ws), axis=0) / wts.sum(), [1.0]])
            EY += np.outer(Y, Y) / len(subsets) ** Tr
        np.testing.assert_allclose(K[k], EY, rtol=1e-10, atol=1e-12)


def _gap(K, A, b, lam):
    """E[F(w_bar_T) - F*] from E[Y Y^T] with F by moreau.envelope's Hessian-free form: F quadratic, so
    E F(w_bar) = F(E w_bar) + (1/2) tr(H Cov w_bar), H by a finite difference of the envelope's gradient."""
    d = b.shape[-1]
    q = mo.Quadratic(A, b)
    env = mo.envelope(q, lam[:, None])
    w_star = fedprox_optimum(q, lam)[0]
    grad = lambda w: np.mean(env.grad(np.broadcast_to(w[:, None], b.shape)), axis=1)  # noqa: E731
    H = np.stack([grad(w_star + e) - grad(w_star) for e in np.eye(d)], axis=-1)  # exact: F quadratic
    m = K[:, d : 2 * d, -1]
    cov = K[:, d : 2 * d, d : 2 * d] - np.einsum("ti,tj->tij", m, m)
    F = lambda w: np.mean(env.value(np.broadcast_to(w[:, None], b.shape)), axis=1)  # noqa: E731
    return F(m) - F(w_star) + 0.5 * np.einsum("tij,tji->t", H, cov)


@pytest.mark.parametrize("R, same", [(1, False), (3, False), (2, True)])
def test_stationary_sampling_part_equals_the_moments_at_large_T(R, same):
    rng = np.random.default_rng(R + same)
    A, b = _clients(rng, 3, 4, 2, same)
    lam, eta, beta = np.array([0.7, 2.5, 1.0]), np.array([0.3, 0.1, 0.2]), np.array([1.0, 1.7, 3.0])
    mu_F = _mu_F(A, lam)
    T = int(60 / np.min(eta * mu_F / 2))
    w0 = rng.standard_normal((3, 2))
    full = _gap(moments(A, b, lam, eta, beta, R, 4, mu_F, w0, T), A, b, lam)
    for S in (1, 2, 3):
        diff = _gap(moments(A, b, lam, eta, beta, R, S, mu_F, w0, T), A, b, lam) - full
        np.testing.assert_allclose(sampling_part(A, b, lam, eta, beta, R, S, mu_F), diff, rtol=1e-6)


def test_same_curvature_R_1_closed_form_proportional_to_c_S():
    # A_i = A: w' = Q w + q_S with Q = I - beta eta H deterministic; Cov q_S = beta^2 eta^2 c_S Cov(grad F_i(w*));
    # in d = 1: V = (h/2) g beta^2 eta^2 c_S sigma^2/(1 - Q^2)
    rng = np.random.default_rng(5)
    N = 5
    A, b = _clients(rng, 3, N, 1, same_curvature=True)
    lam, eta, beta = np.array([0.7, 2.5, 1.0]), np.array([0.3, 0.1, 0.02]), np.array([1.0, 1.7, 3.0])
    mu_F = _mu_F(A, lam)
    h = mu_F  # d = 1, one curvature: h = mu_F
    w_star = fedprox_optimum(mo.Quadratic(A, b), lam)[0]
    s2 = sigma_F1(A, b, lam, w_star)
    kap = beta * eta * h
    g = average_factor(eta * mu_F / 2, kap)
    for S in range(1, N):
        cS = (N - S) / (S * (N - 1))
        expected = h / 2 * g * beta**2 * eta**2 * cS * s2 / (1 - (1 - kap) ** 2)
        np.testing.assert_allclose(sampling_part(A, b, lam, eta, beta, 1, S, mu_F), expected, rtol=1e-10)


def test_sigma_F1_equals_lam_times_w_minus_prox():
    rng = np.random.default_rng(6)
    A, b = _clients(rng, 3, 4, 2)
    lam = np.array([0.7, 2.5, 1.0])
    w_star = fedprox_optimum(mo.Quadratic(A, b), lam)[0]
    w = np.broadcast_to(w_star[:, None], b.shape)
    g = lam[:, None, None] * (w - mo.prox(mo.Quadratic(A, b), w, lam[:, None]))
    np.testing.assert_allclose(
        sigma_F1(A, b, lam, w_star), np.mean(np.sum(g**2, axis=-1), axis=-1), rtol=1e-10
    )
    assert np.all(sigma_F1(A, b, lam, w_star) > 0)


def test_bad_S_is_a_value_error():
    A, b = _clients(np.random.default_rng(0), 1, 3, 2)
    for S in (0, 4):
        with pytest.raises(ValueError, match="S must satisfy 1 <= S <= N = 3"):
            sampling_part(A, b, np.ones(1), np.full(1, 0.1), np.ones(1), 1, S, np.full(1, 0.2))
