r"""Separable piecewise quadratics with an exact prox: Huber (smooth, convex, not strongly convex)
and the double well (smooth, weakly convex, not convex).

With :class:`moreau.AbsoluteValue` and :class:`moreau.Hinge` (nonsmooth, :mod:`moreau._nonsmooth`)
they let one assumption be dropped at a time.  Both are C¹ with a jump in the second derivative
(at :math:`|\theta_k - s_k| = \delta_k`, resp. :math:`a_k/2`); ``hess`` returns the Hessian
almost everywhere, with the inner piece's value on the breakpoints (an element of the Clarke
generalized Hessian).

References: Huber (1964), "Robust estimation of a location parameter", eq. (9); Parikh & Boyd
(2014) §6.5.2 (the Huber prox); the double well of analysis/pfedme/double_wells.py (pFedMe,
Assumption 1(b)).
"""

from __future__ import annotations

import math
from typing import Any

from ._backend import constructor_namespace, safe_norm
from ._nonsmooth import ExactProx, batch_of, centres, per_coordinate
from ._typing import Array

__all__ = ["DoubleWell", "Huber"]


class Huber(ExactProx):
    r"""Weighted Huber loss :math:`f(\theta) = \sum_k c_k\, h_{\delta_k}(\theta_k - s_k) + \tfrac{\mu}{2}\|\theta\|^2`,

    .. math:: h_\delta(z) = \begin{cases} z^2/(2\delta), & |z| \le \delta \\
              |z| - \delta/2, & |z| \ge \delta \end{cases}

    ``s`` ``(..., d)``; ``delta`` (δ > 0, the threshold) and ``c`` (>= 0) broadcast against it;
    ``mu`` (>= 0) a scalar or ``(...)``.  Curvature :math:`c_k/\delta_k` inside, 0 outside (a jump
    in :math:`f''`).  Prox, exact by cases (``z = w - s``, ``t = c/lam``):

    .. math:: \mathrm{prox}(w)_k - s_k = \begin{cases} z_k/(1 + c_k/(\lambda\delta_k)), & |z_k| \le \delta_k + t_k \\
              z_k - t_k\,\mathrm{sign}(z_k), & |z_k| \ge \delta_k + t_k \end{cases}

    (with μ > 0 applied at :math:`\lambda w/(\lambda+\mu)` and :math:`\lambda + \mu`).

    Constants: ``curvature_bounds() = (mu, mu + max_k c_k/delta_k)``, exact (the sup inside every
    threshold, the inf outside all): L-smooth and convex, strongly convex iff ``mu > 0``.

    Formula (sympy): prox_inside = s + (w - s)/(1 + c/(lam*delta))

    References: Huber (1964) eq. (9); Parikh & Boyd (2014) §6.5.2.
    """

    def __init__(self, s: Any, delta: Any, c: Any = 1.0, mu: Any = 0.0) -> None:
        xp = constructor_namespace(s=s, delta=delta, c=c, mu=mu)
        s = centres(s, xp)
        dtype = s.dtype
        delta, sh1 = per_coordinate(delta, xp, "delta", dtype, s.shape, positive=True)
        c, sh2 = per_coordinate(c, xp, "c", dtype, sh1, positive=False)
        mu = self._set_ridge(mu, xp, dtype)
        self.xp, self.dtype, self.dim = xp, dtype, sh2[-1]
        self.batch_shape = batch_of(sh2, mu)
        self.s, self.delta, self.c = s, delta, c
        top = float(xp.max(c / delta)) + float(xp.max(mu))
        if not math.isfinite(top):
            raise ValueError(
                f"c/delta overflows {dtype} (max c {float(xp.max(c)):.3g}, min delta "
                f"{float(xp.min(delta)):.3g}); rescale c and delta"
            )

    def value(self, theta: Array) -> Array:
        xp = self.xp
        theta = self._point(theta)
        z = xp.abs(theta - self.s)
        h = xp.where(z <= self.delta, z * z / (2 * self.delta), z - self.delta / 2)
        return xp.sum(self.c * h, axis=-1) + self._ridge_value(theta)

    def grad(self, theta: Array) -> Array:
        xp = self.xp
        theta = self._point(theta)
        z = theta - self.s
        g = xp.where(xp.abs(z) <= self.delta, z / self.delta, xp.sign(z))
        return self.c * g + self.mu[..., None] * theta

    def hess(self, theta: Array) -> Array:
        """Diagonal ``c_k/delta_k [|theta_k - s_k| <= delta_k] + mu``, shape ``(..., d, d)`` (a.e.)."""
        xp = self.xp
        theta = self._point(theta)
        inside = xp.abs(theta - self.s) <= self.delta
        dg = xp.where(inside, self.c / self.delta, 0.0) + self.mu[..., None]
        return dg[..., None] * xp.eye(self.dim, dtype=self.dtype)

    def third(self, theta: Array, v: Array) -> Array:
        """Zero almost everywhere (the second derivative is piecewise constant), shape ``(..., d, d)``."""
        xp = self.xp
        h = self.hess(theta)
        self._point(v, "v")
        return xp.zeros_like(h)

    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(mu, mu + max_k c_k/delta_k)``: exact."""
        xp = self.xp
        k = xp.broadcast_to(self.c / self.delta, self.batch_shape + (self.dim,))
        lo = xp.broadcast_to(self.mu, self.batch_shape)
        return lo, xp.max(k, axis=-1) + lo

    def _core(self, w: Array, lam: Array, shift: Array | None) -> tuple[Array, Array, Array]:
        r"""By cases.  Rounding per coordinate (``u = eps/2``): ``z = (w - s) - shift`` carries
        ``u(|z| + |w - s|)`` (the prox is 1-Lipschitz); the inner formula ``z/(1 + rho)``,
        ``rho = c/(lam delta)``, ``4u|v|`` (``|v|`` where ``lam delta`` is subnormal); the outer
        ``u t + u|v|``; the case test ``|z| <= delta + t`` is decided on a threshold off by at most
        ``2u(delta + t)``, and where ``|z|`` lies that close to it the two affine pieces differ by at
        most that distance; ``s + v`` adds ``u|theta|``."""
        xp = self.xp
        ur = float(xp.finfo(self.dtype).eps) / 2
        lam_ = lam[..., None]
        t = self.c / lam_
        p = lam_ * self.delta
        rho = xp.where(self.c > 0, self.c / p, 0.0)  # inf where lam delta underflows: v_in = 0
        ws = w - self.s
        z = ws if shift is None else ws - shift
        az = xp.abs(z)
        thr = self.delta + t
        inside = az <= thr
        sg = xp.sign(z)
        v = xp.where(inside, z / (1 + rho), z - sg * t)
        disp = -xp.where(inside, z / (1 + 1 / rho), sg * t)  # rho = 0: 1/rho = inf, no step
        theta = self.s + v
        near = xp.abs(az - thr) <= 4 * ur * thr
        err = ur * (
            az
            + xp.abs(ws)
            + 5 * xp.abs(v)
            + xp.abs(theta)
            + xp.where(inside, 0.0, t)
            + xp.where(near, 2 * thr, 0.0)
        )
        err = err + xp.where(p < float(xp.finfo(self.dtype).smallest_normal), xp.abs(v), 0.0)
        return theta, disp, safe_norm(err, xp) * (1 + (self.dim + 8) * ur)


class DoubleWell(ExactProx):
    r"""Separable double wells :math:`f(\theta) = \sum_k g_k(\theta_k - s_k) + \tfrac{\mu}{2}\|\theta\|^2`,

    .. math:: g_k(z) = \begin{cases} L_k a_k^2/4 - L_k z^2/2, & |z| \le a_k/2 \\
              \tfrac{L_k}{2}(|z| - a_k)^2, & |z| \ge a_k/2 \end{cases}

    (C¹, :math:`g_k'' = -L_k` on the middle piece and :math:`+L_k` outside; minima 0 at
    :math:`z = \pm a_k`, so bounded below).  ``s`` ``(..., d)``; ``a`` (> 0) and ``L`` (> 0)
    broadcast against it; ``mu`` (>= 0) a scalar or ``(...)``.  It is the weakly convex family of
    analysis/pfedme/double_wells.py (there one ``a``, ``L`` per instance), chosen over
    :math:`-\tfrac{\mu}{2}\|\theta\|^2 + c|\theta|` because it is smooth: it drops convexity and
    keeps L-smoothness.

    Weak convexity modulus :math:`\rho = \max_k L_k - \mu` (when positive; :meth:`weak_convexity`).
    The prox exists and is unique iff :math:`\lambda + \mu > \max_k L_k`; it is piecewise affine
    (``z = w - s``, :math:`\tau_k = a_k(\lambda - L_k)/(2\lambda)`):

    .. math:: \mathrm{prox}(w)_k - s_k = \begin{cases} \lambda z_k/(\lambda - L_k), & |z_k| \le \tau_k \\
              (\lambda z_k + L_k a_k\,\mathrm{sign}(z_k))/(\lambda + L_k), & |z_k| \ge \tau_k \end{cases}

    (with μ > 0 applied at :math:`\lambda w/(\lambda+\mu)` and :math:`\lambda + \mu`).

    Constants: ``curvature_bounds() = (mu - max_k L_k, mu + max_k L_k)``, exact: L-smooth,
    nonconvex unless ``mu >= max L``.

    Formula (sympy): prox_inside = s + lam*(w - s)/(lam - L)

    References: analysis/pfedme/double_wells.py (module docstring); pFedMe Assumption 1(b).
    """

    def __init__(self, s: Any, a: Any, L: Any, mu: Any = 0.0) -> None:
        xp = constructor_namespace(s=s, a=a, L=L, mu=mu)
        s = centres(s, xp)
        dtype = s.dtype
        a, sh1 = per_coordinate(a, xp, "a", dtype, s.shape, positive=True)
        L, sh2 = per_coordinate(L, xp, "L", dtype, sh1, positive=True)
        mu = self._set_ridge(mu, xp, dtype)
        self.xp, self.dtype, self.dim = xp, dtype, sh2[-1]
        self.batch_shape = batch_of(sh2, mu)
        self.s, self.a, self.L = s, a, L

    def value(self, theta: Array) -> Array:
        xp = self.xp
        theta = self._point(theta)
        z = xp.abs(theta - self.s)
        g = xp.where(
            z <= self.a / 2, self.L * (self.a * self.a / 4 - z * z / 2), self.L / 2 * (z - self.a) ** 2
        )
        return xp.sum(g, axis=-1) + self._ridge_value(theta)

    def grad(self, theta: Array) -> Array:
        xp = self.xp
        theta = self._point(theta)
        z = theta - self.s
        g = xp.where(xp.abs(z) <= self.a / 2, -self.L * z, self.L * (z - self.a * xp.sign(z)))
        return g + self.mu[..., None] * theta

    def hess(self, theta: Array) -> Array:
        """Diagonal ``-L_k`` where ``|theta_k - s_k| <= a_k/2``, ``+L_k`` elsewhere, plus ``mu`` (a.e.)."""
        xp = self.xp
        theta = self._point(theta)
        dg = xp.where(xp.abs(theta - self.s) <= self.a / 2, -self.L, self.L) + self.mu[..., None]
        return dg[..., None] * xp.eye(self.dim, dtype=self.dtype)

    def third(self, theta: Array, v: Array) -> Array:
        """Zero almost everywhere, shape ``(..., d, d)``."""
        h = self.hess(theta)
        self._point(v, "v")
        return self.xp.zeros_like(h)

    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(mu - max L, mu + max L)``: exact."""
        xp = self.xp
        top = xp.max(xp.broadcast_to(self.L, self.batch_shape + (self.dim,)), axis=-1)
        mu = xp.broadcast_to(self.mu, self.batch_shape)
        return mu - top, mu + top

    def _kappa(self, lam: Array) -> Array:
        """``lam/(lam - L_k)``: the largest slope of the prox, per coordinate."""
        return lam[..., None] / (lam[..., None] - self.L)

    def _core(self, w: Array, lam: Array, shift: Array | None) -> tuple[Array, Array, Array]:
        r"""Piecewise affine.  Rounding per coordinate (``u = eps/2``, ``k = lam/(lam - L)``, the
        prox's Lipschitz constant): ``z = (w - s) - shift`` carries ``u(|z| + |w - s|)`` (moved by
        ``k``); the inner formula ``3u|v|``, the outer ``4u|v|`` (its two terms share a sign);
        ``tau`` is ``3u`` relative, and where ``|z|`` lies that close to it the pieces differ by at
        most ``k`` times the distance (``3k u tau``); ``s + v`` adds ``u|theta|``."""
        xp = self.xp
        ur = float(xp.finfo(self.dtype).eps) / 2
        lam_ = lam[..., None]
        dl = lam_ - self.L
        kap = lam_ / dl
        tau = self.a * (dl / lam_) / 2
        ws = w - self.s
        z = ws if shift is None else ws - shift
        az = xp.abs(z)
        inside = az <= tau
        sg = xp.sign(z)
        out = lam_ + self.L
        v = xp.where(inside, kap * z, (lam_ * z + self.L * self.a * sg) / out)
        disp = xp.where(inside, (self.L / dl) * z, self.L * (self.a * sg - z) / out)
        theta = self.s + v
        near = xp.abs(az - tau) <= 4 * ur * tau
        err = ur * (
            kap * (az + xp.abs(ws)) + 4 * xp.abs(v) + xp.abs(theta) + xp.where(near, 3 * kap * tau, 0.0)
        )
        return theta, disp, safe_norm(err, xp) * (1 + (self.dim + 16) * ur)
