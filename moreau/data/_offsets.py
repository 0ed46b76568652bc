r"""Heterogeneity directions: unit vectors :math:`u_i` with :math:`\sum_i p_i u_i = 0`."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

__all__ = ["unit_offsets"]


def unit_offsets(streams, p, d, equal_norms=True):
    r"""Offsets ``(*T, m, d)`` with :math:`\sum_i p_i u_i = 0` and :math:`\|u_i\| = 1`.

    ``equal_norms=True`` (every :math:`\|u_i\| = 1`, to rounding):

    - ``d >= 2``: the sides of a closed polygon with side lengths :math:`p_i`,
      inscribed in a circle (the cyclic polygon: its circumradius solves
      :math:`\sum_i 2\arcsin(p_i/2r) = 2\pi`, or, when the centre falls outside,
      :math:`\sum_{i\ne k} 2\arcsin(p_i/2r) = 2\arcsin(p_k/2r)` for the longest
      side ``k``; one scalar root, shared by all trials).  Each trial puts the
      sides in a random order, at a random starting angle, in a random 2-plane
      of :math:`\mathbb{R}^d` (Haar).  It exists iff :math:`\max_i p_i \le 1/2`
      (a polygon's longest side is at most the sum of the others); at
      :math:`p_k = 1/2` the polygon is flat (every other :math:`u_i = -u_k`).
      Uniform ``p``: the regular m-gon.
    - ``d = 1``: :math:`u_i = s_i = \pm 1`, which needs a signed partition
      :math:`\sum_i p_i s_i = 0`.  Uniform ``p``: possible iff ``m`` is even
      (a random half gets +1).  Other ``p`` with ``m <= 20``: every sign
      pattern is tried (those with :math:`|\sum_i p_i s_i| \le 4 m\,\epsilon`
      count) and each trial picks one at random; larger ``m`` is refused.

    ``equal_norms=False`` (any ``m >= 2``, ``d``, ``p``): two random groups
    (sizes ``ceil(m/2)`` and ``floor(m/2)``) on opposite sides of a random unit
    vector ``e``: :math:`u_i = a e` and :math:`u_j = -b e` with
    :math:`a P_+ = b P_-` (group masses) and :math:`\max(a, b) = 1`, so
    :math:`\|u_i\| \le 1` with maximum 1.
    """
    m = p.shape[0]
    if not equal_norms:
        e = _unit(streams.normal((d,)))  # (*T, d)
        sign = np.where(streams.permutation(m) < (m + 1) // 2, 1.0, -1.0)  # (*T, m)
        Pp = np.sum(np.where(sign > 0, p, 0.0), axis=-1, keepdims=True)
        Pm = 1.0 - Pp
        a, b = np.minimum(1.0, Pm / Pp), np.minimum(1.0, Pp / Pm)
        scale = np.where(sign > 0, a, -b)
        return scale[..., None] * e[..., None, :]
    if d == 1:
        return _signs(streams, p)[..., None]
    k = int(np.argmax(p))
    if p[k] > 0.5:
        raise ValueError(
            f"equal norms |u_i| = 1 with sum_i p_i u_i = 0 need max p_i <= 1/2 (got "
            f"p[{k}] = {p[k]:.6g}); pass equal_norms=False for |u_i| <= 1 with max 1"
        )
    alpha = _central_angles(p, k)  # (m,), signed
    order = streams.permutation(m)  # (*T, m): side order
    phi = streams.uniform(()) * 2 * math.pi
    if alpha is None:  # flat: u_k against all the others
        beta = phi[..., None] + np.where(order == k, math.pi, 0.0)
    else:
        a = alpha[order]
        ends = phi[..., None] + np.cumsum(a, axis=-1)
        beta = ends - a / 2 + np.sign(a) * (math.pi / 2)  # chord direction: mid-angle + 90 degrees
    side = np.stack([np.cos(beta), np.sin(beta)], axis=-1)  # (*T, m, 2), in side order
    u2 = np.empty_like(side)
    np.put_along_axis(u2, order[..., None], side, axis=-2)  # back to client order
    G = streams.normal((d, 2))
    Q, Rf = np.linalg.qr(G)
    Q = Q * np.sign(np.diagonal(Rf, axis1=-2, axis2=-1))[..., None, :]  # Haar 2-frame
    return u2 @ np.swapaxes(Q, -1, -2)


def _signs(streams, p):
    """Signs ``(*T, m)`` with sum_i p_i s_i = 0 (d = 1), or a ValueError saying why not."""
    m = p.shape[0]
    hint = "; pass equal_norms=False for |u_i| <= 1 with max 1"
    if np.all(p == p[0]):
        if m % 2:
            raise ValueError(
                f"equal norms |u_i| = 1 are impossible in d = 1 with uniform p and odd m = {m} "
                f"(a sum of an odd number of +-1 is never 0){hint}"
            )
        return np.where(streams.permutation(m) < m // 2, 1.0, -1.0)
    if m > 20:
        raise ValueError(
            f"equal norms in d = 1 need a signed partition sum_i p_i s_i = 0; with m = {m} > 20 "
            f"and non-uniform p it is not searched for{hint}"
        )
    codes = np.arange(2 ** (m - 1))
    S = np.where((codes[:, None] >> np.arange(m - 1)) & 1, -1.0, 1.0)
    S = np.concatenate([np.ones((S.shape[0], 1)), S], axis=1)  # s_0 = +1 (the rest: -s)
    good = S[np.abs(S @ p) <= 4 * m * np.finfo(float).eps]
    if good.shape[0] == 0:
        raise ValueError(
            f"equal norms |u_i| = 1 are impossible in d = 1 for p = {p.tolist()}: no signs "
            f"with sum_i p_i s_i = 0 (all {2 ** (m - 1)} patterns tried){hint}"
        )
    pick = np.minimum((streams.uniform(()) * good.shape[0]).astype(np.int64), good.shape[0] - 1)
    flip = np.where(streams.uniform(()) < 0.5, 1.0, -1.0)
    return good[pick] * flip[..., None]


def _central_angles(p, k):
    """Signed central angles ``(m,)`` of the cyclic polygon with sides ``p`` (longest ``p[k]``),
    or ``None`` when the polygon is flat (``p[k] = 1/2``)."""
    lk = p[k]
    if lk >= 0.5:
        return None
    others = np.delete(p, k)

    def inside(r):  # centre inside: the arcs of all sides add up to the full circle
        return float(np.sum(2 * np.arcsin(np.minimum(p / (2 * r), 1.0)))) - 2 * math.pi

    def outside(r):  # centre outside: the longest side's arc equals the others' together
        return float(np.sum(2 * np.arcsin(others / (2 * r)))) - 2 * math.asin(min(lk / (2 * r), 1.0))

    r0 = lk / 2
    fun, sign = (inside, 1.0) if inside(r0) >= 0 else (outside, -1.0)
    hi = 2 * r0
    while sign * fun(hi) > 0:  # inside decreases to -2 pi; outside grows like (sum others - lk)/r > 0
        hi *= 2
    r = brentq(fun, r0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1000)
    alpha = 2 * np.arcsin(np.minimum(p / (2 * r), 1.0))
    if sign < 0:
        alpha[k] = -alpha[k]
    return alpha


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)
