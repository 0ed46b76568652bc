r"""Theorem 4.5 on nonconvex clients: Cauchy (robust) regression with a pseudo-Huber ridge.

Client i has m samples (x_ij, y_ij) and the per-sample loss

.. math:: l_{ij}(w) = \kappa\,\varphi(x_{ij}^\top w - y_{ij}) + h(w),\qquad
          \varphi(z) = \tfrac12\log(1 + z^2),\qquad h(w) = \nu\sum_k\big(\sqrt{\delta^2 + w_k^2} - \delta\big),

f_i the (weighted) mean over its samples; κ ``kappa``, ν ``nu``, δ ``delta`` (all > 0).  φ is
nonconvex (φ'' < 0 for |z| > 1): with labels from two regression modes, F has two basins.
Everything is C^∞, f_i ≥ 0 (Assumption 1), and the constants below are valid upper bounds.

Derivative constants (sympy, tests/catalogue/perfedavg/test_thm4_5_nonconvex.py): sup|φ'| = 1/2 (z = ±1),
φ'' ∈ [−1/8, 1] (z = ±√3, 0), sup|φ'''| = 3/4 + √2/2 (z = ±(1 + √2)); h''(t) = νδ²/(δ² + t²)^{3/2}
∈ (0, ν/δ], sup|h'''| = (48√5/125)ν/δ² (t = ±δ/2), |h'| < ν.  With r_j = ‖x_ij‖ and
Λ_i = λ_max(X_iᵀX_i/m) (eigvalsh, enlarged by 1e-10 relative):

* L_i = κΛ_i + ν/δ: the Cauchy part of ∇²f_i lies between −κΛ_i/8·I and κΛ_i·I, the ridge's in (0, ν/δ].
* ρ_i = κ(3/4 + √2/2)(1/m)Σ_j r_j³ + (48√5/125)ν/δ²: |φ''(z) − φ''(z′)| ≤ sup|φ'''|·|x_jᵀ(w − u)|
  and ‖x_j x_jᵀ‖ = r_j²; the ridge's Hessian is diagonal.
* B_i = (κ/2)min((1/m)Σ_j r_j, √Λ_i) + ν√d: ‖Xᵀv/m‖ ≤ ‖X‖₂‖v‖/m with |v_j| ≤ 1/2.
* σ_G² = max_i (κ²/4)(1/m)Σ_j r_j² and σ_H² = max_i κ²(1/m)Σ_j r_j⁴: the ridge is the same for every
  sample, variance ≤ second moment (Frobenius norm ≥ spectral norm; a rank-one matrix has equal norms).
* γ_G² = (1/n)Σ_i B_i′² with B_i′ the Cauchy part of B_i, γ_H² = (1/n)Σ_i (κ(1/m)Σ_j r_j²)²: again
  the spread around the mean is at most the second moment, the ridge cancels.
* The smoothness of F = (1/n)Σ_i f_i(w − α∇f_i(w)) used below: ∇F_i = (I − α∇²f_i(w))∇f_i(u),
  so ‖∇²F_i‖ ≤ (1 + αL)²L + αρB (≤ L_F = 4L + αρB for α ≤ 1/L, Lemma 4.2), and
  ‖∇F‖ ≤ (1 + αL)B.

F* from below (``f_star``): outside the box ‖w‖_∞ ≤ R = U/ν + αB + δ, with U = F(w_0) ≥ F*,
F(w) ≥ h(u_i) ≥ ν(‖w‖_∞ − αB − δ) > U (u_i = w − α∇f_i(w), ‖u_i − w‖ ≤ αB, φ ≥ 0), so
F* = min over the box; branch and bound on squares of half-diagonal r with the lower bound
F(c) − ‖∇F(c)‖r − L_F′r²/2 (L_F′ = (1 + αL)²L + αρB) until the gap to the best value found is
at most ``rtol`` of F(w_0) − F*; the returned bound is lowered by 1e-10(1 + |U|) for rounding.

Shapes: ``X`` ``(n, m, d)``, ``y`` ``(n, m)``; client points ``(..., n, d)``; weights ``p``
``(..., n, m)`` (None: 1/m); points of F ``(..., d)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Clients", "nc_constants", "f_star", "PHI1", "PHI2", "PHI2_MIN", "PHI3", "H3"]

PHI1, PHI2, PHI2_MIN, PHI3 = 0.5, 1.0, -0.125, 0.75 + np.sqrt(2) / 2  # sup|φ'|, sup φ'', inf φ'', sup|φ'''|
H3 = 48 * np.sqrt(5) / 125  # sup_t 3t/(1 + t²)^{5/2}
_EIG = 1 + 1e-10


@dataclass(frozen=True)
class Clients:
    """One instance's n clients (module docstring); methods are batched over leading axes."""

    X: np.ndarray
    y: np.ndarray
    kappa: float
    nu: float
    delta: float

    def __post_init__(self):
        if np.ndim(self.X) != 3 or np.shape(self.y) != np.shape(self.X)[:2]:
            raise ValueError(f"X must be (n, m, d) and y (n, m) (got {np.shape(self.X)}, {np.shape(self.y)})")
        for name in ("kappa", "nu", "delta"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be finite and > 0 (got {v!r})")

    def _zp(self, w, p):
        z = np.einsum("nmd,...nd->...nm", self.X, w) - self.y
        p = np.full(z.shape, 1.0 / self.y.shape[-1]) if p is None else p
        return z, p

    def value(self, w, p=None):
        """f_i at client points ``w`` ``(..., n, d)`` -> ``(..., n)``."""
        z, p = self._zp(w, p)
        ridge = np.sum(np.sqrt(self.delta**2 + w**2) - self.delta, axis=-1)
        return self.kappa * np.sum(p * 0.5 * np.log1p(z**2), axis=-1) + self.nu * ridge

    def grad(self, w, p=None):
        z, p = self._zp(w, p)
        c = self.kappa * p * z / (1 + z**2)
        return np.einsum("...nm,nmd->...nd", c, self.X) + self.nu * w / np.sqrt(self.delta**2 + w**2)

    def hvp(self, w, v, p=None):
        z, p = self._zp(w, p)
        c = self.kappa * p * (1 - z**2) / (1 + z**2) ** 2 * np.einsum("nmd,...nd->...nm", self.X, v)
        return (
            np.einsum("...nm,nmd->...nd", c, self.X)
            + self.nu * self.delta**2 / (self.delta**2 + w**2) ** 1.5 * v
        )

    def _clients(self, w):
        return np.broadcast_to(w[..., None, :], w.shape[:-1] + self.X.shape[:1] + w.shape[-1:])

    def F(self, w, alpha):
        """F(w) = (1/n)Σ_i f_i(w − α∇f_i(w)) for ``w`` ``(..., d)``."""
        W = self._clients(w)
        return np.mean(self.value(W - alpha * self.grad(W)), axis=-1)

    def F_grad(self, w, alpha):
        """∇F(w) = (1/n)Σ_i (I − α∇²f_i(w))∇f_i(w − α∇f_i(w))."""
        W = self._clients(w)
        g = self.grad(W - alpha * self.grad(W))
        return np.mean(g - alpha * self.hvp(W, g), axis=-2)


def nc_constants(X, y, kappa, nu, delta):
    """Valid constants of a batch ``X (T, n, m, d)``, ``y (T, n, m)``, ``kappa, nu, delta (T,)``:
    dict of ``(T,)`` arrays and how each was obtained (module docstring)."""
    T, n, m, d = X.shape
    k, nu, de = (np.asarray(v, float).reshape(T, 1) for v in (kappa, nu, delta))
    r = np.sqrt(np.sum(X**2, axis=-1))  # (T, n, m)
    lam = np.linalg.eigvalsh(np.einsum("tnmd,tnme->tnde", X, X) / m)[..., -1] * _EIG
    Bc = k * PHI1 * np.minimum(r.mean(-1), np.sqrt(lam))  # Cauchy part of B_i
    vals = {
        "L": np.max(k * PHI2 * lam + nu / de, axis=1),
        "rho": np.max(k * PHI3 * np.mean(r**3, -1) + H3 * nu / de**2, axis=1),
        "B": np.max(Bc + nu * np.sqrt(d), axis=1),
        "sG2": np.max(k**2 * PHI1**2 * np.mean(r**2, -1), axis=1),
        "sH2": np.max(k**2 * PHI2**2 * np.mean(r**4, -1), axis=1),
        "gG2": np.mean(Bc**2, axis=1),
        "gH2": np.mean((k * PHI2 * np.mean(r**2, -1)) ** 2, axis=1),
    }
    how = {
        "L": "bound: max_i kappa lambda_max(X_i^T X_i/m) + nu/delta (phi'' in [-1/8, 1])",
        "rho": "bound: max_i kappa (3/4 + sqrt2/2) mean_j ||x_ij||^3 + (48 sqrt5/125) nu/delta^2",
        "B": "bound: max_i (kappa/2) min(mean_j ||x_ij||, sqrt(lambda_max(X_i^T X_i/m))) + nu sqrt(d)",
        "sigma_G^2": "bound: max_i (kappa^2/4) mean_j ||x_ij||^2 (variance <= second moment)",
        "sigma_H^2": "bound: max_i kappa^2 mean_j ||x_ij||^4 (Frobenius, rank one)",
        "gamma_G^2, gamma_H^2": "bounds: second moments of the Cauchy parts (the ridge cancels)",
        "F* (inf F)": "certified lower bound: branch and bound on the box outside which F > F(w_0)",
    }
    return vals, how


def f_star(cl, alpha, w0, L, rho, B, rtol=1e-3, max_cells=400_000):
    """``(lower, upper, w_best)``: lower <= inf F <= upper = F(w_best) (module docstring)."""
    w0 = np.asarray(w0, float)
    if w0.shape != (2,) or cl.X.shape[-1] != 2:
        raise ValueError(
            f"f_star works on the plane: w0 and the features need d = 2 (got w0 {w0.shape}, X {cl.X.shape})"
        )
    if not (alpha >= 0 and min(L, rho, B) >= 0 and 0 < rtol < 1):
        raise ValueError(
            f"f_star needs alpha, L, rho, B >= 0 and 0 < rtol < 1 (got {alpha}, {L}, {rho}, {B}, {rtol})"
        )
    LF = (1 + alpha * L) ** 2 * L + alpha * rho * B
    U = float(cl.F(w0, alpha))
    best = w0
    half = U / cl.nu + alpha * B + cl.delta
    n0 = 16
    g = (np.arange(n0) + 0.5) / n0 * 2 * half - half
    c = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    h = half / n0
    lower = -np.inf
    for _ in range(60):
        Fc = cl.F(c, alpha)
        k = int(np.argmin(Fc))
        if Fc[k] < U:
            U, best = float(Fc[k]), c[k]
        rad = h * np.sqrt(2)
        lo = Fc - np.linalg.norm(cl.F_grad(c, alpha), axis=-1) * rad - LF * rad**2 / 2
        keep = lo < U
        lower = float(np.min(lo[keep])) if keep.any() else U
        if U - lower <= rtol * max(float(cl.F(w0, alpha)) - lower, 0.0) or 4 * keep.sum() > max_cells:
            break
        c, h = c[keep], h / 2
        c = (c[:, None, :] + h * np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]])).reshape(-1, 2)
    margin = 1e-10 * (1 + abs(U))
    return min(lower, U) - margin, U, best
