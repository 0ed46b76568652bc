r"""Theorem 4.5 on logistic clients (μ = 0): Monte Carlo lhs and valid constants.

The lhs (1/(τK))Σ_kΣ_{t<τ} E‖∇F(w̄_{k+1,t})‖² is estimated from R independent runs of
``moreau.fl.per_fedavg`` (Hessian variant, batches D, D′, D″ with replacement, S of n clients per
round); ∇F = (1/n)Σ_i∇F_i from ``moreau.meta_objective`` (eq. (5)).  With α ≤ 1/L every ∇²f_i lies
between 0 and L·I, so ‖I − α∇²f_i‖ ≤ 1 and ‖∇F‖ ≤ B: each run's average lies in [0, B²] and
Hoeffding's inequality gives a rigorous interval at the stated level.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.perfedavg.lemma4_4 import _diversity_bounds

__all__ = ["logistic_lhs", "logistic_constants"]


def logistic_lhs(X, y, alpha, beta, tau, K, S, D, w0, R, rng, confidence):
    """One instance: ``(mean, lo, hi)`` of the lhs over ``R`` runs; ``X (n, m, d)``, ``y (n, m)``."""
    n, m, d = X.shape
    f = mo.Logistic(np.broadcast_to(X, (R, n, m, d)), np.broadcast_to(y, (R, n, m)))
    h = mo.fl.per_fedavg(
        f,
        alpha=alpha,
        beta=beta,
        tau=tau,
        rounds=K,
        S=S,
        D=D[0],
        D_prime=D[1],
        D_second=D[2],
        w0=np.broadcast_to(w0, (R, d)),
        rng=rng,
    )
    wb = np.asarray(h.w_bar)  # (K, tau, R, d)
    F = mo.meta_objective(mo.Logistic(X, y), alpha)
    g = np.asarray(F.grad(wb[..., None, :])).mean(axis=-2)  # (K, tau, R, d)
    runs = np.mean(np.sum(g**2, axis=-1), axis=(0, 1))  # (R,)
    B2 = float(np.max(np.asarray(mo.Logistic(X, y).gradient_bound()))) ** 2
    eps = B2 * np.sqrt(np.log(2 / (1 - confidence)) / (2 * R))
    mean = float(runs.mean())
    return mean, max(mean - eps, 0.0), min(mean + eps, B2)


def logistic_constants(X, y):
    """Valid constants of a batch ``X (T, n, m, d)``: dict of (T,) arrays and how each was obtained.

    L exact (λ_max(X_iᵀX_i)/(4m), attained at w = 0); B = max‖x_ij‖ ≥ sup‖∇f_i‖; ρ the documented
    ``hessian_lipschitz`` bound; σ_G² ≤ max_i (1/m)Σ_j‖x_ij‖² (variance ≤ second moment and
    ‖∇l_ij‖ ≤ ‖x_ij‖); σ_H² ≤ max_i (1/m)Σ_j max(‖x_ij‖²/4, L_i)² (the difference of two PSD matrices
    has spectral norm at most the larger norm); γ_G², γ_H²: the sup bounds of perfedavg.lemma4_4.
    """
    f = mo.Logistic(X, y)
    Li = np.asarray(f.curvature_bounds()[1])
    Bi = np.asarray(f.gradient_bound())
    r2 = np.sum(X**2, axis=-1)  # (T, n, m)
    gG2, gH2 = _diversity_bounds(X, y, Bi, Li)
    vals = {
        "L": Li.max(axis=1),
        "B": Bi.max(axis=1),
        "rho": np.asarray(f.hessian_lipschitz()).max(axis=1),
        "sG2": np.max(r2.mean(axis=-1), axis=1),
        "sH2": np.max(np.mean(np.maximum(r2 / 4, Li[..., None]) ** 2, axis=-1), axis=1),
        "gG2": gG2,
        "gH2": gH2,
    }
    how = {
        "L": "exact: max_i lambda_max(X_i^T X_i)/(4m)",
        "B": "bound: max_ij ||x_ij|| (mu = 0)",
        "rho": "bound: max_i (1/(6 sqrt 3)) (1/m) sum_j ||x_ij||^3",
        "sigma_G^2": "bound: max_i (1/m) sum_j ||x_ij||^2 (variance <= second moment)",
        "sigma_H^2": "bound: max_i (1/m) sum_j max(||x_ij||^2/4, L_i)^2 (spectral norm)",
        "gamma_G^2, gamma_H^2": "bounds: perfedavg.lemma4_4's sup bounds",
        "F* (inf F)": "bound: F* >= 0 (F_i >= 0); F(w_0) - F* <= F(w_0) makes the rhs larger, never smaller",
    }
    return vals, how
