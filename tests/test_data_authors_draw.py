"""``moreau.data.synthetic(..., draw="authors")``: the pFedMe authors' Synthetic(0.5, 0.5) data set.

The expected numbers come from outside the code under test: the client sizes from the pFedMe
paper (Dinh et al. 2020, Section 5.1: Synthetic with 100 clients whose data sizes lie in
[250, 25810]), everything else from a second replay written here, directly on a
``numpy.random.RandomState(0)`` (the authors' ``np.random.seed(0)``), that follows the calls of
the authors' script ``data/Synthetic/generate_synthetic_05_05.py`` (github.com/CharlieDinh/pFedMe)
in their order, with ``standard_normal`` in place of their ``normal`` / ``multivariate_normal``
(the same stream for a diagonal covariance) and their row-by-row softmax labels.
"""

from __future__ import annotations

import numpy as np
import pytest
from _tol import host

import moreau.data as md
from moreau.data._authors_synthetic import authors_arrays

M, D, C, SCALE = 100, 60, 10, 5  # the script's NUM_USER, dimension, NUM_CLASS and size factor


@pytest.fixture(scope="module")
def authors():
    """The full authors' data set (205,795 rows), drawn once for the module."""
    return md.synthetic(0.5, 0.5, draw="authors")


def _replay(clients=2):
    """Sizes, u, B, v, and ``(W_k, b_k, x_k, y_k)`` of the first ``clients`` clients, replayed here."""
    rs = np.random.RandomState(0)
    sizes = (np.floor(rs.lognormal(4.0, 2.0, size=M)).astype(np.int64) + 50) * SCALE
    u = 0.5 * rs.standard_normal(M)  # normal(0, alpha) = 0 + alpha z
    B = 0.5 * rs.standard_normal(M)
    v = np.array([B[k] + rs.standard_normal(D) for k in range(M)])
    sd = np.sqrt(np.array([(j + 1.0) ** -1.2 for j in range(D)]))
    out = []
    for k in range(clients):
        W = u[k] + rs.standard_normal((D, C))
        b = u[k] + rs.standard_normal(C)
        x = v[k] + rs.standard_normal((int(sizes[k]), D)) * sd  # N(v_k, diag(j^-1.2)), one row at a time
        y = np.empty(len(x))
        for i, row in enumerate(x):
            z = np.exp(row @ W + b)
            y[i] = np.argmax(z / z.sum())
        out.append((W, b, x, y))
    return sizes, u, B, v, out


def _client(obj, k):
    """Client ``k``'s rows ``(X, y)`` of a ragged objective, without forming the padded view."""
    n = int(obj.sizes[k])
    for (idx, _), part in zip(obj.layout.buckets, obj.parts, strict=True):
        pos = int(np.searchsorted(idx, k))
        if pos < idx.size and idx[pos] == k:
            return host(part.X)[pos, :n], host(part.y)[pos, :n]
    raise AssertionError(f"client {k} in no bucket")


def test_client_sizes_are_the_papers(authors):
    sizes = authors.constants["n_train"] + authors.constants["n_test"]
    assert sizes.shape == (M,)  # the paper: 100 clients
    assert sizes.min() == 250 and sizes.max() == 25810  # the paper: sizes in [250, 25810]
    assert np.all(sizes % SCALE == 0)
    assert np.array_equal(sizes, _replay(0)[0])
    assert authors.params["draw"] == "authors" and authors.params["rng"] is None
    assert authors.params["n_clients"] == M and authors.params["size_scale"] == SCALE


def test_the_draw_is_the_replay_here(authors):
    sizes, u, B, v, clients = _replay(2)
    got = authors_arrays()
    assert np.array_equal(got["sizes"], sizes) and np.array_equal(got["u"], u)
    assert np.array_equal(got["B"], B) and np.array_equal(got["v"], v)
    n_tr = authors.constants["n_train"]
    for k, (W, b, x, y) in enumerate(clients):  # client 1's draws start where client 0's rows end
        assert np.array_equal(got["W"][k], W) and np.array_equal(got["b"][k], b)
        assert np.array_equal(got["x"][k], x) and np.array_equal(got["y"][k], y)
        assert n_tr[k] == int(0.75 * sizes[k])  # moreau's split: the first 75 % in draw order train
        X_tr, y_tr = _client(authors.objective, k)
        X_te, y_te = _client(authors.test, k)
        assert np.array_equal(np.concatenate([X_tr, X_te])[:, :D], x)
        assert np.all(X_tr[:, D] == 1.0) and np.all(X_te[:, D] == 1.0)  # moreau's intercept column
        assert np.array_equal(np.concatenate([y_tr, y_te]), y)
        assert np.array_equal(authors.w_star[k], np.concatenate([W, b[None]]).reshape(-1))
    assert set(np.unique(y)) <= set(range(C))


def test_max_size_keeps_the_first_rows_of_the_same_draw():
    small = md.synthetic(0.5, 0.5, draw="authors", max_size=100, train_fraction=0.9, ragged=False)
    sizes, _, _, _, clients = _replay(2)
    assert np.array_equal(small.constants["n_train"] + small.constants["n_test"], np.minimum(sizes, 100))
    assert small.constants["n_train"][1] == 90  # the script's int(0.9 n) proportion
    X = np.concatenate([host(small.objective.X)[1, :90], host(small.test.X)[1, :10]])
    assert np.array_equal(X[:, :D], clients[1][2][:100])


def test_default_draw_is_unchanged():
    kw = dict(n_clients=5, max_size=60, d=4, n_classes=3)
    a, b = md.synthetic(0.5, 0.5, 3, **kw), md.synthetic(0.5, 0.5, 3, draw="moreau", **kw)
    for f, g in ((a.objective, b.objective), (a.test, b.test)):
        assert np.array_equal(host(f.X), host(g.X)) and np.array_equal(host(f.y), host(g.y))
    assert np.array_equal(a.w_star, b.w_star) and a.params == b.params and "draw" not in a.params
    default = md.synthetic(0.5, 0.5, 3, max_size=60)
    assert default.constants["n_train"].shape == (30,) and default.params["size_scale"] == 1


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(rng=0, draw="author"), r"draw must be one of 'moreau', 'authors' \(got 'author'\)"),
        (dict(rng=0, draw=None), r"draw must be one of 'moreau', 'authors' \(got None\)"),
        (dict(rng=0, draw="authors"), r"rng must be None with draw='authors'.*got rng=0"),
        (dict(draw="authors", trials=2), r"trials must be \(\) with draw='authors'"),
    ],
    ids=["draw-typo", "draw-none", "rng-conflict", "trials"],
)
def test_bad_input(kw, match):
    with pytest.raises(ValueError, match=match):
        md.synthetic(0.5, 0.5, **kw)
