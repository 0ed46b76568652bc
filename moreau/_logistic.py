r"""Weighted, l2-regularised binary logistic regression, batched over clients."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np

from ._backend import safe_norm, to_numpy
from ._least_squares import point_view
from ._newton_batch import take_object
from ._samples import SampleLoss
from ._typing import Array, Namespace

__all__ = ["Logistic"]

_THIRD = 1.0 / (6.0 * math.sqrt(3.0))  # sup |l'''| for l(z) = log(1 + e^{-z})
_BLOCK_BYTES = 1 << 20  # size of the scaled copy of X per block of the Hessian (CPU cache)


class Logistic(SampleLoss):
    r"""A batch of logistic losses

    .. math:: f(\theta) = \frac{\sum_j w_j \log(1 + e^{-y_j x_j^\top\theta})}{\sum_j w_j}
              + \frac{\mu}{2}\|\theta\|^2 .

    ``X`` has shape ``(..., n, d)`` (rows :math:`x_j`), ``y`` ``(..., n)`` with
    labels in {-1, +1} (or {0, 1}, read as 0 -> -1), ``mu`` is ``mu`` (a
    scalar or ``(...)``, >= 0) and ``weights`` ``(..., n)`` the :math:`w_j`
    (>= 0, zeros allowed, a positive sum per client; default all ones).  Zero
    weights pad clients of different sizes into one batch; padded rows must
    still hold finite features and valid labels.

    Constants: curvature bounds ``(mu, L)`` with
    :math:`L = \lambda_{\max}(X^\top W X)/(4\sum_j w_j) + \mu`, both exact
    (``L`` is attained at ``theta = 0``; ``mu`` is the infimum, approached
    as the margins grow).  The loss is evaluated with ``logaddexp`` and
    sigmoids as ``exp(-logaddexp(0, -z))``: no overflow and no NaN for
    margins of any size.

    References: docs/catalogue.md, "Conventions" (logistic).
    """

    _curvature_factor = 0.25  # sup of l''(z) = sigma(z) sigma(-z)

    def __init__(self, X: Any, y: Any, mu: Any = 0.0, weights: Any = None) -> None:
        xp, y = self._init_samples(X, y, mu, weights)
        self.dim = self.X.shape[-1]
        self.y = _labels(y, xp)
        # the signed rows y_j x_j are never formed: margins are y * (X theta), and the
        # Hessian X^T diag(c) X needs no sign (y^2 = 1); sign flips are exact, so every
        # value is the one the signed rows would give

    # -- pieces -------------------------------------------------------------------
    def margins(self, theta: Array) -> Array:
        r"""Margins :math:`y_j x_j^\top\theta`, shape ``(..., n)``."""
        theta = self._point(theta)
        return self.y * (self.X @ theta[..., None])[..., 0]

    def _pieces(self, z: Array, loss: bool = True) -> tuple[Array | None, Array, Array]:
        """``(log(1 + e^{-z}) or None, sigma(z), sigma(-z))`` from one ``exp(-|z|)``:
        no overflow for any z."""
        xp = self.xp
        e = xp.exp(-xp.abs(z))
        big = 1 / (1 + e)
        small = e * big
        pos = z >= 0
        ell = xp.log1p(e) + xp.clip(-z, min=0) if loss else None
        return ell, xp.where(pos, big, small), xp.where(pos, small, big)

    def _mu_theta(self, theta: Array) -> Array:
        return self.mu[..., None] * theta

    # -- objective -----------------------------------------------------------------
    def value(self, theta: Array) -> Array:
        return self._value_grad(theta, grad=False)[0]

    def grad(self, theta: Array) -> Array:
        """The gradient of :meth:`_eval` (the evaluation Newton uses, without the value, the
        rounding bound and the Hessian weights): the bits of :meth:`_value_grad`'s, cheaper."""
        return self._grad(point_view(self, theta))

    def _grad(self, theta: Array) -> Array:  # at a point already checked (moreau.fl's own iterates)
        return self._grad_from(theta, self._sigmoids(theta)[3])

    def _value_grad(
        self, theta: Array, *, value: bool = True, grad: bool = True
    ) -> tuple[Array | None, Array | None]:
        xp = self.xp
        z = self.margins(theta)
        loss, _, s_neg = self._pieces(z, loss=value)
        v = xp.sum(self._p * loss, axis=-1) + self.mu / 2 * xp.vecdot(theta, theta) if value else None
        g = None
        if grad:
            r = -self._p * s_neg
            g = (xp.matrix_transpose(self.X) @ (self.y * r)[..., None])[..., 0] + self._mu_theta(theta)
        return v, g

    def _eval(self, theta: Array) -> tuple[Array, Array, Array, Array]:
        """Value, gradient, their rounding bound and the Hessian weights ``p sigma'`` from
        one evaluation of the margins (Newton's evaluations: nothing computed twice;
        ``theta`` is Newton's own validated iterate)."""
        xp = self.xp
        z, e, big, s_neg = self._sigmoids(theta)
        loss = xp.log1p(e)
        loss += xp.clip(-z, min=0)  # log(1 + e^-z) = log1p(e) + max(-z, 0)
        small = e
        small *= big  # sigma(-|z|)
        v = xp.vecdot(self._p, loss) + self.mu / 2 * xp.vecdot(theta, theta)
        g = self._grad_from(theta, s_neg)
        c = _times(small * big, self._p)  # p sigma(z) sigma(-z)
        return v, g, self._rounding(theta, s_neg, c), c

    def _sigmoids(self, theta: Array) -> tuple[Array, Array, Array, Array]:
        """``(z, exp(-|z|), sigma(|z|), sigma(-z))`` at the margins ``z = y * (X theta)``, formed in
        place where the array is a fresh temporary (the same operations as :meth:`_pieces`, so the
        same bits: 10% faster)."""
        xp = self.xp
        z = (self.X @ theta[..., None])[..., 0]
        z = _times(z, self.y)
        if isinstance(z, np.ndarray):  # the same bits in place: -|z| is exact, copyto selects
            e = np.abs(z)
            np.negative(e, out=e)
            np.exp(e, out=e)  # exp(-|z|)
            big = np.add(e, 1)
            np.divide(1, big, out=big)  # sigma(|z|)
            s_neg = np.multiply(e, big)  # sigma(-|z|): sigma(-z) where z >= 0
            np.copyto(s_neg, big, where=z < 0)
            return z, e, big, s_neg
        e = xp.exp(xp.minimum(z, -z))  # exp(-|z|)
        big = 1 + e
        big = 1 / big  # sigma(|z|)
        # sigma(-z) = sigma(-|z|) = e * big where z >= 0, else big: selected by exact products
        # with 0 and 1 (the same bits as xp.where, whose data-dependent branch costs 5x on
        # random signs)
        s_neg = xp.astype(z >= 0, self.dtype)
        rest = 1 - s_neg
        rest *= big
        s_neg *= e * big
        s_neg += rest
        return z, e, big, s_neg

    def _grad_from(self, theta: Array, s_neg: Array) -> Array:
        """``mu theta - X^T (p y sigma(-z))`` (the gradient of :meth:`_value_grad`, the same bits:
        ``y`` is +-1, so every sign change is exact)."""
        xp = self.xp
        return self._mu_theta(theta) - (xp.matrix_transpose(self.X) @ (self._py * s_neg)[..., None])[..., 0]

    def _hess_at(self, theta: Array, c: Array, low: bool = False) -> Array:
        """``X^T diag(c) X + mu I`` for a batch of weights ``c`` (``(..., n)``), formed in
        blocks of clients whose scaled copy of ``X`` stays in cache (27% faster on a CPU at
        n = 200, d = 20; the same products, so the same values; one block on a GPU).

        ``low=True``: each block of ``X`` rounded to float32 and the product formed in
        float32 (returned in the objective's dtype): a Hessian for Newton's *direction*
        only, 1.4-1.6x cheaper on a CPU at n = 200, d = 20; never used by a certificate
        (:meth:`_low_hessian_ok` says where Newton uses it).  No float32 copy of the whole
        ``X`` is kept (it would cost half of ``X`` in memory and its page faults per call)."""
        xp = self.xp
        low = low and self.dtype == xp.float64
        X = self.X
        if low:
            c = xp.astype(c, xp.float32)
        n, d = X.shape[-2], self.dim
        bshape = tuple(np.broadcast_shapes(tuple(c.shape[:-1]), tuple(X.shape[:-2])))
        N = math.prod(bshape)
        step = N if "cupy" in getattr(xp, "__name__", "") else max(1, _BLOCK_BYTES // (n * d * 8))

        def gram(Xi: Array, ci: Array) -> Array:
            if low:
                Xi = xp.astype(Xi, xp.float32)
            return xp.matrix_transpose(Xi) @ (ci[..., None] * Xi)

        if step >= N:
            H = gram(X, xp.broadcast_to(c, bshape + (n,)))
        else:
            cf = xp.reshape(xp.broadcast_to(c, bshape + (n,)), (N, n))
            Xf = (
                xp.reshape(X, (n, d))
                if math.prod(tuple(X.shape[:-2])) == 1
                else xp.reshape(xp.broadcast_to(X, bshape + (n, d)), (N, n, d))
            )
            if Xf.ndim == 2 and low:  # shared data: rounded once
                Xf = xp.astype(Xf, xp.float32)
            Xt = xp.matrix_transpose(Xf)
            blocks = []
            for i in range(0, N, step):
                j = min(i + step, N)
                if Xf.ndim == 2:
                    blocks.append(Xt @ (cf[i:j, :, None] * Xf))
                else:
                    blocks.append(gram(Xf[i:j, ...], cf[i:j, :]))
            H = xp.reshape(xp.concat(blocks, axis=0), bshape + (d, d))
        if low:
            H = xp.astype(H, self.dtype)
        return H + self.mu[..., None, None] * xp.eye(self.dim, dtype=self.dtype)

    def _low_hessian_ok(self, modulus: Array, hi: Array | None = None) -> Array:
        r"""Where Newton may take its direction from the float32 Hessian (``_hess_at(...,
        low=True)``), given ``modulus = lam + mu <= lambda_min`` of the prox Hessian.

        Each term ``c_j x_jk x_jl`` of the float32 product carries four roundings (``x_jk``,
        ``x_jl``, ``c_j``, the scaled row) and the dot product ``gamma_n``, so the product
        differs from ``X^T diag(c) X`` by at most ``(n + 4) u32 sum_j c_j ||x_j||^2 <=
        (n + 4) u32 hi`` in norm to first order (Frobenius bounds spectral;
        ``|| |x| |x|^T ||_F = ||x||^2``; ``hi`` the trace bound :meth:`_smoothness_bound`,
        ``c_j <= p_j / 4``), plus at most ``2 n 2^-149 (1 + R)^2`` from gradual underflow
        (``R`` the largest row norm).  Newton with a Hessian perturbed by ``Delta``
        contracts at about the rate ``||Delta|| / modulus`` near the solution: allowed where
        that is at most ``2^-8`` (one step then gains at least 8 bits where Newton gains its
        quadratic rate; the factor 256 also covers the second-order terms), and where no
        sum can overflow (``hi``: the trace bound when the caller has it).
        A speed choice only: the gradient, the line search and every certificate stay
        in float64 (tests compare with the float64 path)."""
        xp = self.xp
        if self.dtype != xp.float64:
            return xp.zeros(modulus.shape, dtype=xp.bool)
        u32 = 2.0**-24
        n = self.X.shape[-2]
        hi = xp.broadcast_to(self._smoothness_bound() if hi is None else hi, modulus.shape)
        R = xp.broadcast_to(xp.max(self._rownorm, axis=-1), modulus.shape)
        under = 2 * n * 2.0**-149 * (1 + R) ** 2
        return ((n + 4) * u32 * hi + under <= 2.0**-8 * modulus) & (R <= 2.0**50)

    def hess(self, theta: Array) -> Array:
        return self._hess_scale(theta, scale=False)[0]

    def _hess_scale(
        self, theta: Array, *, hess: bool = True, scale: bool = True
    ) -> tuple[Array | None, Array | None]:
        """Hessian and/or ``_grad_rounding`` from one evaluation of the margins."""
        xp = self.xp
        theta = self._point(theta)
        z = self.margins(theta)
        _, s, s_neg = self._pieces(z, loss=False)
        c = self._p * s * s_neg
        H = E = None
        if hess:
            H = xp.matrix_transpose(self.X) @ (c[..., None] * self.X)
            H = H + self.mu[..., None, None] * xp.eye(self.dim, dtype=self.dtype)
        if scale:
            E = self._rounding(theta, s_neg, c)
        return H, E

    def _rounding(self, theta: Array, s_neg: Array, c: Array) -> Array:
        r"""Rigorous bound on ``||fl(grad f(theta)) - grad f(theta)||`` (Higham-style).

        ``grad = Z^T r + mu theta`` with ``r_j = -p_j sigma(-z_j)``, ``u`` the unit
        roundoff, :math:`\gamma_k = k u/(1 - k u)`, ``R_j >= ||x_j||``:

        * margins: :math:`|\hat z_j - z_j| \le \gamma_d R_j \|\theta\| =: \delta_j`;
        * :math:`|\sigma(-\hat z) - \sigma(-z)| \le \sup\sigma' \,\delta_j` with
          :math:`\sigma'(\xi) \le \min(1/4, \sigma'(\hat z) e^{\delta_j})`
          (:math:`|(\log\sigma')'| \le 1`): the local curvature, not the global one;
        * ``sigma`` from one ``exp`` (within 4 ulps) and two operations: relative
          error ``<= 24 u``; the weights ``p = w / sum w``: ``gamma_{n+1}``; the product: ``u``;
        * ``Z^T r``: :math:`\gamma_n \sum_j R_j |r_j|`; ``+ mu theta``: ``2u`` of each part.

        Gradual underflow adds at most ``n + d + 8`` subnormal units per sum.

        Evaluated from per-sample constants computed once (``_rounding_constants``):
        ``delta_j`` enters the slope through ``exp(min(delta_max, 1))`` with
        ``delta_max = gamma_d max_j R_j ||theta|| >= delta_j`` (exp is increasing),
        and the remaining terms are two dot products over the samples.
        """
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        n, d = self.X.shape[-2], self.dim
        A, B, cap, K, rmax, T0 = self._rounding_constants
        tn = safe_norm(theta, xp) * (1 + (d + 4) * eps)
        q = K * xp.exp(xp.minimum(rmax * tn, 1.0))
        slope = xp.minimum(cap, c * q[..., None])
        E = xp.vecdot(s_neg, A) + tn * xp.vecdot(slope, B) + eps * self.mu * tn + T0
        return E * (1 + 8 * (n + d + 8) * eps)

    @cached_property
    def _py(self) -> Array:
        """``p_j y_j``: the gradient is ``mu theta - X^T (p y sigma(-z))`` (exact: y = +-1)."""
        return self._p * self.y

    @cached_property
    def _rounding_constants(self) -> tuple[Array, Array, Array, float, Array, Array]:
        """Per-sample factors of :meth:`_rounding` (cached; one pass over the samples;
        dropped by ``with_weights`` like every weight-dependent cache)."""
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        u = eps / 2
        n, d = self.X.shape[-2], self.dim

        def gam(k: int) -> float:
            return k * u / (1 - k * u)

        R = self._rownorm * (1 + (d + 4) * eps)
        # s_neg_j A_j = R_j ps_j (gamma_n + gamma_{n+2} + 25u) + 2u R_j ps_j, ps_j = p_j s_neg_j (1 + gamma_{n+2})
        A = R * self._p * ((1 + gam(n + 2)) * (gam(n) + gam(n + 2) + 27 * u))
        B = gam(d) * R * R  # slope_j delta_j R_j = tn * slope_j B_j
        cap = self._p * (0.25 * (1 + gam(n + 1)))
        K = (1 + 16 * eps) * (1 + gam(n + 1))
        rmax = gam(d) * xp.max(R, axis=-1)  # delta_max / ||theta||
        tiny = float(xp.finfo(self.dtype).smallest_normal) * eps * (n + d + 8)
        T0 = tiny * (1 + xp.sum(R, axis=-1) + self.mu)
        return A, B, cap, K, rmax, T0

    def _local_curvature(self, theta: Array, c: Array) -> tuple[Array, Array, Array]:
        r"""``(err, rho, eig)``: ``lambda_min`` of the exact Hessian at ``theta`` is at least
        ``lambda_min`` of the computed one (``_hess_at(theta, c)``) minus ``err``; ``rho`` is the
        Hessian's Lipschitz constant; ``eig`` the eigensolver's error under LAPACK's backward-error
        model, which Newton does not trust: it proves ``lambda_min`` of the computed Hessian with
        a certified Cholesky just below ``eigvalsh``'s value less ``eig``
        (:func:`moreau._newton_cert._proven_min_eig`).  ``c`` is the state :meth:`_eval`
        returned at ``theta``.

        ``|fl(c_j) - p_j sigma'(z_j)| <= fl(c_j) (50u + gamma_{n+1} + expm1(delta_j))``
        (two sigmoids, two products, the weights, the margins' error ``delta_j``
        moved through ``|(log sigma')'| <= 1``); the product ``Z^T diag(c) Z``:
        ``gamma_{n+1} sum_j c_j ||x_j||^2`` in spectral norm; the eigensolver (``eig``): Weyl
        with ``4 d eps`` times the trace (>= the Frobenius norm of a PSD matrix).
        """
        xp = self.xp
        eps = float(xp.finfo(self.dtype).eps)
        u = eps / 2
        n, d = self.X.shape[-2], self.dim

        def gam(k: int) -> float:
            return k * u / (1 - k * u)

        R = self._rownorm * (1 + (d + 4) * eps)
        tn = safe_norm(theta, xp) * (1 + (d + 4) * eps)
        delta = xp.minimum(gam(d) * R * tn[..., None], 40.0)
        rel = (50 * u + gam(n + 1)) * (1 + 4 * eps) + xp.expm1(delta) * (1 + 60 * u)
        cr = c * R**2
        tr = xp.sum(cr, axis=-1)
        err = (
            xp.sum(cr * (rel + gam(n + 1) + 2 * u), axis=-1) * (1 + 4 * eps)
            + 2 * u * self.mu
            + float(xp.finfo(self.dtype).smallest_normal) * (n + 8)
        )
        eig = 4 * d * eps * (tr + d * self.mu) * (1 + (n + d) * eps) * (1 + 8 * eps)
        rho = self.hessian_lipschitz() * (1 + (n + 8) * eps) + float(xp.finfo(self.dtype).smallest_normal)
        return err * (1 + 8 * eps), rho, eig

    def _take(self, idx: Array, shape: tuple[int, ...]) -> Logistic:
        """Newton's working copy for the entries ``idx`` (flat indices into the batch
        ``shape``): batch ``(k,)``, only what Newton's hooks read (``weights`` is
        dropped; data shared by the whole batch is not copied)."""
        self._rownorm  # noqa: B018  (computed once on the whole batch, then taken)
        return take_object(self, idx, shape, {"X": 2, "y": 1, "_p": 1, "mu": 0, "_rownorm": 1})

    def hvp(self, theta: Array, v: Array) -> Array:
        """``X^T (p sigma(z) sigma(-z) X v) + mu v``: the weights of :meth:`_eval`'s Hessian
        (``sigma(z) sigma(-z) = sigma(|z|) sigma(-|z|)``, no sign selection)."""
        xp = self.xp
        theta, v = point_view(self, theta), point_view(self, v, "v")
        _, e, big, _ = self._sigmoids(theta)
        e *= big  # sigma(-|z|)
        c = _times(e * big, self._p)
        c = _times(c, (self.X @ v[..., None])[..., 0])
        return (xp.matrix_transpose(self.X) @ c[..., None])[..., 0] + self.mu[..., None] * v

    def third(self, theta: Array, v: Array) -> Array:
        r""":math:`D^3 f(\theta)[v] = \sum_j p_j\, l'''(z_j)\,(z_j^\top v)\, z_j z_j^\top`."""
        xp = self.xp
        z = self.margins(theta)
        v = self._point(v, "v")
        _, s, s_neg = self._pieces(z, loss=False)
        Zv = self.y * (self.X @ v[..., None])[..., 0]
        c = self._p * s * s_neg * (s_neg - s) * Zv
        return (xp.matrix_transpose(self.X) * c[..., None, :]) @ self.X

    # -- constants ------------------------------------------------------------------
    def curvature_bounds(self) -> tuple[Array, Array]:
        """``(mu, lambda_max(X^T W X) / (4 sum w) + mu)``: exact inf and sup (the sup at theta = 0)."""
        return super().curvature_bounds()

    def hessian_lipschitz(self) -> Array:
        r"""A valid Lipschitz constant of the Hessian (spectral norm):
        :math:`\rho = \frac{1}{6\sqrt3}\sum_j p_j \|x_j\|^3`, ``p`` the normalised weights."""
        xp = self.xp
        r = self._rownorm
        return xp.broadcast_to(_THIRD * xp.sum(self._p * r**3, axis=-1), self.batch_shape)

    def gradient_bound(self) -> Array:
        """``B = max_j ||x_j||`` over rows of positive weight: ``||grad f|| <= B`` when ``mu = 0``."""
        xp = self.xp
        if not bool(xp.all(self.mu == 0)):
            raise ValueError("gradient_bound() needs mu = 0: with mu > 0 the gradient is unbounded")
        r = self._rownorm * xp.astype(self._p > 0, self.dtype)
        return xp.broadcast_to(xp.max(r, axis=-1), self.batch_shape)

    def _grad_error_scale(self, theta: Array) -> Array:
        """Magnitude of the terms summed in ``grad``: ``sum_j p_j sigma(-z_j) ||x_j|| + mu ||theta||``."""
        xp = self.xp
        z = self.margins(theta)
        _, _, s_neg = self._pieces(z, loss=False)
        return xp.sum(self._p * s_neg * self._rownorm, axis=-1) + self.mu * safe_norm(theta, xp)


def _times(a: Array, b: Array) -> Array:
    """``a * b``, in place in the fresh temporary ``a`` when ``b`` broadcasts into it."""
    if tuple(a.shape) == tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape))):
        a *= b
        return a
    return a * b


def _labels(y: Array, xp: Namespace) -> Array:
    pm = (y == 1) | (y == -1)
    if bool(xp.all(pm)):
        return y
    zo = (y == 0) | (y == 1)
    if bool(xp.all(zo)):
        return 2 * y - 1
    yh = to_numpy(y)
    bad = yh[~((yh == 1) | (yh == -1) | (yh == 0))]
    shown = bad[0] if bad.size else yh[yh == -1][0]
    raise ValueError(
        f"y must hold labels in {{-1, +1}} or {{0, 1}} (got {float(shown):g}"
        + ("" if bad.size else ", -1 mixed with 0")
        + ")"
    )
