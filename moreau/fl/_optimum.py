r"""The exact points the federated algorithms target: FedProx, LocalTrain and GlobalTrain optima.

Quadratics (and :class:`moreau.LeastSquares`) use closed forms through the cached
eigendecomposition; every other objective a certified damped Newton
(:mod:`moreau.fl._newton`) whose stopping rule is a rigorous bound on the distance to the
optimum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from .._backend import safe_norm, to_numpy
from .._matrices import matvec as _matvec
from .._newton_cert import _proven_min_eig
from .._objective import Objective
from .._quadratic import Quadratic
from .._typing import Array, DType, Namespace
from ._common import check_objective, client_weights, positive
from ._newton import NEWTON_RTOL, envelope_certificate, envelope_newton, gamma, minimize

__all__ = ["fedprox_optimum", "local_train", "global_train", "FedProxInfo"]


@dataclass(frozen=True)
class FedProxInfo:
    r"""Certificate of :func:`fedprox_optimum` (host numpy arrays).

    ``error_bound`` ``(*lead,)``: a rigorous bound on :math:`\|w - \tilde w^{(g)}\|` for the
    returned floating-point ``w`` (:func:`moreau.fl._newton.envelope_certificate`): the norm of
    :math:`\nabla\Phi(w) = \lambda\sum_i p_i (w - \mathrm{prox}_{f_i/\lambda}(w))` evaluated with
    the certified proxes (their errors e_i added) *plus the a-priori rounding bound of that
    evaluation*, over ``mu``; ``mu`` ``(*lead,)``: a rigorous lower bound on the strong convexity
    modulus :math:`\mu_\Phi` of Φ, rounding included (quadratics: the computed smallest
    eigenvalue of :math:`\sum_i p_i\nabla^2F_i` minus an a-posteriori bound on its error, or
    :math:`\sum_i p_i\lambda a_i/(\lambda+a_i)` at the clients' certified smallest eigenvalues
    a_i, whichever is larger; else :math:`\sum_i p_i\lambda\mu_i/(\lambda+\mu_i)` rounded down,
    at least FedProx Lemma 2's :math:`\mu_g = \lambda\mu/(\lambda+\mu)`);
    ``local_error_bound`` ``(*lead, m)``: :math:`e_i + \lambda/(\lambda+\mu_i)` times the global bound
    (the prox is :math:`\lambda/(\lambda+\mu_i)`-Lipschitz, FedProx Lemma 2's L_w; :math:`\mu_i` a
    certified lower curvature bound of client i), on :math:`\|w^{(i)} - \tilde w^{(i)}\|` for the
    returned personal models (the proxes at the returned ``w``, certified as returned);
    ``iterations``: Newton iterations (0 for closed forms).  The bounds hold for the problem the
    floats represent: ``lam``, the data and the weights as held in the objective's dtype, with
    the exact normalisation :math:`p_i = \mathrm{weights}_i/\sum_j\mathrm{weights}_j`.
    """

    error_bound: np.ndarray
    local_error_bound: np.ndarray
    mu: np.ndarray
    iterations: np.ndarray


@overload
def fedprox_optimum(
    objective: Objective,
    lam: float | Array,
    weights: Array | None = ...,
    *,
    return_info: Literal[False] = ...,
) -> tuple[Array, Array]: ...
@overload
def fedprox_optimum(
    objective: Objective, lam: float | Array, weights: Array | None = ..., *, return_info: Literal[True]
) -> tuple[Array, Array, FedProxInfo]: ...
@overload
def fedprox_optimum(
    objective: Objective, lam: float | Array, weights: Array | None = ..., *, return_info: bool
) -> tuple[Array, Array] | tuple[Array, Array, FedProxInfo]: ...
def fedprox_optimum(
    objective: Objective, lam: float | Array, weights: Array | None = None, *, return_info: bool = False
) -> tuple[Array, Array] | tuple[Array, Array, FedProxInfo]:
    r"""The exact FedProx solution :math:`(\tilde w^{(g)}, \tilde w^{(i)})`.

    .. math::
        (\tilde w^{(g)}, \{\tilde w^{(i)}\}) = \arg\min \sum_i p_i \Big(f_i(w^{(i)})
            + \tfrac{\lambda}{2}\|w^{(g)} - w^{(i)}\|^2\Big),

    equivalently :math:`\tilde w^{(g)} = \arg\min_w \Phi(w) = \sum_i p_i F_i(w)` with
    :math:`F_i` the Moreau envelope of :math:`f_i` and :math:`\tilde w^{(i)} =
    \mathrm{prox}_{f_i/\lambda}(\tilde w^{(g)})` (FedProx analysis eqs. (1), (7), (8); the same
    problem is pFedMe's with :math:`w^* = \tilde w^{(g)}`, :math:`\hat\theta_i(w^*) = \tilde w^{(i)}`).
    λ is ``lam``; the :math:`f_i` (the empirical risks :math:`L_i`) are the clients of
    ``objective``; ``weights`` are the :math:`p_i` (default uniform 1/m, normalised to sum 1).

    Quadratics: :math:`\nabla F_i(w) = H_i w - V_i\,\mathrm{diag}(\lambda/(\lambda+a_i))V_i^\top b_i`
    with :math:`H_i = V_i\,\mathrm{diag}(\lambda a_i/(\lambda+a_i))V_i^\top`, so
    :math:`\tilde w^{(g)}` solves one d×d system per trial, through the cached
    eigendecomposition (a λ-sweep reuses it).  Other objectives: certified damped Newton on
    Φ; it stops when the bound of :class:`FedProxInfo` is at most
    :math:`\max(10^{-12}(1 + \|w\|), \text{rounding floor})` (``moreau.fl._newton``).

    Shapes: ``objective`` batch ``(..., m)``; ``lam`` a scalar or an array broadcasting against
    the trial shape ``(...)`` (``(L, 1)`` over trials ``(T,)`` is a sweep); ``weights`` ``(m,)``
    or ``(..., m)``.  Returns ``w_global`` ``(*lead, d)`` and ``w_local`` ``(*lead, m, d)``,
    ``lead`` the broadcast of ``lam`` with ``(...)``; with ``return_info=True`` also a
    :class:`FedProxInfo`.  Needs Φ strongly convex (ValueError otherwise; with
    ``return_info=True`` also when its modulus is within its own rounding of 0, so that no
    certificate can be given).

    References: FedProx analysis (Yu et al.), eqs. (1), (7), (8), Lemma 2; pFedMe eq. (2), Prop. 1.
    """
    f, m = check_objective(objective)
    xp = f.xp
    lam = positive(lam, "lam", f)
    p = client_weights(weights, f, m)
    f._lam(lam[..., None] if lam.ndim else lam)  # nonconvex clients need lam > -mu_i
    _check_lam_range(f, lam)
    lead = tuple(np.broadcast_shapes(tuple(lam.shape), tuple(f.batch_shape[:-1]), tuple(p.shape[:-1])))
    lam_l = xp.broadcast_to(lam, lead)
    p_l = xp.broadcast_to(p, lead + (m,))
    if isinstance(f, Quadratic):
        w_g, mu_lo, mu_i = _quadratic_optimum(f, lam_l, p_l, certify=return_info)
        iterations = np.zeros(lead, dtype=int)
    else:
        mu_i = xp.broadcast_to(f.strong_convexity(), lead + (m,))
        mu_hat, mu_lo = _modulus(xp, p_l, lam_l[..., None] * mu_i / (lam_l[..., None] + mu_i), f.dtype)
        if not bool(xp.all(mu_hat > 0)):
            raise ValueError(
                "fedprox_optimum needs sum_i p_i F_i strongly convex: the clients' strong "
                f"convexity gives modulus {float(xp.min(mu_hat)):.3g} <= 0 (add a ridge mu > 0)"
            )
        _check_certified(xp, mu_hat, mu_lo)
        _check_lam_range(f, lam, mu_lo)
        w_g, _, iterations = envelope_newton(f, p_l, lam_l, mu_lo, rtol=NEWTON_RTOL)
    W = xp.broadcast_to(w_g[..., None, :], lead + (m, f.dim))
    if not return_info:
        return w_g, f.prox(W, lam_l[..., None])
    w_loc, pinfo = f.prox(W, lam_l[..., None], return_info=True)
    bound, _ = envelope_certificate(f, p_l, lam_l, w_g, w_loc, pinfo.error_bound, mu_lo)
    eps = float(xp.finfo(f.dtype).eps)
    e = xp.asarray(pinfo.error_bound, dtype=f.dtype)
    e = e + e * eps  # the float64 bound cast to the dtype, rounded up
    lip = lam_l[..., None] / (lam_l[..., None] + mu_i) * (1 + 4 * eps)  # mu_i a certified lower bound
    local = (e + lip * bound[..., None]) * (1 + 4 * eps)
    info = FedProxInfo(
        error_bound=np.asarray(to_numpy(bound)),
        local_error_bound=np.asarray(to_numpy(local)),
        mu=np.asarray(to_numpy(mu_lo)),
        iterations=np.asarray(to_numpy(iterations)),
    )
    return w_g, w_loc, info


def _modulus(xp: Namespace, p: Array, c: Array, dtype: DType) -> tuple[Array, Array]:
    r"""``(computed, rigorous lower bound)`` of :math:`\sum_i p_i c_i` for the exact weights:
    each :math:`c_i` computed with at most 3 roundings (``lam mu/(lam + mu)``, or
    ``lam a/(lam + a)``), the products and the sum of m terms (``gamma_{m+4}``), the weights'
    normalisation (``2 delta_p``), all against :math:`\sum_i p_i|c_i|` (terms of either sign)."""
    eps = float(xp.finfo(dtype).eps)
    m = p.shape[-1]
    mu = xp.sum(p * c, axis=-1)
    slack = (
        (gamma(m + 4, eps) + 2 * gamma(m + 1, eps)) * xp.sum(p * xp.abs(c), axis=-1) * (1 + 2 * gamma(m, eps))
    )
    return mu, (mu - slack * (1 + 2 * eps)) * (1 - 2 * eps)


def _check_lam_range(f: Objective, lam: Array, mu_lo: Array | None = None) -> None:
    r"""``ValueError`` naming ``lam`` where the system overflows the dtype: the envelope Hessians'
    eigenvalues :math:`\lambda a/(\lambda + a)` are formed as a product over a sum, so
    ``lam`` times the clients' curvature bound ``L`` (``f._smoothness_bound()``) must be finite
    (the limit of a large ``lam`` is GlobalTrain: :func:`global_train` computes it directly);
    with ``mu_lo`` (Φ's certified modulus) also ``lam / mu_lo``, the certificate's scale."""
    xp = f.xp
    top = float(xp.max(lam))
    fmax = float(xp.finfo(f.dtype).max)
    if mu_lo is not None:
        low = float(xp.min(mu_lo))
        if not top / low * 64 < fmax:
            raise ValueError(
                f"lam={top:.3g} is too large for {f.dtype}: the certificate's scale lam / mu "
                f"(mu = {low:.3g}, the certified modulus of sum_i p_i F_i) overflows; lam must "
                f"be below {low * fmax / 64:.3g} (for the limit lam -> inf use global_train)"
            )
        return
    L = float(xp.max(xp.abs(f._smoothness_bound())))
    if top * L < fmax and top + L < fmax:  # Python floats: an overflow is inf, never an error
        return
    raise ValueError(
        f"lam={top:.3g} is too large: the FedProx system overflows {f.dtype} (lam times the clients' "
        f"curvature bound L = {L:.3g} is not finite); lam must be below {fmax / max(L, 1.0):.3g} "
        "(for the limit lam -> inf use global_train)"
    )


def _check_certified(xp: Namespace, mu_hat: Array, mu_lo: Array) -> None:
    if not bool(xp.all(mu_lo > 0)):
        k = int(xp.argmin(xp.reshape(mu_lo, (-1,))))
        raise ValueError(
            "fedprox_optimum cannot certify that sum_i p_i F_i is strongly convex: its computed modulus "
            f"{float(xp.reshape(mu_hat, (-1,))[k]):.3g} is within its rounding error of 0 (certified lower "
            f"bound {float(xp.reshape(mu_lo, (-1,))[k]):.3g} <= 0 at flat index {k}); lam is too close to "
            "where Phi loses strong convexity for this dtype: move lam away or rescale the clients"
        )


def _quadratic_optimum(
    f: Quadratic, lam: Array, p: Array, *, certify: bool
) -> tuple[Array, Array | None, Array | None]:
    r"""``(w_g (*lead, d), mu_lo (*lead,) or None, mu_i (*lead, m) or None)`` from the
    eigendecomposition; with ``certify``, ``mu_lo`` a rigorous lower bound on Φ's modulus and
    ``mu_i`` certified lower curvature bounds of the clients.

    A-posteriori check of the computed eigendecomposition :math:`A \approx \hat V\hat\Lambda\hat V^\top`
    (nothing assumed about it): :math:`\eta \ge \|\hat V^\top\hat V - I\|_2` (Frobenius norm of
    the computed product, plus ``gamma_d ||V||_F^2`` for its rounding) bounds the distance
    :math:`\|\hat V - Q\| \le \eta` to its orthogonal polar factor Q (singular values:
    :math:`|\sigma - 1| \le |\sigma^2 - 1|`), and :math:`\epsilon \ge \|Q\hat\Lambda Q^\top - A\|_2
    = \|AQ - Q\hat\Lambda\|_2 \le \|A\hat V - \hat V\hat\Lambda\| + (\|A\|_F + \max|\hat a|)\eta` (the
    residual's rounding, ``gamma_{d+2} (||A||_F + max|a|) ||V||_F``, added).  So the true
    eigenvalues are within ε of the computed ones (Weyl), and with
    :math:`c(X) = \lambda X(X + \lambda I)^{-1} = \lambda I - \lambda^2(X + \lambda I)^{-1}`::

        ||c(A) - c(Q diag(a) Q^T)|| <= lam^2 eps / ((lam + a_1 - eps)(lam + a_1))
        ||Q C Q^T - V C V^T||       <= (2 eta + eta^2) max|c(a)|

    The computed :math:`\hat H = fl(\sum_i \hat p_i \hat V_i c(\hat a_i)\hat V_i^\top)`, symmetrised,
    adds ``gamma_{d+5} max|c| ||V||_F^2`` per client and ``gamma_m`` of the sum, ``u ||H||_F`` for
    the symmetrisation, ``2 delta_p`` of the weights' normalisation; the smallest eigenvalue of
    the computed :math:`\hat H` is proven by a certified Cholesky just below ``eigvalsh``'s value
    (:func:`moreau._newton_cert._proven_min_eig`: no eigensolver accuracy assumed).
    ``mu_lo`` is the larger of that proven eigenvalue minus all these, and
    :math:`\sum_i p_i c(\hat a_{i,1} - \epsilon_i)` rounded down (valid since
    :math:`\nabla^2 F_i \succeq c(a_{i,1}) I` and c is increasing; the better one when the clients
    are strongly convex, the other one when some are singular).
    """
    xp = f.xp
    a, V = f._eigh
    bt = f._bt
    lam_ = lam[..., None, None]
    curv = lam_ * a / (lam_ + a)  # (*lead, m, d): eigenvalues of the envelope Hessians
    scale = p[..., None] * curv
    H = xp.sum((V * scale[..., None, :]) @ xp.matrix_transpose(V), axis=-3)
    H = (H + xp.matrix_transpose(H)) / 2
    r = xp.sum(_matvec(V, p[..., None] * lam_ / (lam_ + a) * bt), axis=-2)
    mu = xp.linalg.eigvalsh(H)[..., 0]
    if not bool(xp.all(mu > 0)):
        raise ValueError(
            "fedprox_optimum needs sum_i p_i F_i strongly convex: its Hessian "
            f"sum_i p_i V_i diag(lam a/(lam + a)) V_i^T has smallest eigenvalue {float(xp.min(mu)):.3g}"
        )
    w_g = xp.linalg.solve(H, r[..., None])[..., 0]
    if not certify:
        return w_g, None, None
    eps = float(xp.finfo(f.dtype).eps)
    u, d, m = eps / 2, f.dim, p.shape[-1]
    lam1 = lam[..., None]
    up_f = 1 + (d * d / 2 + 4) * eps  # a computed Frobenius norm, rounded up
    # a-posteriori eigendecomposition check: eta >= ||V^T V - I||, eps_q >= ||Q diag(a) Q^T - A||
    vf2 = xp.sum(V * V, axis=(-2, -1)) * (1 + 2 * gamma(d * d, eps))
    eye = xp.eye(d, dtype=f.dtype)
    eta = (_fro(xp, xp.matrix_transpose(V) @ V - eye) * up_f * (1 + u) + gamma(d + 1, eps) * vf2) * (
        1 + 4 * eps
    )
    amax = xp.max(xp.abs(a), axis=-1)
    fro_a = f._fro * up_f
    res = _fro(xp, f.A @ V - V * a[..., None, :]) * up_f
    eps_q = (res + gamma(d + 2, eps) * (fro_a + amax) * xp.sqrt(vf2) * (1 + eps) + (fro_a + amax) * eta) * (
        1 + 8 * eps
    )
    a1 = a[..., 0]
    # option A: sum_i p_i c(a_1 - eps_q) (c increasing; the prox exists, so lam + a_1 > 0)
    lo = a1 - eps_q
    lo = lo - xp.abs(lo) * eps  # rounded down
    ok_a = (lam1 + lo) > 0
    one, inf = xp.asarray(1.0, dtype=f.dtype), xp.asarray(math.inf, dtype=f.dtype)
    c_lo = xp.where(ok_a, lam1 * lo / xp.where(ok_a, lam1 + lo, one), -inf)
    c_lo = c_lo - xp.abs(c_lo) * (4 * eps)  # the three roundings of c, down
    _, mu_a = _modulus(xp, p, c_lo, f.dtype)
    # option B: the computed eigenvalue of H minus the bound on its error
    gap_lo = (lam1 + a1 - eps_q) * (1 - 4 * eps)
    ok_b = gap_lo > 0
    term_e = xp.where(ok_b, lam1 * lam1 * eps_q / xp.where(ok_b, gap_lo * (lam1 + a1), one), inf)
    term_e = term_e * (1 + 8 * eps)
    cmax = xp.max(xp.abs(curv), axis=-1) * (1 + 8 * eps)
    per = (
        term_e
        + (2 * eta + eta * eta) * cmax
        + gamma(d + 5, eps) * cmax * vf2
        + 2 * gamma(m + 1, eps) * (cmax * (1 + 3 * eta) + term_e)
    )
    up_m = 1 + 2 * gamma(m, eps)
    delta = (xp.sum(p * per, axis=-1) + gamma(m, eps) * xp.sum(p * cmax * vf2, axis=-1)) * up_m + u * _fro(
        xp, H
    ) * up_f
    # the computed H's smallest eigenvalue proven by a certified Cholesky just below eigvalsh's
    # value (nothing assumed about the eigensolver), then the distance from H_hat to the exact H
    mu_h = _proven_min_eig(xp, H, mu, 4 * d * eps * _fro(xp, H) * up_f)
    mu_b = (mu_h - delta * (1 + 4 * eps)) - 2 * eps * (xp.abs(mu_h) + delta)
    mu_lo = xp.where(xp.isnan(mu_b), mu_a, xp.maximum(mu_a, mu_b))
    _check_certified(xp, mu, mu_lo)
    mu_i = xp.broadcast_to(lo, tuple(lam.shape) + (m,))
    return w_g, mu_lo, mu_i


def _fro(xp: Namespace, M: Array) -> Array:
    """Frobenius norm over the last two axes, scaled (no overflow)."""
    return safe_norm(xp.reshape(M, tuple(M.shape[:-2]) + (-1,)), xp)


def local_train(objective: Objective) -> Array:
    r"""LocalTrain: the exact minimiser of each client's :math:`f_i` (FedProx analysis eq. (2)).

    Quadratics: :math:`A_i^{-1}b_i` through the eigendecomposition; other objectives: certified
    damped Newton stopped on :math:`\|w - w_i^*\| \le \|\nabla f_i(w)\|/\mu_i \le
    \max(10^{-12}(1 + \|w\|), \text{rounding floor})`.  Needs every :math:`f_i` strongly convex.

    Shapes: ``objective`` batch ``(..., m)`` → ``(..., m, d)``.

    References: FedProx analysis, eq. (2) (LocalTrain).
    """
    f, m = check_objective(objective)
    xp = f.xp
    mu = xp.broadcast_to(f.strong_convexity(), f.batch_shape)
    if not bool(xp.all(mu > 0)):
        raise ValueError(
            f"local_train needs every client strongly convex (smallest modulus "
            f"{float(xp.min(mu)):.3g}; LocalTrain has no unique minimiser)"
        )
    if isinstance(f, Quadratic):
        return f.minimizer()

    eps = float(xp.finfo(f.dtype).eps)

    def state(w: Array) -> tuple[Array, Array, Array, Array, None]:
        g = f.grad(w)
        wn = xp.linalg.vector_norm(w, axis=-1)
        tol = xp.maximum(NEWTON_RTOL * (1 + wn), 64 * eps * f._grad_error_scale(w) / mu)
        return f.value(w), g, xp.linalg.vector_norm(g, axis=-1) / mu, tol, None

    w0 = xp.zeros(f.batch_shape + (f.dim,), dtype=f.dtype)
    return minimize(state, lambda w, aux: f.hess(w), w0, f.dtype, xp=xp, what="local_train")[0]


def global_train(objective: Objective, weights: Array | None = None) -> Array:
    r"""GlobalTrain: the exact minimiser of :math:`\sum_i p_i f_i` (FedProx analysis eq. (2)).

    ``weights`` are the :math:`p_i` (default uniform 1/m, normalised).  Quadratics: one d×d solve
    :math:`(\sum_i p_i A_i) w = \sum_i p_i b_i`; other objectives: certified damped Newton on
    :math:`\sum_i p_i f_i` stopped on :math:`\|w - w^*\| \le \|\sum_i p_i\nabla f_i(w)\|/\sum_i p_i\mu_i`.

    Shapes: ``objective`` batch ``(..., m)``, weights ``(m,)`` or ``(..., m)`` → ``(..., d)``.

    References: FedProx analysis, eq. (2) (GlobalTrain); pFedMe eq. (1).
    """
    f, m = check_objective(objective)
    xp = f.xp
    p = client_weights(weights, f, m)
    lead = tuple(np.broadcast_shapes(tuple(f.batch_shape[:-1]), tuple(p.shape[:-1])))
    p = xp.broadcast_to(p, lead + (m,))
    if isinstance(f, Quadratic):
        A = xp.sum(p[..., None, None] * f.A, axis=-3)
        b = xp.sum(p[..., None] * f.b, axis=-2)
        low = xp.linalg.eigvalsh(A)[..., 0]
        if not bool(xp.all(low > 0)):
            raise ValueError(
                f"global_train needs sum_i p_i A_i positive definite (smallest eigenvalue "
                f"{float(xp.min(low)):.3g})"
            )
        return xp.linalg.solve(A, b[..., None])[..., 0]
    mu = xp.sum(p * f.strong_convexity(), axis=-1)
    if not bool(xp.all(mu > 0)):
        raise ValueError(
            f"global_train needs sum_i p_i f_i strongly convex (modulus {float(xp.min(mu)):.3g})"
        )

    eps = float(xp.finfo(f.dtype).eps)

    def state(w: Array) -> tuple[Array, Array, Array, Array, None]:
        W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        g = xp.sum(p[..., None] * f.grad(W), axis=-2)
        scale = xp.sum(p * f._grad_error_scale(W), axis=-1)
        tol = xp.maximum(NEWTON_RTOL * (1 + xp.linalg.vector_norm(w, axis=-1)), 64 * eps * scale / mu)
        return xp.sum(p * f.value(W), axis=-1), g, xp.linalg.vector_norm(g, axis=-1) / mu, tol, None

    def hess(w: Array, aux: Any) -> Array:
        W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        return xp.sum(p[..., None, None] * f.hess(W), axis=-3)

    w0 = xp.zeros(lead + (f.dim,), dtype=f.dtype)
    return minimize(state, hess, w0, f.dtype, xp=xp, what="global_train")[0]
