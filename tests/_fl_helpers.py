"""Test helpers for moreau.fl: recorded random streams and plain-loop reference algorithms.

The references are written independently of moreau: per trial, per client, with the least-squares
gradient, Hessian and prox computed from the raw samples in numpy, and they consume the random
draws the batched run recorded in the order each algorithm documents.
"""

from __future__ import annotations

import numpy as np

import moreau as mo


class Recorder(np.random.Generator):
    """A Generator that keeps every ``random`` draw (to replay it, sliced, in a reference)."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self.log = []

    def random(self, size=None, dtype=np.float64, out=None):
        x = super().random(size, dtype=dtype, out=out)
        self.log.append(np.array(x))
        return x


class Replay(np.random.Generator):
    """Replays a Recorder's draws, each sliced by ``index`` (one trial of a batched run)."""

    def __init__(self, log, index):
        super().__init__(np.random.PCG64(0))
        self.draws = [np.asarray(x)[index] for x in log]

    def random(self, size=None, dtype=np.float64, out=None):
        x = self.draws.pop(0)
        assert x.shape == tuple(size), (x.shape, size)
        return x


class Draws:
    """The recorded draws of one trial, consumed in order by a reference algorithm."""

    def __init__(self, log, t):
        self.items = [np.asarray(x)[t] for x in log]

    def next(self):
        return self.items.pop(0)


def least_squares(seed, T=2, m=4, n=8, d=3, mu=0.1, pad=True):
    """Raw data (X, y, weights, mu) and the LeastSquares objective, clients padded to n."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, m, n, d))
    y = rng.standard_normal((T, m, n))
    wts = np.ones((T, m, n))
    if pad:
        wts = (np.arange(n) < rng.integers(n // 2, n + 1, (T, m))[..., None]).astype(float)
    return (X, y, wts, mu), mo.LeastSquares(X, y, mu=mu, weights=wts)


def grad(X, y, c, mu, theta):
    """Gradient of sum_j c_j (y_j - x_j.theta)^2 / (2 sum c) + mu/2 |theta|^2, one client."""
    return X.T @ (c * (X @ theta - y)) / c.sum() + mu * theta


def hess(X, c, mu):
    return (X.T * c) @ X / c.sum() + mu * np.eye(X.shape[1])


def prox(X, y, c, mu, w, lam):
    return np.linalg.solve(hess(X, c, mu) + lam * np.eye(X.shape[1]), X.T @ (c * y) / c.sum() + lam * w)


def sample_without(keys, wts, size):
    """Counts of the ``size`` valid samples with the smallest keys."""
    valid = np.flatnonzero(wts > 0)
    c = np.zeros(len(wts))
    c[valid[np.argsort(keys[valid], kind="stable")[:size]]] = 1
    return c


def sample_with(u, wts):
    """Counts of i.i.d. draws: u in [0, 1) picks the floor(u n_valid)-th valid sample."""
    valid = np.flatnonzero(wts > 0)
    c = np.zeros(len(wts))
    for v in u:
        c[valid[min(int(v * len(valid)), len(valid) - 1)]] += 1
    return c


def sample_clients(keys, S):
    return np.sort(np.argsort(keys, kind="stable")[:S])
