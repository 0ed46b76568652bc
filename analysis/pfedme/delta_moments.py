r"""pfedme.thm2's parts for the moments of δ, S < N with δ > 0, and stochastic gradients: closed forms and sides.

Three gaps of the other parts, each where the round map is affine on a certified region so that every
expectation is a closed form (notation of ``moreau.analysis.pfedme.outer_pieces``: h = λL/(λ + L) the
outer-piece curvature, A = 1 − ηh, κ = β(1 − A^R), q = 1 − κ, c_S = (N/S − 1)/(N − 1)):

* **The text's δ** (Section 3.2: θ̃ is a δ-approximation when E‖θ̃ − θ̂‖ ≤ δ, a *first* moment; Lemma 1
  bounds the *second*, E‖θ̃ − θ̂‖² ≤ δ²).  Two-point errors, fresh and independent in every local step and
  client: e = (δ₁/p)u with probability p, 0 otherwise (‖u‖ = 1), so E‖e‖ = δ₁, E e = δ₁u and
  E‖e‖² = δ₁²/p.  Identical clients on the outer piece on side σ (one per coordinate), started with
  σ(w_0 − c) ≥ 0 and σu ≥ 0 componentwise: every jump points outwards, so σ(w − c) ≥ 0 on every
  realisation (certificate for all of them, however large δ₁/p).  The mean follows the biased affine
  round (``bias_sums``: c' = c + λδ₁u/h), the fluctuation adds the variance of the fresh-error part
  with E‖e − Ee‖² = δ₁²(1/p − 1) (``noise_sums``):

  .. math:: \lim_t E\|\nabla F(w_t)\|^2 = \lambda^2\delta_1^2\big(1 + (1/p - 1)\,r\big),\quad
            r = \frac{h^2\beta^2\eta^2\sum_{r<R}A^{2r}}{N\kappa(2 - \kappa)} \approx \frac{h\beta\eta}{2N},

  unbounded in units of λ²δ₁² as p → 0 and at most λ²E‖e‖² = λ²δ₁²/p (r ≤ 1).
* **S < N with δ > 0**: the sampling instances with client i's inner solves off by a fixed e_i = δu_i:
  w_{i,R} − c'_i = A^R(w − c'_i), c'_i = c_i + λe_i/h, so the sampling closed form applies with the
  c'_i, and ∇F(w) = h(w − c̄) = h(w − c̄') + λē:

  .. math:: E\|\nabla F(w_t)\|^2 = \|hq^t(w_0 - \bar c') + \lambda\bar e\|^2
            + \frac{h^2\kappa c_S V'}{2 - \kappa}(1 - q^{2t}),\quad V' = \tfrac1N\textstyle\sum\|c'_i - \bar c'\|^2;

  certificate: the hull of w_0 and the c'_i.  Independent check: all C(N, S)^t sequences enumerated
  through the closed-form prox loop with the errors added.
* **Stochastic gradients** (Assumption 2): Theorem 2 holds γ_f only through δ (Lemma 1,
  δ² = 2(γ_f²/|D| + ν)/(λ − L)²; Lemma 1 itself is ``pfedme.lemma1``).  A mini-batch gradient
  ∇f + ζ (E ζ = 0, E‖ζ‖² = γ_D² := γ_f²/|D|) makes the exact inner solution θ̃ = prox(w − ζ/λ)
  (∇f(θ̃) + ζ + λ(θ̃ − w) = 0), on an outer piece θ̃ − θ̂ = −ζ/(λ + L): fresh errors of mean 0 and
  E‖e‖² = γ_D²/(λ + L)² ≤ δ²/2, the fresh-error model of the δ parts (ζ uniform on {±γ_D e_k}).

Shapes: batch fields ``(T, ...)``; grids of T as a leading axis.

References: pFedMe (T Dinh et al., 2020), Section 3.2, Algorithm 1, Lemma 1, Theorem 2.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Sides
from moreau.analysis.pfedme.double_wells import (
    F_star,
    envelope,
    prox,
    ratio_range,
    short_range,
    sigma_f2,
    worst_pair,
)
from moreau.analysis.pfedme.outer_pieces import (
    T_GRID,
    _avg,
    bias_sums,
    c_S,
    enumerate_sampling,
    h_outer,
    kappa,
    noise_sums,
    outer_certified,
)

__all__ = [
    "PARTS_M",
    "moment_instances",
    "prepare_moments",
    "moment_parts",
    "two_point_sums",
    "ratio_r",
    "sampling_delta_sums",
    "sampling_delta_t",
    "b_two_point",
]

T_ENUM_D = 6  # rounds of the enumeration with errors: 3^6 = 729 sequences per S

PARTS_M = (
    "(a) fresh two-point inner errors (E|e| = delta_1, E|e|^2 = delta_1^2/p): (1/T) sum_{t<T} "
    "E|grad F(w_t)|^2 <= 2 Delta_F/(beta R eta T) + lam^2 delta^2, delta = delta_of(delta_1, delta_1/sqrt(p)), "
    "every T <= 2^60",
    "(b) two-point inner error along theta^ - w: (1/N) sum E|theta~_i - w|^2 <= 2 (|grad F|^2/"
    "(lam^2 - 8L^2) + 2 sigma_F2^2/lam^2) + 2 delta^2, delta = delta_of(delta_1, delta_1/sqrt(p))",
    "S < N and delta > 0: E|grad F(w_t)|^2 over all C(N,S)^t sequences (closed-form prox loop, theta~ = "
    "theta^ + delta u_i) = closed form, t <= 6, S = 1, 2 of N = 3",
    "(a) S < N and delta > 0: (1/T) sum_{t<T} E|grad F(w_t)|^2 <= combine(the S < N bound, lam^2 delta^2), "
    "every T <= 2^60",
    "stochastic gradients: the mini-batch inner solution prox(w - zeta/lam) solves grad f + zeta + "
    "lam(theta - w) = 0 and is theta^ - zeta/(lam + L) on the outer piece",
    "(a) stochastic gradients, S = N: (1/T) sum_{t<T} E|grad F(w_t)|^2 <= 2 Delta_F/(beta R eta T) + "
    "lam^2 delta^2, delta^2 = Lemma 1's 2 (gamma_f^2/|D| + nu)/(lam - L)^2 (nu = 0), every T <= 2^60",
)


def ratio_r(h, eta, beta, R, N, kap):
    """r = h²β²η²Σ_{r<R}A^{2r}/(Nκ(2 − κ)) ``(T,)``: the fresh-error floor in units of λ²E‖e − Ee‖²."""
    lA2 = 2 * np.log1p(-eta * h)
    sumA2 = np.expm1(np.asarray(R, float) * lA2) / np.expm1(lA2)
    return h**2 * beta**2 * eta**2 * sumA2 / (N * kap * (2 - kap))


def two_point_sums(e0v, u, h, lam, delta1, p, eta, beta, R, N, kap, T=T_GRID):
    """Identical outer-piece clients, fresh two-point errors (δ₁/p)u w.p. p (module docstring):
    ``(avg (G, T), limit (T,))`` of (1/T)Σ_{t<T} E‖∇F(w_t)‖²; ``e0v`` = w_0 − c' ``(T, d)``."""
    with np.errstate(divide="ignore"):
        spread = delta1 * np.sqrt(np.maximum(1 / p - 1, 0))
    noise, floor = noise_sums(np.zeros_like(h), h, lam, spread, eta, beta, R, N, kap, T)
    return bias_sums(e0v, u, h, lam, delta1, kap, T) + noise, (lam * delta1) ** 2 + floor


def b_two_point(x, delta1, p):
    """(1/N)Σ E‖θ̃_i − w‖² for θ̃_i = θ̂_i + (δ₁/p)(θ̂_i − w)/‖θ̂_i − w‖ w.p. p, θ̂_i otherwise; ``x`` ``(..., T, N)``
    the distances ‖θ̂_i − w‖: E(x + E)² = x² + 2xδ₁ + δ₁²/p."""
    d1, pp = np.asarray(delta1)[:, None], np.asarray(p)[:, None]
    return np.mean(x**2 + 2 * x * d1 + d1**2 / pp, axis=-1)


def _shifted(w0, c, err, h, lam):
    cp = c + (lam / h)[:, None, None] * err
    cbar, ebar = cp.mean(axis=1), err.mean(axis=1)
    Vp = np.mean(np.sum((cp - cbar[:, None]) ** 2, axis=-1), axis=-1)
    return w0 - cbar, ebar, Vp


def sampling_delta_sums(w0, c, err, h, lam, kap, cS, T=T_GRID):
    """S < N, client i's inner solves off by ``err`` ``(T, N, d)``: (1/T)Σ_{t<T} E‖∇F(w_t)‖² ``(G, T)``."""
    e0v, ebar, Vp = _shifted(w0, c, err, h, lam)
    nb = np.sqrt(np.sum(ebar**2, axis=-1))
    u = ebar / np.where(nb > 0, nb, 1.0)[:, None]
    floor = h**2 * kap * cS * Vp / (2 - kap)
    return bias_sums(e0v, u, h, lam, nb, kap, T) + _avg(np.zeros_like(h), h, kap, floor, T)


def sampling_delta_t(w0, c, err, h, lam, kap, cS, t_max):
    """The same, per round: E‖∇F(w_t)‖² ``(t_max + 1, T)``."""
    e0v, ebar, Vp = _shifted(w0, c, err, h, lam)
    t = np.arange(t_max + 1)[:, None]
    qt = np.exp(t * np.log1p(-kap))
    mean = h[:, None] * qt[..., None] * e0v + (lam[:, None] * ebar)
    return np.sum(mean**2, axis=-1) + h**2 * kap * cS * Vp / (2 - kap) * (1 - qt**2)


def moment_instances(rng, a, L, lam, eta, beta, R, sp_c, sp_side, sp_w0):
    """The extra batch fields (drawn after the others, so those keep their draws)."""
    T, N, d = sp_c.shape
    i = np.arange(T)
    h, kap = h_outer(L, lam), kappa(eta, h_outer(L, lam), beta, R)
    # text's delta: identical clients at c = side a (s = 0), w_0 outward of c (w_0 = c on a quarter), u outward
    side = np.where(rng.uniform(size=(T, d)) < 0.5, -1.0, 1.0)
    w0 = side * a[:, None] * (1 + np.where((i % 4 == 0)[:, None], 0.0, rng.uniform(0, 2, (T, d))))
    u = side * np.abs(rng.standard_normal((T, d)))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.nan_to_num(ratio_r(h, eta, beta, R, N, kap), nan=1.0)
    p = np.clip(r * 10.0 ** -rng.uniform(-1, 2, T), 1e-300, 1.0)  # p < r (text's reading fails) on 2/3
    p[i % 8 == 3] = 1.0  # deterministic: both moments delta_1
    # S < N with delta > 0: a fixed error delta u_i per client (one u for all on even instances), delta from
    # lam^2 delta^2 ~ the sampling term at S = 2, capped by the certificate's slack on the hull
    ui = rng.standard_normal((T, N, d))
    ui = np.where((i % 2 == 0)[:, None, None], ui[:, :1], ui)
    ui /= np.linalg.norm(ui, axis=-1, keepdims=True)
    tau = a * (lam - L) / (2 * lam)
    lo, hi = np.minimum(sp_c.min(axis=1), sp_w0), np.maximum(sp_c.max(axis=1), sp_w0)
    slack = np.min([np.min(sp_side * (w[:, None] - sp_c), axis=(1, 2)) for w in (lo, hi)], axis=0) + (a - tau)
    with np.errstate(invalid="ignore", divide="ignore"):
        sF2 = lam**2 * sigma_f2(sp_c - sp_side * a[:, None, None], a, L) / (lam**2 - 8 * L**2)
        term = 2 * lam * beta * R * eta * c_S(N, 2) * sF2
        dlt = np.sqrt(np.where(sF2 > 0, term, 0.0)) / lam * 10.0 ** rng.uniform(0.02, 0.5, T)
    cap = 0.9 * np.maximum(slack, 0) * h / lam
    dlt = np.where(np.isfinite(dlt) & (dlt > 0), np.minimum(dlt, cap), cap * rng.uniform(0.1, 1, T))
    return {
        "tp_side": side,
        "tp_w0": w0,
        "tp_u": u,
        "tp_p": p,
        "tp_pb": 10.0 ** rng.uniform(-3, -0.3, T),
        "sd_u": ui,
        "sd_delta": dlt,
    }


def prepare_moments(batch):
    """Claim-independent sides of the parts (closed forms, enumeration, certificates)."""
    a, L, lam, eta, beta, R = (batch[k] for k in ("a", "L", "lam", "eta", "beta", "R"))
    T, N, d = batch["sp_s"].shape
    h = h_outer(L, lam)
    kap = kappa(eta, h, beta, R)
    live = (kap > 0) & (kap < 1) & (lam > L) & (eta * h < 1)
    tau = a * (lam - L) / (2 * lam)
    # text's delta
    side, w0, u, p = (batch[k] for k in ("tp_side", "tp_w0", "tp_u", "tp_p"))
    delta1 = batch["dl_delta"]
    c = side * a[:, None]
    zs = np.zeros((T, N, d))
    tp_ok = live & np.all(side * (w0 - c) >= 0, axis=1) & np.all(side * u >= 0, axis=1)
    tp_avg, tp_lim = two_point_sums(
        w0 - c - (lam * delta1 / h)[:, None] * u, u, h, lam, delta1, p, eta, beta, R, N, kap
    )
    tp_Delta = envelope(w0, zs, a, L, lam)[0].mean(axis=-1) - F_star(zs, a, L, lam)[0]
    # S < N with delta > 0
    cs, sw0, sside, ss = batch["sp_c"], batch["sp_w0"], batch["sp_side"], batch["sp_s"]
    err = batch["sd_delta"][:, None, None] * batch["sd_u"]
    cp = cs + (lam / h)[:, None, None] * err
    lo, hi = np.minimum(cp.min(axis=1), sw0), np.maximum(cp.max(axis=1), sw0)
    sd_ok = live & outer_certified(lo, hi, ss, a, L, lam, sside) & (N > 2)  # S = 1, 2 < N
    out = {
        "tp_ok": tp_ok,
        "tp_avg": tp_avg,
        "tp_lim": tp_lim,
        "tp_Delta": tp_Delta,
        "sd_ok": sd_ok,
        "sd_Delta": envelope(sw0, ss, a, L, lam)[0].mean(axis=-1) - F_star(ss, a, L, lam)[0],
    }
    for S in (1, 2):
        cS = c_S(N, min(S, N))  # N < 3 (a minimal instance): S = N stands in, the parts do not apply
        out[f"sd_avg{S}"] = sampling_delta_sums(sw0, cs, err, h, lam, kap, cS)
        E, _ = enumerate_sampling(sw0, ss, a, L, lam, eta, beta, R, min(S, N), T_ENUM_D, error=err)
        cf = sampling_delta_t(sw0, cs, err, h, lam, kap, cS, T_ENUM_D)
        eps = 1e-14 * lam * (a + np.max(np.abs(ss), axis=(1, 2)) + lam * batch["sd_delta"] / h)
        out[f"sd_err{S}"] = np.max(np.abs(E - cf) / (1e-9 * cf + 2 * eps * np.sqrt(cf) + eps**2), axis=0)
    # stochastic gradients: zeta in {+-gamma_D e_k} with gamma_D = (lam + L) dl_delta_r, at the corners of the
    # certified box of the fresh-error part (identical clients at dl_side a) and at points on the concave piece
    gD = (lam + L) * batch["dl_delta_r"]
    dside, dw0 = batch["dl_side"], batch["dl_w0"]
    cc = dside * a[:, None]
    rad = (lam * batch["dl_delta_r"] / h)[:, None]
    lo, hi = np.minimum(dw0, cc - rad), np.maximum(dw0, cc + rad)
    pts = np.stack([lo, hi, cc, 0.3 * tau[:, None] * dside])
    # certificate of the fresh-error model: the iterates' box widened by |zeta|/lam stays on the outer piece
    sg_ok = live & outer_certified(
        lo - (gD / lam)[:, None],
        hi + (gD / lam)[:, None],
        zs,
        a,
        L,
        lam,
        np.broadcast_to(dside[:, None], (T, N, d)),
    )
    resid = np.zeros(T)
    for k in range(d):
        for sgn in (-1.0, 1.0):
            zeta = np.zeros((T, d))
            zeta[:, k] = sgn * gD
            th = prox(pts - zeta / lam[:, None], zs[:, :1], a, L, lam)[..., 0, :]
            z = th
            grad = np.where(
                np.abs(z) <= a[:, None] / 2, -L[:, None] * z, L[:, None] * (z - a[:, None] * np.sign(z))
            )
            scale = lam[:, None] * (np.abs(pts) + a[:, None]) + gD[:, None]
            r1 = np.abs(grad + zeta + lam[:, None] * (th - pts)) / scale
            th0 = prox(pts[:2], zs[:, :1], a, L, lam)[..., 0, :]
            r2 = np.abs(th[:2] - th0 + zeta / (lam + L)[:, None]) / (np.abs(pts[:2]) + a[:, None])
            resid = np.maximum(
                resid, np.maximum(r1.max(axis=(0, 2)), np.where(sg_ok, r2.max(axis=(0, 2)), 0.0))
            )
    out.update(sg_resid=resid, sg_gD2=gD**2, sg_ok=sg_ok)
    return out


def moment_parts(batch, ext, mom, b_sides, claim, cond, consts):
    """``{part: Sides}`` (``ext`` from ``prepare_ext``, ``mom`` from :func:`prepare_moments`, ``b_sides`` the
    (b) parts' ``(x (P, T, N), gF2 (P, T), sF2 (T,))`` at the (b) points)."""
    L, lam, eta, beta, R = (batch[k] for k in ("L", "lam", "eta", "beta", "R"))
    N = np.float64(batch["sp_s"].shape[1])  # a numpy N: (N/S - 1)/(N - 1) is nan, not an error, at N = 1
    Tg = T_GRID[:, None]
    delta1, p = batch["dl_delta"], batch["tp_p"]
    with np.errstate(divide="ignore", invalid="ignore"):
        sF2 = lam**2 * ext["sp_sf2"] / (lam**2 - 8 * L**2)
        dlt = np.asarray(claim["delta_of"](delta1, delta1 / np.sqrt(p)), float)
        rhs = np.asarray(claim["delta_a"](mom["tp_Delta"], eta, beta, R, Tg, lam, dlt), float) * np.ones_like(
            mom["tp_avg"]
        )
    l1, r1 = worst_pair(mom["tp_avg"], rhs)
    tp_ok = mom["tp_ok"] & cond
    excess = mom["tp_lim"] / (lam * delta1) ** 2
    # (b)
    x, gF2, bsF2 = b_sides
    pb = batch["tp_pb"]
    lhs_b = b_two_point(x, delta1, pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        rhs_b = claim["b_delta"](
            gF2, bsF2, lam, L, np.asarray(claim["delta_of"](delta1, delta1 / np.sqrt(pb)), float)
        )
    l2, r2 = worst_pair(lhs_b, np.where(np.isnan(rhs_b), -np.inf, rhs_b))
    # S < N with delta > 0
    sd_ok = mom["sd_ok"] & cond & (sF2 > 0)
    lhs, rhs = [], []
    for S in (1, 2):
        with np.errstate(invalid="ignore", divide="ignore"):
            samp = np.asarray(claim["sampling"](mom["sd_Delta"], eta, beta, R, Tg, lam, N, S, sF2), float)
            dl = np.asarray(
                claim["delta_a"](np.zeros_like(lam), eta, beta, R, Tg, lam, batch["sd_delta"]), float
            )
            rhs.append(np.asarray(claim["delta_combine"](samp, dl), float) * np.ones_like(mom[f"sd_avg{S}"]))
        lhs.append(mom[f"sd_avg{S}"])
    l3, r3 = worst_pair(np.concatenate(lhs), np.concatenate(rhs))
    # for the note of the S < N part: lam^2 delta^2 over the S = 2 sampling term
    s2_term = np.maximum(2 * lam * beta * R * eta * c_S(N, min(2, N)) * sF2, 1e-300)
    delta_over_s2 = (lam * batch["sd_delta"])[sd_ok] ** 2 / s2_term[sd_ok]
    err = np.maximum(mom["sd_err1"], mom["sd_err2"])
    # stochastic gradients
    with np.errstate(divide="ignore", invalid="ignore"):
        d2 = np.asarray(claim["lemma1_delta2"](mom["sg_gD2"], np.zeros_like(lam), lam, L), float)
        rhs_s = np.asarray(
            claim["delta_a"](ext["dl_Delta"], eta, beta, R, Tg, lam, np.sqrt(d2)), float
        ) * np.ones_like(ext["dl_avg_r"])
    l4, r4 = worst_pair(ext["dl_avg_r"], rhs_s)
    sg_ok = mom["sg_ok"] & cond
    which = {1.0: "the text's first moment", 2.0: "Lemma 1's root mean square"}.get(
        float(claim["delta_of"](1.0, 2.0)), "delta_of"
    )
    return {
        PARTS_M[0]: Sides(
            l1,
            r1,
            "upper",
            applicable=tp_ok,
            constants=consts,
            note=f"delta read as {which}; worst T per instance; ratio {ratio_range(l1, r1, tp_ok)}; the limit is "
            f"{short_range(excess[tp_ok])} lam^2 delta_1^2 (1 + (1/p - 1) r, r ~ h beta eta/(2N)); "
            f"p/r in 10^-2..10^1; certified on every realisation (outward jumps)",
        ),
        PARTS_M[1]: Sides(
            l2,
            r2,
            "upper",
            applicable=cond,
            constants=consts,
            note=f"delta read as {which}; worst point per instance (the points of the delta = 0 part); "
            f"ratio {ratio_range(l2, r2, cond)}; p in [1e-3, 0.5], delta_1/a in [0.01, 3.2]",
        ),
        PARTS_M[2]: Sides(
            err,
            np.ones(lam.size),
            "exact",
            applicable=mom["sd_ok"],
            constants=consts,
            note=f"max |enumerated - closed form|/allowed, t <= {T_ENUM_D}, S = 1, 2; allowed 1e-9 "
            f"relative + rounding of grad F; certified instances {int(mom['sd_ok'].sum())}/{lam.size}",
        ),
        PARTS_M[3]: Sides(
            l3,
            r3,
            "upper",
            applicable=sd_ok,
            constants=consts,
            note=f"worst (T, S) per instance; ratio {ratio_range(l3, r3, sd_ok)}; lam^2 delta^2 over "
            f"the S = 2 sampling term {short_range(delta_over_s2)}; "
            f"one u for all clients on even instances",
        ),
        PARTS_M[4]: Sides(
            mom["sg_resid"],
            np.full(lam.size, 1e-13),
            "exact",
            applicable=lam > L,
            constants=consts,
            note="zeta = +-gamma_D e_k; points: the certified box's corners, c, 0.3 tau (concave piece); "
            "relative residuals, allowed 1e-13; theta^ - zeta/(lam + L) where the box widened by "
            f"|zeta|/lam is certified ({int(mom['sg_ok'].sum())}/{lam.size})",
        ),
        PARTS_M[5]: Sides(
            l4,
            r4,
            "upper",
            applicable=sg_ok,
            constants=consts,
            note=f"worst T per instance; ratio {ratio_range(l4, r4, sg_ok)}; exact expectation over "
            f"zeta (E|e|^2 = gamma_D^2/(lam + L)^2: the fresh-error model); gamma_f enters only "
            f"through delta",
        ),
    }
