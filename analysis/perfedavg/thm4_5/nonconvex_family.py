r"""Theorem 4.5's nonconvex family: instances and their claim-independent sides.

Instances: n = 4 clients of m = 6 samples, d = 2 (the branch and bound of F* is on the plane);
labels from two regression modes a, b = a + 3u (‖u‖ = 1), client i taking mode a with
probability q_i ∈ [1/4, 3/4], features N(0, I) plus a client shift N(0, I/4), label noise 0.1;
κ = 1, ν ∈ [0.02, 0.1], δ = 1 (see ``perfedavg.thm4_5.cauchy_regression``); α ∈ (0, 1/L] (a third at 1/L).
Kinds: exact runs (S = n, full batches: no randomness, one run), τ ∈ {1, 1, 1, 2}, K = 600 (300
for τ = 2), β at 1/(10τL_F) (one at a random fraction of it), the first two started where
⟨∇F(w_0), w_0 − w*⟩ < 0 (on the segment from a non-global local minimum of a 61² grid towards the
grid's minimum; data redrawn until there are two), the third 1.5 from mode a, the fourth on the
ridge between the modes; Monte Carlo runs (256 per instance): τ ∈ {1, 2, 3},
S ∈ {1, ..., 4} (one with τ = 1 and client sampling, one with S = n and τ = 3), D, D′, D″ ∈
{full, 1, 2, 3}, K = 4, β ∈ (0, 1/(10τL_F)], started near the ridge.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.perfedavg.thm4_5.cauchy_regression import Clients, f_star, nc_constants
from moreau.analysis.perfedavg.thm4_5.nonconvex_runs import nc_lhs, negative_curvature

__all__ = ["NC", "nc_instances", "nc_prepare", "nc_clients"]

NC = {"n": 4, "m": 6, "d": 2, "sep": 6.0, "R": 256, "K_mc": 4, "K_exact": 600, "exact": 4}


def nc_clients(batch, i):
    return Clients(
        batch["X"][i],
        batch["y"][i],
        float(batch["kappa"][i]),
        float(batch["nu"][i]),
        float(batch["delta"][i]),
    )


def _data(rng, T):
    n, m, d = NC["n"], NC["m"], NC["d"]
    a = rng.standard_normal((T, d))
    u = rng.standard_normal((T, d))
    b = a + NC["sep"] * u / np.linalg.norm(u, axis=1, keepdims=True)
    q = rng.uniform(0.25, 0.75, (T, n, 1))
    X = rng.standard_normal((T, n, m, d)) + 0.5 * rng.standard_normal((T, n, 1, d))
    mode = np.where((rng.random((T, n, m)) < q)[..., None], a[:, None, None], b[:, None, None])
    y = np.sum(X * mode, -1) + 0.1 * rng.standard_normal((T, n, m))
    return a, b, X, y, rng.uniform(0.02, 0.1, T)


def _far_side(cl, alpha, a, b, N=61):
    """A start w with <grad F(w), w - w_g> < 0 (None if the grid finds one local minimum): on the
    segment from a non-global local minimum of an N^2 grid towards the grid's minimum w_g."""
    lo, hi = np.minimum(a, b) - 2, np.maximum(a, b) + 2
    g = np.stack(np.meshgrid(*(np.linspace(lo[k], hi[k], N) for k in range(2)), indexing="ij"), -1)
    Fg = cl.F(g, alpha)
    P = np.pad(Fg, 1, constant_values=np.inf)
    low = np.ones(Fg.shape, bool)
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            if dx or dy:
                low &= Fg < P[1 + dx : 1 + dx + N, 1 + dy : 1 + dy + N]
    mins = g[low]
    if len(mins) < 2:
        return None
    wg, wl = mins[np.argmin(Fg[low])], mins[np.argsort(Fg[low])[1]]
    seg = wl + np.linspace(0.01, 0.5, 50)[:, None] * (wg - wl)
    lin = np.sum(cl.F_grad(seg, alpha) * (seg - wg), -1)
    return seg[np.argmin(lin)] if lin.min() < 0 else None


def nc_instances(rng, T):
    n, d, E = NC["n"], NC["d"], NC["exact"]
    a, b, X, y, nu = _data(rng, T)
    kappa, delta = np.ones(T), np.ones(T)
    far = np.full((T, d), np.nan)
    for i in range(min(2, E, T)):  # redraw until two basins and a far-side start
        for _ in range(20):
            vals, _ = nc_constants(X[i : i + 1], y[i : i + 1], kappa[:1], nu[i : i + 1], delta[:1])
            w = _far_side(Clients(X[i], y[i], 1.0, nu[i], 1.0), 1 / vals["L"][0], a[i], b[i])
            if w is not None:
                far[i] = w
                break
            a[i], b[i], X[i], y[i], nu[i] = (v[0] for v in _data(rng, 1))
    vals, _ = nc_constants(X, y, kappa, nu, delta)
    L, B, rho = vals["L"], vals["B"], vals["rho"]
    alpha = rng.uniform(0.05, 1.0, T) / L
    alpha[::3] = 1 / L[::3]
    alpha[: min(2, E, T)] = 1 / L[: min(2, E, T)]  # the far-side starts were found for alpha = 1/L
    g = np.arange(T)
    ex = g < E
    tau = np.where(ex, 1, rng.integers(1, 4, T))
    if T > 3:
        tau[3] = 2  # an exact run with tau = 2
    S = np.where(ex, n, rng.integers(1, n + 1, T))
    D = np.where(ex[:, None], 0, rng.integers(0, 4, (T, 3)))
    if T > E:
        tau[E], S[E] = 1, min(S[E], n - 1)  # client sampling with tau = 1 (the reading)
    if T > E + 1:
        tau[E + 1], S[E + 1] = 3, n  # full participation, tau = 3
    LF = 4 * L + alpha * rho * B
    beta = rng.uniform(0.1, 1.0, T) / (10 * tau * LF)
    beta[ex & (g != 1)] = 1 / (10 * tau[ex & (g != 1)] * LF[ex & (g != 1)])
    K = np.where(ex, np.where(tau == 1, NC["K_exact"], NC["K_exact"] // 2), NC["K_mc"])
    w0 = (a + b) / 2 + 0.5 * rng.standard_normal((T, d))
    if T > 2:
        u = rng.standard_normal(d)
        w0[2] = a[2] + 1.5 * u / np.linalg.norm(u)  # inside mode a's basin, off its minimum
    w0 = np.where(np.isnan(far), w0, far)
    return {
        "X": X,
        "y": y,
        "kappa": kappa,
        "nu": nu,
        "delta": delta,
        "alpha": alpha,
        "beta": beta,
        "tau": tau.astype(float),
        "K": K.astype(float),
        "S": S.astype(float),
        "D": D.astype(float),
        "w0": w0,
        "seed": rng.integers(0, 2**31, T).astype(float),
    }


def nc_prepare(batch, confidence):
    """Everything no formula of the claim enters: constants, F* bounds, the Monte Carlo lhs, ∇F(w_0),
    the fraction of iterates with negative curvature."""
    vals, how = nc_constants(batch["X"], batch["y"], batch["kappa"], batch["nu"], batch["delta"])
    T = batch["X"].shape[0]
    out = {k: np.zeros(T) for k in ("lhs", "lo", "hi", "F0", "Fstar", "Fbest", "lin", "negfrac")}
    for i in range(T):
        cl = nc_clients(batch, i)
        al, w0 = float(batch["alpha"][i]), batch["w0"][i]
        lo, up, best = f_star(cl, al, w0, vals["L"][i], vals["rho"][i], vals["B"][i])
        D = tuple(None if v == 0 else int(v) for v in batch["D"][i])
        rng = np.random.default_rng(int(batch["seed"][i]))
        mean, ci_lo, ci_hi, wb = nc_lhs(
            cl,
            al,
            float(batch["beta"][i]),
            int(batch["tau"][i]),
            int(batch["K"][i]),
            int(batch["S"][i]),
            D,
            w0,
            NC["R"],
            rng,
            confidence,
            vals["L"][i],
            vals["B"][i],
        )
        pts = wb[:, :, :16].reshape(-1, wb.shape[-1])
        out["negfrac"][i] = negative_curvature(cl, al, pts)[0]
        out["lhs"][i], out["lo"][i], out["hi"][i] = mean, ci_lo, ci_hi
        out["F0"][i], out["Fstar"][i], out["Fbest"][i] = float(cl.F(w0, al)), lo, up
        out["lin"][i] = float(np.dot(cl.F_grad(w0, al), w0 - best))
    out.update(
        vals=vals, how=how, exact=(batch["S"] >= batch["X"].shape[1]) & np.all(batch["D"] == 0, axis=1)
    )
    out.update({k: batch[k] for k in ("alpha", "beta", "tau", "K", "S", "D")}, n=batch["X"].shape[1], nc=True)
    return out
