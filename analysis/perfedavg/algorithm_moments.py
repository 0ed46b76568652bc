r"""Exact moments of Per-FedAvg (Algorithm 1, Hessian variant) on shared-Hessian sampled quadratics.

The instances of perfedavg.propf1 and perfedavg.thm4_5: client i holds m samples with losses
l_ij(w) = ½wᵀAw − c_ijᵀw (one A for every sample and client, A = diag(a): every quantity below is
rotation invariant and A, Q = I − αA, P commute, so the eigenbasis loses no generality), so
f_i(w) = ½wᵀAw − c̄_iᵀw, ∇²l_ij = A (σ_H = 0, γ_H = 0, ρ = 0 exactly) and
∇l_ij − ∇f_i = −(c_ij − c̄_i) whatever w: σ_G² = max_i tr Σ_i (Σ_i the covariance of client i's
c_ij under the uniform sample distribution) and γ_G² = (1/n)Σ‖c̄_i − c̄‖² exactly (sups over w of
constants).  ∇F_i(w) = Q²(Aw − c̄_i) (eq. (5)).

One local step of eq. (7)-(8) with independent with-replacement batches D, D' (D'' is irrelevant:
every sample Hessian is A) is w ← Pw + βQη with P = I − βQ²A and η = c̄_{D'} − αA c̄_D, whose mean is
Qc̄_i and covariance Σ_i/D' + α²AΣ_iA/D (1/D = 0: the exact gradient).  The linear part P is the
same for every client and every draw, so after t steps from a common w the iterate is
P^t w + o_i,t with o_i,t independent of w: mean μ_i,t = βΣ_{s<t}P^sQ²c̄_i and covariance
C_i,t = β²Σ_{s<t}P^sQ Cov(η_i) QP^s, both by the recursions below (no sampling, no truncation).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

__all__ = ["client_stats", "local_moments", "drift_moments", "thm45_exact", "meta_grad"]


def client_stats(C):
    """``(cbar (..., n, d), Sigma (..., n, d, d), sG2 (...), gG2 (...))`` of samples ``C (..., n, m, d)``:
    client means, covariances (uniform over samples), σ_G² = max_i tr Σ_i, γ_G² = (1/n)Σ‖c̄_i − c̄‖²."""
    cbar = C.mean(axis=-2)
    dev = C - cbar[..., None, :]
    Sigma = np.einsum("...jk,...jl->...kl", dev, dev) / C.shape[-2]
    sG2 = np.max(np.trace(Sigma, axis1=-2, axis2=-1), axis=-1)
    gG2 = np.mean(np.sum((cbar - cbar.mean(axis=-2, keepdims=True)) ** 2, axis=-1), axis=-1)
    return cbar, Sigma, sG2, gG2


def local_moments(a, C, alpha, beta, invD, invD1, tmax):
    """Mean and covariance of the local offsets o_i,t, t = 0..tmax.

    ``a (T, d)``, ``C (T, n, m, d)``, ``alpha, beta, invD, invD1 (T,)`` (1/D, 1/D'; 0 = exact).
    Returns ``mu (tmax+1, T, n, d)``, ``cov (tmax+1, T, n, d, d)`` and ``P (T, d)``.
    """
    cbar, Sigma, _, _ = client_stats(C)
    q = 1 - alpha[:, None] * a
    p = 1 - beta[:, None] * q**2 * a
    aa = a[:, :, None] * a[:, None, :]
    cov_eta = (
        Sigma * invD1[:, None, None, None] + (alpha**2 * invD)[:, None, None, None] * aa[:, None] * Sigma
    )
    qq, pp = (q[:, :, None] * q[:, None, :])[:, None], (p[:, :, None] * p[:, None, :])[:, None]
    drive_mu = (beta[:, None] * q**2)[:, None, :] * cbar
    drive_cov = beta[:, None, None, None] ** 2 * qq * cov_eta
    mu, cov = [np.zeros_like(cbar)], [np.zeros_like(Sigma)]
    for _ in range(tmax):
        mu.append(p[:, None, :] * mu[-1] + drive_mu)
        cov.append(pp * cov[-1] + drive_cov)
    return np.stack(mu), np.stack(cov), p


def drift_moments(mu, cov):
    """Prop. F.1's drift with all n clients, per t: ``(second, lo, hi)`` of shape ``(tmax+1, T)``.

    ``second`` = E(1/n)Σ‖w_i − w̄‖² exactly; the first moment E(1/n)Σ‖w_i − w̄‖ lies in
    ``[lo, hi]`` = [(1/n)Σ‖E e_i‖, (1/n)Σ(E‖e_i‖²)^½] (Jensen twice; lo = hi without noise).
    With e_i = o_i − (1/n)Σ_j o_j (the o_j independent): E e_i = μ_i − μ̄,
    Cov e_i = (1 − 2/n)C_i + (1/n²)Σ_j C_j.
    """
    n = mu.shape[2]
    m_e = mu - mu.mean(axis=2, keepdims=True)
    tr = np.trace(cov, axis1=-2, axis2=-1)
    tr_e = (1 - 2 / n) * tr + tr.sum(axis=2, keepdims=True) / n**2
    sq_mean = np.sum(m_e**2, axis=-1)
    second = np.mean(sq_mean + tr_e, axis=2)
    lo = np.mean(np.sqrt(sq_mean), axis=2)
    hi = np.mean(np.sqrt(sq_mean + tr_e), axis=2)
    return second, lo, hi


def meta_grad(a, cbar_all, alpha, w):
    """∇F(w) = Q²(Aw − c̄) for one instance (``a (d,)``, ``cbar_all (d,)``, ``w (..., d)``)."""
    return (1 - alpha * a) ** 2 * (a * w - cbar_all)


def thm45_exact(a, C, alpha, beta, tau, K, S, invD, invD1, w0):
    r"""One instance: ``(lhs, F(w0) − F*)`` of Theorem 4.5, both exact.

    lhs = (1/(τK)) Σ_k Σ_{t<τ} E‖∇F(w̄_{k+1,t})‖²: the mean m_k and covariance V_k of w_k are
    propagated exactly; within round k, w̄_{k+1,t} = P^t w_k + ō_{A,t} with ō_{A,t} the average over
    the sampled set A (uniform among the S-subsets of the n clients, enumerated) of independent
    offsets, independent of w_k.  E‖∇F(w)‖² = ‖Q²(A E w − c̄)‖² + tr(Q²A Cov(w) AQ²).
    F(w) − F* = ½(w − w*)ᵀQ²A(w − w*) with w* = A⁻¹c̄ (a > 0: F is a convex quadratic).
    """
    a = np.asarray(a, float)
    T1 = lambda x: np.asarray([x], float)  # noqa: E731 - a one-instance batch
    mu, cov, p = local_moments(a[None], C[None], T1(alpha), T1(beta), T1(invD), T1(invD1), tau)
    mu, cov, p = mu[:, 0], cov[:, 0], p[0]  # (tau+1, n, d), (tau+1, n, d, d)
    n = mu.shape[1]
    subsets = [list(s) for s in combinations(range(n), S)]
    mean_A = np.stack([mu[:, s].mean(axis=1) for s in subsets])  # (nA, tau+1, d)
    covin_A = np.stack([cov[:, s].sum(axis=1) / S**2 for s in subsets])  # (nA, tau+1, d, d)
    o_mean = mean_A.mean(axis=0)
    dev = mean_A - o_mean
    o_cov = covin_A.mean(axis=0) + np.einsum("ati,atj->tij", dev, dev) / len(subsets)
    cbar_all = C.mean(axis=(0, 1))
    h = (1 - alpha * a) ** 2 * a  # Hessian of F (diagonal)
    pt = p[None, :] ** np.arange(tau + 1)[:, None]  # (tau+1, d)
    m, V = np.asarray(w0, float).copy(), np.zeros((a.size, a.size))
    total = 0.0
    for _ in range(K):
        mean_t = pt[:tau] * m + o_mean[:tau]
        cov_t = pt[:tau, :, None] * V * pt[:tau, None, :] + o_cov[:tau]
        g = meta_grad(a, cbar_all, alpha, mean_t)
        total += np.sum(g**2) + np.sum(_trace_hh(h, cov_t))
        m = pt[tau] * m + o_mean[tau]
        V = pt[tau][:, None] * V * pt[tau][None, :] + o_cov[tau]
    wstar = cbar_all / a
    gap = 0.5 * np.sum(h * (np.asarray(w0, float) - wstar) ** 2)
    return total / (tau * K), gap


def _trace_hh(h, cov_t):
    """tr(diag(h) Cov diag(h)) per t."""
    return np.einsum("i,tii->t", h**2, cov_t)


def _pow1m(x, k):
    """1 − (1 − x)^k without cancellation for small x (x < 1), elementwise; k may be huge."""
    x = np.asarray(x, float)
    safe = np.where(x < 1, x, 0.0)
    small = -np.expm1(k * np.log1p(-safe))
    return np.where(x < 1, small, 1 - (1 - x) ** k)


def _geom(x, k):
    """Σ_{s<k} (1 − x)^s = (1 − (1 − x)^k)/x, and k at x = 0."""
    x = np.asarray(x, float)
    nz = x != 0
    return np.where(nz, _pow1m(x, k) / np.where(nz, x, 1.0), np.asarray(k, float))


def thm45_closed(a, C, alpha, beta, tau, K, S, invD, invD1, w0):
    r"""``thm45_exact`` by geometric sums: the same lhs for any τ and K (10⁹ rounds cost nothing).

    With x = βh, h = q²a, p = 1 − x (per eigen-direction): the mean part of ∇F(w̄_{k+1,t}) is
    h p^t λ^k (w_0 − w*) with λ = p^τ (the drive cancels exactly: h w* = q²c̄); the offsets' variance
    after t steps is (βq²G₁(t))²Γ + (1/(Sn))Σ_i β²q²Cov(η_i)G₂(t), G₁ = Σ_{s<t}p^s, G₂ = Σ_{s<t}p^{2s},
    Γ = (n − S)/(S(n − 1)) · (1/n)Σ(c̄_i − c̄)(c̄_i − c̄)ᵀ (sampling without replacement); w_k's
    variance is O_τ Σ_{s<k}λ^{2s}.  Only diagonals enter tr(h²·).  Needs p > 0 when τ, K are large.
    """
    a = np.asarray(a, float)
    n = C.shape[0]
    cbar, Sigma, _, _ = client_stats(C)
    q = 1 - alpha * a
    h = q**2 * a
    x = beta * h
    diag = lambda M: np.diagonal(M, axis1=-2, axis2=-1)  # noqa: E731
    cov_eta = diag(Sigma) * invD1 + alpha**2 * a**2 * diag(Sigma) * invD  # (n, d)
    dev = cbar - cbar.mean(axis=0)
    Gam = (n - S) / (S * (n - 1)) * np.mean(dev**2, axis=0) if n > 1 else np.zeros_like(a)
    t = np.arange(tau)[:, None]
    G1, G2 = _geom(x, t), _geom(x * (2 - x), t)  # (tau, d)
    o_var = (beta * q**2 * G1) ** 2 * Gam + beta**2 * q**2 * cov_eta.sum(axis=0) / (S * n) * G2
    G1T, G2T = _geom(x, tau), _geom(x * (2 - x), tau)
    O_tau = (beta * q**2 * G1T) ** 2 * Gam + beta**2 * q**2 * cov_eta.sum(axis=0) / (S * n) * G2T
    y = _pow1m(x, 2 * tau)  # 1 − λ²
    GK = np.where(y != 0, _pow1m(x, 2 * tau * K) / np.where(y != 0, y, 1.0), float(K))  # Σ_{k<K} λ^{2k}
    sumV = np.where(y != 0, (K - GK) / np.where(y != 0, y, 1.0), K * (K - 1) / 2.0)  # Σ_{k<K} Σ_{s<k} λ^{2s}
    wstar = cbar.mean(axis=0) / a
    e0 = np.asarray(w0, float) - wstar
    p2t = (1 - x) ** (2 * t)
    total = np.sum(h**2 * (p2t * e0**2 * GK + p2t * O_tau * sumV + K * o_var))
    gap = 0.5 * np.sum(h * e0**2)
    return total / (tau * K), gap
