r"""Instance families shared by the checkers (numpy, seeded by a Generator).

Quadratic kinds (eigenvalues ``a_1 <= ... <= a_d`` of A, ``L = max|a_k|``):

* ``convex``: ``a_1 = 0`` exactly (the boundary case), the rest in (0, L];
* ``strongly_convex``: ``a_1 = mu > 0``;
* ``weakly_convex``: ``a_1 < 0``; with ``adversarial=True`` half the instances
  have ``a_1 = -L`` exactly, the eigenvalue that attains the nonconvex bounds.

Each quadratic is returned with its exact spectrum, so checkers can compute
the constants from eigenvalues rather than type them in.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "orthogonal",
    "quadratic_batch",
    "logistic_batch",
    "log_uniform",
    "split_counts",
    "KINDS",
    "per_group",
    "trials_in_groups",
    "trials_at_least",
]

KINDS = ("convex", "strongly_convex", "weakly_convex")


def orthogonal(rng, T, d):
    """``T`` Haar-random orthogonal ``d x d`` matrices."""
    Q, R = np.linalg.qr(rng.standard_normal((T, d, d)))
    return Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[:, None, :]


def split_counts(T, k):
    """Sizes of ``k`` nearly equal groups of ``T`` instances (``numpy.array_split``)."""
    return [len(a) for a in np.array_split(np.arange(T), k)]


def log_uniform(rng, lo, hi, size):
    """``size`` draws from ``rng`` whose logarithm is uniform on [log ``lo``, log ``hi``] (as many
    in each decade)."""
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size))


def spectral_quadratics(rng, T, d, lo_frac):
    """``T`` quadratics with ``a_1 = lo_frac L`` and ``a_d = L`` (``L`` log-uniform in
    [0.1, 10], the rest uniform between), Haar eigenvectors: ``(A, eig, V, L)``."""
    L = log_uniform(rng, 0.1, 10.0, T)
    a = np.sort(L[:, None] * rng.uniform(lo_frac[:, None], 1.0, (T, d)), axis=1)
    a[:, 0], a[:, -1] = lo_frac * L, L
    V = orthogonal(rng, T, d)
    A = (V * a[:, None, :]) @ np.swapaxes(V, 1, 2)
    return (A + np.swapaxes(A, 1, 2)) / 2, a, V, L


def quadratic_batch(rng, T, d, kind, *, L=None, adversarial=True):
    """``dict(A (T,d,d), b (T,d), eig (T,d) ascending, L (T,))`` of the given kind.

    ``L`` (the smoothness, ``max|a_k|``) is drawn log-uniform in [0.1, 10]
    unless given.  The top eigenvalue is ``L`` itself (or ``-L`` is the
    bottom one for adversarial weakly convex instances).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    L = log_uniform(rng, 0.1, 10.0, T) if L is None else np.broadcast_to(np.asarray(L, float), (T,)).copy()
    u = rng.uniform(0.0, 1.0, (T, d))
    if kind == "convex":
        a = L[:, None] * u
        a[:, 0] = 0.0
        a[:, -1] = L
    elif kind == "strongly_convex":
        mu = L * rng.uniform(0.01, 1.0, T)
        a = mu[:, None] + (L - mu)[:, None] * u
        a[:, 0], a[:, -1] = mu, L
    else:
        a = L[:, None] * (2 * u - 1)
        a[:, -1] = L * rng.uniform(0.0, 1.0, T)
        a[:, 0] = -L * rng.uniform(0.05, 1.0, T)
        if adversarial:
            a[: T // 2, 0] = -L[: T // 2]
        L = np.max(np.abs(a), axis=1)
    a = np.sort(a, axis=1)
    V = orthogonal(rng, T, d)
    A = (V * a[:, None, :]) @ np.swapaxes(V, 1, 2)
    A = (A + np.swapaxes(A, 1, 2)) / 2
    b = rng.standard_normal((T, d)) * L[:, None]
    return {"A": A, "b": b, "eig": a, "L": L}


def logistic_batch(rng, T, n, d, *, mu=0.0, scale=1.0, well_specified=True):
    """``dict(X (T,n,d), y (T,n), mu (T,), w_star (T,d))``.

    Well specified (default): ``P(y = 1 | x) = sigmoid(x^T w_star)``, so
    ``w_star`` is the population minimiser (docs/catalogue.md, "Conventions": data for statistical statements).
    Otherwise labels are ``sign(x^T w_star)`` (separable, the public recipe).
    """
    X = rng.standard_normal((T, n, d)) * scale
    w_star = rng.standard_normal((T, d)) / np.sqrt(d)
    z = np.einsum("tnd,td->tn", X, w_star)
    if well_specified:
        y = np.where(rng.uniform(size=(T, n)) < 1 / (1 + np.exp(-z)), 1.0, -1.0)
    else:
        y = np.where(z >= 0, 1.0, -1.0)
    mu = np.broadcast_to(np.asarray(mu, float), (T,)).copy()
    return {"X": X, "y": y, "mu": mu, "w_star": w_star}


def per_group(trials, groups, default):
    """Instances per group of a generator that draws the same number in each of ``groups`` groups:
    ``trials`` split over them (``default`` per group when ``trials`` is None), at least one each."""
    return max(1, (trials or default * groups) // groups)


def trials_in_groups(groups, what):
    """A ``Statement.trials_used`` for a generator using :func:`per_group`: ``--trials`` becomes a
    multiple of its ``groups`` ``what`` (ranks, groups), at least one each."""

    def used(family, trials):
        return groups * per_group(trials, groups, 1), f"a multiple of its {groups} {what}, at least one each"

    return used


def trials_at_least(minimum, what, family=None):
    """A ``Statement.trials_used``: ``--trials`` raised to ``minimum`` (on ``family`` only, when given;
    ``what``: what is counted, e.g. "quadratic instances: its adversarial ones")."""

    def used(fam, trials):
        t = int(trials)
        return (max(t, minimum) if family in (None, fam) else t), f"at least {minimum} {what}"

    return used
