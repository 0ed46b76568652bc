r"""FedProx analysis, Theorem 1 (eqs. (4)-(6)): the statistical rate of FedProx with the adaptive λ.

Statement (n_i = n, p_i = 1/m, N = mn, Assumptions 1-3): with
``λ = ρ/(√n R)·1{R ≤ n^{-1/2}} + ρ²/(nR²)·1{R > n^{-1/2}}``

    (4)  E‖w̃⁽ᵍ⁾ − w⋆⁽ᵍ⁾‖² ≤ C1/N + C2 (1/n ∧ R/√n)
    (5)  E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² ≤ C3/N + C4 (1/n ∧ R/√n) + 16 (ρ²/(μ²n) ∧ R²)   for all i

with C1 = ρ²/μ² = C3/8, C2 = ((1+√(1+2μ))ρ/(2μ))² ∨ 2ρ/μ,
C4 = (ρ(1+(1+4μ(C2+1))^{1/2})/(2μ))² ∧ (8C2 + 2ρ/μ), checked with ∧ = min as printed and with ∨.

Family "quadratic": least squares with fixed designs ``X_iᵀX_i/n = A_i`` (spectrum in [μ, L]),
Gaussian noise σ, ground truth ``w⋆⁽ⁱ⁾ = w⋆⁽ᵍ⁾ + R u_i`` with heterogeneity exactly R; exact
constants μ = min_i λ_min(A_i), ρ² = σ² max_i tr(A_i) (``moreau.data.least_squares``).  Each
instance is a configuration (m, d, μ, L, σ, seed); every part sweeps n, R or m on it.  The expectations are computed twice:
exactly (``moreau.analysis.fedprox.thm1.least_squares_moments``: the FedProx solution is affine in the sufficient statistics)
and by Monte Carlo over data sets (``--trials`` draws per grid point, default 1000, chunked), and
the bound is compared with the Monte Carlo interval (99.99% two-sided CLT, Bonferroni over the m
clients for the max) and with the exact value.

Family "logistic" (``moreau.analysis.fedprox.thm1.logistic_monte_carlo``): ``moreau.data.logistic`` (well specified, ridge μ,
population-minimiser truth, ρ² by quadrature), ``--trials`` data sets per grid point (default 100)
solved by the certified ``moreau.fl.fedprox_optimum``; (4) and (5) against the intervals.

References: the FedProx analysis (Yu et al.), Theorem 1, eqs. (4)-(6), Assumptions 1-3, Table 1.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, fit_exponent, rate_sides
from moreau.analysis.engine.instances import trials_at_least
from moreau.analysis.fedprox.thm1.least_squares_moments import (
    baseline_errors,
    error_maps,
    exact_errors,
    monte_carlo_memo,
)
from moreau.analysis.fedprox.thm1.logistic_monte_carlo import logistic_batch, logistic_parts
from moreau.data import least_squares

#: Monte Carlo draws per grid point by default, and the intervals' two-sided level
MC_TRIALS, LEVEL = 1000, 0.9999
#: the (n, R) grid of the bounds: both regimes (R√n from 7e-7 to 700)
N_GRID, R_GRID = np.array([50.0, 100.0, 1000.0, 5000.0]), np.array([1e-6, 1e-2, 0.1, 1.0, 10.0])
#: and on both sides of the regime boundary: R = n^-1/2 and R = 1.01 n^-1/2
#: the sweeps of the rate parts
N_SWEEP = np.array([50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0])
M_SWEEP = np.array([2, 4, 8, 16, 32])
#: fixed λ of the comparison (the FedProx analysis §6 grid)
FIXED_LAM = (0.02, 0.1, 0.5)


def lam_rule(rho, R, n):
    return np.where(R <= n**-0.5, rho / (np.sqrt(n) * R), rho**2 / (n * R**2))


def c2(rho, mu):
    return np.maximum(((1 + np.sqrt(1 + 2 * mu)) * rho / (2 * mu)) ** 2, 2 * rho / mu)


def c4(rho, mu, C2, join):
    return join((rho * (1 + np.sqrt(1 + 4 * mu * (C2 + 1))) / (2 * mu)) ** 2, 8 * C2 + 2 * rho / mu)


CLAIM = {
    "lam": lam_rule,
    "C1": lambda rho, mu: rho**2 / mu**2,
    "C2": c2,
    "C3": lambda C1: 8 * C1,
    "C4": c4,
    "het": lambda n, R: np.minimum(1 / n, R / np.sqrt(n)),  # (1/n ∧ R/√n)
    "local_extra": lambda rho, mu, n, R: 16 * np.minimum(rho**2 / (mu**2 * n), R**2),
    # "FedProx always performs no worse than LocalTrain" (the discussion of Theorem 1, as printed):
    # no larger than LocalTrain's own error on the same data
    "vs_localtrain": lambda E_lt, rho, mu, n, m, C4: E_lt,
    "exp_n_local": -1.0,  # error vs n, R > n^{-1/2}: O(1/n) like LocalTrain
    "exp_n_global": -1.0,
    "exp_n_middle": -1.0,  # R = n^{-1/2}/2: the heterogeneity term R/√n = 1/(2n)
    "exp_m": -1.0,  # R → 0: O(1/(mn)) like GlobalTrain
    "exp_R": 1.0,  # middle regime: the heterogeneity cost is O(R/√n)
}

PARTS = (
    "(4) global, Monte Carlo",
    "(4) global, exact",
    "(5) local, C4 with ∧ (printed), Monte Carlo",
    "(5) local, C4 with ∧ (printed), exact",
    "(5) local, C4 with ∨, exact",
    "local error vs n, R >> n^-1/2",
    "global error vs n, R >> n^-1/2",
    "global error vs n, R = n^-1/2/2",
    "local error vs n, R = n^-1/2/2",
    "global error vs m, R → 0 (R = 1e-6, n = 100)",
    "local error vs m, R → 0 (R = 1e-6, n = 100)",
    "local heterogeneity cost vs R, R ≤ n^-1/2 and λ ≥ L (n = 1000)",
    "no worse than LocalTrain (R > n^-1/2)",
)

LOGISTIC_OR = "(5) local, C4 with ∨, Monte Carlo"
#: the configurations (m, d, μ, L, σ) of ``moreau.data.least_squares``: L = μ is the isotropic design
#: A_i = μI (there E‖w̃⁽ᵍ⁾ − w⋆⁽ᵍ⁾‖² = C1/N exactly: C1 attained); large μ and L/μ are where the
#: constants C2 and (1/n ∧ R/√n) are needed (their mutants fail there)
CONFIGS = np.array(
    [
        (10, 5, 1.0, 4.0, 1.0),
        (10, 5, 0.1, 10.0, 0.3),
        (10, 5, 1.0, 1.0, 1.0),
        (2, 1, 1000.0, 1000.0, 0.1),
        (2, 2, 1.0, 100.0, 1.0),
        (2, 2, 1000.0, 10000.0, 10.0),
        (2, 2, 1000.0, 1000.0, 1.0),
    ]
)


#: fewest Monte Carlo draws per grid point: the intervals are normal (CLT) intervals, meaningless
#: for a handful of draws (one draw has no spread at all); a smaller --trials is raised to this
MC_MIN = 30


trials_used = trials_at_least(MC_MIN, "Monte Carlo draws per grid point")  # what --trials becomes


def instances(family, trials, rng):
    """The configurations of ``CONFIGS`` (logistic: ``CONFIGS_LOGISTIC``); ``trials`` is the Monte
    Carlo draws (data sets) per grid point, at least ``MC_MIN``."""
    trials = None if trials is None else trials_used(family, trials)[0]
    if family == "logistic":
        return logistic_batch(trials, rng)
    T = len(CONFIGS)
    return {
        "family": np.zeros(T, dtype=int),
        "m": CONFIGS[:, 0].astype(int),
        "d": CONFIGS[:, 1].astype(int),
        "mu": CONFIGS[:, 2],
        "L": CONFIGS[:, 3],
        "sigma": CONFIGS[:, 4],
        "seed": rng.integers(0, 2**62, T),
        "mc_trials": np.full(T, trials or MC_TRIALS),
    }


def minimal_counterexample():
    """The smallest configuration (fields as :func:`instances`) on which the printed 'no worse than
    LocalTrain' fails: m = 2, d = 1 (``least_squares`` then needs L = μ), μ = L = 2, σ = 1; seed 0 fixes
    only the Monte Carlo parts (the failing part is exact, and seed-free: A_i = 2, u_i = ±1)."""
    return {
        "m": np.array([2]),
        "d": np.array([1]),
        "mu": np.array([2.0]),
        "L": np.array([2.0]),
        "sigma": np.array([1.0]),
        "seed": np.array([0]),
        "mc_trials": np.array([MC_TRIALS]),
        "family": np.zeros(1, dtype=int),
    }


def evaluate(batch, claim):
    """Every part on every configuration (a loop over the few configurations; grid points
    and Monte Carlo trials are vectorised inside)."""
    each = [{k: np.asarray(v)[t] for k, v in batch.items()} for t in range(len(batch["m"]))]
    if np.any(np.asarray(batch.get("family", 0)) == 1):
        rows = [logistic_parts(inst, claim, LEVEL) for inst in each]
        return {
            name: Sides(
                *(np.array([r[key][k] for r in rows]) for k in ("lhs", "rhs")),
                "upper",
                lhs_ci=tuple(np.array([r[key][k] for r in rows]) for k in ("lo", "hi")),
                confidence=LEVEL,
                note=rows[0][key]["note"],
                constants=_BOUND["constants"],
            )
            for name, key in ((PARTS[0], "4"), (PARTS[2], "5"), (LOGISTIC_OR, "5or"))
        }
    rows = [_configuration(inst, claim) for inst in each]
    out = {}
    for name in PARTS:
        col = {k: np.array([r[name][k] for r in rows]) for k in rows[0][name] if k != "note"}
        meta = dict(META[name])
        with np.errstate(divide="ignore", invalid="ignore"):  # the note of the worst configuration
            worst = int(np.nanargmax(col["lhs"] / col["rhs"])) if "lhs" in col else 0
        note = rows[worst][name].get("note", "") + (
            f"; without the 16(ρ²/(μ²n) ∧ R²) term: max ratio {np.max(col.pop('no16')):.3g}"
            if "no16" in col
            else ""
        )
        meta["note"] = (meta.get("note", "") + (" " if meta.get("note") and note else "") + note).strip()
        if "slope" in col:
            out[name] = rate_sides(
                col["slope"],
                (col["lo"], col["hi"]),
                col["exponent"],
                level=col.get("level", [None])[0],
                applicable=col.get("applicable"),
                **meta,
            )
        else:
            ci = (col["lo"], col["hi"]) if "lo" in col else None
            out[name] = Sides(
                col["lhs"], col["rhs"], "upper", lhs_ci=ci, confidence=LEVEL if ci else None, **meta
            )
    return out


def _configuration(inst, claim):
    m, d, sigma, trials = int(inst["m"]), int(inst["d"]), float(inst["sigma"]), int(inst["mc_trials"])
    # the design and the heterogeneity directions u_i (‖u_i‖ = 1, Σ u_i = 0); R is set per grid point
    prob = least_squares(
        int(inst["seed"]), m=m, n=d, d=d, R=1.0, mu=float(inst["mu"]), L=float(inst["L"]), sigma=sigma
    )
    A, w_g = np.asarray(prob.objective.A), prob.w_star_global
    u = prob.w_star - w_g
    rho, mu = np.sqrt(prob.constants["rho2"]), prob.constants["mu"]  # exact: σ² tr(A_i); λ_min(A_i)
    C1 = claim["C1"](rho, mu)
    C2 = claim["C2"](rho, mu)
    C3, C4 = claim["C3"](C1), claim["C4"](rho, mu, C2, np.minimum)
    C4_or = claim["C4"](rho, mu, C2, np.maximum)

    calls = iter(range(1 << 30))

    def errors(n, R, mc=True, lam=None, A=A, u=u):
        lam = claim["lam"](rho, R, n) if lam is None else lam
        bias, K = error_maps(A, w_g + np.asarray(R)[..., None, None] * u, lam, sigma, n)
        exact = exact_errors(bias, K)
        return (exact, *monte_carlo_memo(bias, K, trials, (int(inst["seed"]), next(calls)))) if mc else exact

    out = {}
    # (4), (5) on the (n, R) grid: worst grid point per part
    nn, RR = (g.ravel() for g in np.meshgrid(N_GRID, R_GRID))
    nn, RR = np.concatenate([nn, N_GRID, N_GRID]), np.concatenate([RR, N_GRID**-0.5, 1.01 * N_GRID**-0.5])
    exact, mean, se = errors(nn, RR)
    het, N = claim["het"](nn, RR), m * nn
    rhs4 = C1 / N + C2 * het
    extra = claim["local_extra"](rho, mu, nn, RR)
    rhs5, rhs5_or = C3 / N + C4 * het + extra, C3 / N + C4_or * het + extra
    z, zb = (
        stats.norm.ppf(0.5 + LEVEL / 2),
        stats.norm.ppf(1 - (1 - LEVEL) / (2 * m)),
    )  # Bonferroni over clients
    where = lambda k: f"worst at n = {nn[k]:g}, R = {RR[k]:g} (λ = {claim['lam'](rho, RR[k], nn[k]):.4g})"
    lo, hi = mean[:, 0] - z * se[:, 0], mean[:, 0] + z * se[:, 0]
    k = int(np.argmax(lo / rhs4))
    out[PARTS[0]] = dict(lhs=mean[k, 0], lo=lo[k], hi=hi[k], rhs=rhs4[k], note=where(k))
    k = int(np.argmax(exact[:, 0] / rhs4))
    out[PARTS[1]] = dict(lhs=exact[k, 0], rhs=rhs4[k], note=where(k))
    loc, loc_lo, loc_hi = (
        mean[:, 1:].max(-1),
        (mean - zb * se)[:, 1:].max(-1),
        (mean + zb * se)[:, 1:].max(-1),
    )
    k = int(np.argmax(loc_lo / rhs5))
    out[PARTS[2]] = dict(lhs=loc[k], lo=loc_lo[k], hi=loc_hi[k], rhs=rhs5[k], note=where(k))
    ex_loc = exact[:, 1:].max(-1)
    k = int(np.argmax(ex_loc / rhs5))
    out[PARTS[3]] = dict(lhs=ex_loc[k], rhs=rhs5[k], note=where(k), no16=np.max(ex_loc / (rhs5 - extra)))
    k = int(np.argmax(ex_loc / rhs5_or))
    out[PARTS[4]] = dict(lhs=ex_loc[k], rhs=rhs5_or[k], note=where(k))
    # the rates: error vs n in each regime, vs m as R → 0 (Monte Carlo intervals)
    # R >> n^-1/2: bias λR/μ = ρ²/(nRμ) far below the LocalTrain variance ~ σ²/(μn) on the whole sweep
    R_far = 10 * max(1.0, rho**2 * np.sqrt(m) / (mu * sigma))
    for R, parts, exps in (
        (R_far, PARTS[5:7], ("exp_n_local", "exp_n_global")),
        (0.5 / np.sqrt(N_SWEEP), PARTS[7:9][::-1], ("exp_n_middle", "exp_n_middle")),
    ):
        _, mean, se = errors(N_SWEEP, np.full(N_SWEEP.shape, R))
        i = 1 + np.argmax(mean[:, 1:], axis=-1)
        for part, y, s_, e in (
            (parts[0], mean[np.arange(len(i)), i], se[np.arange(len(i)), i], exps[0]),
            (parts[1], mean[:, 0], se[:, 0], exps[1]),
        ):
            slope, (lo_, hi_) = fit_exponent(N_SWEEP, y, y_se=s_, level=LEVEL)
            out[part] = dict(slope=slope, lo=lo_, hi=hi_, exponent=claim[e], level=LEVEL)
    gm, lm = [], []
    for mm in M_SWEEP:  # the first two clients tiled: the mean curvature does not change with m
        At, ut = np.resize(A[:2], (mm, d, d)), np.resize(u[:2], (mm, d))
        ut = (ut - ut.mean(0)) / np.max(np.linalg.norm(ut - ut.mean(0), axis=-1))
        _, mean, se = errors(100.0, 1e-6, A=At, u=ut)
        i = 1 + int(np.argmax(mean[1:]))
        gm.append((mean[0], se[0])), lm.append((mean[i], se[i]))
    for part, vals in ((PARTS[9], np.array(gm)), (PARTS[10], np.array(lm))):
        slope, (lo_, hi_) = fit_exponent(M_SWEEP.astype(float), vals[:, 0], y_se=vals[:, 1], level=LEVEL)
        out[part] = dict(slope=slope, lo=lo_, hi=hi_, exponent=claim["exp_m"], level=LEVEL)
    # the heterogeneity cost vs R (exact: the excess is below the Monte Carlo resolution)
    # R small enough that λ = ρ/(√n R) >= L on the whole sweep (the clients are pooled)
    Rs = np.geomspace(0.01, 0.9, 6) * min(1.0, rho / float(np.max(np.linalg.eigvalsh(A)))) / np.sqrt(1000.0)
    ex = errors(1000.0, Rs, mc=False)[:, 1:].max(-1)
    floor = baseline_errors(A, w_g + 0 * u, sigma, 1000.0)[1][0]  # GlobalTrain at R = 0
    cost = ex - floor
    ok = bool(np.all(cost > 0))
    slope, (lo_, hi_) = fit_exponent(Rs, cost if ok else np.ones_like(cost))
    out[PARTS[11]] = dict(slope=slope, lo=lo_, hi=hi_, exponent=claim["exp_R"], applicable=ok)
    # no worse than LocalTrain, and the comparison with fixed λ, LocalTrain and GlobalTrain
    large = RR > nn**-0.5
    lt, gt = baseline_errors(A, w_g + RR[:, None, None] * u, sigma, nn)
    rhs_lt = claim["vs_localtrain"](lt[:, 1:].max(-1), rho, mu, nn, m, C4)
    r = np.where(large, ex_loc / rhs_lt, -np.inf)
    k = int(np.argmax(r))
    out[PARTS[12]] = dict(
        lhs=ex_loc[k],
        rhs=rhs_lt[k],
        note=_comparison(errors, nn, RR, ex_loc, lt, gt)
        + f"; max FedProx/LocalTrain {np.max(ex_loc[large] / lt[large, 1:].max(-1)):.3g}",
    )
    return out


def _comparison(errors, nn, RR, ex_loc, lt, gt):
    """Grid points where adaptive FedProx has the smallest max-local error among the methods."""
    fixed = [errors(nn, RR, mc=False, lam=np.full(nn.shape, lam))[:, 1:].max(-1) for lam in FIXED_LAM]
    table = np.stack([ex_loc, *fixed, lt[:, 1:].max(-1), gt[:, 1:].max(-1)])
    best = np.argmin(table, axis=0)
    names = ["adaptive", *(f"λ={v:g}" for v in FIXED_LAM), "LocalTrain", "GlobalTrain"]
    counts = ", ".join(f"{nm} {int(np.sum(best == j))}" for j, nm in enumerate(names))
    within = int(np.sum(ex_loc <= 2 * table.min(axis=0)))
    return (
        f"best max-local error on the {nn.size} (n, R) points (configuration 0): {counts}; adaptive "
        f"within 2x of the best on {within}"
    )


LARGE_N = np.array([5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 390.0])  # R = 0.5: R√n in (1.1, 9.9)
LARGE_R = np.geomspace(0.11, 0.99, 5)  # n = 100: R√n in (1.1, 9.9)
_BOUND = dict(
    constants={
        "mu": "exact: min_i λ_min(A_i)",
        "rho^2": "exact: σ² max_i tr(A_i)",
        "R": "exact: max_i ‖w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾‖",
        "expectation": "exact (bias² + trace) and "
        f"Monte Carlo over data sets, {LEVEL:g} two-sided CLT interval (Bonferroni over clients)",
    }
)
META = {
    PARTS[0]: _BOUND,
    PARTS[1]: _BOUND,
    PARTS[2]: _BOUND,
    PARTS[3]: _BOUND,
    PARTS[4]: _BOUND,
    PARTS[5]: dict(
        kind="equal",
        atol=0.05,
        note="LocalTrain-like O(1/n); R = 10 max(1, ρ²√m/(μσ)) so that the "
        "bias (ρ²/(nRμ))² is negligible (nearer R = n^-1/2 it dominates and the slope is steeper)",
    ),
    PARTS[6]: dict(kind="equal", atol=0.05, note="O(1/n) (C1/N + C2/n)"),
    PARTS[7]: dict(kind="equal", atol=0.05, note="middle regime along R√n = 1/2: C1/N + C2 R/√n = O(1/n)"),
    PARTS[8]: dict(
        kind="equal", atol=0.05, note="middle regime along R√n = 1/2: C3/N + C4 R/√n + 16R² = O(1/n)"
    ),
    PARTS[9]: dict(kind="equal", atol=0.05, note="GlobalTrain-like O(1/(mn))"),
    PARTS[10]: dict(kind="equal", atol=0.05, note="GlobalTrain-like O(1/(mn))"),
    PARTS[11]: dict(
        kind="at least",
        atol=0.05,
        note="max_i E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² minus the GlobalTrain error at R = 0 "
        "(exact), R = (0.01 ... 0.9) min(1, ρ/L)/√n: O(R/√n) needs it to vanish at least linearly; "
        "the lower bound R² allows slope 2",
    ),
    PARTS[12]: dict(note="constant: LocalTrain's rate ρ²/(μ²n) times 8/m + C4μ²/ρ² + 16 (from (5))"),
}


FINDINGS = (
    "(4) is attained: on isotropic designs A_i = μI, E‖w̃⁽ᵍ⁾ − w⋆⁽ᵍ⁾‖² = σ²d/(μmn) = C1/N exactly for every λ, "
    "so as R → 0 the bound's max ratio reaches 0.99987 (m = 10, d = 5, μ = L = σ = 1, n = 50, R = 1e-6); "
    "C1 cannot be lowered (the mutant 'C1 halved' fails there).",
    "C4: (5) holds with ∧ = min as printed (the stronger reading; each branch is the min on some "
    "configuration), hence with ∨ too: max ratio 0.125 over seeds 0-9, where (4) is tight (C3 = 8C1 "
    "leaves a factor 8); (5) also holds without its 16(ρ²/(μ²n) ∧ R²) term (the report prints the max ratio).",
    "'No worse than LocalTrain' as printed (FedProx's error at most LocalTrain's on the same data) fails; it "
    "holds only up to a constant that grows with L/μ (reading 'no worse than LocalTrain's rate'): m = 2, d = 1, "
    "A = (1, 100), σ = 1, n = 100, w⋆ = (1, −1) (R = 1 > n^-1/2, λ = ρ²/(nR²) = 1): client 1 has "
    "E‖w̃⁽¹⁾ − w⋆⁽¹⁾‖² = 0.446 against LocalTrain's σ²/(na₁) = 0.01 (44.6x); the mutant with an absolute "
    "constant 17 is rejected; the checked constant (8/m + C4μ²/ρ² + 16) ρ²/(μ²n) follows from (5).",
    "The λ rule jumps at R = n^-1/2: the branches give ρ and ρ² there (equal only when ρ = 1; ρ = 2, n = 100: "
    "λ = 2 at R = 0.1, λ → 4 as R ↓ 0.1); ρ²/(nR²) has the units of μ², not of λ (the bounds still hold).",
    "The bounds do not pin the λ rule: with ρ for ρ² in the R > n^-1/2 branch, or the switch relaxed to "
    "R <= 10 n^-1/2, (4) and (5) hold on every instance checked (equivalent mutants); the swapped and "
    "R-for-R² rules are rejected by the bounds and rates themselves.",
    "The heterogeneity cost (max_i E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖² above the GlobalTrain error at R = 0) grows like R^1.74 "
    "to R^1.99 as R → 0 with λ ≥ L (n = 1000, seeds 0-9): between the bound's R/√n and the lower bound's R².",
)


def _swap(rho, R, n):
    return np.where(R <= n**-0.5, rho**2 / (n * R**2), rho / (np.sqrt(n) * R))


#: --analyse: why this checker's instances are not rescaled (see moreau.analysis.engine.analyse)
_NO_SCALING = (
    "the heterogeneity grid R and the noise level live inside the checker (each instance is a "
    "sweep drawn from its seed), so a batch cannot be rescaled; the lambda rule's switch at "
    "R = n^(-1/2) compares a length with a number and is not scale-consistent (README, Findings)"
)


def _lt_rate(E_lt, rho, mu, n, m, C4):
    """LocalTrain's rate ρ²/(μ²n) times the constant that follows from (5): 8/m + C4μ²/ρ² + 16."""
    return (8 / m + C4 * mu**2 / rho**2 + 16) * rho**2 / (mu**2 * n)


STATEMENTS = (
    Statement(
        id="fedprox.thm1",
        source="FedProx analysis, Theorem 1, eqs. (4)-(6)",
        paper="fedprox-personalization-analysis.md",
        latex=r"\mathbb E\|\tilde w^{(g)} - w_\star^{(g)}\|^2 \le \frac{C_1}{N} + C_2\Big(\frac1n \wedge \frac{R}{\sqrt n}\Big),"
        r"\ \mathbb E\|\tilde w^{(i)} - w_\star^{(i)}\|^2 \le \frac{C_3}{N} + C_4\Big(\frac1n \wedge \frac{R}{\sqrt n}\Big)"
        r" + 16\Big(\frac{\rho^2}{\mu^2 n} \wedge R^2\Big),\ \lambda = \frac{\rho}{\sqrt n R}1\{R \le n^{-1/2}\}"
        r" + \frac{\rho^2}{nR^2}1\{R > n^{-1/2}\}",
        text="with the adaptive λ, FedProx's global and local statistical errors are at most C1/N + C2 (1/n ∧ R/√n) "
        "and C3/N + C4 (1/n ∧ R/√n) + 16 (ρ²/(μ²n) ∧ R²): O(1/n) like LocalTrain for R > n^-1/2, "
        "O(1/(mn)) like GlobalTrain as R → 0 (--trials: Monte Carlo draws per grid point, default 1000, "
        "at least 30)",
        assumptions=(
            "Assumption 1: ‖w⋆⁽ⁱ⁾ − w⋆⁽ᵍ⁾‖ <= R",
            "Assumption 2: every client's sample average is μ-strongly convex",
            "Assumption 3: E‖∇ℓ(w⋆⁽ⁱ⁾, z)‖² <= ρ²",
            "n_i = n, p_i = 1/m",
        ),
        scaling={"quadratic": _NO_SCALING, "logistic": _NO_SCALING},
        families={
            "quadratic": ("least squares, fixed designs, Gaussian noise",),
            "logistic": ("well-specified logistic with a ridge, population-minimiser truth",),
        },
        claimed="rate",
        instances=instances,
        trials_used=trials_used,
        evaluate=evaluate,
        claim=CLAIM,
        expect="fails",
        # m = 2, d = 1, A_i = μ = L = 2, σ = 1 (ρ² = σ² tr A = 2), w⋆⁽ⁱ⁾ = w⋆⁽ᵍ⁾ ± R.  LocalTrain's error:
        # s = σ²/(nμ).  For R > n^-1/2, λ = ρ²/(nR²) and w̃⁽ⁱ⁾ = (1 − t) b_i/μ + t mean_j b_j/μ with
        # t = λ/(μ + λ) = σ²/(σ² + nR²), so E‖w̃⁽ⁱ⁾ − w⋆⁽ⁱ⁾‖²/s = 1 − t + t²(1/2 + μnR²/σ²) > 1 iff
        # (μ − 1) nR² > σ²/2: at every grid point with R > n^-1/2 (μ <= 1 never fails).  Worst at
        # R = 1.01 n^-1/2 (nR² = 1.0201, t = 1/2.0201): ratio 1.1274 at every n of the grid (rounding picks the
        # n reported; seed 0: n = 5000, 1.1274e-4 > 1e-4), computed exactly (bias² + trace), no sampling
        counterexamples={"quadratic": minimal_counterexample},
        readings=(
            Reading(
                "no worse than LocalTrain's rate",
                {"vs_localtrain": _lt_rate},
                why="'no worse than LocalTrain' read as LocalTrain's rate rho^2/(mu^2 n) up to the constant "
                "that follows from (5), not LocalTrain's error on the same data",
            ),
        ),
        mutants=(
            Mutant("n^-1/2 for n^-1 (local error, R > n^-1/2)", {"exp_n_local": -0.5}),
            Mutant("n^-1/2 for n^-1 (global error, R > n^-1/2)", {"exp_n_global": -0.5}),
            Mutant("m^-1/2 for m^-1 (R → 0)", {"exp_m": -0.5}),
            Mutant("n^-1/2 for n^-1 (R = n^-1/2/2)", {"exp_n_middle": -0.5}),
            Mutant("heterogeneity cost O(R²) (the lower bound's order)", {"exp_R": 2.0}),
            Mutant("λ rule with the regimes swapped", {"lam": _swap}),
            Mutant(
                "λ = ρ/(nR) for R > n^-1/2 (R for R²)",
                {"lam": lambda rho, R, n: np.where(R <= n**-0.5, rho / (np.sqrt(n) * R), rho**2 / (n * R))},
            ),
            Mutant("C1 halved", {"C1": lambda rho, mu: rho**2 / (2 * mu**2)}),
            Mutant("C2 = 2ρ/μ only (no first branch of ∨)", {"C2": lambda rho, mu: 2 * rho / mu}),
            Mutant("(1/n ∧ R/n) for (1/n ∧ R/√n)", {"het": lambda n, R: np.minimum(1 / n, R / n)}),
            Mutant(
                "no worse than LocalTrain's rate with constant 1",
                {"vs_localtrain": lambda E_lt, rho, mu, n, m, C4: rho**2 / (mu**2 * n)},
            ),
        ),
        evidence_only={
            "logistic": "no mutant is rejected on the logistic instances (max ratio about 0.03: the "
            "certified Monte Carlo is far from the bounds' worst case); their holding is "
            "evidence, the verdict rests on the exact least-squares family"
        },
        consistency_checks={
            LOGISTIC_OR: "(5) with C4's ∨ reading: implied by the printed ∧ part (its right side is larger), "
            "kept to report its own ratio",
            PARTS[
                4
            ]: "(5) with C4's ∨ reading: implied by the printed ∧ part (its right side is larger), kept to "
            "report its own ratio",
        },
        equivalent_mutants={
            "condition R <= n^-1/2 relaxed to R <= 10 n^-1/2": "(4), (5) and the rates hold with the relaxed switch "
            "on every instance: the λ rule is the algorithm's input, the bounds do not pin where it switches (its "
            "own n- and R-scalings are definitions, not claims, and are no longer checked as parts)",
            "ρ for ρ² in λ (R > n^-1/2)": "the bounds (4), (5) hold with λ = ρ/(nR²) too on every instance of the "
            "batch and of a Nelder-Mead search (m = 2, d = 2, μ, σ in [1e-3, 1e3], κ <= 1e3, n <= 1e4): "
            "they do not pin the ρ-dependence of the rule, and the n-, R-scalings of the rule are unchanged",
        },
        findings=FINDINGS,
    ),
)
