r"""Quadratic devices in teams with exact spectra: the instances of the PerMFL checkers.

Devices :math:`f_{ij}(\theta) = \frac12\theta^\top A_{ij}\theta - b_{ij}^\top\theta` with
:math:`A_{ij} = V_{ij}\mathrm{diag}(a_{ij})V_{ij}^\top`; one team structure per batch (``TEAMS``:
ragged sizes 1, 2, 3).  Half the instances are *aligned*: every device shares one eigenbasis and
has the smallest eigenvalue on its first vector, so every level's smallest curvature is the
nested map of it (μ_F = λμ/(λ+μ) for each team, μ_G = γμ_F/(γ+μ_F) for G: the level bounds are
attained); the other half draw a Haar basis per device.  Device 0 holds the smallest eigenvalue
``lo`` and the last device the largest ``hi`` (exact constants of the class).

References: Dadras thesis eq. (4.3); ``moreau.analysis.engine.instances`` (the same recipe per device).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.instances import log_uniform, orthogonal

__all__ = ["TEAMS", "log_uniform", "team_quadratics"]

#: the team of each device (M = 3 teams of sizes 1, 2, 3)
TEAMS = np.array([0, 1, 1, 2, 2, 2])


def team_quadratics(rng, T, d, lo, hi, *, teams=TEAMS, aligned=None, b_scale=None):
    """``dict(A (T,m,d,d), b (T,m,d), eig (T,m,d), V (T,m,d,d), aligned (T,))``: eigenvalues uniform in
    ``[lo, hi]`` ``(T,)`` (``lo`` on device 0's first eigenvector, ``hi`` on the last device's last;
    aligned instances: ``lo`` on every device's first, shared, eigenvector).  ``aligned`` a
    boolean ``(T,)`` (default: even instances)."""
    m = len(teams)
    lo, hi = (np.broadcast_to(np.asarray(v, float), (T,)) for v in (lo, hi))
    aligned = (np.arange(T) % 2 == 0) if aligned is None else np.asarray(aligned, bool)
    a = lo[:, None, None] + (hi - lo)[:, None, None] * rng.uniform(size=(T, m, d))
    a[:, 0, 0], a[:, -1, -1] = lo, hi
    a[aligned, :, 0] = lo[aligned, None]
    a = np.sort(a, axis=-1)
    V = orthogonal(rng, T * m, d).reshape(T, m, d, d)
    V[aligned] = V[aligned, :1]
    A = (V * a[..., None, :]) @ np.swapaxes(V, -1, -2)
    scale = np.maximum(np.abs(lo), np.abs(hi)) if b_scale is None else b_scale
    b = rng.standard_normal((T, m, d)) * scale[:, None, None]
    return {"A": (A + np.swapaxes(A, -1, -2)) / 2, "b": b, "eig": a, "V": V, "aligned": aligned}
