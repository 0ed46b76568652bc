r"""sgd.nonconvex on logistic models and Per-FedAvg meta-objectives: Monte Carlo with intervals.

F = f (logistic, μ = 0: convex, inf F = min f) or F(w) = f(w − α∇f(w)) with α = 1/L_f
(nonconvex on most instances; inf F = min f, attained at f's minimiser), L = L_f + αρB
(Lemma 4.2's proof with ‖I − α∇²f‖ ≤ 1 for convex f: a bound, not the exact constant; it
enters the step rule and the bound consistently).  ∇F(w) = (I − α∇²f(w))∇f(w − α∇f(w))
(eq. (5) of Per-FedAvg; tests compare it with ``moreau.meta_objective``).

Noise ξ = ζ C∇F(x) + S^{1/2}w with ζ a Rademacher sign, w standard Gaussian, C = √M U (U
orthogonal), tr S = σ²: E‖ξ‖² = M‖∇F‖² + σ² exactly.  The draws come from the instance's
``noise_seed`` (the batch replays).  For each horizon T ∈ {1, 4, 16, 64}, P paths of SGD
with η = η_0/√T; per path the average of ‖∇F(x^t)‖² over t < T, which is bounded by (2B)²,
so the normal interval of the mean over paths (level ``LEVEL``) is a CLT interval of a
bounded variable.  The horizon reported per instance is the one whose interval's lower
end is largest relative to the bound.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

import moreau as mo

from ._instances import log_uniform, logistic_batch, orthogonal

__all__ = ["LEVEL", "instances", "meta_grad", "path_averages"]

T_MC, PATHS, LEVEL = np.array([1, 4, 16, 64]), 64, 0.999


def meta_grad(f, alpha, w):
    """∇F(w) for F(w) = f(w − α∇f(w)): ``(I − α∇²f(w)) ∇f(w − α∇f(w))``; ``w`` ``(..., n, d)``."""
    a = np.asarray(alpha)[..., None]
    g2 = np.asarray(f.grad(w - a * np.asarray(f.grad(w))))
    return g2 - a * np.asarray(f.hvp(w, g2))


def instances(rng, T, newton_min):
    lb = logistic_batch(rng, T, 40, 3, mu=0.0, scale=2.0)
    X, y = lb["X"], lb["y"]
    f = mo.Logistic(X, y)
    Lf, rho, B = (np.asarray(c) for c in (f.curvature_bounds()[1], f.hessian_lipschitz(), f.gradient_bound()))
    alpha = np.where(np.arange(T) % 2 == 0, 0.0, 1 / Lf)  # F = f (convex) / meta-objective (nonconvex)
    L = Lf + alpha * rho * B
    x0 = 2 * rng.standard_normal((T, 3)) * log_uniform(rng, 0.3, 3.0, T)[:, None]
    Fstar = f.value(newton_min(f, np.zeros_like(x0)))   # inf F = min f; Newton's value >= it: h0 errs low
    h0 = np.asarray(mo.meta_objective(f, alpha).value(x0)) - Fstar
    r = np.arange(T) % 4  # eta_0: square-root branch / min = 1/(L(M+1)) / below the min / above 1/(L(M+1))
    M = np.where(np.arange(T) % 3 == 0, 0.0, rng.uniform(0.0, 2.0, T))
    first = 1 / (L * (M + 1))
    w = log_uniform(rng, 0.01, 100.0, T)
    w[r == 0] = log_uniform(rng, 1.0, 30.0, np.sum(r == 0))
    w[r == 1] = log_uniform(rng, 1e-3, 1.0, np.sum(r == 1))
    s2 = w * 2 * h0 * L * (M + 1) ** 2
    sq = np.sqrt(2 * h0 / (L * s2))
    eta0 = np.minimum(first, sq)
    eta0[r == 0] = sq[r == 0]
    eta0[r == 2] *= rng.uniform(0.01, 1.0, np.sum(r == 2))
    eta0[r == 3] = first[r == 3] * rng.uniform(1.1, 1.99, np.sum(r == 3))
    U = orthogonal(rng, T, 3)
    W = rng.standard_normal((T, 3, 3))
    S = W @ np.swapaxes(W, 1, 2)
    S = S * (s2 / np.trace(S, axis1=1, axis2=2))[:, None, None]
    return {"X": X, "y": y, "alpha": alpha, "L": L, "B": (1 + alpha * Lf) * B, "Fstar": Fstar, "x0": x0,
            "M": M, "s2": s2, "eta0": eta0, "C": np.sqrt(M)[:, None, None] * U, "S": (S + np.swapaxes(S, 1, 2)) / 2,
            "noise_seed": rng.integers(0, 2**62, T)}


def path_averages(batch):
    """``(mean, se)``, each ``(len(T_MC), n)``: (1/T) Σ_{t<T} ‖∇F(x^t)‖² over ``PATHS`` SGD paths."""
    f = mo.Logistic(batch["X"], batch["y"])
    alpha, C, S, x0 = batch["alpha"], batch["C"], batch["S"], batch["x0"]
    ev, V = np.linalg.eigh(S)
    Sh = (V * np.sqrt(np.maximum(ev, 0))[:, None, :]) @ np.swapaxes(V, 1, 2)
    gens = [np.random.default_rng(int(s)) for s in batch["noise_seed"]]
    n, d = x0.shape
    mean, se = np.zeros((T_MC.size, n)), np.zeros((T_MC.size, n))
    for k, T in enumerate(T_MC):
        zeta = np.stack([g.choice([-1.0, 1.0], (T, PATHS)) for g in gens], axis=-1)      # (T, P, n)
        w = np.stack([g.standard_normal((T, PATHS, d)) for g in gens], axis=-2)           # (T, P, n, d)
        eta = (batch["eta0"] / np.sqrt(T))[:, None]
        x, acc = np.broadcast_to(x0, (PATHS, n, d)).copy(), np.zeros((PATHS, n))
        for t in range(T):
            g = meta_grad(f, alpha, x)
            acc += np.sum(g**2, axis=-1)
            xi = zeta[t][..., None] * np.einsum("nij,pnj->pni", C, g) + np.einsum("nij,pnj->pni", Sh, w[t])
            x = x - eta * (g + xi)
        avg = acc / T
        mean[k], se[k] = avg.mean(axis=0), avg.std(axis=0, ddof=1) / np.sqrt(PATHS)
    return mean, se


def interval(mean, se):
    q = stats.norm.ppf(0.5 + LEVEL / 2)
    return mean - q * se, mean + q * se
