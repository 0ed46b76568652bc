r"""sgd.strongly_convex, sgd.nonconvex — thesis (Dadras), chapter 2, Theorems 3 and 4.

Statements (thesis): SGD x^{t+1} = x^t − η_t g(x^t), g(x) = ∇F(x) + ξ(x) with
E ξ(x) = 0 and E‖ξ(x)‖² ≤ M‖∇F(x)‖² + σ² for all x (Assumption 1, (M, σ²)-bounded
noise); F L-smooth, F* = inf F.
* Theorem 3 (F μ-strongly convex), (i): η_t = 2/(μ(t + δ)) with δ > 0 such that
  η_t ≤ 1/(L(M+1)) (all t: δ ≥ 2L(M+1)/μ) gives E[F(x^t) − F*] ≤ ν/(t + δ),
  ν = max((δ + 1)(F(x^0) − F*), 2Lσ²/μ²); (ii): a constant η < 1/(L(M+1)) gives
  E[F(x^t) − F*] ≤ (1 − ημ)^t (F(x^0) − F*) + ηLσ²/(2μ).
* Theorem 4: (1/T) Σ_{t<T} ‖∇F(x^t)‖² ≤ √(8(F(x^0) − F*)Lσ²)/√T "provided that"
  η = η_0/√T with η_0 ≤ min{1/(L(M+1)), √(2(F(x^0) − F*)/(Lσ²))}.  The left side
  is printed without an expectation; it is read as E[·] (§2.2's criterion for
  stochastic methods).  The proof (descent lemma, E‖g‖² ≤ (M+1)‖∇F‖² + σ²,
  telescoped) gives, for every η_0 ≤ 1/(L(M+1)),
  (1/T) Σ E‖∇F(x^t)‖² ≤ 2(F(x^0) − F*)/(η_0√T) + Lη_0σ²/√T   (proof bound),
  which equals the printed bound only at η_0 = √(2(F(x^0) − F*)/(Lσ²)).  The
  printed bound is checked there (when that value is ≤ 1/(L(M+1)), i.e. it is the
  min); at a smaller η_0, or when the min is 1/(L(M+1)), it fails (``findings``;
  mutant "eta_0 <= min{...} (as printed)").

Instances (quadratic, d = 3): F(x) = ½(x − z)ᵀA(x − z), spectrum μ = a_1 ≤ ... ≤ a_3 = L
(F* = 0 at z: no cancellation), noise ξ = ζ C∇F(x) + S^{1/2} w with ζ a Rademacher
sign, w a vector of Rademacher signs, C = √M U (U orthogonal: the identity, noise along
the gradient, or Haar-random) and S ⪰ 0 with tr S = σ²: E‖ξ‖² = M‖∇F‖² + σ² exactly
(Assumption 1 with equality).  S is rank one along the eigenvector of μ or of L, or
random; σ² = 0 and M = 0 (gradient descent) are drawn.  x^0 − z at the optimum (h_0 = 0),
along the eigenvectors of μ or L, or random, at scales 0.01..100.  Step sizes from
0.05 to the bound of the condition, with the condition's boundary value (δ = 2L(M+1)/μ)
drawn, and an eighth outside the condition (η_t up to 2/(L(M+1)): not applicable).
Theorem 4 on convex (a_1 = 0, F* = 0 attained) and strongly convex quadratics, T =
1, 2, 4, ..., 256, η_0 at the square-root branch, at the min with the first branch
active, a fraction 0.01..1 of the min, or above 1/(L(M+1)); and (the nonconvex case,
which quadratics bounded below cannot give) on logistic models with μ = 0 and on
Per-FedAvg meta-objectives F(w) = f(w − α∇f(w)), α = 1/L_f, by Monte Carlo with 99.9 %
intervals (``moreau.analysis._thesis_sgd_mc``: T ∈ {1, 4, 16, 64}, 64 paths).

Logistic family (Theorem 3; ``moreau.analysis._thesis_sgd_mc``): ridge-regularised logistic
models (μ in [0.05, 0.3], μ and L the exact inf / sup of the curvature, F* certified from
below), the same noise model, x^0 at the minimiser on a quarter, δ at its bound on half,
η = 0.999/(L(M+1)) on half; E F(x^t) − F* for t = 1..60 by Monte Carlo over 64 paths
with 99.9 % intervals (a part fails only where the whole interval is above the bound).

Sides, exact: the second moment P_t = E[(x^t − z)(x^t − z)ᵀ] obeys
P_{t+1} = (I − η_t A) P_t (I − η_t A) + η_t² (C A P_t A Cᵀ + S) (cross terms vanish as
E[ξ | x^t] = 0), so E F(x^t) − F* = ½ tr(A P_t) and E‖∇F(x^t)‖² = tr(A P_t A) exactly
(tests: Monte Carlo with intervals).  Per instance the iterate t = 1..400 (Theorem 3)
or horizon T (Theorem 4) with the largest lhs/rhs.

Claimed by the thesis: rates (upper bounds).  What the check shows: Theorem 3 holds (max
ratios about 0.99 on the default run); (ii) is approached at κ = 1 with η → 1/(L(M+1)) (noise
floor ησ²/(2(2 − ημ)) with the noise along the eigenvector of μ, transient factor
(1 − ημ)² + η²μ²M → 1 − ημ); (i) at t = 1 with δ = 2L(M+1)/μ and a large κ (F barely moves
along the eigenvector of μ while ν/(1 + δ) = F(x^0) − F*), and its noise term reaches about
1/3 (floor 2σ²/(3μ(t + δ)) at κ = 1 from x^0 = x*, against 2Lσ²/(μ²(t + δ))).
Theorem 4 at the square-root branch holds with ratios about 1/2 (at T = 1 the left side is
‖∇F(x^0)‖² ≤ 2L(F(x^0) − F*) against ≥ 4L(F(x^0) − F*)); the proof bound holds for every
η_0 ≤ 1/(L(M+1)) (ratio up to about 0.99).  Findings: the printed step rule (η_0 ≤ the min)
fails when the min is 1/(L(M+1)) or η_0 is below it; the left side needs an expectation.
"""
from __future__ import annotations

import numpy as np

import moreau as mo

from . import _thesis_sgd_mc as mc
from ._core import Mutant, Sides, Statement, worst_point
from ._instances import log_uniform, orthogonal
from .thesis_rates import _newton_min

__all__ = ["STATEMENTS", "second_moments"]

D, N_SC, N_MC = 3, 400, 60
T_GRID = 2 ** np.arange(9)  # Theorem 4's horizons T = 1..256

CLAIM_SC = {
    "nu": lambda h0, L, s2, mu, delta: np.maximum((delta + 1) * h0, 2 * L * s2 / mu**2),
    "decreasing": lambda nu, t, delta: nu / (t + delta),
    # eta_t <= eta_0 = 2/(mu delta) <= 1/(L(M+1)); 1e-12: delta = 2L(M+1)/mu is drawn and rounds either way
    "delta_ok": lambda delta, mu, L, M: mu * delta >= 2 * L * (M + 1) * (1 - 1e-12),
    "constant": lambda h0, mu, eta, t, L, s2: (1 - eta * mu) ** t * h0 + eta * L * s2 / (2 * mu),
    "eta_ok": lambda eta, L, M: eta < 1 / (L * (M + 1)),
}
CLAIM_NC = {
    "printed": lambda h0, L, s2, T: np.sqrt(8 * h0 * L * s2) / np.sqrt(T),
    # the reading under which the printed bound holds: eta_0 is the square-root branch and that is the min
    "eta0_printed": lambda eta0, L, M, h0, s2: _isclose(eta0, _sqrt_branch(h0, L, s2))
    & (_sqrt_branch(h0, L, s2) <= 1 / (L * (M + 1))),
    "proof": lambda h0, eta0, L, s2, T: 2 * h0 / (eta0 * np.sqrt(T)) + L * eta0 * s2 / np.sqrt(T),
    "eta0_ok": lambda eta0, L, M: eta0 <= 1 / (L * (M + 1)),
}


def _sqrt_branch(h0, L, s2):
    with np.errstate(divide="ignore"):
        return np.sqrt(2 * h0 / (L * s2))


def _isclose(a, b):
    return np.abs(a - b) <= 1e-12 * np.abs(b)


# -- the exact recursion -----------------------------------------------------------
def second_moments(A, C, S, e0, steps):
    r"""Exact ``(E F(x^t) − F*, E‖∇F(x^t)‖²)`` of SGD on ½(x − z)ᵀA(x − z), ``t = 0..N``.

    .. math::

        P_{t+1} = (I − η_t A) P_t (I − η_t A) + η_t^2 (C A P_t A C^\top + S),\quad
        P_0 = e_0 e_0^\top,

    for the noise ξ = ζ C∇F(x) + S^{1/2}w (ζ, w independent, zero mean, E ζ² = 1,
    E wwᵀ = I); then E F(x^t) − F* = ½ tr(A P_t), E‖∇F(x^t)‖² = tr(A P_t A).  Shapes:
    ``A, C, S`` ``(n, d, d)``, ``e0 = x^0 − z`` ``(n, d)``, ``steps`` ``(n, N)``;
    returns two ``(N + 1, n)`` arrays.
    """
    P = e0[:, :, None] * e0[:, None, :]
    I = np.eye(A.shape[-1])
    Ct = np.swapaxes(C, 1, 2)
    h, g = [], []
    for k in range(steps.shape[1] + 1):
        AP = A @ P
        h.append(0.5 * np.trace(AP, axis1=1, axis2=2))
        APA = AP @ A
        g.append(np.trace(APA, axis1=1, axis2=2))
        if k == steps.shape[1]:
            break
        eta = steps[:, k, None, None]
        B = I - eta * A
        P = B @ P @ B + eta**2 * (C @ APA @ Ct + S)
        P = (P + np.swapaxes(P, 1, 2)) / 2
    return np.array(h), np.array(g)


# -- instances -----------------------------------------------------------------------
def _quadratic(rng, T, frac):
    """Spectrum a_1 = frac L <= a_2 <= a_3 = L: ``(A, eig, V, L)``."""
    L = log_uniform(rng, 0.1, 10.0, T)
    a = np.sort(L[:, None] * rng.uniform(frac[:, None], 1.0, (T, D)), axis=1)
    a[:, 0], a[:, -1] = frac * L, L
    V = orthogonal(rng, T, D)
    A = (V * a[:, None, :]) @ np.swapaxes(V, 1, 2)
    return (A + np.swapaxes(A, 1, 2)) / 2, a, V, L


def _noise(rng, T, V, M, s2, where_C, where_S):
    """``C = sqrt(M) U`` and ``S`` with ``tr S = s2``; ``where_*``: 0 aligned (identity / eigvec of mu),
    1 random (Haar U / random PSD), 2 eigvec of L (S only)."""
    U = orthogonal(rng, T, D)
    U[where_C == 0] = np.eye(D)
    C = np.sqrt(M)[:, None, None] * U
    W = rng.standard_normal((T, D, D))
    S = W @ np.swapaxes(W, 1, 2)
    v1, vd = V[:, :, 0], V[:, :, -1]
    S = np.where((where_S == 0)[:, None, None], v1[:, :, None] * v1[:, None, :], S)
    S = np.where((where_S == 2)[:, None, None], vd[:, :, None] * vd[:, None, :], S)
    S = S * (s2 / np.trace(S, axis1=1, axis2=2))[:, None, None]
    return C, (S + np.swapaxes(S, 1, 2)) / 2


def _groups(T, k):
    return np.array_split(np.arange(T), k)


def instances_sc(family, trials, rng):
    if family == "logistic":
        return mc.instances_sc(rng, trials or 8, _newton_min)
    T = trials or 48
    g = _groups(T, 8)
    frac = log_uniform(rng, 0.01, 1.0, T)
    tight = np.concatenate([g[0], g[1], g[7]])
    frac[tight] = rng.uniform(0.9, 1.0, tight.size)          # kappa near 1: where the bounds are approached
    A, a, V, L = _quadratic(rng, T, frac)
    M = np.where(rng.uniform(size=T) < 0.3, 0.0, rng.uniform(0.0, 4.0, T))
    M[g[0]], M[g[1]] = 0.0, rng.uniform(0.5, 4.0, g[1].size)
    M[g[7]] = rng.uniform(1.0, 4.0, g[7].size)
    scale = log_uniform(rng, 0.01, 100.0, T)
    e0 = rng.standard_normal((T, D)) * scale[:, None]
    sign = rng.choice([-1.0, 1.0], (T, 1))
    e0[g[0]] = 0.0                                           # start at the optimum: the noise floor alone
    e0[g[1]] = V[g[1], :, 0] * sign[g[1]]                    # along the eigenvector of mu: the transient
    e0[g[2]] = V[g[2], :, -1] * sign[g[2]] * scale[g[2], None]
    e0[g[7]] = V[g[7], :, -1] * sign[g[7]]
    h0 = 0.5 * np.einsum("ti,tij,tj->t", e0, A, e0)
    s2 = np.where(rng.uniform(size=T) < 0.2, 0.0, log_uniform(rng, 1e-3, 1e2, T)) * (h0 + (h0 == 0)) * L
    s2[g[0]] = log_uniform(rng, 0.1, 10.0, g[0].size)
    s2[g[1]] = 0.0
    where_C = rng.integers(0, 2, T)
    where_C[np.concatenate([g[0], g[1], g[7]])] = 0
    where_S = rng.integers(0, 3, T)
    where_S[g[0]] = 0
    where_S[g[7]] = 1
    C, S = _noise(rng, T, V, M, s2, where_C, where_S)
    mu = a[:, 0]
    u = rng.uniform(0.05, 1.0, T)                            # eta = u/(L(M+1)), u < 1
    u[tight] = rng.uniform(0.95, 1.0, tight.size)
    u[g[7]] = rng.uniform(1.8, 1.99, g[7].size)              # outside the condition: not applicable
    v = log_uniform(rng, 1.0, 20.0, T)                       # delta = v 2L(M+1)/mu, v >= 1
    v[np.concatenate([g[0], g[1], g[3]])] = 1.0              # the boundary of the condition
    v[g[7]] = rng.uniform(0.5, 0.55, g[7].size)
    # small noise on the outside group: nu = (delta + 1) h0 and eta_0 ~ 2/(L(M+1)) leaves F - F* flat at t = 1
    s2[g[7]] = 0.25 * (v[g[7]] * 2 * L[g[7]] * (M[g[7]] + 1) / mu[g[7]] + 1) * h0[g[7]] * mu[g[7]] ** 2 / L[g[7]]
    C[g[7]], S[g[7]] = _noise(rng, g[7].size, V[g[7]], M[g[7]], s2[g[7]], where_C[g[7]], where_S[g[7]])
    return {"A": A, "C": C, "S": S, "e0": e0, "L": L, "mu": mu, "M": M, "s2": s2,
            "eta": u / (L * (M + 1)), "delta": v * 2 * L * (M + 1) / mu}


def _evaluate_sc_logistic(batch, claim):
    f = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
    mu, L = (np.asarray(c) for c in f.curvature_bounds())
    M, s2, eta, delta, x0 = (batch[k] for k in ("M", "s2", "eta", "delta", "x0"))
    h0 = np.asarray(f.value(x0)) - batch["Fstar"]
    t, idx = np.arange(1, N_MC + 1)[:, None], np.arange(x0.shape[0])
    consts = {"L, mu": "exact sup / inf of the curvature",
              "F*": "Newton value minus ||grad||^2/(2 mu): a certified lower bound",
              "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
              "E F(x^t) - F*": f"Monte Carlo, {mc.PATHS} paths, normal interval at level {mc.LEVEL}"}
    out = {}
    rhs_i = claim["decreasing"](claim["nu"](h0, L, s2, mu, delta), t, delta)
    rhs_c = claim["constant"](h0, mu, eta, t, L, s2)
    sims = mc.gaps_sc(batch, N_MC)
    for name, (mean, se), rhs, app in ((SC_I, sims[0], rhs_i, claim["delta_ok"](delta, mu, L, M)),
                                       (SC_II, sims[1], rhs_c, claim["eta_ok"](eta, L, M))):
        lo, hi = mc.interval(mean[1:], se[1:])
        k = np.argmax(lo / rhs, axis=0)  # the iterate closest to failing
        out[name] = Sides(mean[1:][k, idx], rhs[k, idx], "upper", applicable=app, lhs_ci=(lo[k, idx], hi[k, idx]),
                          confidence=mc.LEVEL, constants=consts, note=f"t = 1..{N_MC} on logistic models")
    return out


def evaluate_sc(batch, claim):
    if "X" in batch:
        return _evaluate_sc_logistic(batch, claim)
    A, C, S, e0, L, mu, M, s2 = (batch[k] for k in ("A", "C", "S", "e0", "L", "mu", "M", "s2"))
    eta, delta = batch["eta"], batch["delta"]
    t = np.arange(N_SC + 1)
    steps_i = 2 / (mu[:, None] * (t[None, :-1] + delta[:, None]))
    h_i, _ = second_moments(A, C, S, e0, steps_i)
    h_c, _ = second_moments(A, C, S, e0, np.repeat(eta[:, None], N_SC, axis=1))
    h0, tt = h_i[0], t[1:, None]
    consts = {"L, mu": "exact (spectrum)", "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
              "E F(x^t) - F*": "exact second-moment recursion (docstring)"}
    ok = np.ones((N_SC, h0.size), bool)
    nu = claim["nu"](h0, L, s2, mu, delta)
    return {
        SC_I: Sides(
            *worst_point(h_i[1:], claim["decreasing"](nu, tt, delta), ok), "upper",
            applicable=claim["delta_ok"](delta, mu, L, M), constants=consts,
            note="delta = 2L(M+1)/mu (the boundary) on a third; delta below it (eta_0 up to 2/(L(M+1))) "
                 "not applicable"),
        SC_II: Sides(*worst_point(h_c[1:], claim["constant"](h0, mu, eta, tt, L, s2), ok), "upper",
                  applicable=claim["eta_ok"](eta, L, M), constants=consts,
                  note="approached at kappa -> 1, eta -> 1/(L(M+1)); eta up to 2/(L(M+1)) not applicable"),
    }


def instances_nc(family, trials, rng):
    if family == "logistic":
        return mc.instances(rng, trials or 8, _newton_min)
    T = trials or 32
    r = _groups(T, 4)  # eta_0: square-root branch / min = 1/(L(M+1)) / below the min / above 1/(L(M+1))
    frac = np.where(np.arange(T) % 2 == 0, 0.0, log_uniform(rng, 0.01, 1.0, T))  # convex / strongly convex
    A, a, V, L = _quadratic(rng, T, frac)
    M = np.where(rng.uniform(size=T) < 0.4, 0.0, rng.uniform(0.0, 4.0, T))
    scale = log_uniform(rng, 0.01, 100.0, T)
    e0 = rng.standard_normal((T, D)) * scale[:, None]
    top = np.arange(T) % 4 == 1  # along the top eigenvector: ||grad F(x^0)||^2 = 2L(F(x^0) - F*)
    e0[top] = V[top, :, -1] * scale[top, None]
    M[r[3][: (r[3].size + 1) // 2]] = 0.0
    e0[r[3]] = V[r[3], :, -1] * scale[r[3], None]
    h0 = 0.5 * np.einsum("ti,tij,tj->t", e0, A, e0)
    first = 1 / (L * (M + 1))
    w = log_uniform(rng, 0.01, 100.0, T)  # sigma^2 = w 2 h0 L (M+1)^2: the square-root branch is first/sqrt(w)
    w[r[0]] = np.where(np.arange(r[0].size) % 3 == 0, 1.0, log_uniform(rng, 1.0, 100.0, r[0].size))
    w[r[1]] = np.where(np.arange(r[1].size) % 2 == 0, 0.0, log_uniform(rng, 1e-4, 1.0, r[1].size))
    w[r[3][: (r[3].size + 1) // 2]] = 0.0
    s2 = w * 2 * h0 * L * (M + 1) ** 2
    eta0 = np.minimum(first, _sqrt_branch(h0, L, s2))
    eta0[r[0]] = _sqrt_branch(h0, L, s2)[r[0]]
    eta0[r[2]] *= rng.uniform(0.01, 1.0, r[2].size)
    eta0[r[3]] = first[r[3]] * rng.uniform(1.1, 1.99, r[3].size)
    C, S = _noise(rng, T, V, M, s2, rng.integers(0, 2, T), rng.integers(0, 3, T))
    return {"A": A, "C": C, "S": S, "e0": e0, "L": L, "M": M, "s2": s2, "eta0": eta0}


def averages_nc(batch):
    """``(T_GRID, n)``: exact (1/T) Σ_{t<T} E‖∇F(x^t)‖² with η = η_0/√T, one SGD run per horizon."""
    n, G = batch["eta0"].size, T_GRID.size
    rep = lambda k: np.repeat(batch[k], G, axis=0)  # noqa: E731  (row = instance i, horizon j: i G + j)
    eta = np.tile(1 / np.sqrt(T_GRID), n) * rep("eta0")
    _, g = second_moments(rep("A"), rep("C"), rep("S"), rep("e0"), np.repeat(eta[:, None], T_GRID[-1], axis=1))
    csum = np.cumsum(g[:-1], axis=0)  # (T_max, n G)
    T = np.tile(T_GRID, n)
    return (csum[T - 1, np.arange(n * G)] / T).reshape(n, G).T


def _evaluate_nc_logistic(batch, claim):
    L, M, s2, eta0, x0 = (batch[k] for k in ("L", "M", "s2", "eta0", "x0"))
    f = mo.Logistic(batch["X"], batch["y"])
    h0 = np.asarray(mo.meta_objective(f, batch["alpha"]).value(x0)) - batch["Fstar"]
    mean, se = mc.path_averages(batch)
    lo, hi = mc.interval(mean, se)
    T, idx = mc.T_MC[:, None], np.arange(x0.shape[0])
    consts = {"L": "bound: L_f + alpha rho B (alpha = 0: exact L_f)",
              "F*": "min f by Newton (>= inf F: F(x^0) - F* errs low, the bound with it)",
              "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
              "E (1/T) sum ||grad F||^2": f"Monte Carlo, {mc.PATHS} paths, normal interval at level {mc.LEVEL}"}
    out = {}
    for name, rhs, app in ((NC_PRINTED, claim["printed"](h0, L, s2, T), claim["eta0_printed"](eta0, L, M, h0, s2)),
                           (NC_PROOF, claim["proof"](h0, eta0, L, s2, T), claim["eta0_ok"](eta0, L, M))):
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.argmax(np.nan_to_num(lo / rhs, nan=-np.inf), axis=0)  # the horizon closest to failing
        out[name] = Sides(mean[k, idx], rhs[k, idx], "upper", applicable=app, lhs_ci=(lo[k, idx], hi[k, idx]),
                          confidence=mc.LEVEL, constants=consts,
                          note="T in {1, 4, 16, 64}; half F = f (convex), half F = f(w - grad f(w)/L_f) (nonconvex)")
    return out


def evaluate_nc(batch, claim):
    if "X" in batch:
        return _evaluate_nc_logistic(batch, claim)
    L, M, s2, eta0 = (batch[k] for k in ("L", "M", "s2", "eta0"))
    e0, A = batch["e0"], batch["A"]
    h0 = 0.5 * np.einsum("ti,tij,tj->t", e0, A, e0)
    lhs, T = averages_nc(batch), T_GRID[:, None]
    consts = {"L": "exact (spectrum)", "F*": "exact: 0 at z (convex or strongly convex quadratic)",
              "M, sigma^2": "exact: E||xi||^2 = M ||grad F||^2 + sigma^2 (equality)",
              "E ||grad F(x^t)||^2": "exact second-moment recursion (docstring)"}
    ok = np.ones(lhs.shape, bool)
    return {
        NC_PRINTED: Sides(
            *worst_point(lhs, claim["printed"](h0, L, s2, T), ok), "upper",
            applicable=claim["eta0_printed"](eta0, L, M, h0, s2), constants=consts,
            note="where eta_0 is the square-root branch and that is the min (the reading that holds); "
                 "other eta_0 <= min{...} fail: findings"),
        NC_PROOF: Sides(
            *worst_point(lhs, claim["proof"](h0, eta0, L, s2, T), ok), "upper",
            applicable=claim["eta0_ok"](eta0, L, M), constants=consts,
            note="descent lemma telescoped; equals the printed bound at the square-root branch"),
    }


_SRC = "Dadras thesis, ch. 2"
_PAPER = "dadras-thesis-personalized-fl.md"
_NC_FINDINGS = (
    "Theorem 4 as printed (any eta_0 <= min{1/(L(M+1)), sqrt(2(F(x^0) - F*)/(L sigma^2))}) fails when the min is "
    "1/(L(M+1)): d = 1, F(x) = x^2/2 (L = 1, F* = 0), x^0 = 1, M = 0, sigma^2 = 0.01 (eta_0 = min{1, 10} = 1): "
    "at T = 1 the left side is ||grad F(x^0)||^2 = 1 > sqrt(8 * 0.5 * 0.01) = 0.2 (ratio 5); at T = 256 the exact "
    "E-average is 0.03257 > 0.0125 (ratio 2.6); with sigma^2 = 0 (gradient descent) the bound is 0 at every T. "
    "The proof gives 2(F(x^0) - F*)/(eta_0 sqrt T) + L eta_0 sigma^2/sqrt T (checked), which is the printed bound "
    "only at eta_0 = sqrt(2(F(x^0) - F*)/(L sigma^2)).",
    "Theorem 4 as printed also fails for eta_0 below the min (printed '<='): d = 1, F(x) = x^2/2, x^0 = 1, M = 0, "
    "sigma^2 = 1 (both branches of the min are 1), eta_0 = 0.1: the exact (1/T) sum_{t<T} E||grad F(x^t)||^2 is "
    "1.41 times sqrt(8 (F(x^0) - F*) L sigma^2/T) at T = 16 and 2.42 times at T = 256 (eta_0 = 0.01: 6.85 at "
    "T = 256).",
    "Theorem 4's left side is printed without an expectation: read surely it fails with positive probability "
    "even at the square-root branch: d = 1, F(x) = x^2/2, x^0 = 1, M = 0, Rademacher noise xi = +-1 (sigma^2 = 1, "
    "eta_0 = 1 = both branches), T = 16 (eta = 1/4): the path with xi = -1 at every step stays at x^t = 1, so "
    "(1/T) sum ||grad F(x^t)||^2 = 1 > sqrt(8 * 0.5)/4 = 0.5 (probability 2^-16), while the expectation is "
    "0.53 * 0.5 (checked).",
)

SC_I = "(i) eta_t = 2/(mu(t + delta)): E F(x^t) - F* <= nu/(t + delta), t = 1..400"
SC_II = "(ii) eta < 1/(L(M+1)): E F(x^t) - F* <= (1 - eta mu)^t (F(x^0) - F*) + eta L sigma^2/(2 mu), t = 1..400"
NC_PRINTED = ("printed: (1/T) sum_{t<T} E||grad F(x^t)||^2 <= sqrt(8 (F(x^0) - F*) L sigma^2 / T), "
              "eta_0 = sqrt(2(F(x^0) - F*)/(L sigma^2)) <= 1/(L(M+1)), T = 1..256")
NC_PROOF = ("proof: (1/T) sum_{t<T} E||grad F(x^t)||^2 <= 2(F(x^0) - F*)/(eta_0 sqrt T) + L eta_0 sigma^2/sqrt T, "
            "eta_0 <= 1/(L(M+1)), T = 1..256")

STATEMENTS = (
    Statement(
        id="sgd.strongly_convex", source=f"{_SRC}, Theorem 3", paper=_PAPER,
        latex=r"\eta_t = \tfrac{2}{\mu(t+\delta)}:\ \mathbb{E}[F(x^t) - F^*] \le \frac{\nu}{t+\delta};\quad "
              r"\eta < \tfrac{1}{L(M+1)}:\ \mathbb{E}[F(x^t) - F^*] \le (1 - \eta\mu)^t (F(x^0) - F^*) "
              r"+ \eta\frac{L}{2\mu}\sigma^2",
        text="SGD on an L-smooth mu-strongly convex F with (M, sigma^2)-bounded noise: eta_t = 2/(mu(t + delta)), "
             "eta_t <= 1/(L(M+1)) gives E[F(x^t) - F*] <= nu/(t + delta), nu = max((delta + 1)(F(x^0) - F*), "
             "2 L sigma^2/mu^2); a constant eta < 1/(L(M+1)) gives (1 - eta mu)^t (F(x^0) - F*) + eta L sigma^2/(2 mu)",
        assumptions=("F L-smooth, mu-strongly convex", "E xi = 0, E||xi||^2 <= M ||grad F||^2 + sigma^2",
                     "(i) eta_t = 2/(mu(t + delta)) <= 1/(L(M+1)) for all t (delta >= 2L(M+1)/mu)",
                     "(ii) eta < 1/(L(M+1))"),
        families={"quadratic": ("strongly_convex, additive and multiplicative noise",),
                  "logistic": ("mu > 0 (Monte Carlo)",)}, claimed="rate",
        instances=instances_sc, evaluate=evaluate_sc, claim=CLAIM_SC,
        mutants=(
            Mutant("(i) nu's noise term 2 L sigma^2/mu^2 -> L sigma^2/(2 mu^2)",
                   {"nu": lambda h0, L, s2, mu, delta: np.maximum((delta + 1) * h0, L * s2 / (2 * mu**2))}),
            Mutant("(i) rate nu/(t + delta)^2", {"decreasing": lambda nu, t, delta: nu / (t + delta) ** 2}),
            Mutant("(i) step condition relaxed: eta_t <= 2/(L(M+1))",
                   {"delta_ok": lambda delta, mu, L, M: mu * delta >= L * (M + 1) * (1 - 1e-12)}),
            Mutant("(ii) neighbourhood eta L sigma^2/(4 mu)",
                   {"constant": lambda h0, mu, eta, t, L, s2: (1 - eta * mu) ** t * h0 + eta * L * s2 / (4 * mu)}),
            Mutant("(ii) neighbourhood eta^2 L sigma^2/(2 mu) (exponent of eta)",
                   {"constant": lambda h0, mu, eta, t, L, s2: (1 - eta * mu) ** t * h0 + eta**2 * L * s2 / (2 * mu)}),
            Mutant("(ii) rate (1 - eta mu)^(2t)",
                   {"constant": lambda h0, mu, eta, t, L, s2: (1 - eta * mu) ** (2 * t) * h0 + eta * L * s2 / (2 * mu)}),
            Mutant("(ii) step condition relaxed: eta < 2/(L(M+1))", {"eta_ok": lambda eta, L, M: eta < 2 / (L * (M + 1))}),
            Mutant("inequalities reversed", {"flip": (SC_I, SC_II)}),
        ),
        equivalent_mutants={
            "(i) nu with delta (F(x^0) - F*) for (delta + 1)(F(x^0) - F*)":
                "true: with the thesis's indexing (eta_0 = 2/(mu delta)) the induction h_{t+1} <= (1 - mu eta_t) h_t "
                "+ eta_t^2 L sigma^2/2 closes with nu >= delta h_0 at t = 0; the + 1 comes from Bottou, Curtis & "
                "Nocedal's (2018, Thm. 4.7) indexing from k = 1",
        },
    ),
    Statement(
        id="sgd.nonconvex", source=f"{_SRC}, Theorem 4", paper=_PAPER,
        latex=r"\eta = \tfrac{\eta_0}{\sqrt T}:\ \frac1T\sum_{t=0}^{T-1}\mathbb{E}\|\nabla F(x^t)\|^2 \le "
              r"\frac{\sqrt{8(F(x^0) - F^*)L\sigma^2}}{\sqrt T}\ \Big(\eta_0 = \sqrt{\tfrac{2(F(x^0) - F^*)}"
              r"{L\sigma^2}} \le \tfrac{1}{L(M+1)}\Big)",
        text="SGD with eta = eta_0/sqrt(T) on an L-smooth F with (M, sigma^2)-bounded noise: (1/T) sum_{t<T} "
             "E||grad F(x^t)||^2 <= sqrt(8 (F(x^0) - F*) L sigma^2)/sqrt(T), checked at eta_0 = sqrt(2(F(x^0) - F*)"
             "/(L sigma^2)) <= 1/(L(M+1)) (printed: any eta_0 <= min{1/(L(M+1)), sqrt(...)}; see findings)",
        assumptions=("F L-smooth, F* = inf F finite", "E xi = 0, E||xi||^2 <= M ||grad F||^2 + sigma^2",
                     "eta = eta_0/sqrt(T), eta_0 = sqrt(2(F(x^0) - F*)/(L sigma^2)) <= 1/(L(M+1)) "
                     "(printed: eta_0 <= min{1/(L(M+1)), sqrt(2(F(x^0) - F*)/(L sigma^2))})",
                     "left side read as an expectation (printed without E)"),
        families={"quadratic": ("convex", "strongly_convex"),
                  "logistic": ("mu = 0", "Per-FedAvg meta-objective (nonconvex)")}, claimed="rate",
        instances=instances_nc, evaluate=evaluate_nc, claim=CLAIM_NC,
        mutants=(
            Mutant("eta_0 <= min{1/(L(M+1)), sqrt(2(F(x^0) - F*)/(L sigma^2))} (as printed)",
                   {"eta0_printed": lambda eta0, L, M, h0, s2: eta0 <= np.minimum(1 / (L * (M + 1)),
                                                                                   _sqrt_branch(h0, L, s2))}),
            Mutant("constant 8 -> 1", {"printed": lambda h0, L, s2, T: np.sqrt(h0 * L * s2) / np.sqrt(T)}),
            Mutant("rate 1/T for 1/sqrt(T)", {"printed": lambda h0, L, s2, T: np.sqrt(8 * h0 * L * s2) / T}),
            Mutant("proof bound 2 (F(x^0) - F*) -> F(x^0) - F*",
                   {"proof": lambda h0, eta0, L, s2, T: h0 / (eta0 * np.sqrt(T)) + L * eta0 * s2 / np.sqrt(T)}),
            Mutant("proof bound: step condition relaxed to eta_0 <= 2/(L(M+1))",
                   {"eta0_ok": lambda eta0, L, M: eta0 <= 2 / (L * (M + 1))}),
            Mutant("inequalities reversed", {"flip": (NC_PRINTED, NC_PROOF)}),
        ),
        findings=_NC_FINDINGS,
    ),
)
