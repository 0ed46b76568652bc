"""Central finite differences with an error estimate (used by the derivative tests).

``jacobian_fd(fun, x, h)`` differentiates ``fun`` (``(..., d) -> (..., *k)``)
along each coordinate with the central quotient ``(fun(x+he) - fun(x-he))/2h``:
truncation ``h^2/6 |third derivative|``, rounding ``noise / h`` (``noise``:
the absolute error of one evaluation of ``fun``).  The step ``h = 1e-4``
suits unit-scale data: eps^(1/3) ~ 6e-6 is the textbook optimum, and a larger
step keeps rounding, the part we cannot estimate from the data, far below
truncation.  Truncation is *estimated*, not guessed: Richardson's
``|D(h) - D(2h)| ~ 3 * truncation(h)``.  Tests then require
``|analytic - D(h)| <= |D(h) - D(2h)| + noise / h``; callers derive ``noise``
from the magnitude of the terms summed in ``fun`` (:func:`rounding`: 10 eps
times it) plus any certified error of ``fun`` (an inner prox).  A wrong
derivative is off by O(1) relative, far above both.
"""

from __future__ import annotations

import numpy as np
from _tol import eps, host

__all__ = ["jacobian_fd", "assert_derivative", "rounding"]

H_DEFAULT = 1e-4


def jacobian_fd(fun, x, h=H_DEFAULT):
    """``(..., *k, d)``: column j is the central difference of ``fun`` along ``e_j``."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for j in range(x.shape[-1]):
        e = np.zeros_like(x)
        e[..., j] = h
        cols.append((host(fun(x + e)) - host(fun(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def rounding(scale, dtype=np.float64):
    """``noise`` of a function whose summed terms have magnitude ``scale``: 10 eps scale."""
    return 10 * eps(dtype) * np.asarray(scale, dtype=np.float64)


def assert_derivative(fun, x, analytic, *, noise, h=H_DEFAULT):
    """``analytic`` equals the central-difference derivative of ``fun`` at ``x`` (module doc).

    ``noise`` (broadcastable against ``fun``'s output shape) bounds the absolute
    error of one evaluation of ``fun``.
    """
    d1, d2 = jacobian_fd(fun, x, h), jacobian_fd(fun, x, 2 * h)
    a = host(analytic)
    noise = np.asarray(noise, dtype=np.float64)
    bound = np.abs(d1 - d2) + noise[(...,) + (None,) * (d1.ndim - noise.ndim)] / h
    err = np.abs(a - d1)
    assert np.all(err <= bound), (
        f"derivative mismatch: max |analytic - fd| = {err.max():.3g}, bound there "
        f"{bound.reshape(-1)[np.argmax((err - bound).reshape(-1))]:.3g}"
    )
