r"""permfl.thm2 — PerMFL (Paper II of the Dadras thesis), the smooth nonconvex theorem, RECONSTRUCTED.

Statement (reconstructed: the paper's text was not available, see ``moreau.analysis.permfl``; the
condition γ > 2λ is the paper's as a third-party report on its code quotes it): let every f_ij be
L-smooth (not necessarily convex), λ > 2L and γ > 2λ.  Then

* every device envelope F_ij = env_λ f_ij is λ-smooth (pFedMe's Proposition 1 one level down);
* every team problem F_i + (γ/2)‖w − x‖² is strongly convex and G_i = env_γ F_i is γ-smooth
  (the same proposition one level up, F_i being λ-smooth and at most λ-weakly convex);
* with exact inner solves PerMFL is gradient descent on G with step β, and for β ≤ 1/γ

      (1/T) Σ_{t<T} ‖∇G(x^t)‖² ≤ 2 (G(x⁰) − G*)/(β T),   G* = inf G (finite).

Assumptions: as above; full participation, full gradients; inf G finite (checked per instance:
∇²G ≻ 0 on quadratics).

Instances (quadratic, d = 2, teams of sizes 1, 2, 3, 48 by default), four groups: (0) devices
with eigenvalues in [−0.3L, L] and Haar bases, λ/L in (2.05, 4), γ/λ in (2.05, 4), steps 0.3 to
0.999 of their bounds, x⁰ = x* + noise; (1) the same with x⁰ = x*; (2) aligned devices with the
eigenvalue −L on a shared vector and λ/L, γ/λ in (2.001, 2.1) (the smoothness bounds nearly
attained; G unbounded below there, the rate not applicable); (3) the same devices with λ/L in
(1.2, 1.9) (half) or γ/λ in (1.05, 1.6) (half): outside the conditions, applicable to the mutants
that relax them.  K team rounds, L local steps in 1..3 (for the run).

Sides: smoothness constants are the largest |eigenvalue| of the exact envelope Hessians
(``round_map.levels``: matrices, never the eigenvalue formula); the rate part is the worst
horizon T = 1..60 of the exact trajectory of GD on G (quadratic: ∇G(x) = ∇²G (x − x*), G(x⁰) − G*
= ½ e₀ᵀ∇²G e₀).  The variant reading "inner: run" evaluates the same bound on PerMFL as run
(K team rounds, L local steps: the affine round map, checked against ``moreau.fl.permfl``).

Claimed: rates (upper bounds).  What the check shows: the smoothness bounds hold and come within
a few % of equality on group (2); the rate holds with ratio up to 1/(2 − βh) < 1 (h the top
curvature of G), so a constant 1 in place of 2 fails; PerMFL as run fails the bound: started at
x* it leaves it (its fixed point is not x*) while the bound is 0.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import (
    Mutant,
    Reading,
    Sides,
    Statement,
    scale_fields,
    worst_point,
)
from moreau.analysis.permfl.round_map import levels, run_map
from moreau.analysis.permfl.team_quadratics import TEAMS, log_uniform, team_quadratics
from moreau.analysis.permfl.thm1 import sim_error

__all__ = ["CLAIM", "STATEMENTS", "evaluate", "instances", "prepare"]

D, T_MAX = 2, 60

#: the reconstructed theorem (module docstring)
CLAIM = {
    "lam_ok": lambda lam, L: lam > 2 * L,
    "gamma_ok": lambda gamma, lam: gamma > 2 * lam,
    "beta_ok": lambda beta, gamma: beta <= 1 / gamma,
    "L_F": lambda lam: lam,
    "L_G": lambda gamma: gamma,
    "bound": lambda gap, beta, T: 2 * gap / (beta * T),
    "inner": "exact",  # the rate for exact inner solves (GD on G)
}
PARTS = (
    "PerMFL (K team rounds, L local steps) = affine round map (moreau.fl.permfl, 3 rounds)",
    "device envelopes F_ij are L_F-smooth: max |eig hess F_ij| <= lam   [lam > 2L]",
    "team problems strongly convex and G_i L_G-smooth: max |eig hess G_i| <= gamma   [lam > 2L, gamma > 2 lam]",
    "(1/T) sum_{t<T} |grad G(x^t)|^2 <= 2 (G(x^0) - G*)/(beta T), T = 1..60   [all conditions, inf G finite]",
)
CONSISTENCY = {PARTS[0]: "the checker's own round map against moreau.fl.permfl: a definitional identity"}


def instances(family, trials, rng):
    T = trials or 48
    g = np.arange(T) % 4
    L = log_uniform(rng, 0.5, 5.0, T)
    adv = g >= 2
    top = (g == 0) & (np.arange(T) % 8 == 0)  # G's top curvature as large as the conditions allow
    lo = np.where(adv, -L, np.where(top, 0.1 * L, -0.3 * L))
    batch = team_quadratics(rng, T, D, lo, L, aligned=adv | top)
    eig, V = batch["eig"], batch["V"]
    eig[top, :, -1] = L[top, None]
    batch["A"][top] = (V[top] * eig[top][..., None, :]) @ np.swapaxes(V[top], -1, -2)
    lam = L * rng.uniform(2.05, 4.0, T)
    gam = lam * rng.uniform(2.05, 4.0, T)
    lam[top] = L[top] * rng.uniform(2.05, 2.2, top.sum())
    gam[top] = lam[top] * rng.uniform(2.05, 2.2, top.sum())
    s = g == 2
    lam[s] = L[s] * rng.uniform(2.001, 2.1, s.sum())
    gam[s] = lam[s] * rng.uniform(2.001, 2.1, s.sum())
    s3a, s3b = (g == 3) & (np.arange(T) % 8 == 3), (g == 3) & (np.arange(T) % 8 == 7)
    lam[s3a] = L[s3a] * rng.uniform(1.2, 1.9, s3a.sum())
    gam[s3a] = lam[s3a] * rng.uniform(2.05, 4.0, s3a.sum())
    lam[s3b] = L[s3b] * rng.uniform(2.001, 2.1, s3b.sum())
    gam[s3b] = lam[s3b] * rng.uniform(1.05, 1.6, s3b.sum())
    u = rng.uniform(0.3, 0.999, (3, T))
    u[2, top] = 0.999
    offset = rng.standard_normal((T, D)) * 3
    offset[top] = 3 * V[top, 0, :, -1]  # along the top eigenvector of hess G
    offset[g == 1] = 0.0
    batch.pop("V")
    return {
        **batch,
        "L": L,
        "lam": lam,
        "gamma": gam,
        "alpha": u[0] / (L + lam),
        "eta": u[1] / (lam + gam),
        "beta": u[2] / gam,
        "K": rng.integers(1, 4, T),
        "Ls": rng.integers(1, 4, T),
        "offset": offset,
        "group": g,
    }


def _trajectory(step, x0, x_star, HG):
    """``(1/T) sum_{t<T} |grad G(x^t)|^2`` for T = 1..T_MAX ``(T_MAX, T)``."""
    x, g2 = x0, []
    for _ in range(T_MAX):
        g = np.einsum("tij,tj->ti", HG, x - x_star)
        g2.append(np.sum(g * g, axis=-1))
        x = step(x, g)
    return np.cumsum(g2, axis=0) / np.arange(1, T_MAX + 1)[:, None]


def prepare(batch):
    """Exact envelope Hessians of every level, the two trajectories, the simulation check."""
    A, b, L, lam, gam, beta = (batch[k] for k in ("A", "b", "L", "lam", "gamma", "beta"))
    lv = levels(A, b, TEAMS, lam, gam)
    eye = np.eye(D)
    g4 = gam[:, None, None, None]
    Bg = lv["B"] + g4 * eye
    team_low = np.min(np.linalg.eigvalsh(Bg), axis=(-1, -2))
    with np.errstate(all="ignore"):
        HGi = g4 * (eye - g4 * np.linalg.inv(Bg))
    dev = np.max(np.abs(np.linalg.eigvalsh(lv["H"])), axis=(-1, -2))
    team = np.where(
        team_low > 0,
        np.max(np.abs(np.linalg.eigvalsh((HGi + np.swapaxes(HGi, -1, -2)) / 2)), axis=(-1, -2)),
        np.inf,
    )
    HG, xs = lv["HG"], lv["x"]
    bounded = (team_low > 0) & (np.linalg.eigvalsh(HG)[:, 0] > 0)
    x0 = xs + batch["offset"]
    e0 = x0 - xs
    gap = 0.5 * np.einsum("ti,tij,tj->t", e0, HG, e0)
    P, q = run_map(A, b, TEAMS, lam, gam, batch["alpha"], batch["eta"], beta, batch["K"], batch["Ls"])
    ideal = _trajectory(lambda x, g: x - beta[:, None] * g, x0, xs, HG)
    with np.errstate(all="ignore"):
        run = _trajectory(lambda x, g: np.einsum("tij,tj->ti", P, x) + q, x0, xs, HG)
    sim = np.zeros(len(L))
    ok = np.flatnonzero(bounded)
    sim[ok] = sim_error(
        {k: batch[k][ok] for k in ("A", "b", "lam", "gamma", "alpha", "eta", "beta", "K", "Ls")},
        P[ok],
        q[ok],
        x0[ok],
    )
    return {
        **{k: batch[k] for k in ("L", "lam", "gamma", "beta")},
        "dev": dev,
        "team": team,
        "bounded": bounded,
        "gap": gap,
        "ideal": ideal,
        "run": run,
        "sim_error": sim,
    }


def evaluate(prep, claim):
    L, lam, gam, beta = (prep[k] for k in ("L", "lam", "gamma", "beta"))
    ok_l, ok_g, ok_b = claim["lam_ok"](lam, L), claim["gamma_ok"](gam, lam), claim["beta_ok"](beta, gam)
    consts = {
        "L": "exact (constructed spectra)",
        "hessians": "round_map.levels (matrices)",
        "G*": "exact: G quadratic, G(x) - G* = (x - x*)^T hess G (x - x*)/2",
    }
    Ts = np.arange(1, T_MAX + 1)[:, None]
    lhs = prep["ideal"] if claim["inner"] == "exact" else prep["run"]
    rate = worst_point(lhs, claim["bound"](prep["gap"][None], beta[None], Ts))
    return {
        PARTS[0]: Sides(prep["sim_error"], 1e-10, "exact", constants=consts),
        PARTS[1]: Sides(
            prep["dev"],
            claim["L_F"](lam),
            "upper",
            applicable=ok_l,
            constants=consts,
            note="a = -L gives |lam a/(lam + a)| = lam L/(lam - L): <= lam iff lam >= 2L",
        ),
        PARTS[2]: Sides(
            prep["team"],
            claim["L_G"](gam),
            "upper",
            applicable=ok_l & ok_g,
            constants=consts,
            note="F_i at most lam-weakly convex; |gamma a/(gamma + a)| <= gamma for a >= -gamma/2",
        ),
        PARTS[3]: Sides(
            *rate,
            "upper",
            applicable=ok_l & ok_g & ok_b & prep["bounded"],
            constants=consts,
            note=f"inner solves: {claim['inner']}; the exact sum telescopes to a ratio 1/(2 - beta h) < 1",
        ),
    }


READINGS = (
    Reading(
        "inner: run (K team rounds, L local steps)",
        {"inner": "run"},
        kind="variant",
        expect="fails",
        why="the rate read for PerMFL as run rather than with exact inner solves: its fixed point is not x*, so "
        "started at x* it leaves it and the average squared gradient stays away from 0 while the bound is 0",
    ),
)
_SCALING = scale_fields(
    {
        "A": (-2, 1),
        "b": (-1, 1),
        "eig": (-2, 1),
        "L": (-2, 1),
        "lam": (-2, 1),
        "gamma": (-2, 1),
        "alpha": (2, -1),
        "eta": (2, -1),
        "beta": (2, -1),
        "offset": (1, 0),
    }
)

STATEMENTS = (
    Statement(
        id="permfl.thm2",
        implies=("λ ≥ L",),
        source="Dadras thesis, Paper II (PerMFL), nonconvex theorem (reconstructed)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\lambda > 2L,\ \gamma > 2\lambda,\ \beta \le \tfrac1\gamma:\ "
        r"\tfrac1T\sum_{t<T}\|\nabla G(x^t)\|^2 \le \tfrac{2(G(x^0) - G^*)}{\beta T}",
        text="smooth nonconvex PerMFL: lam > 2L and gamma > 2 lam make F_ij lam-smooth and G_i gamma-smooth; GD on G "
        "with beta <= 1/gamma gives (1/T) sum |grad G|^2 <= 2(G(x^0) - G*)/(beta T) (reconstructed)",
        assumptions=("f_ij L-smooth", "lam > 2L, gamma > 2 lam, beta <= 1/gamma", "inf G finite"),
        families={"quadratic": ("weakly_convex",)},
        claimed="rate",
        instances=instances,
        evaluate=evaluate,
        prepare=prepare,
        claim=CLAIM,
        readings=READINGS,
        consistency_checks=CONSISTENCY,
        scaling={"quadratic": _SCALING},
        mutants=(
            Mutant("lam > L for lam > 2L", {"lam_ok": lambda lam, L: lam > L}),
            Mutant("gamma > lam for gamma > 2 lam", {"gamma_ok": lambda gamma, lam: gamma > lam}),
            Mutant("L_F = lam/2", {"L_F": lambda lam: lam / 2}),
            Mutant("L_G = gamma/2", {"L_G": lambda gamma: gamma / 2}),
            Mutant("constant 1 for 2", {"bound": lambda gap, beta, T: gap / (beta * T)}),
            Mutant("1/T^2 for 1/T", {"bound": lambda gap, beta, T: 2 * gap / (beta * T**2)}),
        ),
        findings=(
            "PerMFL as run (finite K team rounds, L local steps) does not reach a stationary point of G: started "
            "at x* it moves away, so the nonconvex bound holds only for exact inner solves (variant reading).",
        ),
        origin="reconstruction",
    ),
)
