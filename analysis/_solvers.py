"""Solvers shared by the checkers."""
from __future__ import annotations

import numpy as np

import moreau as mo

__all__ = ["envelope_newton", "NEWTON_RTOL"]

NEWTON_RTOL = 1e-12  # certified ||w - w~_g|| / (1 + ||w||); the rounding floor is ~1e-13 on our instances


def envelope_newton(f, p, lam, mu_g, *, rtol=NEWTON_RTOL, max_iter=60):
    r"""Minimise :math:`\Phi(w) = \sum_i p_i F_i(w)`, F_i the Moreau envelope of f_i, by damped Newton.

    ``f`` has batch shape (T, m), ``p`` (T, m), ``lam`` and ``mu_g`` (T,) (mu_g: a strong
    convexity modulus of every F_i).  One certified prox per point gives
    F_i = f_i(theta_i) + (lam/2)||theta_i - w||^2, grad F_i = lam (w - theta_i) and
    hess F_i = lam (H_i + lam I)^-1 H_i, H_i = hess f_i(theta_i).  Stops when the certified
    bound ``||w - w~_g|| <= (||grad Phi(w)|| + lam sum_i p_i e_i) / mu_g`` (e_i the certified
    prox errors) is <= ``max(rtol (1 + ||w||), floor)`` for every instance, ``floor =
    64 eps lam sum_i p_i (||w|| + ||theta_i||) / mu_g`` the rounding level of grad Phi over
    mu_g (it dominates only for ill-conditioned instances, mu_g tiny); raises RuntimeError
    otherwise.
    Returns ``(w_g (T, d), bound (T,))``.
    """
    T, m = p.shape
    d = f.dim
    eps = np.finfo(float).eps
    lam3 = lam[:, None, None]

    def state(w):
        W = np.broadcast_to(w[:, None], (T, m, d))
        theta, info = mo.prox(f, W, lam[:, None], return_info=True)
        val = np.sum(p * (f.value(theta) + lam[:, None] / 2 * np.sum((theta - W) ** 2, axis=-1)), axis=-1)
        g = np.einsum("tm,tmd->td", p, lam3 * (W - theta))
        bound = (np.linalg.norm(g, axis=-1) + lam * np.sum(p * info.error_bound, axis=-1)) / mu_g
        size = np.linalg.norm(w, axis=-1) + np.sum(p * np.linalg.norm(theta, axis=-1), axis=-1)
        tol = np.maximum(rtol * (1 + np.linalg.norm(w, axis=-1)), 64 * eps * lam * size / mu_g)
        return val, g, bound, theta, tol

    w = np.zeros((T, d))
    val, g, bound, theta, tol = state(w)
    for _ in range(max_iter):
        active = bound > tol
        if not active.any():
            return w, bound
        H = f.hess(theta)
        HF = lam[:, None, None, None] * np.linalg.solve(H + lam[:, None, None, None] * np.eye(d), H)
        step = -np.linalg.solve(np.einsum("tm,tmij->tij", p, HF), g[..., None])[..., 0]
        slope = np.einsum("td,td->t", g, step)
        t = np.ones(T)
        done = ~active
        for _ in range(40):  # backtracking; below the rounding of Phi any decrease is accepted
            w_try = w + t[:, None] * step
            v_try, g_try, b_try, th_try, tol_try = state(w_try)
            take = (v_try <= val + 1e-4 * t * slope + 64 * eps * np.abs(val)) & ~done
            w = np.where(take[:, None], w_try, w)
            val, bound, tol = np.where(take, v_try, val), np.where(take, b_try, bound), np.where(take, tol_try, tol)
            g = np.where(take[:, None], g_try, g)
            theta = np.where(take[:, None, None], th_try, theta)
            done |= take
            if done.all():
                break
            t = np.where(done, t, t / 2)
    raise RuntimeError(f"FedProx Newton did not certify rtol={rtol} in {max_iter} iterations "
                       f"(worst bound {bound.max():.3g})")


