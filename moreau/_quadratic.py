r"""Quadratic objectives with exact constants and a closed-form prox."""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from ._backend import as_array, constructor_namespace, safe_norm, to_numpy
from ._errors import ProxConvergenceError
from ._objective import Objective, ProxInfo

__all__ = ["Quadratic"]


class Quadratic(Objective):
    r"""A batch of quadratics :math:`f(\theta) = \tfrac12 \theta^\top A\theta - b^\top\theta + c`.

    ``A`` is symmetric with shape ``(..., d, d)`` (convex or indefinite),
    ``b`` has shape ``(..., d)`` and ``c`` shape ``(...)`` or is a scalar; the
    batch shape is their broadcast.  With :math:`A = V\,\mathrm{diag}(a)V^\top`
    (``a`` ascending, computed once and cached) the constants are exact:
    curvature bounds ``(a_1, a_d)``, smoothness ``max|a_k|``, strong
    convexity ``a_1`` (negative: ``(-a_1)``-weakly convex).

    The prox is the closed form

    .. math:: \mathrm{prox}(w) = (A + \lambda I)^{-1}(b + \lambda w)
              = w + V\,\mathrm{diag}\big(1/(a+\lambda)\big)V^\top (b - A w),

    computed through the cached eigendecomposition, so a new ``lam`` or ``w``
    costs :math:`O(d^2)` per client.  It exists iff ``lam > -a_1``.

    Formula (sympy): prox = (b + lam*w)/(a + lam)

    References: THEOREMS.md, "Closed forms (quadratic)".
    """

    def __init__(self, A, b, c=0.0):
        xp = constructor_namespace(A=A, b=b, c=c)
        A = as_array(A, xp, "A", host_ok=True)
        dtype = A.dtype
        b = as_array(b, xp, "b", dtype=dtype, host_ok=True)
        c = as_array(c, xp, "c", dtype=dtype, host_ok=True)
        if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
            raise ValueError(f"A must have shape (..., d, d) (got shape {tuple(A.shape)})")
        d = A.shape[-1]
        if b.ndim < 1 or b.shape[-1] != d:
            raise ValueError(f"b must have shape (..., d) with d={d} matching A "
                             f"(got shape {tuple(b.shape)})")
        _check_symmetric(A, xp)
        A = (A + xp.matrix_transpose(A)) / 2
        try:
            shape = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-1]), tuple(c.shape))
        except ValueError:
            raise ValueError(f"batch shapes do not broadcast: A {tuple(A.shape[:-2])}, "
                             f"b {tuple(b.shape[:-1])}, c {tuple(c.shape)}") from None
        self.xp, self.dtype, self.dim, self.batch_shape = xp, dtype, d, tuple(shape)
        self.A, self.b, self.c = A, b, c

    @classmethod
    def from_spectrum(cls, eigenvalues, eigenvectors, b, c=0.0):
        r"""The quadratic with :math:`A = V\,\mathrm{diag}(a)\,V^\top`.

        ``eigenvalues`` ``(..., d)``, ``eigenvectors`` ``(..., d, d)`` with
        orthonormal columns (checked to 100 eps).  The given spectrum is
        used as the cached eigendecomposition.
        """
        xp = constructor_namespace(eigenvalues=eigenvalues, eigenvectors=eigenvectors, b=b, c=c)
        a = as_array(eigenvalues, xp, "eigenvalues", host_ok=True)
        V = as_array(eigenvectors, xp, "eigenvectors", dtype=a.dtype, host_ok=True)
        if V.ndim < 2 or V.shape[-1] != V.shape[-2] or a.shape[-1:] != V.shape[-1:]:
            raise ValueError(f"eigenvectors must have shape (..., d, d) and eigenvalues (..., d) "
                             f"(got {tuple(V.shape)} and {tuple(a.shape)})")
        eye = xp.eye(V.shape[-1], dtype=V.dtype)
        err = float(xp.max(xp.abs(xp.matrix_transpose(V) @ V - eye)))
        if err > 100 * xp.finfo(V.dtype).eps * V.shape[-1]:
            raise ValueError(f"eigenvectors must be orthonormal (max |V^T V - I| = {err:.3g})")
        order = xp.argsort(a, axis=-1)
        a = xp.take_along_axis(a, order, axis=-1)
        V = xp.take_along_axis(V, xp.broadcast_to(order[..., None, :], V.shape), axis=-1)
        q = cls((V * a[..., None, :]) @ xp.matrix_transpose(V), b, c)
        q.__dict__["_eigh"] = (a, V)
        return q

    # -- spectral data (cached: pure function of A) ---------------------------
    @cached_property
    def _eigh(self):
        return self.xp.linalg.eigh(self.A)

    @cached_property
    def _bt(self):  # V^T b
        a, V = self._eigh
        return _matvec(self.xp.matrix_transpose(V), self.b)

    @property
    def eigenvalues(self):
        """Eigenvalues of ``A`` in ascending order, shape ``(..., d)``."""
        return self._eigh[0]

    def _spectrum(self):
        return self.eigenvalues

    # -- objective ------------------------------------------------------------
    def value(self, theta):
        theta = self._point(theta)
        At = _matvec(self.A, theta)
        return self.xp.vecdot(theta, At / 2 - self.b) + self.c

    def grad(self, theta):
        theta = self._point(theta)
        return _matvec(self.A, theta) - self.b

    def hess(self, theta=None):
        shape = self.batch_shape + (self.dim, self.dim)
        if theta is not None:
            theta = self._point(theta)
            shape = tuple(np.broadcast_shapes(shape[:-2], tuple(theta.shape[:-1]))) + shape[-2:]
        return self.xp.broadcast_to(self.A, shape)

    def hvp(self, theta, v):
        self._point(theta)
        return _matvec(self.A, self._point(v, "v"))

    def third(self, theta, v):
        theta, v = self._point(theta), self._point(v, "v")
        shape = np.broadcast_shapes(self.batch_shape, tuple(theta.shape[:-1]), tuple(v.shape[:-1]))
        return self.xp.zeros(tuple(shape) + (self.dim, self.dim), dtype=self.dtype)

    def curvature_bounds(self):
        """``(a_1, a_d)``: exact."""
        a = self.eigenvalues
        xp = self.xp
        return xp.broadcast_to(a[..., 0], self.batch_shape), xp.broadcast_to(a[..., -1], self.batch_shape)

    def _grad_error_scale(self, theta):
        xp = self.xp
        return self.smoothness() * safe_norm(theta, xp) + safe_norm(self.b, xp)

    def minimizer(self):
        """``A^{-1} b``; requires ``A`` positive definite (``ValueError`` otherwise)."""
        xp = self.xp
        a, V = self._eigh
        if not bool(xp.all(a[..., 0] > 0)):
            worst = float(xp.min(a[..., 0]))
            raise ValueError(f"minimizer() needs A positive definite (smallest eigenvalue {worst:.6g})")
        return xp.broadcast_to(_matvec(V, self._bt / a), self.batch_shape + (self.dim,))

    def _solve(self, w, lam, *, tol=None, max_iter=None, info=False, want_u=True):
        """Closed forms ``prox(w) = V diag(1/(a+lam)) V^T (b + lam w)`` and
        ``prox(w) - w = V diag(1/(a+lam)) V^T (b - A w)``, both computed.

        No iterations (``max_iter`` does not apply).  With ``tol`` given, the
        residual bound ``||(A + lam I) theta - b - lam w|| / (lam + a_1)`` of
        the returned point is checked against it (ProxConvergenceError if a
        tolerance below the rounding level was asked for).
        """
        xp = self.xp
        a, V = self._eigh
        lam_ = lam[..., None]
        wt = _matvec(xp.matrix_transpose(V), w)
        inv = 1 / (a + lam_)
        theta = _matvec(V, (self._bt + lam_ * wt) * inv)
        shape = tuple(np.broadcast_shapes(self.batch_shape, tuple(theta.shape[:-1]), tuple(lam.shape)))
        theta = xp.broadcast_to(theta, shape + (self.dim,))
        need_u = want_u or info or tol is not None
        u = xp.broadcast_to(_matvec(V, (self._bt - a * wt) * inv), shape + (self.dim,)) if need_u else None
        if not info and tol is None:
            return theta, u, None
        resid = _matvec(self.A, theta) - self.b + lam_ * u
        bound = to_numpy(xp.broadcast_to(xp.linalg.vector_norm(resid, axis=-1) / (lam + self.strong_convexity()),
                                         shape))
        # ProxInfo and ProxConvergenceError carry host numpy arrays on every backend (documented)
        if tol is not None:
            t = np.broadcast_to(np.asarray(to_numpy(tol), dtype=float), shape)
            if not np.all(np.isfinite(t)) or np.any(t <= 0):
                raise ValueError(f"tol must be finite and > 0 (got {tol!r})")
            if np.any(bound > t):
                raise ProxConvergenceError(
                    f"closed-form prox of Quadratic: residual bound {bound.max():.3g} exceeds tol "
                    f"(rounding level of the closed form)", error_bound=bound, tol=t,
                    iterations=np.zeros(shape, dtype=int))
        return theta, u, ProxInfo(iterations=np.zeros(shape, dtype=int), error_bound=bound,
                           tol=None if tol is None else np.broadcast_to(np.asarray(to_numpy(tol), float), shape).copy())


def _matvec(M, x):
    """``M @ x`` over the last axis with broadcasting, shapes ``(*bm, d, d)``, ``(*bx, d)``.

    When ``x`` carries extra leading axes in front of ``M``'s batch (a
    lambda-sweep), they become matrix columns: one batched matrix-matrix
    product instead of many matrix-vector products.
    """
    xp = _ns(M)
    k = M.ndim - 2
    extra = x.ndim - 1 - k
    if extra > 0 and k > 0 and tuple(x.shape[extra:-1]) == tuple(M.shape[:-2]):
        lead = tuple(x.shape[:extra])
        p = math.prod(lead)
        xr = xp.reshape(x, (p,) + tuple(x.shape[extra:]))
        xr = xp.permute_dims(xr, tuple(range(1, k + 2)) + (0,))  # (*bm, d, p)
        y = M @ xr
        y = xp.permute_dims(y, (k + 1,) + tuple(range(k + 1)))  # (p, *bm, d)
        return xp.reshape(y, lead + tuple(y.shape[1:]))
    return (M @ x[..., None])[..., 0]


def _ns(x):
    from array_api_compat import array_namespace

    return array_namespace(x)


def _check_symmetric(A, xp):
    asym = xp.max(xp.abs(A - xp.matrix_transpose(A)), axis=(-2, -1))
    scale = xp.max(xp.abs(A), axis=(-2, -1))
    tol = 100 * xp.finfo(A.dtype).eps * scale
    if not bool(xp.all(asym <= tol)):
        asym_h, tol_h = to_numpy(asym), to_numpy(tol)
        i = tuple(int(k) for k in np.argwhere(asym_h > tol_h)[0])
        raise ValueError(f"A must be symmetric: max |A - A^T| = {asym_h[i]:.3g} at batch index "
                         f"{i} (tolerance {tol_h[i]:.3g} = 100 eps max|A|)")
