r"""Fitted exponents: the least-squares slope of log y on log x, with an interval.

A rate claim ``E[y] ∝ x^a`` over a grid ``x_1 < ... < x_G`` is checked through
the least-squares slope of ``log E[y]`` on ``log x``; :func:`fit_exponent`
estimates it with a confidence interval, and :func:`moreau.analysis.engine.core.rate_sides`
compares the interval with the theory's exponent.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["fit_exponent", "detectable_change", "part_detectable_change"]


def fit_exponent(x, y, *, y_se=None, level=0.95):
    r"""Least-squares slope of ``log y`` on ``log x`` with a two-sided interval at ``level``.

    .. math::

        \hat a = \frac{\sum_k (u_k - \bar u)(v_k - \bar v)}{\sum_k (u_k - \bar u)^2},
        \qquad u_k = \log x_k,\ v_k = \log y_k .

    The interval, two ways:

    * ``y_se`` given (``y`` are Monte Carlo means, ``y_se`` their standard
      errors): the estimand is the least-squares slope of ``log E[y]`` over the
      grid (an exact power law gives its exponent; a curved ``E[y]`` gives its
      average log-log slope on the grid).  The grid points are independent, so
      by the delta method ``Var(â) ≈ Σ_k c_k² (se_k / y_k)²`` with
      ``c_k = (u_k − ū)/Σ_j (u_j − ū)²``; the interval is ``â ± z σ(â)`` with the
      normal quantile ``z`` (asymptotic in the number of trials; the lack of fit
      of a curved ``E[y]`` is the estimand, not an error).
    * ``y_se`` omitted (``y`` known without noise, or noise of unknown size):
      the classical regression interval ``â ± t_{G−2} s / √Σ(u_k − ū)²`` from the
      fit residuals ``s² = Σ r_k²/(G − 2)`` (needs ``G ≥ 3``); exact for a power
      law with i.i.d. Gaussian noise on ``log y``; an exact power law gives a
      zero-width interval up to rounding.

    Shapes: ``x`` ``(G,)`` or ``(..., G)``, ``y`` and ``y_se`` ``(..., G)``
    (broadcast together); returns ``slope`` ``(...)`` and ``(lo, hi)`` ``(...)``
    (numpy scalars for one grid).  ``x > 0`` with at least two distinct values,
    ``y > 0``, ``y_se >= 0``, all finite; ``0 < level < 1``.

    References: the rate claims of the FedProx analysis, Theorem 1 (error vs n,
    m, R) and of pFedMe, Theorem 1; the slope of a log-log least-squares fit.
    """
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise ValueError(f"level must be a number in (0, 1) (got {level!r})")
    x = _positive("x", x)
    y = _positive("y", y)
    try:
        x, y = np.broadcast_arrays(x, y)
    except ValueError:
        raise ValueError(
            f"x and y must broadcast on the grid axis (got shapes {np.shape(x)} and {np.shape(y)})"
        ) from None
    G = y.shape[-1]
    u, v = np.log(x), np.log(y)
    du = u - u.mean(axis=-1, keepdims=True)
    sxx = np.sum(du**2, axis=-1)
    if np.any(sxx <= 0):
        raise ValueError("x needs at least two distinct grid values (got a constant grid)")
    slope = np.sum(du * (v - v.mean(axis=-1, keepdims=True)), axis=-1) / sxx
    if y_se is not None:
        se = np.asarray(y_se, dtype=float)
        if not np.all(np.isfinite(se)) or np.any(se < 0):
            raise ValueError(f"y_se must be finite and >= 0 (got min {np.min(se) if se.size else se!r})")
        try:
            se = np.broadcast_to(se, y.shape)
        except ValueError:
            raise ValueError(
                f"y_se must broadcast against y (got shapes {np.shape(y_se)} and {y.shape})"
            ) from None
        c = du / sxx[..., None]
        sd = np.sqrt(np.sum((c * se / y) ** 2, axis=-1))
        q = stats.norm.ppf(0.5 + level / 2)
    else:
        if G < 3:
            raise ValueError(f"a residual interval needs a grid of at least 3 points (got {G}); pass y_se")
        resid = v - v.mean(axis=-1, keepdims=True) - slope[..., None] * du
        sd = np.sqrt(np.sum(resid**2, axis=-1) / (G - 2) / sxx)
        q = stats.t.ppf(0.5 + level / 2, G - 2)
    return slope, (slope - q * sd, slope + q * sd)


def detectable_change(lo, hi, exponent, kind, atol):
    r"""The smallest change of the claimed exponent that a rate part's interval rejects (its *power*).

    The judge (``moreau.analysis.engine.judge.rate_sides``) decides a claimed exponent ``e`` against
    the interval ``[lo, hi]`` of the fitted one, with tolerance ``atol``:

    * ``kind="equal"``: holds iff ``lo - atol <= e <= hi + atol``.  A claim ``e + Δ`` is rejected iff
      ``Δ > hi + atol - e`` or ``-Δ > e - lo + atol``; every ``|Δ| > d`` is rejected whatever its sign iff
      ``d >= max(hi - e, e - lo) + atol``: returns ``max(hi - e, e - lo) + atol``;
    * ``kind="at most"``: holds unless ``lo > e + atol``; only a lowered claim ``e - Δ`` can be rejected,
      iff ``Δ > e + atol - lo``: returns ``e - lo + atol``;
    * ``kind="at least"``: holds unless ``hi < e - atol``; only a raised claim ``e + Δ`` can be
      rejected, iff ``Δ > hi + atol - e``: returns ``hi - e + atol``.

    So a change strictly larger than the returned value (in the direction the kind can see) is
    rejected on this instance; a smaller one is not.  Negative where the claim ``e`` itself is
    rejected: ``-d`` is then the distance from ``e`` to the nearest claim the interval accepts (every
    change towards it smaller than ``-d`` is rejected too); for ``kind="equal"`` that is
    ``min(hi - e, e - lo) + atol`` (the formula above would give the distance to the far end of the
    accepted range instead, and call a part that measured its exponent to ±1e-4 and rejected the
    claim by 0.5 blind to changes below 0.5).  Arrays broadcast; NaN where an input is NaN (an
    instance without a fit).
    """
    from moreau.analysis.engine.judge import RATE_KINDS

    if kind not in RATE_KINDS:
        raise ValueError(f"kind must be one of {RATE_KINDS} (got {kind!r})")
    if not (np.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol must be finite and >= 0 (got {atol!r})")
    lo, hi, e = (np.asarray(v, dtype=float) for v in (lo, hi, exponent))
    with np.errstate(invalid="ignore"):
        if np.any(lo > hi):
            raise ValueError("lo must be <= hi")
        if kind == "equal":
            above, below = hi - e + atol, e - lo + atol  # both >= 0 iff the claim e is accepted
            return np.where((above >= 0) & (below >= 0), np.maximum(above, below), np.minimum(above, below))
        if kind == "at most":
            return e - lo + atol
        return hi - e + atol


def part_detectable_change(p):
    """A judged rate part's power: the smallest :func:`detectable_change` over its applicable instances
    with a fit (a mutant is rejected when one instance rejects it), from the intervals the judge used
    (widened jointly over the run's instances); None without such an instance or for other parts."""
    s = p.sides
    if p.claimed != "rate" or s.lhs_ci is None:
        return None
    d = detectable_change(s.lhs_ci[0], s.lhs_ci[1], s.rhs, s.kind, s.atol)
    d = d[np.asarray(s.applicable, bool) & np.isfinite(d)]
    return float(np.min(d)) if d.size else None


def _positive(name, a):
    a = np.asarray(a, dtype=float)
    if a.ndim == 0 or a.shape[-1] < 2:
        raise ValueError(f"{name} must have a grid axis of at least 2 points (got shape {a.shape})")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        bad = a[~(np.isfinite(a) & (a > 0))].ravel()[0]
        raise ValueError(f"{name} must be finite and > 0 for a log-log fit (got {bad!r})")
    return a
