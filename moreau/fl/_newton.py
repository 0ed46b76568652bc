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

The FedProx certificate (:func:`envelope_certificate`) is a theorem about the returned floats.
Notation: ``u = eps/2`` the unit roundoff of the objective's dtype, ``gamma_k = k u/(1 - k u)``;
the problem is the one the floats represent: ``lam``, the data and the weights as held in that
dtype, with the exact weights ``p_i = weights_i / sum(weights)`` (the code holds
``p_hat = fl(weights / fl(sum))``, ``|p_hat_i - p_i| <= delta_p p_i``, ``delta_p = gamma_{m+1}``).
At the returned ``w`` (``(*lead, d)``, used as is: no rounding in forming it) with certified
proxes ``theta_i`` (``||theta_i - prox_{f_i/lam}(w)|| <= e_i`` for the returned floats: the
core's :class:`moreau.ProxInfo` certificate)::

    grad Phi(w) = lam sum_i p_i (w - prox_i(w))
    ||grad Phi(w)|| <= lam (||sum_i p_i (w - theta_i)|| + sum_i p_i e_i)

and the sum is evaluated as ``S = fl(sum_i p_hat_i fl(w - theta_i))``: with ``dhat_i =
fl(w - theta_i)`` (``|dhat_i - (w - theta_i)| <= u |w - theta_i| <= u/(1-u) |dhat_i|``) and a sum
of m products (``gamma_m`` in any order, Higham Ch. 3), componentwise
``|S - sum_i p_hat_i (w - theta_i)| <= gamma_{m+1} sum_i p_hat_i |dhat_i|``, and the weights'
normalisation adds ``delta_p sum_i p_i |w - theta_i|``; in norms::

    ||sum_i p_i (w - theta_i)|| <= ||S|| + (gamma_{m+1} + 2 delta_p) sum_i p_hat_i ||dhat_i||
    sum_i p_i e_i <= (1 + 2 delta_p) sum_i p_hat_i e_i

The computed norms are within ``(d/2 + 2) eps`` relative (``safe_norm``), the computed sums of
nonnegative terms within ``gamma_m``; every such factor is applied upwards, and the final
combination carries ``(1 + 8 eps)``.  ``e_i`` arrives as float64 and is rounded up when cast
to a narrower dtype.  With ``mu_lo`` a rigorous lower bound on the strong convexity modulus of
Phi (``fedprox_optimum`` derives it, rounding included) the certificate is::

    ||w - w~_g|| <= lam (||S|| + rounding terms + sum_i p_i e_i) / mu_lo.

The rounding terms and the prox part are what no iteration can remove: the stopping floor is
twice their contribution.
"""

from __future__ import annotations

import math

from .._backend import safe_norm

NEWTON_RTOL = 1e-12  # certified ||w - w*|| / (1 + ||w||); the rounding floor is ~1e-13 on small instances

__all__ = ["NEWTON_RTOL", "minimize", "envelope_newton", "envelope_certificate", "gamma"]


def minimize(state, hess, w, dtype, *, xp=None, max_iter=60, what="Newton"):
    """``(w, bound, iterations)``: damped Newton from ``w`` (shape ``(*lead, d)``) until
    ``bound <= tol`` everywhere; ``hess(w, aux)`` is the Hessian ``(*lead, d, d)``."""
    from array_api_compat import array_namespace

    xp = xp or array_namespace(w)
    eps = float(xp.finfo(dtype).eps)
    val, g, bound, tol, aux = state(w)
    iterations = xp.zeros(bound.shape, dtype=xp.int64)

    def unsettled(bound, tol):  # an inf or NaN bound (an overflow) never settles, whatever tol is
        return ~(bound <= tol) | ~xp.isfinite(bound)

    for _ in range(max_iter):
        active = unsettled(bound, tol)
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
            val, bound, tol = (
                xp.where(take, v_try, val),
                xp.where(take, b_try, bound),
                xp.where(take, tol_try, tol),
            )
            g = xp.where(take[..., None], g_try, g)
            aux = aux if aux is None else xp.where(take[..., None, None], aux_try, aux)
            iterations = iterations + xp.astype(take, xp.int64)
            done = done | take
            if bool(xp.all(done)):
                break
            t = xp.where(done, t, t / 2)
    if not bool(xp.any(unsettled(bound, tol))):
        return w, bound, iterations
    raise RuntimeError(
        f"{what}: Newton did not certify its tolerance in {max_iter} iterations "
        f"(worst bound {float(xp.max(bound)):.3g}, tolerance there "
        f"{float(xp.reshape(tol, (-1,))[int(xp.argmax(xp.reshape(bound - tol, (-1,))))]):.3g})"
    )


def envelope_newton(f, p, lam, mu_g, *, rtol=NEWTON_RTOL, max_iter=60):
    r"""Minimise :math:`\Phi(w) = \sum_i p_i F_i(w)`, F_i the Moreau envelope of f_i.

    ``f`` batch ``(..., m)``; ``p`` ``(*lead, m)``; ``lam`` and ``mu_g`` ``(*lead,)`` (``mu_g`` a
    strong convexity modulus of Φ).  One certified prox per point gives
    :math:`F_i = f_i(\theta_i) + (\lambda/2)\|\theta_i - w\|^2`, :math:`\nabla F_i = \lambda(w - \theta_i)`,
    :math:`\nabla^2 F_i = \lambda(H_i + \lambda I)^{-1}H_i`, :math:`H_i = \nabla^2 f_i(\theta_i)`.
    ``mu_g`` must be a rigorous lower bound (rounding included).  Stops when the certificate of
    :func:`envelope_certificate` (e_i the certified prox errors) is ``<= max(rtol (1 + ||w||),
    64 eps lam sum_i p_i (||w|| + ||theta_i||)/mu_g, floor)``, ``floor`` twice the part of the
    certificate that no iteration removes (the rounding of grad Phi and the proxes' own
    certificates): the bound cannot fall below it however small grad Phi gets; it dominates on
    ill-conditioned problems, mu_g tiny.
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
        val = xp.sum(p * (f.value(theta) + lam_c / 2 * xp.sum((theta - W) ** 2, axis=-1)), axis=-1)
        g = xp.sum(p[..., None] * (lam_c[..., None] * (W - theta)), axis=-2)
        bound, floor = envelope_certificate(f, p, lam, w, theta, info.error_bound, mu_g)
        wn = xp.linalg.vector_norm(w, axis=-1)
        size = wn + xp.sum(p * xp.linalg.vector_norm(theta, axis=-1), axis=-1)
        tol = xp.maximum(xp.maximum(rtol * (1 + wn), 64 * eps * lam * size / mu_g), floor)
        return val, g, bound, tol, theta

    def hess(w, theta):
        H = f.hess(theta)
        HF = lam_c[..., None, None] * xp.linalg.solve(H + lam_c[..., None, None] * eye, H)
        return xp.sum(p[..., None, None] * HF, axis=-3)

    w0 = xp.zeros(lead + (d,), dtype=f.dtype)
    return minimize(state, hess, w0, f.dtype, xp=xp, max_iter=max_iter, what="FedProx optimum")


def gamma(k, eps):
    """Higham's ``gamma_k = k u / (1 - k u)``, ``u = eps / 2`` (``inf`` when ``k u >= 1``)."""
    ku = k * eps / 2
    return ku / (1 - ku) if ku < 1 else float("inf")


def envelope_certificate(f, p, lam, w, theta, e, mu_lo):
    r"""``(bound, floor)``, shapes ``(*lead,)``: the rigorous bound on ``||w - w~_g||`` of the
    module doc for the returned ``w`` ``(*lead, d)``, certified proxes ``theta`` ``(*lead, m, d)``
    with errors ``e`` ``(*lead, m)`` (host or ``f``'s namespace), weights ``p`` ``(*lead, m)``
    (normalised in ``f``'s dtype), ``lam`` and ``mu_lo`` ``(*lead,)`` (``mu_lo`` a rigorous lower
    bound on Phi's strong convexity modulus, > 0); ``floor`` is twice the part that no iteration
    removes (rounding terms and the proxes' certificates)."""
    xp = f.xp
    eps = float(xp.finfo(f.dtype).eps)
    m, d = p.shape[-1], f.dim
    e = xp.asarray(e, dtype=f.dtype)
    e = e + e * eps  # cast to the dtype rounds to nearest: up by at most u relative
    W = xp.broadcast_to(w[..., None, :], tuple(theta.shape))
    dhat = W - theta
    S = xp.sum(p[..., None] * dhat, axis=-2)
    up_sum = 1 + 2 * gamma(m, eps)  # a computed sum of m nonnegative terms, rounded up
    up_norm = 1 + (d + 4) * eps  # safe_norm, rounded up
    dp = gamma(m + 1, eps)  # delta_p: the weights' normalisation
    sd = xp.sum(p * safe_norm(dhat, xp), axis=-1) * (up_norm * up_sum)
    se = xp.sum(p * e, axis=-1) * up_sum
    sn = safe_norm(S, xp) * up_norm
    fixed = (gamma(m + 1, eps) + 2 * dp) * sd + (1 + 2 * dp) * se
    scale = lam * (1 + 8 * eps) / mu_lo
    # an overflow anywhere (an infinite modulus would make the scale 0; inf - inf, inf * 0 a NaN)
    # certifies nothing: the bound is inf there, never small
    sound = xp.isfinite(scale) & (mu_lo < math.inf) & (lam < math.inf)
    bound = (sn + fixed * (1 + 4 * eps)) * scale
    bound = xp.where(sound & ~xp.isnan(bound), bound, xp.asarray(math.inf, dtype=f.dtype))
    return bound, 2 * fixed * scale
