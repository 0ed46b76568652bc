r"""pFedMe Theorem 2 beyond S = N and δ = 0: client sampling and inexact inner solves, exactly.

Both extensions are checked where the round map is affine on a certified region, so that every
expectation is a closed form, cross-checked by an independent computation:

* **Client sampling** (Algorithm 1, lines 9-10: S of the N clients drawn uniformly without
  replacement, independently each round).  Clients whose every iterate stays on an *outer*
  piece of its double well (|w − s_i| ≥ τ, one side per client and coordinate) have envelopes
  :math:`F_i(w) = \tfrac h2\|w - c_i\|^2` with one curvature h = λL/(λ + L) and minimisers
  c_i = s_i ± a.  Then R local steps give :math:`w_{i,R} = c_i + A(w - c_i)`,
  :math:`A = (1 - \eta h)^R`, and the server step is
  :math:`w_{t+1} - \bar c = q(w_t - \bar c) + \kappa(m_{\mathcal S_t} - \bar c)`, q = 1 − κ,
  κ = β(1 − A), :math:`m_{\mathcal S}` the mean of the sampled c_i.  Sampling without
  replacement gives :math:`E\,m_{\mathcal S} = \bar c` and
  :math:`E\|m_{\mathcal S} - \bar c\|^2 = c_S V`, :math:`c_S = \frac{N - S}{S(N - 1)} = \frac{N/S - 1}{N - 1}`,
  V = (1/N)Σ‖c_i − c̄‖², so with ∇F(w) = h(w − c̄)

  .. math:: E\|\nabla F(w_t)\|^2 = h^2\Big(q^{2t}\|w_0 - \bar c\|^2
            + \frac{\kappa c_S V}{2 - \kappa}(1 - q^{2t})\Big),

  and the Cesàro sums in closed form for every T (T = ∞ included).  Certificate: per coordinate
  the interval spanned by w_0 and the c_i is invariant (each round is a convex combination,
  0 < κ < 1) and every client stays on its outer piece on it (the local iterates lie between w
  and c_i).  Independent check: all C(N, S)^t sampling sequences enumerated through the
  closed-form prox loop (no affine model), t ≤ ``T_ENUM``.
* **δ-inexact inner solves** (Lemma 1, ‖θ̃ − θ̂‖ ≤ δ): θ̃_i = θ̂_i + δu in every local step.  A
  fixed u (the worst case of the λ²δ² term: it biases every step the same way) gives
  identical outer-piece clients the affine round
  :math:`w_{t+1} - c' = q(w_t - c')`, c' = c + λδu/h, so
  ∇F(w_t) = h q^t(w_0 − c') + λδu → λδu: lim ‖∇F(w_t)‖² = λ²δ² exactly.  A fresh uniform
  random unit u in every local step and client (mean 0) adds the variance
  :math:`\nu = \beta^2\eta^2\lambda^2\delta^2\sum_{r<R}(1-\eta h)^{2r}/N` per round.
  Independent check: the closed-form prox loop with the error added (``biased_run``).

Shapes: ``s``, ``c`` ``(T, N, d)``; ``a``, ``L``, ``lam``, ``eta``, ``beta``, ``R`` ``(T,)``; points
``(..., T, d)``; grids of T as a leading axis.

References: pFedMe (T Dinh et al., 2020), Algorithm 1, Lemma 1, Lemma 2(b), Theorem 2.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from moreau.analysis.pfedme.double_wells import envelope, prox_local

__all__ = [
    "c_S",
    "kappa",
    "outer_certified",
    "sampling_sums",
    "enumerate_sampling",
    "bias_sums",
    "noise_sums",
    "biased_run",
    "T_GRID",
]

#: the T of the Cesàro averages: 1, 2, 4, ..., 2^60 (far past every instance's 1/κ)
T_GRID = 2.0 ** np.arange(61)


def c_S(N, S):
    """Variance factor of the mean of S of N values drawn without replacement: (N − S)/(S(N − 1))."""
    N, S = np.asarray(N, float), np.asarray(S, float)
    if np.any(S < 1) or np.any(S > N):
        raise ValueError(f"S must satisfy 1 <= S <= N (got S = {S}, N = {N})")
    return np.where(N > 1, (N - S) / (S * np.maximum(N - 1, 1)), 0.0)


def h_outer(L, lam):
    """Curvature λL/(λ + L) of the envelope on the outer pieces."""
    return lam * L / (lam + L)


def kappa(eta, h, beta, R):
    """κ = β(1 − (1 − ηh)^R) without cancellation ``(T,)``."""
    return -beta * np.expm1(np.asarray(R, float) * np.log1p(-eta * h))


def outer_certified(lo, hi, s, a, L, lam, side):
    """``(T,)``: on the box [lo, hi] ``(T, d)`` every client stays on its outer piece on ``side``
    ``(T, N, d)`` (±1): side·(w − s_i) ≥ τ for w at both ends (the condition is monotone in w)."""
    tau = (a * (lam - L) / (2 * lam))[:, None, None]
    ok = np.ones(lo.shape[0], bool)
    for w in (lo, hi):
        ok &= np.all(side * (w[:, None, :] - s) >= tau * (1 + 1e-12), axis=(-1, -2))
    return ok


def _geo(kap, p, T):
    """Σ_{t<T} (1 − κ)^{pt} for 0 < κ < 1 without cancellation; T ``(G, 1)`` (inf allowed) -> ``(G, n)``."""
    lq = p * np.log1p(-kap)
    return -np.expm1(np.where(np.isinf(T), -np.inf, T * lq)) / -np.expm1(lq)


def sampling_sums(e0, V, h, kap, cS, T=T_GRID):
    """Per T of the grid ``(G, T)``: ``(avg, floor)``: (1/T)Σ_{t<T} E‖∇F(w_t)‖² (module docstring; T = ∞: the
    limit) and its limit h²κc_S V/(2 − κ) ``(T,)``.  ``e0`` ``(T,)`` = ‖w_0 − c̄‖², V ``(T,)``."""
    floor = h**2 * kap * cS * V / (2 - kap)
    return _avg(e0, h, kap, floor, T), floor


def enumerate_sampling(w0, s, a, L, lam, eta, beta, R, S, t_max, block=64, error=None):
    """Exact E‖∇F(w_t)‖² and E‖∇F(w_t) − E∇F(w_t)‖² ``(t_max + 1, T)`` over all C(N, S)^t equally likely
    sampling sequences, through the closed-form prox loop (any pieces; no affine model); ``block``
    instances at a time (memory C(N, S)^t_max · block · N · d floats).  ``error`` ``(T, N, d)`` or None:
    every inner solve of client i is θ̂_i + error_i (δ-inexact, the same in every step)."""
    if error is None:
        error = np.zeros(s.shape)
    if s.shape[0] > block:
        parts = [
            enumerate_sampling(
                *(x[k : k + block] for x in (w0, s, a, L, lam, eta, beta, np.asarray(R))),
                S,
                t_max,
                block,
                error[k : k + block],
            )
            for k in range(0, s.shape[0], block)
        ]
        return tuple(np.concatenate([p[j] for p in parts], axis=1) for j in (0, 1))
    N = s.shape[1]
    subsets = [list(c) for c in combinations(range(N), S)]
    R = np.asarray(R, int)
    e3, l3, b2 = eta[:, None, None], lam[:, None, None], beta[:, None]
    active = [(R > r)[:, None, None] for r in range(int(R.max()))]
    w = np.asarray(w0, float)[None]  # (P, T, d)
    means, variances = [], []
    for t in range(t_max + 1):
        g = envelope(w, s, a, L, lam)[1].mean(axis=-2)  # (P, T, d)
        gm = g.mean(axis=0)
        means.append(np.sum(g**2, axis=-1).mean(axis=0))
        variances.append(np.sum((g - gm) ** 2, axis=-1).mean(axis=0))
        if t == t_max:
            break
        v = np.broadcast_to(w[..., None, :], w.shape[:-1] + (N, w.shape[-1]))
        for act in active:
            v = np.where(act, v - e3 * l3 * (v - prox_local(v, s, a, L, lam) - error), v)
        w = np.concatenate([(1 - b2) * w + b2 * v[..., sub, :].mean(axis=-2) for sub in subsets])
    return np.array(means), np.array(variances)


def bias_sums(e0v, u, h, lam, delta, kap, T=T_GRID):
    """Identical outer-piece clients, every inner solve off by δu (‖u‖ = 1): (1/T)Σ_{t<T}‖∇F(w_t)‖² ``(G, T)``
    (deterministic), ∇F(w_t) = h q^t e + λδu, e = w_0 − c' ``(T, d)`` (``e0v``), c' = c + λδu/h."""
    T = np.asarray(T, float)[:, None]
    ee, eu = np.sum(e0v**2, axis=-1), np.sum(e0v * u, axis=-1)
    G2, G1 = _geo(kap, 2, T), _geo(kap, 1, T)
    lim = (lam * delta) ** 2
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(T), lim, (h**2 * ee * G2 + 2 * h * lam * delta * eu * G1) / T + lim)


def noise_sums(e0, h, lam, delta, eta, beta, R, N, kap, T=T_GRID):
    """Identical outer-piece clients, every inner solve off by δu, u a fresh uniform random unit vector
    (independent over clients, steps and rounds): ``(avg (G, T), floor (T,))``, E‖∇F(w_t)‖² =
    h²(q^{2t}‖w_0 − c‖² + ν(1 − q^{2t})/(1 − q²)), ν from the module docstring; ``e0`` = ‖w_0 − c‖²."""
    R = np.asarray(R, float)
    lA2 = 2 * np.log1p(-eta * h)
    sumA2 = np.expm1(R * lA2) / np.expm1(lA2)
    nu = beta**2 * eta**2 * (lam * delta) ** 2 * sumA2 / N
    floor = h**2 * nu / (kap * (2 - kap))
    return _avg(e0, h, kap, floor, T), floor


def _avg(e0, h, kap, floor, T):
    """(1/T)Σ_{t<T} (h²q^{2t}e0 + floor(1 − q^{2t})), q = 1 − κ ``(G, T)``; T = ∞: ``floor``."""
    T = np.asarray(T, float)[:, None]
    G = _geo(kap, 2, T)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(T), floor, (h**2 * e0 * G + floor * (T - G)) / T)


def biased_run(w0, s, a, L, lam, eta, beta, R, rounds, error):
    """Algorithm 1, S = N, every inner solve θ̃ = θ̂ + ``error`` ((T, N, d), the same in every step), through
    the closed-form prox: ``w_t`` ``(rounds + 1, T, d)``."""
    R = np.asarray(R, int)
    e3, l3, b2 = eta[:, None, None], lam[:, None, None], beta[:, None]
    active = [(R > r)[:, None, None] for r in range(int(R.max()))]
    w = np.asarray(w0, float)
    out = [w]
    for _ in range(rounds):
        v = np.broadcast_to(w[:, None], s.shape)
        for act in active:
            v = np.where(act, v - e3 * l3 * (v - prox_local(v, s, a, L, lam) - error), v)
        w = (1 - b2) * w + b2 * v.mean(axis=1)
        out.append(w)
    return np.stack(out)
