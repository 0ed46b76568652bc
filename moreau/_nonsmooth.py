r"""Objectives with an exact closed-form prox that drop one common assumption each:
the weighted :math:`\ell_1` distance and the single-sample hinge (nonsmooth, convex).

The smooth ones of the same family (Huber: convex, not strongly convex; the double well:
weakly convex) are in :mod:`moreau._piecewise_quadratic`; all share :class:`ExactProx`.

Conventions (as everywhere in moreau): the prox is
:math:`\mathrm{prox}(w) = \arg\min_\theta f(\theta) + \tfrac{\lambda}{2}\|\theta - w\|^2`
with λ = ``lam``; the envelope gradient is :math:`\lambda(w - \mathrm{prox}(w))`.
Every objective carries an optional ridge :math:`\tfrac{\mu}{2}\|\theta\|^2` (``mu >= 0``,
shape ``(...)``): with ``mu > 0`` a nonsmooth one is strongly convex, so "smooth" can be
dropped while strong convexity is kept.

References: Parikh & Boyd, *Proximal Algorithms* (2014), §6.5.2 (soft thresholding) and §2.2
(prox of :math:`f + \tfrac{\mu}{2}\|\cdot\|^2`); Beck, *First-Order Methods in
Optimization* (2017), Example 6.8 (ℓ1) and Lemma 6.5 (hyperplane/half-space steps).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._backend import as_array, constructor_namespace, safe_norm, to_numpy
from ._errors import ProxConvergenceError
from ._objective import Objective, ProxInfo
from ._typing import Array, DType, Namespace

__all__ = ["AbsoluteValue", "ExactProx", "Hinge"]


class ExactProx(Objective):
    r"""Base of the objectives :math:`f = g + \tfrac{\mu}{2}\|\cdot\|^2` whose prox is a closed form.

    Subclasses implement ``_core(w, lam, shift)`` (the prox of ``g`` alone) and the rest of the
    protocol.  The ridge is folded in exactly (Parikh & Boyd §2.2):
    :math:`\mathrm{prox}_{f/\lambda}(w) = \mathrm{prox}_{g/(\lambda+\mu)}(\lambda w/(\lambda+\mu))`.

    How the protocol says what holds (read by checkers through :attr:`smooth`, :attr:`convex`,
    :attr:`strongly_convex`, per batch entry): ``curvature_bounds() = (lo, hi)`` with ``lo`` the
    exact modulus (``f - lo/2 ||.||^2`` convex and no larger ``lo`` works; negative: ``(-lo)``-weakly
    convex) and ``hi`` the exact sup of the curvature (``smoothness() = max(|lo|, |hi|)`` is then
    the gradient's Lipschitz constant), ``inf`` where ``f`` is not differentiable: then
    ``smoothness()`` is ``inf``, "not L-smooth for any L", and ``hess`` raises ``TypeError``.

    ``prox`` runs no iterations (``max_iter`` does not apply); ``return_info=True`` gives
    ``error_bound``: a bound on ``||theta - prox(w)||`` for the returned theta from the rounding
    of the closed form alone (a few ``eps`` times the magnitudes; derived per class by counting
    roundings, each relative ``u = eps/2``, through the prox's Lipschitz constants, and tested
    against exact rational arithmetic).  A ``tol`` below it raises ProxConvergenceError.
    """

    mu: Array = None
    _ridge: bool  # set by _set_ridge

    # -- flags a checker reads --------------------------------------------------------
    @property
    def smooth(self) -> np.ndarray:
        """``hi < inf`` per batch entry (host bool array): the gradient is Lipschitz."""
        return np.isfinite(_host(self.curvature_bounds()[1]))

    @property
    def convex(self) -> np.ndarray:
        """``lo >= 0`` per batch entry (host bool array)."""
        return _host(self.curvature_bounds()[0]) >= 0

    @property
    def strongly_convex(self) -> np.ndarray:
        """``lo > 0`` per batch entry (host bool array)."""
        return _host(self.curvature_bounds()[0]) > 0

    def weak_convexity(self) -> Array:
        """``rho = max(-lo, 0)``: ``f + rho/2 ||.||^2`` is convex (0 for a convex ``f``), shape ``(...)``."""
        xp = self.xp
        return xp.maximum(-self.curvature_bounds()[0], xp.zeros((), dtype=self.dtype))

    def hess(self, theta: Array) -> Array:
        raise TypeError(
            f"{type(self).__name__} is not differentiable at its kinks: it has no Hessian "
            "(curvature_bounds()[1] is inf); its envelope has value and gradient only"
        )

    # -- prox ------------------------------------------------------------------------
    def _kappa(self, lam: Array) -> Array | float:
        """Lipschitz constant of ``prox_g(., lam)``, broadcasting against ``(..., d)``: 1 (convex ``g``)."""
        return 1.0

    def _solve(
        self,
        w: Array,
        lam: Array,
        *,
        tol: Array | float | None = None,
        max_iter: int | None = None,
        info: bool = False,
        want_u: bool = True,
    ) -> tuple[Array, Array, ProxInfo | None]:
        """``(prox(w), prox(w) - w, ProxInfo or None)`` by the closed form (no iterations)."""
        xp = self.xp
        shape = tuple(np.broadcast_shapes(self.batch_shape, tuple(w.shape[:-1]), tuple(lam.shape)))
        ur = float(xp.finfo(self.dtype).eps) / 2
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # checked below
            if self._ridge:
                lam2 = lam + self.mu
                shift = (self.mu / lam2)[..., None] * w  # w - w2, w2 = lam w/(lam + mu), formed directly
                theta, disp, err = self._core(w, lam2, shift)
                u = disp - shift  # (theta - w2) + (w2 - w)
                # shift carries 3u relative (a sum, a quotient, a product), lam2 u relative; the prox
                # moves by at most kappa |d shift| and kappa |theta - w2| |d lam2| / lam2 per coordinate
                kap = self._kappa(lam2)
                err = err + ur * (3 * safe_norm(kap * shift, xp) + safe_norm(kap * disp, xp)) * (1 + 8 * ur)
            else:
                theta, disp, err = self._core(w, lam, None)
                u = disp
        if not (bool(xp.all(xp.isfinite(theta))) and bool(xp.all(xp.isfinite(u)))):
            raise ValueError(
                f"prox of {type(self).__name__} overflows {self.dtype}: w or lam is near the "
                f"float range (max |w| {float(xp.max(xp.abs(w))):.3g}, max lam "
                f"{float(xp.max(lam)):.3g}); rescale the problem"
            )
        theta = xp.broadcast_to(theta, shape + (self.dim,))
        u = xp.broadcast_to(u, shape + (self.dim,))
        if not (info or tol is not None):
            return theta, u, None
        tiny = float(xp.finfo(self.dtype).smallest_normal)
        err = err + 32 * math.sqrt(self.dim) * tiny  # results in the subnormal range round absolutely
        bound = np.broadcast_to(np.asarray(to_numpy(err), dtype=np.float64), shape)
        return theta, u, _info(type(self).__name__, bound, tol, theta)

    def _core(self, w: Array, lam: Array, shift: Array | None) -> tuple[Array, Array, Array]:
        """``(prox_g(w2), prox_g(w2) - w2, error bound (...))`` for ``g`` without the ridge at
        ``w2 = w - shift`` (``shift`` None: zero); the differences ``w - s`` (or margins) are formed
        before the shift is taken off, so that a point on a kink keeps an exact displacement.  The
        bound covers the rounding of everything but ``shift`` itself."""
        raise NotImplementedError

    # -- shared pieces -----------------------------------------------------------------
    def _ridge_value(self, theta: Array) -> Array:
        return self.mu / 2 * self.xp.vecdot(theta, theta)

    def _set_ridge(self, mu: Any, xp: Namespace, dtype: DType) -> Array:
        mu = as_array(mu, xp, "mu", dtype=dtype, host_ok=True)
        if not bool(xp.all(mu >= 0)):
            raise ValueError(f"mu must be >= 0 (got {float(xp.min(mu)):g})")
        self.mu, self._ridge = mu, bool(xp.any(mu > 0))
        return mu


def _host(x: Any) -> np.ndarray:
    return np.asarray(to_numpy(x))


def _info(name: str, bound: np.ndarray, tol: Any, theta: Array) -> ProxInfo:
    """ProxInfo for a closed form (zero iterations), or ProxConvergenceError where ``bound > tol``."""
    bound = np.where(np.isnan(bound), np.inf, bound)
    its = np.zeros(bound.shape, dtype=int)
    if tol is None:
        return ProxInfo(iterations=its, error_bound=bound, tol=None)
    t = np.asarray(to_numpy(tol))
    if t.dtype.kind not in "fiu" or t.dtype == bool:
        raise TypeError(f"tol must be a real number or array (got {tol!r})")
    try:
        t = np.broadcast_to(t.astype(float), bound.shape)
    except ValueError:
        raise ValueError(
            f"tol shape {t.shape} does not broadcast with the result's batch shape {bound.shape}"
        ) from None
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"tol must be finite and > 0 (got {tol!r})")
    failed = bound > t
    if np.any(failed):
        raise ProxConvergenceError(
            f"closed-form prox of {name}: rounding bound {bound.max():.3g} exceeds tol at "
            f"{int(failed.sum())} of {failed.size} entries; tol is below the closed form's rounding level",
            error_bound=bound,
            tol=t.copy(),
            iterations=its,
            failed=failed,
            theta=to_numpy(theta),
        )
    return ProxInfo(iterations=its, error_bound=bound, tol=t.copy())


def per_coordinate(
    x: Any, xp: Namespace, name: str, dtype: DType, shape: tuple[int, ...], *, positive: bool
) -> tuple[Array, tuple[int, ...]]:
    """``x`` as an array of ``dtype`` broadcasting against ``shape = (..., d)`` without changing
    ``d``, every entry ``> 0`` (``positive``) or ``>= 0``; the broadcast shape."""
    x = as_array(x, xp, name, dtype=dtype, host_ok=True)
    try:
        out = tuple(np.broadcast_shapes(tuple(shape), tuple(x.shape)))
    except ValueError:
        out = None
    if out is None or out[-1] != shape[-1]:
        raise ValueError(
            f"{name} must broadcast against shape (..., d) = {tuple(shape)} (got shape {tuple(x.shape)})"
        )
    ok = xp.all(x > 0) if positive else xp.all(x >= 0)
    if not bool(ok):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} (got {float(xp.min(x)):g})")
    return x, out


def centres(s: Any, xp: Namespace, name: str = "s") -> Array:
    """``s`` ``(..., d)`` with ``d >= 1``, its namespace's float dtype."""
    s = as_array(s, xp, name, host_ok=True)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"{name} must have shape (..., d) with d >= 1 (got shape {tuple(s.shape)})")
    return s


def batch_of(shape: tuple[int, ...], mu: Array) -> tuple[int, ...]:
    """Batch shape: the leading axes of ``shape`` broadcast with ``mu``'s shape (ValueError naming mu)."""
    try:
        return tuple(np.broadcast_shapes(tuple(shape[:-1]), tuple(mu.shape)))
    except ValueError:
        raise ValueError(
            f"mu shape {tuple(mu.shape)} does not broadcast with the batch shape {tuple(shape[:-1])}"
        ) from None


class AbsoluteValue(ExactProx):
    r"""Weighted :math:`\ell_1` distance :math:`f(\theta) = \sum_k c_k|\theta_k - s_k| + \tfrac{\mu}{2}\|\theta\|^2`.

    ``s`` (the kinks, :math:`s`) has shape ``(..., d)``; ``c`` (the weights :math:`c_k \ge 0`)
    broadcasts against it (a scalar, ``(d,)`` or ``(..., d)``); ``mu`` (μ >= 0) is a scalar or
    ``(...)``.  Prox: soft thresholding, exact,

    .. math:: \mathrm{prox}(w)_k = s_k + \mathrm{sign}(z_k)\max(|z_k| - c_k/\lambda, 0),\quad
              z = w - s,

    (with μ > 0 applied at :math:`\lambda w/(\lambda+\mu)` and :math:`\lambda + \mu`); the
    displacement :math:`\mathrm{prox}(w) - w = -\mathrm{clip}(z, -c/\lambda, c/\lambda)` is computed
    directly.  The prox lands exactly on a kink (``theta_k == s_k``) when ``|z_k| <= c_k/lam``.

    Constants: ``curvature_bounds() = (mu, inf)`` (``hi = mu`` where every ``c_k = 0``): convex,
    strongly convex iff ``mu > 0``, not smooth.  ``grad`` is the minimum-norm subgradient
    (at ``theta_k = s_k``: :math:`\mu s_k - \mathrm{clip}(\mu s_k, -c_k, c_k)`), the limit of the
    envelope gradient as λ → ∞.  Its envelope is the Huber function
    ``Huber(s, delta=c/lam, c=c)`` (plus the ridge's part).

    Formula (sympy): prox = s + sign(w - s)*Max(Abs(w - s) - c/lam, 0)

    References: Parikh & Boyd (2014) §6.5.2; Beck (2017) Example 6.8.
    """

    def __init__(self, s: Any, c: Any = 1.0, mu: Any = 0.0) -> None:
        xp = constructor_namespace(s=s, c=c, mu=mu)
        s = centres(s, xp)
        dtype = s.dtype
        c, shape = per_coordinate(c, xp, "c", dtype, s.shape, positive=False)
        mu = self._set_ridge(mu, xp, dtype)
        self.xp, self.dtype, self.dim = xp, dtype, shape[-1]
        self.batch_shape = batch_of(shape, mu)
        self.s, self.c = s, c

    def value(self, theta: Array) -> Array:
        xp = self.xp
        theta = self._point(theta)
        return xp.sum(self.c * xp.abs(theta - self.s), axis=-1) + self._ridge_value(theta)

    def grad(self, theta: Array) -> Array:
        """The minimum-norm subgradient, shape ``(..., d)`` (kinks decided on ``theta - s == 0``)."""
        xp = self.xp
        theta = self._point(theta)
        z = theta - self.s
        r = self.mu[..., None] * theta
        kink = r - xp.minimum(xp.maximum(r, -self.c), self.c)
        return xp.where(z == 0, kink, r + self.c * xp.sign(z))

    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(mu, inf)``; ``hi = mu`` on entries whose weights are all zero.  Exact."""
        xp = self.xp
        c = xp.broadcast_to(self.c, self.batch_shape + (self.dim,))
        lo = xp.broadcast_to(self.mu, self.batch_shape)
        hi = xp.where(xp.any(c > 0, axis=-1), xp.asarray(math.inf, dtype=self.dtype), lo)
        return lo, hi

    def _core(self, w: Array, lam: Array, shift: Array | None) -> tuple[Array, Array, Array]:
        r"""Soft thresholding.  Rounding, per coordinate (``u = eps/2``): ``z = (w - s) - shift`` and
        ``t = c/lam`` carry ``u(|z| + |w - s|)``, ``u t``; soft thresholding is 1-Lipschitz in both,
        and the error of ``t`` matters only where ``|z| > (1 - 2u) t``; ``|z| - t`` and ``s + v`` add
        ``u|v|`` and ``u|theta|``: ``u (|z| + |w - s| + [|z| > (1 - 2u) t] t + |v| + |theta|)``."""
        xp = self.xp
        ur = float(xp.finfo(self.dtype).eps) / 2
        t = self.c / lam[..., None]
        ws = w - self.s
        z = ws if shift is None else ws - shift
        az = xp.abs(z)
        v = xp.sign(z) * xp.maximum(az - t, 0.0)
        theta = self.s + v
        disp = -xp.minimum(xp.maximum(z, -t), t)
        err = ur * (az + xp.abs(ws) + xp.where(az > t * (1 - 2 * ur), t, 0.0) + xp.abs(v) + xp.abs(theta))
        return theta, disp, safe_norm(err, xp) * (1 + (self.dim + 8) * ur)


class Hinge(ExactProx):
    r"""The hinge loss of one sample per client,
    :math:`f(\theta) = c\max(0, 1 - y\,a^\top\theta) + \tfrac{\mu}{2}\|\theta\|^2`.

    ``a`` (the sample's features) has shape ``(..., d)``; ``y`` (its label, in {-1, +1} or {0, 1}
    read as 0 -> -1), ``c`` (the weight, >= 0; :math:`1/n` of an ``n``-sample average) and ``mu``
    (>= 0) are scalars or ``(...)``.  With :math:`b = y a` the prox moves along ``b``, exactly:

    .. math:: \mathrm{prox}(w) = w + \tau b,\quad
              \tau = \mathrm{clip}\Big(\frac{1 - b^\top w}{\|b\|^2},\ 0,\ \frac{c}{\lambda}\Big)

    (``tau = 0`` where ``b = 0``; with μ > 0 applied at :math:`\lambda w/(\lambda+\mu)` and
    :math:`\lambda + \mu`): no step when the margin is met, a full step ``c/lam`` when even that
    leaves it unmet, else the projection onto the hyperplane :math:`b^\top\theta = 1` (the kink).
    A separable per-coordinate hinge is :class:`AbsoluteValue`'s relative; this one is the
    support-vector loss itself (one sample: a sum of several has no closed-form prox).

    Constants: ``curvature_bounds() = (mu, inf)`` (``hi = mu`` where ``c ||a|| = 0``): convex,
    strongly convex iff ``mu > 0``, not smooth.  ``grad`` is the minimum-norm subgradient (at a
    computed margin of exactly 1: :math:`\mu\theta - c\,t\,b` with
    :math:`t = \mathrm{clip}(\mu/(c\|b\|^2), 0, 1)`).

    Formula (sympy): tau = Min(Max((1 - y*a*w)/(y*a)**2, 0), c/lam)

    References: Beck (2017) Lemma 6.5 and Example 6.33 (hinge); Parikh & Boyd (2014) §2.2.
    """

    def __init__(self, a: Any, y: Any, c: Any = 1.0, mu: Any = 0.0) -> None:
        xp = constructor_namespace(a=a, y=y, c=c, mu=mu)
        a = centres(a, xp, "a")
        dtype = a.dtype
        y = as_array(y, xp, "y", dtype=dtype, host_ok=True)
        yh = _host(y)
        if not np.all((yh == 1) | (yh == -1)):
            if np.all((yh == 0) | (yh == 1)):
                y = 2 * y - 1
            else:
                bad = yh[~((yh == 1) | (yh == -1) | (yh == 0))]
                shown = float(bad[0]) if bad.size else "-1 mixed with 0"
                raise ValueError(f"y must hold labels in {{-1, +1}} or {{0, 1}} (got {shown})")
        c = as_array(c, xp, "c", dtype=dtype, host_ok=True)
        if not bool(xp.all(c >= 0)):
            raise ValueError(f"c must be >= 0 (got {float(xp.min(c)):g})")
        mu = self._set_ridge(mu, xp, dtype)
        try:
            batch = tuple(
                np.broadcast_shapes(tuple(a.shape[:-1]), tuple(y.shape), tuple(c.shape), tuple(mu.shape))
            )
        except ValueError:
            raise ValueError(
                f"batch shapes do not broadcast: a {tuple(a.shape[:-1])}, y {tuple(y.shape)}, "
                f"c {tuple(c.shape)}, mu {tuple(mu.shape)}"
            ) from None
        self.xp, self.dtype, self.dim, self.batch_shape = xp, dtype, a.shape[-1], batch
        self.a, self.y, self.c = a, y, c
        self.b = y[..., None] * a  # exact: y = +-1
        self._norm = safe_norm(self.b, xp)  # ||b||, (d/2 + 2) eps relative

    def margin(self, theta: Array) -> Array:
        r""":math:`y\,a^\top\theta`, shape ``(...)``."""
        return self.xp.vecdot(self.b, self._point(theta))

    def value(self, theta: Array) -> Array:
        xp = self.xp
        theta = self._point(theta)
        return self.c * xp.maximum(1 - xp.vecdot(self.b, theta), 0.0) + self._ridge_value(theta)

    def grad(self, theta: Array) -> Array:
        """The minimum-norm subgradient, shape ``(..., d)`` (the kink decided on the computed margin)."""
        xp = self.xp
        theta = self._point(theta)
        m = xp.vecdot(self.b, theta)
        cn2 = self.c * self._norm**2
        with np.errstate(divide="ignore", invalid="ignore"):
            t_kink = xp.where(cn2 > 0, xp.minimum(self.mu / xp.where(cn2 > 0, cn2, 1.0), 1.0), 0.0)
        t = xp.where(m < 1, xp.ones_like(m), xp.where(m == 1, t_kink, xp.zeros_like(m)))
        return self.mu[..., None] * theta - (self.c * t)[..., None] * self.b

    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(mu, inf)``; ``hi = mu`` where ``c ||a|| = 0`` (a constant loss).  Exact."""
        xp = self.xp
        lo = xp.broadcast_to(self.mu, self.batch_shape)
        hi = xp.where(self.c * self._norm > 0, xp.asarray(math.inf, dtype=self.dtype), lo)
        return lo, xp.broadcast_to(hi, self.batch_shape)

    def _core(self, w: Array, lam: Array, shift: Array | None) -> tuple[Array, Array, Array]:
        r"""The clipped step.  Rounding (``u = eps/2``, ``g_k = k u/(1 - k u)``, ``n = ||b||``): the
        margin shortfall ``m = (1 - b^T w) + b^T shift`` carries
        ``E_m = g_d sum|b_k w_k| + g_d sum|b_k shift_k| + u(|1 - b^T w| + |m|)``; ``x = m/n^2`` then
        ``E_m/n^2 + (d + 5) eps min(|x|, t)`` (``n`` is ``(d/2+2) eps`` relative; clip is 1-Lipschitz,
        and a relative error of ``x`` moves the clipped value by at most that much of ``t``), ``t =
        c/lam`` ``u t`` (where ``x > (1 - 2u) t``: elsewhere the clip at ``t`` is idle); ``tau``
        moves by at most ``dtau = min(those, t)`` (both lie in ``[0, t]``); ``theta = (w - shift) +
        tau b`` adds ``u(||w - shift|| + tau n + ||theta||)``."""
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        ur, d = eps / 2, self.dim
        n = self._norm
        pos = n > 0
        n1 = xp.where(pos, n, 1.0)
        short = 1 - xp.vecdot(self.b, w)
        g = d * ur / (1 - d * ur)
        e_m = g * xp.vecdot(xp.abs(self.b), xp.abs(w)) * (1 + g) + ur * xp.abs(short)
        if shift is None:
            m, w2 = short, w
        else:
            m, w2 = short + xp.vecdot(self.b, shift), w - shift
            e_m = e_m + g * xp.vecdot(xp.abs(self.b), xp.abs(shift)) * (1 + g) + ur * xp.abs(m)
        e_m = (e_m + ur * xp.abs(m)) * (1 + 2 * eps)
        t = self.c / lam
        x = (m / n1) / n1
        tau = xp.where(pos, xp.minimum(xp.maximum(x, 0.0), t), 0.0)
        step = tau[..., None] * self.b
        theta = w2 + step
        e_x = (
            (e_m / n1) / n1 * (1 + 4 * eps)
            + (d + 5) * eps * xp.minimum(xp.abs(x), t) * 1.01
            + xp.where(x > t * (1 - 2 * ur), ur * t, 0.0)
        )
        dtau = xp.where(pos, xp.minimum(e_x, t * (1 + 2 * eps)), 0.0)
        err = n * dtau + ur * (tau * n + safe_norm(theta, xp))
        if shift is not None:
            err = err + ur * safe_norm(w2, xp)
        return theta, step, err * (1 + 8 * eps)
