r"""gd.strongly_convex, gd.nonconvex — thesis (Dadras), chapter 2, Theorems 1, 2.

Statements (thesis): GD x^{t+1} = x^t − η∇F(x^t); F* := inf F (printed as an
inf over "B", read as R^d, with a non-empty solution set).
* Theorem 1: F(x^t) − F* ≤ (1 − μη)^t (F(x^0) − F*).
* Theorem 2: (1/T) Σ_{t=0}^{T−1} ‖∇F(x^t)‖² ≤ 2(F(x^0) − F*)/(ηT).  The proof
  (descent lemma F(x^{t+1}) ≤ F(x^t) − (η/2)‖∇F(x^t)‖², telescoped) gives the
  stronger 2(F(x^0) − F(x^T))/(ηT), checked as a second part; F* = inf F is
  valid whenever it is finite.

Assumptions: F L-smooth and η ≤ 1/L (steps η ∈ (1/L, 2/L) are generated and
reported not applicable); F μ-strongly convex (Theorem 1); inf F finite
(Theorem 2, which does not assume convexity).

Instances.  Quadratics ½xᵀAx − bᵀx, d = 4, with b = Az, so F* = F(z) and
F(x) − F* = ½(x − z)ᵀA(x − z) without cancellation; Theorem 1 on strongly
convex ones with μ/L ≤ 1/4 and, on an eighth (η = 1/L), 1/4 ≤ μ/L ≤ 0.95
(iterates counted while (1 − μη)^t ≥ 1e-12, far above rounding), x^0 − z
along the eigenvector of μ for a quarter; Theorem 2 on
convex (a_1 = 0) and strongly convex ones, a quarter with η = 1/L and x^0 − z
along the top eigenvector (GD stops after one step: the bound is attained).
Nonconvex quadratics are not used: their inf is −∞.  Logistic: Theorem 1 on
μ > 0 models (μη ≤ 1/4; F* below the Newton value by the certificate
‖∇F‖²/(2μ)); Theorem 2 on μ = 0 models and on Per-FedAvg meta-objectives
F(w) = f(w − α∇f(w)) of them with α = 1/L_f: nonconvex on most instances
(negative Hessian eigenvalues at sampled points), inf F = min f (Newton), and
(L_f + αρB)-smooth (Lemma 4.2's proof with ‖I − α∇²f‖ ≤ 1 for convex f).

Sides (lhs <= rhs): per instance the iterate (t = 1..30) or horizon
(T = 1..30) with the largest lhs/rhs.

Claimed by the thesis: rates (upper bounds).  Theorem 1 is loose: on
quadratics F − F* decays like (1 − μη)^{2t} along the eigenvector of μ, the
exact worst case for η ≤ 1/L (max ratio (1 − μη) at t = 1).  Theorem 2 is
attained (ratio 1).  Frank–Wolfe (Theorems 5, 6): ``thesis/fw/``.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Mutant, Sides, Statement, scale_fields, worst_point
from moreau.analysis.engine.instances import log_uniform, logistic_batch, spectral_quadratics
from moreau.analysis.thesis import sharp_constants as _sharp

__all__ = ["STATEMENTS"]

N_GD = 30

CLAIM_SC = {
    "rate": lambda mu, L, eta, t: (1 - mu * eta) ** t,
    "condition": lambda eta, L: eta <= 1 / L,
}
CLAIM_NC = {
    "average": lambda cumsum, T: cumsum / T,  # (1/T) sum_{t<T}
    "bound": lambda gap, eta, T: 2 * gap / (eta * T),
    "condition": lambda eta, L: eta <= 1 / L,
}


# -- instances -------------------------------------------------------------------
def _gd_quadratic(rng, T, mu_frac, tight_col, viol):
    """Quarters: tight start with eta = 1/L; random; eta = 1/L with a random start;
    eta L in ``viol`` (> 1: not applicable) with x^0 - z along the top eigenvector."""
    d = 4
    A, a, V, L = spectral_quadratics(rng, T, d, mu_frac)
    z = rng.standard_normal((T, d)) * 2
    e0 = rng.standard_normal((T, d))
    g = np.array_split(np.arange(T), 4)
    u = rng.uniform(0.05, 1.0, T)
    u[g[0]], u[g[2]] = 1.0, 1.0
    u[g[3]] = rng.uniform(*viol, g[3].size)
    sign = rng.choice([-1.0, 1.0], (T, 1))
    e0[g[0]] = V[g[0], :, tight_col] * sign[g[0]]
    e0[g[3]] = V[g[3], :, -1] * sign[g[3]]
    return {
        "A": A,
        "b": np.einsum("tij,tj->ti", A, z),
        "z": z,
        "x0": z + e0,
        "eta": u / L,
        "L": L,
        "mu": a[:, 0],
    }


def _newton_min(f, x):
    """Minimiser of a logistic model: damped Newton (Armijo over 12 halvings, batched)."""
    steps = 0.5 ** np.arange(12)
    for _ in range(40):
        g, H = np.asarray(f.grad(x)), np.asarray(f.hess(x))
        p = -np.linalg.solve(H, g[..., None])[..., 0]
        cand = x + steps[:, None, None] * p
        ok = f.value(cand) <= f.value(x) + 1e-4 * steps[:, None] * np.sum(g * p, axis=-1)
        x = cand[np.argmax(ok, axis=0), np.arange(x.shape[0])]  # no step ok (rounding): full step
    return x


def _logistic(rng, T, mu):
    lb = logistic_batch(rng, T, 40, 3, mu=mu, scale=2.0)
    return {k: lb[k] for k in ("X", "y", "mu")}


def instances_sc(family, trials, rng):
    if family == "quadratic":
        T = trials or 32
        frac = log_uniform(rng, 0.01, 0.25, T)
        viol = np.array_split(np.arange(T), 4)[3]
        frac[viol] = rng.uniform(0.1, 0.25, viol.size)  # (1 - eta L)^2 > 1 - mu eta needs mu/L > 2 - eta L
        well = np.array_split(np.arange(T), 4)[2][::2]  # well conditioned, eta = 1/L: 1 - mu eta down to 0.05
        frac[well] = rng.uniform(0.25, 0.95, well.size)
        return _gd_quadratic(rng, T, frac, 0, (1.95, 2.0))
    T = trials or 16
    batch = _logistic(rng, T, log_uniform(rng, 0.05, 0.3, T))
    L = np.asarray(mo.Logistic(batch["X"], batch["y"], mu=batch["mu"]).curvature_bounds()[1])
    u = rng.uniform(0.05, 1.0, T)
    u[::3] = 1.0
    batch["eta"] = np.minimum(u / L, 0.25 / batch["mu"])  # mu eta <= 1/4: the bound stays above rounding
    batch["x0"] = 2 * rng.standard_normal((T, 3))
    return batch


def instances_nc(family, trials, rng):
    if family == "quadratic":
        T = trials or 32
        frac = np.where(np.arange(T) % 2 == 0, 0.0, rng.uniform(0.01, 1.0, T))  # convex (a_1 = 0) / strongly
        return _gd_quadratic(rng, T, frac, -1, (1.2, 1.9))
    T = trials or 16
    batch = _logistic(rng, T, 0.0)
    f = mo.Logistic(batch["X"], batch["y"])
    L, rho, B = (np.asarray(c) for c in (f.curvature_bounds()[1], f.hessian_lipschitz(), f.gradient_bound()))
    batch["alpha"] = np.where(np.arange(T) % 2 == 0, 0.0, 1 / L)  # F = f (convex) / meta-objective
    u = rng.uniform(0.05, 1.0, T)
    u[::3] = 1.0
    batch["eta"] = u / (L + batch["alpha"] * rho * B)
    batch["x0"] = 2 * rng.standard_normal((T, 3))
    return batch


# -- evaluation ------------------------------------------------------------------
def _quad_value_gap(A, e):
    return 0.5 * np.einsum("...i,...ij,...j->...", e, A, e)


def evaluate_sc(batch, claim):
    eta, x = batch["eta"], batch["x0"]
    t = np.arange(1, N_GD + 1)[:, None]
    if "A" in batch:
        q = mo.Quadratic(batch["A"], batch["b"])
        L, mu = batch["L"], batch["mu"]
        gaps = [_quad_value_gap(batch["A"], x - batch["z"])]
        consts = {"L, mu": "exact (spectrum)", "F*": "exact: F(z), b = A z; F - F* = (x - z)^T A (x - z) / 2"}
        note = "x^0 - x* along the eigenvector of mu: lhs/rhs = (1 - mu eta)^t; the exact rate is (1 - mu eta)^(2t)"
    else:
        q = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
        mu, L = (np.asarray(c) for c in q.curvature_bounds())
        xs = _newton_min(q, np.zeros_like(x))
        Fstar = q.value(xs) - np.sum(np.asarray(q.grad(xs)) ** 2, axis=-1) / (2 * mu)  # certified lower bound
        gaps = [q.value(x) - Fstar]
        consts = {
            "L, mu": "exact sup / inf of the curvature",
            "F*": "Newton value minus ||grad||^2/(2 mu): "
            "a certified lower bound (lhs and rhs both err upward by < 1e-25)",
        }
        note = "mu eta <= 1/4 keeps the bound >= 2e-4 (F(x^0) - F*), far above the rounding of F - F*"
    for _ in range(N_GD):
        x = x - eta[:, None] * q.grad(x)
        gaps.append(_quad_value_gap(batch["A"], x - batch["z"]) if "A" in batch else q.value(x) - Fstar)
    gaps = np.array(gaps)
    # iterates whose true factor (1 - mu eta)^t is >= 1e-12 (t = 1 always): below it F - F* is at the
    # rounding floor of x^t - x* (~1e-32 relative) on well-conditioned instances, not a statement about GD
    ok = (1 - mu * eta) ** t >= 1e-12
    lhs, rhs = worst_point(gaps[1:], claim["rate"](mu, L, eta, t) * gaps[0], ok)
    return {
        "F(x^t) - F* <= (1 - mu eta)^t (F(x^0) - F*), t = 1..30": Sides(
            lhs, rhs, "upper", applicable=claim["condition"](eta, L), constants=consts, note=note
        )
    }


def evaluate_nc(batch, claim):
    eta, x = batch["eta"], batch["x0"]
    if "A" in batch:
        q = mo.Quadratic(batch["A"], batch["b"])
        L = batch["L"]
        value = lambda x: _quad_value_gap(batch["A"], x - batch["z"])  # F - F*, exact  # noqa: E731
        Fstar = 0.0
        consts = {"L": "exact (spectrum)", "F*": "exact: F(z), b = A z (inf F attained)"}
        note = "eta = 1/L, x^0 - x* along the top eigenvector: GD stops at x^1 and the ratio is 1"
    else:
        f = mo.Logistic(batch["X"], batch["y"])
        q = mo.meta_objective(f, batch["alpha"])
        L = np.asarray(f.curvature_bounds()[1]) + batch["alpha"] * np.asarray(
            f.hessian_lipschitz()
        ) * np.asarray(f.gradient_bound())
        value = q.value
        Fstar = f.value(_newton_min(f, np.zeros_like(x)))  # inf F = min f; Newton value >= F*: rhs errs low
        consts = {
            "L": "bound: L_f + alpha rho B (alpha = 0: exact L_f)",
            "F*": "min f by Newton (||grad|| ~1e-16); >= inf F, so the rhs is if anything too small",
        }
        note = "half F = f (convex), half F = f(w - grad f(w)/L_f): nonconvex, inf F = min f"
    F, g2 = [value(x)], []
    for _ in range(N_GD):
        g = np.asarray(q.grad(x))
        g2.append(np.sum(g**2, axis=-1))
        x = x - eta[:, None] * g
        F.append(value(x))
    F, T = np.array(F), np.arange(1, N_GD + 1)[:, None]
    lhs = claim["average"](np.cumsum(np.array(g2), axis=0), T)
    ok = np.ones(lhs.shape, bool)
    app = claim["condition"](eta, L)
    return {
        "(1/T) sum_{t<T} ||grad F(x^t)||^2 <= 2 (F(x^0) - F*)/(eta T), T = 1..30": Sides(
            *worst_point(lhs, claim["bound"](F[0] - Fstar, eta, T), ok),
            "upper",
            applicable=app,
            constants=consts,
            note=note,
        ),
        "proof step: F* replaced by F(x^T)": Sides(
            *worst_point(lhs, claim["bound"](F[0] - F[1:], eta, T), ok),
            "upper",
            applicable=app,
            constants=consts,
            note="descent lemma telescoped; stronger than the theorem",
            role="auxiliary",
        ),
    }


_SRC = "Dadras thesis, ch. 2"
#: GD's quadratic batches under theta -> s theta, f -> c f (curvatures c/s^2, points s, b c/s, steps s^2/c)
_GD_SCALING = scale_fields(
    {"A": (-2, 1), "b": (-1, 1), "L": (-2, 1), "mu": (-2, 1), "z": (1, 0), "x0": (1, 0), "eta": (2, -1)}
)
STATEMENTS = (
    Statement(
        id="gd.strongly_convex",
        implies=("strongly convex objective (μ > 0)",),
        waived={
            "strongly convex sample losses": "gradient descent on F: the samples only define F",
            "convex sample losses": "gradient descent on F: the samples only define F",
        },
        source=f"{_SRC}, Theorem 1",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\eta \le 1/L:\ F(x^t) - F^* \le (1 - \mu\eta)^t (F(x^0) - F^*)",
        text="GD with eta <= 1/L on an L-smooth mu-strongly convex F: F(x^t) - F* <= (1 - mu eta)^t (F(x^0) - F*)",
        assumptions=("F L-smooth, mu-strongly convex", "eta <= 1/L"),
        families={"quadratic": ("strongly_convex",), "logistic": ("mu > 0",)},
        claimed="rate",
        instances=instances_sc,
        evaluate=evaluate_sc,
        claim=CLAIM_SC,
        scaling={
            "quadratic": _GD_SCALING,
            "logistic": scale_fields(
                {"X": (-1, 0), "mu": (-2, 0), "eta": (2, 0), "x0": (1, 0)}, c_free=False
            ),
        },
        sharp={
            "quadratic": {"F(x^t) - F* <= (1 - mu eta)^t (F(x^0) - F*), t = 1..30": _sharp.gd_strongly_convex}
        },
        mutants=(
            Mutant("rate (1 - mu eta)^(3t)", {"rate": lambda mu, L, eta, t: (1 - mu * eta) ** (3 * t)}),
            Mutant("rate (1 - L eta)^t (L for mu)", {"rate": lambda mu, L, eta, t: (1 - L * eta) ** t}),
            Mutant("step condition relaxed: eta <= 2/L", {"condition": lambda eta, L: eta <= 2 / L}),
            Mutant(
                "inequality reversed", {"flip": ("F(x^t) - F* <= (1 - mu eta)^t (F(x^0) - F*), t = 1..30",)}
            ),
        ),
        equivalent_mutants={
            "rate (1 - mu eta)^(2t)": "true: for eta <= 1/L the exact worst-case factor of F - F* per step is "
            "max((1 - mu eta)^2, (1 - L eta)^2) = (1 - mu eta)^2 (attained by quadratics "
            "along the eigenvector of mu; Taylor, Hendrickx & Glineur 2018); the "
            "quadratic family reaches ratio 1 against it",
        },
    ),
    Statement(
        id="gd.nonconvex",
        waived={
            "convex sample losses": "gradient descent on F: the samples only define F",
            ("logistic", "bounded gradients"): (
                "the logistic F here has no ridge (its gradients are bounded); the quadratic family "
                "draws unbounded ones"
            ),
        },
        source=f"{_SRC}, Theorem 2",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\eta \le 1/L:\ \frac1T\sum_{t=0}^{T-1}\|\nabla F(x^t)\|^2 \le \frac{2(F(x^0) - F^*)}{\eta T}",
        text="GD with eta <= 1/L on an L-smooth F with finite inf F* : "
        "(1/T) sum_{t<T} ||grad F(x^t)||^2 <= 2 (F(x^0) - F*)/(eta T)",
        assumptions=("F L-smooth", "F* = inf F finite", "eta <= 1/L"),
        families={
            "quadratic": ("convex", "strongly_convex"),
            "logistic": ("mu = 0", "Per-FedAvg meta-objective"),
        },
        claimed="rate",
        instances=instances_nc,
        evaluate=evaluate_nc,
        claim=CLAIM_NC,
        scaling={
            "quadratic": _GD_SCALING,
            "logistic": scale_fields(
                {"X": (-1, 0), "mu": (-2, 0), "alpha": (2, 0), "eta": (2, 0), "x0": (1, 0)}, c_free=False
            ),
        },
        mutants=(
            Mutant("constant 2 -> 1/2", {"bound": lambda gap, eta, T: gap / (2 * eta * T)}),
            Mutant("constant 2 -> 1", {"bound": lambda gap, eta, T: gap / (eta * T)}),
            Mutant("step condition relaxed: eta <= 2/L", {"condition": lambda eta, L: eta <= 2 / L}),
            Mutant("sum not averaged (no 1/T on the left)", {"average": lambda cumsum, T: cumsum + 0 * T}),
            Mutant(
                "inequality reversed",
                {"flip": ("(1/T) sum_{t<T} ||grad F(x^t)||^2 <= 2 (F(x^0) - F*)/(eta T), T = 1..30",)},
            ),
        ),
        equivalent_mutants={
            "sum over t = 1..T instead of 0..T-1": "true: telescoping from x^1 gives the same bound with "
            "F(x^1) <= F(x^0)",
            "F* replaced by F(x^T)": "true (the proof's telescoped form); checked as the second part",
        },
    ),
)
