r"""Quadratic objectives with exact constants and a closed-form prox."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from ._backend import as_array, constructor_namespace, is_gpu, is_numpy, safe_norm, to_numpy
from ._chol import chol_lower_bound, chol_proves_exists, chol_solve
from ._matrices import blocks, load_symmetric, matvec
from ._objective import Objective, ProxInfo
from ._quadratic_cert import certificate, check_exists, lam_per_matrix, proven_modulus
from ._tridiag import tri_min_eig, tri_prox, tridiagonalize
from ._typing import Array

__all__ = ["Quadratic"]

#: Systems per matrix (lam values per client) up to which the prox takes the certified
#: Cholesky route, for d < 40 and for d >= 40; above it one tridiagonal reduction (numpy)
#: or eigendecomposition is cheaper (crossovers measured in benchmarks/RESULTS.md, section 1:
#: a Cholesky costs about a sixth of the reduction at d = 60, a third at d = 20, where
#: the per-call overhead of LAPACK from Python weighs more).
CHOL_MAX_SYSTEMS = (3, 5)


class Quadratic(Objective):
    r"""A batch of quadratics :math:`f(\theta) = \tfrac12 \theta^\top A\theta - b^\top\theta + c`.

    ``A`` is symmetric with shape ``(..., d, d)`` (convex or indefinite),
    ``b`` has shape ``(..., d)`` and ``c`` shape ``(...)`` or is a scalar; the
    batch shape is their broadcast.  With :math:`A = V\,\mathrm{diag}(a)V^\top`
    (``a`` ascending, computed once and cached) the constants are the
    computed eigenvalues, exact up to :meth:`eigenvalue_error` (``4 d eps
    ||A||_F``: absolute, so an eigenvalue much smaller than ``||A||`` has few
    correct digits): curvature bounds ``(a_1, a_d)``, smoothness ``max|a_k|``,
    strong convexity ``a_1`` (negative: ``(-a_1)``-weakly convex).

    The prox is the closed form

    .. math:: \mathrm{prox}(w) = (A + \lambda I)^{-1}(b + \lambda w)
              = w + V\,\mathrm{diag}\big(1/(a+\lambda)\big)V^\top (b - A w),

    computed by the route the work calls for (:meth:`_solve`): a certified
    Cholesky per system for a few ``lam`` per client, one tridiagonal
    reduction ``A = Q T Q^T`` (numpy) then :math:`O(d^2)` per ``lam`` for many,
    the eigendecomposition when it is cached.  The routes agree to the
    conditioning of the solve; each is cached per objective, so a second sweep
    reuses it.  The prox exists iff ``lam > -a_1``; moreau proves it (a certified
    shifted Cholesky that completes: per system on the Cholesky route, per matrix on
    the others) and refuses a ``lam`` it cannot prove with a ``ValueError`` that says
    why; ``error_bound`` (``return_info=True``) rests on a proven lower bound on
    ``a_1``, never on the accuracy of the computed eigenvalues.

    Formula (sympy): prox = (b + lam*w)/(a + lam)

    References: docs/catalogue.md, "Conventions" (quadratic closed forms).
    """

    def __init__(self, A: Any, b: Any, c: Any = 0.0) -> None:
        xp = constructor_namespace(A=A, b=b, c=c)
        A = load_symmetric(A, xp)  # the one copy of A that is kept (checked: finite, symmetric)
        dtype = A.dtype
        b = as_array(b, xp, "b", dtype=dtype, host_ok=True)
        c = as_array(c, xp, "c", dtype=dtype, host_ok=True)
        d = A.shape[-1]
        if d == 0:
            raise ValueError(f"A must have d >= 1 (got shape {tuple(A.shape)})")
        if b.ndim < 1 or b.shape[-1] != d:
            raise ValueError(f"b must have shape (..., d) with d={d} matching A (got shape {tuple(b.shape)})")
        try:
            shape = np.broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-1]), tuple(c.shape))
        except ValueError:
            raise ValueError(
                f"batch shapes do not broadcast: A {tuple(A.shape[:-2])}, "
                f"b {tuple(b.shape[:-1])}, c {tuple(c.shape)}"
            ) from None
        self.xp, self.dtype, self.dim, self.batch_shape = xp, dtype, d, tuple(shape)
        self.A, self.b, self.c = A, b, c

    @classmethod
    def from_spectrum(cls, eigenvalues: Any, eigenvectors: Any, b: Any, c: Any = 0.0) -> Quadratic:
        r"""The quadratic with :math:`A = V\,\mathrm{diag}(a)\,V^\top`.

        ``eigenvalues`` ``(..., d)``, ``eigenvectors`` ``(..., d, d)`` with
        orthonormal columns (checked to 100 eps).  The given spectrum is
        used as the cached eigendecomposition.
        """
        xp = constructor_namespace(eigenvalues=eigenvalues, eigenvectors=eigenvectors, b=b, c=c)
        a = as_array(eigenvalues, xp, "eigenvalues", host_ok=True)
        V = as_array(eigenvectors, xp, "eigenvectors", dtype=a.dtype, host_ok=True)
        if V.ndim < 2 or V.shape[-1] != V.shape[-2] or a.shape[-1:] != V.shape[-1:]:
            raise ValueError(
                f"eigenvectors must have shape (..., d, d) and eigenvalues (..., d) "
                f"(got {tuple(V.shape)} and {tuple(a.shape)})"
            )
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
    def _eigh(self) -> tuple[Array, Array]:
        return self.xp.linalg.eigh(self.A)

    @cached_property
    def _bt(self) -> Array:  # V^T b
        a, V = self._eigh
        return matvec(self.xp.matrix_transpose(V), self.b)

    @property
    def eigenvalues(self) -> Array:
        """Eigenvalues of ``A`` in ascending order, shape ``(..., d)``."""
        return self._eigh[0]

    def _spectrum(self) -> Array:
        return self.eigenvalues

    # -- objective ------------------------------------------------------------
    def value(self, theta: Array) -> Array:
        theta = self._point(theta)
        At = matvec(self.A, theta)
        return self.xp.vecdot(theta, At / 2 - self.b) + self.c

    def grad(self, theta: Array) -> Array:
        theta = self._point(theta)
        return matvec(self.A, theta) - self.b

    def hess(self, theta: Array | None = None) -> Array:
        shape = self.batch_shape + (self.dim, self.dim)
        if theta is not None:
            theta = self._point(theta)
            shape = tuple(np.broadcast_shapes(shape[:-2], tuple(theta.shape[:-1]))) + shape[-2:]
        return self.xp.broadcast_to(self.A, shape)

    def hvp(self, theta: Array, v: Array) -> Array:
        self._point(theta)
        return matvec(self.A, self._point(v, "v"))

    def third(self, theta: Array, v: Array) -> Array:
        theta, v = self._point(theta), self._point(v, "v")
        shape = np.broadcast_shapes(self.batch_shape, tuple(theta.shape[:-1]), tuple(v.shape[:-1]))
        return self.xp.zeros(tuple(shape) + (self.dim, self.dim), dtype=self.dtype)

    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(a_1, a_d)``: exact."""
        a = self.eigenvalues
        xp = self.xp
        return xp.broadcast_to(a[..., 0], self.batch_shape), xp.broadcast_to(a[..., -1], self.batch_shape)

    def _grad_error_scale(self, theta: Array) -> Array:
        xp = self.xp
        return self.smoothness() * safe_norm(theta, xp) + safe_norm(self.b, xp)

    def minimizer(self) -> Array:
        """``A^{-1} b``; requires ``A`` positive definite (``ValueError`` otherwise)."""
        xp = self.xp
        a, V = self._eigh
        if not bool(xp.all(a[..., 0] > 0)):
            worst = float(xp.min(a[..., 0]))
            raise ValueError(f"minimizer() needs A positive definite (smallest eigenvalue {worst:.6g})")
        return xp.broadcast_to(matvec(V, self._bt / a), self.batch_shape + (self.dim,))

    @cached_property
    def _fro(self) -> Array:
        """An upper bound on ``||A||_F`` per batch entry (so on ``||A||_2`` and ``|| |A| ||_2``), by
        blocks: :func:`moreau._backend.safe_norm` of the flattened matrices (within
        ``(d^2/2 + 2) eps`` relative of the exact norm, no overflow or underflow), rounded up by
        that much."""
        xp, d = self.xp, self.dim
        up = 1 + (d * d / 2 + 3) * float(xp.finfo(self.dtype).eps)

        def fro(B: Array) -> Array:
            return safe_norm(xp.reshape(B, tuple(B.shape[:-2]) + (d * d,)), xp) * up

        if self.A.ndim == 2:
            return fro(self.A)
        return xp.concat([fro(self.A[sl]) for sl in blocks(self.A)], axis=0)

    def eigenvalue_error(self) -> Array:
        r"""Bound ``delta`` on the error of the computed eigenvalues, shape ``(...)``.

        LAPACK's symmetric eigensolvers are backward stable: the computed
        eigenvalues are exact for ``A + E`` with ``||E||_2 <= p(d) eps ||A||_2``,
        so by Weyl's inequality ``|a_hat_k - a_k| <= p(d) eps ||A||_2``.  moreau
        takes ``p(d) = 4 d`` and ``||A||_2 <= ||A||_F``: ``delta = 4 d eps ||A||_F``
        (plus one subnormal unit).  The constants (``eigenvalues``,
        ``strong_convexity()``, ``curvature_bounds()``) are the computed ones:
        exact up to ``delta``, which is large *relative* to an eigenvalue much
        smaller than ``||A||``.  The prox's ``error_bound`` does not rely on
        this model (see :meth:`_solve`).
        """
        return self.xp.broadcast_to(self._delta, self.batch_shape)

    @property
    def _delta(self) -> Array:
        """:meth:`eigenvalue_error` per matrix, shape ``A.shape[:-2]``."""
        eps = float(self.xp.finfo(self.dtype).eps)
        tiny = float(self.xp.finfo(self.dtype).smallest_normal) * eps
        return 4 * self.dim * eps * self._fro + tiny

    # -- prox: the route is chosen by the work ---------------------------------
    @cached_property
    def _tri(self) -> tuple[Any, Any, Any]:
        """``(Q, D, E)``: ``A = Q tridiag(E, D, E) Q^T`` (numpy; :func:`moreau._tridiag.tridiagonalize`)."""
        return tridiagonalize(to_numpy(self.A))

    @cached_property
    def _tri_a1(self) -> np.ndarray:
        """Smallest eigenvalue of the computed tridiagonal ``T`` (bisection), shape ``A.shape[:-2]``;
        from the cached reduction, or from ``T`` alone (no ``Q``: half the work, no second array
        of ``A``'s size) when the tridiagonal route has not run."""
        _, D, E = self._tri if "_tri" in self.__dict__ else tridiagonalize(to_numpy(self.A), want_q=False)
        return tri_min_eig(D, E)

    @cached_property
    def _a1_proven(self) -> np.ndarray:
        """Proven lower bound on ``a_1 = lambda_min(A)`` per matrix (host float64, shape
        ``A.shape[:-2]``): one certified Cholesky per matrix just below the computed smallest
        eigenvalue less :meth:`eigenvalue_error` (:func:`moreau._chol.chol_lower_bound`)."""
        xp = self.xp
        if "_eigh" in self.__dict__ or not is_numpy(xp):
            a1 = self._eigh[0][..., 0]
        else:
            a1 = xp.asarray(self._tri_a1)
        delta = np.asarray(to_numpy(self._delta), dtype=np.float64)  # shape A.shape[:-2]
        return chol_lower_bound(self.A, np.asarray(to_numpy(a1), dtype=np.float64) - delta, xp)

    def _certified_curvature(self) -> np.ndarray:
        """:attr:`_a1_proven` (host) broadcast to the batch: a proven lower bound on ``a_1``."""
        return np.broadcast_to(self._a1_proven, self.batch_shape)

    def _route(self, lam: Array, w: Array) -> str:
        """``'eigh'``, ``'tri'`` or ``'chol'`` (see :meth:`_solve`)."""
        if "_eigh" in self.__dict__:
            return "eigh"
        if "_tri" in self.__dict__:
            return "tri"
        if is_gpu(self.xp):  # the per-system Cholesky is 4-100x slower than eigh on a GPU (RESULTS.md 9)
            return "eigh"
        systems = math.prod(np.broadcast_shapes(self.batch_shape, tuple(lam.shape), tuple(w.shape[:-1])))
        per_matrix = systems / max(1, math.prod(self.A.shape[:-2]))
        if per_matrix <= CHOL_MAX_SYSTEMS[self.dim >= 40]:
            return "chol"  # a certificate then adds T alone (for a_hat_1) and one proof per matrix
        return "tri" if is_numpy(self.xp) else "eigh"

    def prox(
        self,
        w: Array,
        lam: Array | float,
        *,
        tol: Array | float | None = None,
        max_iter: int = 100,
        return_info: bool = False,
    ) -> Array | tuple[Array, ProxInfo]:
        r"""``argmin_theta f(theta) + (lam/2) ||theta - w||^2``; see :func:`moreau.prox`.

        ``lam`` is checked here for its range only: whether the prox exists
        (``lam > -a_1``) is certified by the route that computes it (:meth:`_solve`),
        without an eigendecomposition where that is cheaper."""
        from ._newton import check_max_iter

        check_max_iter(max_iter)
        w = self._point(w, "w")
        lam = self._lam(lam, convexity=False)
        theta, _, info = self._solve(w, lam, tol=tol, max_iter=max_iter, info=return_info, want_u=False)
        return (theta, info) if return_info else theta

    def _solve(
        self,
        w: Array,
        lam: Array,
        *,
        tol: Array | float | None = None,
        max_iter: int | None = None,
        info: bool = False,
        want_u: bool = True,
        route: str | None = None,
    ) -> tuple[Array, Array | None, ProxInfo | None]:
        r"""Closed forms ``prox(w) = (A + lam I)^{-1} (b + lam w)`` and
        ``prox(w) - w = (A + lam I)^{-1} (b - A w)``, both computed.

        No iterations (``max_iter`` does not apply).  Three routes, chosen by the
        work (``route`` forces one, for tests):

        * ``'eigh'`` (the eigendecomposition is cached, cupy, or another non-numpy
          backend with many systems): ``V diag(1/(a+lam)) V^T``.
        * ``'tri'`` (numpy, many ``lam`` per matrix): ``A = Q T Q^T`` once, a
          tridiagonal solve per ``lam`` (:mod:`moreau._tridiag`).
        * ``'chol'`` (at most ``CHOL_MAX_SYSTEMS`` systems per matrix; not on cupy):
          certified Cholesky per system, no eigenvalue computed; its success
          proves that the prox exists (:func:`moreau._chol.chol_solve`).  Where it
          cannot certify a system the spectral route runs instead (which then
          says why).  A certificate asked for adds ``a_hat_1`` (the smallest
          eigenvalue of ``T`` alone on numpy, of ``eigh`` elsewhere) and its proof.

        Existence: the Cholesky route proves it system by system; the spectral
        routes prove it with one certified Cholesky per matrix at its smallest
        ``lam`` (``'tri'``) or from the proven lower bound ``p`` on ``a_1``
        (``'eigh'``, and whenever a certificate is asked for: ``p`` is also the
        certificate's modulus).  A ``lam`` that cannot be proven is a
        ``ValueError`` that says why (:mod:`moreau._quadratic_cert`), nothing rests
        on the accuracy of a computed eigenvalue.  The certificate, on every
        route, is the residual bound of :mod:`moreau._quadratic_cert` evaluated at
        the returned theta; with ``tol`` given, a bound above it raises
        ProxConvergenceError (a tolerance below the closed form's rounding level).
        """
        xp = self.xp
        need_cert = info or tol is not None
        need_u = want_u  # the certificate needs theta only
        route = route or self._route(lam, w)
        lam_ = lam[..., None]
        theta = u = None
        if route == "chol":
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
                R = self.b + lam_ * w
                if need_u:
                    R = xp.stack(xp.broadcast_arrays(R, self.b - matvec(self.A, w)), axis=-1)
                else:
                    R = R[..., None]
                out = chol_solve(self.A, lam, R, xp)
            if out is not None:
                theta, u = out[0][..., 0], (out[0][..., 1] if need_u else None)
            else:  # not certified: the spectral route decides (and explains a refusal)
                route = "tri" if is_numpy(xp) else "eigh"
        shape = tuple(np.broadcast_shapes(self.batch_shape, tuple(w.shape[:-1]), tuple(lam.shape)))
        modulus = None
        if route == "tri":
            self._tri  # noqa: B018  (the full reduction first: its T then also serves a_hat_1)
        if route == "tri" and not need_cert:  # one certified factorization per matrix
            if not chol_proves_exists(self.A, lam_per_matrix(lam, tuple(self.A.shape[:-2])), xp):
                modulus = self._prove_exists(lam, shape, "tri")  # explains the refusal, or proves it
        elif route != "chol" or need_cert:
            modulus = self._prove_exists(lam, shape, route if route != "chol" else None)
        if route == "eigh":
            a, V = self._eigh
            wt = matvec(xp.matrix_transpose(V), w)
            inv = 1 / (a + lam_)
            theta = matvec(V, (self._bt + lam_ * wt) * inv)
            if need_u:
                u = matvec(V, (self._bt - a * wt) * inv)
        elif route == "tri":
            Q, D, E = self._tri
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
                theta, u = tri_prox(Q, D, E, self.A, self.b, w, lam, need_u)
        theta = xp.broadcast_to(theta, shape + (self.dim,))
        u = xp.broadcast_to(u, shape + (self.dim,)) if u is not None else None
        if not bool(xp.all(xp.isfinite(theta))) or (u is not None and not bool(xp.all(xp.isfinite(u)))):
            raise ValueError(
                f"prox of Quadratic overflows {self.dtype}: lam * w or b is near the float "
                f"range (max |w| {float(xp.max(xp.abs(w))):.3g}, max lam {float(xp.max(lam)):.3g}); "
                f"rescale the problem"
            )
        if not need_cert:
            return theta, u, None
        return theta, u, certificate(self, theta, w, lam, shape, tol, modulus)

    def _prove_exists(self, lam: Array, shape: tuple[int, ...], spec: str | None) -> np.ndarray:
        """The proven modulus ``lam + p`` (host, ``shape``; :func:`moreau._quadratic_cert.proven_modulus`),
        after the computed spectrum has had its say (:func:`moreau._quadratic_cert.check_exists`:
        clearly nonconvex, or too close for the computed eigenvalue); ``spec`` the spectral
        route whose eigenvalues to use (None: the cheaper one available)."""
        xp = self.xp
        spec = spec or ("eigh" if "_eigh" in self.__dict__ or not is_numpy(xp) else "tri")
        a1 = xp.asarray(self._tri_a1) if spec == "tri" else self._eigh[0][..., 0]
        check_exists(self, lam, a1, self.eigenvalue_error())
        return proven_modulus(self._a1_proven, lam, shape)
