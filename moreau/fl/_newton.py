r"""Certified damped Newton for the strongly convex problems behind the exact optima.

Each problem supplies ``state(w) -> (value, gradient, bound, tol, aux)`` where ``bound`` is a
rigorous bound on the distance from ``w`` to the minimiser (a gradient norm over a strong
convexity modulus, plus the certified errors of the proxes that evaluate the gradient) and
``tol`` the level it must reach: ``max(rtol (1 + ||w||), floor)``, ``floor`` the rounding level
of the gradient divided by the modulus (64 eps times the magnitude of the summed terms): no
computation can certify below it, and it dominates only for ill-conditioned instances.

Globalisation: backtracking (halving, at most 40 times) from the full Newton step; a step is
accepted on Armijo's condition ``value <= value0 + 1e-4 t slope`` relaxed by the rounding of
the value (``64 eps |value0|``), below which any decrease is accepted.  Entries stop
independently; the run raises ``RuntimeError`` when an entry is not certified after
``max_iter`` iterations.
"""
from __future__ import annotations

NEWTON_RTOL = 1e-12  # certified ||w - w*|| / (1 + ||w||); the rounding floor is ~1e-13 on small instances

__all__ = ["NEWTON_RTOL", "minimize", "envelope_newton"]


def minimize(state, hess, w, dtype, *, xp=None, max_iter=60, what="Newton"):
    """``(w, bound, iterations)``: damped Newton from ``w`` (shape ``(*lead, d)``) until
    ``bound <= tol`` everywhere; ``hess(w, aux)`` is the Hessian ``(*lead, d, d)``."""
    from array_api_compat import array_namespace

    xp = xp or array_namespace(w)
    eps = float(xp.finfo(dtype).eps)
    val, g, bound, tol, aux = state(w)
    iterations = xp.zeros(bound.shape, dtype=xp.int64)
    for _ in range(max_iter):
        active = bound > tol
        if not bool(xp.any(active)):
            return w, bound, iterations
        step = -xp.linalg.solve(hess(w, aux), g[..., None])[..., 0]
        slope = xp.vecdot(g, step)
        t = xp.ones(bound.shape, dtype=dtype)
        done = ~active
        for _ in range(40):  # backtracking; below the rounding of the value any decrease is accepted
            w_try = w + t[..., None] * step
            v_try, g_try, b_try, tol_try, aux_try = state(w_try)
            take = (v_try <= val + 1e-4 * t * slope + 64 * eps * xp.abs(val)) & ~done
            w = xp.where(take[..., None], w_try, w)
            val, bound, tol = xp.where(take, v_try, val), xp.where(take, b_try, bound), xp.where(take, tol_try, tol)
            g = xp.where(take[..., None], g_try, g)
            aux = aux if aux is None else xp.where(take[..., None, None], aux_try, aux)
            iterations = iterations + xp.astype(take, xp.int64)
            done = done | take
            if bool(xp.all(done)):
                break
            t = xp.where(done, t, t / 2)
    if not bool(xp.any(bound > tol)):
        return w, bound, iterations
    raise RuntimeError(f"{what}: Newton did not certify its tolerance in {max_iter} iterations "
                       f"(worst bound {float(xp.max(bound)):.3g}, tolerance there "
                       f"{float(xp.reshape(tol, (-1,))[int(xp.argmax(xp.reshape(bound - tol, (-1,))))]):.3g})")


def envelope_newton(f, p, lam, mu_g, *, rtol=NEWTON_RTOL, max_iter=60):
    r"""Minimise :math:`\Phi(w) = \sum_i p_i F_i(w)`, F_i the Moreau envelope of f_i.

    ``f`` batch ``(..., m)``; ``p`` ``(*lead, m)``; ``lam`` and ``mu_g`` ``(*lead,)`` (``mu_g`` a
    strong convexity modulus of Φ).  One certified prox per point gives
    :math:`F_i = f_i(\theta_i) + (\lambda/2)\|\theta_i - w\|^2`, :math:`\nabla F_i = \lambda(w - \theta_i)`,
    :math:`\nabla^2 F_i = \lambda(H_i + \lambda I)^{-1}H_i`, :math:`H_i = \nabla^2 f_i(\theta_i)`.
    Stops when ``||w - w~_g|| <= (||grad Phi(w)|| + lam sum_i p_i e_i)/mu_g`` (e_i the certified
    prox errors) is ``<= max(rtol (1 + ||w||), 64 eps lam sum_i p_i (||w|| + ||theta_i||)/mu_g,
    2 lam sum_i p_i e_i/mu_g)``: the last term is what the certified proxes themselves allow (the
    bound cannot fall below it however small grad Phi gets; it dominates on ill-conditioned
    problems, mu_g tiny, where the proxes' certificates carry their rounding).
    Returns ``(w_g (*lead, d), bound (*lead,), iterations (*lead,))``.
    """
    xp = f.xp
    lead = tuple(lam.shape)
    m, d = p.shape[-1], f.dim
    eps = float(xp.finfo(f.dtype).eps)
    lam_c = lam[..., None]
    eye = xp.eye(d, dtype=f.dtype)

    def state(w):
        W = xp.broadcast_to(w[..., None, :], lead + (m, d))
        theta, info = f.prox(W, lam_c, return_info=True)
        e = xp.asarray(info.error_bound, dtype=f.dtype)
        val = xp.sum(p * (f.value(theta) + lam_c / 2 * xp.sum((theta - W) ** 2, axis=-1)), axis=-1)
        g = xp.sum(p[..., None] * (lam_c[..., None] * (W - theta)), axis=-2)
        prox_part = lam * xp.sum(p * e, axis=-1) / mu_g
        bound = xp.linalg.vector_norm(g, axis=-1) / mu_g + prox_part
        wn = xp.linalg.vector_norm(w, axis=-1)
        size = wn + xp.sum(p * xp.linalg.vector_norm(theta, axis=-1), axis=-1)
        tol = xp.maximum(xp.maximum(rtol * (1 + wn), 64 * eps * lam * size / mu_g), 2 * prox_part)
        return val, g, bound, tol, theta

    def hess(w, theta):
        H = f.hess(theta)
        HF = lam_c[..., None, None] * xp.linalg.solve(H + lam_c[..., None, None] * eye, H)
        return xp.sum(p[..., None, None] * HF, axis=-3)

    w0 = xp.zeros(lead + (d,), dtype=f.dtype)
    return minimize(state, hess, w0, f.dtype, xp=xp, max_iter=max_iter, what="FedProx optimum")
