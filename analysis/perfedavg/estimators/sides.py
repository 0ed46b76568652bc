r"""Both sides' ingredients for perfedavg.lemma4_3 and perfedavg.appendix_h, per family.

:func:`quadratic_parts` and :func:`logistic_parts` return, for one estimator, the bias
``‖E∇̃F − ∇F‖`` and the second moment ``E‖∇̃F − ∇F‖²`` (exact, or Monte Carlo with an
interval) and the constants L, σ_G², σ_H², B (ρ for the Hessian-free estimate), each the value
the proofs use at this w (see ``local constants`` in the checkers' docstrings).

Monte Carlo intervals: empirical Bernstein (Maurer & Pontil 2009, Thm 4) on the Rao–Blackwellised
per-draw values, which are bounded almost surely (logistic, μ = 0: every per-sample gradient has
norm at most R = max_j‖x_j‖, every per-sample Hessian at most R²/4); two-sided ``LEVEL`` per
instance; the bias vector coordinate by coordinate (Bonferroni over the d coordinates), its
norm's interval from the resulting box.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Sides
from moreau.analysis.perfedavg.estimators.instances import logistic_smoothness
from moreau.analysis.perfedavg.estimators.quadratic_moments import (
    algorithm1_bias,
    quadratic_constants,
    quadratic_moments,
)
from moreau.analysis.perfedavg.estimators.sample_moments import (
    MAX_COMPOSITIONS,
    LogisticSamples,
    algorithm1_shift,
    compositions,
    configuration_moments,
    local_constants,
    pieces_at,
    variance,
)

__all__ = ["quadratic_parts", "logistic_parts", "bound_sides", "LEVEL", "OUTER", "ZERO_PART"]

#: two-sided level of the Monte Carlo intervals, per instance
LEVEL = 0.999
#: the outer step α_o of each estimate on quadratics, given α and the HF divisor (module docstring of
#: ``perfedavg.estimators.quadratic_moments``)
OUTER = {
    "hessian": lambda a, div: a,
    "first_order": lambda a, div: 0 * a,
    "hessian_free": lambda a, div: 2 * a / div,
}


def quadratic_parts(batch, kind, divisor=2.0):
    """``dict(bias, second, L, sG2, sG2_hf, sH2, B, rho, scale)`` on the quadratic batch, exactly (``(T,)`` each);
    ``sG2_hf`` adds the Hessian-free estimate's points w ± δG̃ (``sG2`` elsewhere)."""
    A, b, w, alpha = batch["A"], batch["b"], batch["w"], batch["alpha"]
    bias, second, _ = quadratic_moments(
        A, b, w, alpha, OUTER[kind](alpha, divisor), batch["D"], batch["D1"], batch["D2"]
    )
    c = quadratic_constants(A, b, w, alpha, batch["delta"] if kind == "hessian_free" else None)
    r = np.einsum("tnij,tj->tni", A, w) - b
    scale = (1 + alpha * c["L"]) ** 2 * (np.max(np.linalg.norm(r, axis=-1), axis=-1) + c["B"])
    out = dict(
        bias=np.linalg.norm(bias, axis=-1),
        second=second,
        L=c["L"],
        sG2=c["sG2"],
        sG2_hf=c.get("sG2_hf", c["sG2"]),
        sH2=c["sH2"],
        B=c["B"],
        rho=np.zeros_like(alpha),
        scale=scale,
    )
    if kind == "hessian":
        out["bias_alg1"] = np.linalg.norm(algorithm1_bias(A, b, w, alpha, batch["D1"]), axis=-1)
    return out


def _eb(samples, lo, hi, level):
    """Empirical-Bernstein interval of the mean of ``samples (K, T)`` in ``[lo, hi]`` a.s."""
    K = samples.shape[0]
    width = np.maximum(hi - lo, np.finfo(float).tiny)
    z = np.clip((samples - lo) / width, 0.0, 1.0)
    log_term = np.log(4 / (1 - level))
    eps = np.sqrt(2 * z.var(axis=0, ddof=1) * log_term / K) + 7 * log_term / (3 * (K - 1))
    m = z.mean(axis=0)
    return lo + width * np.maximum(m - eps, 0.0), lo + width * np.minimum(m + eps, 1.0)


def _norm_interval(Xs, bound, level):
    """Interval of ``‖E X‖`` from draws ``Xs (K, T, d)`` with ``‖X‖ <= bound (T,)`` a.s."""
    d = Xs.shape[-1]
    lo, hi = _eb(Xs.reshape(Xs.shape[0], -1), -np.repeat(bound, d), np.repeat(bound, d), 1 - (1 - level) / d)
    lo, hi = lo.reshape(-1, d), hi.reshape(-1, d)
    near = np.where(lo > 0, lo, np.where(hi < 0, -hi, 0.0))
    far = np.maximum(np.abs(lo), np.abs(hi))
    return np.linalg.norm(near, axis=-1), np.linalg.norm(far, axis=-1)


def _as_bounds(model, Xf, w, alpha, D1, D2, delta, kind, divisor):
    """Almost-sure bounds ``(‖X‖, phi, b_q)`` of one drawn configuration, from smoothness.

    With ``L`` (f) and ``L_max = max_j‖x_j‖²/4`` (per sample): ``‖u − v‖ ≤ Δ = α max_j‖g_j − ḡ‖``
    (u averages the ``w − αg_j``), so ``‖q̄ − G‖ ≤ LΔ`` and every per-sample deviation at u is at
    most ``b_q = max_j‖q_j(v) − G‖ + (L_max + L)Δ``; for the Hessian-free estimate
    ``‖h − G‖ ≤ Δ_h = b_q + LΔ`` and the difference quotients are (2L/κ)- (per sample
    (2L_max/κ)-) Lipschitz in h, anchored at their exact values at h = G.
    """
    g, H, Hb, M, G = pieces_at(model, w, alpha)
    L = logistic_smoothness(Xf)
    Lmax = np.max(np.sum(Xf**2, axis=-1), axis=-1) / 4
    gb = g.mean(axis=-2)
    Delta = alpha * np.max(np.linalg.norm(g - gb[:, None], axis=-1), axis=-1)
    qv = model.grads(w - alpha[:, None] * gb)
    bq = np.max(np.linalg.norm(qv - G[:, None], axis=-1), axis=-1) + (Lmax + L) * Delta
    normM = np.linalg.norm(M, ord=2, axis=(-2, -1))
    MG = np.einsum("tij,tj->ti", M, G)
    if kind == "first_order":
        bx = L * Delta + np.linalg.norm(G - MG, axis=-1)
        return bx, bx**2 + bq**2 / D1, bq
    if kind == "hessian":
        Ht = H - Hb[:, None]
        C = (alpha**2 / D2)[:, None, None] * np.einsum("tnij,tnjk->tik", Ht, Ht) / H.shape[-3]
        normC = np.linalg.norm(C, ord=2, axis=(-2, -1))
        bx = normM * L * Delta
        return (
            bx,
            bx**2 + normC * (np.linalg.norm(G, axis=-1) + L * Delta) ** 2 + (normM**2 + normC) * bq**2 / D1,
            bq,
        )
    kappa = divisor
    step = delta[:, None] * G
    dif = (model.grads(w + step) - model.grads(w - step)) / (kappa * delta)[:, None, None]
    db = dif.mean(axis=-2)
    e0 = np.linalg.norm(db - np.einsum("tij,tj->ti", Hb, G), axis=-1)
    Dh = bq + L * Delta
    bx = L * Delta + alpha * (2 * L / kappa * Dh + e0)
    bz = Dh + alpha * (2 * L / kappa * Dh + e0)
    bd = np.max(np.linalg.norm(dif - db[:, None], axis=-1), axis=-1) + 2 / kappa * (Lmax + L) * Dh
    return bx, bz**2 + alpha**2 * bd**2 / D2, bq


def logistic_parts(batch, kind, divisor=2.0, level=LEVEL):
    """Like :func:`quadratic_parts` on the logistic batch, plus ``bias_ci``, ``second_ci`` (equal to
    the value where the expectation is enumerated exactly)."""
    X, w, alpha = batch["X"], batch["w"], batch["alpha"]
    T, n, d = X.shape
    hf = kind == "hessian_free"
    delta = batch["delta"] if hf else None
    out = {
        k: np.empty(T)
        for k in (
            "bias",
            "second",
            "sG2",
            "sG2_hf",
            "sH2",
            "B",
            "bias_lo",
            "bias_hi",
            "sec_lo",
            "sec_hi",
            "bias_alg1",
            "alg1_lo",
            "alg1_hi",
        )
    }
    mc = batch["cD"].sum(axis=-1)[:, 0] > 0
    groups = [(np.flatnonzero(mc), None)]
    keys = np.stack([batch["D"], batch["D1"] if hf else np.ones(T)], axis=1)
    for key in np.unique(keys[~mc], axis=0):
        groups.append((np.flatnonzero(~mc & np.all(keys == key, axis=1)), key))
    for sel, key in groups:
        if sel.size == 0:
            continue
        sub = {k: batch[k][sel] for k in ("X", "y", "D1", "D2", "alpha")}
        model = LogisticSamples(sub["X"], sub["y"])
        a, ws = sub["alpha"], w[sel]
        if key is None:  # Monte Carlo: K drawn configurations, equal weights
            cD = np.moveaxis(batch["cD"][sel], 1, 0)
            cD1 = np.moveaxis(batch["cD1"][sel], 1, 0) if hf else None
            p = np.full(cD.shape[0], 1.0 / cD.shape[0])
        else:  # every configuration with its multinomial probability
            c, p = compositions(n, key[0])
            if hf:
                c1, p1 = compositions(n, key[1])
                if len(p) * len(p1) > MAX_COMPOSITIONS:  # pairs (D, D') enumerated: as compositions() refuses
                    raise ValueError(
                        f"{len(p)} x {len(p1)} batch pairs of sizes D={int(key[0])}, D'={int(key[1])}, more"
                        f" than {MAX_COMPOSITIONS} to enumerate (draw them: Monte Carlo)"
                    )
                i, j = np.divmod(np.arange(len(p) * len(p1)), len(p1))
                c, c1, p = c[i], c1[j], p[i] * p1[j]
            cD = np.broadcast_to(c[:, None], (len(p), sel.size, n))
            cD1 = np.broadcast_to(c1[:, None], cD.shape) if hf else None
        Xs, phi, pts, hf_pts = configuration_moments(
            model,
            ws,
            a,
            cD,
            sub["D1"],
            sub["D2"],
            kind,
            cD1=cD1,
            delta=None if delta is None else delta[sel],
            divisor=divisor,
        )
        bias, second = np.einsum("p,ptd->td", p, Xs), p @ phi
        if kind == "hessian":  # Algorithm 1 as printed: the Hessian on D'
            X1 = Xs + algorithm1_shift(model, ws, a, pts, sub["D1"])
            out["bias_alg1"][sel] = np.linalg.norm(np.einsum("p,ptd->td", p, X1), axis=-1)
        vertices = ws - a[:, None] * np.moveaxis(model.grads(ws), -2, 0)  # D copies of one sample
        consts = local_constants(model, ws, a, np.concatenate([pts, vertices]))
        for k in ("sG2", "sH2", "B"):
            out[k][sel] = consts[k]
        out["sG2_hf"][sel] = (
            consts["sG2"]
            if hf_pts is None
            else np.maximum(consts["sG2"], np.max(variance(model.grads(hf_pts)), axis=0))
        )
        out["bias"][sel], out["second"][sel] = np.linalg.norm(bias, axis=-1), second
        if key is None:
            bx, bphi, bq = _as_bounds(
                model,
                sub["X"],
                ws,
                a,
                sub["D1"],
                sub["D2"],
                None if delta is None else delta[sel],
                kind,
                divisor,
            )
            out["bias_lo"][sel], out["bias_hi"][sel] = _norm_interval(Xs, bx, level)
            if kind == "hessian":  # the shift's norm is at most (α/D') L_max b_q (PSD Hessians, deviations)
                Lmax = np.max(np.sum(sub["X"] ** 2, axis=-1), axis=-1) / 4
                out["alg1_lo"][sel], out["alg1_hi"][sel] = _norm_interval(
                    X1, bx + a / sub["D1"] * Lmax * bq, level
                )
            out["sec_lo"][sel], out["sec_hi"][sel] = _eb(phi, np.zeros_like(bphi), bphi, level)
        else:
            out["bias_lo"][sel] = out["bias_hi"][sel] = out["bias"][sel]
            out["alg1_lo"][sel] = out["alg1_hi"][sel] = out["bias_alg1"][sel]
            out["sec_lo"][sel] = out["sec_hi"][sel] = second
    out["L"] = logistic_smoothness(X)
    out["rho"] = np.mean(np.linalg.norm(X, axis=-1) ** 3, axis=-1) / (6 * np.sqrt(3))
    out["bias_ci"] = (out.pop("bias_lo"), out.pop("bias_hi"))
    out["second_ci"] = (out.pop("sec_lo"), out.pop("sec_hi"))
    out["bias_alg1_ci"] = (out.pop("alg1_lo"), out.pop("alg1_hi"))
    out["mc"] = mc
    out["scale"] = (1 + alpha * out["L"]) ** 2 * np.max(
        np.linalg.norm(X, axis=-1), axis=-1
    )  # R >= every gradient
    return out


ZERO_PART = "where a bound is 0 (alpha = 0, or no sampling noise): lhs = 0"
#: rounding allowance of the zero part, relative to ``scale`` (bias) or ``scale²`` (second moments);
#: the computed lhs is exactly 0 there (means anchored at sample 0), this only guards the identity
ZERO_RTOL = 1e-12


def bound_sides(entries, constants, level=None):
    """``{name: Sides}`` for ``entries = [(name, lhs, rhs, ci or None, power, applicable, scale, note)]``,
    plus :data:`ZERO_PART`.

    An instance whose bound is exactly 0 (α = 0 zeroes the bias bounds; σ_G = σ_H = 0 the
    second-moment bound) would report lhs/rhs = 0/0, an "attained" ratio 1, in the bound's part:
    it is checked in the zero part instead, an identity (``claimed="exact"``: the estimate is
    unbiased, resp. deterministic, there), with the allowed error ``(ZERO_RTOL scale)^power``
    (``power`` 1 for a bias, 2 for a second moment; ``scale (T,)`` the size of the gradients
    involved).  Each bound's part reports its ratio where the bound is positive, with the same
    allowance as its rounding floor: a computed moment below ``(ZERO_RTOL scale)^power`` is rounding
    of gradients of size ``scale``, so a bound smaller still cannot be refuted in float64 there
    (``--trials 200``, seed 0, logistic #40: sigma_G = 0, B = 7e-14, H.2's bias computed as 1e-26
    against a bound of 7e-29 at gradients of size 2.2): such an instance is "at the rounding floor"
    (undecided), never a failure."""
    out, zl, zr, zany = {}, 0.0, 0.0, False
    for name, lhs, rhs, ci, power, applicable, scale, note in entries:
        z = applicable & (rhs == 0)
        out[name] = Sides(
            lhs,
            rhs,
            "upper",
            applicable=applicable & ~z,
            lhs_ci=ci,
            confidence=None if ci is None else level,
            constants=constants,
            note=note,
            floor=(ZERO_RTOL * scale) ** power,
        )
        zl = zl + np.where(z, lhs, 0.0)
        zr, zany = zr + np.where(z, (ZERO_RTOL * scale) ** power, 0.0), zany | z
    out[ZERO_PART] = Sides(
        zl,
        zr,
        "exact",
        applicable=zany,
        constants=constants,
        note=f"sum over the bounds that are 0 on the instance; allowed: ({ZERO_RTOL:g} x gradient "
        "scale)^(1 or 2), rounding only (the computed lhs is exactly 0 there)",
    )
    return out
