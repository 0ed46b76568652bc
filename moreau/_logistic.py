r"""Weighted, l2-regularised binary logistic regression, batched over clients."""
from __future__ import annotations

import math

from ._backend import safe_norm, to_numpy
from ._samples import SampleLoss

__all__ = ["Logistic"]

_THIRD = 1.0 / (6.0 * math.sqrt(3.0))  # sup |l'''| for l(z) = log(1 + e^{-z})


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

    References: THEOREMS.md, "Conventions" (logistic).
    """

    _curvature_factor = 0.25  # sup of l''(z) = sigma(z) sigma(-z)

    def __init__(self, X, y, mu=0.0, weights=None):
        xp, y = self._init_samples(X, y, mu, weights)
        self.dim = self.X.shape[-1]
        self.y = _labels(y, xp)
        self._Z = self.y[..., None] * self.X  # signed rows: margins are Z @ theta

    # -- pieces -------------------------------------------------------------------
    def margins(self, theta):
        r"""Margins :math:`y_j x_j^\top\theta`, shape ``(..., n)``."""
        theta = self._point(theta)
        return (self._Z @ theta[..., None])[..., 0]

    def _pieces(self, z, loss=True):
        """``(log(1 + e^{-z}) or None, sigma(z), sigma(-z))`` from one ``exp(-|z|)``:
        no overflow for any z."""
        xp = self.xp
        e = xp.exp(-xp.abs(z))
        big = 1 / (1 + e)
        small = e * big
        pos = z >= 0
        ell = xp.log1p(e) + xp.clip(-z, min=0) if loss else None
        return ell, xp.where(pos, big, small), xp.where(pos, small, big)

    def _mu_theta(self, theta):
        return self.mu[..., None] * theta

    # -- objective -----------------------------------------------------------------
    def value(self, theta):
        return self._value_grad(theta, grad=False)[0]

    def grad(self, theta):
        return self._value_grad(theta, value=False)[1]

    def _value_grad(self, theta, *, value=True, grad=True):
        xp = self.xp
        z = self.margins(theta)
        loss, _, s_neg = self._pieces(z, loss=value)
        v = xp.sum(self._p * loss, axis=-1) + self.mu / 2 * xp.vecdot(theta, theta) if value else None
        g = None
        if grad:
            r = -self._p * s_neg
            g = (xp.matrix_transpose(self._Z) @ r[..., None])[..., 0] + self._mu_theta(theta)
        return v, g

    def hess(self, theta):
        return self._hess_scale(theta, scale=False)[0]

    def _hess_scale(self, theta, *, hess=True, scale=True):
        """Hessian and/or the rounding scale of ``grad`` (see ``_grad_error_scale``)
        from one evaluation of the margins."""
        xp = self.xp
        z = self.margins(theta)
        _, s, s_neg = self._pieces(z, loss=False)
        c = self._p * s * s_neg
        H = G = None
        if hess:
            H = xp.matrix_transpose(self._Z) @ (c[..., None] * self._Z)
            H = H + self.mu[..., None, None] * xp.eye(self.dim, dtype=self.dtype)
        if scale:
            r = self._rownorm
            tn = safe_norm(theta, xp)
            G = xp.sum(self._p * s_neg * r + c * r**2 * tn[..., None], axis=-1) + self.mu * tn
        return H, G

    def hvp(self, theta, v):
        xp = self.xp
        z = self.margins(theta)
        v = self._point(v, "v")
        _, s, s_neg = self._pieces(z, loss=False)
        Zv = (self._Z @ v[..., None])[..., 0]
        return (xp.matrix_transpose(self._Z) @ (self._p * s * s_neg * Zv)[..., None])[..., 0] + self.mu[..., None] * v

    def third(self, theta, v):
        r""":math:`D^3 f(\theta)[v] = \sum_j p_j\, l'''(z_j)\,(z_j^\top v)\, z_j z_j^\top`."""
        xp = self.xp
        z = self.margins(theta)
        v = self._point(v, "v")
        _, s, s_neg = self._pieces(z, loss=False)
        Zv = (self._Z @ v[..., None])[..., 0]
        c = self._p * s * s_neg * (s_neg - s) * Zv
        return (xp.matrix_transpose(self._Z) * c[..., None, :]) @ self._Z

    # -- constants ------------------------------------------------------------------
    def curvature_bounds(self):
        """``(mu, lambda_max(X^T W X) / (4 sum w) + mu)``: exact inf and sup (the sup at theta = 0)."""
        return super().curvature_bounds()

    def hessian_lipschitz(self):
        r"""A valid Lipschitz constant of the Hessian (spectral norm):
        :math:`\rho = \frac{1}{6\sqrt3}\sum_j p_j \|x_j\|^3`, ``p`` the normalised weights."""
        xp = self.xp
        r = self._rownorm
        return xp.broadcast_to(_THIRD * xp.sum(self._p * r**3, axis=-1), self.batch_shape)

    def gradient_bound(self):
        """``B = max_j ||x_j||`` over rows of positive weight: ``||grad f|| <= B`` when ``mu = 0``."""
        xp = self.xp
        if not bool(xp.all(self.mu == 0)):
            raise ValueError("gradient_bound() needs mu = 0: with mu > 0 the gradient is unbounded")
        r = self._rownorm * xp.astype(self._p > 0, self.dtype)
        return xp.broadcast_to(xp.max(r, axis=-1), self.batch_shape)

    def _grad_error_scale(self, theta):
        """Rounding scale of ``grad``: the sum of |terms| plus the margins' rounding
        (``eps ||x_j|| ||theta||`` each) carried through ``l''``."""
        return self._hess_scale(theta, hess=False)[1]


def _labels(y, xp):
    pm = (y == 1) | (y == -1)
    if bool(xp.all(pm)):
        return y
    zo = (y == 0) | (y == 1)
    if bool(xp.all(zo)):
        return 2 * y - 1
    yh = to_numpy(y)
    bad = yh[~((yh == 1) | (yh == -1) | (yh == 0))]
    shown = bad[0] if bad.size else yh[yh == -1][0]
    raise ValueError(f"y must hold labels in {{-1, +1}} or {{0, 1}} (got {float(shown):g}"
                     + ("" if bad.size else ", -1 mixed with 0") + ")")
