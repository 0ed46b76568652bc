r"""SGD on quadratics with additive and multiplicative noise: exact expectations (thesis ch. 2).

F(x) = ½(x − z)ᵀA(x − z) (F* = 0 at z: no cancellation), g(x) = ∇F(x) + ξ(x) with
ξ = ζ C∇F(x) + ζ'‖∇F(x)‖q + S^{1/2}w, ζ, ζ' zero-mean signs and w any zero-mean vector with
E wwᵀ = I, independent: E‖ξ‖² = ‖C∇F‖² + ‖∇F‖²‖q‖² + tr S = M‖∇F‖² + σ² for C = √M U (U
orthogonal) and q = 0, or C = 0 and ‖q‖² = M, and tr S = σ²: Assumption 1 ((M, σ²)-bounded
noise) with equality, the multiplicative part along the gradient, rotated, or along a fixed
direction (the eigenvector of L: the descent lemma's worst case).  The second moment
P_t = E[(x^t − z)(x^t − z)ᵀ] obeys an exact linear recursion (:func:`second_moments`).
Used by ``sgd.strongly_convex`` (analysis/thesis/sgd/__init__.py) and ``sgd.nonconvex``
(analysis/thesis/sgd/nonconvex.py).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.instances import orthogonal, spectral_quadratics

__all__ = ["D", "second_moments", "quadratic", "noise", "groups"]

D = 3


def second_moments(A, C, S, e0, steps, q=None):
    r"""Exact ``(E F(x^t) − F*, E‖∇F(x^t)‖²)`` of SGD on ½(x − z)ᵀA(x − z), ``t = 0..N``.

    .. math::

        P_{t+1} = (I − η_t A) P_t (I − η_t A) + η_t^2 (C A P_t A C^\top + \mathrm{tr}(A P_t A)\, q q^\top + S),
        \quad P_0 = e_0 e_0^\top,

    for the noise ξ = ζ C∇F(x) + ζ' ‖∇F(x)‖ q + S^{1/2}w (ζ, ζ', w independent, zero mean,
    E ζ² = E ζ'² = 1, E wwᵀ = I; ``q = None``: no directional term); then
    E F(x^t) − F* = ½ tr(A P_t), E‖∇F(x^t)‖² = tr(A P_t A).  Shapes: ``A, C, S`` ``(n, d, d)``,
    ``e0 = x^0 − z`` and ``q`` ``(n, d)``, ``steps`` ``(n, N)``; returns two ``(N + 1, n)`` arrays.
    """
    Q = np.zeros_like(A) if q is None else q[:, :, None] * q[:, None, :]
    P = e0[:, :, None] * e0[:, None, :]
    eye = np.eye(A.shape[-1])
    Ct = np.swapaxes(C, 1, 2)
    h, g = [], []
    for k in range(steps.shape[1] + 1):
        AP = A @ P
        h.append(0.5 * np.trace(AP, axis1=1, axis2=2))
        APA = AP @ A
        g.append(np.trace(APA, axis1=1, axis2=2))
        if k == steps.shape[1]:
            break
        eta = steps[:, k, None, None]
        B = eye - eta * A
        P = B @ P @ B + eta**2 * (C @ APA @ Ct + g[-1][:, None, None] * Q + S)
        P = (P + np.swapaxes(P, 1, 2)) / 2
    return np.array(h), np.array(g)


def quadratic(rng, T, frac):
    """Spectrum a_1 = frac L <= a_2 <= a_3 = L: ``(A, eig, V, L)``."""
    return spectral_quadratics(rng, T, D, frac)


def noise(rng, T, V, M, s2, where_C, where_S):
    """``(C, S, q)``: the multiplicative part ``C = sqrt(M) U`` (``where_C`` 0: U = I, noise along the
    gradient; 1: Haar U) or ``q = sqrt(M) v``, noise of size ‖∇F‖ along a fixed direction (``where_C``
    2: v the eigenvector of L, the descent lemma's worst direction; 3: a random v), the other zero;
    ``S`` with ``tr S = s2``, ``where_S`` 0: along the eigenvector of mu, 1: random PSD, 2: along the
    eigenvector of L.  Either way E‖ξ‖² = M‖∇F‖² + s2 exactly."""
    U = orthogonal(rng, T, D)
    U[where_C == 0] = np.eye(D)
    C = np.where((where_C <= 1)[:, None, None], np.sqrt(M)[:, None, None] * U, 0.0)
    v = rng.standard_normal((T, D))
    v = np.where((where_C == 2)[:, None], V[:, :, -1], v / np.linalg.norm(v, axis=-1, keepdims=True))
    q = np.where((where_C >= 2)[:, None], np.sqrt(M)[:, None] * v, 0.0)
    W = rng.standard_normal((T, D, D))
    S = W @ np.swapaxes(W, 1, 2)
    v1, vd = V[:, :, 0], V[:, :, -1]
    S = np.where((where_S == 0)[:, None, None], v1[:, :, None] * v1[:, None, :], S)
    S = np.where((where_S == 2)[:, None, None], vd[:, :, None] * vd[:, None, :], S)
    S = S * (s2 / np.trace(S, axis1=1, axis2=2))[:, None, None]
    return C, (S + np.swapaxes(S, 1, 2)) / 2, q


def groups(T, k):
    return np.array_split(np.arange(T), k)
