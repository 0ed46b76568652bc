r"""sgd.nonconvex on logistic models and Per-FedAvg meta-objectives: Monte Carlo with intervals.

F = f (logistic, μ = 0: convex, inf F = min f) or F(w) = f(w − α∇f(w)) with α = 1/L_f
(nonconvex on most instances; inf F = min f, attained at f's minimiser), L = L_f + αρB
(Lemma 4.2's proof with ‖I − α∇²f‖ ≤ 1 for convex f: a bound, not the exact constant; it
enters the step rule and the bound consistently).  ∇F(w) = (I − α∇²f(w))∇f(w − α∇f(w))
(eq. (5) of Per-FedAvg; tests compare it with ``moreau.meta_objective``).

Noise ξ = ζ C∇F(x) + ζ'‖∇F(x)‖q + S^{1/2}w with ζ, ζ' Rademacher signs, w standard Gaussian,
C = √M U (U orthogonal) and q = 0, or C = 0 and ‖q‖² = M (a fixed random direction), tr S = σ²:
E‖ξ‖² = M‖∇F‖² + σ² exactly.  The draws come from the instance's
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
from moreau.analysis.engine.instances import log_uniform, logistic_batch, orthogonal

__all__ = ["LEVEL", "instances", "meta_grad", "path_averages"]

T_MC, PATHS, LEVEL = np.array([1, 4, 16, 64]), 64, 0.999


def meta_grad(f, alpha, w):
    """∇F(w) for F(w) = f(w − α∇f(w)): ``(I − α∇²f(w)) ∇f(w − α∇f(w))``; ``w`` ``(..., n, d)``."""
    a = np.asarray(alpha)[..., None]
    g2 = np.asarray(f.grad(w - a * np.asarray(f.grad(w))))
    return g2 - a * np.asarray(f.hvp(w, g2))


def _multiplicative(rng, M):
    """``C = sqrt(M) U`` (Haar U) on even instances, ``q = sqrt(M) v`` (a random direction) on odd ones."""
    T = M.size
    U, v = orthogonal(rng, T, 3), rng.standard_normal((T, 3))
    odd = np.arange(T) % 2 == 1
    return {
        "C": np.where(odd[:, None, None], 0.0, np.sqrt(M)[:, None, None] * U),
        "q": np.where(odd[:, None], np.sqrt(M)[:, None] * v / np.linalg.norm(v, axis=-1, keepdims=True), 0.0),
    }


def instances(rng, T, newton_min):
    lb = logistic_batch(rng, T, 40, 3, mu=0.0, scale=2.0)
    X, y = lb["X"], lb["y"]
    f = mo.Logistic(X, y)
    Lf, rho, B = (np.asarray(c) for c in (f.curvature_bounds()[1], f.hessian_lipschitz(), f.gradient_bound()))
    alpha = np.where(np.arange(T) % 2 == 0, 0.0, 1 / Lf)  # F = f (convex) / meta-objective (nonconvex)
    L = Lf + alpha * rho * B
    x0 = 2 * rng.standard_normal((T, 3)) * log_uniform(rng, 0.3, 3.0, T)[:, None]
    Fstar = f.value(newton_min(f, np.zeros_like(x0)))  # inf F = min f; Newton's value >= it: h0 errs low
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
    # a Haar draw no longer used (_multiplicative draws its own U), kept so that every later draw
    # from rng, and so the instances of the recorded runs, stay what they were
    orthogonal(rng, T, 3)
    W = rng.standard_normal((T, 3, 3))
    S = W @ np.swapaxes(W, 1, 2)
    S = S * (s2 / np.trace(S, axis1=1, axis2=2))[:, None, None]
    return {
        "X": X,
        "y": y,
        "alpha": alpha,
        "L": L,
        "B": (1 + alpha * Lf) * B,
        "Fstar": Fstar,
        "x0": x0,
        "M": M,
        "s2": s2,
        "eta0": eta0,
        **_multiplicative(rng, M),
        "S": (S + np.swapaxes(S, 1, 2)) / 2,
        "noise_seed": rng.integers(0, 2**62, T),
    }


def _simulate(grad, x0, C, S, q, seeds, steps, value=None):
    """SGD paths with the noise ζ C∇F + ζ'‖∇F‖q + S^{1/2}w; ``steps`` ``(N, n)``.  Returns per path the sums
    Σ_{t<N} ‖∇F(x^t)‖² ``(P, n)`` and, with ``value``, ``value(x^t)`` for t = 0..N ``(N + 1, P, n)``."""
    ev, V = np.linalg.eigh(S)
    Sh = (V * np.sqrt(np.maximum(ev, 0))[:, None, :]) @ np.swapaxes(V, 1, 2)
    gens = [np.random.default_rng(int(s)) for s in seeds]
    N, (n, d) = steps.shape[0], x0.shape
    zeta = np.stack([g.choice([-1.0, 1.0], (N, PATHS, 2)) for g in gens], axis=-2)  # (N, P, n, 2)
    w = np.stack([g.standard_normal((N, PATHS, d)) for g in gens], axis=-2)  # (N, P, n, d)
    x, acc = np.broadcast_to(x0, (PATHS, n, d)).copy(), np.zeros((PATHS, n))
    vals = [] if value is None else [value(x)]
    for t in range(N):
        g = grad(x)
        acc += np.sum(g**2, axis=-1)
        xi = (
            zeta[t][..., 0, None] * np.einsum("nij,pnj->pni", C, g)
            + np.einsum("nij,pnj->pni", Sh, w[t])
            + zeta[t][..., 1, None] * np.linalg.norm(g, axis=-1, keepdims=True) * q
        )
        x = x - steps[t][:, None] * (g + xi)
        if value is not None:
            vals.append(value(x))
    return acc, (np.array(vals) if value is not None else None)


def path_averages(batch):
    """``(mean, se)``, each ``(len(T_MC), n)``: (1/T) Σ_{t<T} ‖∇F(x^t)‖² over ``PATHS`` SGD paths."""
    f = mo.Logistic(batch["X"], batch["y"])
    grad = lambda x: meta_grad(f, batch["alpha"], x)  # noqa: E731
    mean, se = np.zeros((T_MC.size, batch["x0"].shape[0])), np.zeros((T_MC.size, batch["x0"].shape[0]))
    for k, T in enumerate(T_MC):
        steps = np.broadcast_to(batch["eta0"] / np.sqrt(T), (T, batch["eta0"].size))
        # a separate stream per horizon: the seed and T together
        acc, _ = _simulate(
            grad, batch["x0"], batch["C"], batch["S"], batch["q"], batch["noise_seed"] + int(T), steps
        )
        avg = acc / T
        mean[k], se[k] = avg.mean(axis=0), avg.std(axis=0, ddof=1) / np.sqrt(PATHS)
    return mean, se


def instances_sc(rng, T, newton_min):
    """Strongly convex logistic models (ridge mu in [0.05, 0.3]) with the noise model above."""
    lb = logistic_batch(rng, T, 40, 3, mu=log_uniform(rng, 0.05, 0.3, T), scale=2.0)
    f = mo.Logistic(lb["X"], lb["y"], mu=lb["mu"])
    mu, L = (np.asarray(c) for c in f.curvature_bounds())
    xs = newton_min(f, np.zeros((T, 3)))
    Fstar = f.value(xs) - np.sum(np.asarray(f.grad(xs)) ** 2, axis=-1) / (2 * mu)  # certified lower bound
    x0 = 2 * rng.standard_normal((T, 3)) * log_uniform(rng, 0.3, 3.0, T)[:, None]
    x0[::4] = xs[::4]  # start at the minimiser: the noise floor alone
    M = np.where(np.arange(T) % 3 == 0, 0.0, rng.uniform(0.0, 2.0, T))
    s2 = log_uniform(rng, 1e-2, 10.0, T)
    # a Haar draw no longer used (_multiplicative draws its own U), kept so that every later draw
    # from rng, and so the instances of the recorded runs, stay what they were
    orthogonal(rng, T, 3)
    W = rng.standard_normal((T, 3, 3))
    S = W @ np.swapaxes(W, 1, 2)
    S = S * (s2 / np.trace(S, axis1=1, axis2=2))[:, None, None]
    v = np.where(np.arange(T) % 2 == 0, 1.0, log_uniform(rng, 1.0, 5.0, T))  # delta = v 2L(M+1)/mu
    u = np.where(np.arange(T) % 2 == 1, 0.999, rng.uniform(0.3, 1.0, T))  # eta = u/(L(M+1))
    return {
        "X": lb["X"],
        "y": lb["y"],
        "mu": lb["mu"],
        "Fstar": Fstar,
        "x0": x0,
        "M": M,
        "s2": s2,
        **_multiplicative(rng, M),
        "S": (S + np.swapaxes(S, 1, 2)) / 2,
        "eta": u / (L * (M + 1)),
        "delta": v * 2 * L * (M + 1) / mu,
        "noise_seed": rng.integers(0, 2**62, T),
    }


def gaps_sc(batch, N):
    """``(mean, se)`` of F(x^t) − F* for t = 0..N, each ``(N + 1, n)``, for the decreasing rule (i) and the
    constant step (ii): a tuple of two pairs."""
    f = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
    mu = np.asarray(f.curvature_bounds()[0])
    value = lambda x: np.asarray(f.value(x)) - batch["Fstar"]  # noqa: E731
    t = np.arange(N)[:, None]
    out = []
    for k, steps in enumerate((2 / (mu * (t + batch["delta"])), np.broadcast_to(batch["eta"], (N, mu.size)))):
        _, v = _simulate(
            f.grad, batch["x0"], batch["C"], batch["S"], batch["q"], batch["noise_seed"] + k, steps, value
        )
        out.append((v.mean(axis=1), v.std(axis=1, ddof=1) / np.sqrt(PATHS)))
    return tuple(out)


def interval(mean, se):
    q = stats.norm.ppf(0.5 + LEVEL / 2)
    return mean - q * se, mean + q * se
