r"""pfedme.lemma1, family "nonconvex": 1-D sample losses f + ψ_j with θ-dependent noise.

Lemma 1 assumes f μ-strongly convex (Assumption 1(a)) and the per-sample gradient variance bounded
at every fixed point (Assumption 2); §3.2 asks that every mini-batch problem h̃ be strongly convex.
Nothing asks the sample losses to be μ-strongly convex.  This family meets exactly the printed
hypotheses and nothing more:

* d = 1, f(θ) = (μ/2)(θ − c)², n samples ℓ_j = f + ψ_j with ψ_j' piecewise linear and continuous:
  the values ``V[j, p]`` at shared knots ``knots[p]`` (linear between, constant outside), with
  Σ_j V[j, p] = 0 at every knot, so Σ_j ψ_j' = 0 everywhere and f is the mean of the ℓ_j
  (the values are rounded to a grid of a power of two about 2⁻⁴⁰ max|V| and the last row is minus
  the sum of the others: the sums are exactly 0 in floating point);
* h̃_D(θ) = f̃(θ; D) + (λ/2)(θ − w)² with h̃_D' = κ(θ − θ̂) + ψ_D'(θ), κ = λ + μ, θ̂ = (μc + λw)/κ and
  ψ_D' the mean of the ψ_j' of the batch: strongly convex when κ + (every slope of every ψ_j') > 0
  (checked; the generator keeps a margin of 10⁻³κ), while ℓ_j'' = μ + slope < 0 where a slope is
  below −μ: the sample losses are nonconvex;
* γ_f² = sup_θ (1/n) Σ_j ψ_j'(θ)² EXACTLY: on each interval between knots every ψ_j' is affine, so
  the variance is a convex quadratic, largest at a knot; outside the knots it is constant.  So
  γ_f² is the largest variance over the knots;
* θ̃: the root of h̃_D' = 0 (mode exact) or, when ν > 0, the farther from θ̂ of the two roots of
  h̃_D' = ±√ν (mode aligned: θ̃ may depend on D); h̃_D' is piecewise linear and strictly increasing, so
  each root is found exactly (the knot interval where it changes sign, then a linear solve, or the
  slope-κ pieces outside the knots);
* the expectation is exact: the mean over all n^|D| ordered mini-batches (sampling with
  replacement).

Bumps (the failing construction, ``bumps``).  With x = θ − θ̂, the knots are the roots ±t_i of q
pairs (t_1 > … > t_q), plus n − 2q idle samples.  The left-root sample k has its own values 0 at the
knots left of −t_k, κt_k at −t_k and max(κt_k − sκ(x + t_k), 0) at the knots right of it (s < 1:
it falls with slope −sκ); the right-root ones mirror it.  Its root is −t_k, and between −t_k and 0
its ψ_k' is at least κ|x| (no strongly convex h̃ can do with less: h̃' = κx + ψ_k' must be positive
right of the root).  At each knot the sum of these values is
taken away, in equal shares, from the samples not forced there (those whose root is not between
the knot and θ̂), so the mean stays 0 and the variance at −t_i is about κ²t_i² i/(n − i).  With
t_i² = (n − i)/i (C = 1) that is 1 at every knot, while E(θ̃ − θ̂)² = (2/n) Σ_i t_i²: the ratio to
δ² = 2γ²/κ² (|D| = 1, ν = 0) tends to (1/n) Σ_{i ≤ n/2} (n − i)/i as s → 1, which grows like log n
(at s = 0.995, the worst group: 0.996 for n = 4, 1.097 for n = 5, 1.326 for n = 6, 1.770 for
n = 10, 3.063 for n = 40, 3.948 for n = 100; the limits 1, 1.1, 4/3, 1.78, 3.10, 4.00).
The same argument bounds every 1-D instance with |D| = 1, ν = 0: t_i² ≤ (γ²/κ²)(n − i)/i, so the
ratio is at most (1/2n) Σ over both sides of Σ_i (n − i)/i: at most 1 for n ≤ 4, 7/6 for n = 5.
Lemma 1 fails because θ̃ is the root of the batch's own h̃: it sits where that sample's noise is
large, while Assumption 2 bounds the noise at each fixed point, where few samples are large.

With ν > 0 a second failure: h̃ is only (κ + min slope)-strongly convex, not κ-strongly convex, so
a residual √ν moves θ̃ by up to √ν/(κ(1 − s)) instead of √ν/κ.

Flat (θ-independent noise, the reading's family): ψ_j' = a_j constant (Σ a_j = 0), sample losses
μ-strongly convex; with a_j = ±a, |D| = 1, ν = γ² and θ̃ pushed away, |θ̃ − θ̂| = 2a/κ on every
draw: the bound is attained (ratio 1).
"""

from __future__ import annotations

import itertools

import numpy as np

from moreau.analysis.engine.instances import log_uniform, split_counts

# the family is named "nonconvex" (one of moreau.analysis.engine.runner.FAMILIES): its sample losses are
# nonconvex, while f is μ-strongly convex

__all__ = [
    "instances",
    "prepare",
    "bumps",
    "h_roots",
    "sup_variance",
    "min_slopes",
    "minimal_counterexample",
    "WORST_N",
    "MARGIN",
]

EXACT, ALIGNED = 0, 2  # the modes of lemma1 (FIXED has no meaning in 1-D with a pushed θ̃)
#: n of the worst group (the audit's configuration: |D| = 1, ν = 0; s = 0.995, t_i² = (n − i)/i)
WORST_N = (5, 6, 10, 40, 100)
N_MAX = max(WORST_N)
#: every h̃ is kept (MARGIN κ)-strongly convex by the generator
MARGIN = 1e-3


def bumps(n, tl, tr, s, kappa):
    """``(knots, V, roots)`` of the bump construction, θ̂ = 0 (module docstring): ``tl``, ``tr`` the
    left and right |roots| (descending, len(tl) + len(tr) <= n), ``s`` the fall slope in units of κ."""
    tl, tr = np.asarray(tl, float), np.asarray(tr, float)
    ql, qr = tl.size, tr.size
    x = np.concatenate([-tl, tr[::-1]])
    roots = np.concatenate([-tl, tr, np.zeros(n - ql - qr)])
    own = np.zeros((n, x.size))
    forced = np.zeros((n, x.size), bool)
    for k, t in enumerate(tl):
        own[k] = np.where(x >= -t, np.maximum(kappa * t - s * kappa * (x + t), 0.0), 0.0)
        forced[k] = (x >= -t) & (x < 0)
    for k, t in enumerate(tr):
        own[ql + k] = -np.where(x <= t, np.maximum(kappa * t - s * kappa * (t - x), 0.0), 0.0)
        forced[ql + k] = (x <= t) & (x > 0)
    V = own.copy()
    for p in range(x.size):
        free = ~forced[:, p]
        V[free, p] -= own[:, p].sum() / free.sum()
    return x, V, roots


def _exact_zero_sum(V, n):
    """V (n rows used) on a grid 2⁻⁴⁰ max|V| apart, the last row minus the sum of the others: every
    column sums to exactly 0 in floating point (all partial sums are multiples of the grid < 2⁵³)."""
    scale = np.max(np.abs(V[:n]))
    if scale == 0:
        return V
    grid = 2.0 ** (np.floor(np.log2(scale)) - 40)
    V = V.copy()
    V[: n - 1] = np.round(V[: n - 1] / grid) * grid
    V[n - 1] = -V[: n - 1].sum(axis=0)
    return V


def min_slopes(knots, V):
    """The smallest slope of each ψ_j' (rows of V) between consecutive knots (0 with one knot)."""
    if knots.size < 2:
        return np.zeros(V.shape[0])
    return np.min(np.diff(V, axis=-1) / np.diff(knots), axis=-1)


def sup_variance(V, weight):
    """γ² = sup_θ (1/n) Σ_j ψ_j'(θ)²: the largest value over the knots (module docstring)."""
    n = weight.sum(axis=-1)
    return np.max(np.einsum("...j,...jp->...p", weight, V**2) / n[..., None], axis=-1)


def h_roots(knots, v, kappa, b, level):
    """The root of κθ − b + v(θ) − level = 0 (v piecewise linear on ``knots``, constant outside,
    κθ + v strictly increasing); ``v`` ``(..., P)``, ``level`` broadcast against ``v[..., 0]``."""
    g = kappa * knots + v - b - np.asarray(level)[..., None]
    P = knots.size
    below = np.sum(g < 0, axis=-1)  # g increasing: g < 0 exactly at the first ``below`` knots
    k = np.clip(below - 1, 0, max(P - 2, 0))
    gk = np.take_along_axis(g, k[..., None], -1)[..., 0]
    xk = knots[k]
    if P > 1:
        gk1 = np.take_along_axis(g, (k + 1)[..., None], -1)[..., 0]
        xk1 = knots[k + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = xk - gk * (xk1 - xk) / (gk1 - gk)
    else:
        inside = xk
    left = knots[0] - g[..., 0] / kappa
    right = knots[-1] - g[..., -1] / kappa
    return np.where(below == 0, left, np.where(below == P, right, inside))


def _draw_one(rng, n, q_l, q_r, s, jitter, kappa):
    """Knots and values (θ̂ = 0) of one bump instance, or None when an h̃ is not MARGIN-strongly convex."""
    i_l, i_r = np.arange(1, q_l + 1), np.arange(1, q_r + 1)
    tl = np.sort(np.sqrt((n - i_l) / i_l) * np.exp(jitter * rng.standard_normal(q_l)))[::-1]
    tr = np.sort(np.sqrt((n - i_r) / i_r) * np.exp(jitter * rng.standard_normal(q_r)))[::-1]
    x, V, _ = bumps(n, tl, tr, s, kappa)
    if np.min(kappa + min_slopes(x, V)) <= MARGIN * kappa or np.unique(x).size != x.size:
        return None
    return x, V


def instances(trials, rng):
    """The family's batch (``trials`` instances, default 40): worst bumps (WORST_N, |D| = 1, ν = 0),
    random bumps, flat two-point and flat random noise."""
    T = trials or 40
    sizes = dict(zip(("worst", "bumps", "flat2", "flat"), split_counts(T, 4), strict=True))
    rows = []
    for g, count in sizes.items():
        for i in range(count):
            mu = log_uniform(rng, 0.1, 10.0, 1)[0]
            lam = mu * log_uniform(rng, 0.1, 10.0, 1)[0]
            kappa = lam + mu
            scale = log_uniform(rng, 0.1, 10.0, 1)[0]  # of θ − θ̂ (t_i ~ scale)
            c, w = rng.standard_normal(2) * 3
            m, mode, nu_scale = 1, EXACT, 0.0
            if g == "worst":
                n = WORST_N[i % len(WORST_N)]
                x, V = _draw_one(rng, n, n // 2, n // 2, 0.995, 0.0, kappa)
            elif g == "bumps":
                n = int(rng.integers(2, 25))
                q = int(rng.integers(1, n // 2 + 1))
                one = _draw_one(
                    rng, n, q, int(rng.integers(max(q - 1, 1), q + 1)), rng.uniform(0.3, 0.99), 0.1, kappa
                )
                if one is None:  # the jittered draw fell outside the hypotheses: the unjittered one
                    one = _draw_one(rng, n, q, q, 0.99, 0.0, kappa)
                x, V = one
                m = int(rng.integers(1, 3)) if n <= 12 else 1
                mode = int(rng.choice([EXACT, ALIGNED]))
                nu_scale = 0.0 if mode == EXACT else rng.uniform(0.01, 1.0)
            else:
                n = int(rng.integers(2, 13)) // 2 * 2 if g == "flat2" else int(rng.integers(2, 13))
                a = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) if g == "flat2" else rng.standard_normal(n)
                x = np.zeros(1)
                V = (a - a.mean())[:, None] * kappa
                mode = ALIGNED if g == "flat2" else int(rng.choice([EXACT, ALIGNED]))
                nu_scale = 1.0 if g == "flat2" else (0.5 if mode == ALIGNED else 0.0)
                m = 1 if g == "flat2" else int(rng.integers(1, 3))
            theta_hat = (mu * c + lam * w) / kappa
            rows.append(
                dict(
                    n=n,
                    x=x * scale + theta_hat,
                    V=_exact_zero_sum(V * scale, n),  # the sums exactly 0 after scaling
                    lam=lam,
                    mu=mu,
                    c=c,
                    w=w,
                    m=m,
                    mode=mode,
                    nu_scale=nu_scale,
                )
            )
    return _stack(rows)


def _stack(rows):
    """One batch from instance dicts: knots padded past the last (1, 2, … beyond it, values held:
    the same functions), samples padded with zero rows of weight 0."""
    T = len(rows)
    P = max(r["x"].size for r in rows)
    N = max(max(r["n"] for r in rows), 1)
    knots, V, weight = np.zeros((T, P)), np.zeros((T, N, P)), np.zeros((T, N))
    for i, r in enumerate(rows):
        p, n = r["x"].size, r["n"]
        span = max(r["x"][-1] - r["x"][0], 1.0)
        knots[i, :p] = r["x"]
        knots[i, p:] = r["x"][-1] + span * np.arange(1, P - p + 1)
        V[i, :n, :p] = r["V"]
        V[i, :n, p:] = r["V"][:, -1:]
        weight[i, :n] = 1.0
    out = {k: np.array([r[k] for r in rows]) for k in ("lam", "mu", "c", "w", "m", "mode", "nu_scale")}
    return dict(knots=knots, V=V, weight=weight, **out)


def prepare(batch):
    """The claim-independent side: exact E|θ̃ − θ̂|², γ², measured ν and the hypotheses per instance."""
    T = batch["V"].shape[0]
    lhs, nu, gamma2 = np.empty(T), np.empty(T), np.empty(T)
    h_sc, f_sc, samples_sc = np.empty(T, bool), np.empty(T, bool), np.empty(T, bool)
    for i in range(T):
        knots, w8 = batch["knots"][i], batch["weight"][i]
        n = int(w8.sum())
        V = batch["V"][i, :n]
        lam, mu, m = batch["lam"][i], batch["mu"][i], int(batch["m"][i])
        kappa, b = lam + mu, mu * batch["c"][i] + lam * batch["w"][i]
        slopes = min_slopes(knots, V)
        h_sc[i] = np.min(kappa + slopes) > 0  # every h̃_D (means of rows) strongly convex
        samples_sc[i] = np.min(slopes) >= 0  # every ℓ_j'' = μ + slope >= μ
        scale = np.max(np.abs(V)) + 1e-300
        f_sc[i] = np.max(np.abs(V.sum(axis=0))) <= 1e-13 * n * scale  # Σ ψ_j' = 0: f'' = μ
        gamma2[i] = sup_variance(V, np.ones(n))
        theta_hat = h_roots(knots, V.mean(axis=0), kappa, b, 0.0)  # the prox of f = mean ℓ_j
        idx = np.array(list(itertools.product(range(n), repeat=m)))
        vD = V[idx].mean(axis=1)  # (n^m, P): ψ_D' at the knots
        nu_t = batch["nu_scale"][i] * gamma2[i] / m
        if batch["mode"][i] == EXACT or nu_t == 0:
            theta_t = h_roots(knots, vD, kappa, b, np.zeros(len(idx)))
        else:
            lo = h_roots(knots, vD, kappa, b, np.full(len(idx), -np.sqrt(nu_t)))
            hi = h_roots(knots, vD, kappa, b, np.full(len(idx), np.sqrt(nu_t)))
            theta_t = np.where(np.abs(hi - theta_hat) > np.abs(lo - theta_hat), hi, lo)
        resid = (
            kappa * theta_t - b + np.array([np.interp(t, knots, v) for t, v in zip(theta_t, vD, strict=True)])
        )
        lhs[i] = np.mean((theta_t - theta_hat) ** 2)
        nu[i] = np.max(resid**2)
    consts = {
        "mu": "exact (f = mu/2 (θ - c)^2: the perturbations sum to 0 exactly)",
        "gamma_f^2": "exact: sup over θ of (1/n) sum psi_j'(θ)^2, the largest value at the knots",
        "nu": "measured: max over mini-batches of |grad h̃(θ̃)|^2",
        "expectation": "exact: mean over all n^|D| ordered mini-batches (sampling with replacement)",
    }
    return dict(
        family="nonconvex",
        lhs=lhs,
        nu=nu,
        gamma2=gamma2,
        lam=batch["lam"],
        mu=batch["mu"],
        m=batch["m"],
        hypotheses=h_sc & f_sc & (batch["mu"] > 0),
        samples_sc=samples_sc,
        consts=consts,
    )


def minimal_counterexample():
    """The smallest failing instance of the family with |D| = 1, ν = 0: n = 5 (n <= 4 cannot fail,
    module docstring): μ = λ = 1/2 (κ = 1), c = w = 0 (θ̂ = 0), roots −2, −6/5, 2, 6/5 and one idle
    sample, s = 99/100."""
    x, V, _ = bumps(5, [2.0, 1.2], [2.0, 1.2], 0.99, 1.0)
    V = _exact_zero_sum(V, 5)
    row = dict(n=5, x=x, V=V, lam=0.5, mu=0.5, c=0.0, w=0.0, m=1, mode=EXACT, nu_scale=0.0)
    return _stack([row])
