"""A user-defined objective gets a certified prox, an envelope and nesting from the base class."""

import numpy as np
import scipy.optimize as so

import moreau as mo
from moreau._backend import as_array, constructor_namespace


class LogCosh(mo.Objective):
    """f(theta) = sum_k c_k log cosh(theta_k - t_k) + (mu/2)||theta||^2; curvature in [mu, max c + mu]."""

    def __init__(self, c, t, mu):
        xp = constructor_namespace(c=c, t=t)
        self.c, self.t = as_array(c, xp, "c"), as_array(t, xp, "t")
        self.mu = float(mu)
        self.xp, self.dtype, self.dim = xp, self.c.dtype, self.c.shape[-1]
        self.batch_shape = tuple(self.c.shape[:-1])

    def value(self, theta):
        z = self._point(theta) - self.t
        xp = self.xp
        return xp.sum(
            self.c * (xp.abs(z) + xp.log1p(xp.exp(-2 * xp.abs(z))) - np.log(2)), axis=-1
        ) + self.mu / 2 * xp.sum(theta * theta, axis=-1)

    def grad(self, theta):
        return self.c * self.xp.tanh(self._point(theta) - self.t) + self.mu * theta

    def hess(self, theta):
        d = self.c / self.xp.cosh(self._point(theta) - self.t) ** 2 + self.mu
        return d[..., None] * self.xp.eye(self.dim)

    def curvature_bounds(self):
        return (np.full(self.batch_shape, self.mu), np.max(self.c, axis=-1) + self.mu)


def _reference_prox(f, w, lam, i):
    def h(th):
        value = float(f.value(th[None])[i] if f.batch_shape else f.value(th))
        return value + lam / 2 * np.sum((th - w[i]) ** 2)

    def g(th):
        return np.asarray(f.grad(np.broadcast_to(th, (f.batch_shape[0], f.dim))))[i] + lam * (th - w[i])

    return so.minimize(h, w[i], jac=g, method="BFGS", options={"gtol": 1e-12}).x


def test_user_objective_prox_envelope_and_nesting():
    rng = np.random.default_rng(3)
    m, d = 6, 3
    f = LogCosh(rng.uniform(0.5, 4, (m, d)), rng.normal(size=(m, d)) * 3, mu=0.1)
    w = rng.normal(size=(m, d)) * 3
    for lam in (1e-3, 1.0, 1e3):
        theta, info = mo.prox(f, w, lam, return_info=True)
        # optimality: the residual at the returned theta is what the certificate bounds, up to the
        # rounding of theta - w recomputed here (4 eps (|w| + |theta|) after dividing by lam + mu)
        resid = f.grad(theta) + lam * (theta - w)
        rounding = 4 * np.finfo(float).eps * (np.linalg.norm(w, axis=-1) + np.linalg.norm(theta, axis=-1))
        assert np.all(
            np.linalg.norm(resid, axis=-1) / (lam + 0.1) <= np.maximum(info.error_bound, info.tol) + rounding
        )
        ref = np.array([_reference_prox(f, w, lam, i) for i in range(m)])
        # BFGS at gtol 1e-12 is accurate to ~1e-12 / (lam + mu) in theta: compare at 1e-8
        assert np.allclose(theta, ref, atol=1e-8 * (1 + 1 / (lam + 0.1)))
    F = mo.envelope(f, 2.0)
    lo, hi = F.curvature_bounds()
    assert np.allclose(lo, 2 * 0.1 / 2.1) and np.allclose(
        hi, 2 * (np.max(f.c, -1) + 0.1) / (2 + np.max(f.c, -1) + 0.1)
    )
    # nesting: envelope(envelope(f, 2), 3) equals envelope(f, 2*3/(2+3)) in value and gradient
    nested, direct = mo.envelope(F, 3.0), mo.envelope(f, 1.2)
    assert np.allclose(nested.value(w), direct.value(w), rtol=1e-12, atol=1e-12)
    assert np.allclose(nested.grad(w), direct.grad(w), rtol=1e-10, atol=1e-12)
