r"""Hypothesis strategies for moreau objectives (public, keyword-only).

Every factory validates its arguments when it is called (not when drawn) and
names the argument and the value in its error.  Drawn objectives are numpy
float64 unless ``dtype`` says otherwise; convert with ``xp.asarray`` for
another backend.  Matrices are built from hypothesis-drawn floats, so a
failing example shrinks towards small, axis-aligned instances.  Drawn
entries are never subnormal (underflow is a separate edge case, tested by
hand where it matters).

>>> from moreau import strategies as ms
>>> ms.quadratics(dim=3, kind="weakly_convex")          # doctest: +SKIP
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ._logistic import Logistic
from ._quadratic import Quadratic

__all__ = ["quadratics", "logistic_problems", "lams", "batch_shapes", "points", "KINDS"]

#: spectrum ranges of the named kinds of quadratic (eigenvalues of A)
KINDS = {
    "convex": (0.0, 10.0),
    "strongly_convex": (0.1, 10.0),
    "weakly_convex": (-5.0, 10.0),
}


def _check_int(name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an integer {rng} (got {value!r})")


def _check_range(name, value, *, positive=False):
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lo, hi) of numbers (got {value!r})") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi or (positive and lo <= 0):
        cond = "0 < lo <= hi" if positive else "lo <= hi"
        raise ValueError(f"{name} must be finite with {cond} (got {value!r})")
    return lo, hi


def _dims(name, value):
    if isinstance(value, int):
        _check_int(name, value, 1)
        return value, value
    lo, hi = _check_range(name, value)
    _check_int(f"{name}[0]", int(lo), 1)
    return int(lo), int(hi)


def _check_dtype(dtype):
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64 (got {dtype!r})")
    return np.dtype(dtype)


def batch_shapes(*, max_dims=1, max_side=4):
    """Batch shapes with up to ``max_dims`` axes (default 1) of sizes 1..``max_side`` (default 4)."""
    _check_int("max_dims", max_dims, 0, 3)
    _check_int("max_side", max_side, 1)
    return hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=1, max_side=max_side)


def lams(*, min_value=1e-4, max_value=1e4):
    """Prox parameters λ, log-uniform in [``min_value``, ``max_value``] (default [1e-4, 1e4])."""
    lo, hi = _check_range("(min_value, max_value)", (min_value, max_value), positive=True)
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: float(min(max(10.0**e, lo), hi)))


def _orthogonal(draw, shape, d):
    G = draw(
        hnp.arrays(
            np.float64, tuple(shape) + (d, d), elements=st.floats(-1, 1, width=64, allow_subnormal=False)
        )
    )
    G = G + 2.0 * np.eye(d)  # shrinks to the identity, never singular in practice
    Q, R = np.linalg.qr(G)
    return Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]


@st.composite
def _quadratic(draw, dim, spectrum, batch, dtype, b_scale):
    d = draw(st.integers(*dim))
    shape = draw(batch) if not isinstance(batch, tuple) else batch
    lo, hi = spectrum
    a = draw(hnp.arrays(np.float64, tuple(shape) + (d,), elements=st.floats(lo, hi, allow_subnormal=False)))
    V = _orthogonal(draw, shape, d)
    b = draw(
        hnp.arrays(
            np.float64, tuple(shape) + (d,), elements=st.floats(-b_scale, b_scale, allow_subnormal=False)
        )
    )
    A = (V * a[..., None, :]) @ np.swapaxes(V, -1, -2)
    return Quadratic(((A + np.swapaxes(A, -1, -2)) / 2).astype(dtype), b.astype(dtype))


def quadratics(
    *, dim=(1, 4), kind="strongly_convex", spectrum=None, batch=(), dtype=np.float64, b_scale=10.0
):
    """Strategy for :class:`moreau.Quadratic` with a prescribed spectrum.

    Parameters (keyword-only):
      dim: ``d``, an int or an inclusive range ``(lo, hi)`` (default (1, 4)).
      kind: "convex" [0, 10], "strongly_convex" [0.1, 10] (default) or
        "weakly_convex" [-5, 10]: the range the eigenvalues of A are drawn from.
      spectrum: ``(lo, hi)`` overriding ``kind``.
      batch: a batch shape tuple (default ``()``) or a strategy of shapes
        (e.g. :func:`batch_shapes`).
      dtype: float64 (default) or float32.
      b_scale: entries of b in [-b_scale, b_scale] (default 10).
    """
    dim = _dims("dim", dim)
    if spectrum is None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)} (got {kind!r})")
        spectrum = KINDS[kind]
    spectrum = _check_range("spectrum", spectrum)
    if not isinstance(batch, (tuple, st.SearchStrategy)):
        raise ValueError(f"batch must be a shape tuple or a strategy of shapes (got {batch!r})")
    b_scale = _check_range("(0, b_scale)", (0.0, b_scale))[1]
    return _quadratic(dim, spectrum, batch, _check_dtype(dtype), b_scale)


@st.composite
def _logistic(draw, n, d, margin_scale, label_balance, mu, batch, dtype, padding):
    nn, dd = draw(st.integers(*n)), draw(st.integers(*d))
    shape = draw(batch) if not isinstance(batch, tuple) else batch
    X = draw(
        hnp.arrays(np.float64, tuple(shape) + (nn, dd), elements=st.floats(-1, 1, allow_subnormal=False))
    )
    X = X * margin_scale
    pos = int(round(label_balance * nn))
    base = np.array([1.0] * pos + [-1.0] * (nn - pos))
    perm = draw(st.permutations(range(nn)))
    y = np.broadcast_to(base[list(perm)], tuple(shape) + (nn,)).copy()
    weights = None
    if padding:
        keep = draw(hnp.arrays(np.bool_, tuple(shape) + (nn,)))
        keep[..., 0] = True
        weights = keep.astype(np.float64)
    return Logistic(X.astype(dtype), y.astype(dtype), mu=mu, weights=weights)


def logistic_problems(
    *,
    n=(2, 20),
    d=(1, 4),
    margin_scale=3.0,
    label_balance=0.5,
    mu=0.0,
    batch=(),
    dtype=np.float64,
    padding=False,
):
    """Strategy for :class:`moreau.Logistic` problems.

    Parameters (keyword-only):
      n: samples per client, int or inclusive range (default (2, 20)).
      d: dimension, int or inclusive range (default (1, 4)).
      margin_scale: features drawn in [-margin_scale, margin_scale] (default 3).
      label_balance: fraction of +1 labels, in [0, 1] (default 0.5); labels
        are a drawn permutation of that many +1 and the rest -1.
      mu: l2 regularisation >= 0 (default 0).
      batch: shape tuple or strategy of shapes (default ``()``).
      dtype: float64 (default) or float32.
      padding: draw 0/1 sample weights (at least one 1 per client) (default False).
    """
    n, d = _dims("n", n), _dims("d", d)
    margin_scale = _check_range("(0, margin_scale)", (0.0, margin_scale))[1]
    if not 0.0 <= float(label_balance) <= 1.0:
        raise ValueError(f"label_balance must be in [0, 1] (got {label_balance!r})")
    if not (math.isfinite(float(mu)) and float(mu) >= 0):
        raise ValueError(f"mu must be finite and >= 0 (got {mu!r})")
    if not isinstance(batch, (tuple, st.SearchStrategy)):
        raise ValueError(f"batch must be a shape tuple or a strategy of shapes (got {batch!r})")
    return _logistic(
        n, d, float(margin_scale), float(label_balance), float(mu), batch, _check_dtype(dtype), bool(padding)
    )


def points(f, *, scale=10.0):
    """Strategy for points ``(..., d)`` of objective ``f``'s batch shape, entries in [-scale, scale]."""
    scale = _check_range("(0, scale)", (0.0, scale))[1]
    return hnp.arrays(
        np.float64, tuple(f.batch_shape) + (f.dim,), elements=st.floats(-scale, scale, allow_subnormal=False)
    )
