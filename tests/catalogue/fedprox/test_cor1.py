"""FedProx analysis, Corollary 1: rounds to an eps-solution read off the round matrix against
moreau.fl.fedprox run to the same eps; the statement on its family; every mutant rejected."""

import numpy as np

import moreau as mo
from moreau.analysis.fedprox import cor1
from moreau.analysis.fedprox.round_matrix import round_matrix
from moreau.fl import fedprox, fedprox_optimum


def test_rounds_to_eps_matches_fedprox_run_to_eps():
    batch = cor1.instances("quadratic", 2, np.random.default_rng(5))
    A, b, mu, L, e0 = (batch[k] for k in ("A", "b", "mu", "L", "e0"))
    lam = L * 0.3
    eta, gamma = cor1.CLAIM["eta"](lam, mu, L), cor1.CLAIM["gamma"](lam, mu, L)
    K = cor1.CLAIM["K"](lam, mu, L, gamma, eta)
    eps = (1e-3, 1e-8)
    T = np.stack([cor1.rounds_to_eps(round_matrix(A, lam, gamma, eta, K), e0, e) for e in eps], axis=-1)
    wg, wl = fedprox_optimum(mo.Quadratic(A, b), lam)
    d, m = A.shape[-1], A.shape[1]
    for i in range(2):  # each instance its own K: one fedprox call each
        s = slice(i, i + 1)
        h = fedprox(
            mo.Quadratic(A[s], b[s]),
            lam=lam[s],
            gamma=gamma[s],
            eta=eta[s],
            K=int(K[i]),
            rounds=int(T[i].max()) + 2,
            w0=wg[s] + e0[s, :d],
            local0=wl[s] + e0[s, d:].reshape(1, m, d),
        )
        worst = np.maximum(
            np.sum((h.w_global[:, 0] - wg[i]) ** 2, axis=-1),
            np.max(np.sum((h.w_local[:, 0] - wl[i]) ** 2, axis=-1), axis=-1),
        )
        for j, e in enumerate(eps):
            assert np.argmax(worst <= e) == T[i, j], (i, e, np.argmax(worst <= e), T[i, j])


def test_rounds_to_eps_reports_inf_when_not_reached():
    M = np.eye(3)[None] * 0.999
    assert np.isinf(cor1.rounds_to_eps(M, np.ones((1, 3)) / np.sqrt(3), (1e-12,), t_max=100)).all()


def test_atol_is_the_largest_slope_of_a_factor_two_band():
    # brute force over step-shaped log-ratios in [0, ln 2] on the grid: the LS slope never exceeds ATOL
    u = np.log(cor1.GRID)
    best = 0.0
    for k in range(1, u.size):
        v = np.where(np.arange(u.size) >= k, np.log(2), 0.0)
        best = max(best, np.polyfit(u, v, 1)[0])
    np.testing.assert_allclose(best, cor1.ATOL, rtol=1e-12)
