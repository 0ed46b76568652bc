"""Batches of symmetric matrices: the objective's own checked copy (by blocks), and products."""

from __future__ import annotations

import math

import numpy as np

from ._backend import _all_finite, _first_bad, as_array, is_numpy, to_numpy

__all__ = ["load_symmetric", "blocks", "matvec"]


def blocks(A, size=1 << 21):
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
    return xp.concat([xp.max(fn(A[sl]), axis=(-2, -1)) for sl in blocks(A)], axis=0)


def load_symmetric(A_in, xp):
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
        for sl in blocks(A):  # in place, by blocks: no full-size temporary
            h = A[sl] / 2  # halves first: no overflow near the float range
            A[sl] = h + xp.matrix_transpose(h)
    return A


def _copy_checked(A, fresh):
    """``(C-contiguous copy of A (A itself when fresh), exactly symmetric?)``, raising for a
    non-finite entry or an asymmetry above tolerance; numpy, one pass in blocks of 512 KB."""
    out = A if fresh and A.flags.c_contiguous else np.empty(A.shape, dtype=A.dtype)
    finite = symmetric = True
    with np.errstate(over="ignore", invalid="ignore"):
        for sl in blocks(A, 1 << 16):
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
    if all(bool(xp.all(A[k] == xp.matrix_transpose(A[k]))) for k in blocks(A)):
        return True
    asym = _block_max(A, lambda B: xp.abs(B - xp.matrix_transpose(B)), xp)
    scale = _block_max(A, xp.abs, xp)
    tol = 100 * xp.finfo(A.dtype).eps * scale
    if not bool(xp.all(asym <= tol)):
        asym_h, tol_h = to_numpy(asym), to_numpy(tol)
        i = tuple(int(k) for k in np.argwhere(asym_h > tol_h)[0])
        raise ValueError(
            f"A must be symmetric: max |A - A^T| = {asym_h[i]:.3g} at batch index "
            f"{i} (tolerance {tol_h[i]:.3g} = 100 eps max|A|)"
        )
    return False


def matvec(M, x):
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
