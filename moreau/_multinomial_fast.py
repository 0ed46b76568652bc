r"""Newton's evaluation of the softmax loss (``Multinomial._eval`` / ``_hess_at``) in a class-major layout.

The plain methods of :class:`~moreau.Multinomial` (``value``, ``grad``, ``hess``,
``_grad_rounding``, ``_hess_error``) keep the samples-by-classes layout ``(..., n, C)`` and are
the reference; the functions here form the same quantities with the same rounding structure
from the logits laid out ``(..., C, n)``, so that every operation over the short class axis
(C is typically 2-10) is an unrolled elementwise operation on contiguous rows of length ``n``
(numpy reductions over a last axis of length 4 cost 5-10x more), and one evaluation of the
logits serves the value, the gradient, its rounding bound, the Hessian and its error bound:

* ``exp(z_c - max z)``, the sums of ``C`` (or ``C - 1``) terms, the divisions and ``1 - pi_c``
  as the other classes' sum over ``s`` (never a difference) are the operations the rounding
  analyses of ``Multinomial._grad_rounding`` and ``Multinomial._hess_error`` count (a sum's
  bound ``gamma_C`` holds in any order);
* the Hessian's blocks ``X^T diag(q_ac) X``, ``q_aa = p pi_a (1 - pi_a)``, ``q_ac = -p (pi_a pi_c)``,
  are formed once per unordered pair ``a <= c`` (``C (C + 1) / 2`` products, one GEMM per block of
  clients) and block ``(c, a)`` is stored as the transpose of block ``(a, c)``: entry ``(k, l)``
  of block ``(c, a)`` is then ``sum_j x_jl fl(q_j x_jk)``, an evaluation of the same exact sum
  with the same rounding (one product per term and a dot product of ``n`` terms,
  ``gamma_{n+1}``), so ``_hess_error``'s entrywise analysis covers every entry;
* both run in blocks of clients whose temporaries stay in cache and are written into
  preallocated outputs: at m = 500, n = 100 fresh memory per temporary cost as much in page
  faults as the arithmetic (benchmarks/RESULTS.md, section 2b).
"""
from __future__ import annotations

import numpy as np

from . import _newton_steps
from ._backend import safe_norm

__all__ = ["class_norm", "hessian_blocks", "max_over", "softmax_blocks"]

_BLOCK_BYTES = 1 << 20  # size of the scaled copies of X per block of clients (CPU cache)
_EVAL_BYTES = 1 << 17  # size of one (clients, C, n) temporary per block of the evaluation


def max_over(xp, rows):
    """Elementwise maximum of the arrays ``rows`` (an unrolled reduction)."""
    out = rows[0]
    for r in rows[1:]:
        out = xp.maximum(out, r)
    return out


def _sum(rows, skip=None):
    """``rows[0] + rows[1] + ...`` in that order, leaving out index ``skip``: a fresh array
    (the first sum; the rest added in place) unless only one term is left (then that row)."""
    terms = [r for c, r in enumerate(rows) if c != skip]
    if len(terms) == 1:
        return terms[0]
    out = terms[0] + terms[1]
    for r in terms[2:]:
        out += r
    return out


def class_norm(xp, R):
    """``||R[..., :, j]||`` over the class axis (``R`` ``(..., C, n)``) with the guarantee of
    :func:`~moreau._backend.safe_norm` (``(C/2 + 2) eps`` relative): the plain square root of
    the unrolled sum of squares where that sum proves it safe, else ``safe_norm`` itself."""
    C = R.shape[-2]
    s = R[..., 0, :] * R[..., 0, :]
    for c in range(1, C):
        s += R[..., c, :] * R[..., c, :]
    fi = xp.finfo(R.dtype)
    if bool(xp.all(xp.isfinite(s) & (s >= float(fi.smallest_normal) / float(fi.eps)))):
        return xp.sqrt(s)
    return safe_norm(xp.matrix_transpose(R), xp)


def softmax_blocks(xp, X, W, Yt, p):
    """One evaluation of the softmax loss on a flat batch, in blocks of clients whose
    temporaries stay in cache (and are not fresh memory each time: page faults cost as much as
    the arithmetic at this size): ``X`` ``(n, d)`` (shared) or ``(N, n, d)``, ``W`` ``(N, d, C)``,
    the one-hot labels ``Yt`` ``(C, n)`` or ``(N, C, n)`` (``1 - Yt`` formed per block), the weights ``p``
    ``(n,)`` or ``(N, n)``.  Returns ``(loss, Gt, Rnorm, state)``: ``sum_j p_j (lse_j - z_{j y_j})``
    ``(N,)``, ``(p R) X`` ``(N, C, d)`` with ``R = P - Y`` (``-(1 - pi_y)`` from ``Q`` at the
    label), ``||R_j||`` ``(N, n)`` (:func:`class_norm`) and ``state`` ``(N, 2C + 1, n)``: the
    probabilities ``P`` (rows ``:C``), ``Q_c = sum_{c' != c} exp(z_c' - mx) / s`` (``1 - pi_c``
    without cancellation, rows ``C:2C``) and the largest shift ``min(mx - min_c z_c, 2000)``
    (row ``2C``), with ``z = W^T x_j``, ``mx = max_c z_c``, ``s = sum_c exp(z_c - mx)``."""
    N, d, C = W.shape
    n = X.shape[-2]
    dt = W.dtype
    state = xp.empty((N, 2 * C + 1, n), dtype=dt)
    loss = xp.empty((N,), dtype=dt)
    Gt = xp.empty((N, C, d), dtype=dt)
    Rnorm = xp.empty((N, n), dtype=dt)
    cupy = "cupy" in getattr(xp, "__name__", "")
    step = N if cupy else max(1, _EVAL_BYTES // (C * n * 8))
    nY = 1 - Yt if Yt.ndim == 2 else None

    for i in range(0, N, step):
        j = min(i + step, N)
        Xb = X if X.ndim == 2 else X[i:j, ...]
        Yb = Yt if Yt.ndim == 2 else Yt[i:j, ...]
        nYb = nY if Yt.ndim == 2 else 1 - Yb
        pb = p if p.ndim == 1 else p[i:j, ...]
        Zt = xp.matrix_transpose(W[i:j, ...]) @ xp.matrix_transpose(Xb)  # (b, C, n)
        rows = [Zt[:, c, :] for c in range(C)]
        zy = rows[0] * Yb[..., 0, :]
        for c in range(1, C):
            zy += rows[c] * Yb[..., c, :]  # exact: one nonzero term
        mx = max_over(xp, rows)
        state[i:j, 2 * C, :] = xp.minimum(mx - _min_over(xp, rows), 2000.0)  # = max_c fl(mx - z_c)
        Zt -= mx[:, None, :]
        E = xp.exp(Zt)
        er = [E[:, c, :] for c in range(C)]
        sb = _sum(er)
        for c in range(C):
            state[i:j, C + c, :] = _sum(er, skip=c) / sb
        E /= sb[:, None, :]
        state[i:j, :C, :] = E
        t = xp.log(sb)
        t += mx
        t -= zy
        t *= pb  # p (lse - z_y): the operations of Multinomial.value
        loss[i:j] = xp.sum(t, axis=-1)
        R = E
        R *= nYb
        R -= state[i:j, C:2 * C, :] * Yb  # P - Y, -(1 - pi_y) from Q at the label (exact selection)
        Rnorm[i:j, :] = class_norm(xp, R)
        R *= pb[..., None, :]
        Gt[i:j, ...] = R @ Xb
    return loss, Gt, Rnorm, state


def _min_over(xp, rows):
    out = rows[0]
    for r in rows[1:]:
        out = xp.minimum(out, r)
    return out


def hessian_blocks(xp, X, P, Q, p, mu, d, C, low=False, rows=None, out=None):
    r"""``sum_j p_j S_j (x) x_j x_j^T`` ``(N, d*C, d*C)`` for a flat batch: ``X`` ``(n, d)``
    (shared) or ``(N, n, d)``, ``P``, ``Q`` ``(N, C, n)`` (probabilities and complements),
    ``p`` ``(N, n)`` or ``(n,)``, plus ``mu I`` (``mu`` ``(N,)``, added to the diagonal).  The weights ``q_aa = p (P_a Q_a)``, ``q_ac = -(p (P_a P_c))``
    (the products of ``Multinomial.hess``), the blocks ``X^T (q X)`` for ``a <= c`` in one
    GEMM per block of clients, block ``(c, a)`` the transpose of block ``(a, c)``.  ``low``:
    the weights and each block of ``X`` rounded to float32 and the products formed in float32
    (a direction for Newton only, ``Multinomial._low_hessian_ok``; returned in ``P``'s dtype).
    ``rows`` (numpy only: flat indices) and ``out`` ``(N, d*C, d*C)``: the entries ``rows``
    only, written into ``out[rows]`` block by block (each block's data gathered, never a copy
    of the whole batch's); every entry is computed alone, so its bits do not depend on the block."""
    N, n = P.shape[0], P.shape[-1]
    pairs = [(a, c) for a in range(C) for c in range(a, C)]
    K = len(pairs)
    shared = X.ndim == 2
    if low and shared:  # shared data: rounded once
        X = xp.astype(X, xp.float32)
    cupy = "cupy" in getattr(xp, "__name__", "")
    M = N if rows is None else int(rows.shape[0])
    step = M if cupy else max(1, _BLOCK_BYTES // (n * K * d * 8))
    H = xp.empty((N, d, C, d, C), dtype=P.dtype) if rows is None else None
    fast = isinstance(P, np.ndarray)  # the diagonal as a strided view (numpy)
    Gs = []
    for i in range(0, M, step):
        j = min(i + step, M)
        sel = slice(i, j) if rows is None else rows[i:j]
        Pi, Qi, pi = P[sel, ...], Q[sel, ...], p if p.ndim == 1 else p[sel, ...]
        q = xp.stack([pi * (Pi[:, a, :] * Qi[:, a, :]) if a == c else -(pi * (Pi[:, a, :] * Pi[:, c, :]))
                      for a, c in pairs], axis=-1)  # (b, n, K)
        Xi = X if shared else X[sel, ...]
        if low:
            q = xp.astype(q, xp.float32)
            Xi = Xi if shared else xp.astype(Xi, xp.float32)
        # q_k x_j for every pair k, (b, n, K d): the rows tiled times the weights repeated
        # (contiguous operands: 1.7x faster than the broadcast product, the same products)
        Wk = xp.tile(Xi, (1,) * (Xi.ndim - 1) + (K,)) * xp.repeat(q, d, axis=-1)
        G = xp.matrix_transpose(Xi) @ Wk  # (b, d, K d), scattered into H block by block
        if rows is None and not _newton_steps.REUSE:  # the whole batch's G, then H (as before)
            Gs.append(G)
            if j < N:
                continue
            G, i = xp.concat(Gs, axis=0), 0
        Hb = H[i:j, ...] if rows is None else xp.empty((j - i, d, C, d, C), dtype=P.dtype)
        for k, (a, c) in enumerate(pairs):
            B = G[:, :, k * d:(k + 1) * d]
            Hb[:, :, a, :, c] = B
            if a != c:
                Hb[:, :, c, :, a] = xp.matrix_transpose(B)
        if rows is not None:
            Hb = np.reshape(Hb, (j - i, d * C * d * C))
            Hb[:, ::d * C + 1] += mu[sel][:, None]  # + mu I: the diagonal only (as below)
            out[sel] = np.reshape(Hb, (j - i, d * C, d * C))
    if rows is not None:
        return out
    if fast:  # + mu I: the diagonal only (the same sums as H + mu I)
        diag = np.reshape(H, (N, d * C * d * C))[:, ::d * C + 1]
        diag += mu[:, None]
    else:
        for k in range(d):
            for a in range(C):
                H[:, k, a, k, a] = H[:, k, a, k, a] + mu
    return xp.reshape(H, (N, d * C, d * C))
