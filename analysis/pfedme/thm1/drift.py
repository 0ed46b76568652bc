r"""Measurements of pfedme.thm1 (pFedMe, Theorem 1 (a)): client drift over η, the worst-case
biased neighbourhood (exact, through the round map of ``moreau.analysis.pfedme.round_map``) and the
mini-batch neighbourhood over |D| (Monte Carlo with ``moreau.fl.pfedme``).  The statement, its
instances and its sides are in ``moreau.analysis.pfedme.thm1``.

References: pFedMe (T Dinh et al., 2020), Algorithm 1, Lemma 1, Theorem 1 (a), Remark 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import fit_exponent
from moreau.analysis.engine.instances import log_uniform
from moreau.analysis.pfedme.round_map import constants, drift, round_map
from moreau.fl import fedprox_optimum, pfedme

__all__ = ["drift_gaps", "biased_neighbourhood", "minibatch", "logistic_instances", "logistic_rate"]

N_CL, DIM, N_LS = 4, 2, 16
#: Monte Carlo runs per |D| of the mini-batch part (SEEDS_ETA of them for its eta/4 comparison, reported only),
#: and its |D| grid: 104 runs on 1..32 (not 32 runs on 2..32) narrow the 99 % interval of the slope from
#: ~±0.3 to ~±0.12 (jointly over 12 instances), so that an exponent -1.1 is rejected (docs/power.md)
SEEDS, SEEDS_ETA = 104, 32
D_GRID, NU_STEPS, ETA_STEPS = 2 ** np.arange(6), np.logspace(-2, -6, 5), 2.0 ** -np.arange(6)
#: the mini-batch part's atol: E[F(w_t) - F*] from w_0 = w* is exactly ∝ 1/|D| (d = 1, shared curvature x^2 = 1,
#: batches drawn with replacement: additive noise of variance ∝ 1/|D|, linear rounds), so the interval, which
#: carries the Monte Carlo error, needs no widening
MB_ATOL = 0.0
BURN, AVG = 40, 40
NB_DELTA = 0.01


def drift_gaps(A, b, lam, eta, beta, R, w_star):
    """F(w_inf) - F* over the eta grid, ``(T, len(ETA_STEPS))``: ½ eᵀHe with e = w_inf - w* from
    ``moreau.analysis.pfedme.round_map.drift`` (no cancellation), H = mean of the exact envelope Hessians."""
    a, U = np.linalg.eigh(A)
    l3 = lam[:, None, None]
    H = np.mean((U * (l3 * a / (a + l3))[..., None, :]) @ np.swapaxes(U, -1, -2), axis=1)
    out = []
    for k in ETA_STEPS:
        e = drift(A, b, lam, eta * k, beta, R, w_star)
        out.append(0.5 * np.einsum("ti,tij,tj->t", e, H, e))
    return np.maximum(np.stack(out, axis=1), 1e-300)


def biased_neighbourhood(A, b, lam, eta, beta, w_star):
    """F(w_inf) - F* with every inexact solve theta~ = theta^ + NB_DELTA v (v: unit eigenvector of the smallest
    eigenvalue mu_H of H = mean hess F_i), R = 1; exact: ½ eᵀHe = lam^2 delta^2/(2 mu_H) <= lam^2 delta^2/(2 mu_F)."""
    a, U = np.linalg.eigh(A)
    l3 = lam[:, None, None]
    H = np.mean((U * (l3 * a / (a + l3))[..., None, :]) @ np.swapaxes(U, -1, -2), axis=1)
    mu_H, V = np.linalg.eigh(H)
    bias = np.broadcast_to(NB_DELTA * V[:, None, :, 0], b.shape)
    Q, q = round_map(A, b, lam, eta, beta, 1, bias=bias)
    r = np.einsum("tij,tj->ti", Q, w_star) + q - w_star
    e = np.linalg.solve(np.eye(Q.shape[-1]) - Q, r[..., None])[..., 0]
    gap = 0.5 * np.einsum("ti,tij,tj->t", e, H, e)
    mu_F = lam * np.linalg.eigvalsh(A)[..., 0].min(axis=1) / (lam + np.linalg.eigvalsh(A)[..., 0].min(axis=1))
    ratio = gap / (lam**2 * NB_DELTA**2 / mu_F)
    note = (
        f"delta = {NB_DELTA} along H's flattest eigenvector for every client; exact fixed point; "
        f"F-gap/(lam^2 delta^2/mu_F) {ratio.min():.3f}..{ratio.max():.3f} (1/2 = mu_F/(2 mu_H) where the "
        f"clients share the direction of mu)"
    )
    return gap, note


def _ls(batch):
    """The one-dimensional least-squares clients (T, N) and their exact constants."""
    f = mo.LeastSquares(batch["X"], batch["y"], mu=batch["mu"][:, None])
    xy = batch["X"][..., 0] * batch["y"]
    gamma2 = np.max(np.var(xy, axis=-1), axis=-1)  # per-sample gradient variance, exact (curvature shared)
    return f, gamma2


def minibatch(batch):
    """Monte Carlo: E[F(w_t) - F*] from w_0 = w* over |D| (R = 1, beta = 256).

    It depends on the batch only (its generator is seeded from ``batch["seed"]``), and the mutants
    re-evaluate the claim on the same batch: the last result is kept, keyed on the bytes of the
    arrays it reads, so a repeated call returns what a fresh one would.
    """
    key = tuple(np.ascontiguousarray(batch[k]).tobytes() for k in ("X", "y", "lam", "mu", "seed"))
    if _LAST.get("key") != key:
        _LAST.update(key=key, value=_minibatch(batch))
    return _LAST["value"]


_LAST: dict[str, Any] = {}


def _minibatch(batch):
    f, gamma2 = _ls(batch)
    lam, mu = batch["lam"], batch["mu"]
    T = lam.size
    beta = 256.0
    mu_F, _, _, eta_hat = constants(lam, mu, beta)
    eta = eta_hat / beta
    fS = mo.LeastSquares(
        np.broadcast_to(batch["X"], (SEEDS,) + batch["X"].shape),
        np.broadcast_to(batch["y"], (SEEDS,) + batch["y"].shape),
        mu=mu[:, None],
    )
    w_star, _ = fedprox_optimum(f, lam)
    env = mo.envelope(fS, lam[:, None])
    F_star = mo.envelope(f, lam[:, None]).value(w_star[:, None, :]).mean(axis=-1)
    means, ses = [], []
    rng = np.random.default_rng(batch["seed"][0])
    for D in D_GRID:
        h = pfedme(
            fS,
            lam=lam,
            eta=eta,
            beta=beta,
            R=1,
            rounds=BURN + AVG,
            batch_size=int(D),
            rng=rng,
            w0=np.broadcast_to(w_star, (SEEDS, T, 1)),
        )
        g = env.value(h.w_global[BURN + 1 :, ..., None, :]).mean(axis=-1) - F_star  # (AVG, SEEDS, T)
        per_seed = g.mean(axis=0)
        means.append(per_seed.mean(axis=0))
        ses.append(per_seed.std(axis=0, ddof=1) / np.sqrt(SEEDS))
    m, se = np.stack(means, axis=1), np.stack(ses, axis=1)
    slope, ci = fit_exponent(D_GRID, m, y_se=se, level=0.99)
    # the same at |D| = 8 with eta/4: the neighbourhood's exponent in eta (reported, not claimed)
    fS = mo.LeastSquares(
        np.broadcast_to(batch["X"], (SEEDS_ETA,) + batch["X"].shape),
        np.broadcast_to(batch["y"], (SEEDS_ETA,) + batch["y"].shape),
        mu=mu[:, None],
    )
    env = mo.envelope(fS, lam[:, None])
    h = pfedme(
        fS,
        lam=lam,
        eta=eta / 4,
        beta=beta,
        R=1,
        rounds=BURN + AVG,
        batch_size=8,
        rng=rng,
        w0=np.broadcast_to(w_star, (SEEDS_ETA, T, 1)),
    )
    g4 = (env.value(h.w_global[BURN + 1 :, ..., None, :]).mean(axis=-1) - F_star).mean(axis=(0, 1))
    s_eta = np.log(m[:, list(D_GRID).index(8)] / g4) / np.log(4)
    delta2 = 2 * gamma2[:, None] / ((lam + mu)[:, None] ** 2 * D_GRID)
    ratio = m / (lam[:, None] ** 2 * delta2 / mu_F[:, None])
    note = (
        f"slopes {np.min(slope):.2f}..{np.max(slope):.2f} (99 % intervals); E[F - F*]/(lam^2 delta^2/mu_F) "
        f"{np.min(ratio):.1e}..{np.max(ratio):.1e} (gamma_f^2 exact; w_0 = w*, mean over rounds {BURN + 1}.."
        f"{BURN + AVG} and {SEEDS} seeds, |D| = {D_GRID[0]}..{D_GRID[-1]}, se over seeds); exponent in eta "
        f"(|D| = 8, eta vs eta/4, {SEEDS_ETA} seeds): "
        f"{np.min(s_eta):.2f}..{np.max(s_eta):.2f} (1 once the rounds exceed the mixing time, 2 before: "
        f"a random walk, ∝ eta^2 t); atol {MB_ATOL:g}: in d = 1 with shared "
        f"curvature the noise is additive with variance exactly ∝ 1/|D| (the interval carries the Monte Carlo error)"
    )
    return (slope, ci, se), note


def logistic_instances(rng, T):
    """Identical logistic clients (sigma_F1 = 0): X (T, n, d) shared by the N_CL clients, ridge mu in [0.2, 1]
    (an optional field ``N`` (T,), the same on every row, sets another number of clients: the minimal instance's 1)."""
    X = rng.standard_normal((T, 20, DIM)) * rng.uniform(0.5, 1.5, (T, 1, 1))
    w_true = rng.standard_normal((T, DIM))
    y = np.where(rng.uniform(size=(T, 20)) < 1 / (1 + np.exp(-np.einsum("tnd,td->tn", X, w_true))), 1.0, -1.0)
    mu = rng.uniform(0.2, 1.0, T)
    beta_R = ((1, 1), (1, 3), (16, 2), (256, 5), (1, 2), (2, 1))
    beta, R = (np.array([beta_R[i % len(beta_R)][j] for i in range(T)], float) for j in (0, 1))
    return {
        "Xl": X,
        "yl": y,
        "mu": mu,
        "lam": mu * log_uniform(rng, 0.2, 20.0, T),
        "beta": beta,
        "R": R.astype(int),
    }


def logistic_rate(batch):
    """``(sim_gap, (eta, eta_hat, mu_F), exact, consts, printed)``: the exact local exponent of
    F(w_bar_T) - F* at w* from the round Jacobian Q (``round_map`` with A = hess f(w*), b = 0) and the
    simulated contraction's relative gap to rho(Q)."""
    X, y, mu, lam, beta, R = (batch[k] for k in ("Xl", "yl", "mu", "lam", "beta", "R"))
    T, n_cl, dim = lam.size, (int(np.max(batch["N"])) if "N" in batch else N_CL), X.shape[-1]
    shape = (T, n_cl) + X.shape[1:]
    f = mo.Logistic(
        np.broadcast_to(X[:, None], shape),
        np.broadcast_to(y[:, None], shape[:-1]),
        mu=np.broadcast_to(mu[:, None], (T, n_cl)),
    )
    w_star, _, info = fedprox_optimum(f, lam, return_info=True)
    mu_F, _, _, eta_hat = constants(lam, mu, beta)
    eta = eta_hat / (beta * R)
    A = np.asarray(f.hess(np.broadcast_to(w_star[:, None], (T, n_cl, dim))))
    Q, _ = round_map(A, np.zeros((T, n_cl, dim)), lam, eta, beta, R)
    ev, V = np.linalg.eigh((Q + np.swapaxes(Q, -1, -2)) / 2)  # Q is symmetric (identical clients)
    rho, v = np.abs(ev).max(axis=-1), V[np.arange(T), :, np.argmax(np.abs(ev), axis=-1)]
    gap = np.zeros(T)
    for r in np.unique(R):
        s = np.flatnonzero(R == r)
        h = pfedme(
            mo.Logistic(f.X[s], f.y[s], mu=np.broadcast_to(mu[s, None], (s.size, n_cl))),
            lam=lam[s],
            eta=eta[s],
            beta=beta[s],
            R=int(r),
            rounds=6,
            w0=w_star[s] + 1e-5 * v[s],
        )
        e = np.linalg.norm(h.w_global - w_star[s], axis=-1)
        measured = (e[-1] / e[0]) ** (1 / 6)
        gap[s] = np.abs((1 - measured) / (1 - rho[s]) - 1)
    exact = -2 * np.log(np.maximum(1 - eta * mu_F / 2, rho))
    consts = {
        "mu": "exact inf: the ridge",
        "w*": f"moreau.fl.fedprox_optimum, certified to {np.max(info.error_bound):.0e}",
        "rho(Q)": "round Jacobian at w* from hess f(w*) (exact local rate)",
    }
    return gap, (eta, eta_hat, mu_F), exact, consts, eta_hat * mu_F / 2
