r"""Instances for perfedavg.lemma4_3 and perfedavg.appendix_h (one client, its samples, w, α, batches).

Quadratic family (``n = 4`` samples ``½xᵀA_jx − b_jᵀx``, ``d = 3``), groups in this order (a small
``--trials`` keeps the first, adversarial ones):

0. shared A with ``a_1 = −L``, ``b_j = b̄ ± s v_1`` (v_1 the eigenvector of −L), α = 1/L: the
   second moment of eq. (8) is ``4σ_G²(1/D' + (αL)²/D)``, a third of Lemma 4.3's bound; batch
   sizes (1, 1), (10⁶, 4), (4, 10⁶), (2, 3); half at the stationary point (∇f(w) = 0).
1. the same data with αL ∈ (1, 4] (outside the lemmas' α ≤ 1/L: not applicable).
2. Hessian noise ``A_j = −L I + s_j I``, ``b_j = b̄ + s_j w`` (every sample has the same gradient
   at w, σ_G² small), α = 1/L, D = D' = 10⁶: the σ_H terms dominate.
3. identical samples (σ_G = σ_H = 0), ``a_1 = −L`` and ∇f(w) along v_1: the first-order bias
   αL‖∇f(w − α∇f(w))‖ is attained.
4. batch reuse: ``A_j = (L ± L/2)I``, ``b_j = 0``, α = 1/(2L), D = 10⁶, D' = 1, where Algorithm 1 as
   printed (the Hessian on D') is biased by L‖w‖/16 whatever D;
5. shared A of each kind (strongly convex, convex, weakly convex), random b_j;
6. least squares ``A_j = x_jx_jᵀ``, ``b_j = y_jx_j``;
7. general symmetric (indefinite) A_j.

Groups 5-7: α uniform in [0, 1/L] (every fourth 0, every fourth 1/L), w standard normal × 3
(every fifth 0), batch sizes from {1, 2, 3, 5, 40}, δ log-uniform in [10⁻², 10]/‖A‖.

Logistic family (``n = 6`` samples, ``d = 2``, μ = 0): heterogeneous features (exact enumeration,
D, D' ≤ 3), identical features with mixed labels (σ_H = 0 and σ_G² = p(1 − p)‖x‖² exact at every
w), identical samples (σ_G = σ_H = 0), Monte Carlo instances with D, D' ∈ {10, 40} (``K`` draws
of (D, D') stored as counts), and αL ∈ (1, 4] (not applicable).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.instances import log_uniform, orthogonal, quadratic_batch, split_counts

__all__ = [
    "FAMILIES",
    "quadratic_instances",
    "logistic_instances",
    "quadratic_smoothness",
    "logistic_smoothness",
    "N_Q",
    "D_Q",
    "N_L",
    "D_L",
    "K_MC",
    "EXACT_MAX",
    "HUGE",
]

#: the instance kinds each family of perfedavg.lemma4_3 and perfedavg.appendix_h draws (shared by both)
FAMILIES = {
    "quadratic": (
        "shared A (all kinds, a_1 = -L)",
        "least squares",
        "indefinite A_j",
        "Hessian noise",
        "identical samples",
    ),
    "logistic": ("mu = 0: heterogeneous, shared features, identical samples, D up to 40",),
}

N_Q, D_Q = 4, 3
N_L, D_L = 6, 2
K_MC = 512
#: batches up to this size are enumerated exactly (logistic); larger ones are drawn
EXACT_MAX = 3
HUGE = 1e6
_SIZES = np.array([1, 2, 3, 5, 40])
_SIGNS = np.array([1.0, -1.0, 1.0, -1.0])  # n = 4 alternating: mean exactly 0


def quadratic_smoothness(A):
    """L = max|eig(mean_j A_j)| of ``A (T, n, d, d)``, computed as the checkers compute it."""
    return np.max(np.abs(np.linalg.eigvalsh(A.mean(axis=1))), axis=-1)


def _spectral(rng, T, a):
    V = orthogonal(rng, T, D_Q)
    A = (V * a[:, None, :]) @ np.swapaxes(V, 1, 2)
    return (A + np.swapaxes(A, 1, 2)) / 2, V


def _adversarial_shared(rng, T, alpha_scale):
    L = log_uniform(rng, 0.2, 5.0, T)
    a = np.sort(
        np.concatenate([-L[:, None], L[:, None] * rng.uniform(-0.9, 0.9, (T, D_Q - 1))], axis=1), axis=1
    )
    A, V = _spectral(rng, T, a)
    v1 = V[:, :, 0]
    s = L * log_uniform(rng, 0.1, 3.0, T)
    bbar = rng.standard_normal((T, D_Q)) * L[:, None]
    b = bbar[:, None] + s[:, None, None] * _SIGNS[None, :, None] * v1[:, None]
    w = rng.standard_normal((T, D_Q)) * 2
    stat = np.arange(T) % 2 == 1
    w[stat] = np.linalg.solve(A[stat], bbar[stat][..., None])[..., 0]  # stationary point: grad f(w) = 0
    sizes = np.array([[1, 1, 1], [HUGE, 4, 1], [4, HUGE, 1], [2, 3, 5]], float)[np.arange(T) % 4]
    delta = log_uniform(rng, 0.1, 10.0, T) / L
    delta[::2] = 10 / L[::2]  # the alpha^2/(2 delta^2 D'') term of H.2 small: its 12 sigma_G^2 terms compared
    return dict(
        A=np.repeat(A[:, None], N_Q, axis=1),
        b=b,
        w=w,
        u=alpha_scale,
        D=sizes[:, 0],
        D1=sizes[:, 1],
        D2=sizes[:, 2],
        delta=delta,
    )


def _hessian_noise(rng, T):
    L = log_uniform(rng, 0.2, 5.0, T)
    s = L * rng.uniform(0.01, 0.05, T)  # small: the hull of the HF points stays close to the likely ones
    A = (-L[:, None, None, None] + s[:, None, None, None] * _SIGNS[None, :, None, None]) * np.eye(D_Q)
    w = rng.standard_normal((T, D_Q))
    b = (
        rng.standard_normal((T, 1, D_Q)) * L[:, None, None]
        + s[:, None, None] * _SIGNS[None, :, None] * w[:, None]
    )
    D2 = np.where(np.arange(T) % 2 == 0, 1.0, 4.0)
    delta = log_uniform(rng, 0.1, 10.0, T) / L
    delta[1::2] = (
        10 / L[1::2]
    )  # w + delta h far out: the variance there carries H.2's alpha^2/(2 delta^2 D'') term
    return dict(A=A, b=b, w=w, u=np.ones(T), D=np.full(T, HUGE), D1=np.full(T, HUGE), D2=D2, delta=delta)


def _identical(rng, T):
    L = log_uniform(rng, 0.2, 5.0, T)
    a = np.sort(
        np.concatenate([-L[:, None], L[:, None] * rng.uniform(-0.9, 0.9, (T, D_Q - 1))], axis=1), axis=1
    )
    A, V = _spectral(rng, T, a)
    w = rng.standard_normal((T, D_Q))
    c = L * log_uniform(rng, 0.1, 3.0, T)
    b = np.einsum("tij,tj->ti", A, w) - c[:, None] * V[:, :, 0]  # grad f(w) = c v_1
    return dict(
        A=np.repeat(A[:, None], N_Q, axis=1),
        b=np.repeat(b[:, None], N_Q, axis=1),
        w=w,
        u=rng.uniform(0.2, 1.0, T),
        D=rng.choice(_SIZES, T).astype(float),
        D1=rng.choice(_SIZES, T).astype(float),
        D2=rng.choice(_SIZES, T).astype(float),
        delta=log_uniform(rng, 0.1, 10.0, T) / L,
    )


def _batch_reuse(rng, T):
    """A_j = (L ± L/2) I, b_j = 0, α = 1/(2L), D = 10⁶, D' = 1: eq. (8) is unbiased here, Algorithm 1
    as printed (Hessian on D') has bias L‖w‖/16 for every D (the finding's instance, scaled)."""
    L = log_uniform(rng, 0.2, 5.0, T)
    A = (L[:, None, None, None] * (1 + 0.5 * _SIGNS[None, :, None, None])) * np.eye(D_Q)
    return dict(
        A=A,
        b=np.zeros((T, N_Q, D_Q)),
        w=rng.standard_normal((T, D_Q)),
        u=np.full(T, 0.5),
        D=np.full(T, HUGE),
        D1=np.ones(T),
        D2=np.ones(T),
        delta=log_uniform(rng, 0.1, 10.0, T) / L,
    )


def _random(rng, T, kind):
    if kind == "least_squares":
        x = rng.standard_normal((T, N_Q, D_Q)) * log_uniform(rng, 0.3, 3.0, T)[:, None, None]
        w_star = rng.standard_normal((T, D_Q))
        y = np.einsum("tnd,td->tn", x, w_star) + rng.standard_normal((T, N_Q))
        A = x[..., :, None] * x[..., None, :]
        b = y[..., None] * x
    elif kind == "general":
        base = rng.standard_normal((T, 1, D_Q, D_Q))
        noise = rng.standard_normal((T, N_Q, D_Q, D_Q)) * rng.uniform(0.1, 1.5, (T, 1, 1, 1))
        A = base + noise
        A = (A + np.swapaxes(A, -1, -2)) / 2
        b = rng.standard_normal((T, N_Q, D_Q))
    else:
        q = quadratic_batch(rng, T, D_Q, kind)
        A = np.repeat(q["A"][:, None], N_Q, axis=1)
        b = q["b"][:, None] + rng.standard_normal((T, N_Q, D_Q)) * q["L"][:, None, None]
    L = quadratic_smoothness(A)
    u = rng.uniform(0.0, 1.0, T)
    u[::4], u[1::4] = 0.0, 1.0
    w = rng.standard_normal((T, D_Q)) * 3
    w[::5] = 0.0
    sizes = rng.choice(_SIZES, (T, 3)).astype(float)
    return dict(
        A=A,
        b=b,
        w=w,
        u=u,
        D=sizes[:, 0],
        D1=sizes[:, 1],
        D2=sizes[:, 2],
        delta=log_uniform(rng, 0.01, 10.0, T) / L,
    )


def _beyond(rng, k):
    """αL in (1, 4], the first at 4 (where (1 + αL)² = 25 > 12)."""
    u = rng.uniform(1.0, 4.0, k)
    u[0] = 4.0
    return u


def quadratic_instances(rng, T):
    """The quadratic batch (see the module docstring); ``T >= 1`` instances."""
    g = split_counts(T, 10)
    make = [
        lambda k: _adversarial_shared(rng, k, np.ones(k)),
        lambda k: _adversarial_shared(rng, k, _beyond(rng, k)),
        lambda k: _hessian_noise(rng, k),
        lambda k: _identical(rng, k),
        lambda k: _batch_reuse(rng, k),
        lambda k: _random(rng, k, "strongly_convex"),
        lambda k: _random(rng, k, "convex"),
        lambda k: _random(rng, k, "weakly_convex"),
        lambda k: _random(rng, k, "least_squares"),
        lambda k: _random(rng, k, "general"),
    ]
    parts = [f(k) for f, k in zip(make, g, strict=True) if k]
    batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    batch["alpha"] = batch.pop("u") / quadratic_smoothness(batch["A"])  # the checker's L: α = 1/L exactly
    return batch


def _hetero(rng, T, scale=1.5):
    X = rng.standard_normal((T, N_L, D_L)) * scale + rng.standard_normal((T, 1, D_L))
    w_star = rng.standard_normal((T, D_L))
    z = np.einsum("tnd,td->tn", X, w_star)
    y = np.where(rng.uniform(size=(T, N_L)) < 1 / (1 + np.exp(-z)), 1.0, -1.0)
    return X, y


def logistic_smoothness(X):
    """L = λ_max(XᵀX/n)/4 of logistic samples ``X (T, n, d)`` (μ = 0; attained at w = 0)."""
    return np.linalg.eigvalsh(np.einsum("tnd,tne->tde", X, X) / X.shape[1])[:, -1] / 4


def _logistic_group(rng, T, kind):
    if kind in ("hetero", "monte_carlo", "beyond"):
        X, y = _hetero(rng, T)
    else:
        x = rng.standard_normal((T, 1, D_L))
        x *= log_uniform(rng, 0.5, 3.0, T)[:, None, None] / np.linalg.norm(x, axis=-1, keepdims=True)
        X = np.repeat(x, N_L, axis=1)
        if kind == "same_features":  # k = 1, 2, 3 positive labels of 6, shuffled
            k = 1 + np.arange(T) % 3
            y = np.where(np.arange(N_L)[None, :] < k[:, None], 1.0, -1.0)
            y = np.take_along_axis(y, np.argsort(rng.uniform(size=(T, N_L)), axis=1), axis=1)
        else:  # identical samples
            y = np.repeat(np.where(rng.uniform(size=(T, 1)) < 0.5, 1.0, -1.0), N_L, axis=1)
    L = logistic_smoothness(X)
    R = np.max(np.linalg.norm(X, axis=-1), axis=-1)
    u = rng.uniform(0.0, 1.0, T)
    u[::4], u[1::4] = 1.0, 0.0
    w = (
        rng.standard_normal((T, D_L)) / R[:, None] * rng.choice([0.0, 1.0, 4.0, 20.0], (T, 1))
    )  # 20: saturated margins
    small = np.array([1, 2, 3])
    D, D1 = rng.choice(small, T).astype(float), rng.choice(small, T).astype(float)
    D2 = rng.choice([1.0, 2.0, 5.0, 40.0], T)
    if kind == "same_features":  # near the largest bias ratio: x^T w = ±3.7 (margin units), αL = 1, D = 1
        u[::2] = 1.0
        D[::2] = 1.0
        xn = X[:, 0] / np.linalg.norm(X[:, 0], axis=-1, keepdims=True) ** 2
        w[::2] = (rng.choice([-1.0, 1.0], T)[:, None] * rng.uniform(3.4, 4.0, (T, 1)) * xn)[::2]
    elif kind == "monte_carlo":
        D, D1 = rng.choice([10.0, 40.0], T), rng.choice([10.0, 40.0], T)
    elif kind == "beyond":
        u = rng.uniform(1.0, 4.0, T)
    delta = log_uniform(rng, 0.01, 10.0, T) / R**2
    cD = np.zeros((T, K_MC, N_L), dtype=np.int64)
    cD1 = np.zeros((T, K_MC, N_L), dtype=np.int64)
    for t in np.flatnonzero((D > EXACT_MAX) | (D1 > EXACT_MAX)):
        cD[t] = rng.multinomial(int(D[t]), np.full(N_L, 1 / N_L), K_MC)
        cD1[t] = rng.multinomial(int(D1[t]), np.full(N_L, 1 / N_L), K_MC)
    return dict(X=X, y=y, w=w, alpha=u / L, D=D, D1=D1, D2=D2, delta=delta, cD=cD, cD1=cD1)


def logistic_instances(rng, T):
    """The logistic batch (see the module docstring); ``cD``, ``cD1 (T, K, n)`` are the Monte Carlo
    draws of D and D' (zero where both sizes are at most ``EXACT_MAX``: enumerated exactly)."""
    kinds = ("same_features", "identical", "hetero", "monte_carlo", "beyond")
    parts = [
        _logistic_group(rng, k, kind) for kind, k in zip(kinds, split_counts(T, len(kinds)), strict=True) if k
    ]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
