r"""Compact convex sets with an exact, batched linear minimisation oracle (LMO), for Frank–Wolfe.

A set :math:`\mathcal D \subset \mathbb R^d` answers

.. math:: \mathrm{lmo}(g) \in \arg\min_{u\in\mathcal D}\ \langle g, u\rangle, \qquad
          \mathrm{gap}(x, g) = \langle g, x - \mathrm{lmo}(g)\rangle
          = \max_{u\in\mathcal D}\langle g, x - u\rangle,

the second the Frank–Wolfe gap (thesis eq. (2.6) with :math:`g = \nabla F(x)`); for convex F
and :math:`x \in \mathcal D`, :math:`F(x) - F^* \le \mathrm{gap}(x, \nabla F(x))`.

* :class:`Box` ``[lo, hi]``: :math:`u_k = lo_k` where :math:`g_k > 0`, else :math:`hi_k`; diameter
  :math:`\|hi - lo\|`.
* :class:`L1Ball` :math:`\|u\|_1 \le r`: the signed vertex :math:`-r\,\mathrm{sign}(g_k)e_k`,
  :math:`k = \arg\max_k |g_k|` (the first on ties; 0 at g = 0); one non-zero; diameter 2r.
* :class:`L2Ball` :math:`\|u\|_2 \le r`: :math:`-r g/\|g\|` (0 at g = 0); diameter 2r.
* :class:`Simplex` :math:`\{u \ge 0, \sum_k u_k = r\}`: :math:`r e_k`, :math:`k = \arg\min_k g_k`
  (the first on ties); one non-zero; diameter :math:`\sqrt2 r` (0 for d = 1).

Shapes: the parameters (``r`` ``(*trials,)``, ``lo, hi`` ``(*trials, d)`` or ``(d,)``) broadcast
against the *trial* shape; ``g, x`` are ``(*trials, d)``, or ``(*trials, m, d)`` with
``clients=True`` (the parameters then get a client axis: every client shares the set, as in
problem (4.4)).  The math runs in ``g``'s array namespace without branches on values.

References: Dadras thesis, §2.3 (FW, eq. (2.6)) and §4.3 (eq. (4.5)); the oracles are the
standard ones (Jaggi 2013, Table 1), also in ``moreau.analysis.thesis.fw.sets``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from array_api_compat import array_namespace

from .._backend import safe_norm
from .._typing import Array, DType, Namespace

__all__ = ["ConvexSet", "Box", "L1Ball", "L2Ball", "Simplex"]


def _radius(r: Any, name: str = "r") -> np.ndarray:
    if isinstance(r, bool) or r is None:
        raise TypeError(f"{name} must be a real number or array (got {r!r})")
    a = np.asarray(r, dtype=float)
    if a.dtype == object or not np.all(np.isfinite(a)) or np.any(a <= 0):
        bad = a[~(np.isfinite(a) & (a > 0))].ravel()[0] if a.size else a
        raise ValueError(f"{name} must be finite and > 0 (got {bad!r})")
    return a


class ConvexSet:
    """Base class: a compact convex set with an exact LMO (see the module docstring)."""

    sparse_vertices: bool = False  #: every LMO output has at most one non-zero (l1 ball, simplex)

    def _param(self, a: Any, xp: Namespace, dtype: DType, clients: bool, vector: bool) -> Array:
        """A parameter in ``xp``: bounds ``(*trials, d)`` -> ``(*trials, 1, d)`` with ``clients``; a
        radius ``(*trials,)`` -> ``(*trials, 1)`` with ``clients`` (against the points' shape without d)."""
        a = xp.asarray(a, dtype=dtype)
        if vector:
            return a[..., None, :] if clients and a.ndim > 1 else a
        return a[..., None] if clients and a.ndim else a

    @staticmethod
    def _vec(r: Array) -> Array:
        """A radius against points ``(..., d)``: a trailing axis unless it is 0-d."""
        return r[..., None] if r.ndim else r

    def lmo(self, g: Array, *, clients: bool = False) -> Array:
        r"""A minimiser of :math:`\langle g, u\rangle` over the set, shape of ``g`` (``(..., d)``)."""
        return self.oracle(array_namespace(g), g.dtype, clients=clients)(g)

    def oracle(self, xp: Namespace, dtype: DType, *, clients: bool = False) -> Callable[[Array], Array]:
        """The LMO as a function ``g -> s`` with the set's parameters moved to ``xp`` once (an
        algorithm calls it every round)."""
        raise NotImplementedError

    def diameter(self) -> np.ndarray:
        r"""The exact diameter :math:`\max_{x,y\in\mathcal D}\|x - y\|` (host numpy, trial shape)."""
        raise NotImplementedError

    def center(self, d: int) -> np.ndarray:
        """A point of the set (host numpy ``(*trials, d)`` or ``(d,)``): the start default of FedFW."""
        raise NotImplementedError

    def contains(self, x: Array, *, clients: bool = False, rtol: float = 1e-12) -> Array:
        """``x ∈ D`` (to ``rtol`` of the set's scale), shape of ``x`` without its last axis."""
        raise NotImplementedError

    def excess(self, x: np.ndarray) -> np.ndarray:
        """How far the host point ``x`` ``(*trials, d)`` lies outside the set, in the set's own
        measure (:attr:`measure`; 0 inside), shape ``(*trials,)`` (float64)."""
        raise NotImplementedError

    #: what :meth:`excess` measures, for messages
    measure: str = ""

    def describe(self) -> str:
        """The set in one short phrase, for messages (``L1Ball(r=1)``)."""
        raise NotImplementedError

    def gap(self, x: Array, g: Array, *, clients: bool = False) -> Array:
        r"""The Frank–Wolfe gap :math:`\max_{u\in\mathcal D}\langle g, x - u\rangle`, ``(...)``."""
        xp = array_namespace(x, g)
        return xp.sum(g * (x - self.lmo(g, clients=clients)), axis=-1)


@dataclass(frozen=True, eq=False)
class Box(ConvexSet):
    r"""The box :math:`[lo, hi] = \{u: lo_k \le u_k \le hi_k\}` (``lo <= hi`` elementwise)."""

    # array-likes (*trials, d) or (d,), stored as host float arrays by __post_init__
    lo: Any
    hi: Any

    def __post_init__(self) -> None:
        lo, hi = np.asarray(self.lo, dtype=float), np.asarray(self.hi, dtype=float)
        if lo.ndim < 1 or hi.ndim < 1:
            raise ValueError(f"lo and hi must have shape (..., d) (got shapes {lo.shape} and {hi.shape})")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError("lo and hi must be finite (a box is compact)")
        try:
            lo, hi = np.broadcast_arrays(lo, hi)
        except ValueError:
            raise ValueError(
                f"lo and hi must broadcast (got shapes {np.shape(self.lo)} and {np.shape(self.hi)})"
            ) from None
        if np.any(lo > hi):
            k = np.argwhere(lo > hi)[0]
            raise ValueError(
                f"lo must be <= hi elementwise (got lo = {lo[tuple(k)]:g} > hi = {hi[tuple(k)]:g} at "
                f"index {tuple(int(i) for i in k)})"
            )
        object.__setattr__(self, "lo", lo.copy())
        object.__setattr__(self, "hi", hi.copy())

    def oracle(self, xp: Namespace, dtype: DType, *, clients: bool = False) -> Callable[[Array], Array]:
        lo, hi = (self._param(a, xp, dtype, clients, True) for a in (self.lo, self.hi))
        return lambda g: xp.where(g > 0, lo, hi) + xp.zeros_like(g)

    def diameter(self) -> np.ndarray:
        return np.linalg.norm(self.hi - self.lo, axis=-1)

    def center(self, d: int) -> np.ndarray:
        return np.broadcast_to((self.lo + self.hi) / 2, np.broadcast_shapes(self.lo.shape[:-1] + (d,))).copy()

    def contains(self, x: Array, *, clients: bool = False, rtol: float = 1e-12) -> Array:
        xp = array_namespace(x)
        lo, hi = (self._param(a, xp, x.dtype, clients, True) for a in (self.lo, self.hi))
        tol = rtol * (xp.abs(lo) + xp.abs(hi) + 1.0)
        return xp.all((x >= lo - tol) & (x <= hi + tol), axis=-1)

    measure = "the largest distance of a coordinate outside [lo, hi]"

    def excess(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.max(np.maximum(np.maximum(self.lo - x, x - self.hi), 0.0), axis=-1)

    def describe(self) -> str:
        if self.lo.ndim == 1 and self.lo.size <= 4:
            return (
                f"Box(lo={np.array2string(self.lo, precision=4)}, hi={np.array2string(self.hi, precision=4)})"
            )
        return f"Box(lo, hi of shape {self.lo.shape})"


@dataclass(frozen=True, eq=False)
class _Ball(ConvexSet):
    r: Any  # a number or an array-like (*trials,), stored as a host float array by __post_init__

    def __post_init__(self) -> None:
        object.__setattr__(self, "r", _radius(self.r))

    @staticmethod
    def _norm(x: Array, xp: Namespace) -> Array:
        """The norm whose ball this is, over the last axis."""
        raise NotImplementedError

    def center(self, d: int) -> np.ndarray:
        return np.zeros(self.r.shape + (d,))

    def diameter(self) -> np.ndarray:
        return 2 * self.r

    def contains(self, x: Array, *, clients: bool = False, rtol: float = 1e-12) -> Array:
        xp = array_namespace(x)
        r = self._param(self.r, xp, x.dtype, clients, False)
        return self._norm(x, xp) <= r * (1 + rtol)

    def excess(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(self._norm(np.asarray(x, dtype=float), np) - self.r, 0.0)

    def describe(self) -> str:
        r = f"r={float(self.r):g}" if self.r.ndim == 0 else f"r of shape {self.r.shape}"
        return f"{type(self).__name__}({r})"


class L1Ball(_Ball):
    r"""The ℓ1 ball :math:`\{u: \|u\|_1 \le r\}`; its LMO output has one non-zero (a signed vertex)."""

    sparse_vertices = True
    measure = "||x||_1 - r"

    def oracle(self, xp: Namespace, dtype: DType, *, clients: bool = False) -> Callable[[Array], Array]:
        r = self._vec(self._param(self.r, xp, dtype, clients, False))

        def lmo(g: Array) -> Array:
            k = xp.argmax(xp.abs(g), axis=-1)
            onehot = xp.astype(xp.arange(g.shape[-1]) == k[..., None], g.dtype)
            return -r * xp.sign(xp.sum(g * onehot, axis=-1, keepdims=True)) * onehot

        return lmo

    @staticmethod
    def _norm(x: Array, xp: Namespace) -> Array:
        return xp.sum(xp.abs(x), axis=-1)


class L2Ball(_Ball):
    r"""The Euclidean ball :math:`\{u: \|u\|_2 \le r\}`; its LMO output is dense."""

    measure = "||x||_2 - r"

    def oracle(self, xp: Namespace, dtype: DType, *, clients: bool = False) -> Callable[[Array], Array]:
        r = self._vec(self._param(self.r, xp, dtype, clients, False))

        def lmo(g: Array) -> Array:
            n = safe_norm(g, xp)[..., None]
            return -r * g / xp.where(n > 0, n, xp.ones_like(n))

        return lmo

    @staticmethod
    def _norm(x: Array, xp: Namespace) -> Array:
        return safe_norm(x, xp)


class Simplex(_Ball):
    r"""The scaled simplex :math:`\{u \ge 0: \sum_k u_k = r\}`; its LMO output has one non-zero."""

    sparse_vertices = True

    def oracle(self, xp: Namespace, dtype: DType, *, clients: bool = False) -> Callable[[Array], Array]:
        r = self._vec(self._param(self.r, xp, dtype, clients, False))
        return lambda g: r * xp.astype(xp.arange(g.shape[-1]) == xp.argmin(g, axis=-1)[..., None], g.dtype)

    def diameter(self) -> np.ndarray:
        return math.sqrt(2) * self.r  # d >= 2 (the diameter of a one-point simplex is 0)

    def center(self, d: int) -> np.ndarray:
        return np.broadcast_to(self.r[..., None] / d, self.r.shape + (d,)).copy()

    measure = "max(-min_k x_k, |sum_k x_k - r|)"

    def excess(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.maximum(np.maximum(-np.min(x, axis=-1), np.abs(np.sum(x, axis=-1) - self.r)), 0.0)

    def contains(self, x: Array, *, clients: bool = False, rtol: float = 1e-12) -> Array:
        xp = array_namespace(x)
        r = self._param(self.r, xp, x.dtype, clients, False)
        return xp.all(x >= -rtol * self._vec(r), axis=-1) & (
            xp.abs(xp.sum(x, axis=-1) - r) <= rtol * r * x.shape[-1]
        )


def check_set(constraint: Any, d: int, trials: tuple[int, ...], name: str = "constraint") -> ConvexSet:
    """A :class:`ConvexSet` whose parameters fit dimension ``d`` and the trial shape."""
    if not isinstance(constraint, ConvexSet):
        raise TypeError(
            f"{name} must be a moreau.fl Box, L1Ball, L2Ball or Simplex (got {type(constraint).__name__})"
        )
    if isinstance(constraint, Box):
        if constraint.lo.shape[-1] != d:
            raise ValueError(
                f"{name}: the box has dimension {constraint.lo.shape[-1]} but the objective d = {d}"
            )
        pshape = constraint.lo.shape[:-1]
    else:
        pshape = constraint.r.shape  # type: ignore[attr-defined]  # the balls; another subclass: its radius r
    try:
        np.broadcast_shapes(pshape, tuple(trials))
    except ValueError:
        raise ValueError(
            f"{name}: parameters of trial shape {pshape} do not broadcast against the trial shape "
            f"{tuple(trials)} (the objective's batch shape without its client axis)"
        ) from None
    return constraint
