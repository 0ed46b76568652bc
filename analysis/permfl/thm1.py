r"""permfl.thm1 — PerMFL (Paper II of the Dadras thesis), the smooth strongly convex theorem, RECONSTRUCTED.

Statement (reconstructed: the paper's text was not available, see ``moreau.analysis.permfl``): let
every f_ij be μ-strongly convex and L-smooth and the steps meet the explicit bounds
α ≤ 1/(L+λ), η ≤ 1/(λ+γ), β ≤ 1/γ.  Then each level of PerMFL contracts linearly with exact
inner solves,

* device (L local steps on f_ij + (λ/2)‖θ − w‖²): ‖θ⁺ − θ̂(w)‖ ≤ (1 − α(μ+λ))‖θ − θ̂(w)‖;
* team (exact device proxes; GD on F_i + (γ/2)‖w − x‖²): factor 1 − η(μ_F + γ), μ_F = λμ/(λ+μ);
* global (exact team solves; GD on G = mean_i env_γ F_i): factor 1 − βμ_G, μ_G = γμ_F/(γ+μ_F),
  to x*, the optimum of (4.3);

and PerMFL as run (K team rounds of L local steps per global round) converges linearly: its
round map x ↦ Px + q has

    ρ(P) ≤ 1 − β(1 − ρ̃_team^K) μ̃_G < 1,   μ̃_F = (1 − ρ_dev^L) μ_F,   ρ̃_team = 1 − η(γ + μ̃_F),
    μ̃_G = γμ̃_F/(γ + μ̃_F),   ρ_dev = 1 − α(μ + λ)

(the printed reconstruction said only ρ(P) ≤ 1, which held at 0.999998; the composed factor is derived
here: L device steps from w give the team the envelope Hessian's eigenvalues times 1 − δ^L ≥ 1 − ρ_dev^L
(δ = 1 − α(a + λ) ∈ [0, 1) under the α bound), K team steps from x leave T_i^K x + (I − T_i^K)w_i^∞(x),
and with T_i ⪯ ρ̃_team I, T_i ⪰ 0 (η bound) and βγ ≤ 1 the eigenvalues of the symmetric P lie in
[1 − βγ, bound]; equality when every device shares the eigenvector of μ).  It tends to 1 − βμ_G as
K, L → ∞.  μ_F, μ_G are pFedMe's Proposition 1 applied at each level (exact on quadratics, attained by
aligned devices).

Where the run goes (not placed by the reconstruction, measured here): its fixed point x̄ solves the
reweighted stationarity equation mean_i W_i(B̃_i x̄ − c̃_i) = 0 of ``round_map.reweighted_fixed_point``
(finite K reweights the teams by W_i = (I − T_i^K)(γI + B̃_i)⁻¹, finite L the devices), not (4.3):
the bias |x̄ − x*|/(1 + |x*|) is reported (a part with an infinite right side: its mutant "the run
converges to x*" must fail).

Assumptions: as above; full participation, full gradients.

Instances (quadratic, d = 2, teams of sizes 1, 2, 3: ``team_quadratics``; 48 by default, half of each
group aligned), four
groups: steps within the bounds (u = step × bound⁻¹ in [0.05, 0.999]); and one group per bound
with that step at 2.2–3 times its bound (not applicable to the claim; applicable to the mutants
that relax it), chosen where the round map then diverges (α: λ ≪ L, L ≥ 3 local steps; η:
γ ≫ λ, K ≥ 3; β: λ ≈ L, γ ≪ μ_F, near-exact inner solves).  Half the instances aligned (the
level bounds attained).  K, L in 1..5.

Sides: the spectral radii of the exact level maps I − α(A + λI), I − η(∇²F_i + γI), I − β∇²G and
of the round map P (``moreau.analysis.permfl.round_map``, eigenvalues of the matrices, never the
formulas) against the claim's factors; P is checked against ``moreau.fl.permfl`` for 3 rounds
and the x* of ``round_map.levels`` against ``moreau.fl.permfl_optimum``, the fixed point of (P, q)
against the reweighted equation and against 2 rounds of ``moreau.fl.permfl`` started there
(consistency checks); the bias of x̄ from x*.

Claimed: rates (upper bounds).  What the check shows (seeds 0 and 1): the three level factors and
the run's composed factor are exact bounds, attained (ratio 1) on the aligned instances and strict
on the others ((1 − bound)/(1 − ρ(P)) 0.03..0.86 there); ρ(P) reaches 0.999998 only where the
bound does (small steps); the run's limit point is not x*: the relative bias is 3e-6..0.79 (seed
0, median 0.045) and its mutant "converges to x*" fails.  The variant reading "the run contracts
at the idealised global factor 1 − βμ_G" fails on most instances (finite K, L shrink the global
step: the run is slower).
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, scale_fields
from moreau.analysis.permfl.round_map import (
    fixed_point,
    levels,
    reweighted_fixed_point,
    run_map,
    spectral_radius,
)
from moreau.analysis.permfl.team_quadratics import TEAMS, log_uniform, team_quadratics
from moreau.fl._permfl import permfl, permfl_optimum

__all__ = ["CLAIM", "STATEMENTS", "finish", "instances", "prepare", "sim_error"]

D = 2

#: the reconstructed theorem (module docstring)
CLAIM = {
    "alpha_ok": lambda alpha, L, lam: alpha <= 1 / (L + lam),
    "eta_ok": lambda eta, lam, gamma: eta <= 1 / (lam + gamma),
    "beta_ok": lambda beta, gamma: beta <= 1 / gamma,
    "device_rate": lambda alpha, mu, L, lam: 1 - alpha * (mu + lam),
    "mu_F": lambda mu, lam: lam * mu / (lam + mu),
    "team_rate": lambda eta, mu_F, gamma: 1 - eta * (mu_F + gamma),
    "mu_G": lambda mu_F, gamma: gamma * mu_F / (gamma + mu_F),
    "global_rate": lambda beta, mu_G: 1 - beta * mu_G,
    # the run's rate (derived here, module docstring): L local steps shrink mu_F to mu~_F, K team steps
    # leave the factor 1 - rho~_team^K of the global step
    "mu_F_run": lambda alpha, mu, lam, Ls, mu_F: (1 - (1 - alpha * (mu + lam)) ** Ls) * mu_F,
    "run_rate": lambda beta, eta, gamma, K, mu_Ft: (
        1 - beta * (1 - (1 - eta * (gamma + mu_Ft)) ** K) * gamma * mu_Ft / (gamma + mu_Ft)
    ),
    # where the run goes: the printed (reconstructed) theorem does not place its limit
    "limit_bias": lambda K, Ls: np.full(np.shape(K), np.inf),
}
PARTS = (
    "PerMFL (K team rounds, L local steps) = affine round map (moreau.fl.permfl, 3 rounds)",
    "x* of (4.3): moreau.fl.permfl_optimum = nested-envelope solve",
    "device: rho(I - alpha(A_ij + lam I)) <= 1 - alpha(mu + lam)   [alpha <= 1/(L + lam)]",
    "team, exact device proxes: rho(I - eta(hess F_i + gamma I)) <= 1 - eta(mu_F + gamma)   [eta <= 1/(lam + gamma)]",
    "global, exact team solves: rho(I - beta hess G) <= 1 - beta mu_G   [beta <= 1/gamma]",
    "PerMFL as run: rho(P) <= 1 - beta(1 - (1 - eta(gamma + mu~_F))^K) mu~_G < 1, "
    "mu~_F = (1 - (1 - alpha(mu + lam))^L) mu_F   [all three bounds]",
    "the run's fixed point x_bar (of P, q) = the reweighted stationary point (round_map) = a fixed point "
    "of moreau.fl.permfl",
    "the run's limit: |x_bar - x*| / (1 + |x*|) <= limit bias (reconstruction: not placed, inf)",
)
CONSISTENCY = {
    PARTS[0]: "the checker's own round map against moreau.fl.permfl: a definitional identity",
    PARTS[1]: "two computations of the same optimum (round_map.levels, moreau.fl.permfl_optimum)",
    PARTS[6]: "three computations of the run's fixed point (round map, reweighted equation, the run itself)",
}


def instances(family, trials, rng):
    T = trials or 48
    L = log_uniform(rng, 0.5, 5.0, T)
    mu = L / log_uniform(rng, 2.0, 100.0, T)
    g = np.arange(T) % 4
    # half of every group aligned (the level bounds attained there), half not (the bounds strict)
    batch = team_quadratics(rng, T, D, mu, L, aligned=(np.arange(T) // 4) % 2 == 0)
    lam = L * log_uniform(rng, 0.01, 100.0, T)
    gam = lam * log_uniform(rng, 0.01, 100.0, T)
    u = rng.uniform(0.05, 0.999, (3, T))
    K, Ls = rng.integers(1, 6, T), rng.integers(1, 6, T)
    s = g == 1  # alpha beyond its bound, where the device steps blow up through the team step
    n = int(s.sum())
    u[0, s], Ls[s], K[s] = rng.uniform(2.2, 3.0, n), rng.integers(3, 6, n), rng.integers(2, 6, n)
    lam[s] = L[s] * log_uniform(rng, 0.01, 0.3, n)
    gam[s] = lam[s] * log_uniform(rng, 0.05, 0.5, n)
    s = g == 2  # eta beyond its bound, gamma >> lam: the team map leaves the unit disc
    n = int(s.sum())
    u[1, s], K[s] = rng.uniform(2.2, 3.0, n), rng.integers(3, 6, n)
    gam[s] = lam[s] * log_uniform(rng, 3.0, 10.0, n)
    s = g == 3  # beta beyond its bound with near-exact inner solves along L: 1 - beta gamma < -1
    n = int(s.sum())
    lam[s] = L[s] * log_uniform(rng, 0.5, 2.0, n)
    gam[s] = (lam * mu / (lam + mu))[s] * log_uniform(rng, 0.01, 0.1, n)
    u[:, s] = np.stack([np.full(n, 0.999), np.full(n, 0.999), rng.uniform(2.6, 3.0, n)])
    K[s], Ls[s] = rng.integers(4, 6, n), rng.integers(4, 6, n)
    return {
        **batch,
        "mu": mu,
        "L": L,
        "lam": lam,
        "gamma": gam,
        "alpha": u[0] / (L + lam),
        "eta": u[1] / (lam + gam),
        "beta": u[2] / gam,
        "K": K,
        "Ls": Ls,
        "group": g,
        "x0": rng.standard_normal((T, D)) * 2,
    }


def _permfl(batch, s, k, n_local, x0, rounds):
    A, b = batch["A"], batch["b"]
    return permfl(
        mo.Quadratic(A[s], b[s]),
        TEAMS,
        lam=batch["lam"][s],
        gamma=batch["gamma"][s],
        alpha=batch["alpha"][s],
        eta=batch["eta"][s],
        beta=batch["beta"][s],
        K=k,
        L=n_local,
        rounds=rounds,
        x0=x0,
    )


def _groups(batch):
    for k, n_local in {(int(k), int(n_local)) for k, n_local in zip(batch["K"], batch["Ls"], strict=True)}:
        yield k, n_local, np.flatnonzero((batch["K"] == k) & (batch["Ls"] == n_local))


def stay_error(batch, xbar):
    """max over 2 rounds of moreau.fl.permfl started at ``xbar`` of |w_global - xbar| / (1 + |xbar|)."""
    err = np.zeros(len(xbar))
    for k, n_local, s in _groups(batch):
        h = _permfl(batch, s, k, n_local, xbar[s], 2)
        err[s] = np.max(np.abs(np.asarray(h.w_global) - xbar[s]), axis=(0, -1))
    return err / (1 + np.max(np.abs(xbar), axis=-1))


def sim_error(batch, P, q, x0):
    """max over 3 rounds of |permfl - affine map| / (1 + max |x|), one call per (K, L)."""
    err = np.zeros(len(x0))
    for k, n_local, s in _groups(batch):
        h = _permfl(batch, s, k, n_local, x0[s], 3)
        x, e, top = x0[s], [], np.abs(x0[s]).max(axis=-1)
        for t in range(4):
            e.append(np.max(np.abs(np.asarray(h.w_global[t]) - x), axis=-1))
            top = np.maximum(top, np.abs(x).max(axis=-1))
            x = np.einsum("tij,tj->ti", P[s], x) + q[s]
        err[s] = np.max(e, axis=0) / (1 + top)
    return err


def prepare(batch):
    """The exact maps of every level and of the run, the optimum, the simulation check."""
    A, b, lam, gam, alpha, eta, beta = (batch[k] for k in ("A", "b", "lam", "gamma", "alpha", "eta", "beta"))
    lv = levels(A, b, TEAMS, lam, gam)
    eye = np.eye(D)
    dev = np.max(
        spectral_radius(eye - alpha[:, None, None, None] * (A + lam[:, None, None, None] * eye)), axis=-1
    )
    team = np.max(
        spectral_radius(eye - eta[:, None, None, None] * (lv["B"] + gam[:, None, None, None] * eye)), axis=-1
    )
    glob = spectral_radius(eye - beta[:, None, None] * lv["HG"])
    P, q = run_map(A, b, TEAMS, lam, gam, alpha, eta, beta, batch["K"], batch["Ls"])
    x_opt = np.asarray(permfl_optimum(mo.Quadratic(A, b), TEAMS, lam, gam)[0])
    scale = 1 + np.max(np.abs(lv["x"]), axis=-1)
    rho = spectral_radius(P)
    conv = rho < 1
    xbar = np.where(conv[:, None], fixed_point(P, q), 0.0)
    xbar_w = reweighted_fixed_point(A, b, TEAMS, lam, gam, alpha, eta, batch["K"], batch["Ls"])
    xbar_w = np.where(conv[:, None], xbar_w, 0.0)
    sbar = 1 + np.max(np.abs(xbar), axis=-1)
    with np.errstate(all="ignore"):
        bias = np.where(conv, np.linalg.norm(xbar - lv["x"], axis=-1) / scale, np.nan)
        # solving (I - P) x = q amplifies the rounding of P, q by up to 1/(1 - rho): 64 eps of it
        fp_allowed = 64 * np.finfo(float).eps * (1 + 1 / np.where(conv, 1 - rho, 1.0)) * 100
    fp_error = np.maximum(np.max(np.abs(xbar - xbar_w), axis=-1) / sbar, stay_error(batch, xbar))
    return {
        **{k: batch[k] for k in ("mu", "L", "lam", "gamma", "alpha", "eta", "beta", "aligned", "K", "Ls")},
        "converges": conv,
        "fp_error": fp_error,
        "fp_allowed": fp_allowed,
        "dev": dev,
        "team": team,
        "glob": glob,
        "run": rho,
        "bias": bias,
        "opt_error": np.max(np.abs(x_opt - lv["x"]), axis=-1) / scale,
        "sim_error": sim_error(batch, P, q, batch["x0"]),
    }


def finish(prep, claim):
    mu, L, lam, gam, alpha, eta, beta = (prep[k] for k in ("mu", "L", "lam", "gamma", "alpha", "eta", "beta"))
    ok_a, ok_e, ok_b = (
        claim["alpha_ok"](alpha, L, lam),
        claim["eta_ok"](eta, lam, gam),
        claim["beta_ok"](beta, gam),
    )
    mu_F = claim["mu_F"](mu, lam)
    mu_G = claim["mu_G"](mu_F, gam)
    consts = {
        "mu, L": "exact (constructed spectra)",
        "rho": "eigenvalues of the exact matrices (round_map)",
        "x*": "round_map.levels and moreau.fl.permfl_optimum",
    }
    ok = ok_a & ok_e & ok_b
    K, Ls = prep["K"], prep["Ls"]
    mu_Ft = claim["mu_F_run"](alpha, mu, lam, Ls, mu_F)
    bound = claim["run_rate"](beta, eta, gam, K, mu_Ft)
    rho = prep["run"]
    with np.errstate(all="ignore"):
        ratio = np.where(ok, (1 - bound) / (1 - rho), np.nan)  # how much slower the bound says
    al, nal = ok & prep["aligned"], ok & ~prep["aligned"]
    rate_note = (
        f"rho(P) {rho[ok].min():.6g}..{rho[ok].max():.6g}, bound {bound[ok].min():.6g}..{bound[ok].max():.6g}; "
        f"(1 - bound)/(1 - rho) {np.nanmin(ratio):.3g}..{np.nanmax(ratio):.3g} (1: attained; aligned "
        f"{np.nanmin(ratio[al]) if al.any() else np.nan:.3g}..{np.nanmax(ratio[al]) if al.any() else np.nan:.3g}, "
        f"not aligned {np.nanmin(ratio[nal]) if nal.any() else np.nan:.3g}.."
        f"{np.nanmax(ratio[nal]) if nal.any() else np.nan:.3g}); the idealised 1 - beta mu_G is below rho(P) on "
        f"{int(np.sum(ok & (rho > 1 - beta * mu_G)))} of {int(ok.sum())}"
        if ok.any()
        else "no instance within the step bounds"
    )
    bias_all = prep["bias"]
    fin = ok & np.isfinite(bias_all)
    if fin.any():
        w = int(np.flatnonzero(fin)[np.argmax(bias_all[fin])])
        b_ok = bias_all[fin]
        bias_note = (
            f"the run's limit misses x* by {b_ok.min():.2g}..{b_ok.max():.2g} (|x_bar - x*|/(1 + |x*|)), "
            f"median {np.median(b_ok):.2g}; largest at instance {w} (K = {int(K[w])}, L = {int(Ls[w])}, "
            f"lam = {lam[w]:.3g}, gamma = {gam[w]:.3g}): finite K reweights the teams, finite L the devices "
            "(round_map.reweighted_fixed_point)"
        )
    else:
        bias_note = "no convergent instance within the step bounds"
    note = bias_note
    return {
        PARTS[0]: Sides(prep["sim_error"], 1e-10, "exact", constants=consts),
        PARTS[1]: Sides(prep["opt_error"], 1e-10, "exact", constants=consts),
        PARTS[2]: Sides(
            prep["dev"],
            claim["device_rate"](alpha, mu, L, lam),
            "upper",
            applicable=ok_a,
            constants=consts,
            note="every device step factor 1 - alpha(a + lam) >= 0: the largest is at a = mu",
        ),
        PARTS[3]: Sides(
            prep["team"],
            claim["team_rate"](eta, mu_F, gam),
            "upper",
            applicable=ok_e,
            constants=consts,
            note="attained when a team's devices share the eigenvector of mu",
        ),
        PARTS[4]: Sides(
            prep["glob"],
            claim["global_rate"](beta, mu_G),
            "upper",
            applicable=ok_b,
            constants=consts,
            note="attained when every device shares the eigenvector of mu",
        ),
        PARTS[5]: Sides(
            rho,
            bound,
            "upper",
            applicable=ok,
            constants=consts,
            note=rate_note,
        ),
        PARTS[6]: Sides(
            prep["fp_error"],
            prep["fp_allowed"],
            "exact",
            applicable=prep["converges"],
            constants=consts,
            note="max of |x_bar(P, q) - x_bar(reweighted)| and 2 rounds of moreau.fl.permfl from x_bar, "
            "relative to 1 + |x_bar|; allowed 6400 eps (1 + 1/(1 - rho)) (the solve's conditioning)",
        ),
        PARTS[7]: Sides(
            bias_all,
            claim["limit_bias"](K, Ls),
            "upper",
            applicable=fin,
            constants=consts,
            note=note,
        ),
    }


def evaluate(prep, claim):
    return finish(prep, claim)


READINGS = (
    Reading(
        "the run contracts at the idealised rate 1 − βμ_G",
        {
            "run_rate": lambda beta, eta, gamma, K, mu_Ft: 1 - beta * gamma * mu_Ft / (gamma + mu_Ft),
            "mu_F_run": lambda alpha, mu, lam, Ls, mu_F: mu_F,
        },
        kind="variant",
        expect="fails",
        why="the global factor of exact inner solves read as the rate of PerMFL as run (K team rounds, L local "
        "steps): finite K and L shrink the global step, so rho(P) > 1 - beta mu_G on most instances",
    ),
)
_SCALING = scale_fields(
    {
        "A": (-2, 1),
        "b": (-1, 1),
        "eig": (-2, 1),
        "mu": (-2, 1),
        "L": (-2, 1),
        "lam": (-2, 1),
        "gamma": (-2, 1),
        "alpha": (2, -1),
        "eta": (2, -1),
        "beta": (2, -1),
        "x0": (1, 0),
    }
)

STATEMENTS = (
    Statement(
        id="permfl.thm1",
        implies=("strongly convex objective (μ > 0)",),
        source="Dadras thesis, Paper II (PerMFL), strongly convex theorem (reconstructed)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\alpha \le \tfrac{1}{L+\lambda},\ \eta \le \tfrac{1}{\lambda+\gamma},\ \beta \le \tfrac1\gamma:\ "
        r"\rho_{\rm dev} \le 1-\alpha(\mu+\lambda),\ \rho_{\rm team} \le 1-\eta(\mu_F+\gamma),\ "
        r"\rho_{\rm glob} \le 1-\beta\mu_G,\ \rho(P) \le 1",
        text="smooth strongly convex PerMFL: each level contracts at 1 - alpha(mu+lam), 1 - eta(mu_F+gamma), "
        "1 - beta mu_G under the explicit step bounds, and the run converges linearly (reconstructed)",
        assumptions=(
            "f_ij mu-strongly convex, L-smooth",
            "alpha <= 1/(L+lam), eta <= 1/(lam+gamma), beta <= 1/gamma",
            "full participation, full gradients",
        ),
        families={"quadratic": ("strongly_convex",)},
        claimed="rate",
        instances=instances,
        evaluate=evaluate,
        prepare=prepare,
        claim=CLAIM,
        readings=READINGS,
        consistency_checks=CONSISTENCY,
        scaling={"quadratic": _SCALING},
        mutants=(
            Mutant(
                "device factor 1 - alpha(L + lam)",
                {"device_rate": lambda alpha, mu, L, lam: 1 - alpha * (L + lam)},
            ),
            Mutant("mu for mu_F", {"mu_F": lambda mu, lam: mu}),
            Mutant("mu_F for mu_G", {"mu_G": lambda mu_F, gamma: mu_F}),
            Mutant("alpha <= 3/(L + lam)", {"alpha_ok": lambda alpha, L, lam: alpha <= 3 / (L + lam)}),
            Mutant("eta <= 3/(lam + gamma)", {"eta_ok": lambda eta, lam, gamma: eta <= 3 / (lam + gamma)}),
            Mutant("beta <= 3/gamma", {"beta_ok": lambda beta, gamma: beta <= 3 / gamma}),
            Mutant(
                "run rate without the K team steps' factor 1 - rho~_team^K",
                {"run_rate": lambda beta, eta, gamma, K, mu_Ft: 1 - beta * gamma * mu_Ft / (gamma + mu_Ft)},
            ),
            Mutant(
                "run rate with exact device solves (mu_F for mu~_F)",
                {"mu_F_run": lambda alpha, mu, lam, Ls, mu_F: mu_F},
            ),
            Mutant(
                "the run converges to x* of (4.3)", {"limit_bias": lambda K, Ls: np.full(np.shape(K), 1e-9)}
            ),
        ),
        findings=(
            "PerMFL as run (finite K team rounds and L local steps) converges linearly under the step bounds at "
            "the composed factor 1 - beta(1 - rho~_team^K) mu~_G (attained on aligned instances; rho(P) = 0.999998 "
            "only where that factor is), slower than the idealised global factor 1 - beta mu_G (the variant "
            "reading fails), and not to x*: its fixed point solves a reweighted equation "
            "(round_map.reweighted_fixed_point) and misses x* by up to 0.79 relative (the note of its part).",
        ),
        origin="reconstruction",
    ),
)
