"""The one place where per-dtype test tolerances live (cf. scikit-learn's ``_atol_for_type``).

``tol(dtype) = 100 * eps(dtype)`` is the default *relative* tolerance of the suite:
float64 2.2e-14, float32 1.2e-5.  Why 100 eps: the quantities we compare are
short sums (d, n <= a few tens of terms: each adds up to d eps of relative
rounding), eigendecompositions and linear solves (backward stable: a few d eps
relative to the matrix norm) and certified Newton solutions (stopped at a few
eps).  Tens of eps is what two *different* correct computations of the same
number disagree by; 100 eps leaves a margin without hiding a wrong factor, sign
or missing term (those are O(1) errors).  Where a comparison is amplified by
a condition number, tests multiply by it explicitly and say so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["eps", "tol", "assert_close", "host", "vnorm"]


def _np_dtype(dtype):
    """numpy dtype for a numpy, array-api-strict or cupy dtype (by name)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(str(dtype).rsplit(".", 1)[-1])


def eps(dtype) -> float:
    """Machine epsilon of ``dtype``."""
    return float(np.finfo(_np_dtype(dtype)).eps)


def tol(dtype) -> float:
    """Default relative tolerance for ``dtype``: 100 eps (see the module doc)."""
    return 100 * eps(dtype)


def host(x):
    """Host numpy array of any backend's array (test-side conversion)."""
    from moreau._backend import to_numpy

    return np.asarray(to_numpy(x))


def assert_close(actual, desired, *, dtype=None, scale=None, factor=1.0, err_msg=""):
    """``|actual - desired| <= factor * tol(dtype) * scale + tiny(dtype)`` elementwise.

    ``tiny`` (the smallest normal number) absorbs underflow: hypothesis likes subnormal inputs.

    ``scale`` defaults to ``max(|desired|)`` (a norm-wise relative test: entries
    near zero are judged against the size of the whole result, which is what
    rounding in a sum or a solve produces).  ``dtype`` defaults to the dtype of
    ``actual``.
    """
    a = host(actual)
    d = host(desired)
    dtype = a.dtype if dtype is None else dtype
    if scale is None:
        scale = float(np.max(np.abs(d))) if np.size(d) else 0.0
    atol = factor * tol(dtype) * scale + float(np.finfo(_np_dtype(dtype)).tiny)
    np.testing.assert_allclose(a, d, rtol=0, atol=atol, err_msg=err_msg)


def vnorm(x, axis=None):
    """Euclidean norm (of the flattened array, or along ``axis``) without underflow.

    ``numpy.linalg.norm`` squares its entries: for |x| < 1e-154 (float64) the squares
    underflow and the norm comes out 0.  Hypothesis draws such numbers; tolerances built
    from norms must not vanish with them.
    """
    x = np.asarray(x)
    if axis is None:
        x, axis = x.reshape(-1), -1
    s = np.max(np.abs(x), axis=axis, keepdims=True) if x.size else np.zeros(x.shape[:-1] + (1,))
    safe = np.where(s > 0, s, 1)
    return np.squeeze(s, axis=axis) * np.sqrt(np.sum((x / safe) ** 2, axis=axis))
