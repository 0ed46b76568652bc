"""moreau.data.fedprox_synthetic and synthetic: the recipes recomputed from the returned samples."""

from __future__ import annotations

import numpy as np
import pytest
from _tol import assert_close, host
from scipy import stats

import moreau as mo
import moreau.data as md


def test_fedprox_synthetic_recipe():
    pr = md.fedprox_synthetic(0, R=2.0, trials=2, n_test=30)
    X, y = host(pr.objective.X), host(pr.objective.y)
    assert X.shape == (2, 10, 200, 60) and isinstance(pr.objective, mo.Logistic)
    assert pr.w_star.shape == (2, 10, 60) and pr.test.batch_shape == (2, 10)
    # labels: argmax of (sigma(-w^T x), sigma(w^T x)) = sign of the margin
    assert np.array_equal(y, np.where((X @ pr.w_star[..., None])[..., 0] > 0, 1.0, -1.0))
    yt = host(pr.test.y)
    assert np.array_equal(yt, np.where((host(pr.test.X) @ pr.w_star[..., None])[..., 0] > 0, 1.0, -1.0))
    # realised heterogeneity and the global truth
    wg = pr.w_star.mean(axis=-2)
    assert_close(pr.w_star_global, wg)
    assert_close(pr.constants["R"], np.linalg.norm(pr.w_star - wg[..., None, :], axis=-1).max(-1))
    # w_k entries have variance R = 2 (chi2 two-sided, false alarm 1e-6)
    ss = np.sum(pr.w_star**2) / 2.0
    k = pr.w_star.size
    assert stats.chi2.ppf(5e-7, k) < ss < stats.chi2.isf(5e-7, k)
    # within a client the features have covariance diag(j^-1.2): chi2 per coordinate (Bonferroni 1e-6)
    Xc = X - X.mean(axis=-2, keepdims=True)
    var = np.sum(Xc**2, axis=-2) / np.arange(1, 61) ** -1.2  # ~ chi2_{199} each
    assert np.all((var > stats.chi2.ppf(5e-7 / var.size, 199)) & (var < stats.chi2.isf(5e-7 / var.size, 199)))
    assert_close(pr.constants["L"], np.linalg.eigvalsh(np.swapaxes(X, -1, -2) @ X / 200)[..., -1] / 4 + 0.01)


def test_fedprox_synthetic_seeds():
    a, b = md.fedprox_synthetic(3, R=1.0, m=3, n=5, d=4), md.fedprox_synthetic(3, R=1.0, m=3, n=5, d=4)
    assert np.array_equal(host(a.objective.X), host(b.objective.X))
    batched = md.fedprox_synthetic(3, R=1.0, m=3, n=5, d=4, trials=2)
    for k, g in enumerate(md.trial_rngs(3, 2)):
        one = md.fedprox_synthetic(g, R=1.0, m=3, n=5, d=4)
        assert np.array_equal(host(batched.objective.X)[k], host(one.objective.X))
    assert not np.allclose(host(batched.objective.X)[0], host(batched.objective.X)[1])
    assert md.fedprox_synthetic(3, R=1.0, m=3, n=5, d=4).test is None


def _labels(obj, w_star, C):
    """argmax over classes of [x, 1] @ [W; b], from the returned samples and truth."""
    Xa = host(obj.X)
    W = w_star.reshape(w_star.shape[:-1] + (Xa.shape[-1], C))
    return np.argmax(Xa @ W, axis=-1)


def test_synthetic_recipe_and_split():
    pr = md.synthetic(0.5, 0.5, 1, n_clients=6, trials=2, max_size=400)
    tr, te = pr.objective, pr.test
    assert isinstance(tr, mo.Multinomial) and tr.batch_shape == (2, 6) and te.batch_shape == (2, 6)
    assert tr.dim == 61 * 10 and pr.w_star.shape == (2, 6, 610)
    n_tr, n_te = pr.constants["n_train"], pr.constants["n_test"]
    total = n_tr + n_te
    assert np.all((total >= 50) & (total <= 400))
    assert np.array_equal(n_tr, np.floor(0.75 * total).astype(int))
    for obj, count in ((tr, n_tr), (te, n_te)):
        w = host(obj.weights)
        assert np.array_equal(w, (np.arange(w.shape[-1]) < count[..., None]).astype(float))
        keep = w > 0
        assert np.array_equal(host(obj.y)[keep], _labels(obj, pr.w_star, 10)[keep])
        assert np.all(host(obj.X)[..., -1][keep] == 1.0)  # intercept column
    assert_close(pr.w_star_global, pr.w_star.mean(axis=-2))


def test_synthetic_seeds_and_sizes():
    kw = dict(n_clients=3, d=4, n_classes=3, max_size=120)
    batched = md.synthetic(1.0, 1.0, 9, trials=3, **kw)
    for k, g in enumerate(md.trial_rngs(9, 3)):
        one = md.synthetic(1.0, 1.0, g, **kw)
        assert np.array_equal(one.constants["n_train"], batched.constants["n_train"][k])
        n = one.objective.X.shape[-2]
        assert np.array_equal(host(batched.objective.X)[k][:, :n], host(one.objective.X))
        assert np.array_equal(batched.w_star[k], one.w_star)
    big = md.synthetic(0.5, 0.5, 2, n_clients=40, d=3, max_size=10**9, size_scale=5)
    sizes = big.constants["n_train"] + big.constants["n_test"]
    assert np.all(sizes % 5 == 0) and np.all(sizes >= 250)  # (floor(lognormal) + 50) * 5


BAD = [
    (md.fedprox_synthetic, dict(rng=0, R=-1.0), ValueError, "R must be >= 0"),
    (md.fedprox_synthetic, dict(rng=0, R=1.0, m=1), ValueError, "m must be >= 2"),
    (md.fedprox_synthetic, dict(rng=0, R=1.0, n_test=-1), ValueError, "n_test must be >= 0"),
    (md.fedprox_synthetic, dict(rng=0, R=1.0, mu=-1), ValueError, "mu must be >= 0"),
    (md.synthetic, dict(alpha=-0.5, beta=0.5, rng=0), ValueError, "alpha must be >= 0"),
    (md.synthetic, dict(alpha=0.5, beta=0.5, rng=0, n_classes=1), ValueError, "n_classes must be >= 2"),
    (
        md.synthetic,
        dict(alpha=0.5, beta=0.5, rng=0, train_fraction=1.0),
        ValueError,
        "train_fraction must be < 1",
    ),
    (md.synthetic, dict(alpha=0.5, beta=0.5, rng=0, trials=-2), ValueError, "trials must hold positive"),
    (md.synthetic, dict(alpha=0.5, beta=0.5, rng="x"), TypeError, "rng must be"),
]


@pytest.mark.parametrize("fun, kw, err, match", BAD, ids=[f"{b[0].__name__}-{b[3][:12]}" for b in BAD])
def test_bad_arguments(fun, kw, err, match):
    with pytest.raises(err, match=match):
        fun(**kw)
