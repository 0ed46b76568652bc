r"""PEP worst cases turned back into instances: a quadratic through the points and gradients PEPit returns.

A PEP solution is a Gram matrix; factorising it gives points x_k and gradients g_k in ℝ^r
(r its rank: the dimension the worst case needs).  When the worst case is a quadratic
f(x) = ½xᵀQx − bᵀx, Q maps the point differences to the gradient differences,
Q(x_k − x_0) = g_k − g_0; the symmetric positive semidefinite solution of least norm is
Q = ΔG (ΔXᵀΔG)⁺ ΔGᵀ (ΔXᵀΔG is symmetric and PSD when the data come from a convex quadratic),
and b = Qx_0 − g_0.  :func:`quadratic_through` returns it with the residual ‖QΔX − ΔG‖ and
Q's spectrum, so the caller can see whether the data are quadratic (residual at the solver's
tolerance, spectrum in [μ, L]) or not.  :func:`embed` pads Q with the eigenvalues μ and L on
new coordinates, so the instance's exact constants are those of the class (the checkers read
μ and L from the spectrum).

References: Bousselmi, Hendrickx & Glineur, "Interpolation conditions for linear operators
and applications to performance estimation problems", arXiv:2302.08781 (2023).
"""

from __future__ import annotations

import numpy as np

__all__ = ["coordinates", "quadratic_through", "snap", "embed", "fw_replay"]


def coordinates(points):
    """``(k, r)`` array: the PEPit points' values after a solve (PEPit factorises the Gram matrix)."""
    X = np.array([np.asarray(p.eval(), dtype=float) for p in points])
    return X


def quadratic_through(X, G, rcond=1e-7):
    r"""``(Q, b, residual, eig)`` of the least-norm PSD quadratic with ∇f(X[k]) = G[k] (rows), or ``None``
    when ΔXᵀΔG is not (numerically) PSD.  ``residual`` = max_k ‖QΔx_k − Δg_k‖ / max(‖Δg‖, 1e-300)."""
    X, G = np.asarray(X, float), np.asarray(G, float)
    if X.shape != G.shape or X.ndim != 2:
        raise ValueError(f"X and G must be (k, r) arrays of the same shape (got {X.shape} and {G.shape})")
    dX, dG = (X[1:] - X[:1]).T, (G[1:] - G[:1]).T  # (r, k-1)
    S = dX.T @ dG
    S = (S + S.T) / 2
    s = np.linalg.eigvalsh(S)
    if s.size and s[0] < -1e-6 * max(abs(s[-1]), 1e-300):
        return None
    Q = dG @ np.linalg.pinv(S, rcond=rcond, hermitian=True) @ dG.T
    Q = (Q + Q.T) / 2
    b = Q @ X[0] - G[0]
    scale = max(np.max(np.linalg.norm(dG, axis=0)), 1e-300) if dG.size else 1.0
    res = float(np.max(np.linalg.norm(Q @ dX - dG, axis=0)) / scale) if dG.size else 0.0
    return Q, b, res, np.linalg.eigvalsh(Q)


def snap(Q, levels, rtol=1e-2):
    r"""``(Q', moved)``: Q with each eigenvalue within ``rtol·max(levels)`` of one of ``levels`` (e.g.
    0, μ, L) set to it, the eigenvectors kept; ``moved`` the largest change.  The interior-point
    solution of a PEP is accurate to the solver's tolerance only (a curvature 0.05771 for
    μ = 0.05764), and the worst case's curvatures sit on the class's bounds."""
    e, U = np.linalg.eigh(Q)
    lv = np.asarray(levels, float)
    d = np.abs(e[:, None] - lv[None, :])
    j = np.argmin(d, axis=1)
    close = d[np.arange(e.size), j] <= rtol * np.max(np.abs(lv))
    e2 = np.where(close, lv[j], e)
    return (U * e2) @ U.T, float(np.max(np.abs(e2 - e))) if e.size else 0.0


def embed(Q, b, x_list, mu, L):
    r"""Pad ``Q`` (r, r) to (r+2, r+2) with eigenvalues μ and L on two new coordinates (b and the points
    padded with zeros there), so the instance's spectrum spans exactly [μ, L] when Q's lies inside.

    Returns ``(A, b, [x padded], eig)`` with ``eig`` sorted ascending.
    """
    r = Q.shape[0]
    A = np.zeros((r + 2, r + 2))
    A[:r, :r] = Q
    A[r, r], A[r + 1, r + 1] = mu, L
    pad = lambda v: np.concatenate([np.asarray(v, float), np.zeros(2)])  # noqa: E731
    return A, pad(b), [pad(x) for x in x_list], np.linalg.eigvalsh(A)


def fw_replay(Q, b, V, x0, t, prefer, tie_rtol=1e-2):
    r"""Frank–Wolfe (η_k = 2/(k+2)) on f(x) = ½xᵀQx − bᵀx over the polytope conv(V), from x^0.

    The LMO returns a vertex minimising ⟨∇f(x^k), v⟩; among the vertices within ``tie_rtol`` of
    the minimum (relative to the spread of the scores) it returns ``prefer[k]`` (the vertex the
    PEP's worst case uses: FW's LMO may return any minimiser), else the first minimiser.
    Returns ``(gap_t, excess, fw_gap_star)``: F(x^t) − F(V[-1]) with V[-1] the PEP's x*; the
    largest relative excess (score of the vertex taken − min score)/spread over the steps (0: every
    step took an exact minimiser, so the instance is a genuine FW run; > 0: the PEP's tie, resolved
    in its favour, is off by that much in the rounded data); and min_v ⟨∇f(x*), v − x*⟩ (≥ 0
    certifies x* optimal over conv(V), so the gap is F(x^t) − F*).
    """
    V = np.asarray(V, float)
    x, excess = np.asarray(x0, float), 0.0
    for k in range(int(t)):
        sc = V @ (Q @ x - b)
        spread = max(np.ptp(sc), 1e-300)
        cand = np.flatnonzero(sc <= sc.min() + tie_rtol * spread)
        j = prefer[k] if prefer[k] in cand else int(cand[0])
        excess = max(excess, float((sc[j] - sc.min()) / spread))
        x = x + 2 / (k + 2) * (V[j] - x)
    f = lambda y: 0.5 * y @ Q @ y - b @ y  # noqa: E731
    xs = V[-1]
    return float(f(x) - f(xs)), excess, float(np.min((V - xs) @ (Q @ xs - b)))
