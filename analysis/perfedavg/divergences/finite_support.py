r"""Finite-support distributions and losses with exact sups over w (perfedavg.tv, perfedavg.w1).

Clients i = 1..n hold distributions ``P[i]`` over K shared atoms z_k (weights
``(T, n, K)``, dyadic: multinomial counts of 1024 samples / 1024, so that
p = (1/n) Σ p_i, p_i − p and the total-variation distances are exact in
floating point).  f_i(w) = Σ_k p_i(z_k) l(z_k; w), so for any reference
measure r (the average p, or under the printed Assumption 5 the sum Σ p_j)

    ∇f_i(w) − ∇f(w) = Σ_k Δ_ik ∇_w l(z_k; w),   Δ_ik = p_i(z_k) − r(z_k).

Losses whose sup over all w ∈ ℝᵈ of (1/n) Σ_i ‖Σ_k Δ_ik ∇l(z_k; w)‖² is a
closed form (per atom k, one kind per instance):

* quadratic in w: l = ½ wᵀA_k w + g_kᵀw.  The difference M_i w + m_i,
  M_i = Σ_k Δ_ik A_k, is affine in w: the sup is (1/n) Σ‖m_i‖² when every
  M_i = 0 and +∞ otherwise; the Hessian difference M_i is constant.
* trigonometric: l = h1_k cos(uᵀw) + h2_k sin(uᵀw), ω = ‖u‖.  With
  a_i = Σ_k Δ_ik h1_k, b_i = Σ_k Δ_ik h2_k, c_i = b_i + i a_i and t = uᵀw, the
  gradient difference is ω Re(c_i e^{it}) u/ω and the Hessian difference
  −ω² Re((a_i − i b_i) e^{it}) uuᵀ/ω², so with S = ((1/n)Σ|c_i|² + |(1/n)Σ c_i²|)/2
  (the max over t of (1/n)Σ |c_i|² cos²(t + arg c_i)) the sups are ω² S and ω⁴ S.
  Per atom ‖∇l‖ ≤ ω|h_k| and ‖∇²l‖₂ ≤ ω²|h_k|, both attained over w.

All functions take arrays with a leading instance axis T.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment, linprog
from scipy.spatial.distance import cdist

__all__ = [
    "dyadic_weights",
    "reference",
    "tv",
    "w1_lp",
    "w1_batch",
    "closed_form_sups",
    "trig_sup",
    "logistic_sups",
    "w1_homogeneous_sweep",
    "COUNTS",
]

#: samples per client: weights are multiples of 1/COUNTS (exact sums and differences)
COUNTS = 1024


def dyadic_weights(rng, probs):
    """Empirical weights of ``COUNTS`` samples from ``probs (..., K)``: exact dyadic rationals."""
    probs = np.asarray(probs, dtype=float)
    flat = probs.reshape(-1, probs.shape[-1])
    counts = np.stack([rng.multinomial(COUNTS, q / q.sum()) for q in flat])
    return (counts / COUNTS).reshape(probs.shape)


def reference(P, f="mean"):
    """The measure f integrates: ``"mean"`` p = (1/n) Σ p_i (eq. (1)), ``"sum"`` Σ p_i (Assumption 5 as printed)."""
    if f == "mean":
        return P.mean(axis=1)
    if f == "sum":
        return P.sum(axis=1)
    raise ValueError(f"f must be 'mean' or 'sum' (got {f!r})")


def tv(P, p):
    """‖p_i − p‖_TV = ½ Σ_z |p_i(z) − p(z)| for ``P (T, n, K)``, ``p (T, K)`` -> ``(T, n)``."""
    return 0.5 * np.sum(np.abs(P - p[:, None, :]), axis=-1)


def w1_lp(p, q, D):
    r"""W₁(p, q) = min_π Σ_kl π_kl D_kl over couplings π ≥ 0 with marginals p, q (``scipy.optimize.linprog``, HiGHS).

    ``p, q (K,)`` nonnegative with equal sums, ``D (K, K)`` the distances of the atoms."""
    p, q, D = np.asarray(p, float), np.asarray(q, float), np.asarray(D, float)
    K = p.size
    if q.shape != (K,) or D.shape != (K, K):
        raise ValueError(f"p, q must be (K,) and D (K, K) (got {p.shape}, {q.shape}, {D.shape})")
    if np.any(p < 0) or np.any(q < 0) or not np.isclose(p.sum(), q.sum(), rtol=1e-12, atol=0):
        raise ValueError(f"p and q must be nonnegative with equal mass (got sums {p.sum()!r}, {q.sum()!r})")
    rows = np.kron(np.eye(K), np.ones((1, K)))  # sum_l pi_kl = p_k
    cols = np.kron(np.ones((1, K)), np.eye(K))  # sum_k pi_kl = q_l
    res = linprog(
        D.ravel(), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs"
    )
    if res.status != 0:
        raise RuntimeError(f"W1 linear program failed: {res.message}")
    return float(res.fun)


def w1_batch(P, p, D):
    """W₁(p_i, p) for ``P (T, n, K)``, ``p (T, K)``, ``D (T, K, K)`` -> ``(T, n)`` (one LP each)."""
    T, n, _ = P.shape
    return np.array([[w1_lp(P[t, i], p[t], D[t]) for i in range(n)] for t in range(T)])


def trig_sup(a, b):
    """max over t of (1/n) Σ_i (b_i cos t − a_i sin t)² for ``a, b (T, n)`` (closed form, see the module doc)."""
    c = b + 1j * a
    return 0.5 * (np.mean(np.abs(c) ** 2, axis=-1) + np.abs(np.mean(c**2, axis=-1)))


def closed_form_sups(Delta, A, g, h, u, hess_norm="spectral"):
    r"""Exact sup over w of the gradient and Hessian diversities of quadratic-in-w or trigonometric losses.

    ``Delta (T, n, K)`` = p_i − r; ``A (T, K, d, d)``, ``g (T, K, d)``: l = ½wᵀA_k w + g_kᵀw;
    ``h (T, K, 2)``, ``u (T, d)``: l = h_k1 cos(uᵀw) + h_k2 sin(uᵀw).  An instance is one kind: A = g = 0 or
    h = 0.  ``hess_norm``: ``"spectral"`` or ``"fro"``.  Returns ``(G2, H2)``, ``(T,)`` each:
    sup_w (1/n) Σ_i ‖∇f_i − ∇f‖² (+∞ when unbounded) and sup_w (1/n) Σ_i ‖∇²f_i − ∇²f‖²."""
    quad = np.any(A != 0, axis=(1, 2, 3)) | np.any(g != 0, axis=(1, 2))
    trig = np.any(h != 0, axis=(1, 2))
    if np.any(quad & trig):
        raise ValueError(
            f"each instance must be quadratic in w or trigonometric, not both "
            f"(instances {np.flatnonzero(quad & trig).tolist()})"
        )
    # M_i = (sum_k Delta_ik) A_0 + sum_k Delta_ik (A_k - A_0): exactly 0 for a shared A when sum_k Delta_ik = 0
    # (dyadic weights), where the plain sum leaves rounding that would read as "unbounded"
    M = np.einsum("tik->ti", Delta)[..., None, None] * A[:, None, 0] + np.einsum(
        "tik,tkde->tide", Delta, A - A[:, :1]
    )
    m = np.einsum("tik,tkd->tid", Delta, g)
    unbounded = np.any(M != 0, axis=(1, 2, 3))
    if hess_norm not in ("spectral", "fro"):
        raise ValueError(f"hess_norm must be 'spectral' or 'fro' (got {hess_norm!r})")
    ordr = 2 if hess_norm == "spectral" else "fro"
    H2q = np.mean(np.linalg.norm(M, ord=ordr, axis=(-2, -1)) ** 2, axis=-1)
    a = np.einsum("tik,tk->ti", Delta, h[..., 0])
    b = np.einsum("tik,tk->ti", Delta, h[..., 1])
    S = trig_sup(a, b)
    w2 = np.sum(u**2, axis=-1)
    G2 = np.where(unbounded, np.inf, np.mean(np.sum(m**2, axis=-1), axis=-1)) + w2 * S
    H2 = H2q + w2**2 * S  # rank-one uu^T: spectral and Frobenius norms agree
    return G2, H2


def logistic_sups(Delta, X, y, W, hess_norm="spectral"):
    """Max over the points ``W (T, P, d)`` of the diversities of l(z; w) = log(1 + exp(−y xᵀw)).

    ``Delta (T, n, K)``, atoms ``X (T, K, d)``, ``y (T, K)`` in {−1, 1}.  Returns ``(G2, H2)`` ``(T,)``:
    lower estimates of the sups over w (a valid lhs for checking an upper bound).  ``hess_norm`` as in
    :func:`closed_form_sups`."""
    if hess_norm not in ("spectral", "fro"):
        raise ValueError(f"hess_norm must be 'spectral' or 'fro' (got {hess_norm!r})")
    s = np.einsum("tk,tkd,tpd->ptk", y, X, W)  # margins y x^T w
    sig = 0.5 * (1 + np.tanh(-s / 2))  # sigma(-s), stable
    grad = -(y[None] * sig)[..., None] * X[None]  # (P, T, K, d)
    curv = sig * (1 - sig)  # sigma(s) sigma(-s)
    Hess = curv[..., None, None] * np.einsum("tkd,tke->tkde", X, X)[None]
    dg = np.einsum("tik,ptkd->ptid", Delta, grad)
    dH = np.einsum("tik,ptkde->ptide", Delta, Hess)
    G2 = np.mean(np.sum(dg**2, axis=-1), axis=-1).max(axis=0)
    Hn = np.linalg.norm(dH, ord=2 if hess_norm == "spectral" else "fro", axis=(-2, -1))
    H2 = np.mean(Hn**2, axis=-1).max(axis=0)
    return G2, H2


def w1_homogeneous_sweep(rng, k, ms, reps):
    r"""Monte Carlo E W₁(p_1, p) for n = 2 homogeneous clients, p_i empirical of m samples of p_u = U[0, 1]^k.

    W₁(p_1, (p_1 + p_2)/2) = ½ W₁(p_1, p_2) (Kantorovich–Rubinstein: the sup of ½(E_{p_1} − E_{p_2})g), and
    between two uniform m-point measures the optimal coupling is a permutation (Birkhoff), so each draw is an
    assignment problem (``scipy.optimize.linear_sum_assignment``).  Returns ``(mean, se)`` over ``reps`` draws,
    one per m in ``ms``."""
    if int(k) < 1 or int(reps) < 2:
        raise ValueError(f"k must be >= 1 and reps >= 2 (got k={k!r}, reps={reps!r})")
    means, ses = [], []
    for m in ms:
        v = np.empty(int(reps))
        for r in range(int(reps)):
            C = cdist(rng.random((int(m), int(k))), rng.random((int(m), int(k))))
            i, j = linear_sum_assignment(C)
            v[r] = C[i, j].mean() / 2
        means.append(v.mean())
        ses.append(v.std(ddof=1) / np.sqrt(v.size))
    return np.array(means), np.array(ses)
