"""moreau.data.least_squares: ground truth, exact constants, seeds, the sufficient-statistic sampler.

Every claimed constant is recomputed from the materialised samples (numpy
eigvalsh of X^T X / n, row norms, noise-free refits) or by Monte Carlo with
fresh noise; statistical tests state their false-alarm probability (Bonferroni
over the tests in one function) and are seeded.
"""

from __future__ import annotations

import numpy as np
import pytest
from _tol import assert_close, host
from scipy import stats

import moreau as mo
import moreau.data as md

ALPHA = 1e-6  # false-alarm probability of each statistical test function below


def test_ground_truth_from_the_samples():
    pr = md.least_squares(3, m=5, n=8, d=4, R=0.7, mu=0.5, L=2.0, sigma=0.3, trials=(2, 3))
    X, Y = host(pr.objective.X), host(pr.objective.y)
    assert X.shape == (2, 3, 5, 8, 4) and pr.objective.batch_shape == (2, 3, 5)
    assert pr.w_star.shape == (2, 3, 5, 4) and pr.w_star_global.shape == (2, 3, 4)
    # Assumption 1 with equality, weighted mean zero
    off = pr.w_star - pr.w_star_global[..., None, :]
    assert_close(np.linalg.norm(off, axis=-1), np.full((2, 3, 5), 0.7))
    assert_close(np.einsum("m,...md->...d", pr.p, off), np.zeros((2, 3, 4)), scale=0.7)
    # X^T X / n has the prescribed spectrum: both ends attained
    ev = np.linalg.eigvalsh(np.swapaxes(X, -1, -2) @ X / 8)
    assert_close(ev, np.broadcast_to(np.linspace(0.5, 2.0, 4), ev.shape), scale=2.0)
    lo, hi = pr.objective.curvature_bounds()
    assert_close(lo, np.full(lo.shape, 0.5), scale=2.0)
    assert_close(hi, np.full(hi.shape, 2.0))
    # population minimiser: the noise-free fit on the design returns w_star
    clean = mo.LeastSquares(X, (X @ pr.w_star[..., None])[..., 0])
    assert_close(clean.minimizer(), pr.w_star, factor=10)  # condition number L/mu = 4
    # rho^2 = E ||x (x^T w* - y)||^2 = sigma^2 mean_j ||x_j||^2 (noise averaged analytically)
    rho2 = 0.3**2 * np.mean(np.sum(X**2, axis=-1), axis=-1)
    assert_close(rho2, np.full(rho2.shape, pr.constants["rho2"]))
    assert pr.constants["rho2"] == pytest.approx(0.09 * 4 * 1.25, rel=1e-14)
    # the noise has the stated level: residuals at w_star
    resid = Y - (X @ pr.w_star[..., None])[..., 0]
    assert abs(np.std(resid) / 0.3 - 1) < 0.3


def test_rho2_by_monte_carlo():
    """Fresh samples z = (row uniform, fresh noise): mean of ||grad l(w*, z)||^2 vs rho2 (CLT, 5 sigma)."""
    pr = md.least_squares(4, m=2, n=6, d=3, R=1.0, mu=1.0, L=3.0, sigma=0.5)
    X = host(pr.objective.X)
    rng = np.random.default_rng(0)
    K = 200_000
    rows = rng.integers(0, 6, size=(2, K))
    x = np.take_along_axis(X, rows[..., None], axis=-2)
    y = (x @ pr.w_star[..., None])[..., 0] + 0.5 * rng.standard_normal((2, K))
    g2 = np.sum((x * ((x @ pr.w_star[..., None])[..., 0] - y)[..., None]) ** 2, axis=-1)
    se = g2.std(axis=-1) / np.sqrt(K)
    assert np.all(np.abs(g2.mean(axis=-1) - pr.constants["rho2"]) < 5 * se)  # 5 sigma: 6e-7 two-sided


@pytest.mark.parametrize("n", [7, 2])
def test_sampler_reproduces_the_full_data_statistics(n):
    """b = X^T Y / n and c = |Y|^2 / 2n with g = Q^T eps / sigma: the sampler's formula, exactly."""
    pr = md.least_squares(5, m=3, n=n, d=2, R=0.4, L=2.5, sigma=0.8)
    X, Y = host(pr.objective.X), host(pr.objective.y)
    eps = Y - (X @ pr.w_star[..., None])[..., 0]
    A = np.swapaxes(X, -1, -2) @ X / n
    ev, V = np.linalg.eigh(A)
    root = (V * np.sqrt(ev)[..., None, :]) @ np.swapaxes(V, -1, -2)
    Q = X @ np.linalg.inv(root) / np.sqrt(n)
    assert_close(np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(np.eye(2), (3, 2, 2)), factor=10)
    g = (np.swapaxes(Q, -1, -2) @ eps[..., None])[..., 0] / 0.8
    perp = eps - (Q @ (0.8 * g)[..., None])[..., 0]
    b = (A @ pr.w_star[..., None])[..., 0] + 0.8 / np.sqrt(n) * (root @ g[..., None])[..., 0]
    mean_y = np.sqrt(n) * (root @ pr.w_star[..., None])[..., 0]
    c = (np.sum((mean_y + 0.8 * g) ** 2, -1) + np.sum(perp**2, -1)) / (2 * n)
    assert_close(pr.objective.b, b, factor=10)
    assert_close(pr.objective.c, c, factor=10)


def _whiten(A, Aw, b, sigma, n):
    ev, V = np.linalg.eigh(A)
    inv_root = (V / np.sqrt(ev)[..., None, :]) @ np.swapaxes(V, -1, -2)
    return np.sqrt(n) / sigma * (inv_root @ (b - Aw)[..., None])[..., 0]


def _chi2_two_sided(stat, dof, level):
    lo, hi = stats.chi2.ppf(level / 2, dof), stats.chi2.isf(level / 2, dof)
    return np.all((stat >= lo) & (stat <= hi))


def test_sampler_law_matches_the_full_data_path():
    """Both paths against the exact law: whitened b ~ N(0, I) (mean: chi2 of K |mean|^2; covariance:
    K v^T S v ~ chi2_K for v = e_j and (e_j +- e_k)/sqrt 2, which fix every entry), and
    2n c / sigma^2 ~ noncentral chi2_n (Kolmogorov-Smirnov).  Bonferroni over all tests: ALPHA."""
    n, sigma = 6, 0.7
    pr = md.least_squares(6, m=2, n=n, d=2, R=0.5, L=2.0, sigma=sigma)
    X = host(pr.objective.X)
    A = np.swapaxes(X, -1, -2) @ X / n
    Aw = (A @ pr.w_star[..., None])[..., 0]
    rng = np.random.default_rng(1)
    K = 20_000
    Y = (X @ pr.w_star[..., None])[..., 0] + sigma * rng.standard_normal((K, 2, n))  # full data, fresh noise
    full_b = (np.swapaxes(X, -1, -2) @ Y[..., None])[..., 0] / n
    full_c = np.sum(Y**2, axis=-1) / (2 * n)
    A_s, samp_b, samp_c = pr.resample(rng, K, raw=True)
    assert_close(A_s[0], A, factor=10)
    D = 4
    dirs = [np.eye(D)[j] for j in range(D)]
    dirs += [
        (np.eye(D)[j] + s * np.eye(D)[k]) / np.sqrt(2)
        for j in range(D)
        for k in range(j + 1, D)
        for s in (1, -1)
    ]
    n_tests = 2 * (1 + len(dirs) + 2)
    level = ALPHA / n_tests
    nc = np.sum((X @ pr.w_star[..., None])[..., 0] ** 2, axis=-1) / sigma**2
    for b, c in ((full_b, full_c), (samp_b, samp_c)):
        z = _whiten(A, Aw, b, sigma, n).reshape(K, D)
        assert _chi2_two_sided(K * np.sum(z.mean(0) ** 2), D, level)
        for v in dirs:
            assert _chi2_two_sided(np.sum((z @ v) ** 2), K, level)
        for i in range(2):
            assert stats.kstest(2 * n * c[:, i] / sigma**2, stats.ncx2(n, nc[i]).cdf).pvalue > level


def test_empirical_gradient_variance_is_rho2_over_n():
    """E ||grad L_i(w*, S_i)||^2 = rho^2 / n (what Theorem 1 uses), by the sampler (CLT, 5 sigma)."""
    pr = md.least_squares(7, m=3, n=10, d=3, R=0.2, L=4.0, sigma=1.5)
    q = pr.resample(2, 100_000)
    g2 = np.sum(host(q.grad(pr.w_star)) ** 2, axis=-1)
    target = pr.constants["rho2"] / 10
    assert np.all(np.abs(g2.mean(0) - target) < 5 * g2.std(0) / np.sqrt(100_000))


def test_seeds_and_trials():
    kw = dict(m=3, n=4, d=2, R=0.5, L=2.0)
    a, b = md.least_squares(11, **kw), md.least_squares(11, **kw)
    assert np.array_equal(host(a.objective.X), host(b.objective.X)) and np.array_equal(a.w_star, b.w_star)
    c = md.least_squares(12, **kw)
    assert not np.allclose(a.w_star, c.w_star)
    batched = md.least_squares(11, trials=(2, 3), **kw)
    for k, g in enumerate(md.trial_rngs(11, (2, 3))):
        one = md.least_squares(g, **kw)
        i, j = divmod(k, 3)
        assert np.array_equal(host(batched.objective.y)[i, j], host(one.objective.y))
        assert np.array_equal(batched.w_star[i, j], one.w_star)
    assert batched.params["rng"] == 11 and batched.params["trials"] == (2, 3)
    gen = md.least_squares(np.random.default_rng(5), trials=2, **kw)
    assert gen.w_star.shape == (2, 3, 2) and "entropy" in gen.params["rng"]


@pytest.mark.parametrize("p, d", [(None, 1), (None, 3), ([0.6, 0.1, 0.3], 3), ([0.5, 0.3, 0.2], 2)])
def test_unequal_norms(p, d):
    m = 3
    pr = md.least_squares(8, m=m, n=4, d=d, R=2.0, p=p, equal_norms=False, trials=4)
    off = np.linalg.norm(pr.w_star - pr.w_star_global[..., None, :], axis=-1) / 2.0
    assert np.all(off <= 1 + 1e-15) and np.allclose(off.max(-1), 1, rtol=0, atol=1e-15)
    assert_close(
        np.einsum("m,...md->...d", pr.p, pr.w_star - pr.w_star_global[..., None, :]),
        np.zeros((4, d)),
        scale=2.0,
    )


@pytest.mark.parametrize("p, d", [(None, 1), ([0.25, 0.25, 0.1, 0.4], 1), ([0.3, 0.2, 0.5], 1)])
def test_equal_norms_in_one_dimension(p, d):
    m = 4 if p is None else len(p)
    pr = md.least_squares(10, m=m, n=2, d=d, R=1.5, p=p, trials=6)
    off = (pr.w_star - pr.w_star_global[..., None, :])[..., 0] / 1.5
    assert_close(np.abs(off), np.ones((6, m)))
    assert_close(off @ pr.p, np.zeros(6), scale=1.0)
    assert len({tuple(np.sign(o)) for o in off}) > 1  # the sign pattern is drawn per trial


@pytest.mark.parametrize(
    "p, m",
    [(None, 2), (None, 7), ([0.5, 0.25, 0.25], 3), ([0.45, 0.05, 0.2, 0.3], 4), ([0.499, 0.001, 0.5], 3)],
)
def test_equal_norm_polygons(p, m):
    pr = md.least_squares(9, m=m, n=3, d=3, R=1.0, p=p, trials=5)
    off = pr.w_star - pr.w_star_global[..., None, :]
    assert_close(np.linalg.norm(off, axis=-1), np.ones((5, m)))
    assert_close(np.einsum("m,...md->...d", pr.p, off), np.zeros((5, 3)), scale=1.0)


BAD = [
    ("m1", dict(m=1), ValueError, "m must be >= 2"),
    ("m_float", dict(m=2.0), TypeError, "m must be an int"),
    ("n_lt_d", dict(n=2, d=3), ValueError, "n must be >= d"),
    ("R_neg", dict(R=-0.1), ValueError, "R must be >= 0"),
    ("R_nan", dict(R=float("nan")), ValueError, "R must be finite"),
    ("sigma0", dict(sigma=0.0), ValueError, "sigma must be > 0"),
    ("mu_neg", dict(mu=-1.0), ValueError, "mu must be > 0"),
    ("L_lt_mu", dict(L=0.5), ValueError, "L must be >= 1"),
    ("d1_L", dict(d=1, L=2.0), ValueError, "single eigenvalue"),
    ("trials_neg", dict(trials=-1), ValueError, "trials must hold positive ints"),
    ("trials_str", dict(trials="3"), TypeError, "trials must be"),
    ("p_sum", dict(p=[0.5, 0.6]), ValueError, "p must sum to 1"),
    ("p_shape", dict(p=[1.0]), ValueError, "p must have shape"),
    ("d1_odd", dict(d=1, m=3), ValueError, "odd m = 3 .*equal_norms=False"),
    ("d1_no_partition", dict(d=1, m=3, p=[0.45, 0.35, 0.2]), ValueError, "no signs .*equal_norms=False"),
    ("p_big", dict(m=3, p=[0.7, 0.2, 0.1]), ValueError, r"max p_i <= 1/2 .*equal_norms=False"),
    ("w_global", dict(w_global=np.ones(5)), ValueError, "w_global must be finite with shape"),
    ("rng", dict(rng=1.5), TypeError, "rng must be"),
]


@pytest.mark.parametrize("kw, err, match", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments(kw, err, match):
    args = dict(rng=0, m=2, n=4, d=2, R=1.0)
    args.update(kw)
    with pytest.raises(err, match=match):
        md.least_squares(args.pop("rng"), **args)


def test_resample_unavailable_elsewhere():
    pr = md.least_squares(0, m=2, n=2, d=2, R=1.0)
    bare = md.FederatedProblem(pr.objective, pr.w_star, pr.w_star_global, pr.p, {}, {}, {"generator": "x"})
    with pytest.raises(TypeError, match="only fixed-design least squares"):
        bare.resample(0)
    with pytest.raises(ValueError, match="size must hold positive ints"):
        pr.resample(0, -2)
