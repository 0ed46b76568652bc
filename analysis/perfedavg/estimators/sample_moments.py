r"""Moments of Per-FedAvg's gradient estimates on any finite sample set, batch by batch.

The batches are i.i.d. uniform draws with replacement; a batch of size D is a count vector
``c`` (``sum c = D``).  Given the batch D (and, for the Hessian-free estimate, D'), every
expectation over the remaining batches is a closed form in per-sample moments, so a
*configuration* (one D, or one pair (D, D')) yields

* ``X``: the conditional mean of the estimate minus ∇F(w) (its average over configurations is
  the bias: ``E[∇̃F] − ∇F``), and
* ``phi``: the conditional second moment ``E[‖∇̃F − ∇F‖² | D (, D')]``.

Averaged with the exact multinomial weights of :func:`compositions` these are the exact
moments; averaged over drawn configurations they are unbiased Monte Carlo estimates with
independent draws (Rao–Blackwellised over the batches not drawn).

Estimators (``kind``), with ``u = w − α∇̃f(w, D)``, ``h = ∇̃f(u, D')``, ``H`` the Hessian:

* ``"hessian"`` (eq. (8)): ``(I − α∇̃²f(w, D''))h``; given D:
  ``X = M(q̄ − G)``, ``phi = ‖M(q̄ − G)‖² + q̄ᵀC q̄ + tr((M² + C)Σ_q)/D'``, where ``M = I − αH(w)``,
  ``G = ∇f(w − α∇f(w))``, ``q̄ = ∇f(u)``, ``Σ_q`` the per-sample gradient covariance at u and
  ``C = α² E_j[(H_j − H)²]/D''`` (the cross term vanishes: the D'' Hessian error has mean 0);
* ``"first_order"`` (eq. (112)): ``h``; ``X = q̄ − MG``, ``phi = ‖q̄ − MG‖² + tr Σ_q/D'``;
* ``"hessian_free"`` (eqs. (120)-(121), divisor ``divisor·δ``, 2 as printed): given (D, D'),
  ``z_j = h − α(∇ℓ_j(w + δh) − ∇ℓ_j(w − δh))/(divisor·δ)``; ``phi = ‖z̄ − MG‖² + tr Σ_z/D''``;
  for the mean, ``E[h | D] = q̄`` is used (``X = q̄ − G − α(d̄ − HG)``, d̄ the z's difference
  term): the same expectation, with exact zeros where α = 0.

The samples are given as a model with ``grads(x)`` (``(..., T, d) -> (..., T, n, d)``) and
``hessians(x)`` (``-> (..., T, n, d, d)``).
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from math import comb, factorial

import numpy as np

__all__ = [
    "compositions",
    "MAX_COMPOSITIONS",
    "LogisticSamples",
    "QuadraticSamples",
    "configuration_moments",
    "local_constants",
    "variance",
    "pieces_at",
    "algorithm1_shift",
]


#: the most batches :func:`compositions` enumerates (a worst-case search that moves D or n refuses beyond)
MAX_COMPOSITIONS = 50_000


@lru_cache(maxsize=64)
def _compositions(n, D):
    rows = []
    for cut in itertools.combinations(range(D + n - 1), n - 1):  # stars and bars
        edges = (-1,) + cut + (D + n - 1,)
        rows.append([edges[k + 1] - edges[k] - 1 for k in range(n)])
    counts = np.array(rows, dtype=np.int64)
    logw = np.array(
        [np.log(float(factorial(D))) - sum(np.log(float(factorial(c))) for c in row) for row in rows]
    ) - D * np.log(n)
    p = np.exp(logw)
    return counts, p / p.sum()


def compositions(n, D):
    """Every batch of size ``D`` from ``n`` samples as counts ``(C, n)`` and its probability
    ``(C,)`` (multinomial, uniform with replacement)."""
    n, D = int(n), int(D)
    if n < 1 or D < 1:
        raise ValueError(f"compositions need n >= 1 and D >= 1 (got n={n}, D={D})")
    many = comb(D + n - 1, n - 1)
    if (
        many > MAX_COMPOSITIONS
    ):  # the instances enumerate only small batches (EXACT_MAX): a larger D is refused
        raise ValueError(
            f"compositions: {many} batches of size D={D} from n={n} samples, more than {MAX_COMPOSITIONS}"
            " to enumerate (draw them: Monte Carlo)"
        )
    counts, p = _compositions(n, D)
    return counts.copy(), p.copy()


class LogisticSamples:
    """Per-sample logistic losses ``log(1 + exp(−y_j x_jᵀθ))``, ``X (T, n, d)``, ``y (T, n)``."""

    def __init__(self, X, y):
        self.Z = y[..., None] * X

    def _margins(self, x):
        return np.einsum("tnd,...td->...tn", self.Z, x)

    def grads(self, x):
        s_neg = np.exp(-np.logaddexp(0.0, self._margins(x)))  # sigma(-z)
        return -s_neg[..., None] * self.Z

    def hessians(self, x):
        z = self._margins(x)
        c = np.exp(-np.logaddexp(0.0, z) - np.logaddexp(0.0, -z))  # sigma(z) sigma(-z)
        return c[..., None, None] * self.Z[..., :, None] * self.Z[..., None, :]


class QuadraticSamples:
    """Per-sample quadratics ``½xᵀA_jx − b_jᵀx``, ``A (T, n, d, d)``, ``b (T, n, d)``."""

    def __init__(self, A, b):
        self.A, self.b = A, b

    def grads(self, x):
        return np.einsum("tnij,...tj->...tni", self.A, x) - self.b

    def hessians(self, x):
        shape = np.shape(x)[:-2] + self.A.shape
        return np.broadcast_to(self.A, shape)


def _mean(g, weights=None):
    """Mean over the sample axis (-2) of ``g (..., n, d)``, anchored at sample 0:
    ``g_0 + Σ_j p_j (g_j − g_0)`` (``p`` uniform, or ``weights (..., n)`` summing to 1), so that
    identical samples give their common value exactly (no rounding where the truth is 0)."""
    dev = g - g[..., :1, :]
    if weights is None:
        return g[..., 0, :] + dev.mean(axis=-2)
    return g[..., 0, :] + np.einsum("...n,...nd->...d", weights, dev)


def _mean_hessian(H):
    return H[..., 0, :, :] + (H - H[..., :1, :, :]).mean(axis=-3)


def pieces_at(model, w, alpha):
    """The deterministic pieces at w: ``g_j (T, n, d)``, ``H_j``, ``H̄``, ``M = I − αH̄``,
    ``G = ∇f(w − α∇f(w))``."""
    g = model.grads(w)
    H = model.hessians(w)
    Hb = _mean_hessian(H)
    d = w.shape[-1]
    M = np.eye(d) - alpha[:, None, None] * Hb
    v = w - alpha[:, None] * _mean(g)
    G = _mean(model.grads(v))
    return g, H, Hb, M, G


def variance(g):
    """Per-sample gradient variance ``E_j‖g_j − ḡ‖²`` of ``g (..., n, d)`` (eq. (11)'s left side)."""
    return np.mean(np.sum((g - _mean(g)[..., None, :]) ** 2, axis=-1), axis=-1)


def configuration_moments(model, w, alpha, cD, D1, D2, kind, *, cD1=None, delta=None, divisor=2.0):
    """``(X (P, T, d), phi (P, T), u (P, T, d), hf_points (2P, T, d) or None)`` per configuration.

    ``cD (P, T, n)`` counts of D per configuration (``cD1`` likewise for D', hessian_free only;
    D' and D'' otherwise enter only through ``D1``, ``D2 (T,)``); see the module docstring for
    X and phi.  ``u`` and ``hf_points`` (w ± δh) are where the estimate evaluates per-sample
    gradients: the points of the local σ_G² (:func:`local_constants`).
    """
    g, H, Hb, M, G = pieces_at(model, w, alpha)
    D = cD.sum(axis=-1)
    u = w - alpha[:, None] * _mean(g, cD / D[..., None])
    q = model.grads(u)  # (P, T, n, d)
    qb = _mean(q)
    qdev = q - qb[..., None, :]
    MG = np.einsum("tij,tj->ti", M, G)
    if kind == "first_order":
        X = qb - MG
        phi = np.sum(X**2, axis=-1) + np.mean(np.sum(qdev**2, axis=-1), axis=-1) / D1
        return X, phi, u, None
    if kind == "hessian":
        Ht = H - Hb[:, None]
        C = (alpha**2 / D2)[:, None, None] * np.einsum("tnij,tnjk->tik", Ht, Ht) / H.shape[-3]
        X = np.einsum("tij,ptj->pti", M, qb - G)
        Sq = np.einsum("ptni,ptnj->ptij", qdev, qdev) / q.shape[-2]
        K = M @ M + C
        phi = (
            np.sum(X**2, axis=-1)
            + np.einsum("pti,tij,ptj->pt", qb, C, qb)
            + np.einsum("tij,ptji->pt", K, Sq) / D1
        )
        return X, phi, u, None
    if kind != "hessian_free":
        raise ValueError(f"kind must be 'hessian', 'first_order' or 'hessian_free' (got {kind!r})")
    h = _mean(q, cD1 / cD1.sum(axis=-1)[..., None])
    step = delta[:, None] * h
    dif = (model.grads(w + step) - model.grads(w - step)) / (divisor * delta)[:, None, None]  # (P, T, n, d)
    db = _mean(dif)
    ddev = dif - db[..., None, :]
    HG = np.einsum("tij,tj->ti", Hb, G)
    X = (qb - G) - alpha[:, None] * (db - HG)
    z_mean = h - alpha[:, None] * db
    phi = np.sum((z_mean - MG) ** 2, axis=-1) + alpha**2 * np.mean(np.sum(ddev**2, axis=-1), axis=-1) / D2
    return X, phi, u, np.concatenate([w + step, w - step])


def local_constants(model, w, alpha, points):
    """``dict(sG2, sH2, B)`` at this w: the largest per-sample gradient variance over w and
    ``points (Q, T, d)``; ``E_j‖H_j − H‖₂²`` at w (spectral norm); ``‖∇f(w − α∇f(w))‖``."""
    g, H, Hb, M, G = pieces_at(model, w, alpha)
    sG2 = np.maximum(variance(g), np.max(variance(model.grads(points)), axis=0))
    sH2 = np.mean(np.max(np.abs(np.linalg.eigvalsh(H - Hb[:, None])), axis=-1) ** 2, axis=-1)
    return {"sG2": sG2, "sH2": sH2, "B": np.linalg.norm(G, axis=-1)}


def algorithm1_shift(model, w, alpha, u, D1):
    """``(P, T, d)``: what Algorithm 1's estimate (Hessian on D', not an independent D'') adds to
    the conditional mean of eq. (8) given D: ``−(α/D') E_k[(H_k(w) − H(w))(q_k(u) − q̄(u))]``."""
    g, H, Hb, M, G = pieces_at(model, w, alpha)
    q = model.grads(u)
    qdev = q - _mean(q)[..., None, :]
    return -(alpha / D1)[:, None] * np.einsum("tkij,ptkj->pti", H - Hb[:, None], qdev) / q.shape[-2]
