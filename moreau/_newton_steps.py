"""Newton's steps for the certified prox (``moreau._newton``): the batched strong-Wolfe
line search, the local-curvature radius and a solve that never leaks LinAlgError."""

from __future__ import annotations

import math

import numpy as np

from ._backend import safe_norm

__all__ = ["_wolfe", "_ball", "_solve", "_chord_settles", "_plus_lam", "_select"]

_ARMIJO = 1e-4
_MAX_HALVINGS = 60
_WOLFE = 0.1  # strong Wolfe curvature constant
# True: Newton updates its own Hessian in place (H + lam I, the chord rows) and frees the
# previous one when no chord step reads it; Multinomial fills its Hessian block by block.
# False: fresh arrays as before (the same bits: tests compare the two)
REUSE = True


def _wolfe(xp, h_and_grad, point, gnorm, p, slope, flat, active, force):
    """Batched line search along the Newton direction ``p`` from ``point = (x, h, g, E, state)``:
    ``(new point, accepted)``.

    A step ``t`` is accepted when it satisfies the strong Wolfe conditions
    (Armijo, and ``|grad h(x + t p) . p| <= 0.1 |slope|``), or halves
    ``||grad h||`` as the full step or where ``h``'s decrease is below its
    rounding (``flat``: there only the gradient shows progress).  Otherwise
    the bracket on ``t`` shrinks (too long: ``h`` rose or the slope turned
    positive) or doubles (too short).  Entries with no Wolfe step after
    ``_MAX_HALVINGS`` trials take their best Armijo point, if any.  The
    objective's evaluation at the accepted point (gradient rounding bound,
    Hessian state) travels with it: nothing is evaluated twice.  Entries in
    ``force`` take the full step unconditionally (polishing a certified iterate).
    """
    x, h = point[0], point[1]

    def pick(mask, new, old):
        if not bool(xp.any(mask)):
            return old
        if bool(xp.all(mask)):  # the common case (every entry takes its full step): no copies
            return new
        return tuple(
            o if o is None else xp.where(_expand(mask, o), nv, o) for nv, o in zip(new, old, strict=True)
        )

    one = xp.ones_like(h)
    t, lo, hi = one, 0 * one, xp.full_like(h, math.inf)
    done = ~active & ~force
    out, best = point, point  # best: the best point satisfying Armijo (fallback)
    for _ in range(_MAX_HALVINGS):
        x_try = x + t[..., None] * p
        trial = (x_try,) + tuple(h_and_grad(x_try))
        h_try, g_try = trial[1], trial[2]
        dphi = xp.vecdot(g_try, p)
        armijo = (h_try <= h + _ARMIJO * t * slope) | flat
        curv = xp.abs(dphi) <= _WOLFE * xp.abs(slope)
        half = ((t == 1) | flat) & (safe_norm(g_try, xp) <= gnorm / 2)
        ok = (armijo & curv) | half | force
        force = force & ~force  # only at t = 1
        out = pick(ok & ~done, trial, out)
        if bool(xp.all(done | ok)):  # no fallback needed: best is not read
            done = done | ok
            break
        best = pick(~flat & armijo & (h_try < best[1]) & ~done, trial, best)
        done = done | ok
        too_long = ~armijo | (dphi > 0)
        hi = xp.where(too_long, t, hi)
        lo = xp.where(too_long, lo, t)
        t = xp.where(done, t, xp.where(hi == math.inf, 2 * t, (lo + hi) / 2))
    fallback = ~done & (best[1] < h)
    return pick(fallback, best, out), done | fallback


def _expand(mask, like):
    """``mask`` (batch shape) with trailing axes added to broadcast against ``like``."""
    for _ in range(like.ndim - mask.ndim):
        mask = mask[..., None]
    return mask


def _ball(xp, G, m, rho):
    r"""Smallest ``r`` with ``m r - rho r^2 / 2 >= G`` (``inf`` if none, or if the
    discriminant ``m^2 - 2 rho G`` is not finite in the dtype).

    If ``||grad h(theta)|| <= G``, ``hess h(theta) >= m I`` and the Hessian is
    ``rho``-Lipschitz, then on the sphere ``||v|| = r``
    ``<grad h(theta + v), v> >= -G r + m r^2 - rho r^3 / 2 > 0`` for ``r``
    just above this root, so the minimiser of the convex ``h`` lies within
    ``r`` of ``theta``: a certificate from the *local* curvature.
    """
    disc = m * m - 2 * rho * G
    # an overflow (m^2 or rho G: inf, or NaN from inf - inf or inf * 0) certifies nothing: a
    # finite G over an infinite root would be a zero radius
    ok = (disc > 0) & xp.isfinite(disc)
    r = 2 * G / (m + xp.sqrt(xp.where(ok, disc, xp.zeros_like(disc))))
    return xp.where(ok, r, xp.full_like(r, math.inf))


def _solve(xp, H, g, eps):
    """Newton direction ``H^{-1} g``; a (float32-)singular H gets a relative diagonal shift, never a LinAlgError."""
    try:
        return xp.linalg.solve(H, g[..., None])[..., 0]
    except Exception as exc:  # numpy.linalg.LinAlgError / cupy's: singular to working precision
        if "singular" not in str(exc).lower() and "LinAlg" not in type(exc).__name__:
            raise
    d = H.shape[-1]
    scale = xp.sum(xp.abs(H), axis=(-2, -1)) / d
    shift = xp.eye(d, dtype=H.dtype) * (math.sqrt(eps) * scale)[..., None, None]
    return xp.linalg.solve(H + shift, g[..., None])[..., 0]


def _chord_settles(xp, S, P, tol, eps):
    """Where a chord step from here (the previous step's Hessian ``H(x_prev)``, that step a
    full Newton step ``p_prev``) is predicted to settle the certificate.  A speed choice
    only (a wrong guess costs one more iteration, never accuracy): the full step showed
    ``||g|| ~ rho ||p_prev||^2 / 2``; the chord step's gradient is
    ``(H(x + t p) - H(x_prev)) p``, about ``rho (||p_prev|| + ||p|| / 2) ||p||`` with
    ``||p|| <= ||g|| / modulus``; with a factor 4 to spare it must be below what the
    certificate allows (``tol``, or the default level's rounding floor)."""
    _, rnd_t, rnd_x, _, xn, gnorm = P
    modulus, newton = S["modulus"], S["newton"]
    pprev = xp.where(newton & (S["pprev"] > 0), S["pprev"], xp.ones_like(modulus))
    pk = gnorm / modulus
    # pprev * pprev underflows to 0 for steps below 1e-162 (lam near the float maximum): the prediction
    # is then inf or NaN, which never settles (one more iteration, as for any wrong guess)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        pred = 4 * (2 * gnorm / (pprev * pprev)) * (pprev + pk / 2) * pk
    if tol is not None:
        return newton & (pred + rnd_t <= S["tol"] * modulus * (1 - 1 / 64))
    return newton & (pred <= rnd_x + 4 * eps * xn * modulus)


def _plus_lam(xp, Hf, lam, own, keep=None):
    """``Hf + lam I`` (``lam`` ``(k,)``), in place on a contiguous numpy ``Hf`` that is Newton's
    own (``own``; the diagonal only: the fresh sum adds ``+0.0`` off the diagonal, which
    changes no entry since a Hessian formed by sums of products holds no ``-0.0``), else in a
    fresh array.  ``keep``: rows left as they are (the chord rows, when ``Hf`` is the previous
    matrix's memory: they hold that matrix, ``lam I`` included).  A (k, d, d) temporary less, two
    at the peak of a call: the page faults of fresh
    memory cost as much as the arithmetic at m = 500, D = 40 (benchmarks/RESULTS.md, 2b)."""
    if not (own and isinstance(Hf, np.ndarray) and Hf.flags.writeable and Hf.flags.c_contiguous):
        return Hf + lam[:, None, None] * xp.eye(Hf.shape[-1], dtype=Hf.dtype)
    d = Hf.shape[-1]
    diag = Hf.reshape(Hf.shape[0], d * d)[:, :: d + 1]  # a view (contiguous)
    if keep is None:
        diag += lam[:, None]
    else:
        diag[~keep] += lam[~keep][:, None]
    return Hf


def _select(xp, rows, Hprev, H, own):
    """``where(rows, Hprev, H)``, in place on Newton's own ``H`` (see :func:`_plus_lam`): the
    chord rows, or a second Hessian's rows merged into Newton's matrix."""
    if H is Hprev:  # the chord rows are already in place (_plus_lam's keep)
        return H
    if not (own and isinstance(H, np.ndarray) and H.flags.writeable):
        return xp.where(rows[:, None, None], Hprev, H)
    H[rows] = Hprev[rows]
    return H
