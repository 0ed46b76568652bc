r"""Weighted multinomial (softmax) logistic regression, batched over clients."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np

from ._backend import numpy_dtype, safe_norm, to_numpy
from ._least_squares import point_view
from ._multinomial_cert import MultinomialCertificates
from ._multinomial_fast import hessian_blocks, softmax_blocks, softmax_grad, softmax_hvp
from ._newton_batch import take_object
from ._samples import SampleLoss
from ._typing import Array

__all__ = ["Multinomial", "MAX_BYTES"]

MAX_BYTES = 16 * 2**30  # default refusal level of the estimated per-call arrays (see Multinomial)


class Multinomial(MultinomialCertificates, SampleLoss):
    r"""A batch of softmax (multinomial logistic) losses with C classes

    .. math:: f(\theta) = \frac{\sum_j w_j \big(\log\sum_c e^{(W^\top x_j)_c} - (W^\top x_j)_{y_j}\big)}{\sum_j w_j}
              + \frac{\mu}{2}\|\theta\|^2,

    the parameter matrix :math:`W \in \mathbb{R}^{d\times C}` flattened row-major into
    ``theta`` of length ``D = d*C`` (``theta[k*C + c] = W[k, c]``; use
    :meth:`matrix` / ``reshape``).  ``X`` ``(..., n, d)``; ``y`` ``(..., n)``
    integer labels in ``{0, ..., C-1}`` (floats with integral values accepted);
    ``n_classes`` C (default ``max(y) + 1``, at least 2); ``mu`` >= 0;
    ``weights`` ``(..., n)`` as in :class:`~moreau.Logistic` (zeros pad clients).

    Cost: a prox call holds about ``3 D^2 + n C (C + 6)`` numbers per batch entry (Newton's
    Hessian, its factor and the previous one; the ``(n, C, C)`` blocks of :meth:`hess` and the
    per-sample class arrays).  A construction whose estimate over its batch exceeds ``max_bytes``
    (default ``MAX_BYTES`` = 16 GiB) is a ``ValueError`` with the estimate (a stray label makes
    ``max(y) + 1`` huge); pass a larger ``max_bytes`` on a machine that has the memory.

    Hessian: :math:`\sum_j p_j (\mathrm{diag}(\pi_j) - \pi_j\pi_j^\top)\otimes x_j x_j^\top + \mu I`
    (:math:`\pi_j` the softmax probabilities, ordered to match ``theta``).
    Curvature bounds ``(mu, lambda_max(X^T W X)/(2 sum w) + mu)`` are valid
    bounds, not exact: ``lambda_max(diag(pi) - pi pi^T) <= 1/2``, reached only
    when the mass sits on two classes.  Softmax is invariant to adding one
    vector to every column of W, so with ``mu = 0`` the loss is not strongly
    convex and a prox needs ``lam > 0`` only.

    Prox certificate: the gradient is projected off those shift directions (its
    exact component there is ``mu theta``), the prox error on them is computed
    exactly and off them Newton certifies with the local curvature (the
    ``(d+1)``-th eigenvalue of the Hessian, ``_hess_error``) and the Hessian's
    Lipschitz constant :meth:`hessian_lipschitz`; see ``moreau._newton``.

    References: docs/catalogue.md, "Conventions" (multinomial logistic: the model
    of the pFedMe and FedProx experiments).
    """

    _curvature_factor = 0.5  # sup of lambda_max(diag(pi) - pi pi^T)
    # Newton forms a Hessian on part of the batch (a copy of those clients) when at most this
    # share needs one: C(C+1)/2 GEMMs per client against one pass over its rows for the copy
    _part_share = 0.75
    _fresh_hessian = True  # _hess_at returns a fresh array: Newton may add lam I in place

    def __init__(
        self,
        X: Any,
        y: Any,
        n_classes: int | None = None,
        mu: Any = 0.0,
        weights: Any = None,
        *,
        max_bytes: float = MAX_BYTES,
    ) -> None:
        xp, y = self._init_samples(X, y, mu, weights)
        yh = to_numpy(y)
        if np.any(yh != np.round(yh)) or np.any(yh < 0):
            i = _first(yh, (yh != np.round(yh)) | (yh < 0))
            raise ValueError(f"y must hold integer class labels 0..C-1 (got {float(yh[i]):g}) at index {i}")
        if n_classes is None and yh.size == 0:
            raise ValueError("n_classes must be given when y is empty (max(y) + 1 is undefined)")
        C = int(yh.max()) + 1 if n_classes is None else n_classes
        if isinstance(C, bool) or not isinstance(C, int | np.integer) or C < 2:
            raise ValueError(
                f"n_classes must be an integer >= 2 (got {C!r}"
                + (" = max(y) + 1)" if n_classes is None else ")")
            )
        if yh.size and yh.max() >= C:
            i = _first(yh, yh >= C)
            raise ValueError(f"y must hold labels < n_classes={C} (got {float(yh[i]):g}) at index {i}")
        _check_cost(self, int(C), n_classes is None, yh, max_bytes)
        self.y = y
        self.n_features, self.n_classes = self.X.shape[-1], int(C)
        self.dim = self.n_features * self.n_classes
        self._null_dim = self.n_features  # hess f = mu on the d shift directions v (x) 1 (see _hess_error)

    def matrix(self, theta: Array) -> Array:
        """``theta`` ``(..., d*C)`` as the parameter matrices ``(..., d, C)``."""
        theta = self._point(theta)
        return self.xp.reshape(theta, tuple(theta.shape[:-1]) + (self.n_features, self.n_classes))

    def _probs(self, theta: Array, others: bool | str = False) -> tuple[Array, ...]:
        """(logits, log-sum-exp, softmax probabilities[, 1 - probabilities]), shapes
        (..., n, C), (..., n), (..., n, C)[, (..., n, C)].

        ``1 - pi_c`` is formed as ``sum_{c' != c} e_{c'} / s``, never as a
        difference: it is what ``P - Y`` (at the label) and the Hessian's
        diagonal ``pi_c (1 - pi_c)`` need, and ``1 - pi_c`` cancels to zero
        when ``pi_c`` is close to 1.  ``others="label"``: only at each sample's
        label, shape (..., n, 1) (what the gradient needs; O(nC) instead of O(nC^2)),
        the same sum with the label's term replaced by an exact zero.
        """
        xp = self.xp
        Z = self.X @ self.matrix(theta)
        m = xp.max(Z, axis=-1, keepdims=True)
        e = xp.exp(Z - m)
        s = xp.sum(e, axis=-1, keepdims=True)
        out = (Z, (m + xp.log(s))[..., 0], e / s)
        if not others:
            return out
        if others == "label":
            rest = xp.sum(e * (1 - self._Y), axis=-1, keepdims=True)  # sum over c' != y_j
            return out + (rest / s,)
        C = self.n_classes
        off = 1 - xp.eye(C, dtype=self.dtype)
        rest = xp.sum(e[..., None, :] * off, axis=-1)  # sum over c' != c
        return out + (rest / s,)

    def _residual(self, P: Array, Q: Array) -> Array:
        """``P - Y`` with the label entry ``-(1 - pi_y)`` taken from ``Q`` (no cancellation)."""
        return self.xp.where(self._Y > 0, -Q, P)

    def value(self, theta: Array) -> Array:
        xp = self.xp
        Z, lse, _ = self._probs(theta)
        loss = xp.sum(self._p * (lse - xp.sum(self._Y * Z, axis=-1)), axis=-1)
        return loss + self.mu / 2 * xp.vecdot(theta, theta)

    def grad(self, theta: Array) -> Array:
        r"""Gradient ``(..., d*C)``: the fast evaluation Newton uses (:meth:`_eval`'s gradient,
        bit for bit, without its value, rounding bound and Hessian state; class-major, in blocks
        of clients: ``moreau._multinomial_fast``), so :meth:`_grad_rounding` bounds its error.
        :meth:`_grad_plain` is the samples-by-classes reference (equal to rounding)."""
        return self._grad(point_view(self, theta))

    def _grad(self, theta: Array) -> Array:
        """:meth:`grad` at a point already checked (``moreau.fl``'s own iterates)."""
        g, bshape = self._softmax(theta, full=False)
        return self.xp.reshape(g, bshape + (self.dim,))

    def _grad_plain(self, theta: Array) -> Array:
        """The gradient in the samples-by-classes layout of :meth:`value` and :meth:`hess`
        (``_probs``; the reference of :meth:`grad`)."""
        xp = self.xp
        theta = self._point(theta)
        _, _, P, Q = self._probs(theta, others="label")
        G = xp.matrix_transpose(self.X) @ (self._p[..., None] * self._residual(P, Q))  # (..., d, C)
        # the loss's gradient has zero class-mean in every row (softmax is invariant to the
        # shifts v (x) 1): projecting the computed one removes its rounding in those
        # directions, where only lam + mu curves the prox subproblem (Newton's local certificate)
        G = G - xp.mean(G, axis=-1, keepdims=True)
        return xp.reshape(G, tuple(G.shape[:-2]) + (self.dim,)) + self.mu[..., None] * theta

    def hess(self, theta: Array) -> Array:
        xp = self.xp
        _, _, P, Q = self._probs(theta, others=True)
        C = self.n_classes
        eye = xp.eye(C, dtype=self.dtype)
        # diag(pi) - pi pi^T with the diagonal pi_c (1 - pi_c) formed from Q (no cancellation)
        S = eye * (P * Q)[..., :, None] - (1 - eye) * (P[..., :, None] * P[..., None, :])  # (..., n, C, C)
        Q = self._p[..., None, None] * S
        k = Q.ndim
        Q = xp.permute_dims(Q, tuple(range(k - 3)) + (k - 2, k - 1, k - 3))  # (..., C, C, n)
        Xt = xp.matrix_transpose(self.X)[..., None, None, :, :]  # (..., 1, 1, d, n)
        blocks = (Xt * Q[..., None, :]) @ self.X[..., None, None, :, :]  # (..., C, C, d, d)
        k = blocks.ndim
        H = xp.permute_dims(blocks, tuple(range(k - 4)) + (k - 2, k - 4, k - 1, k - 3))  # (..., d, C, d, C)
        H = xp.reshape(H, tuple(H.shape[:-4]) + (self.dim, self.dim))
        return H + self.mu[..., None, None] * xp.eye(self.dim, dtype=self.dtype)

    @cached_property
    def _Y(self) -> Array:
        """The one-hot labels ``(..., n, C)`` of the plain methods (formed when first needed:
        Newton's evaluation reads :attr:`_Yt`)."""
        xp = self.xp
        return xp.astype(self.y[..., None] == xp.arange(self.n_classes, dtype=self.dtype), self.dtype)

    @cached_property
    def _Yt(self) -> Array:
        """The one-hot labels class-major, ``(..., C, n)`` (Newton's evaluation layout)."""
        xp = self.xp
        return xp.astype(
            self.y[..., None, :] == xp.arange(self.n_classes, dtype=self.dtype)[:, None], self.dtype
        )

    @cached_property
    def _ypos(self) -> np.ndarray:
        """numpy: ``y_j n + j`` ``(..., n)`` (int64), each label's flat position in a client's
        class-major ``(C, n)`` block (the fast gradient's indexed label entries)."""
        n = self.X.shape[-2]
        return np.asarray(self.y).astype(np.int64) * n + np.arange(n)

    @cached_property
    def _yat(self) -> np.ndarray:
        """numpy: each label's flat position in the class-major ``(N, C, n)`` logits of the whole
        batch (``N`` clients, one block of the fast gradient), ``(N * n,)``: :attr:`_ypos` offset by
        ``C n`` per client, formed once per objective instead of once per gradient."""
        n, N = self.X.shape[-2], math.prod(self.batch_shape)
        ypos = np.broadcast_to(self._ypos, tuple(self.batch_shape) + (n,)).reshape(N, n)
        return ((np.arange(N) * (self.n_classes * n))[:, None] + ypos).reshape(-1)

    def _eval(self, theta: Array) -> tuple[Array, Array, Array, Array]:
        """Value, gradient, :meth:`_grad_rounding` and the Hessian's state from one evaluation
        of the logits, laid out class-major (``moreau._multinomial_fast``; the same operations
        as :meth:`value`, :meth:`grad`, :meth:`_grad_rounding`, so the same bounds hold).  The
        state ``(..., 2C + 1, n)``: the probabilities, their complements ``1 - pi_c`` and the
        largest logit shift, for :meth:`_hess_at` and :meth:`_local_curvature` at ``theta``."""
        xp = self.xp
        C, n = self.n_classes, self.X.shape[-2]
        (loss, g, Rn, state), bshape = self._softmax(theta, full=True)
        v = xp.reshape(loss, bshape) + self.mu / 2 * xp.vecdot(theta, theta)
        state = xp.reshape(state, bshape + (2 * C + 1, n))
        E = self._grad_bound(theta, state[..., 2 * C, :], xp.reshape(Rn, bshape + (n,)))
        return v, xp.reshape(g, bshape + (self.dim,)), E, state

    def _softmax(self, theta: Array, full: bool) -> tuple[Any, tuple[int, ...]]:
        """``(softmax_blocks(...), bshape)`` on the flattened broadcast batch ``bshape`` of
        ``theta`` and the data (shared data stays one array)."""
        d, C, n = self.n_features, self.n_classes, self.X.shape[-2]
        bshape = _bshape(tuple(theta.shape[:-1]), self.batch_shape)
        flat = self._flat(bshape)
        args = (
            self.xp,
            flat(self.X, (n, d)),
            flat(theta, (d, C), True),
            flat(self._Yt, (C, n)) if full or not isinstance(theta, np.ndarray) else None,
            flat(self._p, (n,)),
            flat(self.mu, ()),
        )
        if full:
            return softmax_blocks(*args), bshape
        if not isinstance(theta, np.ndarray):
            return softmax_grad(*args), bshape
        yat = self._yat if bshape == tuple(self.batch_shape) else None
        got = softmax_grad(*args, ypos=flat(self._ypos, (n,)), yat=yat)
        return got, bshape

    def _flat(self, bshape: tuple[int, ...]) -> Callable[..., Array]:
        """``flat(a, tail, point=False)``: ``a`` as ``(N,) + tail`` on the batch ``bshape``
        (``N`` its size), or the shared array itself (``tail``) when ``a`` has no batch axes
        and is not a ``point`` (points are reshaped from their last axis)."""
        xp, N = self.xp, math.prod(bshape)

        def flat(a: Array, tail: tuple[int, ...], point: bool = False) -> Array:
            lead = tuple(a.shape[:-1] if point else a.shape[: a.ndim - len(tail)])
            if lead == bshape:  # nothing to broadcast (the usual case: no copy, no Python-level checks)
                # numpy: the method itself (the same view, without the namespace's wrapper calls)
                return a.reshape((N,) + tail) if type(a) is np.ndarray else xp.reshape(a, (N,) + tail)
            if point:
                return xp.reshape(xp.broadcast_to(a, bshape + (self.dim,)), (N,) + tail)
            if math.prod(lead) == 1:
                return xp.reshape(a, tail)
            return xp.reshape(xp.broadcast_to(a, bshape + tail), (N,) + tail)

        return flat

    def hvp(self, theta: Array, v: Array) -> Array:
        r"""``hess(theta) @ v`` without the Hessian: :math:`\sum_j p_j\, x_j \otimes
        \pi_j \odot (u_j - \pi_j^\top u_j) + \mu v`, :math:`u_j = V^\top x_j` (``V`` is ``v``
        as a ``(d, C)`` matrix), the product of :math:`\mathrm{diag}(\pi_j) - \pi_j\pi_j^\top`
        with :math:`u_j`; ``O(n d C)`` per entry where the Hessian costs ``O(n d^2 C^2)``
        (``moreau._multinomial_fast.softmax_hvp``).  Equal to ``hess(theta) @ v`` to rounding."""
        xp = self.xp
        theta, v = point_view(self, theta), point_view(self, v, "v")
        d, C, n = self.n_features, self.n_classes, self.X.shape[-2]
        bshape = _bshape(tuple(theta.shape[:-1]), tuple(v.shape[:-1]), self.batch_shape)
        flat = self._flat(bshape)
        h = softmax_hvp(
            xp,
            flat(self.X, (n, d)),
            flat(theta, (d, C), True),
            flat(v, (d, C), True),
            flat(self._p, (n,)),
            flat(self.mu, ()),
        )
        return xp.reshape(h, bshape + (self.dim,))

    def _hess_at(
        self,
        theta: Array,
        state: Array,
        low: bool = False,
        rows: np.ndarray | None = None,
        out: Array | None = None,
    ) -> Array:
        """``hess(theta)`` from the state :meth:`_eval` returned at ``theta``: the blocks
        ``X^T diag(q_ac) X`` once per pair ``a <= c`` (``moreau._multinomial_fast``; the same
        products as :meth:`hess`, so :meth:`_hess_error` holds for it).  ``low=True`` (float64
        data only): the products formed in float32, a Hessian for Newton's direction only, never
        used by a certificate (:meth:`_low_hessian_ok` says where Newton uses it).  ``rows``
        (numpy: indices into the flattened batch) and ``out`` ``(N, D, D)``: only those entries,
        written into ``out[rows]`` (``out`` returned; Newton's partial Hessian, no copy of the data)."""
        xp = self.xp
        d, C, n, D = self.n_features, self.n_classes, self.X.shape[-2], self.dim
        bshape = tuple(state.shape[:-2])
        N = math.prod(bshape)
        st = xp.reshape(state, (N, 2 * C + 1, n))
        X = self.X
        X = (
            xp.reshape(X, (n, d))
            if math.prod(tuple(X.shape[:-2])) == 1
            else xp.reshape(xp.broadcast_to(X, bshape + (n, d)), (N, n, d))
        )
        p = self._p
        p = (
            xp.reshape(p, (n,))
            if math.prod(tuple(p.shape[:-1])) == 1
            else xp.reshape(xp.broadcast_to(p, bshape + (n,)), (N, n))
        )
        low = low and self.dtype == xp.float64
        mu = xp.reshape(xp.broadcast_to(self.mu, bshape), (N,))
        part = {} if rows is None else {"rows": rows, "out": out}
        H = hessian_blocks(xp, X, st[:, :C, :], st[:, C : 2 * C, :], p, mu, d, C, low, **part)
        return H if rows is not None else xp.reshape(H, bshape + (D, D))

    def _low_hessian_ok(self, modulus: Array, hi: Array | None = None) -> Array:
        r"""Where Newton may take its direction from the float32 Hessian (``_hess_at(...,
        low=True)``), given ``modulus = lam + mu <= lambda_min`` of the prox Hessian.

        Each term ``q_jac x_jk x_jl`` of the float32 blocks carries four roundings (``x_jk``,
        ``x_jl``, ``q_jac``, the scaled row) and the dot product ``gamma_n``, so the computed
        matrix differs from the exact one by at most ``(n + 4) u32`` times the entrywise
        majorant :math:`\sum_j p_j |S_j| \otimes |x_j||x_j|^\top` to first order, whose norm is
        at most :math:`\sum_j p_j \| |S_j| \| \|x_j\|^2 \le \frac12 \sum_j p_j \|x_j\|^2 \le`
        ``hi`` (``|| |S_j| ||`` is at most its largest row sum ``2 max_c pi_c (1 - pi_c) <= 1/2``;
        ``hi`` the trace bound :meth:`_smoothness_bound`), plus at most ``2 n C 2^-149 (1 + R)^2``
        from gradual underflow (the same majorant in each of the ``C^2`` blocks; ``R`` the largest
        row norm).  Allowed where that is at most ``2^-8 modulus`` and no sum can overflow (row
        norms ``<= 2^50``), the rule of :meth:`Logistic._low_hessian_ok`: Newton with a Hessian
        perturbed by ``Delta`` contracts at about ``||Delta|| / modulus`` near the solution.  A
        speed choice only: the gradient, the line search and every certificate stay in float64."""
        xp = self.xp
        if self.dtype != xp.float64:
            return xp.zeros(modulus.shape, dtype=xp.bool)
        u32 = 2.0**-24
        n, C = self.X.shape[-2], self.n_classes
        hi = xp.broadcast_to(self._smoothness_bound() if hi is None else hi, modulus.shape)
        R = xp.broadcast_to(xp.max(self._rownorm, axis=-1), modulus.shape)
        under = 2 * n * C * 2.0**-149 * (1 + R) ** 2
        return ((n + 4) * u32 * hi + under <= 2.0**-8 * modulus) & (R <= 2.0**50)

    def _take(self, idx: Array, shape: tuple[int, ...]) -> Multinomial:
        """Newton's working copy for the entries ``idx`` of the batch ``shape`` (see
        :meth:`Objective._take`); ``L`` is taken when already computed, else computed
        for those entries only if needed."""
        self._rownorm  # noqa: B018  (computed once on the whole batch, then taken)
        arrays = {"X": 2, "y": 1, "_p": 1, "mu": 0, "_rownorm": 1, "_L": 0}
        return take_object(self, idx, shape, arrays)

    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(mu, lambda_max(X^T W X)/(2 sum w) + mu)``: valid bounds (the upper one is not attained in general)."""
        return super().curvature_bounds()

    def _grad_error_scale(self, theta: Array) -> Array:
        xp = self.xp
        _, _, P = self._probs(theta)
        r = self._rownorm
        tn = safe_norm(theta, xp)
        return xp.sum(self._p * r * safe_norm(P - self._Y, xp), axis=-1) + self.smoothness() * tn


def _bshape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """``numpy.broadcast_shapes`` with the common case (equal shapes) first."""
    return shapes[0] if all(s == shapes[0] for s in shapes) else tuple(np.broadcast_shapes(*shapes))


def _first(yh: np.ndarray, bad: np.ndarray) -> tuple[int, ...]:
    """The first index (a tuple) where ``bad``."""
    return tuple(int(k) for k in np.argwhere(bad)[0])


def _check_cost(f: Multinomial, C: int, inferred: bool, yh: np.ndarray, max_bytes: float) -> None:
    """``ValueError`` with the estimate where the per-call arrays of ``C`` classes exceed ``max_bytes``."""
    if (
        isinstance(max_bytes, bool)
        or not isinstance(max_bytes, int | float | np.integer | np.floating)
        or not max_bytes > 0
    ):
        raise ValueError(f"max_bytes must be a positive number (got {max_bytes!r})")
    n, d = f.X.shape[-2], f.X.shape[-1]
    D = d * C
    per = (3 * D * D + n * C * (C + 6)) * numpy_dtype(f.dtype).itemsize
    total = per * math.prod(f.batch_shape)
    if total <= max_bytes:
        return
    why = (
        f"n_classes = max(y) + 1 = {C} from the label y={float(yh.max()):g} at index "
        f"{_first(yh, yh == yh.max())}"
        if inferred
        else f"n_classes={C}"
    )
    raise ValueError(
        f"{why} would need about {_size(total)} per prox call ({_size(per)} per batch entry "
        f"for D = d C = {D} parameters: 3 D^2 + n C (C + 6) numbers), above max_bytes = "
        f"{_size(max_bytes)}"
        + (
            "; check y for a stray label or pass n_classes"
            if inferred
            else "; pass a larger max_bytes if the machine has the memory"
        )
    )


def _size(b: float) -> str:
    b = float(b)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024:
            return f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} PiB"
