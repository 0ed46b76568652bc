"""High-accuracy references for the logistic prox, independent of moreau's solver.

``scipy_prox`` solves the prox subproblem with ``scipy.optimize.minimize``
(trust-exact, analytic Hessian); ``refine`` then takes Newton steps whose
residual is evaluated in ``numpy.longdouble`` (80-bit on x86-64: eps 1e-19),
solving the correction in float64 (iterative refinement: the residual's
precision decides the accuracy).  Both return their own *certified* bound
``||grad h||_longdouble / (lam + mu)`` on the distance to the exact prox
(h is (lam + mu)-strongly convex), so tests can add it to their tolerance
instead of trusting the reference blindly.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
from _tol import host

__all__ = ["LongLogistic", "scipy_prox", "refine"]

LD = np.longdouble


class LongLogistic:
    """One client's logistic objective in longdouble, from a ``moreau.Logistic`` with empty batch."""

    def __init__(self, f):
        self.Z = host(f.y).astype(LD)[:, None] * host(f.X).astype(LD)
        wts = host(f.weights).astype(LD)
        self.p = wts / np.sum(wts)
        self.mu = LD(host(f.mu))
        self.d = self.Z.shape[-1]

    def value(self, t):
        t = np.asarray(t, LD)
        return np.sum(self.p * np.logaddexp(LD(0), -(self.Z @ t))) + self.mu / 2 * (t @ t)

    def grad(self, t):
        t = np.asarray(t, LD)
        s_neg = np.exp(-np.logaddexp(LD(0), self.Z @ t))
        return self.Z.T @ (-self.p * s_neg) + self.mu * t

    def hess(self, t):
        z = self.Z @ np.asarray(t, LD)
        s, s_neg = np.exp(-np.logaddexp(LD(0), -z)), np.exp(-np.logaddexp(LD(0), z))
        return (self.Z.T * (self.p * s * s_neg)) @ self.Z + self.mu * np.eye(self.d, dtype=LD)

    def prox_bound(self, w, lam, theta):
        """Certified ``||theta - prox(w)||`` from the longdouble residual."""
        w, theta = np.asarray(w, LD), np.asarray(theta, LD)
        r = self.grad(theta) + LD(lam) * (theta - w)
        return float(np.sqrt(np.sum(r * r))) / (float(lam) + float(self.mu))


def scipy_prox(g, w, lam):
    """``(theta, certified bound)`` from scipy's trust-exact with analytic gradient and Hessian."""
    w64 = np.asarray(w, np.float64)
    res = scipy.optimize.minimize(
        lambda t: float(g.value(t)) + lam / 2 * float(np.sum((t - w64) ** 2)),
        w64.copy(),
        jac=lambda t: np.asarray(g.grad(t), np.float64) + lam * (t - w64),
        hess=lambda t: np.asarray(g.hess(t), np.float64) + lam * np.eye(len(w64)),
        method="trust-exact",
        options={"gtol": 1e-13, "maxiter": 500},
    )
    return res.x, g.prox_bound(w, lam, res.x)


def refine(g, w, lam, theta0, steps=6):
    """``(u, certified bound)``: the displacement ``prox(w) - w`` in longdouble, from ``theta0``."""
    w = np.asarray(w, LD)
    u, lam_ = np.asarray(theta0, LD) - w, LD(lam)
    eye = np.eye(g.d)
    for _ in range(steps):
        r = g.grad(w + u) + lam_ * u
        H = np.asarray(g.hess(w + u), np.float64) + float(lam) * eye
        u = u - np.linalg.solve(H, np.asarray(r, np.float64)).astype(LD)
    return u, g.prox_bound(w, lam, w + u)
