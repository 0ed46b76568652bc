"""moreau.data.logistic: the quadratures, the population minimiser, rho^2, seeds, bad input.

Independent voices: mpmath quad of the *unsimplified* integrands over the
whole real line, and Monte Carlo with 1e6 samples drawn here (not by the
generator) with 5-sigma intervals (two-sided false alarm 6e-7 each).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from _tol import assert_close, host

import moreau.data as md
from moreau.data import _quadrature as quad


def _sig(z):
    return 1 / (1 + np.exp(-z))


def _mp_expect(fun):
    """E_s fun(s) for s ~ N(0, 1), mpmath to 30 digits."""
    with mp.workdps(30):
        return float(
            mp.quad(lambda s: mp.npdf(s) * fun(s), [-mp.inf, -1, -1e-3, -1e-6, 0, 1e-6, 1e-3, 1, mp.inf])
        )


@pytest.mark.parametrize(
    "r, t, d", [(0.3, 0.5, 1), (1.0, 2.5, 3), (0.05, 40.0, 5), (2.0, 2.0, 2), (0.5, 1e6, 2)]
)
def test_quadratures_vs_mpmath(r, t, d):
    s_ = lambda z: 1 / (1 + mp.exp(-z))  # noqa: E731
    # E[y s sigma(-y r s)] with y | s = +1 w.p. sigma(t s): unsimplified, over the real line
    moment = _mp_expect(lambda s: s * (s_(t * s) * s_(-r * s) - s_(-t * s) * s_(r * s)))
    assert quad.g(t) - quad.g(r) == pytest.approx(moment, rel=1e-13, abs=1e-16)
    sq = _mp_expect(lambda s: (s**2 + d - 1) * (s_(t * s) * s_(-r * s) ** 2 + s_(-t * s) * s_(r * s) ** 2))
    assert float(quad.score_moment(r, t, d - 1)) == pytest.approx(sq, rel=1e-13)
    gp = _mp_expect(lambda s: s**2 * s_(t * s) * s_(-t * s))
    assert float(quad.g_prime(t)) == pytest.approx(gp, rel=1e-13)


def test_g_limits_and_inverse():
    assert quad.g(0.0) == 0.0
    assert quad.g(1e7) == pytest.approx(1 / np.sqrt(2 * np.pi), rel=1e-12)
    targets = np.array([1e-6, 0.1, 0.3, 0.398])
    t, ok = quad.solve_t(targets)
    assert ok.all()
    assert_close(quad.g(t), targets)
    assert not quad.solve_t(np.array([0.4]))[1][0]


def _mc_gradient(beta, w, mu, K, rng):
    """Per-sample gradients of the regularised loss at w, population drawn here."""
    d = beta.shape[-1]
    x = rng.standard_normal((K, d))
    y = np.where(rng.random(K) < _sig(x @ beta), 1.0, -1.0)
    return (-y * _sig(-y * (x @ w)))[:, None] * x + mu * w


def test_population_minimiser_and_rho2_by_monte_carlo():
    pr = md.logistic(1, m=3, n=5, d=3, R=0.6, mu=0.08)
    beta = pr.constants["beta"]
    rng = np.random.default_rng(2)
    K = 1_000_000
    for i in range(3):
        G = _mc_gradient(beta[i], pr.w_star[i], 0.08, K, rng)
        se = G.std(axis=0) / np.sqrt(K)
        assert np.all(np.abs(G.mean(axis=0)) < 5 * se)  # the population gradient vanishes at w_star
        g2 = np.sum(G**2, axis=1)
        assert abs(g2.mean() - pr.constants["rho2_clients"][i]) < 5 * g2.std() / np.sqrt(K)


def test_population_gradient_vanishes_by_mpmath():
    pr = md.logistic(3, m=2, n=3, d=2, R=0.4, mu=0.2)
    s_ = lambda z: 1 / (1 + mp.exp(-z))  # noqa: E731
    for i in range(2):
        r = float(np.linalg.norm(pr.w_star[i]))
        t = float(np.linalg.norm(pr.constants["beta"][i]))
        moment = _mp_expect(lambda s, t=t, r=r: s * (s_(t * s) * s_(-r * s) - s_(-t * s) * s_(r * s)))
        assert abs(moment - 0.2 * r) < 1e-14


def test_generated_labels_are_well_specified():
    """The generator's own samples: the empirical gradient at w_star is mean-zero noise of size rho/sqrt n."""
    n = 400_000
    pr = md.logistic(4, m=2, n=n, d=2, R=0.5, mu=0.1)
    obj = pr.objective
    g = host(obj.grad(pr.w_star))
    assert np.all(np.linalg.norm(g, axis=-1) < 5 * np.sqrt(pr.constants["rho2_clients"] / n))


def test_mu_zero_is_the_label_model_and_constants():
    pr = md.logistic(5, m=4, n=20, d=3, R=0.3, mu=0.0, trials=2)
    assert_close(pr.constants["beta"], pr.w_star)
    X = host(pr.objective.X)
    L = np.linalg.eigvalsh(np.swapaxes(X, -1, -2) @ X / 20)[..., -1] / 4
    assert_close(pr.constants["L"], L)
    assert np.all(pr.constants["rho2"] == pr.constants["rho2_clients"].max(-1))
    off = pr.w_star - pr.w_star_global[..., None, :]
    assert_close(np.linalg.norm(off, axis=-1), np.full((2, 4), 0.3))
    assert_close(np.linalg.norm(pr.w_star_global, axis=-1), np.full(2, 0.5))  # global_norm default


def test_seeds_and_trials():
    kw = dict(m=2, n=6, d=2, R=0.5, mu=0.1)
    a, b, c = md.logistic(7, **kw), md.logistic(7, **kw), md.logistic(8, **kw)
    assert np.array_equal(host(a.objective.y), host(b.objective.y)) and np.array_equal(a.w_star, b.w_star)
    assert not np.allclose(a.w_star, c.w_star)
    batched = md.logistic(7, trials=3, **kw)
    for k, g in enumerate(md.trial_rngs(7, 3)):
        one = md.logistic(g, **kw)
        assert np.array_equal(host(batched.objective.X)[k], host(one.objective.X))
        assert np.array_equal(host(batched.objective.y)[k], host(one.objective.y))


BAD = [
    ("unreachable", dict(R=3.0, mu=0.5), ValueError, r"population minimiser .* lower mu, R or global_norm"),
    ("mu_neg", dict(mu=-0.1), ValueError, "mu must be >= 0"),
    ("m1", dict(m=1), ValueError, "m must be >= 2"),
    ("R_neg", dict(R=-1.0), ValueError, "R must be >= 0"),
    ("trials0", dict(trials=(2, 0)), ValueError, "trials must hold positive ints"),
    ("norm_neg", dict(global_norm=-1.0), ValueError, "global_norm must be >= 0"),
]


@pytest.mark.parametrize("kw, err, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments(kw, err, match):
    args = dict(m=2, n=4, d=2, R=0.5, mu=0.1)
    args.update(kw)
    with pytest.raises(err, match=match):
        md.logistic(0, **args)
