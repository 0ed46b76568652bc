r"""Quadratic objectives with exact constants and a closed-form prox."""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from ._backend import _all_finite, _first_bad, as_array, constructor_namespace, safe_norm, to_numpy
from ._errors import ProxConvergenceError
from ._objective import Objective, ProxInfo
from ._tridiag import chol_lower_bound, chol_solve, is_numpy, tri_certifies, tri_min_eig, tri_prox, tridiagonalize

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
    reuses it.  The prox exists iff ``lam > -a_1``; moreau checks it (a
    successful certified shifted Cholesky, or ``lam > eigenvalue_error() - a_hat_1``)
    and refuses a ``lam`` it cannot certify with a ``ValueError``; ``error_bound``
    (``return_info=True``) rests on a proven lower bound on ``a_1`` (one certified
    Cholesky per matrix), never on the accuracy of the computed eigenvalues.

    Formula (sympy): prox = (b + lam*w)/(a + lam)

    References: docs/catalogue.md, "Conventions" (quadratic closed forms).
    """

    def __init__(self, A, b, c=0.0):
        xp = constructor_namespace(A=A, b=b, c=c)
        A = _load_matrix(A, xp)  # the one copy of A that is kept (checked: finite, symmetric)
        dtype = A.dtype
        b = as_array(b, xp, "b", dtype=dtype, host_ok=True)
        c = as_array(c, xp, "c", dtype=dtype, host_ok=True)
        d = A.shape[-1]
        if d == 0:
            raise ValueError(f"A must have d >= 1 (got shape {tuple(A.shape)})")
        if b.ndim < 1 or b.shape[-1] != d:
            raise ValueError(f"b must have shape (..., d) with d={d} matching A "
                             f"(got shape {tuple(b.shape)})")
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

    @cached_property
    def _fro(self):
        """``||A||_F`` per batch entry (an upper bound on ``||A||_2`` and ``|| |A| ||_2``), by blocks."""
        xp = self.xp
        fi = xp.finfo(self.dtype)
        lo, hi = float(fi.smallest_normal) ** 0.5 * 2 ** 10, float(fi.max) ** 0.5 / 2 ** 10

        def fro(B):
            with np.errstate(over="ignore", under="ignore"):  # plain: exact to d eps unless squares
                n = xp.sqrt(xp.sum(B * B, axis=(-2, -1)))  # under/overflow (then the scaled pass)
            if bool(xp.all((n >= lo) & (n <= hi))):
                return n
            m = xp.max(xp.abs(B), axis=(-2, -1))  # scaled by the largest entry where they might
            safe = xp.where(m > 0, m, xp.ones_like(m))
            return m * xp.sqrt(xp.sum((B / safe[..., None, None]) ** 2, axis=(-2, -1)))
        if self.A.ndim == 2:
            return fro(self.A)
        return xp.concat([fro(self.A[sl]) for sl in _blocks(self.A)], axis=0)

    def eigenvalue_error(self):
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
    def _delta(self):
        """:meth:`eigenvalue_error` per matrix, shape ``A.shape[:-2]``."""
        eps = float(self.xp.finfo(self.dtype).eps)
        tiny = float(self.xp.finfo(self.dtype).smallest_normal) * eps
        return 4 * self.dim * eps * self._fro + tiny

    # -- prox: the route is chosen by the work ---------------------------------
    @cached_property
    def _tri(self):
        """``(Q, D, E)``: ``A = Q tridiag(E, D, E) Q^T`` (numpy; :func:`moreau._tridiag.tridiagonalize`)."""
        return tridiagonalize(to_numpy(self.A))

    @cached_property
    def _tri_a1(self):
        """Smallest eigenvalue of the computed tridiagonal ``T`` (bisection), shape ``A.shape[:-2]``."""
        Q, D, E = self._tri
        return tri_min_eig(D, E)

    @cached_property
    def _a1_proven(self):
        """Proven lower bound on ``a_1 = lambda_min(A)`` per matrix (host float64, shape
        ``A.shape[:-2]``): one certified Cholesky per matrix just below the computed smallest
        eigenvalue less :meth:`eigenvalue_error` (:func:`moreau._tridiag.chol_lower_bound`)."""
        xp = self.xp
        if "_eigh" in self.__dict__ or not is_numpy(xp):
            a1 = self._eigh[0][..., 0]
        else:
            a1 = xp.asarray(self._tri_a1)
        delta = np.asarray(to_numpy(self._delta), dtype=np.float64)  # shape A.shape[:-2]
        return chol_lower_bound(self.A, np.asarray(to_numpy(a1), dtype=np.float64) - delta, xp)

    def _proven_modulus(self, lam, shape):
        """``lam + a1_proven`` rounded down (host float64, ``shape``): a proven lower bound on
        ``lambda_min(A + lam I)``; ``ValueError`` where it is not positive (the prox may not exist)."""
        lam_h = np.broadcast_to(np.asarray(to_numpy(lam), dtype=np.float64), shape)
        p = np.broadcast_to(self._a1_proven, shape)
        modulus = (lam_h + p) * (1 - 2 * float(np.finfo(np.float64).eps))
        if np.all(modulus > 0):
            return modulus
        k = tuple(int(i) for i in np.argwhere(~(modulus > 0))[0])
        how = ("the certified Cholesky factorization failed even well below the computed smallest "
               "eigenvalue" if p[k] == -np.inf else f"proven: lambda_min(A) >= {p[k]:.17g}")
        raise ValueError(
            f"lam={lam_h[k]:.17g} is too close to the nonconvex threshold of this Quadratic (entry {k}) "
            f"to prove that the prox exists and bound its error ({how}); lam must exceed "
            f"{-p[k]:.17g}")

    def _route(self, lam, w, need_cert):
        """``'eigh'``, ``'tri'`` or ``'chol'`` (see :meth:`_solve`)."""
        if "_eigh" in self.__dict__:
            return "eigh"
        if "_tri" in self.__dict__:
            return "tri"
        systems = math.prod(np.broadcast_shapes(self.batch_shape, tuple(lam.shape), tuple(w.shape[:-1])))
        per_matrix = systems / max(1, math.prod(self.A.shape[:-2]))
        if not need_cert and per_matrix <= CHOL_MAX_SYSTEMS[self.dim >= 40]:
            return "chol"
        return "tri" if is_numpy(self.xp) else "eigh"

    def prox(self, w, lam, *, tol=None, max_iter=100, return_info=False):
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


    def _solve(self, w, lam, *, tol=None, max_iter=None, info=False, want_u=True, route=None):
        r"""Closed forms ``prox(w) = (A + lam I)^{-1} (b + lam w)`` and
        ``prox(w) - w = (A + lam I)^{-1} (b - A w)``, both computed.

        No iterations (``max_iter`` does not apply).  Three routes, chosen by the
        work (``route`` forces one, for tests):

        * ``'eigh'`` (the eigendecomposition is cached, or a non-numpy backend
          with many systems or a certificate asked for): ``V diag(1/(a+lam)) V^T``.
        * ``'tri'`` (numpy; many ``lam`` per matrix, or a certificate asked
          for): ``A = Q T Q^T`` once, a tridiagonal solve per ``lam``
          (:mod:`moreau._tridiag`).  ``a_hat_1`` is then the smallest eigenvalue
          of the computed ``T``.
        * ``'chol'`` (at most ``CHOL_MAX_SYSTEMS`` systems per matrix and no
          certificate asked for): certified Cholesky per system, no
          eigenvalue computed; its success proves that the prox exists
          (:func:`moreau._tridiag.chol_solve`).  Where it cannot certify a system
          the spectral route runs instead (which then says why).

        Existence on the spectral routes, without a certificate asked for: the
        true smallest eigenvalue is taken to be at least ``a_hat_1 - delta``
        (:meth:`eigenvalue_error`, LAPACK's backward-error *model*; for ``'tri'``
        the same constant covers the Householder reduction's backward error and
        the bisection's ``eps ||T|| + 2.5 eps max|E|``), so ``lam > delta - a_hat_1``
        is required (``ValueError`` when ``lam`` is within ``delta`` of the
        nonconvex threshold: the prox may not exist).  With a certificate asked
        for nothing rests on that model: ``p <= lambda_min(A)`` is *proven* once per
        matrix by a certified Cholesky just below ``a_hat_1 - delta``
        (:func:`moreau._tridiag.chol_lower_bound`, cached as ``_a1_proven``; if
        ``a_hat_1`` was wrong the proof falls back to a weaker but valid ``p``),
        ``lam + p > 0`` proves that the prox exists (``ValueError`` otherwise), and
        the certificate of the returned theta, on every route (``u`` the unit
        roundoff, ``gamma_k = k u/(1 - k u)``), is::

            ||theta - prox(w)|| <= ||A theta - b + lam (theta - w)|| / (lam + p)

        with the residual ``r_hat = fl(fl(A theta) - b + lam fl(theta - w))``
        evaluated at the returned theta and bounded by
        ``||r_hat|| (1 + (d+4) eps) + (gamma_d + 3u) ||A||_F ||theta|| + 3u ||b||
        + 5u lam ||fl(theta - w)||`` (Higham's bound for the product, one
        rounding per operation after it).  It does not depend on how theta was
        computed.  With ``tol`` given, a bound above it raises
        ProxConvergenceError (a tolerance below the closed form's rounding level).
        """
        xp = self.xp
        need_cert = info or tol is not None
        need_u = want_u or need_cert
        route = route or self._route(lam, w, need_cert)
        lam_ = lam[..., None]
        theta = u = None
        if route == "chol":
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
                R = self.b + lam_ * w
                if need_u:
                    R = xp.stack(xp.broadcast_arrays(R, self.b - _matvec(self.A, w)), axis=-1)
                else:
                    R = R[..., None]
                out = chol_solve(self.A, lam, R, xp)
            if out is not None:
                theta, u = out[0][..., 0], (out[0][..., 1] if need_u else None)
            else:  # not certified: the spectral route decides (and explains a refusal)
                route = "tri" if is_numpy(xp) else "eigh"
        if route == "tri" and not need_cert and self._sturm_certifies(lam):
            pass  # existence certified by one Sturm count per matrix; no modulus needed
        elif route != "chol" or need_cert:  # existence (and the certificate's modulus) from the spectrum
            spec = route if route != "chol" else ("tri" if is_numpy(xp) else "eigh")
            a1 = xp.asarray(self._tri_a1) if spec == "tri" else self._eigh[0][..., 0]
            self._check_exists(lam, a1, self.eigenvalue_error())
        if route == "eigh":
            a, V = self._eigh
            wt = _matvec(xp.matrix_transpose(V), w)
            inv = 1 / (a + lam_)
            theta = _matvec(V, (self._bt + lam_ * wt) * inv)
            if need_u:
                u = _matvec(V, (self._bt - a * wt) * inv)
        elif route == "tri":
            Q, D, E = self._tri
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below
                theta, u = tri_prox(Q, D, E, self.A, self.b, w, lam, need_u)
        shape = tuple(np.broadcast_shapes(self.batch_shape, tuple(theta.shape[:-1]), tuple(lam.shape)))
        theta = xp.broadcast_to(theta, shape + (self.dim,))
        u = xp.broadcast_to(u, shape + (self.dim,)) if u is not None else None
        if not bool(xp.all(xp.isfinite(theta))) or (u is not None and not bool(xp.all(xp.isfinite(u)))):
            raise ValueError(f"prox of Quadratic overflows {self.dtype}: lam * w or b is near the float "
                             f"range (max |w| {float(xp.max(xp.abs(w))):.3g}, max lam {float(xp.max(lam)):.3g}); "
                             f"rescale the problem")
        if not need_cert:
            return theta, u, None
        eps = float(xp.finfo(self.dtype).eps)
        ur, d = eps / 2, self.dim
        diff = theta - w
        resid = _matvec(self.A, theta) - self.b + lam_ * diff
        rn = safe_norm(resid, xp) * (1 + (d + 4) * eps)
        g_d = d * ur / (1 - d * ur)
        rnd = (g_d + 3 * ur) * self._fro * safe_norm(theta, xp) + 3 * ur * safe_norm(self.b, xp) \
            + 5 * ur * lam * safe_norm(diff, xp)
        num = np.asarray(to_numpy(xp.broadcast_to(rn + rnd * (1 + 4 * eps), shape)), dtype=np.float64)
        bound = num / self._proven_modulus(lam, shape) * (1 + 8 * eps)
        # ProxInfo and ProxConvergenceError carry host numpy arrays on every backend (documented)
        if tol is not None:
            t = np.asarray(to_numpy(tol))
            if t.dtype.kind not in "fiu" or t.dtype == bool:
                raise TypeError(f"tol must be a real number or array (got {tol!r})")
            t = np.broadcast_to(t.astype(float), shape)
            if not np.all(np.isfinite(t)) or np.any(t <= 0):
                raise ValueError(f"tol must be finite and > 0 (got {tol!r})")
            if np.any(bound > t):
                failed = bound > t
                raise ProxConvergenceError(
                    f"closed-form prox of Quadratic: certified bound {bound.max():.3g} exceeds tol at "
                    f"{int(failed.sum())} of {failed.size} entries (first: "
                    f"{[tuple(int(i) for i in r) for r in np.argwhere(failed)[:5]]}); tol is below the "
                    f"closed form's rounding level", error_bound=bound, tol=t.copy(),
                    iterations=np.zeros(shape, dtype=int), failed=failed, theta=to_numpy(theta))
        return theta, u, ProxInfo(iterations=np.zeros(shape, dtype=int), error_bound=bound,
                           tol=None if tol is None else t.copy())

    def _sturm_certifies(self, lam):
        """Existence for every system from one Sturm count per matrix at its smallest ``lam``
        (:func:`moreau._tridiag.tri_certifies`); False hands over to the bisection.  The tridiagonal
        route runs on the numpy backend only (:meth:`_route`), so ``D``, ``E`` and ``lam`` are host
        numpy arrays here."""
        Q, D, E = self._tri
        ab = tuple(self.A.shape[:-2])
        shape = tuple(np.broadcast_shapes(ab, tuple(lam.shape)))
        pad = (1,) * (len(shape) - len(ab)) + ab
        axes = tuple(i for i in range(len(shape)) if pad[i] == 1 and shape[i] > 1)
        lam_min = np.min(np.broadcast_to(lam, shape), axis=axes, keepdims=True) if axes \
            else np.broadcast_to(lam, shape)
        lam_min = np.reshape(lam_min, tuple(lam_min.shape[len(shape) - len(ab):]))
        eps = float(np.finfo(self.dtype).eps)
        if "_fro" in self.__dict__:
            fro = self._fro
        else:  # ||A||_F = ||T||_F up to the reduction's backward error, at O(d) cost per matrix
            fro = np.sqrt(np.sum(D * D, axis=-1) + 2 * np.sum(E * E, axis=-1)) * (1 + 4 * self.dim * eps)
        delta = 4 * self.dim * eps * fro + float(np.finfo(self.dtype).smallest_normal) * eps
        return bool(np.all(np.isfinite(delta))) and tri_certifies(D, E, lam_min, delta, eps)

    def _check_exists(self, lam, a1, delta):
        """``lam + a1 - delta`` (the certified modulus), or ValueError where it is not > 0:
        ``lam`` below ``-a1 - delta`` (certainly nonconvex), or within ``delta`` of ``-a1``."""
        xp = self.xp
        margin = lam + (a1 - delta)
        if bool(xp.all(margin > 0)):
            return margin
        lam_h, a_h, d_h = np.broadcast_arrays(to_numpy(lam), to_numpy(a1), to_numpy(delta))
        below = lam_h + a_h + d_h <= 0  # below the threshold even allowing for the eigenvalue error
        if np.any(below):
            i = tuple(int(k) for k in np.argwhere(below)[0])
            raise ValueError(
                f"prox of this {type(self).__name__} needs lam > {-a_h[i]:.6g} "
                f"(= minus its curvature lower bound: it is nonconvex) at batch "
                f"index {i}; got lam={lam_h[i]:.6g}")
        k = tuple(int(i) for i in np.argwhere(lam_h + a_h - d_h <= 0)[0])
        raise ValueError(
            f"lam={lam_h[k]:.17g} is too close to the nonconvex threshold -a_1 = {-a_h[k]:.17g} "
            f"of this Quadratic (batch index {k}) to certify that the prox exists: the computed "
            f"smallest eigenvalue is exact only to {d_h[k]:.3g} (4 d eps ||A||_F); "
            f"lam must exceed {d_h[k] - a_h[k]:.17g} (the prox needs lam > {-a_h[k]:.6g}; "
            f"got lam={lam_h[k]:.6g})")


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


def _blocks(A, size=1 << 21):
    """Slices of ``A``'s first axis holding about ``size`` elements each (the whole array for
    a single matrix): reductions and updates by blocks keep the transient memory small."""
    if A.ndim == 2:
        return [(...,)]
    per = math.prod(A.shape[1:])
    step = max(1, size // max(per, 1))
    return [(slice(i, min(i + step, A.shape[0])), ...) for i in range(0, A.shape[0], step)]


def _block_max(A, fn, xp):
    """``max`` over the last two axes of ``fn(A_block)``, shape ``A.shape[:-2]``, by blocks."""
    if A.ndim == 2:
        return xp.max(fn(A), axis=(-2, -1))
    return xp.concat([xp.max(fn(A[sl]), axis=(-2, -1)) for sl in _blocks(A)], axis=0)


def _load_matrix(A_in, xp):
    """The objective's own copy of ``A`` (dtype rules of :func:`moreau._backend.as_array`),
    checked finite and symmetric: exactly symmetric is kept bit for bit, within
    ``100 eps max|A|`` of it is symmetrised in place (by blocks), further is a ValueError.

    numpy: copy, finiteness (a finite block sum proves every entry finite) and the exact
    symmetry test run in one pass over cache-sized blocks, so ``A`` is read from memory
    once (separate passes cost about a third of one batched ``solve`` at d = 60)."""
    A = as_array(A_in, xp, "A", host_ok=True, copy=not is_numpy(xp), check_finite=not is_numpy(xp))
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must have shape (..., d, d) (got shape {tuple(A.shape)})")
    if is_numpy(xp):
        fresh = A is not A_in and not (isinstance(A_in, np.ndarray) and np.may_share_memory(A, A_in))
        A, symmetric = _copy_checked(A, fresh)
    else:
        symmetric = _check_symmetric(A, xp)
    if not symmetric:
        for sl in _blocks(A):  # in place, by blocks: no full-size temporary
            h = A[sl] / 2  # halves first: no overflow near the float range
            A[sl] = h + xp.matrix_transpose(h)
    return A


def _copy_checked(A, fresh):
    """``(C-contiguous copy of A (A itself when fresh), exactly symmetric?)``, raising for a
    non-finite entry or an asymmetry above tolerance; numpy, one pass in blocks of 512 KB."""
    out = A if fresh and A.flags.c_contiguous else np.empty(A.shape, dtype=A.dtype)
    finite = symmetric = True
    with np.errstate(over="ignore", invalid="ignore"):
        for sl in _blocks(A, 1 << 16):
            blk = out[sl]
            if out is not A:
                np.copyto(blk, A[sl])
            if not math.isfinite(np.add.reduce(blk, axis=None)):  # overflow of finite entries, or not finite
                finite = finite and _all_finite(blk, np)
            if symmetric and not np.array_equal(blk, np.swapaxes(blk, -1, -2)):
                symmetric = False
    if not finite:
        raise ValueError(f"A must be finite (got NaN or inf at {_first_bad(out, np)})")
    return out, symmetric or _check_symmetric(out, np)


def _check_symmetric(A, xp):
    """True if ``A`` is exactly symmetric; False if within ``100 eps max|A|`` of it;
    ``ValueError`` otherwise.  By blocks (no full-size temporary)."""
    if all(bool(xp.all(A[k] == xp.matrix_transpose(A[k]))) for k in _blocks(A)):
        return True
    asym = _block_max(A, lambda B: xp.abs(B - xp.matrix_transpose(B)), xp)
    scale = _block_max(A, xp.abs, xp)
    tol = 100 * xp.finfo(A.dtype).eps * scale
    if not bool(xp.all(asym <= tol)):
        asym_h, tol_h = to_numpy(asym), to_numpy(tol)
        i = tuple(int(k) for k in np.argwhere(asym_h > tol_h)[0])
        raise ValueError(f"A must be symmetric: max |A - A^T| = {asym_h[i]:.3g} at batch index "
                         f"{i} (tolerance {tol_h[i]:.3g} = 100 eps max|A|)")
    return False
