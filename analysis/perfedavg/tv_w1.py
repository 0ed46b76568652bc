r"""perfedavg.tv, perfedavg.w1 — Per-FedAvg, Section 4.1, eqs. (14a) and (16) (proofs in App. B).

Setting (paper): all users share one loss l(z; w), z = (x, y) ∈ 𝒵, f_i(w) =
E_{z∼p_i} l(z; w), p = (1/n) Σ_i p_i; Assumption 5 asks, for every w ∈ ℝᵈ,

    (1/n) Σ_i ‖∇f_i(w) − ∇f(w)‖² ≤ γ_G²,   (1/n) Σ_i ‖∇²f_i(w) − ∇²f(w)‖² ≤ γ_H².

(14a), TV (𝒵 countable, ‖q₁ − q₂‖_TV = ½ Σ_z |q₁(z) − q₂(z)|): if
‖∇_w l(z; w)‖ ≤ B and ‖∇²_w l(z; w)‖ ≤ L for every z and w, Assumption 5
holds with γ_G² = 4B² (1/n) Σ_i ‖p_i − p‖²_TV and γ_H² = 4L² (1/n) Σ_i ‖p_i − p‖²_TV.

(16), W₁ (supports bounded; (15): for every w, z ↦ ∇_w l(z; w) is
L_𝒵-Lipschitz and z ↦ ∇²_w l(z; w) is ρ_𝒵-Lipschitz for the metric d): it
holds with γ_G² = L_𝒵² (1/n) Σ_i W₁(p_i, p)² and γ_H² = ρ_𝒵² (1/n) Σ_i W₁(p_i, p)².

The claims are the statements as printed: Assumption 5 says f = Σ_i f_i
(claim entry ``f``: "sum"), and the remark after (16) says O(1/√m) in every
dimension (``rate_exponent``).  Hessian norms are spectral (App. B.2's
sup_v vᵀ(·)v).  With f = Σ_i f_i both (14a) and (16) fail (the finding): the
reading "f = (1/n) Σᵢ fᵢ" (eq. (1); App. B subtracts E_p with p the average)
is the repair of perfedavg.tv; perfedavg.w1 has the repair of both printed
elements, "f = (1/n) Σᵢ fᵢ; O(m^(-1/k)), k ≥ 3", and each printed element
alone (with the other repaired), both expected to fail.  Mutants are applied
to the repairs.

Instances (n = 4 clients, K = 6 shared atoms, dyadic weights: 1024 samples
per client, so p_i − p and TV are exact; layouts two groups / random /
identical (TV = W₁ = 0) / disjoint supports / sparse).  Family ``quadratic``
(losses whose sup over all w ∈ ℝᵈ is a closed form, d = 3,
analysis/perfedavg/divergences/finite_support.py): linear l = g_kᵀw; quadratic in w,
½wᵀA_k w + g_kᵀw with indefinite A_k (nonconvex; ‖∇l‖ is unbounded, B = ∞:
the TV premise fails, and the γ_H conclusion is checked under the Hessian
bound alone as a separate part); trigonometric l = h_k1 cos(uᵀw) + h_k2 sin(uᵀw)
(bounded below, nonconvex, ‖∇l‖ ≤ ω|h_k| and ‖∇²l‖ ≤ ω²|h_k| attained, ω = ‖u‖).
For W₁, atoms z_k ∈ ℝ² with shared-A quadratics g_k = G z_k + c‖z_k − a‖ and
trigonometric h_k = M z_k + c‖z_k − a‖.  Family ``logistic``: l = log(1 +
exp(−y xᵀw)) on atoms (x_k, y_k), x_k ∈ ℝ², the diversities at 41 points w
(0, normals of scales 0.5 to 100): a lower estimate of the sup over w, valid
for checking an upper bound.

Sides (lhs <= rhs, exact on the closed-form family): lhs = sup_w of the
diversity (constant in w for linear losses, +∞ for quadratics whose
Σ_k Δ_ik A_k ≠ 0; the trigonometric sup is ((1/n)Σ|c_i|² + |(1/n)Σ c_i²|)/2 times
ω² or ω⁴).  Constants: B = max_k sup_w ‖∇l(z_k; w)‖ and L likewise (exact;
logistic B = max‖x_k‖, L = max‖x_k‖²/4); TV exactly; W₁ by the linear program
over couplings (scipy ``linprog``, HiGHS); L_𝒵, ρ_𝒵 the Lipschitz constants
over 𝒵 = the atoms (a finite metric space, where Kantorovich–Rubinstein (21)
holds): max_{k≠l} sup_w ‖∇l(z_k; w) − ∇l(z_l; w)‖/d(z_k, z_l), exact for the
closed forms (∞ for quadratics with A_k ≠ A_l), for logistic the valid bound
max(‖a_k‖, ‖a_l‖, ‖a_k − a_l‖)/d_kl, a = y x (and ¼ max(‖x_k‖², ‖x_l‖²,
‖x_kx_kᵀ − x_lx_lᵀ‖₂)/d_kl for ρ_𝒵), d = ‖x_k − x_l‖ + |y_k − y_l|.

The remark after (16) (homogeneous clients, each p_i the empirical measure
of m samples of p_u: W₁(p_i, p_u) = O(1/√m), hence γ_G, γ_H = O(1/√m)) is a
rate part of the ``quadratic`` family: n = 2, p_u uniform on [0, 1]^k,
W₁(p_1, p) = ½ W₁(p_1, p_2) (Kantorovich–Rubinstein) computed exactly as an
optimal assignment, 24 draws for each m = 16..256, slope of log E W₁ on log m
with a 99% interval (``fit_exponent``), one sweep each for k = 1, 3, 4 (k = 2
has a log factor, sqrt(log m / m), that a slope cannot separate): as printed
(exponent −1/2 in every dimension) it fails at k = 3 and 4 (the second
finding); the repair: exponent −1/k for k ≥ 3, −1/2 for k = 1 ("at most",
atol 0.05 for the finite-m curvature).

Claimed by the paper: upper bounds ("Assumption 5 holds with").  Under the
repair f = (1/n) Σ_i f_i both are sharp: on two-group instances (clients 1, 2 hold q₁, clients 3, 4 hold q₂)
with losses aligned to sign(q₁ − q₂) (TV), or q₂ a shift of q₁ along a line
with losses linear in z (W₁: p_i and p are stochastically ordered), lhs = rhs
for both γ_G and γ_H (max ratio 1); the constants 4 and L_𝒵², the squares
and the distance cannot be lowered.  Logistic ratios stay far below 1.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import (
    Mutant,
    Reading,
    Sides,
    Statement,
    fit_exponent,
    rate_sides,
    scale_fields,
)
from moreau.analysis.perfedavg.divergences.finite_support import (
    closed_form_sups,
    logistic_sups,
    reference,
    tv,
    w1_batch,
    w1_homogeneous_sweep,
)
from moreau.analysis.perfedavg.divergences.instances import (
    logistic_atoms_batch,
    tv_closed_form_batch,
    w1_closed_form_batch,
)
from moreau.analysis.perfedavg.minimal_counterexamples import TV_MINIMAL, W1_MINIMAL

__all__ = ["STATEMENTS"]


def _mean_sq(dist):
    return np.mean(dist**2, axis=-1)


def _printed_rate(k):
    """The remark after (16) as printed: O(1/sqrt m) whatever the dimension k."""
    return -0.5 + 0.0 * np.asarray(k, float)


def _dudley_rate(k):
    """The repair: O(m^(-1/k)) for k >= 3 (Dudley), O(1/sqrt m) for k = 1."""
    return -1.0 / np.maximum(k, 2)


#: (14a) as printed: f = sum_i f_i (Assumption 5)
CLAIM_TV = {
    "gamma_G2": lambda B, L, dist: 4 * B**2 * _mean_sq(dist),
    "gamma_H2": lambda B, L, dist: 4 * L**2 * _mean_sq(dist),
    "distance": "tv",  # "w1": W1(p_i, p) for the atoms' distances D
    "f": "sum",  # f = sum_i f_i (Assumption 5 as printed); "mean": f = (1/n) sum_i f_i
    "hess_norm": "spectral",  # "fro": Frobenius norm on the lhs (with the spectral L)
}
#: (16) and the remark after it as printed: f = sum_i f_i, W1(p_i, p) = O(m^rate) for homogeneous clients
#: with m samples each in dimension k with rate -1/2 for every k
CLAIM_W1 = {
    "gamma_G2": lambda LZ, rhoZ, dist: LZ**2 * _mean_sq(dist),
    "gamma_H2": lambda LZ, rhoZ, dist: rhoZ**2 * _mean_sq(dist),
    "distance": "w1",
    "f": "sum",
    "rate_exponent": _printed_rate,
}
MEAN = "f = (1/n) Σᵢ fᵢ"
W1_REPAIR = "f = (1/n) Σᵢ fᵢ; O(m^(-1/k)), k ≥ 3"
W1_PRINTED_F, W1_PRINTED_RATE = "f = Σᵢ fᵢ as printed, O(m^(-1/k))", "f = (1/n) Σᵢ fᵢ, O(1/√m) as printed"
_WHY_MEAN = (
    "eq. (1) defines f as the average, and App. B subtracts E_p with p = (1/n) sum p_i: "
    "Assumption 5's f = sum_i f_i (no 1/n) makes (14a) and (16) fail (findings)"
)
_WHY_RATE = (
    "W1 of an empirical measure of m samples decays like m^(-1/k) in dimension k >= 3 (Dudley 1969), "
    "like m^(-1/2) for k = 1 (k = 2 has a log factor, not swept)"
)
READINGS_TV = (
    Reading(
        MEAN,
        {"f": "mean"},
        why=_WHY_MEAN,
        repairs="misprint",
        cite="eq. (1) defines f as the average (1/n) Σᵢ fᵢ, and Assumption 5 itself calls f the average function",
    ),
)
READINGS_W1 = (
    Reading(
        W1_REPAIR,
        {"f": "mean", "rate_exponent": _dudley_rate},
        why=_WHY_MEAN + "; " + _WHY_RATE,
        repairs="rate",
    ),
    Reading(
        W1_PRINTED_F,
        {"rate_exponent": _dudley_rate},
        expect="fails",
        why="the printed f = sum_i f_i alone (the rate repaired): fails whenever the mean gradient is not 0",
        repairs="rate",
    ),
    Reading(
        W1_PRINTED_RATE,
        {"f": "mean"},
        expect="fails",
        why="the printed O(1/sqrt m) in every dimension alone (f repaired): fails at k = 3 and 4",
        repairs="misprint",
        cite="eq. (1) defines f as the average (1/n) Σᵢ fᵢ, and Assumption 5 itself calls f the average function",
    ),
)
#: the m grid and draws of the O(1/sqrt m) sweeps (n = 2, p_u uniform on [0, 1]^k)
RATE_MS, RATE_REPS, RATE_LEVEL, RATE_ATOL = (16, 32, 64, 128, 256), 24, 0.99, 0.05
TV_PARTS = (
    "(14a) gradient: (1/n) sum ||grad f_i - grad f||^2 <= 4 B^2 (1/n) sum TV(p_i, p)^2 for all w",
    "(14a) Hessian: (1/n) sum ||hess f_i - hess f||^2 <= 4 L^2 (1/n) sum TV(p_i, p)^2 for all w",
    "(14a) Hessian under the Hessian bound alone (quadratic in w: ||grad l|| unbounded, B = inf)",
)
W1_PARTS = (
    "(16) gradient: (1/n) sum ||grad f_i - grad f||^2 <= L_Z^2 (1/n) sum W1(p_i, p)^2 for all w",
    "(16) Hessian: (1/n) sum ||hess f_i - hess f||^2 <= rho_Z^2 (1/n) sum W1(p_i, p)^2 for all w",
    "after (16): homogeneous clients, m samples each in dimension k = 1, 3, 4: decay of E W1(p_i, p) in m",
)


def instances_tv(family, trials, rng):
    if family == "quadratic":
        return tv_closed_form_batch(rng, trials or 30)
    return logistic_atoms_batch(rng, trials or 10)


def instances_w1(family, trials, rng):
    if family == "quadratic":
        return w1_closed_form_batch(rng, trials or 20)
    return logistic_atoms_batch(rng, trials or 10)


def _distance(batch, claim):
    P = batch["P"]
    p = P.mean(axis=1)
    return tv(P, p) if claim["distance"] == "tv" else w1_batch(P, p, batch["D"])


def _sups(batch, claim, hess_norm="spectral"):
    P = batch["P"]
    Delta = P - reference(P, claim["f"])[:, None, :]
    if "X" in batch:
        return logistic_sups(Delta, batch["X"], batch["y"], batch["W"], hess_norm)
    return closed_form_sups(Delta, batch["A"], batch["g"], batch["h"], batch["u"], hess_norm)


def _f_note(claim, equality):
    """What the lhs is about under the claim's f, and where equality holds (only with the average)."""
    if claim["f"] == "sum":
        return "f = sum_i f_i: the lhs is about grad f_i - sum_j grad f_j (no equality case)"
    return equality


def evaluate_tv(batch, claim):
    dist = _distance(batch, claim)
    G2, H2 = _sups(batch, claim, claim["hess_norm"])
    if "X" in batch:
        r = np.linalg.norm(batch["X"], axis=-1)
        B, L = r.max(axis=1), r.max(axis=1) ** 2 / 4
        consts = {
            "B": "exact sup: max_k ||x_k|| (approached as |w| grows)",
            "L": "exact: max_k ||x_k||^2/4",
            "lhs": "max over 41 points w (a lower estimate of the sup)",
        }
    else:
        A, g, h, u = batch["A"], batch["g"], batch["h"], batch["u"]
        om = np.linalg.norm(u, axis=-1)
        hmax = np.linalg.norm(h, axis=-1).max(axis=1)
        quad = np.any(A != 0, axis=(1, 2, 3))
        B = np.where(quad, np.inf, np.linalg.norm(g, axis=-1).max(axis=1) + om * hmax)
        L = np.linalg.norm(A, ord=2, axis=(-2, -1)).max(axis=1) + om**2 * hmax
        consts = {
            "B": "exact: max_k sup_w ||grad l(z_k; w)|| (inf for quadratics)",
            "L": "exact: max_k sup_w ||hess l(z_k; w)||_2",
            "lhs": "exact sup over all w (closed form)",
        }
    consts["TV"] = "exact (dyadic weights)" if claim["distance"] == "tv" else "W1 (mutant)"
    with np.errstate(invalid="ignore", over="ignore"):
        gG, gH = claim["gamma_G2"](B, L, dist), claim["gamma_H2"](B, L, dist)
    bounded = np.isfinite(B)
    G2, gG = np.where(bounded, G2, np.nan), np.where(bounded, gG, np.nan)  # B = inf: not applicable
    logi = "X" in batch
    out = {
        TV_PARTS[0]: Sides(
            G2,
            gG,
            "upper",
            applicable=bounded,
            constants=consts,
            note="lhs: max over 41 points w"
            if logi
            else "exact sups; " + _f_note(claim, "equality on the aligned two-group instances"),
        ),
        TV_PARTS[1]: Sides(
            H2,
            gH,
            "upper",
            applicable=bounded,
            constants=consts,
            note="premise as printed: both ||grad l|| <= B and ||hess l|| <= L; "
            + _f_note(claim, "f = (1/n) sum_i f_i"),
        ),
    }
    if not logi:
        out[TV_PARTS[2]] = Sides(
            H2,
            gH,
            "upper",
            applicable=~bounded,
            constants=consts,
            note="a stronger statement than printed (B = inf); the proof uses only L",
        )
    return out


def _pair_max(num, D):
    """max over atoms k != l of num[t, k, l] / D[t, k, l]."""
    K = D.shape[-1]
    off = ~np.eye(K, dtype=bool)
    return np.max(np.where(off, num / np.where(off, D, 1.0), 0.0), axis=(1, 2))


def _lipschitz(batch):
    """(L_Z, rho_Z) over the atoms: exact for the closed forms, a valid bound for logistic."""
    D = batch["D"]
    if "X" in batch:
        X = batch["X"]
        a = batch["y"][..., None] * X
        na = np.linalg.norm(a, axis=-1)
        da = np.linalg.norm(a[:, :, None] - a[:, None, :], axis=-1)
        LZ = _pair_max(np.maximum(np.maximum(na[:, :, None], na[:, None, :]), da), D)
        xx = np.einsum("tkd,tke->tkde", X, X)
        dxx = np.linalg.norm(xx[:, :, None] - xx[:, None, :], ord=2, axis=(-2, -1))
        r2 = na**2
        return LZ, _pair_max(np.maximum(np.maximum(r2[:, :, None], r2[:, None, :]), dxx) / 4, D)
    A, g, h, u = batch["A"], batch["g"], batch["h"], batch["u"]
    om = np.linalg.norm(u, axis=-1)[:, None, None]
    dA = np.linalg.norm(A[:, :, None] - A[:, None, :], ord=2, axis=(-2, -1))
    dg = np.linalg.norm(g[:, :, None] - g[:, None, :], axis=-1)
    dh = np.linalg.norm(h[:, :, None] - h[:, None, :], axis=-1)
    LZ = np.where(np.any(dA != 0, axis=(1, 2)), np.inf, _pair_max(dg + om * dh, D))
    return LZ, _pair_max(dA + om**2 * dh, D)


def prepare_w1(batch):
    """The claim-independent work, once per batch: TV, W1 (linear programs), L_Z, rho_Z, the rate sweeps."""
    P = batch["P"]
    p = P.mean(axis=1)
    out = dict(batch, _tv=tv(P, p), _w1=w1_batch(P, p, batch["D"]))
    out["_LZ"], out["_rhoZ"] = _lipschitz(batch)
    if "rate_dim" in batch:
        T = P.shape[0]
        slope, lo, hi = np.full(T, np.nan), np.full(T, np.nan), np.full(T, np.nan)
        ms = np.array(RATE_MS, dtype=float)
        for t in np.flatnonzero(batch["rate_dim"] > 0):
            mean, se = w1_homogeneous_sweep(
                np.random.default_rng(int(batch["rate_seed"][t])),
                int(batch["rate_dim"][t]),
                RATE_MS,
                RATE_REPS,
            )
            s, (a, b) = fit_exponent(ms, mean, y_se=se, level=RATE_LEVEL)
            slope[t], lo[t], hi[t] = s, a, b
        out["_rate"] = (slope, lo, hi)
    return out


def evaluate_w1(batch, claim):
    dist = batch["_w1"] if claim["distance"] == "w1" else batch["_tv"]
    G2, H2 = _sups(batch, claim)
    LZ, rhoZ = batch["_LZ"], batch["_rhoZ"]
    consts = {
        "W1": "linear program over couplings (scipy linprog, HiGHS)"
        if claim["distance"] == "w1"
        else "TV (mutant)",
        "L_Z, rho_Z": (
            "valid bounds: max over atom pairs of vertex bounds / d"
            if "X" in batch
            else "exact: max over atom pairs of sup_w ||difference|| / d"
        ),
        "lhs": "max over 41 points w" if "X" in batch else "exact sup over all w (closed form)",
    }
    with np.errstate(invalid="ignore", over="ignore"):
        gG, gH = claim["gamma_G2"](LZ, rhoZ, dist), claim["gamma_H2"](LZ, rhoZ, dist)
    ok = np.isfinite(LZ)
    logi = "X" in batch
    out = {
        W1_PARTS[0]: Sides(
            G2,
            gG,
            "upper",
            applicable=ok,
            constants=consts,
            note="lhs: max over 41 points w; L_Z a valid bound"
            if logi
            else "exact; " + _f_note(claim, "equality on shifted two-group instances (stochastic order)"),
        ),
        W1_PARTS[1]: Sides(
            H2,
            gH,
            "upper",
            applicable=ok,
            constants=consts,
            note="lhs: max over 41 points w; rho_Z a valid bound"
            if logi
            else "exact; shared-A quadratics: rho_Z = 0; " + _f_note(claim, "both sides 0"),
        ),
    }
    if "_rate" in batch:
        k = batch["rate_dim"]
        slope, lo, hi = batch["_rate"]
        app = k > 0
        fill = lambda x: np.where(app, x, 0.0)  # noqa: E731  (no sweep on the other instances)
        claimed = ", ".join(
            f"{c:.3g} at k = {d}"
            for d, c in zip((1, 3, 4), claim["rate_exponent"](np.array([1, 3, 4])), strict=True)
        )
        out[W1_PARTS[2]] = rate_sides(
            fill(slope),
            (fill(lo), fill(hi)),
            claim["rate_exponent"](np.maximum(k, 1)),
            kind="at most",
            atol=RATE_ATOL,
            level=RATE_LEVEL,
            applicable=app,
            constants={
                "E W1(p_1, p)": f"Monte Carlo, {RATE_REPS} draws per m in {RATE_MS}, exact W1 = half the "
                "optimal assignment between the two clients' samples"
            },
            note=f"slope of log E W1 on log m (p_u uniform on [0, 1]^k, n = 2); instances 0, 1, 2: k = 1, 3, 4; "
            f"claimed exponent {claimed}; atol 0.05: finite-m curvature",
        )
    return out


_FINDING = (
    "Assumption 5 as printed defines f(w) = sum_i f_i(w) (no 1/n), and with it (14a) and (16) fail "
    "whenever the mean gradient is not 0: n = 2 identical clients p_1 = p_2 = delta_z, d = 1, "
    "l(z; w) = w (B = 1, L = 0; L_Z = rho_Z = 0): TV = W1 = 0, so gamma_G^2 = 0 by (14a) and (16), but "
    "grad f_i - grad f = 1 - 2 = -1 and (1/n) sum ||grad f_i - grad f||^2 = 1. With f = (1/n) sum_i f_i as "
    f"in eq. (1) and App. B (p the average) both hold: readings '{MEAN}' (perfedavg.tv) and "
    f"'{W1_REPAIR}' (perfedavg.w1)."
)

_FINDING_RATE = (
    "The remark after (16), 'each p_i an empirical distribution of m samples from p_u: W1(p_i, p_u) = "
    "O(1/sqrt m) [41], hence gamma_G, gamma_H = O(1/sqrt m)', fails for data in dimension k >= 3 "
    "(W1 of an empirical measure decays like m^(-1/k) there, Dudley 1969; the paper's footnote 1 "
    "concedes the slowness in dimension but keeps O(1/sqrt m)). Minimal instance: k = 3, n = 2, p_u "
    "uniform on [0, 1]^3, W1(p_1, p) = W1(p_1, p_2)/2: over m = 16..256 (24 draws each, seed 0) E W1(p_1, p) "
    "decays with slope -0.34, 99% interval [-0.36, -0.31] (k = 4: -0.28 [-0.30, -0.27]; k = 1: -0.57 "
    f"[-0.68, -0.45]), far above -1/2 (reading '{W1_PRINTED_RATE}'). The repair "
    f"O(m^(-1/k)) for k >= 3 and O(1/sqrt m) for k = 1 holds (reading '{W1_REPAIR}')."
)

_SRC = "Per-FedAvg, Section 4.1"
#: theta -> s theta, f -> c f: Hessian terms A c/s^2, linear terms g c/s, trigonometric amplitudes h c
#: (frequencies u 1/s); the data-space metric D and the weights P are unchanged; logistic: X 1/s (c = 1)
_SCALING = {
    "quadratic": scale_fields({"A": (-2, 1), "g": (-1, 1), "h": (0, 1), "u": (-1, 0)}),
    "logistic": scale_fields({"X": (-1, 0), "W": (1, 0)}, c_free=False),
}

STATEMENTS = (
    Statement(
        id="perfedavg.tv",
        source=f"{_SRC}, eq. (14a), App. B.1",
        paper="per-fedavg-maml.md",
        latex=r"\gamma_G^2 = 4B^2\frac1n\sum_i\|p_i - p\|_{TV}^2,\ \gamma_H^2 = 4L^2\frac1n\sum_i\|p_i - p\|_{TV}^2"
        r"\ \big(f = \textstyle\sum_i f_i\big)",
        text="if ||grad_w l(z; w)|| <= B and ||hess_w l(z; w)|| <= L for all z, w, Assumption 5 (as printed: "
        "f = sum_i f_i) holds with gamma_G^2 = 4 B^2 (1/n) sum TV(p_i, p)^2 and "
        "gamma_H^2 = 4 L^2 (1/n) sum TV(p_i, p)^2",
        assumptions=(
            "shared loss l, f_i = E_{p_i} l, p = (1/n) sum p_i, Z countable",
            "||grad_w l(z; w)|| <= B and ||hess_w l(z; w)||_2 <= L for every z and w",
            "f = sum_i f_i (Assumption 5 as printed)",
        ),
        scaling=_SCALING,
        families={
            "quadratic": ("linear", "quadratic in w (B = inf)", "trigonometric (exact sups)"),
            "logistic": ("mu = 0, atoms in R^2",),
        },
        claimed="upper",
        instances=instances_tv,
        evaluate=evaluate_tv,
        claim=CLAIM_TV,
        readings=READINGS_TV,
        expect="fails",
        # d = 1, n = 2, K = 2: p_1 = δ_z1, p_2 = (δ_z1 + δ_z2)/2 (TV = 1/4). quadratic: l = w (B = 1): lhs 1 > rhs 1/4;
        # logistic: x = 1, y = ±1 at w = 0 (L = 1/4): γ_H lhs 1/16 > 1/64 (see minimal_counterexamples.py)
        counterexamples=TV_MINIMAL,
        mutants=(
            Mutant("4 B^2 -> 3 B^2", {"gamma_G2": lambda B, L, x: 3 * B**2 * _mean_sq(x)}),
            Mutant("square dropped: 4 B (1/n) sum TV^2", {"gamma_G2": lambda B, L, x: 4 * B * _mean_sq(x)}),
            Mutant("4 L^2 -> 3 L^2", {"gamma_H2": lambda B, L, x: 3 * L**2 * _mean_sq(x)}),
            Mutant("gamma_H with B in place of L", {"gamma_H2": lambda B, L, x: 4 * B**2 * _mean_sq(x)}),
            Mutant("distance swapped: W1 in place of TV", {"distance": "w1"}),
            Mutant("Frobenius norm of the Hessian difference (with the spectral L)", {"hess_norm": "fro"}),
            Mutant("inequality reversed", {"flip": (TV_PARTS[0],)}),
        ),
        equivalent_mutants={
            "square dropped on TV: 4 B^2 (1/n) sum TV": "true and weaker: TV <= 1, so TV >= TV^2",
            "mean of TV^2 -> (mean TV)^2": "smaller (Jensen), but equal on the two-group instances where the "
            "bound is attained; not known to fail",
        },
        findings=(_FINDING,),
    ),
    Statement(
        id="perfedavg.w1",
        waived={
            ("quadratic", "shared Hessian across clients"): (
                "here A's leading axis is the atoms z of the shared loss l(w, z), which has one "
                "Hessian for every z (a z-dependent linear term); the logistic family's Hessians "
                "depend on z"
            ),
            ("quadratic", "commuting Hessians across clients"): (
                "as the shared Hessian: one Hessian for every atom z; the logistic family's do not commute"
            ),
        },
        source=f"{_SRC}, eqs. (15)-(16), App. B.2",
        paper="per-fedavg-maml.md",
        latex=r"\gamma_G^2 = L_{\mathcal Z}^2\frac1n\sum_i W_1(p_i, p)^2,\ "
        r"\gamma_H^2 = \rho_{\mathcal Z}^2\frac1n\sum_i W_1(p_i, p)^2\ \big(f = \textstyle\sum_i f_i\big);\ "
        r"p_i \text{ empirical of } m \text{ samples of } p_u:\ W_1(p_i, p_u),\ \gamma_G,\ \gamma_H = "
        r"O(1/\sqrt m)",
        text="if z -> grad_w l(z; w) is L_Z-Lipschitz and z -> hess_w l(z; w) rho_Z-Lipschitz (15), Assumption 5 "
        "(as printed: f = sum_i f_i) holds with gamma_G^2 = L_Z^2 (1/n) sum W1(p_i, p)^2 and "
        "gamma_H^2 = rho_Z^2 (1/n) sum W1(p_i, p)^2; remark after (16): homogeneous clients, each p_i "
        "empirical of m samples of p_u: W1(p_i, p_u) = O(1/sqrt m), so gamma_G, gamma_H = O(1/sqrt m)",
        assumptions=(
            "shared loss l, f_i = E_{p_i} l, p = (1/n) sum p_i, bounded supports",
            "(15) uniformly in w, on Z = the atoms (a finite metric space)",
            "f = sum_i f_i (Assumption 5 as printed)",
            "the remark: O(1/sqrt m) whatever the dimension of the data (as printed)",
        ),
        scaling=_SCALING,
        families={
            "quadratic": (
                "shared-A quadratic (rho_Z = 0)",
                "trigonometric (exact sups)",
                "O(1/sqrt m) sweeps, k = 1, 3, 4",
            ),
            "logistic": ("mu = 0, d = ||x - x'|| + |y - y'|",),
        },
        claimed="upper",
        instances=instances_w1,
        evaluate=evaluate_w1,
        claim=CLAIM_W1,
        readings=READINGS_W1,
        expect="fails",
        # d = 1, n = 2, K = 2: p_1 = δ_z1, p_2 = δ_z2 (W1 = d(z1, z2)/2). quadratic: l = z w, z = 0, 1 (L_Z = 1):
        # lhs 1/2 > 1/4; logistic: (x, y) = (1, ±1) at w = 0: γ_H lhs 1/16 > 1/64 (see minimal_counterexamples.py)
        counterexamples=W1_MINIMAL,
        mutants=(
            Mutant("L_Z^2 -> L_Z^2 / 2", {"gamma_G2": lambda LZ, rZ, x: LZ**2 / 2 * _mean_sq(x)}),
            Mutant(
                "square dropped on L_Z: L_Z (1/n) sum W1^2", {"gamma_G2": lambda LZ, rZ, x: LZ * _mean_sq(x)}
            ),
            Mutant(
                "square dropped on W1: L_Z^2 (1/n) sum W1",
                {"gamma_G2": lambda LZ, rZ, x: LZ**2 * np.mean(x, axis=-1)},
            ),
            Mutant("distance swapped: TV in place of W1", {"distance": "tv"}),
            Mutant("gamma_H with L_Z in place of rho_Z", {"gamma_H2": lambda LZ, rZ, x: LZ**2 * _mean_sq(x)}),
            Mutant("inequality reversed", {"flip": (W1_PARTS[0],)}),
            Mutant(
                "O(m^(-2/k)) (O(1/m) in dimension 1)", {"rate_exponent": lambda k: -2.0 / np.maximum(k, 2)}
            ),
        ),
        equivalent_mutants={
            "W2 in place of W1": "true and weaker: W1 <= W2",
            "Frobenius norms on both sides of (15) and (16)": "also true (E||g(X) - g(Y)|| over a coupling bounds "
            "the difference of means in any norm)",
        },
        findings=(_FINDING, _FINDING_RATE),
        prepare=prepare_w1,
    ),
)
