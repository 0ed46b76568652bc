r"""Theorem 4.5 on nonconvex clients: Per-FedAvg runs and the Monte Carlo lhs.

``simulate`` is Algorithm 1 with the estimate (8) (Hessian variant) for any clients object with
``grad(w, p)`` and ``hvp(w, v, p)`` (batched over leading axes, weights ``p`` ``(..., n, m)``),
drawing its randomness exactly as ``moreau.fl.per_fedavg`` does (per round ``rng.random((R, n))``
for the client set when S < n, then per local step one ``rng.random((R, n, size))`` for each of
D, D′, D″ that is set, batches with replacement), so that on logistic clients it reproduces
``per_fedavg`` run for run (tests).  ``nc_lhs``: the average of ‖∇F(w̄_{k+1,t})‖² over the
run, R runs; each run's average lies in [0, ((1 + αL)B)²] (‖I − α∇²f_i‖ ≤ 1 + αL, ‖∇f_i‖ ≤ B:
the nonconvex clients have no ‖I − α∇²f_i‖ ≤ 1), so Hoeffding's inequality gives a rigorous
interval; a run without randomness (S = n, full batches) is done once, exactly.
``negative_curvature``: the fraction of points with λ_min(∇²F) < 0, ∇²F by central differences
of ∇F (a report of where the iterates go, not a certificate).
"""

from __future__ import annotations

import numpy as np

__all__ = ["simulate", "nc_lhs", "negative_curvature"]


def _batch_weights(rng, R, n, m, size):
    """Mini-batch weights ``(R, n, m)``: ``size`` samples with replacement, as moreau's sample_counts."""
    u = rng.random((R, n, size))
    k = np.minimum((u * m).astype(np.int64), m - 1)
    counts = np.zeros((R * n, m))
    np.add.at(counts, (np.repeat(np.arange(R * n), size), k.reshape(-1)), 1.0)
    return counts.reshape(R, n, m) / size


def simulate(cl, m, alpha, beta, tau, K, S, D, w0, R, rng):
    """``w_bar`` ``(K, tau, R, d)`` of R independent runs; ``D = (D, D′, D″)``, entries None: full."""
    w0 = np.asarray(w0, float)
    n, d = cl.X.shape[0], w0.shape[-1]
    if not (1 <= S <= n and tau >= 1 and K >= 1 and R >= 1 and len(D) == 3):
        raise ValueError(
            f"simulate needs 1 <= S <= n = {n}, tau, K, R >= 1 and D = (D, D', D'') "
            f"(got S={S}, tau={tau}, K={K}, R={R}, D={D})"
        )
    w = np.broadcast_to(w0, (R, d)).copy()
    bars = np.zeros((K, tau, R, d))
    for k in range(K):
        if S < n:
            idx = np.sort(np.argsort(rng.random((R, n)), axis=-1)[..., :S], axis=-1)
            on = np.zeros((R, n))
            np.put_along_axis(on, idx, 1.0, axis=-1)
        else:
            on = np.ones((R, n))
        W = np.broadcast_to(w[:, None, :], (R, n, d)).copy()
        for t in range(tau):
            bars[k, t] = np.sum(on[..., None] * W, axis=-2) / S
            p, p1, p2 = (None if s is None else _batch_weights(rng, R, n, m, s) for s in D)
            wt = W - alpha * cl.grad(W, p)
            g = cl.grad(wt, p1)
            W = W - beta * (g - alpha * cl.hvp(W, g, p2))
        W = np.where(on[..., None] > 0, W, w[:, None, :])
        w = np.sum(on[..., None] * W, axis=-2) / S
    return bars


def nc_lhs(cl, alpha, beta, tau, K, S, D, w0, R, rng, confidence, L, B):
    """``(mean, lo, hi, w_bar)`` of the lhs; one exact run when nothing is random."""
    n, m = cl.y.shape
    random = S < n or any(s is not None for s in D)
    R = R if random else 1
    wb = simulate(cl, m, alpha, beta, tau, K, S, D, w0, R, rng)
    runs = np.mean(np.sum(cl.F_grad(wb, alpha) ** 2, axis=-1), axis=(0, 1))  # (R,)
    mean = float(runs.mean())
    if not random:
        return mean, mean, mean, wb
    top = ((1 + alpha * L) * B) ** 2
    eps = top * np.sqrt(np.log(2 / (1 - confidence)) / (2 * R))
    return mean, max(mean - eps, 0.0), min(mean + eps, top), wb


def negative_curvature(cl, alpha, w, h=1e-5, tol=1e-7):
    """Fraction of the points ``w`` ``(P, d)`` where the smallest eigenvalue of ∇²F is < −tol."""
    d = w.shape[-1]
    E = np.eye(d) * h
    H = np.stack([(cl.F_grad(w + E[k], alpha) - cl.F_grad(w - E[k], alpha)) / (2 * h) for k in range(d)], -1)
    lam = np.linalg.eigvalsh((H + np.swapaxes(H, -1, -2)) / 2)[..., 0]
    return float(np.mean(lam < -tol)), lam
