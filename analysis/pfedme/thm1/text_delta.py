r"""pfedme.thm1, pfedme.thm1b under the text's δ: fresh two-point inner errors on quadratic clients, exactly.

Section 3.2 calls θ̃ a δ-approximation when E‖θ̃ − θ̂‖ ≤ δ (a *first* moment); Lemma 1 bounds the
*second*, E‖θ̃ − θ̂‖² ≤ δ².  Errors fresh and independent in every local step, client and round:
e = (δ₁/p)u with probability p, 0 otherwise (‖u‖ = 1), so E e = δ₁u, E‖e‖ = δ₁, E‖e‖² = δ₁²/p and
Cov e = s²uuᵀ, s² = δ₁²(1/p − 1).  On quadratic clients the round is affine in w and in the errors
(``moreau.analysis.pfedme.round_map``): the mean follows the round biased by δ₁u, the fluctuation x_t
adds ξ_t with Cov ξ = β²η²λ²s²/N² Σ_i Σ_{r<R} C_i^r uuᵀ C_i^r per round.  Where every matrix is a
function of H = ∇²F = (1/N)Σ λA_i(A_i + λI)⁻¹ (identical clients, any R; or R = 1, any clients) the
limits decouple over H's eigenpairs (h_j, v_j), u_j = v_jᵀu, c_j = 1 − ηh_j, κ_j = β(1 − c_j^R):

.. math:: \lim_T E[F(\bar w_T) - F^*] = \sum_j \frac{\lambda^2 u_j^2}{2h_j}\big(\delta_1^2 + s^2 r_j g_j\big),
          \quad r_j = \frac{h_j^2\beta^2\eta^2\sum_{r<R}c_j^{2r}}{N\kappa_j(2 - \kappa_j)},\quad
          g_j = \frac{(1-\rho)(1+\rho q_j)}{(1+\rho)(1-\rho q_j)},

q_j = 1 − κ_j, ρ = 1 − ημ_F/2 (w̄_T's weights): the mean sits at w* + λδ₁H⁻¹u (no drift there), the
stationary variance of the fluctuation along v_j is λ²s²u_j²r_j/h_j², and g_j ≤ 1 is what the
weighted average w̄_T keeps of it as T → ∞.  With h_j ≥ μ_F and r_j g_j ≤ 1 this is at most
λ²δ₁²(1 + (1/p − 1)r g)/(2μ_F): in units of Remark 1's λ²δ²/μ_F, ½(p + (1 − p)rg) ≤ ½ with Lemma 1's
δ² = δ₁²/p, and ½(1 + (1/p − 1)rg), unbounded as p → 0, with the text's δ = δ₁.  For (b) (identical
clients: θ̂(w*) = w*, λ(A + λI)⁻¹ = I − H/λ), at w_T as T → ∞, with e the fresh error of θ̃(w_T):

.. math:: \lim_T\frac1N\sum_i E\|\tilde\theta_i(w_T) - w^*\|^2
          = \sum_j u_j^2\Big[\Big(1 - \frac{h_j}\lambda\Big)^2 \frac{\lambda^2}{h_j^2}(\delta_1^2 + s^2 r_j)
          + 2\delta_1^2\Big(1 - \frac{h_j}\lambda\Big)\frac\lambda{h_j}\Big]
          + \frac{\delta_1^2}p
          \le \frac{2\lambda^2\delta^2}{\mu_F^2} + 2\delta^2 \quad(\delta^2 = \delta_1^2/p),

(the cross term is at most 2δ₁²λ/μ ≤ (λ²/μ_F² + 1)δ² since λ/μ_F = 1 + λ/μ), while with δ = δ₁ the
left side exceeds δ₁²/p.  Independent checks (tests): the exact mean/covariance recursion of the
round with a weighted-average state (:func:`recursion`, any clients and R) against all 2^(TNR) error
sequences enumerated through a plain loop, and against the limits at large T; the minimal instance
(:func:`minimal_instance`) in exact rationals.

Shapes: ``A`` ``(T, N, d, d)``, ``u`` ``(T, d)``, scalars per instance ``(T,)``.

References: pFedMe (T Dinh et al., 2020), Section 3.2, Lemma 1, Theorem 1, Remark 1.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from moreau.analysis.pfedme.delta_moments import ratio_r
from moreau.analysis.pfedme.outer_pieces import kappa
from moreau.analysis.pfedme.round_map import constants, round_map

__all__ = [
    "PART_A",
    "PART_B",
    "hessian",
    "average_factor",
    "two_point_limits",
    "delta_fields",
    "recursion",
    "minimal_instance",
]

PART_A = (
    "(a) neighbourhood, fresh two-point inner errors (E|e| = delta_1, E|e|^2 = delta_1^2/p), identical "
    "clients or R = 1: lim_T E[F(w_bar_T) - F*] <= lam^2 delta^2/mu_F, delta = delta_of(delta_1, delta_1/sqrt(p))"
)
PART_B = (
    "(b) fresh two-point inner errors, identical clients: lim_T (1/N) sum E|theta~_i(w_T) - w*|^2 <= "
    "2 lam^2 delta^2/mu_F^2 + 2 delta^2, delta = delta_of(delta_1, delta_1/sqrt(p))"
)


def hessian(A, lam):
    """H = (1/N)Σ_i λA_i(A_i + λI)⁻¹, the Hessian of F on quadratic clients, ``(T, d, d)``."""
    a, U = np.linalg.eigh(A)
    l3 = np.asarray(lam, float)[:, None, None]
    return np.mean((U * (l3 * a / (a + l3))[..., None, :]) @ np.swapaxes(U, -1, -2), axis=1)


def average_factor(a, kap):
    """g = (1 − ρ)(1 + ρq)/((1 + ρ)(1 − ρq)), ρ = 1 − a, q = 1 − κ, without cancellation (1 − ρq = a + κ − aκ):
    the share of a stationary AR(1) variance that the weighted average with weights ρ^(T−1−t) keeps as T → ∞."""
    rho, q = 1 - a, 1 - kap
    return a * (1 + rho * q) / ((1 + rho) * (a + kap - a * kap))


def _check_p(p):
    if not np.all((np.asarray(p, float) > 0) & (np.asarray(p, float) <= 1)):
        raise ValueError(f"p (the probability of an inner error) must satisfy 0 < p <= 1, got {p!r}")


def two_point_limits(A, lam, mu_F, eta, beta, R, u, delta1, p):
    """``(gap, b_lhs)`` ``(T,)``: lim E[F(w̄_T) − F*] and (identical clients) lim (1/N)Σ E‖θ̃_i(w_T) − w*‖²
    (module docstring); valid where every matrix of the round is a function of H (identical clients or R = 1)."""
    _check_p(p)
    N = A.shape[1]
    h, V = np.linalg.eigh(hessian(A, lam))
    uj2 = np.einsum("tij,ti->tj", V, u) ** 2
    e = lambda x: np.asarray(x, float)[:, None]  # noqa: E731
    kap = kappa(e(eta), h, e(beta), e(R))
    r = ratio_r(h, e(eta), e(beta), e(R), N, kap)
    g = average_factor(e(eta * mu_F / 2), kap)
    with np.errstate(divide="ignore"):
        s2 = e(delta1**2 * np.maximum(1 / p - 1, 0))
    lm, d1 = e(lam), e(delta1)
    gap = np.sum(uj2 * lm**2 / (2 * h) * (d1**2 + s2 * r * g), axis=-1)
    b = np.sum(
        uj2 * ((1 - h / lm) ** 2 * lm**2 / h**2 * (d1**2 + s2 * r) + 2 * d1**2 * (1 - h / lm) * lm / h),
        axis=-1,
    )
    return gap, b + delta1**2 / p


def delta_fields(batch):
    """The two-point fields of a quadratic batch, from a generator seeded by ``batch["seed"]`` (the other fields
    keep their draws): ``tp_u`` (H's flattest eigenvector on even instances, random on odd), ``tp_p`` (r g of the
    flattest direction times 10^-U(-1, 2.5), so the text's reading fails on most; p = 1 on every eighth: both
    moments δ₁), ``tp_delta`` (δ₁ = 0.01 (1 + |w_0|), a length)."""
    A, lam, mu, beta, R = (batch[k] for k in ("A", "lam", "mu", "beta", "R"))
    T, N, d, _ = A.shape
    rng = np.random.default_rng([int(batch["seed"][0]), 1])
    mu_F, _, _, eta_hat = constants(lam, mu, beta)
    eta = eta_hat / (beta * R)
    h, V = np.linalg.eigh(hessian(A, lam))
    u = rng.standard_normal((T, d))
    u = np.where((np.arange(T) % 2 == 0)[:, None], V[:, :, 0], u / np.linalg.norm(u, axis=-1, keepdims=True))
    kap = kappa(eta, h[:, 0], beta, R)
    rg = ratio_r(h[:, 0], eta, beta, R, N, kap) * average_factor(eta * mu_F / 2, kap)
    p = np.clip(rg * 10.0 ** -rng.uniform(-1, 2.5, T), 1e-300, 1.0)
    p[np.arange(T) % 8 == 2] = 1.0
    return {"tp_u": u, "tp_p": p, "tp_delta": 0.01 * (1 + np.linalg.norm(batch["w0"], axis=-1))}


def delta_sides(batch, mu_F, eta, claim, key, consts):
    """``(lhs, rhs, applicable, note)`` of PART_A (``key = "nbhd"``) or PART_B (``key = "b_delta"``)."""
    lam, beta, R, ident = (batch[k] for k in ("lam", "beta", "R", "ident"))
    u, p, d1 = batch["tp_u"], batch["tp_p"], batch["tp_delta"]
    gap, b = two_point_limits(batch["A"], lam, mu_F, eta, beta, R, u, d1, p)
    delta = np.asarray(claim["delta_of"](d1, d1 / np.sqrt(p)), float)
    lhs, ok = (gap, ident | (R == 1)) if key == "nbhd" else (b, ident)
    rhs = claim[key](lam, delta, mu_F)
    unit = lam**2 * d1**2 / mu_F if key == "nbhd" else 2 * lam**2 * d1**2 / mu_F**2 + 2 * d1**2
    first = lhs / unit  # in units of the text's reading
    which = {1.0: "the text's first moment (Section 3.2)", 2.0: "Lemma 1's root mean square"}.get(
        float(claim["delta_of"](1.0, 2.0)), "delta_of"
    )
    note = (
        f"delta read as {which}; exact limits (mean + stationary variance + what w_bar keeps of it); "
        f"p in {np.min(p[ok]):.1e}..{np.max(p[ok]):.1e}; lhs over the bound with the text's delta: "
        f"{np.min(first[ok]):.3g}..{np.max(first[ok]):.3g} (unbounded as p -> 0), with Lemma 1's: "
        f"{np.min((lhs * p / unit)[ok]):.3g}..{np.max((lhs * p / unit)[ok]):.3g}"
    )
    return lhs, rhs, ok, note


def recursion(A, b, lam, eta, beta, R, u, delta1, p, w0, T):
    """Exact E[F(w̄_T) − F*] and E(1/N)Σ‖θ̃_i(w_T) − w*‖² for one instance (``A`` ``(N, d, d)``, ``b`` ``(N, d)``,
    scalars) after T rounds, any clients and R: mean by the biased round map, covariance of the state
    (x_t, x̄_t) exactly; x̄_{t+1} = (1 − ω_t)x̄_t + ω_t x_t, ω_t = (1 − ρ)/(1 − ρ^(t+1)), ρ = 1 − ημ_F/2."""
    _check_p(p)
    N, d = b.shape
    mu = np.min(np.linalg.eigvalsh(A))
    mu_F = lam * mu / (lam + mu)
    rho = 1 - eta * mu_F / 2
    P = np.linalg.inv(A + lam * np.eye(d))
    H = np.mean(lam * (np.eye(d) - lam * P), axis=0)
    w_star = np.linalg.solve(H, np.mean(lam * np.einsum("nij,nj->ni", P, b), axis=0))
    Q, q = round_map(A[None], b[None], [lam], [eta], [beta], R, bias=np.broadcast_to(delta1 * u, (1, N, d)))
    Q, q = Q[0], q[0]
    C = np.eye(d) - eta * lam * (np.eye(d) - lam * P)
    s2 = delta1**2 * (1 / p - 1)
    W = np.zeros((d, d))
    for i in range(N):
        v = u.copy()
        for _ in range(R):
            W += np.outer(v, v)
            v = C[i] @ v
    W *= (beta * eta * lam) ** 2 * s2 / N**2
    m, mbar, K = np.asarray(w0, float), np.zeros(d), np.zeros((2 * d, 2 * d))
    for t in range(T):
        om = (1 - rho) / (1 - rho ** (t + 1))
        M = np.block([[Q, np.zeros((d, d))], [om * np.eye(d), (1 - om) * np.eye(d)]])
        K = M @ K @ M.T
        K[:d, :d] += W
        m, mbar = Q @ m + q, (1 - om) * mbar + om * m
    gap = 0.5 * (mbar - w_star) @ H @ (mbar - w_star) + 0.5 * np.trace(H @ K[d:, d:])
    th = np.einsum("nij,nj->ni", P, lam * m + b) - w_star  # E theta^_i(w_T) - w*
    var = np.mean([np.trace(lam**2 * P[i] @ K[:d, :d] @ P[i]) for i in range(N)])
    b_lhs = np.mean(np.sum(th**2, axis=-1)) + var + 2 * delta1 * np.mean(th @ u) + delta1**2 / p
    return gap, b_lhs


def minimal_instance(p, delta1=Fraction(1, 100)):
    """The finding's instance in exact rationals: N = 1, d = 1, f(x) = x²/2, λ = 1 (μ_F = h = 1/2), β = R = 1,
    η = η̂₁ = 1/1554, errors (δ₁/p) w.p. p.  Returns ``{"gap", "ratio_text", "ratio_lemma1", "b", "b_text",
    "b_lemma1"}``: the limits and their ratios to λ²δ²/μ_F and 2λ²δ²/μ_F² + 2δ² under both readings."""
    _check_p(p)
    p, d1 = Fraction(p), Fraction(delta1)
    lam, h, beta, eta, N = Fraction(1), Fraction(1, 2), 1, Fraction(1, 1554), 1
    mu_F = h
    kap = beta * eta * h
    r = h**2 * beta**2 * eta**2 / (N * kap * (2 - kap))
    rho, q = 1 - eta * mu_F / 2, 1 - kap
    g = (1 - rho) * (1 + rho * q) / ((1 + rho) * (1 - rho * q))
    s2 = d1**2 * (1 / p - 1)
    gap = lam**2 / (2 * h) * (d1**2 + s2 * r * g)
    b = (
        (1 - h / lam) ** 2 * lam**2 / h**2 * (d1**2 + s2 * r)
        + 2 * d1**2 * (1 - h / lam) * lam / h
        + d1**2 / p
    )
    bound_b = lambda dl2: 2 * lam**2 * dl2 / mu_F**2 + 2 * dl2  # noqa: E731
    return {
        "gap": gap,
        "ratio_text": gap / (lam**2 * d1**2 / mu_F),
        "ratio_lemma1": gap / (lam**2 * d1**2 / p / mu_F),
        "b": b,
        "b_text": b / bound_b(d1**2),
        "b_lemma1": b / bound_b(d1**2 / p),
        "rg": r * g,
        "r": r,
    }
