r"""The exact points the federated algorithms target: FedProx, LocalTrain and GlobalTrain optima.

Quadratics (and :class:`moreau.LeastSquares`) use closed forms through the cached
eigendecomposition; every other objective a certified damped Newton
(:mod:`moreau.fl._newton`) whose stopping rule is a rigorous bound on the distance to the
optimum.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._backend import to_numpy
from .._quadratic import Quadratic, _matvec
from ._common import check_objective, client_weights, positive
from ._newton import NEWTON_RTOL, envelope_newton, minimize

__all__ = ["fedprox_optimum", "local_train", "global_train", "FedProxInfo"]


@dataclass(frozen=True)
class FedProxInfo:
    r"""Certificate of :func:`fedprox_optimum` (host numpy arrays).

    ``error_bound`` ``(*lead,)``: a rigorous bound on :math:`\|w - \tilde w^{(g)}\|`,
    ``(\|\nabla\Phi(w)\| + \lambda\sum_i p_i e_i)/\mu_\Phi`` with e_i the certified errors of the
    proxes that evaluate :math:`\nabla\Phi(w) = \lambda\sum_i p_i (w - \mathrm{prox}_{f_i/\lambda}(w))`
    and :math:`\mu_\Phi` (``mu``) the strong convexity modulus of Φ (quadratics: the exact smallest
    eigenvalue of :math:`\sum_i p_i\nabla^2F_i`; else :math:`\sum_i p_i\lambda\mu_i/(\lambda+\mu_i)`,
    which is at least FedProx Lemma 2's :math:`\mu_g = \lambda\mu/(\lambda+\mu)`);
    ``local_error_bound`` ``(*lead, m)``: :math:`e_i + \lambda/(\lambda+\mu_i)` times the global bound
    (the prox is :math:`\lambda/(\lambda+\mu_i)`-Lipschitz, FedProx Lemma 2's L_w), on
    :math:`\|w^{(i)} - \tilde w^{(i)}\|`; ``iterations``: Newton iterations (0 for closed forms).
    Both bounds are evaluated in floating point at the returned point (as ``moreau.ProxInfo``):
    they certify up to the rounding of :math:`\nabla\Phi` itself.
    """

    error_bound: object
    local_error_bound: object
    mu: object
    iterations: object


def fedprox_optimum(objective, lam, weights=None, *, return_info=False):
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
    :class:`FedProxInfo`.  Needs Φ strongly convex (ValueError otherwise).

    References: FedProx analysis (Yu et al.), eqs. (1), (7), (8), Lemma 2; pFedMe eq. (2), Prop. 1.
    """
    f, m = check_objective(objective)
    xp = f.xp
    lam = positive(lam, "lam", f)
    p = client_weights(weights, f, m)
    f._lam(lam[..., None] if lam.ndim else lam)  # nonconvex clients need lam > -mu_i
    lead = tuple(np.broadcast_shapes(tuple(lam.shape), tuple(f.batch_shape[:-1]), tuple(p.shape[:-1])))
    lam_l = xp.broadcast_to(lam, lead)
    if isinstance(f, Quadratic):
        w_g, mu_phi = _quadratic_optimum(f, lam_l, p)
        iterations = np.zeros(lead, dtype=int)
    else:
        mu_i = xp.broadcast_to(f.strong_convexity(), lead + (m,))
        mu_phi = xp.sum(p * lam_l[..., None] * mu_i / (lam_l[..., None] + mu_i), axis=-1)
        if not bool(xp.all(mu_phi > 0)):
            raise ValueError("fedprox_optimum needs sum_i p_i F_i strongly convex: the clients' strong "
                             f"convexity gives modulus {float(xp.min(mu_phi)):.3g} <= 0 (add a ridge mu > 0)")
        w_g, _, iterations = envelope_newton(f, xp.broadcast_to(p, lead + (m,)), lam_l, mu_phi,
                                             rtol=NEWTON_RTOL)
    W = xp.broadcast_to(w_g[..., None, :], lead + (m, f.dim))
    if not return_info:
        return w_g, f.prox(W, lam_l[..., None])
    w_loc, pinfo = f.prox(W, lam_l[..., None], return_info=True)
    e = xp.asarray(pinfo.error_bound, dtype=f.dtype)
    grad = xp.sum(p[..., None] * lam_l[..., None, None] * (W - w_loc), axis=-2)
    bound = (xp.linalg.vector_norm(grad, axis=-1) + lam_l * xp.sum(p * e, axis=-1)) / mu_phi
    mu_i = xp.broadcast_to(f.strong_convexity(), lead + (m,))
    local = e + lam_l[..., None] / (lam_l[..., None] + mu_i) * bound[..., None]
    info = FedProxInfo(error_bound=np.asarray(to_numpy(bound)), local_error_bound=np.asarray(to_numpy(local)),
                       mu=np.asarray(to_numpy(mu_phi)), iterations=iterations)
    return w_g, w_loc, info


def _quadratic_optimum(f, lam, p):
    """``(w_g (*lead, d), exact modulus (*lead,))`` from the eigendecomposition."""
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
        raise ValueError("fedprox_optimum needs sum_i p_i F_i strongly convex: its Hessian "
                         f"sum_i p_i V_i diag(lam a/(lam + a)) V_i^T has smallest eigenvalue {float(xp.min(mu)):.3g}")
    return xp.linalg.solve(H, r[..., None])[..., 0], mu


def local_train(objective):
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
        raise ValueError(f"local_train needs every client strongly convex (smallest modulus "
                         f"{float(xp.min(mu)):.3g}; LocalTrain has no unique minimiser)")
    if isinstance(f, Quadratic):
        return f.minimizer()

    eps = float(xp.finfo(f.dtype).eps)

    def state(w):
        g = f.grad(w)
        wn = xp.linalg.vector_norm(w, axis=-1)
        tol = xp.maximum(NEWTON_RTOL * (1 + wn), 64 * eps * f._grad_error_scale(w) / mu)
        return f.value(w), g, xp.linalg.vector_norm(g, axis=-1) / mu, tol, None

    w0 = xp.zeros(f.batch_shape + (f.dim,), dtype=f.dtype)
    return minimize(state, lambda w, aux: f.hess(w), w0, f.dtype, xp=xp, what="local_train")[0]


def global_train(objective, weights=None):
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
            raise ValueError(f"global_train needs sum_i p_i A_i positive definite (smallest eigenvalue "
                             f"{float(xp.min(low)):.3g})")
        return xp.linalg.solve(A, b[..., None])[..., 0]
    mu = xp.sum(p * f.strong_convexity(), axis=-1)
    if not bool(xp.all(mu > 0)):
        raise ValueError(f"global_train needs sum_i p_i f_i strongly convex (modulus {float(xp.min(mu)):.3g})")

    eps = float(xp.finfo(f.dtype).eps)

    def state(w):
        W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        g = xp.sum(p[..., None] * f.grad(W), axis=-2)
        scale = xp.sum(p * f._grad_error_scale(W), axis=-1)
        tol = xp.maximum(NEWTON_RTOL * (1 + xp.linalg.vector_norm(w, axis=-1)), 64 * eps * scale / mu)
        return xp.sum(p * f.value(W), axis=-1), g, xp.linalg.vector_norm(g, axis=-1) / mu, tol, None

    def hess(w, aux):
        W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        return xp.sum(p[..., None, None] * f.hess(W), axis=-3)

    w0 = xp.zeros(lead + (f.dim,), dtype=f.dtype)
    return minimize(state, hess, w0, f.dtype, xp=xp, what="global_train")[0]
