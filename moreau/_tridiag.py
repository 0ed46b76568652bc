r"""Routes of the quadratic prox that need no eigendecomposition.

``prox(w) = (A + lam I)^{-1}(b + lam w)`` for a batch of symmetric ``A``; which
route runs is chosen by :meth:`moreau.Quadratic._solve` from the work (number
of systems per matrix) and from what is cached.

* :func:`moreau._chol.chol_solve` (few ``lam``): the certified Cholesky route (its own module).
* :func:`tridiagonalize` + :func:`tri_solve` (many ``lam``, numpy with scipy):
  ``A = Q T Q^T`` (LAPACK ``sytrd`` + ``orgqr`` per matrix, about 5 batched
  solves of work against about 10 for ``eigh``), then per ``lam`` a tridiagonal
  ``LDL^T`` solve vectorised over every (lam, client) and one batched GEMM with
  ``Q``.  ``T + lam I`` is positive definite wherever the caller certified the
  prox exists, and Gaussian elimination without pivoting on a symmetric
  positive definite tridiagonal matrix is backward stable (Higham, *Accuracy and
  Stability of Numerical Algorithms*, 2nd ed., Thm 9.12 and §9.5).  The smallest
  eigenvalue of ``T`` (bisection, LAPACK ``stebz``) is the estimate from which
  :func:`moreau._chol.chol_lower_bound` proves the certificate's modulus (and
  explains a refusal); existence itself is proven by a certified Cholesky.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["tridiagonalize", "tri_solve", "tri_prox", "tri_min_eig"]


def tridiagonalize(A, want_q=True):
    r"""``(Q, D, E)`` with ``A = Q T Q^T``, ``T`` tridiagonal (diagonal ``D`` ``(*batch, d)``,
    off-diagonal ``E`` ``(*batch, d-1)``), ``Q`` ``(*batch, d, d)`` orthogonal to
    working precision; numpy ``A`` (LAPACK ``sytrd`` then ``orgqr`` on the
    reflectors, one call each per matrix: LAPACK's ``orgtr`` for ``uplo='L'``).
    ``want_q=False``: ``T`` only (``Q`` is None; half the work, no array of ``A``'s size).
    """
    from scipy.linalg import get_lapack_funcs

    sytrd, orgqr, lw_f = get_lapack_funcs(("sytrd", "orgqr", "sytrd_lwork"), (A,))
    d = A.shape[-1]
    batch = tuple(A.shape[:-2])
    A2 = A.reshape((-1, d, d))
    m = A2.shape[0]
    Q = None
    if want_q:
        Q = np.empty_like(A2)
        Q[:, 0, :] = 0
        Q[:, :, 0] = 0
        Q[:, 0, 0] = 1
    D = np.empty((m, d), dtype=A.dtype)
    E = np.empty((m, max(d - 1, 0)), dtype=A.dtype)
    lw = max(1, int(lw_f(d, lower=1)[0]))
    lw_q = max(1, 64 * (d - 1))
    for j in range(m):
        c, D[j], e, tau, info = sytrd(A2[j].T, lower=1, lwork=lw)  # A symmetric: .T is the same matrix
        if info != 0:
            raise RuntimeError(f"LAPACK sytrd failed (info={info})")  # pragma: no cover
        if d > 1:
            E[j] = e
            if want_q:
                q, _, info = orgqr(c[1:, :-1], tau, lwork=lw_q)
                Q[j, 1:, 1:] = q
    Q = Q.reshape(batch + (d, d)) if want_q else None
    return Q, D.reshape(batch + (d,)), E.reshape(batch + (max(d - 1, 0),))


def tri_min_eig(D, E):
    r"""Smallest eigenvalue of each tridiagonal ``T = tridiag(E, D, E)`` by bisection
    (LAPACK ``stebz``, default absolute tolerance: error at most ``eps ||T||``
    plus the Sturm count's backward error ``2.5 eps max|E|``), shape ``D.shape[:-1]``."""
    from scipy.linalg import get_lapack_funcs

    (stebz,) = get_lapack_funcs(("stebz",), (D,))
    d = D.shape[-1]
    D2 = D.reshape((-1, d))
    E2 = E.reshape((D2.shape[0], max(d - 1, 0)))
    out = np.empty(D2.shape[0], dtype=D.dtype)
    for j in range(D2.shape[0]):
        if d == 1:
            out[j] = D2[j, 0]
            continue
        _, wv, _, _, info = stebz(D2[j], E2[j], 2, 0.0, 0.0, 1, 1, 0.0, "E")
        if info != 0:
            raise RuntimeError(f"LAPACK stebz failed (info={info})")  # pragma: no cover
        out[j] = wv[0]
    return out.reshape(D.shape[:-1])


def _dfirst(x, nd):
    """``x`` ``(*s, d)`` as ``(d, 1, ..., 1, *s)`` with ``nd`` axes after ``d`` (a view):
    the layout in which every system is the innermost, contiguous axis."""
    return np.moveaxis(x, -1, 0).reshape((x.shape[-1],) + (1,) * (nd - (x.ndim - 1)) + tuple(x.shape[:-1]))


def tri_solve(Dt, Et, lam, Rt):
    r"""``(T + lam I)^{-1} R`` in place for tridiagonal ``T``, everything with ``d`` first:
    diagonal ``Dt`` ``(d, *s)``, off-diagonal ``Et`` ``(d-1, *s)``, ``lam`` ``(*s)`` and the
    right-hand sides ``Rt`` ``(d, *systems)``, ``s`` broadcasting against ``systems``.
    ``LDL^T`` without pivoting (``T + lam I`` must be positive definite), vectorised
    over every system (contiguous innermost axes), a loop over ``d``."""
    d = Rt.shape[0]
    if Rt.ndim == 1:  # one system: give it an axis (0-d slices are scalars, not arrays)
        return tri_solve(Dt[..., None], Et[..., None], np.reshape(lam, (1,)), Rt[:, None])[:, 0]
    pshape = tuple(np.broadcast_shapes(tuple(Dt.shape[1:]), tuple(np.shape(lam))))
    Dt = Dt.reshape((d,) + (1,) * (len(pshape) - Dt.ndim + 1) + tuple(Dt.shape[1:]))  # d stays first
    Et = Et.reshape((d - 1,) + (1,) * (len(pshape) - Et.ndim + 1) + tuple(Et.shape[1:]))
    P = np.empty((d,) + pshape, dtype=Rt.dtype)
    np.add(Dt, lam, out=P)  # the diagonal of T + lam I, overwritten by the pivots
    l_ = np.empty(pshape, dtype=Rt.dtype)
    tmp = np.empty(Rt.shape[1:], dtype=Rt.dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported by the caller
        for i in range(1, d):
            np.divide(Et[i - 1], P[i - 1], out=l_)
            P[i] -= Et[i - 1] * l_
            np.multiply(l_, Rt[i - 1], out=tmp)
            Rt[i] -= tmp
        Rt[d - 1] /= P[d - 1]
        for i in range(d - 2, -1, -1):
            np.multiply(Et[i], Rt[i + 1], out=tmp)
            Rt[i] -= tmp
            Rt[i] /= P[i]
    return Rt


def tri_prox(Q, D, E, A, b, w, lam, need_u):
    r"""``(theta, u or None)``: ``theta = Q (T + lam I)^{-1} Q^T (b + lam w)`` and
    ``u = Q (T + lam I)^{-1} Q^T (b - A w)``, numpy, any broadcasting of ``b``, ``w``
    (``(..., d)``) and ``lam`` against the batch of ``Q``; one tridiagonal solve
    vectorised over every (lam, client) and one batched GEMM for all of them."""
    d = Q.shape[-1]
    qb = tuple(Q.shape[:-2])
    Qt = np.swapaxes(Q, -1, -2)
    cb, cw = (Qt @ b[..., None])[..., 0], (Qt @ w[..., None])[..., 0]
    shape = tuple(np.broadcast_shapes(tuple(cb.shape[:-1]), tuple(cw.shape[:-1]), tuple(lam.shape)))
    k = 2 if need_u else 1
    cg = (Qt @ (b - (A @ w[..., None])[..., 0])[..., None])[..., 0] if need_u else None
    nq = len(qb)
    if qb != shape[len(shape) - nq :]:  # Q broadcast against the systems: general layout
        nd = len(shape)
        Rt = np.empty((d, k) + shape, dtype=Q.dtype)
        np.multiply(lam, _dfirst(cw, nd), out=Rt[:, 0])
        Rt[:, 0] += _dfirst(cb, nd)
        if need_u:
            Rt[:, 1] = _dfirst(cg, nd)
        tri_solve(_dfirst(D, nd), _dfirst(E, nd), lam, Rt)
        Z = (Q @ np.moveaxis(Rt, 0, -1)[..., None])[..., 0]
        return Z[0], (Z[1] if need_u else None)
    # shape = lead + qb: systems laid out (client, k, lead) so that each client's block of
    # right-hand sides is one BLAS-ready (d, k * #lead) matrix for the GEMM with Q
    lead = shape[: len(shape) - nq]
    mq, pl = math.prod(qb), math.prod(lead)
    nl = len(lead)
    order = (len(shape),) + tuple(range(nl, len(shape))) + tuple(range(nl))  # (d, *qb, *lead)

    def view(x):  # x (..., d) as a (d, *qb, *lead) view: no copy
        return np.transpose(np.broadcast_to(x, shape + (d,)), order)

    lam_v = np.transpose(np.broadcast_to(lam, shape), order[1:])  # (*qb, *lead) view
    srcs = [view(cw), view(cb)] + ([view(cg)] if need_u else [])
    if nl != 1:  # one chunk: flatten the lead axes
        lam_v = np.reshape(lam_v, qb + (pl,))
        srcs = [np.reshape(x, (d,) + qb + (pl,)) for x in srcs]
    Q2 = Q.reshape(mq, d, d)
    out = np.empty((k, pl, mq, d), dtype=Q.dtype)
    D2, E2 = D.reshape(mq, d).T[:, :, None, None], E.reshape(mq, max(d - 1, 0)).T[:, :, None, None]
    step = max(1, (1 << 20) // max(1, d * mq * k))  # lambdas per chunk: about 8 MB of right-hand sides
    for j0 in range(0, pl, step):  # chunks: every work array stays cache-sized and is reused
        j1 = min(pl, j0 + step)
        c = j1 - j0
        Rt = np.empty((d, mq, k, c), dtype=Q.dtype)
        R6 = Rt.reshape((d,) + qb + (k, c))
        at = (slice(None),) * (1 + nq)
        lam_c = lam_v[..., j0:j1]
        np.multiply(lam_c[None], srcs[0][..., j0:j1], out=R6[at + (0,)])
        R6[at + (0,)] += srcs[1][..., j0:j1]
        if need_u:
            R6[at + (1,)] = srcs[2][..., j0:j1]
        tri_solve(D2, E2, np.reshape(lam_c, (mq, 1, c)), Rt)
        for kk in range(k):  # one BLAS GEMM per client and column block, written in place
            np.matmul(Q2, Rt[:, :, kk, :].transpose(1, 0, 2), out=out[kk, j0:j1].transpose(1, 2, 0))
    Z = out.reshape((k,) + shape + (d,))
    return Z[0], (Z[1] if need_u else None)
