r"""The objective protocol shared by every model, envelope and meta-objective.

Shapes: an objective has a batch shape ``(...)`` (clients, trials) and a
dimension ``d``.  Points ``theta`` have shape ``(..., d)`` and broadcast
against the batch shape; ``value`` returns ``(...)``, ``grad`` ``(..., d)``,
``hess`` ``(..., d, d)``.  Computations run in the objective's dtype and
namespace; array inputs from another library are a ``TypeError``.

A new objective subclasses :class:`Objective` and implements ``value``,
``grad``, ``hess`` and ``curvature_bounds``; it then gets a certified prox
(damped Newton), a Moreau envelope and a Per-FedAvg meta-objective for free.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._backend import as_array, to_numpy
from ._proxinfo import ProxInfo
from ._typing import Array, DType, Namespace

__all__ = ["Objective", "ProxInfo"]


class Objective:
    """Base class: a batch of twice-differentiable functions of ``theta``.

    Subclasses set ``xp`` (array namespace), ``dtype``, ``dim`` and
    ``batch_shape`` and implement ``value``, ``grad``, ``hess`` and
    ``curvature_bounds``.
    """

    xp: Namespace = None
    dtype: DType = None
    dim: int = 0
    batch_shape: tuple[int, ...] = ()

    # -- to implement ---------------------------------------------------------
    def value(self, theta: Array) -> Array:
        """f(theta), shape ``(...)``."""
        raise NotImplementedError

    def grad(self, theta: Array) -> Array:
        """Gradient, shape ``(..., d)``."""
        raise NotImplementedError

    def hess(self, theta: Array) -> Array:
        """Hessian, shape ``(..., d, d)``."""
        raise NotImplementedError

    def curvature_bounds(self) -> tuple[Array, Array]:
        r"""``(lo, hi)``, arrays of the batch shape, with
        ``lo I <= hess(theta) <= hi I`` for every theta.

        They are exact (the inf and sup of the Hessian spectrum over all
        theta) where the subclass says so.
        """
        raise NotImplementedError

    def _spectrum(self) -> Array | None:
        """Exact Hessian eigenvalues ``(..., d)`` if the Hessian is constant, else None."""
        return None

    # -- derived ----------------------------------------------------------------
    def hvp(self, theta: Array, v: Array) -> Array:
        """Hessian-vector product ``hess(theta) @ v``, shape ``(..., d)``."""
        v = self._point(v, "v")
        return (self.hess(theta) @ v[..., None])[..., 0]

    def third(self, theta: Array, v: Array) -> Array:
        r"""Directional third derivative ``D^3 f(theta)[v]``, shape ``(..., d, d)``.

        Needed only for the exact Hessian of a meta-objective.
        """
        raise TypeError(f"{type(self).__name__} does not provide third derivatives")

    def smoothness(self) -> Array:
        """Lipschitz constant of the gradient: ``max(|lo|, |hi|)``."""
        lo, hi = self.curvature_bounds()
        return self.xp.maximum(self.xp.abs(lo), self.xp.abs(hi))

    def _smoothness_bound(self) -> Array:
        """A valid upper bound on ``||hess f(theta)||`` for every theta (Newton's
        bookkeeping: may be cheaper and looser than :meth:`smoothness`)."""
        return self.smoothness()

    def strong_convexity(self) -> Array:
        """Largest ``mu`` with ``f - mu/2 ||.||^2`` convex (``lo``).

        Negative means nonconvex and ``(-mu)``-weakly convex.
        """
        return self.curvature_bounds()[0]

    def _certified_curvature(self) -> Array:
        """A lower bound on the curvature that certificates may divide by: ``strong_convexity()``
        where that is exact or a valid bound (samples losses: ``mu``); objectives whose constant
        is a computed eigenvalue override it with a proven bound (Quadratic)."""
        return self.strong_convexity()

    def prox(
        self,
        w: Array,
        lam: Array | float,
        *,
        tol: Array | float | None = None,
        max_iter: int = 100,
        return_info: bool = False,
    ) -> Array | tuple[Array, ProxInfo]:
        r"""``argmin_theta f(theta) + (lam/2) ||theta - w||^2``; see :func:`moreau.prox`."""
        from ._newton import check_max_iter

        check_max_iter(max_iter)
        w = self._point(w, "w")
        lam = self._lam(lam)
        theta, _, info = self._solve(w, lam, tol=tol, max_iter=max_iter, info=return_info, want_u=False)
        return (theta, info) if return_info else theta

    # -- hooks --------------------------------------------------------------
    def _solve(
        self,
        w: Array,
        lam: Array,
        *,
        tol: Array | float | None = None,
        max_iter: int = 100,
        info: bool = False,
        want_u: bool = True,
    ) -> tuple[Array, Array | None, ProxInfo | None]:
        """``(prox(w), prox(w) - w, ProxInfo or None)``; default: certified damped Newton.

        ``want_u=False`` lets closed forms skip the displacement (then ``None``).

        Both the prox and the displacement ``u = prox(w) - w`` are returned,
        each computed without the rounding of forming it from the other: ``u``
        keeps envelope gradients ``-lam u`` accurate when ``lam`` is large and
        ``u`` tiny; the prox keeps its own ulps when it is much smaller than ``w``.
        """
        from ._newton import newton_prox

        return newton_prox(self, w, lam, tol=tol, max_iter=max_iter, info=info)

    def _value_grad(self, theta: Array) -> tuple[Array, Array]:
        """``(value, grad)``; objectives that share work between them override it."""
        return self.value(theta), self.grad(theta)

    def _hess_scale(
        self, theta: Array, *, hess: bool = True, scale: bool = True
    ) -> tuple[Array | None, Array | None]:
        """``(hess or None, _grad_rounding or None)`` at one point (overridable to share work)."""
        return (self.hess(theta) if hess else None), (self._grad_rounding(theta) if scale else None)

    def _eval(self, theta: Array) -> tuple[Array, Array, Array, Any]:
        """``(value, grad, _grad_rounding, state)`` at one point; ``state`` (an array
        whose leading axes are the batch axes, or None) is handed to
        :meth:`_hess_at` at the same point so that objectives can share work."""
        v, g = self._value_grad(theta)
        return v, g, self._grad_rounding(theta), None

    def _hess_at(self, theta: Array, state: Any) -> Array:
        """``hess(theta)`` given the ``state`` :meth:`_eval` returned there."""
        return self.hess(theta)

    def _grad_rounding(self, theta: Array) -> Array:
        r"""An upper bound on ``||fl(grad f(theta)) - grad f(theta)||``, shape ``(...)``.

        The built-in objectives derive a rigorous a-priori bound (Higham's
        :math:`\gamma_k = k u/(1 - k u)` for each sum of ``k`` terms).  This
        default is a *model* for objectives that do not override it:
        ``(d + 8) eps`` times ``_grad_error_scale`` (the magnitude of the terms
        summed) plus ``L ||theta||`` (the gradient's change under the rounding
        of theta itself); the certificate of a custom objective is rigorous
        only as far as this model is.
        """
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        return (
            (self.dim + 8)
            * eps
            * (self._grad_error_scale(theta) + self.smoothness() * xp.linalg.vector_norm(theta, axis=-1))
        )

    def _local_curvature(self, theta: Array, state: Any) -> tuple[Array, ...] | None:
        """``(err, rho)``, rigorous: ``lambda_min`` of the exact Hessian at ``theta`` is at
        least the smallest eigenvalue ``eigvalsh`` computes for ``_hess_at(theta, state)``
        minus ``err``, and ``rho`` is a Lipschitz constant of the Hessian (``state``: what
        :meth:`_eval` returned at ``theta``); ``None`` where the objective provides none
        (then only the global modulus ``lam + mu`` certifies the prox)."""
        return None

    def _take(self, idx: Array, shape: tuple[int, ...]) -> Objective | None:
        """A copy for Newton holding only the batch entries ``idx`` (flat indices into
        the batch ``shape`` it broadcasts against), batch shape ``(len(idx),)``, on which
        :meth:`_eval`, :meth:`_hess_at`, :meth:`_local_curvature` and
        :meth:`_grad_error_scale` give what they give on those entries of ``self``; ``None``
        where the objective cannot (then converged entries stay in Newton's batch)."""
        return None

    def _grad_error_scale(self, theta: Array) -> Array:
        """Magnitude of the terms summed in ``grad(theta)`` (its rounding scale)."""
        return self.xp.linalg.vector_norm(self.grad(theta), axis=-1)

    # -- validation -------------------------------------------------------------
    def _point(self, theta: Any, name: str = "theta") -> Array:
        xp = self.xp
        theta = as_array(theta, xp, name, dtype=self.dtype)
        if theta.ndim == 0 or theta.shape[-1] != self.dim:
            raise ValueError(
                f"{name} must have shape (..., d) with d={self.dim} (got shape {tuple(theta.shape)})"
            )
        _broadcast(self.batch_shape, tuple(theta.shape[:-1]), name)
        return theta

    def _lam(self, lam: Any, name: str = "lam", convexity: bool = True) -> Array:
        """``lam`` validated: positive normal numbers broadcasting with the batch and, with
        ``convexity``, above the nonconvex threshold ``-strong_convexity()``."""
        xp = self.xp
        if isinstance(lam, (bool, np.bool_)) or getattr(getattr(lam, "dtype", None), "kind", "") == "b":
            raise ValueError(f"{name} must be a number, not a bool (got {lam!r})")
        lam = (
            as_array(lam, xp, name, dtype=self.dtype)
            if not isinstance(lam, float | int)
            else _scalar(lam, xp, self.dtype, name)
        )
        if lam.size == 0:  # an empty batch is a slip (a sliced sweep), never a meaningful prox
            raise ValueError(f"{name} must not be empty (got shape {tuple(lam.shape)})")
        if not bool(xp.all(lam > 0)):
            bad = to_numpy(lam).reshape(-1)
            raise ValueError(f"{name} must be > 0 (got {float(bad[bad <= 0][0]):g})")
        fi = xp.finfo(self.dtype)
        if not bool(xp.all((lam >= fi.smallest_normal) & xp.isfinite(lam))):
            raise ValueError(
                f"{name} must lie in [{float(fi.smallest_normal):.3g}, {float(fi.max):.3g}] "
                f"(normal {self.dtype} numbers: 1/lam and the certificate must not overflow); "
                f"got min {float(xp.min(lam)):.3g}, max {float(xp.max(lam)):.3g}"
            )
        _broadcast(self.batch_shape, tuple(lam.shape), name)
        if not convexity:
            return lam
        lo = self.strong_convexity()
        if not bool(xp.all((lam + lo) > 0)):
            lam_h, lo_h = np.broadcast_arrays(to_numpy(lam), to_numpy(lo))
            i = tuple(int(k) for k in np.argwhere(lam_h + lo_h <= 0)[0])
            raise ValueError(
                f"prox of this {type(self).__name__} needs lam > {-lo_h[i]:.6g} "
                f"(= minus its curvature lower bound: it is nonconvex) at batch "
                f"index {i}; got lam={lam_h[i]:.6g}"
            )
        with np.errstate(over="ignore"):
            modulus = lam + lo
        if not bool(xp.all(xp.isfinite(modulus))):  # the certificates divide by it: never inf
            lam_h, lo_h = np.broadcast_arrays(to_numpy(lam), to_numpy(lo))
            i = tuple(int(k) for k in np.argwhere(~np.isfinite(lam_h + lo_h))[0])
            raise ValueError(
                f"{name}={lam_h[i]:.3g} plus the curvature lower bound {lo_h[i]:.3g} of this "
                f"{type(self).__name__} overflows {self.dtype} at batch index {i} (the prox's "
                "modulus lam + mu must be finite); lower lam or rescale the objective"
            )
        return lam


def _scalar(v: float, xp: Namespace, dtype: DType, name: str) -> Array:
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{name} must be a number, not a bool (got {v!r})")
    try:
        finite = not isinstance(v, bool) and math.isfinite(v)
    except OverflowError:  # an int beyond the float range
        finite = False
    if not finite:
        shown = f"{v!r}" if len(repr(v)) < 30 else f"an integer of {len(str(abs(v)))} digits"
        raise ValueError(f"{name} must be a finite number (got {shown})")
    return xp.asarray(v, dtype=dtype)


def _broadcast(batch: tuple[int, ...], shape: tuple[int, ...], name: str) -> None:
    # broadcasting aligns the trailing axes; the longer shape's extra leading axes broadcast freely
    for a, b in zip(reversed(batch), reversed(shape), strict=False):
        if a != b and 1 not in (a, b):
            raise ValueError(
                f"{name} batch shape {shape} does not broadcast with the objective's batch shape {batch}"
            )
