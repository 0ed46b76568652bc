r"""The recorded minimal counterexamples of perfedavg.tv and perfedavg.w1 as printed (f = Σᵢ fᵢ).

Each is one row of the generators' batches (analysis/perfedavg/divergences/instances.py) with the
smallest sizes the printed claims fail at: d = 1, n = 2 clients, K = 2 atoms (K = 1 makes every
client the same Dirac mass: TV = W₁ = 0 and a right side 0).  The checkers' own ``evaluate``
computes both sides (TV, the W₁ linear program, B, L, L_𝒵, ρ_𝒵 and the sups over w) from these
fields.  With n = 2 and f = f₁ + f₂, ∇fᵢ − ∇f = −∇fⱼ (j the other client): the printed left side is
(‖∇f₁‖² + ‖∇f₂‖²)/2, which does not vanish as the clients become alike, while the right sides do.

* :func:`closed_form_instance`: the ``quadratic`` family's linear kind, l(z_k; w) = g_kᵀw on atoms
  z_k on a line (A = 0, h = 0, u = 0; D_kl = |z_k − z_l| as the generators' line layouts).
* :func:`logistic_instance`: the ``logistic`` family, atoms (x_k, y_k), D_kl = ‖x_k − x_l‖ + |y_k − y_l|
  as :func:`~moreau.analysis.perfedavg.divergences.instances.logistic_atoms_batch`, the left side a max
  over the given points w (here w = 0 only, where the logistic Hessian σ(s)σ(−s) = 1/4 is largest, so
  the Hessian side there is the exact sup over w).

The rate remark after (16) (``rate_dim``, ``rate_seed``) is not part of these rows: its smallest
failing instance is the data dimension k = 3, a Monte Carlo sweep (perfedavg.w1's second finding).
"""

from __future__ import annotations

import numpy as np

__all__ = ["closed_form_instance", "logistic_instance", "TV_MINIMAL", "W1_MINIMAL"]


def closed_form_instance(P, z, g):
    """One-row batch: clients' weights ``P (n, K)`` over atoms ``z (K,)`` on a line, linear losses
    l(z_k; w) = g_kᵀw with ``g (K, d)``."""
    P, z, g = np.asarray(P, float), np.asarray(z, float), np.asarray(g, float)
    K, d = g.shape
    return {
        "P": P[None],
        "g": g[None],
        "A": np.zeros((1, K, d, d)),
        "h": np.zeros((1, K, 2)),
        "u": np.zeros((1, d)),
        "D": np.abs(z[:, None] - z[None, :])[None],
    }


def logistic_instance(P, x, y, w):
    """One-row batch: weights ``P (n, K)`` over the atoms (x_k, y_k), ``x (K, d)``, ``y (K,)`` in {−1, 1},
    l(z; w) = log(1 + exp(−y xᵀw)), the left side evaluated at the points ``w (p, d)``."""
    P, x, y, w = (np.asarray(a, float) for a in (P, x, y, w))
    D = np.linalg.norm(x[:, None] - x[None, :], axis=-1) + np.abs(y[:, None] - y[None, :])
    return {"P": P[None], "X": x[None], "y": y[None], "D": D[None], "W": w[None]}


#: p₁ = δ_{z₁}, p₂ = (δ_{z₁} + δ_{z₂})/2: p = (3/4, 1/4), TV(p₁, p) = TV(p₂, p) = 1/4, so (14a)'s right
#: sides are 4B²/16 = B²/4 and 4L²/16 = L²/4 (Dirac masses, TV = 1/2, would give B² and L², which the
#: printed left sides never exceed at n = 2, as TV(pᵢ, p) = TV(p₁, p₂)/2 <= 1/2; (1/2, 1/2) is the simplest
#: weight in between)
HALF = [[1.0, 0.0], [0.5, 0.5]]
#: p₁ = δ_{z₁}, p₂ = δ_{z₂}: p = (1/2, 1/2), W₁(p₁, p) = W₁(p₂, p) = d(z₁, z₂)/2
DIRACS = [[1.0, 0.0], [0.0, 1.0]]

TV_MINIMAL = {
    # quadratic (linear kind): l(z; w) = w on both atoms z = 0, 1 (g = (1, 1): B = 1, L = 0), weights HALF:
    # ∇f₁ = ∇f₂ = 1, ∇f = 2, so the lhs is ((1 − 2)² + (1 − 2)²)/2 = 1 > rhs 4·1²·(1/16) = 1/4 (ratio 4)
    "quadratic": closed_form_instance(HALF, z=[0.0, 1.0], g=[[1.0], [1.0]]),
    # logistic: one feature x = 1 with both labels y = ±1 (B = 1, L = 1/4), weights HALF, w = 0: every atom's
    # Hessian is x²/4 = 1/4, so ∇²f₁ = ∇²f₂ = 1/4, ∇²f = 1/2 and the γ_H lhs is 1/16 > rhs 4·(1/4)²·(1/16)
    # = 1/64 (ratio 4); the γ_G part holds there (lhs 1/8 < 1/4)
    "logistic": logistic_instance(HALF, x=[[1.0], [1.0]], y=[1.0, -1.0], w=[[0.0]]),
}

W1_MINIMAL = {
    # quadratic (shared A = 0): l(z; w) = z w on atoms z = 0, 1 (g = (0, 1): L_Z = |1 − 0|/1 = 1, ρ_Z = 0),
    # weights DIRACS (W₁(pᵢ, p) = 1/2): ∇f₁ = 0, ∇f₂ = 1, so the lhs is (1² + 0²)/2 = 1/2 > rhs 1²·(1/4) = 1/4
    # (ratio 2; g = (1, 1) gives L_Z = 0 and a right side 0, g = (−1, 1) equality)
    "quadratic": closed_form_instance(DIRACS, z=[0.0, 1.0], g=[[0.0], [1.0]]),
    # logistic: atoms (1, 1) and (1, −1) (d = |y − y'| = 2, W₁(pᵢ, p) = 1), weights DIRACS, w = 0: the checker's
    # ρ_Z bound max(x², x², |x² − x²|)/(4·2) = 1/8 gives rhs (1/8)²·1 = 1/64 < lhs 1/16 (both Hessians 1/4;
    # ratio 4; the two atoms' Hessians σ(w)σ(−w) coincide for every w, so the true ρ_Z is 0 and the printed
    # γ_H² 0); the γ_G part holds there (lhs 1/4 < 1)
    "logistic": logistic_instance(DIRACS, x=[[1.0], [1.0]], y=[1.0, -1.0], w=[[0.0]]),
}
