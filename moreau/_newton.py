r"""Certified batched damped Newton for the prox subproblem.

For an objective ``f`` with curvature lower bound ``mu`` (``f.strong_convexity()``)
and ``lam + mu > 0``, the prox subproblem in the displacement ``u = theta - w``,

.. math:: h(u) = f(w + u) + \tfrac{\lambda}{2}\|u\|^2,

is ``(lam + mu)``-strongly convex, so for every point ``theta``

.. math:: \|\theta - \mathrm{prox}(w)\| \le \|\nabla f(\theta) + \lambda(\theta - w)\| / (\lambda + \mu).

The certificate (``ProxInfo.error_bound``) is this bound *for the returned
floating-point* ``theta``, rounding included: its arithmetic and what it assumes are in
``moreau._newton_cert``.

Representation: Newton iterates on ``x`` with ``theta = a + x``.  When
``lam >= L`` (``L = f.smoothness()``) the anchor is ``a = w`` and ``x`` is the
displacement ``u``: ``u`` is tiny, and keeping it as its own variable keeps
envelope gradients ``-lam u`` accurate to ulps of ``u``.  When ``lam < L``
the anchor is ``0`` and ``x`` is ``theta``.  (``L`` here is the cheap trace bound
``f._smoothness_bound()``, no eigenvalues.)  Newton starts at ``theta = w`` where
``lam >= L / 8`` (the prox is then within ``||grad f|| / lam`` of ``w``) and at ``0``
otherwise: on the benchmark data the mean iteration count at ``lam = 1`` drops from
5.0 to 4.2, and it is unchanged at the other ``lam``.

Default tolerance (per batch entry)::

    tol = 4 eps ||x|| + 2 (E_f + rounding terms above) / (lam + mu)

"a few ulps of the iterate" plus twice the part of the certificate that no
computation in this dtype can remove.  ``E_f`` is evaluated at the iterate
with the *local* curvature (for logistic the ``sigma'`` of each margin), so
the level follows the conditioning at the solution, not the global ``L``.
Stopping requires the certificate itself (not the raw residual) to be below
``tol``, so the returned ``error_bound <= tol`` always.  A default level above
``sqrt(eps) (||theta|| + ||w|| + G / (lam + mu))`` (``G = f._grad_error_scale``,
the size of the terms summed in ``grad f``: the scale on which the prox
equation balances, which sets the size when theta is zero by cancellation)
means the dtype cannot certify even half its digits there: that entry is
reported as failed (``ProxConvergenceError``), never returned as an answer;
pass an explicit ``tol`` to accept a looser bound.  Before failing, an
entry whose level exceeds ``sqrt(eps) (||theta|| + ||w||)`` tries the local
certificate (below), which is what certifies float32 data with features of
size 1e4 at small ``lam`` (a relative level of 86 with the global modulus).

Globalisation: a strong-Wolfe line search along the Newton direction
(``_wolfe``: bracketing that doubles too-short and bisects too-long
steps).  On badly scaled logistic data (features ~1e4, w ~1e3) the quadratic
model is off by orders of magnitude in both directions; plain Armijo halving
needed up to 477 iterations on 40 such problems, this search at most 19
(measured, ``tests/test_certificates.py``).  Near the solution, where the
decrease of ``h`` is below its own rounding (a softmax loss sums logits of
size 30 to a value of 1e-7), a step is accepted when it halves ``||grad h||``.

Local certificate: where the objective provides a rigorous lower bound ``m``
on the smallest eigenvalue of its Hessian at theta and a Hessian Lipschitz
constant ``rho`` (``f._local_curvature``: logistic), the bound is the
smaller of the global one and the radius ``r`` with
``(lam + m) r - rho r^2 / 2 = ||grad h||`` (``_ball``): well-conditioned
solutions are certified to a few ulps whatever ``lam`` is.  ``m`` is proven: where
the objective returns the eigensolver's modelled error separately (logistic), the smallest
eigenvalue of the computed Hessian is bounded by a certified Cholesky just below
``eigvalsh``'s value (``_proven_min_eig``) and only the Hessian's own rounding is
subtracted; Multinomial's eigenvalue number ``_null_dim`` (below) likewise, on the Hessian
lifted along ``N`` (``f._null_lift``: interlacing; ``_local_min_eig``).  An entry that
finds no acceptable step is frozen (it cannot progress in this dtype).
Objectives whose Hessian is ``mu`` on a fixed subspace ``N`` at every point, with
``grad f - mu theta`` orthogonal to ``N`` (``f._null_dim = dim N``; Multinomial: the
shifts of all classes' weights by one vector, so ``lambda_min(hess f) = mu`` always
and the ball above could never beat ``lam + mu``) read the eigenvalue number
``_null_dim`` instead (the curvature off ``N``) and add the exact error on ``N``,
where ``h`` is a decoupled quadratic (``_null_error``): the bound is
``sqrt(ball^2 + e_N^2)``; for them the local certificate is tried wherever the
global level exceeds ``16 eps`` times the scale and ``(lam + hi) / (lam + mu) > 128``
(not only where it would fail).

Work follows the entries that still need it, and the results do not depend on
which other entries share the batch (``compact=False`` keeps them all; the tests
compare the two to a few ulps):

* compaction: once at most ``_COMPACT`` (3/4) of the batch is still active, the
  finished entries leave it (their results are recorded) and the objective hands
  Newton a copy holding only the active ones (``f._take``; Logistic and
  Multinomial do, other objectives keep every entry, masked);
* the fresh Hessian is formed only on the rows that need it (on a copy of those
  entries when they are at most half the batch; straight into Newton's matrix where
  ``_hess_at`` takes ``rows=``, Multinomial); a polishing entry takes a chord
  step with its previous Hessian, whatever the others do; Newton's matrices are updated
  in place (``_newton_steps.REUSE``: fewer fresh arrays, the same bits);
* a chord step also where the last step was a full Newton step and the contraction it
  showed predicts that one step with that Hessian settles the certificate
  (``_chord_settles``: a Hessian saved; a wrong guess costs an iteration, never accuracy;
  at ``lam = 1`` on the benchmark at L-BFGS-B's accuracy 976 of 1000 entries take it);
* the direction's Hessian is formed in float32 (``f._hess_at(..., low=True)``, 1.4-1.6x
  cheaper on a CPU) on the entries where ``f._low_hessian_ok`` bounds the rate of the
  perturbed Newton by ``2^-8``; gradient, ``h``, line search and certificates stay in the
  dtype, and the local certificate's eigenvalues always come from the float64 Hessian;
* the local certificate's eigenvalues are computed only for entries where it can
  settle: it needs ``gn + rnd <= m_loc (2 rnd / (lam + mu) + 4 eps ||x||)`` (default
  level; ``gn + rnd <= m_loc tol`` with ``tol``), and ``m_loc <= max(lam + hi,
  lam + mu)`` since the certified ``lambda_min`` never exceeds ``||hess f|| <= hi``
  (``_REACH`` is a 1% slack on this necessary condition; a test turns it off and
  compares).  Before, the route was tried on 990 of 1000 entries one iteration
  early at ``lam = 1`` and failed on all of them.

Per-entry outcomes: when some entries fail (iteration cap, frozen, or a default
level above the ``sqrt(eps)`` limit) the :class:`~moreau.ProxConvergenceError` names them
(``failed`` mask, first indices in the message) and carries the whole result
(``theta``, certified ``error_bound`` for every entry, ``tol``, ``iterations``):
the converged entries remain usable.
"""

from __future__ import annotations

import math

import numpy as np

from . import _newton_steps as _steps
from ._backend import safe_norm, to_numpy
from ._errors import ProxConvergenceError
from ._newton_batch import (
    _assemble,
    _check_finite,
    _finished,
    _h_and_grad,
    _tolerance,
    _View,
    takes_rows,
)
from ._newton_cert import _certificate, _local_min_eig, _null_error, _pieces, _settled
from ._newton_steps import _chord_settles, _plus_lam, _select, _solve, _wolfe
from ._proxinfo import ProxInfo

__all__ = ["newton_prox", "newton_displacement", "check_max_iter"]

_REACH = 1.01  # slack on the necessary condition for the local certificate (tests set inf)
_COMPACT = 0.75  # entries leave the batch once at most this fraction of it is still active


def check_max_iter(max_iter):
    """``max_iter`` as a non-negative int (``TypeError``/``ValueError`` naming it otherwise)."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, int | np.integer):
        raise TypeError(f"max_iter must be a non-negative integer (got {max_iter!r})")
    if max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer (got {max_iter!r})")
    return int(max_iter)


def newton_displacement(f, w, lam, *, tol=None, max_iter=100, info=False):
    """``(u, ProxInfo or None)`` with ``u = prox(w) - w`` certified to ``tol``; see module doc."""
    _, u, inf = newton_prox(f, w, lam, tol=tol, max_iter=max_iter, info=info)
    return u, inf


def newton_prox(f, w, lam, *, tol=None, max_iter=100, info=False, compact=True):
    """``(theta, u, ProxInfo or None)``: the prox, the displacement ``theta - w``, both
    from the same iterate (each without the rounding of forming it from the other).
    ``compact=False`` keeps every entry in the batch to the end (the results are the
    same: tests compare the two)."""
    xp = f.xp
    max_iter = check_max_iter(max_iter)
    d = f.dim
    shape = tuple(np.broadcast_shapes(f.batch_shape, tuple(w.shape[:-1]), tuple(lam.shape)))
    N = math.prod(shape)
    eps = float(xp.finfo(f.dtype).eps)
    if tol is not None:
        tol = _tolerance(tol, xp, f.dtype, shape)

    def flat(v, tail=()):
        return xp.reshape(xp.broadcast_to(v, shape + tail), (N,) + tail)

    w = flat(w, (d,))
    lam = lam_all = flat(lam)  # the loop's `lam` follows the compacted batch
    modulus = lam + flat(f.strong_convexity())
    modulus_all = modulus  # the loop's `modulus` follows the compacted batch
    hi = flat(f._smoothness_bound())  # a cheap valid upper bound on ||hess f||
    # iterate on x with theta = a + x: a = w (x is the displacement) when lam
    # dominates the curvature, a = 0 (x is theta) otherwise; theta - w = c + x
    # with c = a - w exactly 0 or -w.  See the module doc.
    disp = lam >= hi
    with np.errstate(over="ignore"):  # 8 lam is inf for lam near the float maximum: inf >= hi, as meant
        start = 8 * lam >= hi
    zero = xp.zeros_like(w)
    a = xp.where(disp[:, None], w, zero)
    c = xp.where(disp[:, None], zero, -w)
    # the working set: per-entry arrays (leading axis: the entries still in the batch)
    S = {
        "J": xp.arange(N),
        "lam": lam,
        "modulus": modulus,
        "hi": hi,
        "disp": disp,
        "a": a,
        "c": c,
        "anorm": safe_norm(a, xp),
        "wnorm": safe_norm(w, xp),
        "x": xp.where(start[:, None], -c, zero),
        "iterations": xp.zeros(N, dtype=xp.int64),
        "frozen": xp.zeros(N, dtype=xp.bool),
        "moved": xp.full(N, math.inf, dtype=f.dtype),  # ||x_k - x_{k-1}||
        "polished": xp.zeros(N, dtype=xp.bool),
        "has_prev": xp.zeros(N, dtype=xp.bool),
        "newton": xp.zeros(N, dtype=xp.bool),  # the last step: a full step with a fresh Hessian
        "pprev": xp.full(N, math.inf, dtype=f.dtype),
    }  # ||p|| of that step
    if tol is not None:
        S["tol"] = flat(tol)
    if getattr(f, "_null_dim", 0):
        S["mu"] = flat(f.strong_convexity())  # the exact mu (_null_error)
    view = _View(f, shape)
    S["low"] = view.low_ok(modulus, hi)  # direction from the float32 Hessian (see module doc)
    S["h"], S["g"], S["E"], S["state"] = _h_and_grad(view, S, S["x"])
    _check_finite(xp, f, S["h"], S["g"], w, shape)
    # the local certificate is tried where the global level exceeds sqrt(eps) * scale (the
    # level that would fail); for objectives with a null subspace (Multinomial: the global
    # modulus lam + mu ignores all the loss's curvature; _null_error) also where it exceeds
    # 16 eps * scale and the largest possible gain (lam + hi) / (lam + mu) is above 128
    # (measured: at gains of 50 it bought a factor 1.4 at 1.4x the time)
    nullsp, Hprev = bool(getattr(f, "_null_dim", 0)), None
    blocks = []  # finished entries: (J, x, bound, level, tol_k, ok, frozen, iterations, ||theta||)

    # Newton's matrix of an iteration, built by these closures (defined once: they read the
    # iteration's S, view, theta, chord, Hprev and the fresh Hf/Hmask/Hown when called)
    def part(want, direct=False):
        """``(indices, f on those entries, theta, state)`` when ``want`` is at most a share of the
        batch (``f._part_share``, default half: where the Hessian costs more than the copy),
        else None; ``direct``: ``(indices, None, None, None)`` where ``takes_rows(f)`` (no copy)."""
        nonlocal compact
        share = getattr(f, "_part_share", 0.5)
        if not compact or int(xp.sum(xp.astype(want, xp.int64))) > share * int(S["J"].shape[0]):
            return None
        idx = xp.nonzero(want)[0]
        if direct and _steps.REUSE and takes_rows(f) and isinstance(idx, np.ndarray):
            return idx, None, None, None
        sub = f._take(xp.take(S["J"], idx, axis=0), shape)
        compact = sub is not None  # False: the objective cannot hand out part of its batch
        st = S["state"]
        return (
            None
            if sub is None
            else (
                idx,
                _View(sub, None),
                xp.take(theta, idx, axis=0),
                None if st is None else xp.take(st, idx, axis=0),
            )
        )

    def form(rows, lp, pt=None):
        """``(Hessian, rows it holds, own)``: on the entries ``rows`` only when few (``part``),
        else on the whole batch; formed in float32 where ``lp`` (a direction only).  ``own``:
        no one else holds the array (``f._fresh_hessian``: ``_hess_at`` returns a fresh one)."""
        got = part(rows, True) if pt is None else pt
        if got is None:
            return (
                view.hess(theta, S["state"], lp),
                xp.ones_like(rows),
                getattr(f, "_fresh_hessian", False),
            )
        # the previous matrix's memory where only its chord rows are read again (_plus_lam)
        spare = got[1] is None and Hf is None and Hprev is not None and isinstance(Hprev, np.ndarray)
        Hn = Hprev if spare else xp.zeros((int(S["J"].shape[0]), d, d), dtype=f.dtype)
        if spare:
            Hn[~chord] = 0.0
        if got[1] is None:  # formed into Hn[idx] from the whole batch's data
            view.hess(theta, S["state"], lp, rows=got[0], out=Hn)
        else:
            Hn[rows] = got[1].hess(got[2], got[3], lp)
        return Hn, rows, True

    def hold(Hn, rows, own):
        """Newton's matrix ``Hf`` takes ``Hn`` on the ``rows`` it does not hold yet."""
        nonlocal Hf, Hmask, Hown
        rows = rows & ~Hmask
        Hf, Hown = (Hn, own) if Hf is None else (_select(xp, rows, Hn, Hf, Hown and _steps.REUSE), True)
        Hmask = Hmask | rows

    def fresh(want):
        """Newton's matrix on the rows ``want``: the float32-formed Hessian on the rows
        ``S["low"]``, the float64 one elsewhere; which a row gets depends on the row
        alone, never on the rest of the batch or on the certificate's Hessian."""
        for lp in (False, True):
            mine = S["low"] if lp else ~S["low"]
            rows = want & ~Hmask & mine
            if bool(xp.any(rows)):
                Hn, held, own = form(rows, lp)
                hold(Hn, held & mine, own)

    for k in range(max_iter + 1):
        x, g, lam, modulus = S["x"], S["g"], S["lam"], S["modulus"]
        theta = S["a"] + x
        P = _pieces(xp, S, x, g, eps, d)
        gn, rnd_t, rnd_x, tn, xn, gnorm = P
        bound, bound_x, level = _certificate(xp, S, P, None, eps)
        ok = _settled(S, tol, bound, bound_x, level)
        frozen, moved = S["frozen"], S["moved"]
        # the local certificate (an eigenvalue per entry) where the global one fails or would
        # fail the sqrt(eps) rule, once Newton has nearly stopped moving (or at the cap), and
        # only where it can settle: m_loc <= max(lam + hi, lam + mu) bounds what it can reach
        poor = level > math.sqrt(eps) * (tn + S["wnorm"]) if tol is None else ~ok
        if nullsp and tol is None:  # see `nullsp` above
            poor = poor | ((level > 16 * eps * (tn + S["wnorm"])) & (lam + S["hi"] > 128 * modulus))
        near = (~ok | poor) & (frozen | (moved <= 1e-3 * (xn + S["anorm"])) | (k == max_iter))
        Hf, Hmask, Hown = None, xp.zeros_like(ok), False  # the fresh Hessian, on the rows Hmask so far

        if bool(xp.any(near)):
            top = xp.maximum(lam + S["hi"], modulus) * _REACH
            reach = (
                (gn + rnd_x <= top * (2 * rnd_x / modulus + 4 * eps * xn))
                if tol is None
                else (gn + rnd_t <= top * S["tol"])
            )
            cand = near & reach
            if bool(xp.any(cand)):
                pt = part(cand)
                Hc, held, own = form(cand, False, pt)  # float64: the certificate's Hessian
                hold(Hc, held & ~S["low"], own)
                if pt is None:
                    local = view.local(theta, S["state"])
                else:  # the bound's ingredients for those entries only
                    local = pt[1].local(pt[2], pt[3])
                    if local is not None:
                        full = tuple(xp.zeros_like(lam) for _ in local)
                        for dst, src in zip(full, local, strict=True):
                            dst[cand] = src
                        local = full
                if local is not None:
                    null = getattr(f, "_null_dim", 0)  # hess f = mu on a known subspace (Multinomial)
                    lo = xp.full(lam.shape, -math.inf, dtype=f.dtype)
                    lo[cand] = _local_min_eig(xp, f, Hc[cand], tuple(v[cand] for v in local), null, eps)
                    local = local[:2]
                    ext = _null_error(xp, f, S, x, eps) if null else None
                    lb, lbx, llev = _certificate(xp, S, P, (lo, local[1]), eps, ext)
                    use = cand & _settled(S, tol, lb, lbx, llev) & (~ok | (llev < level))
                    bound, bound_x, level = (
                        xp.where(use, lb, bound),
                        xp.where(use, lbx, bound_x),
                        xp.where(use, llev, level),
                    )
                    ok = ok | use
        tol_k = level + xp.maximum(bound - bound_x, xp.zeros_like(bound)) if tol is None else S["tol"]
        # polish: a certified entry whose last step was still above a few ulps takes one more
        # full Newton step (once): the certificate is noise-limited there, the
        # iterate is not (one step takes 1e-12 to 5e-16 relative at lam = 1e-4)
        polish = (
            ok & ~frozen & ~S["polished"] & (moved > 16 * eps * (xn + S["anorm"]))
            if tol is None
            else xp.zeros_like(ok)
        )
        active = (~ok & ~frozen) | polish
        # a chord step (the previous Hessian, no fresh one) where the last step was a full
        # Newton step and the contraction it showed predicts that the chord step settles
        late = active & ~polish & S["newton"] & _chord_settles(xp, S, P, tol, eps)
        n_active = int(xp.sum(xp.astype(active, xp.int64)))
        fields = (bound, level, tol_k, ok, tn)
        if k == max_iter or n_active == 0:
            blocks.append(_finished(S, fields, None))
            break
        if compact and n_active <= _COMPACT * int(S["J"].shape[0]):
            keep = xp.nonzero(active)[0]
            sub = f._take(xp.take(S["J"], keep, axis=0), shape)
            if sub is None:
                compact = False  # the objective cannot hand out part of its batch
            else:  # finished entries leave the batch: they cost nothing from here on
                blocks.append(_finished(S, fields, ~active))
                S = {key: (v if v is None else xp.take(v, keep, axis=0)) for key, v in S.items()}
                gnorm, active, polish, late = (
                    xp.take(v, keep, axis=0) for v in (gnorm, active, polish, late)
                )
                Hf, Hprev, Hmask = (
                    None if v is None else xp.take(v, keep, axis=0) for v in (Hf, Hprev, Hmask)
                )
                Hown = Hf is not None
                view = _View(sub, None)
                x, g, lam, theta = S["x"], S["g"], S["lam"], S["a"] + S["x"]
        # Newton's matrix: the fresh Hessian, or for a polishing entry the previous one
        # (a chord step, within ulps here: its last step was a full Newton step)
        chord = (polish & S["has_prev"]) | late
        H, Hprev = None, (None if _steps.REUSE and not bool(xp.any(chord)) else Hprev)  # unread: freed
        fresh(active & ~chord)
        H = (
            Hprev
            if Hf is None
            else _plus_lam(xp, Hf, lam, Hown and _steps.REUSE, chord if Hf is Hprev else None)
        )
        if Hf is not None and Hprev is not None and bool(xp.any(chord)):
            H = _select(xp, chord, Hprev, H, Hown and _steps.REUSE)
        p = -_solve(xp, H, g, eps)
        Hprev = None if _steps.REUSE else Hprev  # replaced by H below: free its memory now
        slope = xp.vecdot(g, p)
        h = S["h"]
        # predicted decrease below the rounding of h: Armijo cannot see it
        flat_ = -slope <= 64 * eps * xp.abs(h)
        new, accepted = _wolfe(
            xp,
            lambda v, S=S, view=view: _h_and_grad(view, S, v),
            (x, h, g, S["E"], S["state"]),
            gnorm,
            p,
            slope,
            flat_,
            active & ~polish,
            polish,
        )
        S["polished"] = S["polished"] | polish
        # entries that found no acceptable step cannot progress in this dtype:
        # they keep their point and are reported (never moved blindly)
        S["frozen"] = S["frozen"] | ~accepted
        moved, pn = safe_norm(new[0] - x, xp), safe_norm(p, xp)
        S["moved"] = xp.where(active, moved, S["moved"])
        S["newton"] = active & ~chord & ~polish & accepted & (xp.abs(moved - pn) <= pn / 1024)
        S["pprev"] = pn
        S["iterations"] = S["iterations"] + xp.astype(active & accepted, xp.int64)
        S["x"], S["h"], S["g"], S["E"], S["state"] = new
        Hprev, S["has_prev"] = H, active
    J, x, bound, level, tol_k, ok, frozen, iterations, tn = _assemble(xp, blocks)
    theta, u = a + x, c + x
    failed = ~ok | ~xp.isfinite(bound)  # an overflowed (inf) certificate certifies nothing
    if tol is None:  # a default level above sqrt(eps) * scale certifies nothing useful
        tiny = float(xp.finfo(f.dtype).smallest_normal)
        wnorm = safe_norm(w, xp)
        if bool(xp.any(level > math.sqrt(eps) * (tn + wnorm) + tiny)):  # G >= 0: only these can fail
            G = flat(f._grad_error_scale(xp.reshape(theta, shape + (d,))))
            failed = failed | (level > math.sqrt(eps) * (tn + wnorm + G / modulus_all) + tiny)
    host = lambda v: np.reshape(to_numpy(v), shape)  # noqa: E731
    out = ProxInfo(iterations=host(iterations), error_bound=host(bound), tol=host(tol_k).copy())
    theta, u = xp.reshape(theta, shape + (d,)), xp.reshape(u, shape + (d,))
    if bool(xp.any(failed)):
        _raise(
            f, host(failed), out, theta, max_iter, host(frozen), tol is None, host(lam_all), host(modulus_all)
        )
    return theta, u, (out if info else None)


def _raise(f, failed, info, theta, max_iter, frozen, default, lam, modulus):
    b, t = info.error_bound, info.tol
    idx = [tuple(int(i) for i in r) for r in np.argwhere(failed)[:5]]
    n = int(failed.sum())
    why = []
    if np.any(failed & (b > t) & ~frozen):
        why.append(f"the cap of {max_iter} Newton iterations was reached")
    if np.any(failed & frozen):
        why.append("no step decreased h in this dtype (stalled)")
    if np.any(failed & ~np.isfinite(b)):
        why.append("the certificate overflowed (inf): rescale w or the data")
    if np.any(failed & (b <= t)) and default:
        why.append(
            "the default level (the rounding floor) exceeds sqrt(eps) (||theta|| + ||w|| + "
            "G/(lam + mu)): pass tol= to accept a looser certificate"
        )
    k = int(np.argmax(np.where(failed, b, -np.inf)))
    raise ProxConvergenceError(
        f"prox of {type(f).__name__}: {n} of {failed.size} entries not certified "
        f"(first: {idx}); worst bound {float(b.reshape(-1)[k]):.3g} with tol "
        f"{float(t.reshape(-1)[k]):.3g} at lam = {float(lam.reshape(-1)[k]):.3g} (the bound scales as "
        f"1/(lam + mu) = 1/{float(modulus.reshape(-1)[k]):.3g}); "
        + "; ".join(why or ["tol below the rounding floor"]),
        error_bound=info.error_bound,
        tol=info.tol,
        iterations=info.iterations,
        theta=to_numpy(theta),
        failed=failed,
    )
