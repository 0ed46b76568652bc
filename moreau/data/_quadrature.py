r"""One-dimensional Gaussian expectations of the well-specified logistic model.

With :math:`s \sim N(0, 1)` and :math:`P(y = 1 \mid s) = \sigma(ts)`:

.. math:: g(t) = E[s\,\sigma(ts)] = \int_0^\infty s\,\varphi(s) \tanh(ts/2)\,ds,
          \qquad E[y s\,\sigma(-y r s)] = g(t) - g(r),

(the second because :math:`\sigma(rs) + \sigma(-rs) = 1`), and

.. math:: E[\sigma(-y r s)^2 k(s)] = \int_0^\infty 2\varphi(s) k(s)
          \big(\sigma(ts)\sigma(-rs)^2 + \sigma(-ts)\sigma(rs)^2\big)\,ds

for even ``k``.  The integrals are composite Gauss-Legendre (24 nodes per
panel) on ``[0, 12]`` (the tail beyond 12 is below :math:`\varphi(12) \approx
5\cdot10^{-32}`), with panels graded geometrically from ``1e-7`` so that the
``1/t`` scale of :math:`\tanh(ts/2)` is resolved for ``t`` up to ``1e7``.
Gauss-Hermite is not used: its error for the step-like integrands at large
``t`` decays only slowly with the number of nodes.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["g", "g_prime", "score_moment", "solve_t", "G_MAX"]

G_MAX = 1.0 / math.sqrt(2.0 * math.pi)  # g(inf) = E[s 1{s > 0}]


def _nodes():
    edges = np.concatenate([[0.0], np.logspace(-7, 0, 29), np.linspace(1.25, 12.0, 44)])
    x, w = np.polynomial.legendre.leggauss(24)
    a, b = edges[:-1, None], edges[1:, None]
    s = ((b - a) / 2 * x + (a + b) / 2).ravel()
    ws = ((b - a) / 2 * w).ravel()
    return s, ws * np.exp(-s**2 / 2) / math.sqrt(2 * math.pi)  # weights include phi(s)


_S, _W = _nodes()


def _sig(z):
    """sigma(z) without overflow."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def g(t):
    r""":math:`g(t) = E[s\,\sigma(ts)]`, elementwise over ``t`` (any shape, ``t >= 0``)."""
    t = np.asarray(t, dtype=float)[..., None]
    return np.sum(_W * _S * np.tanh(t * _S / 2), axis=-1)


def g_prime(t):
    r""":math:`g'(t) = E[s^2 \sigma'(ts)]` (> 0: ``g`` increases from 0 to :math:`1/\sqrt{2\pi}`)."""
    t = np.asarray(t, dtype=float)[..., None]
    z = t * _S
    return 2 * np.sum(_W * _S**2 * _sig(z) * _sig(-z), axis=-1)


def score_moment(r, t, extra):
    r""":math:`E[\sigma(-y r s)^2 (s^2 + \text{extra})]`, elementwise over broadcast ``r, t, extra``."""
    r, t, extra = (np.asarray(v, dtype=float)[..., None] for v in (r, t, extra))
    k = _S**2 + extra
    rs, ts = r * _S, t * _S
    return np.sum(2 * _W * k * (_sig(ts) * _sig(-rs) ** 2 + _sig(-ts) * _sig(rs) ** 2), axis=-1)


def solve_t(target, *, t_max=1e7):
    r"""``t >= 0`` with :math:`g(t) =` ``target`` (elementwise), by bisection then Newton.

    ``target`` must lie in ``[0, g(t_max))``; returns ``(t, ok)`` with ``ok``
    False where it does not (``t`` is then ``nan``).
    """
    target = np.asarray(target, dtype=float)
    ok = (target >= 0) & (target < g(t_max))
    goal = np.where(ok, target, 0.0)
    lo, hi = np.zeros_like(goal), np.ones_like(goal)
    for _ in range(30):  # grow the bracket: g(hi) >= goal
        need = g(hi) < goal
        if not np.any(need):
            break
        lo, hi = np.where(need, hi, lo), np.where(need, hi * 4, hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        up = g(mid) < goal
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    t = (lo + hi) / 2
    for _ in range(3):  # Newton polish, kept inside the bracket
        step = (g(t) - goal) / np.maximum(g_prime(t), 1e-300)
        t = np.clip(t - step, lo, hi)
    return np.where(ok, t, np.nan), ok
