r"""FedProx statistical error on least squares with fixed designs: exact moments and a fast Monte Carlo.

Clients ``i = 1..m`` hold ``n`` samples ``y = X_i w⋆⁽ⁱ⁾ + ε``, ``ε ~ N(0, σ² I_n)``, with
fixed designs ``X_iᵀX_i/n = A_i``.  The FedProx solution (FedProx analysis eq. (1), p_i = 1/m)
depends on the data only through the sufficient statistics ``b_i = X_iᵀy/n = A_i w⋆⁽ⁱ⁾ + e_i``,
``e_i ~ N(0, σ²A_i/n)``, and is affine in them:

.. math::
    P_i = \lambda(A_i+\lambda I)^{-1},\quad H = \tfrac1m\sum_i P_iA_i,\quad
    \tilde w^{(g)} = H^{-1}\tfrac1m\sum_i P_i b_i,\quad
    \tilde w^{(i)} = (A_i+\lambda I)^{-1}(b_i + \lambda\tilde w^{(g)}).

So the errors are ``bias + K ξ`` with ``ξ ~ N(0, I_{md})`` (``e_i = σ/√n · A_i^{1/2} ξ_i``):
``E‖error‖² = ‖bias‖² + ‖K‖_F²`` exactly, and a Monte Carlo trial costs one row of a matrix
product with ``K`` (independent of n).  Rows: 0 the global model, 1..m the local models.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from array_api_compat import array_namespace

__all__ = ["error_maps", "exact_errors", "monte_carlo_errors", "monte_carlo_memo", "baseline_errors", "CHUNK"]

#: trials per chunk of the Monte Carlo (memory: CHUNK·(2m+1)·d floats per configuration)
CHUNK = 4096


def error_maps(A, w_star, lam, sigma, n):
    r"""``(bias, K)`` of the FedProx errors ``w̃ − w⋆`` as affine maps of standard normal noise.

    Shapes: ``A`` ``(..., m, d, d)`` SPD, ``w_star`` ``(..., m, d)``, ``lam``, ``sigma``, ``n``
    ``(...)`` or scalars.  Returns ``bias`` ``(..., m+1, d)`` and ``K`` ``(..., (m+1)d, md)``:
    error row ``r`` (0 global, ``i`` ≥ 1 local i) is ``bias[r] + K[r·d:(r+1)d] @ ξ``.
    """
    A, w_star = np.asarray(A, float), np.asarray(w_star, float)
    lam, sigma, n = (np.asarray(v, float) for v in (lam, sigma, n))
    m, d = A.shape[-3], A.shape[-1]
    lead = np.broadcast_shapes(A.shape[:-3], w_star.shape[:-2], lam.shape, sigma.shape, n.shape)
    A, w_star = np.broadcast_to(A, (*lead, m, d, d)), np.broadcast_to(w_star, (*lead, m, d))
    lam = lam[..., None, None]
    scale = (sigma / np.sqrt(n))[..., None, None, None]
    a, V = np.linalg.eigh(A)  # (..., m, d), (..., m, d, d)
    Vt = np.swapaxes(V, -1, -2)
    lam_ = lam[..., None]
    P = (V * (lam / (a + lam))[..., None, :]) @ Vt  # λ(A_i+λ)^{-1}
    H = np.mean((V * (lam * a / (a + lam))[..., None, :]) @ Vt, axis=-3)
    Hinv = np.linalg.inv(H)  # (..., d, d)
    w_g = np.mean(w_star, axis=-2)
    PA = (V * (lam * a / (a + lam))[..., None, :]) @ Vt
    wbar_g = (Hinv @ np.mean(PA @ w_star[..., None], axis=-3))[..., 0]
    bias_loc = (P @ (wbar_g[..., None, :] - w_star)[..., None])[..., 0]
    bias = np.concatenate([(wbar_g - w_g)[..., None, :], bias_loc], axis=-2)
    # global: K_g,j = σ/√n · H^{-1} P_j A_j^{1/2} / m
    root = (V * (lam * np.sqrt(a) / (a + lam))[..., None, :]) @ Vt  # P_j A_j^{1/2}
    Kg = scale * (Hinv[..., None, :, :] @ root) / m  # (..., m, d, d) blocks j
    Kg = np.swapaxes(Kg, -3, -2).reshape(*lead, d, m * d)  # (..., d, md)
    # local: K_ij = δ_ij σ/√n A_i^{1/2}(A_i+λ)^{-1} + P_i K_g,j
    own = scale * ((V * (np.sqrt(a) / (a + lam_[..., 0]))[..., None, :]) @ Vt)  # (..., m, d, d)
    Kl = P @ Kg[..., None, :, :]  # (..., m, d, md)
    idx = np.arange(m)
    Kl = Kl.reshape(*lead, m, d, m, d)
    Kl[..., idx, :, idx, :] += np.moveaxis(own, -3, 0)
    K = np.concatenate([Kg, Kl.reshape(*lead, m * d, m * d)], axis=-2)
    return bias, K


def exact_errors(bias, K):
    """``E‖w̃ − w⋆‖²`` per row, exactly: ``‖bias_r‖² + ‖K_r‖_F²`` → ``(..., m+1)``."""
    *lead, rows, d = bias.shape
    frob = np.sum(K.reshape(*lead, rows, d, -1) ** 2, axis=(-2, -1))
    return np.sum(bias**2, axis=-1) + frob


def monte_carlo_errors(bias, K, trials, rng, chunk=CHUNK):
    r"""Monte Carlo ``E‖w̃ − w⋆‖²`` per row: ``(mean, se)`` each ``(..., m+1)``.

    Draws ``trials`` noise vectors ``ξ ~ N(0, I_{md})`` per configuration in chunks of ``chunk``
    (memory bounded independently of ``trials``: ``chunk·(2m+1)·d`` floats per configuration),
    accumulates the sum and the sum of squares of the squared errors; ``se`` is the sample
    standard deviation over ``√trials`` (a CLT interval is ``mean ± z·se``).

    Runs where ``bias`` and ``K`` live: numpy arrays with a numpy ``Generator`` (what ``moreau
    check`` does), or cupy arrays with a ``cupy.random.Generator`` (``benchmarks/bench_rates.py
    --backend cupy``); the namespace needs ``einsum`` (numpy's and cupy's have it).
    """
    xp = array_namespace(bias, K)
    *lead, rows, d = bias.shape
    md = K.shape[-1]
    Kt = xp.matrix_transpose(K)
    s1 = xp.zeros((*lead, rows), dtype=bias.dtype)
    s2 = xp.zeros((*lead, rows), dtype=bias.dtype)
    done = 0
    while done < trials:
        c = min(chunk, trials - done)
        xi = rng.standard_normal((*lead, c, md))
        err = xp.reshape(xi @ Kt, (*lead, c, rows, d)) + bias[..., None, :, :]
        sq = xp.einsum("...crd,...crd->...cr", err, err)
        s1 += xp.sum(sq, axis=-2)
        s2 += xp.einsum("...cr,...cr->...r", sq, sq)
        done += c
    mean = s1 / trials
    var = xp.maximum(s2 / trials - mean**2, 0.0) * trials / max(trials - 1, 1)
    return mean, xp.sqrt(var / trials)


_MC_MEMO: dict[Any, Any] = {}


def monte_carlo_memo(bias, K, trials, key):
    """:func:`monte_carlo_errors` with its own generator ``default_rng(key)`` per call, memoised on
    (key, trials, the maps' bytes): a checker's mutant that leaves λ unchanged reuses the results
    (identical to recomputing them: the memo never changes a number)."""
    digest = hashlib.blake2b(bias.tobytes() + K.tobytes(), digest_size=16).digest()
    k = (key, trials, bias.shape, K.shape, digest)
    if k not in _MC_MEMO:
        if len(_MC_MEMO) > 512:
            _MC_MEMO.clear()
        _MC_MEMO[k] = monte_carlo_errors(bias, K, trials, np.random.default_rng(list(key)))
    return _MC_MEMO[k]


def baseline_errors(A, w_star, sigma, n):
    r"""Exact ``E‖ŵ − w⋆‖²`` of LocalTrain and GlobalTrain on the same data (FedProx analysis eq. (2)).

    LocalTrain ``ŵ⁽ⁱ⁾ = A_i^{-1}b_i``: unbiased, ``σ²/n · tr(A_i^{-1})``.  GlobalTrain
    ``ŵ = Ā^{-1}b̄`` (Ā, b̄ the client means): bias ``Ā^{-1} mean_i(A_i w⋆⁽ⁱ⁾) − w⋆``, variance
    ``σ²/n · tr(Ā^{-1} (Σ_i A_i/m²) Ā^{-1})``; it serves as the global and every local model.
    Shapes as :func:`error_maps`; returns ``(local (..., m+1), global (..., m+1))`` in its rows.
    """
    A, w_star = np.asarray(A, float), np.asarray(w_star, float)
    m = A.shape[-3]
    s2n = (np.asarray(sigma, float) ** 2 / np.asarray(n, float))[..., None]
    Ainv = np.linalg.inv(A)
    lt = s2n * np.trace(Ainv, axis1=-2, axis2=-1)
    lt = np.concatenate([s2n * np.trace(np.sum(Ainv, axis=-3), axis1=-2, axis2=-1)[..., None] / m**2, lt], -1)
    Abar_inv = np.linalg.inv(np.mean(A, axis=-3))
    w_gt = (Abar_inv @ np.mean(A @ w_star[..., None], axis=-3))[..., 0]
    var = s2n[..., 0] * np.trace(Abar_inv @ np.mean(A, axis=-3) @ Abar_inv, axis1=-2, axis2=-1) / m
    w_all = np.concatenate([np.mean(w_star, axis=-2)[..., None, :], w_star], axis=-2)
    gt = np.sum((w_gt[..., None, :] - w_all) ** 2, axis=-1) + var[..., None]
    return lt, gt
