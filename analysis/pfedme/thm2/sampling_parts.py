r"""pfedme.thm2's parts for client sampling (S < N) and δ-inexact inner solves: instances and sides.

The closed forms are in ``moreau.analysis.pfedme.outer_pieces``; this module draws the extra fields of
the batch (prefix ``sp_`` for sampling, ``dl_`` for inexact solves; ``a``, ``L``, ``lam``, ``eta``,
``beta``, ``R`` are the batch's own) and returns the parts' :class:`Sides`.  See the docstring of
``moreau.analysis.pfedme.thm2`` for the readings and what they show.

Shapes: batch fields ``(T, ...)``; ``prepare_ext`` -> a dict of claim-independent arrays.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Sides, fit_exponent, rate_sides
from moreau.analysis.pfedme.double_wells import (
    F_star,
    envelope,
    ratio_range,
    short_range,
    sigma_f2,
    worst_pair,
)
from moreau.analysis.pfedme.outer_pieces import (
    T_GRID,
    bias_sums,
    biased_run,
    c_S,
    enumerate_sampling,
    h_outer,
    kappa,
    noise_sums,
    outer_certified,
    sampling_sums,
)

__all__ = ["PARTS_S", "PARTS_D", "ext_instances", "prepare_ext", "ext_parts", "T_ENUM", "ROUNDS_D"]

T_ENUM = 7  # rounds of the exhaustive enumeration: 3^7 = 2187 sequences per S
ROUNDS_D = 200  # rounds of the biased closed-form prox loop against the affine closed form
ETA_FLOOR = 2.0 ** -np.arange(6)

PARTS_S = (
    "S < N: E|grad F(w_t)|^2 over all C(N,S)^t sampling sequences (closed-form prox loop) = affine "
    "closed form, t <= 7, S = 1, 2 of N = 3",
    "(a) S < N, delta = 0, fixed eta: (1/T) sum_{t<T} E|grad F(w_t)|^2 <= the first and sampling terms, "
    "every T <= 2^60",
    "(a) S < N: exponent of (N/S - 1) in the sampling variance of grad F(w_t) at fixed eta (S = 1 against "
    "S = 2, enumerated)",
    "(a) S < N, fixed eta, T -> inf: lim E|grad F(w_t)|^2 ∝ eta^1 (the sampling floor)",
)
PARTS_D = (
    "delta > 0: closed-form prox loop with theta~ = theta^ + delta u = affine closed form, 200 rounds",
    "(a) delta > 0, the same u every step, identical clients: (1/T) sum_{t<T} |grad F(w_t)|^2 <= "
    "2 Delta_F/(beta R eta T) + lam^2 delta^2, every T <= 2^60",
    "(a) delta > 0, fresh random unit u: (1/T) sum_{t<T} E|grad F(w_t)|^2 <= 2 Delta_F/(beta R eta T) + "
    "lam^2 delta^2, every T <= 2^60",
    "(b) delta > 0, theta~ = theta^ + delta (theta^ - w)/|theta^ - w|: (1/N) sum |theta~_i(w) - w|^2 <= "
    "2 (|grad F(w)|^2/(lam^2 - 8L^2) + 2 sigma_F2^2/lam^2) + 2 delta^2",
)


def ext_instances(rng, a, L, lam, N, d):
    """The extra batch fields (drawn after the base fields, so those keep their draws)."""
    T = a.size
    i = np.arange(T)
    tau = a * (lam - L) / (2 * lam)
    # sampling: minimisers c_i within a width rho (a - tau) (every client on an outer piece on their hull),
    # centred on 0 (so that grad F's small mean is not lost against |c|), each client on a random side
    rho = rng.uniform(0.3, 0.95, T)
    c = rng.uniform(0, 1, (T, N, d)) * (rho * (a - tau))[:, None, None]
    c -= c.mean(axis=1, keepdims=True)
    side = np.where(rng.uniform(size=(T, N, d)) < 0.5, -1.0, 1.0)
    wts = rng.dirichlet(np.ones(N), T)
    w0 = np.where(
        (i % 2 == 0)[:, None], 0.0, np.einsum("tn,tnd->td", wts, c)
    )  # c_bar (Delta_F = 0) or inside
    # inexact solves: one client shape replicated (identical clients), minimisers side * a
    dside = np.where(rng.uniform(size=(T, d)) < 0.5, -1.0, 1.0)
    dw0 = dside * (a[:, None] + rng.uniform(-0.9, 2.0, (T, d)) * (a - tau)[:, None])
    delta = a * 10.0 ** rng.uniform(-2, 0.5, T)
    u = rng.standard_normal((T, d))
    u = np.where((i % 2 == 0)[:, None], dside, u)  # outward, or a random direction
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    delta_r = 0.9 * L * a / (2 * lam) * rng.uniform(0.1, 1.0, T)  # the ball stays on the outer piece
    return {
        "sp_c": c,
        "sp_side": side,
        "sp_s": c - side * a[:, None, None],
        "sp_w0": w0,
        "dl_side": dside,
        "dl_w0": dw0,
        "dl_delta": delta,
        "dl_u": u,
        "dl_delta_r": delta_r,
    }


def prepare_ext(batch):
    """Claim-independent sides of the extra parts (enumeration, closed forms, certificates)."""
    a, L, lam, eta, beta, R = (batch[k] for k in ("a", "L", "lam", "eta", "beta", "R"))
    s, c, w0, side = (batch[k] for k in ("sp_s", "sp_c", "sp_w0", "sp_side"))
    T, N, d = s.shape
    h = h_outer(L, lam)
    kap = kappa(eta, h, beta, R)
    cbar = c.mean(axis=1)
    lo, hi = np.minimum(c.min(axis=1), w0), np.maximum(c.max(axis=1), w0)
    sp_ok = (
        outer_certified(lo, hi, s, a, L, lam, side) & (kap > 0) & (kap < 1) & (lam > L) & (N > 2)
    )  # S = 1, 2 < N
    e0 = np.sum((w0 - cbar) ** 2, axis=-1)
    V = np.mean(np.sum((c - cbar[:, None]) ** 2, axis=-1), axis=-1)
    Fv = envelope(w0, s, a, L, lam)[0].mean(axis=-1)
    out = {"sp_ok": sp_ok, "sp_Delta": Fv - F_star(s, a, L, lam)[0], "sp_sf2": sigma_f2(s, a, L)}
    t = np.arange(T_ENUM + 1)[:, None]
    for S in (1, 2):
        cs = c_S(N, min(S, N))  # N < 3 (a minimal instance): S = N stands in, the parts do not apply
        E, var = enumerate_sampling(w0, s, a, L, lam, eta, beta, R, min(S, N), T_ENUM)
        floor = h**2 * kap * cs * V / (2 - kap)
        q2t = np.exp(2 * t * np.log1p(-kap))
        cf = h**2 * q2t * e0 + floor * (1 - q2t)
        cf_var = floor * (1 - q2t)
        out[f"sp_enum{S}"], out[f"sp_var{S}"], out[f"sp_cf{S}"], out[f"sp_cfvar{S}"] = E, var, cf, cf_var
        out[f"sp_avg{S}"] = sampling_sums(e0, V, h, kap, cs)[0]
        out[f"sp_floor{S}"] = np.stack(
            [sampling_sums(e0, V, h, kappa(eta * f, h, beta, R), cs)[1] for f in ETA_FLOOR], axis=1
        )
    # rounding of grad F = mean of O(h |w - s|) client gradients (the enumeration's only error)
    out["sp_eps"] = 1e-14 * lam * (a + np.max(np.abs(s), axis=(1, 2)))
    # inexact solves, identical clients (client 0 shape at the origin, N copies)
    dside, dw0, delta, u, delta_r = (batch[k] for k in ("dl_side", "dl_w0", "dl_delta", "dl_u", "dl_delta_r"))
    ds = np.zeros((T, N, d))
    dside3 = np.broadcast_to(dside[:, None], (T, N, d))
    cc = dside * a[:, None]
    cprime = cc + (lam * delta / h)[:, None] * u
    ok_b = outer_certified(np.minimum(dw0, cprime), np.maximum(dw0, cprime), ds, a, L, lam, dside3)
    ok_b &= (kap > 0) & (kap < 1) & (lam > L)
    rad = (lam * delta_r / h)[:, None]
    ok_r = outer_certified(np.minimum(dw0, cc - rad), np.maximum(dw0, cc + rad), ds, a, L, lam, dside3)
    ok_r &= (kap > 0) & (kap < 1) & (lam > L)
    D0 = envelope(dw0, ds, a, L, lam)[0].mean(axis=-1) - F_star(ds, a, L, lam)[0]
    e = dw0 - cprime
    out.update(
        dl_ok=ok_b,
        dl_ok_r=ok_r,
        dl_Delta=D0,
        dl_avg=bias_sums(e, u, h, lam, delta, kap),
        dl_avg_r=noise_sums(np.sum((dw0 - cc) ** 2, axis=-1), h, lam, delta_r, eta, beta, R, N, kap)[0],
    )
    err = np.broadcast_to((delta[:, None] * u)[:, None], (T, N, d))
    ws = biased_run(dw0, ds, a, L, lam, eta, beta, R, ROUNDS_D, err)
    g2 = np.sum(envelope(ws, ds, a, L, lam)[1].mean(axis=-2) ** 2, axis=-1)  # (ROUNDS_D + 1, T)
    qt = np.exp(np.arange(ROUNDS_D + 1)[:, None] * np.log1p(-kap))
    g2_cf = np.sum((h[:, None] * qt[..., None] * e + (lam * delta)[:, None] * u) ** 2, axis=-1)
    out["dl_loop_err"] = np.max(
        np.abs(g2 - g2_cf) / (g2_cf + (1e-14 * lam * (a + lam * delta / h)) ** 2), axis=0
    )
    return out


def ext_parts(batch, ext, claim, cond, consts):
    """``{part: Sides}`` of the sampling and inexact-solve parts (``ext`` from :func:`prepare_ext`)."""
    L, lam, eta, beta, R = (batch[k] for k in ("L", "lam", "eta", "beta", "R"))
    N = np.float64(batch["sp_s"].shape[1])  # a numpy N: (N/S - 1)/(N - 1) is nan, not an error, at N = 1
    sp_ok = ext["sp_ok"] & cond
    with np.errstate(divide="ignore", invalid="ignore"):
        sF2 = lam**2 * ext["sp_sf2"] / (lam**2 - 8 * L**2)
    # exact: enumeration against the closed form (both S), allowed: relative 1e-9 plus grad F's rounding
    errs = []
    for S in (1, 2):
        E, cf, eps = ext[f"sp_enum{S}"], ext[f"sp_cf{S}"], ext["sp_eps"]
        allowed = 1e-9 * cf + 2 * eps * np.sqrt(cf) + eps**2
        errs.append(np.max(np.abs(E - cf) / allowed, axis=0))
    err = np.maximum(*errs)
    # (a) bound over T and both S
    Tg = T_GRID[:, None]
    lhs, rhs = [], []
    for S in (1, 2):
        lhs.append(ext[f"sp_avg{S}"])
        with np.errstate(invalid="ignore", divide="ignore"):
            rhs.append(
                np.asarray(claim["sampling"](ext["sp_Delta"], eta, beta, R, Tg, lam, N, S, sF2), float)
                * np.ones_like(ext[f"sp_avg{S}"])
                + ext["sp_eps"] ** 2
            )  # |w_0 - c_bar| ~ rounding at Delta_F = 0
    l1, r1 = worst_pair(np.concatenate(lhs), np.concatenate(rhs))
    with np.errstate(divide="ignore", invalid="ignore"):  # the sampling term alone, at the limit (S = 1)
        alone = ext["sp_floor1"][:, 0] / (2 * lam * beta * R * eta * sF2)
    # exponent of (N/S - 1): sampling variances of the enumeration, t = 1..T_ENUM
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.log(ext["sp_var1"][1:] / ext["sp_var2"][1:]) / np.log((N / 1 - 1) / (N / 2 - 1))
    p = np.where(np.isfinite(p), p, 0.0)
    slope, ci = np.median(p, axis=0), (np.min(p, axis=0), np.max(p, axis=0))
    # the floor's exponent in eta (closed form, eta 2^-j)
    fl = ext["sp_floor1"]
    fs, fci = np.zeros(lam.size), (np.zeros(lam.size), np.zeros(lam.size))
    pos = sp_ok & np.all(fl > 0, axis=1)
    if pos.any():
        sl, c = fit_exponent(ETA_FLOOR, fl[pos])
        fs[pos], (fci[0][pos], fci[1][pos]) = sl, c
    # inexact solves
    dl_ok, dl_ok_r = ext["dl_ok"] & cond, ext["dl_ok_r"] & cond
    delta, delta_r = batch["dl_delta"], batch["dl_delta_r"]
    rhs_d = np.asarray(claim["delta_a"](ext["dl_Delta"], eta, beta, R, Tg, lam, delta), float) * np.ones_like(
        ext["dl_avg"]
    )
    l2, r2 = worst_pair(ext["dl_avg"], rhs_d)
    rhs_r = np.asarray(
        claim["delta_a"](ext["dl_Delta"], eta, beta, R, Tg, lam, delta_r), float
    ) * np.ones_like(ext["dl_avg_r"])
    l3, r3 = worst_pair(ext["dl_avg_r"], rhs_r)
    floor_r = ext["dl_avg_r"][-1] / (lam * delta_r) ** 2
    return {
        PARTS_S[0]: Sides(
            err,
            np.ones(lam.size),
            "exact",
            applicable=ext["sp_ok"],
            constants=consts,
            note="max |enumerated - closed form|/allowed over t <= 7, S = 1, 2; allowed 1e-9 relative + "
            "rounding of grad F (eps = 1e-14 lam (a + max|s|): 2 eps sqrt(E) + eps^2); "
            f"certified instances {int(ext['sp_ok'].sum())}/{lam.size}",
        ),
        PARTS_S[1]: Sides(
            l1,
            r1,
            "upper",
            applicable=sp_ok & (sF2 > 0),
            constants=consts,
            note=f"worst (T, S) per instance; ratio {ratio_range(l1, r1, sp_ok & (sF2 > 0))}; + the "
            f"rounding of grad F squared (eps above: c_bar = 0 to rounding where Delta_F = 0); the limit "
            f"over the repair's sampling term 2 lam beta R eta c_S sigma_F2^2 "
            f"{short_range(alone[sp_ok & (sF2 > 0)])} (loose: L_F = lam against F's curvature "
            f"lam L/(lam + L), Lemma 2(b)'s sup sigma_f^2); limit "
            f"E|grad F|^2 at S = 1: {short_range(ext['sp_avg1'][-1][sp_ok])}; Delta_F = 0 on half",
        ),
        PARTS_S[2]: rate_sides(
            slope,
            ci,
            claim["sampling_exponent"],
            kind="equal",
            atol=1e-4,
            applicable=sp_ok,
            constants=consts,
            note="log(Var_1/Var_2)/log 4 per round t = 1..7, Var_S = E|grad F(w_t) - E grad F(w_t)|^2 "
            "enumerated (no affine model); interval: min..max over t; atol 1e-4: rounding of "
            "grad F where kappa ~ 1e-9",
        ),
        PARTS_S[3]: rate_sides(
            fs,
            fci,
            claim["sampling_floor_eta"],
            kind="equal",
            atol=0.02,
            applicable=pos,
            constants=consts,
            level=0.95,
            note="eta 2^-j, j = 0..5, S = 1, exact limit h^2 kappa c_S V/(2 - kappa); atol 0.02 for "
            "the O(kappa) curvature (the drift floor is ∝ eta^2)",
        ),
        PARTS_D[0]: Sides(
            ext["dl_loop_err"],
            np.full(lam.size, 1e-9),
            "exact",
            applicable=ext["dl_ok"],
            constants=consts,
            note="max over rounds of |loop - closed form|/(closed form + rounding^2); allowed 1e-9",
        ),
        PARTS_D[1]: Sides(
            l2,
            r2,
            "upper",
            applicable=dl_ok,
            constants=consts,
            note=f"worst T per instance; ratio {ratio_range(l2, r2, dl_ok)} (-> 1: grad F(w_t) -> "
            f"lam delta u); u outward on half, a random direction on the others; delta/a in "
            f"[0.01, 3.2]",
        ),
        PARTS_D[2]: Sides(
            l3,
            r3,
            "upper",
            applicable=dl_ok_r,
            constants=consts,
            note=f"worst T per instance; ratio {ratio_range(l3, r3, dl_ok_r)}; the floor is "
            f"{short_range(floor_r[dl_ok_r])} lam^2 delta^2 (~ h beta eta/(2N): errors of mean 0 average out)",
        ),
    }
