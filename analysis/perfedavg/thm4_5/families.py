"""The quadratic and logistic instance families of perfedavg.thm4_5 (Per-FedAvg, Theorem 4.5 and
Corollary 4.6): the generators of their batches, the designed quadratic cases (converged GD, started
at the optimum, outside the step condition, the Corollary 4.6 sweeps, the finding's instance) and
the sizes of both families.  The nonconvex family's generator is in ``nonconvex_family``; the
statement and its entry point ``instances`` in ``moreau.analysis.perfedavg.thm4_5``.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.instances import log_uniform, logistic_batch
from moreau.analysis.perfedavg.logistic_runs import logistic_constants

__all__ = ["DIM", "FINDING", "LOG", "M", "N"]

#: the minimal instance of the finding: exact lhs / rhs = 2.0 (closed form, 2e9 rounds)
FINDING = {"beta": 1e-12, "tau": 50_000, "K": 2_000_000_000}

N, M, DIM = 2, 4, 3
LOG = {"n": 4, "m": 8, "d": 3, "K": 3, "R": 256}


def _samples(rng, T, L, n, spread):
    delta = rng.standard_normal((T, n, DIM)) * L[:, None, None] * spread[:, None, None]
    delta -= delta.mean(axis=1, keepdims=True)
    noise = rng.standard_normal((T, n, M, DIM)) * L[:, None, None, None]
    noise -= noise.mean(axis=2, keepdims=True)
    return rng.standard_normal((T, 1, 1, DIM)) * L[:, None, None, None] + delta[:, :, None, :] + noise


def _quadratic(rng, T):
    L = log_uniform(rng, 0.2, 5.0, T)
    a = L[:, None] * rng.uniform(0.05, 1.0, (T, DIM))
    a[:, -1] = L
    a[::4, 0] = 1e-3 * L[::4]  # nearly flat direction (convex boundary)
    C = _samples(rng, T, L, N, rng.uniform(0.0, 2.0, T))
    cbar = C.mean(axis=(1, 2))
    wstar = cbar / a
    tau = rng.integers(1, 5, T)
    S = rng.integers(1, N + 1, T)
    alpha = rng.uniform(0.0, 1.0, T) / L
    alpha[::3] = 1 / L[::3]
    alpha = np.maximum(alpha, 1e-3 / L)
    LF = 4 * L
    beta = rng.uniform(0.05, 1.0, T) / (10 * tau * LF)
    beta[1::3] = 1 / (10 * tau[1::3] * LF[1::3])
    inv = np.array([0.0, 1.0, 0.5, 0.25])
    invD, invD1 = inv[rng.integers(0, 4, T)], inv[rng.integers(0, 4, T)]
    K = rng.integers(5, 31, T)
    w0 = wstar + rng.standard_normal((T, DIM)) * log_uniform(rng, 0.1, 30.0, T)[:, None]
    g = np.arange(T)
    conv, opt, div = g[-9:-6], g[-6:-3], g[-3:]
    tau[conv], S[conv], alpha[conv], K[conv] = 1, N, 1e-3 / L[conv], 150
    beta[conv], invD[conv], invD1[conv] = 1 / (10 * LF[conv]), 0.0, 0.0
    w0[conv] = wstar[conv] + np.eye(DIM)[-1] * 10 * rng.uniform(0.5, 2, conv.size)[:, None]
    w0[opt], S[opt], tau[opt] = wstar[opt], np.array([1, N, N]), np.array([1, 2, 1])
    invD1[opt] = np.array([0.0, 1.0, 1.0])  # client sampling (tau = 1) or batch noise only
    tau[div], S[div], alpha[div], K[div], invD[div], invD1[div] = 1, N, 1e-3 / L[div], 30, 0.0, 0.0
    beta[div] = rng.uniform(9.0, 10.0, div.size) / LF[div]
    sw = g[:4]  # Corollary 4.6 sweeps: L = 0.1, well conditioned
    a[sw] = 0.1 * np.sort(rng.uniform(0.5, 1.0, (sw.size, DIM)), axis=1)
    a[sw, -1] = 0.1
    C[sw] = C[sw] * (0.1 / L[sw])[:, None, None, None]
    alpha[sw] = rng.uniform(1.0, 4.0, sw.size)  # alpha L in [0.1, 0.4]
    w0[sw] = C[sw].mean(axis=(1, 2)) / a[sw] + rng.standard_normal((sw.size, DIM))
    S[sw], invD[sw], invD1[sw] = np.array([N, 1, N, 1]), 0.0, np.array([0.0, 0.0, 1.0, 1.0])
    w0[sw[1::2]] = C[sw[1::2]].mean(axis=(1, 2)) / a[sw[1::2]]  # client sampling from w*: lhs ~ eps^(1/2)
    fi = g[4]  # the finding (see findings): d = 1 padded to 3
    a[fi], C[fi], alpha[fi], S[fi], tau[fi], invD[fi], invD1[fi] = 1.0, 0.0, 0.01, 1, FINDING["tau"], 0.0, 0.0
    C[fi, :, :, 0] = np.array([1.0, -1.0])[:, None]
    beta[fi], K[fi], w0[fi] = FINDING["beta"], FINDING["K"], 0.0
    return {
        "a": a,
        "C": C,
        "alpha": alpha,
        "beta": beta,
        "tau": tau.astype(float),
        "K": K.astype(float),
        "S": S.astype(float),
        "invD": invD,
        "invD1": invD1,
        "w0": w0,
        "sweep": (g < 4).astype(float),
        "closed": (g == 4).astype(float),
    }


def _logistic(rng, T):
    n, m, d = LOG["n"], LOG["m"], LOG["d"]
    lb = logistic_batch(rng, T * n, m, d, scale=1.0)
    X = lb["X"].reshape(T, n, m, d) + rng.standard_normal((T, n, 1, d))
    y = lb["y"].reshape(T, n, m)
    vals, _ = logistic_constants(X, y)
    L, B, rho = vals["L"], vals["B"], vals["rho"]
    tau = rng.integers(1, 4, T)
    alpha = rng.uniform(0.05, 1.0, T) / L
    alpha[::3] = 1 / L[::3]
    LF = 4 * L + alpha * rho * B
    beta = rng.uniform(0.1, 1.0, T) / (10 * tau * LF)
    beta[1::3] = 1 / (10 * tau[1::3] * LF[1::3])
    return {
        "X": X,
        "y": y,
        "alpha": alpha,
        "beta": beta,
        "tau": tau.astype(float),
        "S": rng.integers(1, n + 1, T).astype(float),
        "D": rng.integers(1, 4, (T, 3)).astype(float),
        "w0": rng.standard_normal((T, d)) * 2,
        "seed": rng.integers(0, 2**31, T).astype(float),
    }
