r"""permfl.objective — the PerMFL objective, thesis eq. (4.3): nested envelopes and their limits.

Statement (thesis §4.2, eq. (4.3), and what it says of λ, γ: "control the degree of
personalization impact at the team and device levels"): the optimum x*(λ, γ) of

    min_x min_{w_i} min_{θ_ij} (1/M) Σ_i (1/N_i) Σ_j [ f_ij(θ_ij) + (λ/2)‖θ_ij − w_i‖² + (γ/2)‖w_i − x‖² ]

(x* minimises G = (1/M) Σ_i env_γ((1/N_i) Σ_j env_λ f_ij)) has the limits

* γ → ∞ (teams tied to the global model): the pFedMe / FedProx optimum over all devices with
  parameter λ and device weights 1/(M N_i);
* λ → ∞ (devices tied to their team): the pFedMe optimum over the teams, team losses
  (1/N_i) Σ_j f_ij, parameter γ, team weights 1/M;
* λ = γ = s → ∞: GlobalTrain, the minimiser of (1/M) Σ_i (1/N_i) Σ_j f_ij (FedAvg's problem with
  device weights 1/(M N_i));

each approached like 1/γ, 1/λ, 1/s (first order: the envelope of a smooth f is f − ‖∇f‖²/(2λ) +
O(λ⁻²)); and with one device per team (N_i = 1) the nested envelope is one envelope,
env_γ(env_λ f) = env_{λγ/(λ+γ)} f (infimal convolution of the two quadratics), so x* is the pFedMe
optimum with parameter λγ/(λ+γ).  The limits are the issue's reading of the thesis's sentence
(never printed as equations); the weights follow from (4.3) as printed.

Assumptions: f_ij μ-strongly convex (μ > 0) and L-smooth.

Instances (quadratic, d = 3, teams of sizes 1, 2, 3: ``team_quadratics``, 16 by default): λ/L and
γ/L log-uniform in [0.1, 10]; the sweeps take the other parameter 100 to 10⁵ times max(λ, γ, L)
(4 points: the second-order term is below 1 % of the first).

Sides: x*(λ, γ) from ``moreau.fl.permfl_optimum`` (closed form; the sweeps are one call each, the
devices' and the teams' eigendecompositions reused along them); the limits from other code:
``moreau.fl.fedprox_optimum`` (over devices; over the team-averaged quadratics) and
``moreau.fl.global_train``.  Rate parts: the fitted exponent of ‖x*(sweep) − limit‖ on the sweep
parameter (residual interval, 95 %, atol 0.05) against the claimed −1; the one-device part is an
identity to 1e-10 relative.

Claimed: limits (the exponents) and an identity.  What the check shows: all four hold; the slopes
are −1.00 (the notes give their range); a limit with the wrong weights (uniform over devices, or
teams weighted by size as the authors' code computes ``tau`` and does not use) leaves a constant
gap (slope ≈ 0).
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import (
    Mutant,
    Sides,
    Statement,
    fit_exponent,
    rate_sides,
    scale_fields,
)
from moreau.analysis.permfl.round_map import membership
from moreau.analysis.permfl.team_quadratics import TEAMS, log_uniform, team_quadratics
from moreau.fl import fedprox_optimum, global_train
from moreau.fl._permfl import permfl_optimum

__all__ = ["CLAIM", "STATEMENTS", "evaluate", "instances", "prepare"]

D = 3
SWEEP = 10.0 ** np.arange(2, 6)  # multiples of max(lam, gamma, L)

CLAIM = {
    "gamma_weights": lambda N, M, m: 1 / (M * N),  # device weights of the gamma -> inf limit
    "lam_weights": lambda N, M: np.ones_like(N) / M,  # team weights of the lam -> inf limit
    "both_weights": lambda N, M, m: 1 / (M * N),  # device weights of GlobalTrain
    "exponent": -1.0,
    "one_device": lambda lam, gamma: lam * gamma / (lam + gamma),
}
PARTS = (
    "gamma -> inf: x*(lam, gamma) -> pFedMe optimum over devices (weights 1/(M N_i)), |gap| ~ gamma^exponent",
    "lam -> inf: x*(lam, gamma) -> pFedMe optimum over teams (losses mean_j f_ij, weights 1/M), |gap| ~ lam^exponent",
    "lam = gamma = s -> inf: x* -> GlobalTrain (weights 1/(M N_i)), |gap| ~ s^exponent",
    "N_i = 1: x*(lam, gamma) = pFedMe optimum with lam gamma/(lam + gamma)",
)


def instances(family, trials, rng):
    T = trials or 16
    L = log_uniform(rng, 0.5, 5.0, T)
    mu = L / log_uniform(rng, 2.0, 50.0, T)
    batch = team_quadratics(rng, T, D, mu, L)
    return {
        **batch,
        "L": L,
        "mu": mu,
        "lam": L * log_uniform(rng, 0.1, 10.0, T),
        "gamma": L * log_uniform(rng, 0.1, 10.0, T),
    }


def prepare(batch):
    """x* along the three sweeps (one permfl_optimum call each) and at (lam, gamma) with one device
    per team; nothing the claim enters."""
    A, b, lam, gam, L = (batch[k] for k in ("A", "b", "lam", "gamma", "L"))
    f = mo.Quadratic(A, b)
    top = np.maximum(np.maximum(lam, gam), L)
    grid = SWEEP[:, None] * top  # (G, T)
    x_gam = np.asarray(permfl_optimum(f, TEAMS, lam, grid)[0])  # gamma sweep: B_i decomposed once
    x_lam = np.asarray(permfl_optimum(f, TEAMS, grid, gam)[0])  # lam sweep: devices' V reused
    x_both = np.asarray(permfl_optimum(f, TEAMS, grid, grid)[0])
    single = np.arange(len(TEAMS))
    x_one = np.asarray(permfl_optimum(f, single, lam, gam)[0])
    return {
        "A": A,
        "b": b,
        "lam": lam,
        "gamma": gam,
        "grid": grid,
        "x_gam": x_gam,
        "x_lam": x_lam,
        "x_both": x_both,
        "x_one": x_one,
    }


def _slopes(grid, xs, limit):
    gap = np.linalg.norm(xs - limit[None], axis=-1)  # (G, T)
    gap = np.maximum(gap, 1e-300)
    slope, ci = fit_exponent(grid.T, gap.T)
    return slope, ci, gap


def evaluate(prep, claim):
    A, b, lam, gam, grid = (prep[k] for k in ("A", "b", "lam", "gamma", "grid"))
    E, N = membership(TEAMS)
    M, m = N.size, len(TEAMS)
    Nd = E @ N  # each device's team size
    f = mo.Quadratic(A, b)
    lim_g = np.asarray(fedprox_optimum(f, lam, weights=claim["gamma_weights"](Nd, M, m))[0])
    teams_q = mo.Quadratic(
        np.einsum("im,tmkl->tikl", E.T / N[:, None], A), np.einsum("im,tmk->tik", E.T / N[:, None], b)
    )
    lim_l = np.asarray(fedprox_optimum(teams_q, gam, weights=claim["lam_weights"](N.astype(float), M))[0])
    lim_b = np.asarray(global_train(f, weights=claim["both_weights"](Nd, M, m)))
    lim_1 = np.asarray(fedprox_optimum(f, claim["one_device"](lam, gam))[0])
    consts = {
        "x*": "moreau.fl.permfl_optimum (closed form)",
        "limits": "moreau.fl.fedprox_optimum, global_train",
        "exponent": "least-squares slope of log |gap| on log(sweep), residual interval 95 %",
    }
    out = {}
    for part, xs, lim in (
        (PARTS[0], prep["x_gam"], lim_g),
        (PARTS[1], prep["x_lam"], lim_l),
        (PARTS[2], prep["x_both"], lim_b),
    ):
        slope, ci, gap = _slopes(grid, xs, lim)
        out[part] = rate_sides(
            slope,
            ci,
            claim["exponent"],
            kind="equal",
            atol=0.05,
            constants=consts,
            level=0.95,
            note=f"slopes {slope.min():.4f}..{slope.max():.4f}; gap at the last point "
            f"{gap[-1].max():.2g} (atol 0.05: the O(1/s^2) term on this grid)",
        )
    scale = 1 + np.max(np.abs(lim_1), axis=-1)
    out[PARTS[3]] = Sides(
        np.max(np.abs(prep["x_one"] - lim_1), axis=-1) / scale,
        1e-10,
        "exact",
        constants=consts,
        note="env_gamma(env_lam f) = env_{lam gamma/(lam + gamma)} f: infimal convolution",
    )
    return out


_SCALING = scale_fields(
    {
        "A": (-2, 1),
        "b": (-1, 1),
        "eig": (-2, 1),
        "mu": (-2, 1),
        "L": (-2, 1),
        "lam": (-2, 1),
        "gamma": (-2, 1),
    }
)

STATEMENTS = (
    Statement(
        id="permfl.objective",
        implies=("strongly convex objective (μ > 0)",),
        source="Dadras thesis, §4.2, eq. (4.3) (PerMFL's objective, Paper II)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"x^*(\lambda,\gamma) \xrightarrow{\gamma\to\infty} \arg\min\sum_{ij}\tfrac{1}{MN_i}F_{ij},\ "
        r"\xrightarrow{\lambda\to\infty} \arg\min\tfrac1M\sum_i \mathrm{env}_\gamma \bar f_i,\ "
        r"\xrightarrow{\lambda=\gamma\to\infty} \arg\min\sum_{ij}\tfrac{1}{MN_i}f_{ij};\ "
        r"N_i = 1:\ \mathrm{env}_\gamma\mathrm{env}_\lambda f = \mathrm{env}_{\lambda\gamma/(\lambda+\gamma)} f",
        text="the optimum of (4.3) tends to pFedMe over devices (gamma -> inf), pFedMe over teams (lam -> inf) and "
        "GlobalTrain (both), like 1/gamma, 1/lam, 1/s; one device per team is pFedMe with lam gamma/(lam+gamma)",
        assumptions=("f_ij mu-strongly convex, L-smooth",),
        families={"quadratic": ("strongly_convex",)},
        claimed="rate",
        instances=instances,
        evaluate=evaluate,
        prepare=prepare,
        claim=CLAIM,
        scaling={"quadratic": _SCALING},
        mutants=(
            Mutant(
                "uniform device weights 1/m (gamma -> inf)",
                {"gamma_weights": lambda N, M, m: np.ones_like(N) / m},
            ),
            Mutant("teams weighted by size (lam -> inf)", {"lam_weights": lambda N, M: N / N.sum()}),
            Mutant(
                "uniform device weights 1/m (both -> inf)",
                {"both_weights": lambda N, M, m: np.ones_like(N) / m},
            ),
            Mutant("exponent -2", {"exponent": -2.0}),
            Mutant("lam + gamma for lam gamma/(lam + gamma)", {"one_device": lambda lam, gamma: lam + gamma}),
        ),
        origin="reconstruction",
    ),
)
