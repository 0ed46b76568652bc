r"""perfedavg.propf1 on logistic clients: instances, Monte Carlo drift moments with rigorous
intervals, valid constants.

Drift.  For t = 1..T_MAX every client runs t Hessian-variant Per-FedAvg steps (56) from w_0
(``moreau.fl.per_fedavg`` with rounds = 1, S = n, batches D, D′, D″ drawn with replacement; a
batch size 0 means the full batch), R independent runs.  The runs of horizon t reuse the same seed:
per_fedavg draws the batches step by step in a fixed order, so the t-step iterates are the first t
steps of one trajectory.  Per run Y₁ = (1/n)Σ‖w^i_t − w̄_t‖ and Y₂ = (1/n)Σ‖w^i_t − w̄_t‖².

Range (what makes Hoeffding's interval rigorous).  With μ = 0 every per-sample gradient has
‖∇l_ij‖ ≤ ‖x_ij‖ ≤ B and every per-sample Hessian lies between 0 and (‖x_ij‖²/4)I, so a batch
Hessian H̃ has ‖I − αH̃‖ ≤ c = max(1, αH_max − 1), H_max = max_ij ‖x_ij‖²/4, and each local step
moves a client by at most βcB.  After t steps ‖w^i_t − w_0‖ ≤ tβcB, hence ‖w^i_t − w̄_t‖ ≤ 2tβcB:
Y₁ ∈ [0, 2tβcB], Y₂ ∈ [0, (2tβcB)²] on every run, whatever the iterates (no region argument).
Hoeffding at level 1 − (1 − CONFIDENCE)/T_MAX per t (a union bound over the horizons).

Constants (``perfedavg.logistic_runs.logistic_constants``): global sups over R^d, so they hold
along any trajectory: L exact (λ_max(X_iᵀX_i)/(4m), attained at w = 0); B = max‖x_ij‖; ρ the
documented Hessian-Lipschitz bound; σ_G², σ_H², γ_G², γ_H² valid sup bounds (perfedavg.lemma4_4's).
The rhs is computed from them: it is at least the paper's rhs with the exact sups, so an lhs
interval above it is a certified failure of the statement, and a pass is a pass of the (looser)
bound with these constants.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Sides
from moreau.analysis.engine.instances import log_uniform, logistic_batch
from moreau.analysis.perfedavg.logistic_runs import logistic_constants
from moreau.analysis.perfedavg.propf1.worst_round import worst_t

__all__ = ["N", "M", "DIM", "T_MAX", "R", "CONFIDENCE", "instances", "drift_mc", "step_bound", "evaluate"]

N, M, DIM, T_MAX, R = 4, 6, 3, 4, 1000
CONFIDENCE = 0.999


def instances(rng, T):
    """``T`` logistic instances: n clients of m samples (client-shifted features, well-specified labels),
    α ∈ (0, 1/L] (α = 1/L on a third, a few beyond 1/L: not applicable), τ ∈ 1..T_MAX, β log-uniform in
    [10⁻², 3]/L_F and on a third the Corollary's boundary 1/(10τL_F), batch sizes D, D′, D″ ∈ {0 (full), 1, 2, 3}."""
    lb = logistic_batch(rng, T * N, M, DIM, scale=1.0)
    X = lb["X"].reshape(T, N, M, DIM) + 1.5 * rng.standard_normal((T, N, 1, DIM))
    y = lb["y"].reshape(T, N, M)
    flip = rng.uniform(size=(T, N, 1)) < 0.5  # heterogeneous labels: half the clients flip theirs
    y = np.where(flip & (np.arange(T)[:, None, None] % 2 == 0), -y, y)
    vals, _ = logistic_constants(X, y)
    L, B, rho = vals["L"], vals["B"], vals["rho"]
    alpha = rng.uniform(0.05, 1.0, T) / L
    alpha[::3] = 1 / L[::3]
    alpha[2::7] = rng.uniform(1.0, 4.0, alpha[2::7].size) / L[2::7]  # outside [0, 1/L]: not applicable
    tau = rng.integers(1, T_MAX + 1, T)
    LF = 4 * L + np.minimum(alpha, 1 / L) * rho * B
    beta = log_uniform(rng, 1e-2, 3.0, T) / LF
    beta[1::3] = 1 / (10 * tau[1::3] * LF[1::3])
    D = rng.integers(0, 4, (T, 3))
    D[::4] = 0  # full batches: the drift is client heterogeneity alone
    return {
        "X": X,
        "y": y,
        "alpha": alpha,
        "beta": beta,
        "tau": tau.astype(float),
        "D": D.astype(float),
        "w0": rng.standard_normal((T, DIM)),
        "seed": rng.integers(0, 2**31, T).astype(float),
    }


def step_bound(X, alpha, beta):
    """``(T,)``: β c B, a bound on one local step of any client (see the module doc)."""
    r2 = np.sum(X**2, axis=-1).reshape(X.shape[0], -1)
    B, Hmax = np.sqrt(np.max(r2, axis=1)), np.max(r2, axis=1) / 4
    return beta * np.maximum(1.0, alpha * Hmax - 1.0) * B


def _size(v):
    return None if v == 0 else int(v)


def drift_mc(batch, runs=R):
    """``{"first", "second"}: (mean, lo, hi)`` each ``(T_MAX, T)`` (t = 1..T_MAX), Monte Carlo over ``runs``
    runs per instance with Hoeffding intervals (see the module doc)."""
    X, y = batch["X"], batch["y"]
    T = X.shape[0]
    out = {k: np.zeros((3, T_MAX, T)) for k in ("first", "second")}
    level = 1 - (1 - CONFIDENCE) / T_MAX
    z = np.sqrt(np.log(2 / (1 - level)) / (2 * runs))
    c = step_bound(X, batch["alpha"], batch["beta"])
    for i in range(T):
        f = mo.Logistic(
            np.broadcast_to(X[i], (runs,) + X[i].shape), np.broadcast_to(y[i], (runs,) + y[i].shape)
        )
        D, D1, D2 = (_size(v) for v in batch["D"][i])
        w0 = np.broadcast_to(batch["w0"][i], (runs, X.shape[-1]))
        for t in range(1, T_MAX + 1):
            h = mo.fl.per_fedavg(
                f,
                alpha=float(batch["alpha"][i]),
                beta=float(batch["beta"][i]),
                tau=t,
                rounds=1,
                D=D,
                D_prime=D1,
                D_second=D2,
                w0=w0,
                rng=np.random.default_rng(int(batch["seed"][i])),
            )
            W = np.asarray(h.w_local[1])  # (runs, n, d)
            e = np.linalg.norm(W - W.mean(axis=1, keepdims=True), axis=-1)  # (runs, n)
            top = 2 * t * c[i]
            exact = D is None and D1 is None and D2 is None  # full batches: every run is the same
            for key, Y, rng_ in (("first", e.mean(axis=1), top), ("second", np.mean(e**2, axis=1), top**2)):
                m = Y.mean()
                half = 0.0 if exact else rng_ * z
                out[key][:, t - 1, i] = m, max(m - half, 0.0), min(m + half, rng_)
    return out


def constants(batch):
    """Valid constants (dict of ``(T,)`` arrays) and how each was obtained."""
    return logistic_constants(batch["X"], batch["y"])


def evaluate(batch, claim, parts, rhs_of):
    """The four parts on a prepared logistic batch (``batch["mc"]`` from :func:`drift_mc`); ``parts`` the part
    names, ``rhs_of(claim, beta, tau, L, LF, sF2, gF2)`` the statement's right-hand sides ``(TMAX, T)`` each."""
    vals, how = constants(batch)
    alpha, beta, tau = batch["alpha"], batch["beta"], batch["tau"]
    L, B = vals["L"], vals["B"]
    inv = np.where(batch["D"] > 0, 1 / np.maximum(batch["D"], 1), 0.0)
    LF = claim["L_F"](L, alpha, vals["rho"], B)
    sF2 = claim["sigma_F2"](B, vals["sG2"], vals["sH2"], alpha, L, inv[:, 0], inv[:, 1], inv[:, 2])
    gF2 = claim["gamma_F2"](B, alpha, vals["gH2"], vals["gG2"])
    r1, r2, r3, r4 = (x[:T_MAX] for x in rhs_of(claim, beta, tau, L, LF, sF2, gF2))
    t = np.arange(1, T_MAX + 1)[:, None]
    ok_alpha = claim["alpha_condition"](alpha, L)
    cor_ok = ok_alpha & claim["beta_condition"](beta, tau, LF)
    mc = batch["mc"]
    consts = {
        **how,
        "Monte Carlo": f"{R} runs per instance and t; Hoeffding on the per-run range "
        "[0, 2 t beta c B] (its square) at level 1 - 1e-3/T_MAX per t",
    }
    out = {}
    for name, key, rhs, mask, app in (
        (parts[0], "first", r1, None, ok_alpha),
        (parts[1], "second", r2, None, ok_alpha),
        (parts[2], "first", r3, t <= tau, cor_ok),
        (parts[3], "second", r4, t <= tau, cor_ok),
    ):
        mean, lo, hi = mc[key]
        out[name] = _worst_mc(name, mean, lo, hi, rhs, mask, app, consts)
    return out


def _worst_mc(name, mean, lo, hi, rhs, mask, app, consts):
    """Per instance the t with the largest (upper end)/rhs, the Monte Carlo interval kept."""

    r, k, i = worst_t(hi, rhs, mask)
    note = "Monte Carlo mean, Hoeffding interval on the per-run range (fails only if its lower end exceeds the bound)"
    if "(57b)" in name:
        note += "; rhs = min over phi in 10^[-4, 4] and phi = 1/(2 tau)"
    return Sides(
        mean[k, i],
        rhs[k, i],
        "upper",
        applicable=app,
        lhs_ci=(lo[k, i], hi[k, i]),
        confidence=CONFIDENCE,
        constants=consts,
        note=note,
    )
