r"""Instance families that drop one common assumption at a time (numpy, seeded by a Generator).

Most statements assume some of "L-smooth", "convex", "mu-strongly convex".  These families
break them one at a time, each with an exact prox (``moreau.AbsoluteValue``, ``Hinge``,
``Huber``, ``DoubleWell``), so a checker can test whether an assumption is needed:

* ``abs``: :math:`\sum_k c_k|\theta_k - s_k|` (``AbsoluteValue``): not smooth, convex, strongly
  convex iff ``mu > 0``;
* ``hinge``: :math:`c\max(0, 1 - y\,a^\top\theta)` (``Hinge``, one sample): not smooth, convex,
  strongly convex iff ``mu > 0``;
* ``huber``: :math:`\sum_k c_k h_{\delta_k}(\theta_k - s_k)` (``Huber``): smooth
  (``L = mu + max c/delta``), convex, strongly convex iff ``mu > 0``;
* ``weakly_convex``: double wells (``DoubleWell``): smooth (``L = mu + max L_k``), convex iff
  ``mu >= max L_k``, strongly convex iff ``mu > max L_k``, else ``(max L_k - mu)``-weakly convex;

each with the ridge :math:`\tfrac{\mu}{2}\|\theta\|^2`.

Default ``mu``: ``abs`` and ``hinge`` half 0 (nonsmooth, convex) and half log-uniform in
[0.01, 1] (nonsmooth, strongly convex: only smoothness dropped); ``huber`` 0 (only strong
convexity dropped); ``weakly_convex`` 0 (convexity dropped, smoothness kept).

A batch is a dict of numpy arrays, instances along the first axis: the constructor arguments
(keys as the constructor names them, :data:`ARGS`), ``mu`` ``(T,)``, the exact curvature bounds
``lo``, ``hi`` ``(T,)`` (``hi = inf``: not smooth), ``smoothness`` (``max(|lo|, |hi|)``),
``weak_convexity`` (``max(-lo, 0)``) and one boolean ``(T,)`` per assumption
(:data:`ASSUMPTIONS`).  A statement marks its applicability with
``applicable(batch, "smooth", "strongly_convex")`` and builds the clients with
:func:`objective`.
"""

from __future__ import annotations

import numpy as np

from moreau._nonsmooth import AbsoluteValue, Hinge
from moreau._piecewise_quadratic import DoubleWell, Huber
from moreau.analysis.engine.instances import log_uniform

__all__ = ["ARGS", "ASSUMPTIONS", "KINDS", "applicable", "kind_of", "nonsmooth_batch", "objective"]

KINDS = ("abs", "hinge", "huber", "weakly_convex")
ASSUMPTIONS = ("smooth", "convex", "strongly_convex")
#: the constructor and its positional arguments (batch keys) per kind; ``mu`` is passed by keyword
ARGS = {
    "abs": (AbsoluteValue, ("s", "c")),
    "hinge": (Hinge, ("a", "y", "c")),
    "huber": (Huber, ("s", "delta", "c")),
    "weakly_convex": (DoubleWell, ("s", "a", "L")),
}


def _count(v, name):
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
        raise ValueError(f"{name} must be an integer >= 1 (got {v!r})")
    return int(v)


def _mu(rng, T, kind, mu):
    if mu is None:
        mu = np.zeros(T)
        if kind in ("abs", "hinge"):
            mu[T // 2 :] = log_uniform(rng, 0.01, 1.0, T - T // 2)
        return mu
    try:
        mu = np.broadcast_to(np.asarray(mu, dtype=float), (T,)).copy()
    except ValueError:
        raise ValueError(
            f"mu must be a number or an array of shape ({T},) (got shape {np.shape(mu)})"
        ) from None
    if not np.all(np.isfinite(mu) & (mu >= 0)):
        raise ValueError(f"mu must be finite and >= 0 (got {mu[~(np.isfinite(mu) & (mu >= 0))][0]:g})")
    return mu


def nonsmooth_batch(rng, T, d, kind, *, mu=None):
    """``T`` instances of dimension ``d`` of ``kind`` (one of :data:`KINDS`): a dict of arrays.

    Parameters (numpy, drawn from the Generator ``rng``): ``abs``: ``s`` ``(T, d)`` standard
    normal, ``c`` ``(T, d)`` log-uniform in [0.1, 10]; ``hinge``: ``a`` ``(T, d)`` normal with
    variance ``1/d``, ``y`` ``(T,)`` in {-1, +1}, ``c`` ``(T,)`` log-uniform in [0.1, 10];
    ``huber``: ``s``, ``delta`` ``(T, d)`` log-uniform in [0.01, 1], ``c`` as for ``abs``;
    ``weakly_convex``: ``s`` ``(T, d)`` normal with standard deviation 2, ``a`` ``(T, d)``
    log-uniform in [0.2, 2] (wells at ``s +- a``), ``L`` ``(T, d)`` log-uniform in [0.1, 10].
    ``mu``: a number or ``(T,)`` (>= 0); default: see the module docstring.  Plus the constants
    and flags listed there.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    T, d = _count(T, "T"), _count(d, "d")
    mu = _mu(rng, T, kind, mu)
    if kind == "abs":
        out = {"s": rng.standard_normal((T, d)), "c": log_uniform(rng, 0.1, 10.0, (T, d))}
        lo, hi = mu, np.full(T, np.inf)
    elif kind == "hinge":
        out = {
            "a": rng.standard_normal((T, d)) / np.sqrt(d),
            "y": np.where(rng.uniform(size=T) < 0.5, -1.0, 1.0),
            "c": log_uniform(rng, 0.1, 10.0, T),
        }
        lo, hi = mu, np.full(T, np.inf)
    elif kind == "huber":
        out = {
            "s": rng.standard_normal((T, d)),
            "delta": log_uniform(rng, 0.01, 1.0, (T, d)),
            "c": log_uniform(rng, 0.1, 10.0, (T, d)),
        }
        lo, hi = mu, mu + np.max(out["c"] / out["delta"], axis=1)
    else:
        out = {
            "s": 2 * rng.standard_normal((T, d)),
            "a": log_uniform(rng, 0.2, 2.0, (T, d)),
            "L": log_uniform(rng, 0.1, 10.0, (T, d)),
        }
        top = np.max(out["L"], axis=1)
        lo, hi = mu - top, mu + top
    out.update(
        mu=mu,
        lo=lo.copy(),
        hi=hi,
        smoothness=np.maximum(np.abs(lo), np.abs(hi)),
        weak_convexity=np.maximum(-lo, 0.0),
        smooth=np.isfinite(hi),
        convex=lo >= 0,
        strongly_convex=lo > 0,
    )
    return out


def kind_of(batch):
    """The kind whose constructor arguments ``batch`` holds."""
    keys = set(batch)
    for kind in ("hinge", "huber", "weakly_convex", "abs"):  # most specific key sets first
        if set(ARGS[kind][1]) <= keys:
            return kind
    raise ValueError(
        f"batch holds no instance family's arguments (keys {sorted(keys)}); expected those of one of {KINDS}"
    )


def objective(batch, idx=None):
    """The moreau objective of the instances ``idx`` (all by default), batch shape ``(T,)``."""
    cls, names = ARGS[kind_of(batch)]
    take = (lambda v: v) if idx is None else (lambda v: v[idx])
    return cls(*(take(batch[n]) for n in names), mu=take(batch["mu"]))


def applicable(batch, *assumptions):
    """Boolean ``(T,)``: the instances that satisfy every named assumption (of :data:`ASSUMPTIONS`)."""
    bad = [a for a in assumptions if a not in ASSUMPTIONS]
    if bad:
        raise ValueError(f"assumptions must be among {ASSUMPTIONS} (got {bad[0]!r})")
    T = len(batch["mu"])
    out = np.ones(T, dtype=bool)
    for a in assumptions:
        out &= np.asarray(batch[a], dtype=bool)
    return out
