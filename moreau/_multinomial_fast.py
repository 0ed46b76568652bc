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

__all__ = ["class_norm", "hessian_blocks", "max_over", "softmax_blocks", "softmax_grad", "softmax_hvp"]

_BLOCK_BYTES = 1 << 20  # size of the scaled copies of X per block of clients (CPU cache)
_EVAL_BYTES = 1 << 17  # size of one (clients, C, n) temporary per block of the evaluation
# the same for the gradient alone and the Hessian-vector product, per (clients, C, max(n, d)) block
# (fewer temporaries per block: larger blocks, fewer Python-level operations; measured 1.2-1.5x faster
# than 1 << 17 at m = 100, n = 20-50, d = 60, C = 10, no slower at m = 1000; max(n, d): the block's
# (p R) X, (clients, C, d), stays below it too, and no call frees enough to make malloc trim the heap)
_GRAD_BYTES = 1 << 19
_ONE_CALL = 1 << 14  # blocks up to this many numbers take the class maximum in one reduction
#: rows up to this length are summed over the class axis one class at a time (``C - 1`` calls), longer
#: ones by one numpy reduction (the same sums, bit for bit).  Measured (one core of the 2-vCPU Xeon of
#: benchmarks/RESULTS.md section 15, C = 10): 100 clients, rows of 20: 15 against 20 us; rows of 50:
#: equal; rows of 60: 31 against 27 us; 16 clients, rows of 200: 17 against 8 us
_SHORT_ROWS = 32


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


def _class_sum(E):
    """``E[:, 0] + E[:, 1] + ...`` over the class axis of a numpy ``(b, C, k)`` block, in that
    order: numpy reduces a middle axis by adding whole rows one class after the other when the
    rows have more than one entry (the inner loop runs along them), the bits of :func:`_sum` in
    one call instead of ``C - 1`` (at small sizes the calls are the cost; tested against
    :func:`_sum` bit for bit); rows of one entry take :func:`_sum` (numpy would sum pairwise), and so
    do rows up to ``_SHORT_ROWS`` entries with at most 10 classes (as measured), where numpy's strided
    reduction is the slower form of the same sums."""
    k, C = E.shape[-1], E.shape[1]
    return E.sum(axis=1) if k > 1 and (k > _SHORT_ROWS or C > 10) else _sum([E[:, c] for c in range(C)])


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


def softmax_blocks(xp, X, W, Yt, p, mu):
    """One evaluation of the softmax loss on a flat batch, in blocks of clients whose
    temporaries stay in cache (and are not fresh memory each time: page faults cost as much as
    the arithmetic at this size): ``X`` ``(n, d)`` (shared) or ``(N, n, d)``, ``W`` ``(N, d, C)``,
    the one-hot labels ``Yt`` ``(C, n)`` or ``(N, C, n)`` (``1 - Yt`` formed per block), the weights ``p``
    ``(n,)`` or ``(N, n)``, ``mu`` ``()`` or ``(N,)``.  Returns ``(loss, g, Rnorm, state)``:
    ``sum_j p_j (lse_j - z_{j y_j})`` ``(N,)``, the gradient ``g`` ``(N, d*C)`` (:func:`_gradient`
    of ``(p R) X`` with ``R = P - Y``, ``-(1 - pi_y)`` from ``Q`` at the label), ``||R_j||``
    ``(N, n)`` (:func:`class_norm`) and ``state`` ``(N, 2C + 1, n)``: the probabilities ``P``
    (rows ``:C``), ``Q_c = sum_{c' != c} exp(z_c' - mx) / s`` (``1 - pi_c`` without
    cancellation, rows ``C:2C``) and the largest shift ``min(mx - min_c z_c, 2000)`` (row
    ``2C``), with ``z = W^T x_j``, ``mx = max_c z_c``, ``s = sum_c exp(z_c - mx)``."""
    N, d, C = W.shape
    n = X.shape[-2]
    dt = W.dtype
    state = xp.empty((N, 2 * C + 1, n), dtype=dt)
    loss = xp.empty((N,), dtype=dt)
    g = xp.empty((N, d * C), dtype=dt)
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
        R -= state[i:j, C : 2 * C, :] * Yb  # P - Y, -(1 - pi_y) from Q at the label (exact selection)
        Rnorm[i:j, :] = class_norm(xp, R)
        R *= pb[..., None, :]
        _gradient(xp, R @ Xb, W[i:j, ...], mu if mu.ndim == 0 else mu[i:j, ...], g, i, j)
    return loss, g, Rnorm, state


def softmax_grad(xp, X, W, Yt, p, mu, ypos=None, yat=None):
    r"""The gradient alone (``Multinomial.grad``), ``(N, d*C)``, from the arguments of
    :func:`softmax_blocks`: the operations of its gradient in the same order (so the same rounding
    analysis, ``Multinomial._grad_rounding``), with ``1 - pi`` formed at the label only,
    ``sum_c exp(z_c - mx) (1 - Y_c) / s``: the sum over ``c != y_j`` with an exact zero in the
    label's place (``x + 0 = x``): the same numbers (tested bit for bit).  With ``ypos`` (numpy:
    ``y_j n + j``, each label's flat position in a client's ``(C, n)`` block, ``(N, n)`` or ``(n,)``)
    the label entries are zeroed and set to ``-(1 - pi_y)`` by one indexed assignment each instead
    of products with the one-hot rows, and every block works in place in two buffers allocated once
    per call: no fresh array the size of the output besides it (at m = 100, n = 20, d = 60, C = 10
    the page faults of one cost about as much as the arithmetic).  ``yat`` (optional, with ``ypos``):
    those positions offset by ``C n`` per entry over the whole batch (``Multinomial._yat``), used
    where one block holds the batch instead of forming them again."""
    N, d, C = W.shape
    n = X.shape[-2]
    g = np.empty((N, d * C), dtype=W.dtype) if ypos is not None else xp.empty((N, d * C), dtype=W.dtype)
    step = N if "cupy" in getattr(xp, "__name__", "") else max(1, _GRAD_BYTES // (C * max(n, d) * 8))
    nY = 1 - Yt if ypos is None and Yt.ndim == 2 else None
    if ypos is not None:  # the blocks' logits and (p R) X, reused by every block
        Zs, Gs = np.empty((min(step, N), C, n), dtype=W.dtype), np.empty((min(step, N), C, d), dtype=W.dtype)
    for i in range(0, N, step):
        j = min(i + step, N)
        Xb = X if X.ndim == 2 else X[i:j, ...]
        pb = p if p.ndim == 1 else p[i:j, ...]
        mub = mu if mu.ndim == 0 else mu[i:j, ...]
        if ypos is not None:  # methods and ufuncs called directly: at small sizes the calls are the cost
            E = np.matmul(W[i:j].transpose(0, 2, 1), Xb.swapaxes(-1, -2), out=Zs[: j - i])  # (b, C, n) logits
            if E.size <= _ONE_CALL:  # exact in any order: one call where calls cost more than data
                mx = E.max(axis=1)
            else:
                mx = np.maximum(E[:, 0], E[:, 1])
                for c in range(2, C):
                    np.maximum(mx, E[:, c], out=mx)
            E -= mx[:, None, :]
            np.exp(E, out=E)
            sb = _class_sum(E)
            at = (
                yat
                if yat is not None and i == 0 and j == N
                else (
                    (np.arange(j - i) * (C * n))[:, None] + (ypos if ypos.ndim == 1 else ypos[i:j])
                ).reshape(-1)
            )
            flat = E.reshape(-1)  # a view: E is contiguous
            flat[at] = 0.0  # e_c (1 - Y_c)
            rest = _class_sum(E)
            rest /= sb
            E /= sb[:, None, :]
            flat[at] = -rest.reshape(-1)  # P - Y, -(1 - pi_y) at the label
            E *= pb[..., None, :]
            _gradient(np, np.matmul(E, Xb, out=Gs[: j - i]), W[i:j], mub, g, i, j)
            continue
        Yb = Yt if Yt.ndim == 2 else Yt[i:j, ...]
        nYb = nY if Yt.ndim == 2 else 1 - Yb
        Zt = xp.matrix_transpose(W[i:j, ...]) @ xp.matrix_transpose(Xb)  # (b, C, n)
        rows = [Zt[:, c, :] for c in range(C)]
        Zt -= max_over(xp, rows)[:, None, :]
        E = xp.exp(Zt)
        er = [E[:, c, :] for c in range(C)]
        sb = _sum(er)
        rest = er[0] * nYb[..., 0, :]
        for c in range(1, C):
            rest += er[c] * nYb[..., c, :]
        rest /= sb
        E /= sb[:, None, :]
        E *= nYb
        E -= rest[:, None, :] * Yb
        E *= pb[..., None, :]
        _gradient(xp, E @ Xb, W[i:j, ...], mub, g, i, j)
    return g


def _gradient(xp, Gt, W, mu, g, i, j):
    """The gradient from ``(p R) X`` ``(b, C, d)`` at ``W`` ``(b, d, C)`` into ``g[i:j]`` ``(b, d*C)``:
    the projection off the shift directions ``G - mean_c G`` (``Multinomial._grad_plain``), the
    row-major layout, ``+ mu theta`` (``mu`` ``()`` or ``(b,)``).  On numpy ``mu theta`` is written
    into ``g`` and the transposed ``G`` added in place (no fresh arrays; ``a + b = b + a``)."""
    b, C, d = Gt.shape
    mu = mu if mu.ndim == 0 else mu[:, None, None]
    if isinstance(g, np.ndarray):
        mean = _class_sum(Gt)
        mean /= C
        Gt -= mean[:, None, :]
        out = g[i:j].reshape(b, d, C)  # a view: g is contiguous
        np.multiply(mu, W, out=out)
        out += Gt.transpose(0, 2, 1)
        return
    mean = Gt[:, 0, :]
    for c in range(1, C):
        mean = mean + Gt[:, c, :]
    Gt -= (mean / C)[:, None, :]
    g[i:j, ...] = xp.reshape(xp.matrix_transpose(Gt) + mu * W, (b, d * C))


def softmax_hvp(xp, X, W, V, p, mu):
    r"""The Hessian of the softmax loss times ``V`` plus ``mu V`` on a flat batch ``(N, d*C)``,
    class-major, in blocks of clients as :func:`softmax_grad`: ``X`` ``(n, d)`` or ``(N, n, d)``,
    ``W``, ``V`` ``(N, d, C)``, ``p`` ``(n,)`` or ``(N, n)``, ``mu`` ``()`` or ``(N,)``: ``(p R) X``
    with ``R_c = pi_c (u_c - sum_a pi_a u_a)``, ``u = V^T x_j``, ``pi`` the softmax of ``W^T x_j``
    (:math:`(\mathrm{diag}(\pi) - \pi\pi^\top) u` per sample), in the row-major layout, ``+ mu V``.
    On numpy every block works in three buffers allocated once per call (see :func:`softmax_grad`)."""
    N, d, C = W.shape
    n = X.shape[-2]
    g = xp.empty((N, d * C), dtype=W.dtype)
    step = N if "cupy" in getattr(xp, "__name__", "") else max(1, _GRAD_BYTES // (C * max(n, d) * 8))
    fast = isinstance(W, np.ndarray)
    if fast:
        b0 = min(step, N)
        Zs, Us, Gs = (np.empty((b0, C, k), dtype=W.dtype) for k in (n, n, d))
    for i in range(0, N, step):
        j = min(i + step, N)
        Xb = X if X.ndim == 2 else X[i:j, ...]
        pb = p if p.ndim == 1 else p[i:j, ...]
        Xt = xp.matrix_transpose(Xb)
        if fast:
            Zt = np.matmul(W[i:j].transpose(0, 2, 1), Xt, out=Zs[: j - i])  # (b, C, n)
            Ut = np.matmul(V[i:j].transpose(0, 2, 1), Xt, out=Us[: j - i])
            Zt -= Zt.max(axis=1, keepdims=True)
            E = np.exp(Zt, out=Zt)
        else:
            Zt = xp.matrix_transpose(W[i:j, ...]) @ Xt
            Ut = xp.matrix_transpose(V[i:j, ...]) @ Xt
            Zt -= max_over(xp, [Zt[:, c, :] for c in range(C)])[:, None, :]
            E = xp.exp(Zt)
        E /= (_class_sum(E) if fast else _sum([E[:, c, :] for c in range(C)]))[:, None, :]  # pi
        dot = E[:, 0, :] * Ut[:, 0, :]
        for c in range(1, C):
            dot += E[:, c, :] * Ut[:, c, :]
        Ut -= dot[:, None, :]
        E *= Ut
        E *= pb[..., None, :]
        Gt = np.matmul(E, Xb, out=Gs[: j - i]) if fast else E @ Xb  # (b, C, d)
        mub = mu if mu.ndim == 0 else mu[i:j, None, None]
        if fast:
            out = g[i:j].reshape(j - i, d, C)  # a view: g is contiguous
            np.multiply(mub, V[i:j], out=out)
            out += Gt.transpose(0, 2, 1)  # mu v + H v = H v + mu v exactly
        else:
            g[i:j, ...] = xp.reshape(xp.matrix_transpose(Gt) + mub * V[i:j, ...], (j - i, d * C))
    return g


def _min_over(xp, rows):
    out = rows[0]
    for r in rows[1:]:
        out = xp.minimum(out, r)
    return out


def hessian_blocks(xp, X, P, Q, p, mu, d, C, low=False, rows=None, out=None):
    r"""``sum_j p_j S_j (x) x_j x_j^T`` ``(N, d*C, d*C)`` for a flat batch: ``X`` ``(n, d)``
    (shared) or ``(N, n, d)``, ``P``, ``Q`` ``(N, C, n)`` (probabilities and complements),
    ``p`` ``(N, n)`` or ``(n,)``, plus ``mu I`` (``mu`` ``(N,)``, added to the diagonal).  The
    weights ``q_aa = p (P_a Q_a)``, ``q_ac = -(p (P_a P_c))``
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
        q = xp.stack(
            [
                pi * (Pi[:, a, :] * Qi[:, a, :]) if a == c else -(pi * (Pi[:, a, :] * Pi[:, c, :]))
                for a, c in pairs
            ],
            axis=-1,
        )  # (b, n, K)
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
            B = G[:, :, k * d : (k + 1) * d]
            Hb[:, :, a, :, c] = B
            if a != c:
                Hb[:, :, c, :, a] = xp.matrix_transpose(B)
        if rows is not None:
            Hb = np.reshape(Hb, (j - i, d * C * d * C))
            Hb[:, :: d * C + 1] += mu[sel][:, None]  # + mu I: the diagonal only (as below)
            out[sel] = np.reshape(Hb, (j - i, d * C, d * C))
    if rows is not None:
        return out
    if fast:  # + mu I: the diagonal only (the same sums as H + mu I)
        diag = np.reshape(H, (N, d * C * d * C))[:, :: d * C + 1]
        diag += mu[:, None]
    else:
        for k in range(d):
            for a in range(C):
                H[:, k, a, k, a] = H[:, k, a, k, a] + mu
    return xp.reshape(H, (N, d * C, d * C))
