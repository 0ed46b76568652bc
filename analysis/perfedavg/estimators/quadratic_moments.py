r"""Exact moments of Per-FedAvg's gradient estimates on quadratic samples (closed forms).

Samples ``j = 1..n`` carry the losses :math:`\ell_j(x) = \tfrac12 x^\top A_j x - b_j^\top x`
(least squares: :math:`A_j = x_jx_j^\top`, :math:`b_j = y_jx_j`; any symmetric :math:`A_j`,
nonconvex included); :math:`f = \frac1n\sum_j \ell_j`; batches D, D', D'' are i.i.d. uniform
draws *with replacement* of sizes ``D``, ``D1``, ``D2``, independent of each other.  With
:math:`r_j = A_jw - b_j` (the samples' gradients at w), :math:`\bar r = \nabla f(w)`,
:math:`M = I - \alpha\bar A` and a batch mean written :math:`\bar{(\cdot)}_D`:

.. math::
    \tilde\nabla f(w - \alpha\tilde\nabla f(w, D), D') = \bar r_{D'} - \alpha\bar A_{D'}\bar r_D =: y,
    \qquad X = (I - \alpha_o\bar A_{D''})\,y .

``outer`` is :math:`\alpha_o`: ``alpha`` gives eq. (8) (Lemma 4.3), 0 the first-order estimate
(112), and the Hessian-free estimate (120)-(121) is exactly ``alpha`` (its central difference
is exact on quadratics: :math:`\tilde d = \bar A_{D''}y`; §5's divisor δ in place of 2δ gives
``2 alpha``).  The target is :math:`\nabla F(w) = M^2\bar r` (eq. (5)).  With
:math:`\tilde A_j = A_j - \bar A`, :math:`\tilde r_j = r_j - \bar r`, :math:`\Sigma_r = E_j\tilde r_j\tilde r_j^\top`,
:math:`s_j = \tilde r_j - \alpha\tilde A_j\bar r`, :math:`m = M\bar r`:

.. math::
    E X - \nabla F = (\alpha - \alpha_o)\bar A m, \qquad
    \operatorname{Cov} y = \frac{\alpha^2}{D}\bar A\Sigma_r\bar A
        + \frac1{D'}\Big(E_j s_js_j^\top + \frac{\alpha^2}{D}E_j\tilde A_j\Sigma_r\tilde A_j\Big),

.. math::
    E\|X - \nabla F\|^2 = \operatorname{tr}(Q\operatorname{Cov} y)
        + \frac{\alpha_o^2}{D''}m^\top E_j[\tilde A_j^2]\,m + \|EX - \nabla F\|^2,\quad
    Q = (I - \alpha_o\bar A)^2 + \frac{\alpha_o^2}{D''}E_j[\tilde A_j^2]

(independence of the three batches; every term a sample moment, no cancellation).  The tests
check these against the mean over all :math:`n^{D+D'+D''}` ordered batches and against the
library's estimator (``moreau.fl.per_fedavg``) by Monte Carlo.

References: Per-FedAvg (Fallah et al., 2020), eqs. (5), (8), Lemma 4.3; Appendix H, (112), (120).
"""

from __future__ import annotations

import numpy as np

__all__ = ["quadratic_moments", "quadratic_constants", "variance_at", "algorithm1_bias"]


def _sym(M):
    return (M + np.swapaxes(M, -1, -2)) / 2


def quadratic_moments(A, b, w, alpha, outer, D, D1, D2):
    """``(bias (T, d), second moment (T,), grad F (T, d))`` of ``X`` about ``∇F(w)``.

    ``A (T, n, d, d)`` symmetric, ``b (T, n, d)``, ``w (T, d)``, ``alpha``, ``outer``,
    ``D``, ``D1``, ``D2`` ``(T,)`` (batch sizes > 0; ``inf`` is an exact gradient)."""
    d = A.shape[-1]
    eye = np.eye(d)
    Ab = A.mean(axis=1)
    At = A - Ab[:, None]
    r = np.einsum("tnij,tj->tni", A, w) - b
    rb = r.mean(axis=1)
    rt = r - rb[:, None]
    a, ao = alpha[:, None, None], outer[:, None, None]
    M, Mo = eye - a * Ab, eye - ao * Ab
    m = np.einsum("tij,tj->ti", M, rb)
    grad_F = np.einsum("tij,tj->ti", M, m)
    Sr = np.einsum("tni,tnj->tij", rt, rt) / r.shape[1]
    s = rt - alpha[:, None, None] * np.einsum("tnij,tj->tni", At, rb)
    ES = np.einsum("tni,tnj->tij", s, s) / r.shape[1]
    EASA = np.einsum("tnij,tjk,tnkl->til", At, Sr, At) / r.shape[1]
    EA2 = np.einsum("tnij,tnjk->tik", At, At) / r.shape[1]
    invD, invD1, invD2 = (1.0 / np.asarray(x, float)[:, None, None] for x in (D, D1, D2))
    cov_y = _sym(a**2 * invD * (Ab @ Sr @ Ab) + invD1 * (ES + a**2 * invD * EASA))
    Q = _sym(Mo @ Mo + ao**2 * invD2 * EA2)
    bias = (alpha - outer)[:, None] * np.einsum("tij,tj->ti", Ab, m)
    var = np.trace(Q @ cov_y, axis1=-2, axis2=-1) + outer**2 * invD2[:, 0, 0] * np.einsum(
        "ti,tij,tj->t", m, EA2, m
    )
    return bias, var + np.sum(bias**2, axis=-1), grad_F


def variance_at(A, b, x):
    """Per-sample gradient variance :math:`E_j\\|\\nabla\\ell_j(x) - \\nabla f(x)\\|^2` at points
    ``x (..., T, d)`` (Assumption 4's left side, eq. (11)); returns ``(..., T)``."""
    g = np.einsum("tnij,...tj->...tni", A, x) - b
    dev = g - g.mean(axis=-2, keepdims=True)
    return np.mean(np.sum(dev**2, axis=-1), axis=-1)


def quadratic_constants(A, b, w, alpha, delta=None):
    """The constants the proofs use at this ``w``, exactly: a dict of ``(T,)`` arrays.

    ``L = max|eig(Ā)|``; ``sH2 = E_j‖A_j − Ā‖₂²`` (spectral norm; constant in w);
    ``B = ‖∇f(w − α∇f(w))‖`` (the only gradient norm the proofs bound by B);
    ``sG2``: the largest variance (11) over w and every point ``w − α∇̃f(w, D)`` a batch can
    give (the proofs of Lemma 4.3 and H.1 use (11) there and nowhere else).  The variance is a
    convex quadratic of the point, the points lie in the hull of ``w − α r_j`` and those
    vertices are batches (D copies of j): the max over them is exact.  With ``delta``:
    ``sG2_hf`` adds the points ``w ± δ G̃`` of (121); G̃ ranges over the hull of
    ``r_k − α A_k r_j`` (each a batch pair), so again the max over the n² vertices is exact.
    With a shared Hessian the variance is the same at every point: then sG2 is Assumption 4's
    sup over all of ℝ^d.
    """
    Ab = A.mean(axis=1)
    L = np.max(np.abs(np.linalg.eigvalsh(Ab)), axis=-1)  # as estimators.instances.quadratic_smoothness
    dev = A - Ab[:, None]
    sH2 = np.mean(np.max(np.abs(np.linalg.eigvalsh(dev)), axis=-1) ** 2, axis=1)
    r = np.einsum("tnij,tj->tni", A, w) - b
    rb = r.mean(axis=1)
    v = w - alpha[:, None] * rb
    B = np.linalg.norm(np.einsum("tij,tj->ti", Ab, v) - b.mean(axis=1), axis=-1)
    U = w[None] - alpha[None, :, None] * np.moveaxis(r, 1, 0)  # (n, T, d) vertices u_j
    sG2 = np.maximum(variance_at(A, b, w), np.max(variance_at(A, b, U), axis=0))
    out = {"L": L, "sH2": sH2, "B": B, "sG2": sG2}
    if delta is not None:
        # vertices r_k - alpha A_k r_j, (n_k, n_j, T, d)
        H = np.moveaxis(r, 1, 0)[:, None] - alpha[None, None, :, None] * np.einsum("tkab,tjb->kjta", A, r)
        pts = np.concatenate([w + delta[:, None] * H, w - delta[:, None] * H]).reshape(-1, *w.shape)
        out["sG2_hf"] = np.maximum(sG2, np.max(variance_at(A, b, pts), axis=0))
    return out


def algorithm1_bias(A, b, w, alpha, D1):
    r"""``E X − ∇F (T, d)`` for Algorithm 1 as printed: the Hessian on D' (the outer gradient's batch)
    instead of an independent D''.  With :math:`C = E_j\tilde A_j\tilde r_j`:

    .. math:: E X - \nabla F = -\frac{\alpha}{D'}\big(C - \alpha E_j[\tilde A_j^2]\,\bar r\big)

    (E[Ā_{D'} r̄_{D'}] = Ā r̄ + C/D', E[Ā_{D'}²] = Ā² + E[Ã²]/D'), whatever D: not O(1/√D)."""
    Ab = A.mean(axis=1)
    At = A - Ab[:, None]
    r = np.einsum("tnij,tj->tni", A, w) - b
    rb = r.mean(axis=1)
    C = np.einsum("tnij,tnj->ti", At, r - rb[:, None]) / r.shape[1]
    EA2 = np.einsum("tnij,tnjk->tik", At, At) / r.shape[1]
    return -(alpha / D1)[:, None] * (C - alpha[:, None] * np.einsum("tij,tj->ti", EA2, rb))
