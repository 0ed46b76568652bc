r"""Certified batched damped Newton for the prox subproblem.

For an objective ``f`` with curvature lower bound ``mu`` (``f.strong_convexity()``)
and ``lam + mu > 0``, the prox subproblem in the displacement ``u = theta - w``,

.. math:: h(u) = f(w + u) + \tfrac{\lambda}{2}\|u\|^2,

is ``(lam + mu)``-strongly convex, so for every ``u``

.. math:: \|u - \hat u\| \le \|\nabla h(u)\| / (\lambda + \mu).

Newton stops on that certified bound, never on an iteration count.

Representation: Newton iterates on ``x`` with ``theta = a + x``.  When
``lam >= L`` (``L = f.smoothness()``) the anchor is ``a = w`` and ``x`` is the
displacement ``u = theta - w``: ``u`` is tiny, and keeping it as its own
variable keeps envelope gradients ``-lam u`` accurate to ulps of ``u``.
When ``lam < L`` the anchor is ``0`` and ``x`` is ``theta``: ``theta`` may be
much smaller than ``w`` and ``w + u`` would round it to ulps of ``||w||``.

Default tolerance (per batch entry)::

    tol = 4 eps (||x|| + (G + L (||a|| + ||x||) + lam (||c|| + ||x||)) / (lam + mu))

``eps`` is the dtype's machine epsilon, ``c = a - w`` (0 or ``-w``) and
``G = f._grad_error_scale(theta)`` the magnitude of the terms summed in
``grad f``.  The first term is "a few ulps of the iterate ``x``" (``theta``,
or the displacement ``u`` when ``lam >= L``: ulps of ``theta`` there would
stop Newton with ``u``, hence envelope gradients, accurate only to
``eps ||theta|| / ||u||`` relative).  The second is the
accuracy to which ``grad h`` can be evaluated in floating point: ``G`` from
summing ``grad f``, ``L (||a|| + ||x||)`` from rounding ``theta = a + x``,
``lam (||c|| + ||x||)`` from rounding ``theta - w``; divided by the modulus
it is the smallest certificate a computation can produce, and the problem's
own conditioning moves the prox by that much under ulp-sized perturbations
of the data.  It dominates only when ``lam + mu`` is small compared with
``L``, where it is about ``L / (lam + mu)`` times the ulp level (the
condition number of the subproblem).

Globalisation: backtracking from the full Newton step; a step is accepted
when it satisfies Armijo's condition on ``h``, or, once the predicted
decrease ``-grad h . p`` is below the rounding of ``h`` (64 eps |h|, where
Armijo cannot see progress), when it halves ``||grad h||``.
"""
from __future__ import annotations

import math

import numpy as np

from ._backend import safe_norm, to_numpy
from ._errors import ProxConvergenceError
from ._objective import ProxInfo

__all__ = ["newton_prox", "newton_displacement"]

_ARMIJO = 1e-4
_MAX_HALVINGS = 60


def newton_displacement(f, w, lam, *, tol=None, max_iter=100, info=False):
    """``(u, ProxInfo or None)`` with ``u = prox(w) - w`` certified to ``tol``; see module doc."""
    _, u, inf = newton_prox(f, w, lam, tol=tol, max_iter=max_iter, info=info)
    return u, inf


def newton_prox(f, w, lam, *, tol=None, max_iter=100, info=False):
    """``(theta, u, ProxInfo or None)``: the prox, the displacement ``theta - w``, both
    from the same iterate (each without the rounding of forming it from the other)."""
    xp = f.xp
    if max_iter is None or int(max_iter) < 0:
        raise ValueError(f"max_iter must be a non-negative integer (got {max_iter!r})")
    d = f.dim
    shape = tuple(np.broadcast_shapes(f.batch_shape, tuple(w.shape[:-1]), tuple(lam.shape)))
    w = xp.broadcast_to(w, shape + (d,))
    lam = xp.broadcast_to(lam, shape)
    modulus = lam + xp.broadcast_to(f.strong_convexity(), shape)
    eps = float(xp.finfo(f.dtype).eps)
    if tol is not None:
        tol = _tolerance(tol, xp, f.dtype, shape)
    eye = xp.eye(d, dtype=f.dtype)
    hi = xp.broadcast_to(f.smoothness(), shape)
    # iterate on x with theta = a + x: a = w (x is the displacement) when lam
    # dominates the curvature, a = 0 (x is theta) otherwise; theta - w = c + x
    # with c = a - w exactly 0 or -w.  See the module doc.
    disp = (lam >= hi)[..., None]
    zero = xp.zeros_like(w)
    a = xp.where(disp, w, zero)
    c = xp.where(disp, zero, -w)
    anorm = safe_norm(a, xp)
    cnorm = safe_norm(c, xp)

    def h_and_grad(x):
        theta, u = a + x, c + x
        fv, fg = f._value_grad(theta)
        return fv + lam / 2 * xp.vecdot(u, u), fg + lam[..., None] * u

    x = xp.zeros(shape + (d,), dtype=f.dtype)
    h, g = h_and_grad(x)
    iterations = xp.zeros(shape, dtype=xp.int64)
    tol_prev = math.inf
    for k in range(int(max_iter) + 1):
        theta = a + x
        gnorm = safe_norm(g, xp)
        bound = gnorm / modulus
        # the Hessian shares the margins with the tolerance's scale: compute both
        # at once unless the previous tolerance says this is the last check
        Hf, G = f._hess_scale(theta, hess=bool(xp.any(bound > tol_prev)), scale=tol is None)
        if tol is None:
            xnorm = safe_norm(x, xp)
            floor = (G + hi * (anorm + xnorm) + lam * (cnorm + xnorm)) / modulus
            tol_k = 4 * eps * (xnorm + floor)
        else:
            tol_k = tol
        active = bound > tol_k
        if not bool(xp.any(active)):
            break
        if k == int(max_iter):
            b, t = to_numpy(bound), np.broadcast_to(to_numpy(tol_k), bound.shape)
            raise ProxConvergenceError(
                f"prox of {type(f).__name__} did not reach its certified tolerance in "
                f"{max_iter} Newton iterations: worst bound {float(b.max()):.3g} "
                f"(tolerance there {float(t.reshape(-1)[int(np.argmax((b - t).reshape(-1)))]):.3g}); "
                f"{int((b > t).sum())} of {b.size} entries unconverged",
                error_bound=b, tol=t, iterations=to_numpy(iterations))
        tol_prev = tol_k
        if Hf is None:
            Hf = f.hess(theta)
        H = Hf + lam[..., None, None] * eye
        p = -xp.linalg.solve(H, g[..., None])[..., 0]
        slope = xp.vecdot(g, p)
        # predicted decrease below the rounding of h: Armijo cannot see it
        flat = -slope <= 64 * eps * xp.abs(h)
        step = xp.ones(shape, dtype=f.dtype)
        accepted = ~active
        x_new, h_new, g_new = x, h, g
        for _ in range(_MAX_HALVINGS):
            x_try = x + step[..., None] * p
            h_try, g_try = h_and_grad(x_try)
            ok = (h_try <= h + _ARMIJO * step * slope) | \
                (flat & (safe_norm(g_try, xp) <= gnorm / 2))
            take = ok & ~accepted
            x_new = xp.where(take[..., None], x_try, x_new)
            h_new = xp.where(take, h_try, h_new)
            g_new = xp.where(take[..., None], g_try, g_new)
            accepted = accepted | ok
            if bool(xp.all(accepted)):
                break
            step = xp.where(accepted, step, step / 2)
        # entries that found no acceptable step keep their point (and are
        # reported unconverged at max_iter rather than moved blindly)
        iterations = iterations + xp.astype(active & accepted, xp.int64)
        x, h, g = x_new, h_new, g_new
    theta, u = a + x, c + x
    if not info:
        return theta, u, None
    return theta, u, ProxInfo(iterations=to_numpy(iterations), error_bound=to_numpy(bound),
                       tol=np.broadcast_to(to_numpy(tol_k), shape).copy())


def _tolerance(tol, xp, dtype, shape):
    t = np.asarray(to_numpy(tol), dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"tol must be finite and > 0 (got {tol!r})")
    try:
        np.broadcast_to(t, shape)
    except ValueError:
        raise ValueError(f"tol of shape {t.shape} does not broadcast with the batch shape {shape}") from None
    return xp.asarray(t, dtype=dtype)
