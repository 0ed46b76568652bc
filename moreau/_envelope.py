r"""Prox, Moreau envelopes and Per-FedAvg meta-objectives of any objective."""

from __future__ import annotations

import numpy as np

from ._backend import as_array, safe_norm, to_numpy
from ._objective import Objective, ProxInfo
from ._typing import Array, Namespace

__all__ = ["prox", "envelope", "meta_objective", "Envelope", "MetaObjective"]


def prox(
    f: Objective,
    w: Array,
    lam: Array | float,
    *,
    tol: Array | float | None = None,
    max_iter: int = 100,
    return_info: bool = False,
) -> Array | tuple[Array, ProxInfo]:
    r"""Proximal operator of ``f`` with parameter λ:
    :math:`\mathrm{prox}_{f/\lambda}(w) = \arg\min_\theta f(\theta) + \tfrac{\lambda}{2}\|\theta - w\|^2`.

    ``f`` is an :class:`~moreau.Objective` with batch shape ``(...)``; ``w``
    has shape ``(..., d)`` and ``lam`` (λ, > 0, and > ``-f.strong_convexity()``
    for a nonconvex ``f``) is a scalar or an array; both broadcast against the
    batch shape.  A λ-sweep over ``m`` clients is one call: ``lam`` of shape
    ``(L, 1)`` gives a result of shape ``(L, m, d)``.

    Quadratics use their closed form; other objectives a batched Newton
    that stops when a rigorous bound on ``||theta - prox(w)||`` for the
    returned floating-point theta (the residual ``||grad h(theta)||`` plus
    an a-priori bound on its rounding and on the rounding of forming theta,
    over ``lam + mu`` or a local-curvature radius) is at most ``tol``
    (default tolerance, derivation and assumptions: ``moreau._newton``).
    With ``return_info=True`` returns ``(theta, ProxInfo)`` carrying
    iterations and that bound per entry.  Raises
    :class:`~moreau.ProxConvergenceError` when some entries cannot be
    certified (``tol`` below the rounding floor, the ``max_iter`` cap, a
    stalled line search, or a default level above ``sqrt(eps)`` relative):
    it names them and carries the whole partial result; ``ValueError`` when
    ``lam`` is too close to a quadratic's nonconvex threshold to certify that
    the prox exists.

    References: pFedMe eq. (4) (with λ as the papers write it); docs/catalogue.md, "Conventions".
    """
    if not isinstance(f, Objective):
        raise TypeError(f"f must be a moreau Objective (got {type(f).__name__})")
    return f.prox(w, lam, tol=tol, max_iter=max_iter, return_info=return_info)


def envelope(
    f: Objective, lam: Array | float, *, tol: Array | float | None = None, max_iter: int = 100
) -> Envelope:
    r"""Moreau envelope :math:`F(w) = \min_\theta f(\theta) + \tfrac{\lambda}{2}\|\theta - w\|^2`, an objective.

    ``lam`` (λ) broadcasts against ``f``'s batch shape; ``tol`` and
    ``max_iter`` are passed to every inner prox.  See :class:`Envelope`.
    """
    if not isinstance(f, Objective):
        raise TypeError(f"f must be a moreau Objective (got {type(f).__name__})")
    return Envelope(f, lam, tol=tol, max_iter=max_iter)


def meta_objective(f: Objective, alpha: Array | float) -> MetaObjective:
    r"""Per-FedAvg objective :math:`F(w) = f(w - \alpha \nabla f(w))`, an objective.

    See :class:`MetaObjective`.
    """
    if not isinstance(f, Objective):
        raise TypeError(f"f must be a moreau Objective (got {type(f).__name__})")
    return MetaObjective(f, alpha)


class Envelope(Objective):
    r"""The Moreau envelope of ``f`` with parameter λ (``lam``):

    .. math::
        F(w) = f(\hat\theta) + \tfrac{\lambda}{2}\|\hat\theta - w\|^2,\quad
        \nabla F(w) = \lambda (w - \hat\theta),\quad
        \nabla^2 F(w) = \lambda\, (\nabla^2 f(\hat\theta) + \lambda I)^{-1}\nabla^2 f(\hat\theta),

    :math:`\hat\theta = \mathrm{prox}_{f/\lambda}(w)`.  The Hessian equals
    :math:`\lambda I - \lambda^2(\nabla^2 f(\hat\theta) + \lambda I)^{-1}` (implicit
    function theorem); the product form is evaluated because it has no
    cancellation when λ is large.  A Hessian eigenvalue ``a`` of ``f``
    becomes ``lam*a/(lam + a)``, an increasing map, so curvature bounds
    ``(lo, hi)`` of ``f`` map to exact bounds of ``F`` (exact for
    quadratics; for logistic ``(λμ/(λ+μ), λL/(λ+L))``).

    Formula (sympy): envelope_curvature = lam*a/(lam + a)

    Envelopes nest exactly: the prox of ``F`` with parameter γ is
    ``(λ θ* + γ w)/(λ + γ)`` with ``θ* = prox_f(w, λγ/(λ+γ))``, because the
    infimal convolution of ``(λ/2)||.||^2`` and ``(γ/2)||.||^2`` is
    ``(λγ/(λ+γ)/2)||.||^2``; so ``envelope(envelope(f, lam), gamma)`` (the
    multi-tier objective of PerMFL, thesis eq. (4.3)) is computed with one
    inner prox per point.

    References: pFedMe eq. (4) and Proposition 1; FedProx analysis Lemmas 2-3.
    """

    def __init__(
        self, f: Objective, lam: Array | float, *, tol: Array | float | None = None, max_iter: int = 100
    ) -> None:
        lam = f._lam(lam)
        self.f, self.lam, self.tol, self.max_iter = f, lam, tol, max_iter
        self.xp, self.dtype, self.dim = f.xp, f.dtype, f.dim
        self.batch_shape = tuple(np.broadcast_shapes(f.batch_shape, tuple(lam.shape)))

    def _inner(self, w: Array) -> tuple[Array, Array]:
        """``(prox_f(w), prox_f(w) - w)``."""
        w = self._point(w)
        return self.f._solve(w, self.lam, tol=self.tol, max_iter=self.max_iter)[:2]

    def value(self, w: Array) -> Array:
        theta, u = self._inner(w)
        return self.f.value(theta) + self.lam / 2 * self.xp.vecdot(u, u)

    def grad(self, w: Array) -> Array:
        return -self.lam[..., None] * self._inner(w)[1]

    def _hess_parts(self, w: Array) -> tuple[Array, Array, Array]:
        theta, _ = self._inner(w)
        H = self.f.hess(theta)
        lam = self.lam[..., None, None]
        return H, H + lam * self.xp.eye(self.dim, dtype=self.dtype), lam

    def hess(self, w: Array) -> Array:
        xp = self.xp
        H, M, lam = self._hess_parts(w)
        out = lam * xp.linalg.solve(M, H)
        return (out + xp.matrix_transpose(out)) / 2

    def hvp(self, w: Array, v: Array) -> Array:
        H, M, lam = self._hess_parts(w)
        v = self._point(v, "v")
        return lam[..., 0] * self.xp.linalg.solve(M, (H @ v[..., None]))[..., 0]

    def _map(self, a: Array, lam: Array) -> Array:
        """The envelope's curvature lam a/(lam + a) of a curvature a of f; an infinite a (f not
        differentiable there: AbsoluteValue, Hinge) gives its limit lam, not inf/inf."""
        xp = self.xp
        fin = xp.isfinite(a)
        a0 = xp.where(fin, a, xp.zeros_like(a))
        return xp.where(fin, lam * a0 / (lam + a0), lam + 0 * a0)

    def _spectrum(self) -> Array | None:
        s = self.f._spectrum()
        return None if s is None else self._map(s, self.lam[..., None])

    def curvature_bounds(self) -> tuple[Array, Array]:
        lo, hi = self.f.curvature_bounds()
        xp = self.xp
        return (
            xp.broadcast_to(self._map(lo, self.lam), self.batch_shape),
            xp.broadcast_to(self._map(hi, self.lam), self.batch_shape),
        )

    def _solve(
        self,
        w: Array,
        gamma: Array,
        *,
        tol: Array | float | None = None,
        max_iter: int = 100,
        info: bool = False,
        want_u: bool = True,
    ) -> tuple[Array, Array, ProxInfo | None]:
        lam = self.lam
        inner = lam * gamma / (lam + gamma)
        theta, u, inf = self.f._solve(
            w, inner, tol=tol if tol is not None else self.tol, max_iter=max_iter, info=info
        )
        scale = lam / (lam + gamma)
        u_in, theta_in = u, theta
        u = scale[..., None] * u
        theta = (lam[..., None] * theta + gamma[..., None] * w) / (lam + gamma)[..., None]
        if inf is not None:
            inf = self._certificate(inf, scale, inner, theta_in, u_in, w, gamma)
        return theta, u, inf

    def _certificate(
        self,
        inf: ProxInfo,
        scale: Array,
        inner: Array,
        theta_in: Array,
        u_in: Array,
        w: Array,
        gamma: Array,
    ) -> ProxInfo:
        r"""The inner bound carried to ``theta = (lam theta* + gamma w)/(lam + gamma)``:
        ``s (b + 3u ||u*|| inner/(inner + mu))(1 + 4u) + 6u (lam ||theta*|| + gamma ||w||)/(lam + gamma)``,
        ``s = lam/(lam + gamma)``, ``u`` the unit roundoff: the inner parameter
        ``lam gamma/(lam + gamma)`` is rounded (relative ``3u``; the prox moves by at most
        ``|d inner| ||u*|| / (inner + mu)``) and forming theta costs five roundings."""
        xp = self.xp
        ur = float(xp.finfo(self.dtype).eps) / 2
        h = [
            np.asarray(to_numpy(v), dtype=float)
            for v in (scale, inner, inner + self.f._certified_curvature(), self.lam, gamma)
        ]
        s, inn, mod, lam, gam = np.broadcast_arrays(*h)
        norm = [np.asarray(to_numpy(safe_norm(v, xp)), dtype=float) for v in (u_in, theta_in, w)]
        un, tn, wn = np.broadcast_arrays(*norm, s)[:3]
        b = np.broadcast_to(inf.error_bound, s.shape)
        extra = 6 * ur * (lam * tn + gam * wn) / (lam + gam)
        bound = s * (b + 3 * ur * un * inn / mod) * (1 + 4 * ur) + extra
        tol = None if inf.tol is None else np.broadcast_to(inf.tol, s.shape) * s + (bound - s * b)
        return ProxInfo(iterations=inf.iterations, error_bound=bound, tol=tol)


class MetaObjective(Objective):
    r"""Per-FedAvg's objective :math:`F(w) = f(w - \alpha\nabla f(w))` (Per-FedAvg eq. (3)), α = ``alpha`` >= 0.

    .. math::
        \nabla F(w) = (I - \alpha\nabla^2 f(w))\,\nabla f(v),\quad v = w - \alpha\nabla f(w),

        \nabla^2 F(w) = (I - \alpha\nabla^2 f(w))\,\nabla^2 f(v)\,(I - \alpha\nabla^2 f(w))
                        - \alpha\, D^3 f(w)[\nabla f(v)],

    exact for quadratics (no third derivative) and logistic (its
    :meth:`~moreau.Logistic.third`).  On a quadratic a Hessian eigenvalue
    ``a`` of ``f`` becomes ``a*(1 - alpha*a)**2``: curvature bounds are exact
    there.  For other ``f`` no exact bound is known (Per-FedAvg Lemma 4.2
    gives ``4L + alpha*rho*B``, which the analysis checks):
    ``curvature_bounds`` raises ``TypeError``.

    Formula (sympy): meta_curvature = a*(1 - alpha*a)**2

    References: Per-FedAvg eq. (3), eq. (5), Lemma 4.2.
    """

    def __init__(self, f: Objective, alpha: Array | float) -> None:
        xp = f.xp
        alpha = (
            as_array(alpha, xp, "alpha", dtype=f.dtype)
            if not isinstance(alpha, float | int)
            else xp.asarray(float(alpha), dtype=f.dtype)
        )
        if not bool(xp.all(xp.isfinite(alpha))) or not bool(xp.all(alpha >= 0)):
            bad = np.asarray(to_numpy(alpha)).reshape(-1)
            bad = bad[~(np.isfinite(bad) & (bad >= 0))]
            raise ValueError(f"alpha must be finite and >= 0 (got {float(bad[0]):g})")
        self.f, self.alpha = f, alpha
        self.xp, self.dtype, self.dim = xp, f.dtype, f.dim
        self.batch_shape = tuple(np.broadcast_shapes(f.batch_shape, tuple(alpha.shape)))

    def _v(self, w: Array) -> tuple[Array, Array]:
        w = self._point(w)
        return w, w - self.alpha[..., None] * self.f.grad(w)

    def value(self, w: Array) -> Array:
        return self.f.value(self._v(w)[1])

    def grad(self, w: Array) -> Array:
        w, v = self._v(w)
        gv = self.f.grad(v)
        return gv - self.alpha[..., None] * self.f.hvp(w, gv)

    def hess(self, w: Array) -> Array:
        xp = self.xp
        w, v = self._v(w)
        gv = self.f.grad(v)
        a = self.alpha[..., None, None]
        J = xp.eye(self.dim, dtype=self.dtype) - a * self.f.hess(w)
        out = J @ self.f.hess(v) @ J - a * self.f.third(w, gv)
        return (out + xp.matrix_transpose(out)) / 2

    def _spectrum(self) -> Array | None:
        s = self.f._spectrum()
        if s is None:
            return None
        a = self.alpha[..., None]
        return self.xp.sort(s * _one_minus_product(self.xp, a, s) ** 2, axis=-1)

    def curvature_bounds(self) -> tuple[Array, Array]:
        s = self._spectrum()
        if s is None:
            raise TypeError(
                f"exact curvature bounds of a meta-objective are known only for quadratics "
                f"(got a meta-objective of {type(self.f).__name__})"
            )
        xp = self.xp
        return xp.broadcast_to(s[..., 0], self.batch_shape), xp.broadcast_to(s[..., -1], self.batch_shape)


def _one_minus_product(xp: Namespace, a: Array, b: Array) -> Array:
    r"""``1 - a*b`` without the rounding of the product: ``a*b = p + e`` exactly
    (Dekker's two-product with Veltkamp splitting), then ``(1 - p) - e``, where
    ``1 - p`` is exact near ``a*b = 1`` (Sterbenz).  The meta-objective's
    eigenvalue ``a (1 - alpha a)^2`` vanishes at ``alpha a = 1``; the plain
    formula loses the rounding of ``alpha a`` relative to ``1 - alpha a``.
    """
    dt = xp.result_type(a, b)
    split = 134217729.0 if dt == xp.float64 else 4097.0  # 2^27 + 1 or 2^12 + 1

    def parts(x: Array) -> tuple[Array, Array]:
        t = split * x
        hi = t - (t - x)
        return hi, x - hi

    p = a * b
    ah, al = parts(a)
    bh, bl = parts(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    e = xp.where(xp.isfinite(e), e, xp.zeros_like(e))  # split overflow near the float range: plain product
    return (1 - p) - e
