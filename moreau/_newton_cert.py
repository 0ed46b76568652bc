r"""The certificate arithmetic of the certified Newton (``moreau._newton``).

For the prox subproblem ``h(u) = f(w + u) + lam/2 ||u||^2``, ``(lam + mu)``-strongly convex,
``||theta - prox(w)|| <= ||grad h(theta)|| / (lam + mu)`` for every point ``theta``.

The certificate (``ProxInfo.error_bound``) is this bound *for the returned
floating-point* ``theta``, with the gradient evaluated exactly, bounded from
what the computation can see.  With ``u_r = eps/2`` the unit roundoff of the
dtype, ``g`` the computed ``fl(fl(grad f(theta)) + lam * u_hat)`` and
``E_f >= ||fl(grad f(theta)) - grad f(theta)||`` the objective's a-priori
rounding bound (``f._grad_rounding``, Higham-style: see each objective)::

    ||grad h(theta)|| <= ||g|| + E_f + u_r ||g||            (the final sum)
                         + u_r lam ||u_hat||                 (the product lam * u_hat)
                         + u_r lam ||theta|| (x = u)  or  u_r lam ||u_hat|| (x = theta)

The last line is the difference between ``lam * u_hat`` and the exact
``lam (theta - w)`` for the returned ``theta``: when Newton iterates on the
displacement (``theta = fl(w + x)``) the rounding of forming theta is at most
``u_r |theta|`` per entry; when it iterates on theta (``u_hat = fl(theta - w)``)
the rounding of the displacement is at most ``u_r |u_hat|``.  The computed
norm of ``g`` is within ``(d + 4) eps`` relative of the exact one and the
division by ``lam + mu`` and the bound's own arithmetic within ``8 eps``; the
bound carries those factors.  It therefore holds for the returned theta up to
the assumptions stated by ``E_f`` (elementary functions within 4 ulps,
matrix products obeying Higham's ``gamma_k`` bound, as every BLAS does) and
for ``lam``, ``w`` and the data as represented in the objective's dtype.
"""

from __future__ import annotations

import numpy as np

from ._backend import numpy_dtype, safe_norm, to_numpy
from ._chol import chol_lower_bound
from ._newton_steps import _ball

__all__ = ["_pieces", "_certificate", "_null_error", "_settled", "_proven_min_eig", "_local_min_eig"]


def _pieces(xp, S, x, g, eps, d):
    """(||g|| rounded up, rounding terms for theta and for x, ||theta||, ||x||, ||g||); module doc."""
    lam, disp, zero1 = S["lam"], S["disp"], xp.zeros_like(S["lam"])
    theta, u = S["a"] + x, S["c"] + x
    ur = eps / 2
    gn, un, tn = safe_norm(g, xp), safe_norm(u, xp), safe_norm(theta, xp)
    # what rounding adds on top of the computed ||g||, common to theta and x
    rnd = S["E"] + ur * (gn + lam * un + lam * xp.where(disp, zero1, un))
    # theta: lam * u_hat differs from lam (theta - w) by the rounding of theta = fl(w + x);
    # x (= u when disp): grad f is evaluated at fl(w + x), within L u_r ||theta|| of grad f(w + x)
    rnd_t = (rnd + xp.where(disp, lam * ur * tn, zero1)) * (1 + 4 * eps)
    rnd_x = (rnd + xp.where(disp, S["hi"] * ur * tn, zero1)) * (1 + 4 * eps)
    xn = xp.where(disp, un, tn)  # x is u when disp, theta otherwise
    return gn * (1 + (d + 4) * eps), rnd_t, rnd_x, tn, xn, gn


def _certificate(xp, S, P, local, eps, ext=None):
    """(bound on theta, bound on the iterate x, default level for x): global modulus,
    or the local-curvature ball where ``local = (m, rho)`` is given; with ``ext = (e_t, e_x)``
    (objectives with a null subspace, ``_null_error``) the ball bounds the error off that
    subspace and ``e`` the error on it: ``sqrt(ball^2 + e^2)``."""
    gn, rnd_t, rnd_x, _, xn, _ = P
    modulus = S["modulus"]
    if local is not None:
        m_loc = xp.maximum(S["lam"] + local[0], modulus) * (1 - 4 * eps)

    def radius(G, e=None):  # smallest certified distance for a gradient norm <= G
        r = G / modulus
        if local is not None:
            b = _ball(xp, G, m_loc, local[1])
            if e is not None:
                b = xp.sqrt(b * b + e * e) * (1 + 4 * eps)
            r = xp.minimum(r, b)
        return r * (1 + 8 * eps)

    e_t, e_x = (None, None) if ext is None else ext
    return radius(gn + rnd_t, e_t), radius(gn + rnd_x, e_x), 2 * radius(rnd_x) + 4 * eps * xn


def _null_error(xp, f, S, x, eps):
    r"""``(e_t, e_x)``: the prox error within the subspace ``N`` where ``hess f = mu`` at every
    point and ``grad f - mu theta`` is orthogonal to it (``f._null_dim`` > 0; Multinomial: the
    shifts of every class's weights by one vector).  There ``h`` is the quadratic
    ``(mu/2)|theta_N|^2 + (lam/2)|theta_N - w_N|^2``, decoupled from the rest, so the error
    on ``N`` is exactly :math:`\|P_N(\mu\theta + \lambda(\theta - w))\| / (\lambda + \mu)`,
    and off ``N`` the ball with the curvature of ``hess f`` off ``N`` (its eigenvalue number
    ``_null_dim``, the first ``_null_dim`` being ``mu``) applies to ``||grad h||``.

    From the computed ``v = fl(lam u_hat + mu theta_hat)``: ``||P_N v||`` rounded up by
    ``f._null_norm``, ``gamma_2 (lam ||u_hat|| + mu ||theta_hat||)`` for forming ``v``, and the
    difference between the computed and the exact point (module doc, ``_pieces``): for theta
    ``lam u_r ||theta||`` (x = u) or ``lam u_r ||u_hat||`` (x = theta); for the iterate x = u
    ``mu u_r ||theta||``.
    """
    lam, disp = S["lam"], S["disp"]
    mu = S["mu"]
    theta, u = S["a"] + x, S["c"] + x
    ur = eps / 2
    tn, un = safe_norm(theta, xp), safe_norm(u, xp)
    pn = f._null_norm(lam[:, None] * u + mu[:, None] * theta)
    base = pn + 2.1 * ur * (lam * un + mu * tn) * (1 + (x.shape[-1] + 4) * eps)
    e_t = base + ur * lam * xp.where(disp, tn, un) * (1 + (x.shape[-1] + 4) * eps)
    e_x = base + ur * xp.where(disp, mu * tn, lam * un) * (1 + (x.shape[-1] + 4) * eps)
    div = S["modulus"] * (1 - 4 * eps)
    return e_t / div * (1 + 8 * eps), e_x / div * (1 + 8 * eps)


def _settled(S, tol, bound, bound_x, level):
    return (bound_x <= level) if tol is None else (bound <= S["tol"])


def _proven_min_eig(xp, H, ev, eig):
    """A proven lower bound on ``lambda_min`` of each computed matrix ``H`` ``(k, d, d)``,
    in ``H``'s dtype (rounded down): one certified Cholesky just below ``ev - eig``
    (``eigvalsh``'s smallest eigenvalue less the eigensolver's modelled error;
    :func:`moreau._chol.chol_lower_bound`), so the local certificate does not rest on LAPACK's
    accuracy; a wrong ``ev`` only weakens the bound."""
    t = np.asarray(to_numpy(ev), dtype=np.float64) - np.asarray(to_numpy(eig), dtype=np.float64)
    p = chol_lower_bound(H, t, xp)
    pd = p.astype(numpy_dtype(H.dtype))
    with np.errstate(invalid="ignore"):
        up = pd.astype(np.float64) > p  # the cast rounded up: one ulp down
    pd[up] = np.nextafter(pd[up], pd.dtype.type(-np.inf))
    return xp.asarray(pd)


def _local_min_eig(xp, f, H, local, null, eps):
    """Lower bound on eigenvalue number ``null`` of the exact Hessian of ``f`` at the entries
    whose computed Hessians are ``H`` (``local`` = ``f._local_curvature`` on them).  Proven where
    the objective returns the eigensolver's modelled error separately (``(err, rho, eig)``):
    ``eigvalsh``'s value only seeds a certified Cholesky (:func:`_proven_min_eig`; with a null
    subspace, of ``f._null_lift(H)``, whose smallest eigenvalue is at most eigenvalue number
    ``null`` of ``H`` by interlacing), and ``err`` (the Hessian's own rounding) is subtracted,
    rounded down.  Otherwise ``eigvalsh`` minus the objective's ``err`` (which then includes
    the eigensolver's model)."""
    ev = xp.linalg.eigvalsh(H)[..., null]
    lift = getattr(f, "_null_lift", None) if null else None
    if len(local) < 3 or (null and lift is None):
        return ev - local[0] - (local[2] if len(local) == 3 else 0)
    Hl, extra = lift(H, ev) if null else (H, 0.0)
    extra = xp.asarray(extra, dtype=f.dtype)
    p = _proven_min_eig(xp, Hl, ev, local[2])
    return (p - extra) - local[0] - 2 * eps * (xp.abs(p) + extra + local[0])
