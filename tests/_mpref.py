"""50-digit references for the prox (mpmath), independent of moreau's solvers.

Every function takes the objective's data *as represented* (host numpy arrays
in the objective's dtype: each float converts to an mpmath number exactly),
the point ``w`` and ``lam`` as the objective's dtype holds them, and returns
the exact prox of that data to about 45 digits: Newton's method on the
optimality condition in 50-digit arithmetic, started from a float64 guess (steps halved until the
gradient norm decreases) and iterated until the step is below 1e-45 relative.  ``error`` measures the
distance of a float result to it, also in 50 digits.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

__all__ = ["logistic_prox", "multinomial_prox", "quadratic_prox", "error"]

mp.mp.dps = 50


def _num(v):
    """An mpmath number as given, any other number converted exactly from its float value."""
    return v if isinstance(v, mp.mpf) else mp.mpf(float(v))


def _vec(a):
    return mp.matrix([mp.mpf(float(v)) for v in np.asarray(a, dtype=np.float64).reshape(-1)])


def _mat(a):
    a = np.asarray(a, dtype=np.float64)
    return mp.matrix([[mp.mpf(float(v)) for v in row] for row in a])


def _client(X, weights, mu, lam, w):
    """One client's data in 50 digits: the rows of ``X`` (n lists of d), the weights normalised to
    sum 1, ``mu``, ``lam`` and ``w``."""
    x = [[mp.mpf(float(v)) for v in row] for row in np.asarray(X, dtype=np.float64)]
    wt = [mp.mpf(float(v)) for v in weights]
    return x, [v / mp.fsum(wt) for v in wt], mp.mpf(float(mu)), _num(lam), _vec(w)


def _newton(grad_hess, start, n_max=400):
    """Newton on the gradient, steps halved until the gradient norm decreases (the
    float start is usually within a few ulps; the damping only matters when it is not)."""
    t = _vec(start)
    g, H = grad_hess(t)
    for _ in range(n_max):
        step = mp.lu_solve(H, g)
        s = mp.mpf(1)
        while True:
            t_new = t - s * step
            g_new, H_new = grad_hess(t_new)
            if mp.norm(g_new) < mp.norm(g) or s < mp.mpf(2) ** -60:
                break
            s /= 2
        t, g, H = t_new, g_new, H_new
        if mp.norm(s * step) <= mp.mpf(10) ** -45 * (1 + mp.norm(t)):
            return t
    raise RuntimeError("mpmath Newton did not converge")


def logistic_prox(X, y, weights, mu, w, lam, start):
    """Prox of the weighted logistic loss (one client) in 50 digits; ``y`` in {-1, +1}."""
    x, p, mu, lam, w = _client(X, weights, mu, lam, w)
    n, d = len(x), len(x[0])
    Z = [[mp.mpf(float(y[j])) * x[j][k] for k in range(d)] for j in range(n)]

    def gh(t):
        g = mu * t + lam * (t - w)
        H = (mu + lam) * mp.eye(d)
        for j in range(n):
            zj = mp.fsum(Z[j][k] * t[k] for k in range(d))
            sn = 1 / (1 + mp.exp(zj))  # sigma(-z)
            c = p[j] * sn * (1 - sn)
            for k in range(d):
                g[k] -= p[j] * sn * Z[j][k]
                for m in range(d):
                    H[k, m] += c * Z[j][k] * Z[j][m]
        return g, H

    return _newton(gh, start)


def multinomial_prox(X, y, weights, C, mu, w, lam, start):
    """Prox of the weighted softmax loss (theta = W flattened row-major, W (d, C))."""
    x, p, mu, lam, w = _client(X, weights, mu, lam, w)
    n, d = len(x), len(x[0])
    D = d * C

    def gh(t):
        g = mu * t + lam * (t - w)
        H = (mu + lam) * mp.eye(D)
        for j in range(n):
            z = [mp.fsum(x[j][k] * t[k * C + c] for k in range(d)) for c in range(C)]
            m = max(z)
            e = [mp.exp(v - m) for v in z]
            s = mp.fsum(e)
            pi = [v / s for v in e]
            # 1 - pi_c as the other classes' sum / s: no cancellation when pi_c is close to 1 (in the
            # gradient's pi_y - 1 and in the Hessian's diagonal pi_c (1 - pi_c))
            rest = [mp.fsum(e[c2] for c2 in range(C) if c2 != c) / s for c in range(C)]
            yj = int(y[j])
            resid = [pi[c] if c != yj else -rest[c] for c in range(C)]
            S = [[pi[c] * rest[c] if c == c2 else -pi[c] * pi[c2] for c2 in range(C)] for c in range(C)]
            for k in range(d):
                for c in range(C):
                    g[k * C + c] += p[j] * x[j][k] * resid[c]
                    for k2 in range(d):
                        for c2 in range(C):
                            H[k * C + c, k2 * C + c2] += p[j] * S[c][c2] * x[j][k] * x[j][k2]
        return g, H

    return _newton(gh, start)


def quadratic_prox(A, b, w, lam):
    """``(A + lam I)^{-1} (b + lam w)`` in 50 digits."""
    A, lam = _mat(A), mp.mpf(float(lam))
    d = A.rows
    return mp.lu_solve(A + lam * mp.eye(d), _vec(b) + lam * _vec(w))


def error(theta, ref):
    """``||theta - ref||`` in 50 digits, as a float."""
    return float(mp.norm(_vec(theta) - ref))
