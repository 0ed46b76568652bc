r"""Certified Cholesky: solves that prove ``A + lam I`` positive definite, and proven lower
bounds on ``lambda_min(A)``.

* :func:`chol_solve` (the quadratic prox for few ``lam``): a Cholesky factorization of
  ``fl(A + (lam - sigma) I)`` per system, then the first-order correction to
  the exact ``A + lam I``.  The factorization *certifies* that the
  prox exists (``lambda_min(A + lam I) >= mu > 0``, derivation below); no
  eigenvalue is computed.  numpy: LAPACK ``potrf``/``potrs`` per system in
  blocks; other array-API backends: a batched ``linalg.cholesky`` and a
  substitution vectorised over the systems.
* :func:`chol_lower_bound` (the modulus of every quadratic certificate, and existence on
  the spectral routes): ``p <= lambda_min(A)`` proven by one factorization per matrix.

Certified Cholesky (Higham 2002, Thm 10.3; the criterion of Rump, BIT 46
(2006) 433-452, "Verification of positive definiteness").  Let ``u`` be the
unit roundoff, ``gamma_k = k u / (1 - k u)``, ``s = fl(lam - sigma)`` and
``At = fl(A + s I)``: only the diagonal is rounded, ``At = A + s I + D`` with
``|D_ii| <= u/(1-u) |At_ii|``.  If floating-point Cholesky of ``At`` runs to
completion (every pivot positive) the computed factor satisfies
``R^T R = At + E`` with ``|E| <= gamma_{d+1} |R^T| |R|`` whatever the order of
the inner products (blocked LAPACK included).  Then ``||E||_2 <=
gamma_{d+1} ||R||_F^2`` and ``||R||_F^2 = tr(At) + tr(E) <= tr(At) +
gamma_{d+1} ||R||_F^2``, so ``||E||_2 <= gamma_{d+1}/(1 - gamma_{d+1}) tr|At|``.
As ``R^T R`` is positive semidefinite,

    lambda_min(A + lam I) >= (lam - s) - gamma_{d+1}/(1 - gamma_{d+1}) sum_i |At_ii| - u/(1-u) max_i |At_ii| =: mu.

``sigma = 4 [gamma' (sum|A_ii| + d lam) + u' (max|A_ii| + lam)]`` makes
``mu`` about ``3 sigma / 4 > 0`` whenever the factorization completes; ``mu``
is evaluated with every rounding of its own evaluation bounded (factors
``1 +- k eps``), so ``mu > 0`` is a theorem about ``A + lam I`` (no underflow
assumed, as in Higham's analysis).  ``sigma`` is ``~4 d^2 u ||A||``: the
solve with ``At`` is off by ``g / lambda_min(A + lam I)`` relative
(``g = lam - s``), which the first-order correction ``x - g At^{-1} x`` removes
(error after it: that ratio squared, plus the usual backward-stable rounding);
a correction above ``sqrt(eps) |x|`` means the ratio was not small and the
route reports failure (the caller then takes the spectral route).  The route
returns no error bound: ``mu`` is a tiny lower bound (``~sigma``), useless as
a modulus, so callers that want a certificate take a spectral route, whose
modulus :func:`chol_lower_bound` proves with the same theorem: a factorization
of ``A`` shifted to just below its computed smallest eigenvalue.
"""

from __future__ import annotations

import math

import numpy as np

from ._backend import host_numpy as _host
from ._backend import is_numpy
from ._backend import numpy_dtype as _np_dtype

__all__ = ["chol_solve", "chol_lower_bound", "chol_proves_exists"]

_BLOCK = (
    1 << 18
)  # elements of A per block of systems (2 MB in float64): cache-sized, bounds the transient memory


def _shift(diag, lam_f, idx, eps, tiny):
    """``sigma`` per system (see the module doc), host numpy float64; ``diag`` ``(mA, d)``
    the diagonals of the matrices, ``idx`` the matrix of each system."""
    d = diag.shape[-1]
    u = eps / 2
    g = (d + 1) * u / (1 - (d + 1) * u)
    g = g / (1 - g)
    diag = np.abs(diag)
    tr, mx = diag.sum(-1)[idx], diag.max(-1)[idx]
    lam_abs = np.abs(lam_f)
    return 4 * (g * (tr + d * lam_abs) + u / (1 - u) * (mx + lam_abs)) * (1 + 8 * eps) + 4 * (d + 1) * tiny


def _loss(At_diag, eps):
    """Upper bound on ``gamma_{d+1}/(1 - gamma_{d+1}) tr|At| + u/(1-u) max|At_ii|`` (module doc)
    from the diagonals of the matrices that were factorized, with the rounding of its own
    evaluation bounded, per matrix (host float64)."""
    d = At_diag.shape[-1]
    u = eps / 2
    g = (d + 1) * u / (1 - (d + 1) * u)
    g = g / (1 - g)
    a = np.abs(At_diag)
    return (g * a.sum(-1) * (1 + (d + 4) * eps) + u / (1 - u) * a.max(-1)) * (1 + 4 * eps)


def _mu(At_diag, lam, s, eps):
    """The certified lower bound ``mu`` on ``lambda_min(A + lam I)`` (module doc), per system."""
    gap = (lam - s) * (1 - 2 * eps)  # lam - s >= fl(lam - s)(1 - u)
    return gap - _loss(At_diag, eps)


def chol_lower_bound(A, t, xp, *, lift=0.0, retry=True):
    r"""Proven lower bounds ``p <= lambda_min(A)``, one per matrix (host float64, shape ``A.shape[:-2]``).

    ``t`` (host, shape ``A.shape[:-2]``): an estimate of ``lambda_min(A)`` from below (the computed
    smallest eigenvalue less its error allowance).  Each matrix gets one Cholesky factorization of
    ``At = fl(A + s I)`` with ``s = fl(sigma - t)`` (``sigma`` as in :func:`_shift` at ``lam = -t``:
    about four times the factorization's backward error, so it completes when ``t`` is below
    ``lambda_min(A)``).  By the theorem in the module doc a factorization that completes gives
    ``R^T R = At + E`` with ``||E||_2 <= loss`` (:func:`_loss`, from the diagonal of ``At``; it also
    covers the rounding of the diagonal shift), so ``lambda_min(A + s I) >= -loss`` and

        lambda_min(A) >= -s - loss =: p,

    evaluated here as ``fl(-s - loss) - 2 eps (|s| + loss)`` (float64: the two roundings are at
    most ``u (|s| + loss)`` each), a theorem about ``A`` as stored.  ``p`` is about
    ``t - 1.25 sigma``.  Where a factorization breaks down (``t`` was above ``lambda_min(A)``) the
    allowance is multiplied by 8 and that matrix retried, twice, then once more from
    ``-||A||_inf`` (a lower bound on every eigenvalue: a weak ``p``, but a proven one); ``-inf``
    only where even that fails (not expected for finite ``A``).  ``lift`` moves the shift up by
    ``lift sigma`` (``s = (1 - lift) sigma - t``), ``retry=False`` stops after the first try:
    :func:`chol_proves_exists` uses both.
    Numpy: LAPACK ``potrf`` per matrix; other namespaces: a batched ``linalg.cholesky`` (matrix by
    matrix where the batched call raises).
    """
    d = A.shape[-1]
    batch = tuple(A.shape[:-2])
    eps = float(xp.finfo(A.dtype).eps)
    tiny = float(xp.finfo(A.dtype).smallest_normal)
    A2 = xp.reshape(A, (math.prod(batch), d, d))
    diag = np.asarray(_host(xp.linalg.diagonal(A2)), dtype=np.float64)
    t = np.broadcast_to(np.asarray(t, dtype=np.float64), batch).reshape(-1)
    # every matrix scaled by a power of two c = 2^-e to size ~1 (exact but for entries that become
    # subnormal: at most d ulps of the smallest subnormal in norm, inside the (d + 2) tiny of the loss),
    # so that neither the shift nor the loss can overflow or underflow
    _, e = np.frexp(np.maximum(np.max(np.abs(diag), axis=-1), np.abs(t)))
    top = np.finfo(_np_dtype(A.dtype)).maxexp - 8
    e = np.clip(e, -top, top)  # c stays a normal number of A's dtype
    c = np.ldexp(1.0, -e)
    diag, t = diag * c[:, None], t * c
    idx = np.arange(t.shape[0])
    sigma = _shift(diag, -t, idx, eps, tiny)
    p = np.full(t.shape[0], -np.inf)
    todo = idx
    for widen in (1.0, 8.0, 64.0, None) if retry else (1.0,):
        if todo.size == 0:
            break
        if widen is None:  # t was far off: the last try starts below -||A||_inf <= lambda_min(A)
            rows = _host(xp.max(xp.sum(xp.abs(xp.take(A2, xp.asarray(todo), axis=0)), axis=-1), axis=-1))
            t[todo] = -np.asarray(rows, dtype=np.float64) * c[todo] * (1 + 2 * (d + 2) * eps) - tiny
            sigma[todo] = _shift(diag[todo], -t[todo], np.arange(todo.size), eps, tiny)
            widen = 1.0
        s = ((widen - lift) * sigma[todo] - t[todo]).astype(_np_dtype(A.dtype))
        ok, At_diag = _chol_completes(A2, todo, c[todo], s, xp)
        loss = _loss(At_diag, eps) + (d + 2) * tiny  # + underflow in the scaling and the inner products
        s64 = s.astype(np.float64)
        p_scaled = (-s64 - loss) - 2 * eps * (np.abs(s64) + loss)
        p[todo[ok]] = np.ldexp(p_scaled, e[todo])[ok] - float(np.finfo(np.float64).smallest_subnormal)
        todo = todo[~ok]
    return p.reshape(batch)


def chol_proves_exists(A, lam, xp):
    """True when ``lambda_min(A + lam I) > 0`` is proven for every matrix: one certified
    factorization of ``fl(A + (lam - sigma) I)`` each, as in :func:`chol_solve`
    (:func:`chol_lower_bound` at ``t = -lam`` lifted by ``2 sigma``: a completed factorization
    proves ``lambda_min(A) >= -lam + sigma - loss > -lam``).  ``lam``: host, one per matrix (pass
    each matrix's smallest: the claim is monotone in ``lam``).  False means "not proven here"
    (the caller's spectral check then decides and explains), never "does not exist"."""
    lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), tuple(A.shape[:-2]))
    p = chol_lower_bound(A, -lam, xp, lift=2.0, retry=False)
    return bool(np.all(lam + p > 0))  # round to nearest keeps the sign of a sum


def _chol_completes(A2, idx, c, s, xp):
    """``(completed (len(idx),) bool, diagonals of fl(c A + s I) (len(idx), d) float64)``: whether the
    Cholesky factorization of each scaled, shifted matrix runs to completion, by blocks
    (``c`` powers of two)."""
    d = A2.shape[-1]
    n = idx.shape[0]
    ok = np.zeros(n, dtype=bool)  # host bookkeeping (flags, diagonals): the matrices stay on xp
    At_diag = np.empty((n, d))
    step = max(1, _BLOCK // (d * d))
    if is_numpy(xp):
        from scipy.linalg import get_lapack_funcs

        (potrf,) = get_lapack_funcs(("potrf",), (A2,))
    for j0 in range(0, n, step):
        sl = slice(j0, min(n, j0 + step))
        if is_numpy(xp):
            At = A2[idx[sl]]  # a new C-contiguous array (fancy indexing copies)
            At *= c[sl, None, None].astype(At.dtype)
            At.reshape(At.shape[0], d * d)[:, :: d + 1] += s[sl, None]
            At_diag[sl] = np.diagonal(At, axis1=-2, axis2=-1)
            for j in range(At.shape[0]):  # At[j] symmetric: its transpose is the Fortran-order matrix
                _, info = potrf(At[j].T, lower=1, clean=0, overwrite_a=1)
                ok[j0 + j] = info == 0
            continue
        At = xp.take(A2, xp.asarray(idx[sl]), axis=0) * xp.asarray(c[sl], dtype=A2.dtype)[
            :, None, None
        ] + xp.asarray(s[sl], dtype=A2.dtype)[:, None, None] * xp.eye(d, dtype=A2.dtype)
        At_diag[sl] = np.asarray(_host(xp.linalg.diagonal(At)), dtype=np.float64)
        try:
            parts = [xp.linalg.cholesky(At)]
        except Exception:  # numpy-based namespaces raise on a failed pivot: matrix by matrix
            parts = []
            for j in range(At.shape[0]):
                try:
                    parts.append(xp.linalg.cholesky(At[j : j + 1, ...]))
                except Exception:
                    parts.append(xp.full((1, d, d), float("nan"), dtype=At.dtype))
            parts = [xp.concat(parts, axis=0)]
        dg = xp.linalg.diagonal(parts[0])  # cupy: NaN instead of an exception
        ok[sl] = np.asarray(_host(xp.all(xp.isfinite(dg) & (dg > 0), axis=-1)))
    return ok, At_diag


def _flatten(A, lam, R, xp):
    """``(A2 (mA, d, d), idx (N,) host, lam_f (N,), R_f (N, d, k), shape)``: one row per system."""
    d = A.shape[-1]
    batch = tuple(A.shape[:-2])
    shape = tuple(np.broadcast_shapes(batch, tuple(lam.shape), tuple(R.shape[:-2])))
    mA = math.prod(batch)
    N = math.prod(shape)
    A2 = xp.reshape(A, (mA, d, d))
    idx = np.broadcast_to(np.arange(mA).reshape(batch), shape).reshape(N)
    lam_f = xp.reshape(xp.broadcast_to(lam, shape), (N,))
    R_f = xp.reshape(xp.broadcast_to(R, shape + tuple(R.shape[-2:])), (N, d, R.shape[-1]))
    return A2, idx, lam_f, R_f, shape


def chol_solve(A, lam, R, xp):
    r"""``(A + lam I)^{-1} R`` by certified Cholesky and a first-order shift correction.

    ``A`` ``(*batch, d, d)`` symmetric, ``lam`` broadcastable to the systems'
    shape, ``R`` ``(..., d, k)`` (k right-hand sides per system).  Returns
    ``(X (shape, d, k), mu (shape) host)`` with ``mu > 0`` a certified lower
    bound on ``lambda_min(A + lam I)`` for every system, or ``None`` where the
    certificate fails for some system (breakdown, or a shift correction
    above ``sqrt(eps)``).
    """
    d, k = A.shape[-1], R.shape[-1]
    eps = float(xp.finfo(A.dtype).eps)
    A2, idx, lam_f, R_f, shape = _flatten(A, lam, R, xp)
    N = idx.shape[0]
    lam_h = np.asarray(_host(lam_f), dtype=np.float64)
    A2h = _host(A2) if is_numpy(xp) else None  # numpy: a view, no copy
    diag = np.asarray(_host(xp.linalg.diagonal(A2)), dtype=np.float64)  # only the diagonals leave a device
    sigma = _shift(diag, lam_h, idx, eps, float(xp.finfo(A.dtype).smallest_normal))
    s_h = (lam_h - sigma).astype(_np_dtype(A.dtype))
    mu = np.empty(N)  # host: one certified bound per system
    X = xp.empty((N, d, k), dtype=A.dtype)
    step = max(1, _BLOCK // (d * d))
    for j0 in range(0, N, step):
        j1 = min(N, j0 + step)
        sl = slice(j0, j1)
        out = (
            _chol_block_np(A2h, idx[sl], lam_h[sl], s_h[sl], _host(R_f[sl, ...]), eps)
            if A2h is not None
            else _chol_block_xp(A2, idx[sl], lam_f[sl], s_h[sl], R_f[sl, ...], eps, xp)
        )
        if out is None or out[0] is None:
            return None
        X[sl, ...], mu[sl] = out
    if not np.all(mu > 0):
        return None
    return xp.reshape(X, shape + (d, k)), mu.reshape(shape)


def _chol_block_np(A2, idx, lam, s, R, eps):
    from scipy.linalg import get_lapack_funcs

    posv, potrs = get_lapack_funcs(("posv", "potrs"), (A2,))
    n, d = idx.shape[0], A2.shape[-1]
    cont = n > 1 and bool(np.all(np.diff(idx) == 1))
    At = np.array(A2[idx[0] : idx[-1] + 1] if cont else A2[idx], copy=True)
    flat = At.reshape(n, d * d)
    flat[:, :: d + 1] += s[:, None].astype(At.dtype)
    mu = _mu(np.diagonal(At, axis1=-2, axis2=-1).astype(np.float64), lam, s.astype(np.float64), eps)
    if not np.all(mu > 0):
        return None
    X = np.empty(
        (n, d, R.shape[-1]), dtype=At.dtype
    )  # the numpy (LAPACK) path only: _chol_block_xp elsewhere
    Y = np.empty_like(X)
    for j in range(n):  # At[j] is symmetric: At[j].T is the same matrix in Fortran order (no copy)
        c, X[j], info = posv(At[j].T, R[j], lower=1, overwrite_a=1)
        if info != 0:
            return None
        Y[j], info = potrs(c, X[j], lower=1)
    return _shift_back(X, Y, lam, s, eps, np), mu


def _shift_back(X, Y, lam, s, eps, xp):
    """``X - (lam - s) Y`` with ``Y = At^{-1} X``: the first-order correction from
    ``At = A + s I`` to ``A + lam I`` (``(At + g I)^{-1} = At^{-1} - g At^{-2} + O(g^2)``);
    ``None`` when the correction exceeds ``sqrt(eps) |X|`` (then ``g`` was not small)."""
    g = xp.asarray((lam - s).astype(np.float64))
    dX = xp.astype(g, X.dtype)[:, None, None] * Y
    X = X - dX
    return X if _converged(dX, X, eps, xp) else None


def _chol_block_xp(A2, idx, lam, s, R, eps, xp):
    d = A2.shape[-1]
    Ab = xp.take(A2, xp.asarray(idx), axis=0)
    At = Ab + xp.asarray(s, dtype=A2.dtype)[:, None, None] * xp.eye(d, dtype=A2.dtype)
    At_diag = np.asarray(_host(xp.linalg.diagonal(At)), dtype=np.float64)
    lam_h = _host(lam).astype(np.float64)
    mu = _mu(At_diag, lam_h, s.astype(np.float64), eps)
    if not np.all(mu > 0):
        return None
    try:
        Lf = xp.linalg.cholesky(At)
    except Exception:  # numpy-based namespaces raise LinAlgError on a failed pivot
        return None
    dg = xp.linalg.diagonal(Lf)
    if not bool(xp.all(xp.isfinite(dg) & (dg > 0))):  # cupy: NaN instead of an exception
        return None
    X = _chol_subst(Lf, R, xp)
    return _shift_back(X, _chol_subst(Lf, X, xp), lam_h, s, eps, xp), mu


def _chol_subst(Lf, R, xp):
    """``(L L^T)^{-1} R`` by forward and back substitution, vectorised over the systems."""
    n, d, k = R.shape
    Y = xp.zeros((n, d, k), dtype=R.dtype)
    for i in range(d):
        acc = R[:, i, :] - (Lf[:, i : i + 1, :i] @ Y[:, :i, :])[:, 0, :] if i else R[:, i, :]
        Y[:, i, :] = acc / Lf[:, i, i][:, None]
    X = xp.zeros((n, d, k), dtype=R.dtype)
    for i in range(d - 1, -1, -1):
        col = xp.matrix_transpose(Lf[:, i + 1 :, i : i + 1])  # (n, 1, d-i-1): L[j, i] for j > i
        acc = Y[:, i, :] - (col @ X[:, i + 1 :, :])[:, 0, :] if i < d - 1 else Y[:, i, :]
        X[:, i, :] = acc / Lf[:, i, i][:, None]
    return X


def _converged(dX, X, eps, xp=np):
    m_dx = xp.max(xp.abs(dX), axis=1)
    m_x = xp.max(xp.abs(X), axis=1)
    return bool(xp.all(m_dx <= math.sqrt(eps) * m_x))
