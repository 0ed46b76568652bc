r"""Ragged objectives: clients (and trials) with different sample counts, without padding every
client to the largest.

Representation: size buckets (:mod:`moreau._ragged_layout`).  The entries are sorted by size and
cut into geometric buckets (sizes within a factor ``ratio``, default 2); each bucket is one
padded objective of the model class (:class:`~moreau.Logistic`, :class:`~moreau.Multinomial`,
:class:`~moreau.LeastSquares`) over its own entries, so the samples held are at most ``ratio``
times the total (not ``m n_max``), and there are ``O(log(n_max/n_min))`` buckets.  Why buckets and
not concatenated samples with segment reductions (``np.add.reduceat``): every vectorised code
path of the models, the certified Newton prox with its rigorous rounding bounds, the float32
direction Hessians, the multinomial block Hessians, the curvature bounds, the envelopes, runs
unchanged on each bucket (a padded batch, as before), with the results put back in entry order
by one ``take``; a segment layout would need each of those paths (and each certificate's
rounding analysis) rewritten for segments.  The price is a Python loop over the few buckets, and
a padding waste of at most ``ratio``.

Results equal those of the padded objective to rounding: a padded row has weight 0 in both
layouts, only the summation order of the sums over samples differs (the rounding bounds of the
certificates use the bucket's ``n``, so they are never larger than the padded ones).

Built by :func:`ragged` from the samples of all entries concatenated in C order of ``sizes``;
the objects are instances of the model class (``isinstance(f, Multinomial)`` holds), with the
batch shape ``sizes.shape`` (batch axis = clients), and every operation of the objective protocol
and of :mod:`moreau.fl` runs per bucket.  ``X``, ``y``, ``weights`` read the padded layout,
formed on demand (compatibility; no computation of the objective reads them); ``padded()``
returns the padded objective.  Two things still read a padded view: per-sample methods that
return the padded layout (``Logistic.margins``), and the weight-vector mini-batches of
``fl.fedavg`` / ``fl.per_fedavg`` (their draw is defined on the padded layout, ``m n_max``
numbers, no features); ``fl.pfedme`` gathers its mini-batches from the buckets.

``ratio``: 2 by default (at most 2x the samples; on ``moreau.data.synthetic(0.5, 0.5, 0,
n_clients=100, size_scale=5)`` 6 buckets hold 1.32x the 133,539 training rows, against 8.5x
padded: ``benchmarks/RESULTS.md``, section 6).  A smaller ratio wastes less memory and adds
buckets, each one more call of every vectorised path per operation.
"""

from __future__ import annotations

from typing import Any, NoReturn, overload

import numpy as np

from ._backend import constructor_namespace, to_numpy
from ._errors import ProxConvergenceError
from ._least_squares import LeastSquares, real_array
from ._logistic import Logistic, _labels
from ._multinomial import MAX_BYTES, Multinomial
from ._objective import Objective
from ._proxinfo import ProxInfo
from ._quadratic import Quadratic
from ._ragged_layout import Layout
from ._ragged_samples import RaggedSamples
from ._typing import Array, DType, Namespace

__all__ = ["ragged", "RaggedLogistic", "RaggedMultinomial", "RaggedLeastSquares"]


@overload
def ragged(
    model: type[Logistic],
    X: Any,
    y: Any,
    sizes: Any,
    *,
    mu: Any = ...,
    weights: Any = ...,
    ratio: float = ...,
    **options: Any,
) -> RaggedLogistic: ...
@overload
def ragged(
    model: type[Multinomial],
    X: Any,
    y: Any,
    sizes: Any,
    *,
    mu: Any = ...,
    weights: Any = ...,
    ratio: float = ...,
    **options: Any,
) -> RaggedMultinomial: ...
@overload
def ragged(
    model: type[LeastSquares],
    X: Any,
    y: Any,
    sizes: Any,
    *,
    mu: Any = ...,
    weights: Any = ...,
    ratio: float = ...,
    **options: Any,
) -> RaggedLeastSquares: ...
@overload
def ragged(
    model: type,
    X: Any,
    y: Any,
    sizes: Any,
    *,
    mu: Any = ...,
    weights: Any = ...,
    ratio: float = ...,
    **options: Any,
) -> RaggedLogistic | RaggedMultinomial | RaggedLeastSquares: ...
def ragged(
    model: type,
    X: Any,
    y: Any,
    sizes: Any,
    *,
    mu: Any = 0.0,
    weights: Any = None,
    ratio: float = 2.0,
    **options: Any,
) -> RaggedLogistic | RaggedMultinomial | RaggedLeastSquares:
    r"""A batch of ``model`` losses over entries of different sample counts, in size buckets.

    ``model``: :class:`~moreau.Logistic`, :class:`~moreau.Multinomial` or
    :class:`~moreau.LeastSquares`.  ``sizes`` (ints >= 1, shape ``(..., m)``: the batch shape)
    gives each entry's sample count; ``X`` ``(N, d)`` and ``y`` ``(N,)`` hold the samples of all
    entries concatenated in C order of ``sizes`` (``N = sizes.sum()``), ``weights`` ``(N,)`` their
    per-sample weights (default ones; a positive sum per entry); ``mu`` a scalar or an array
    broadcasting to ``sizes.shape``; ``ratio`` (> 1) the bucket ratio: entries whose sizes are
    within that factor share one padded bucket.  ``options`` go to the model (``n_classes``,
    default ``max(y) + 1`` over all entries, and ``max_bytes`` of :class:`~moreau.Multinomial`).

    The objective equals ``model(X_pad, y_pad, mu, weights=w_pad)`` with every entry padded to
    ``max(sizes)`` samples of weight 0 (its :meth:`padded`), to rounding, at memory and time
    proportional to ``N`` (at most ``ratio N`` samples held).  Returns a
    :class:`RaggedLogistic`, :class:`RaggedMultinomial` or :class:`RaggedLeastSquares` (the same
    as calling that class with the other arguments).
    """
    cls = _CLASSES.get(model) if isinstance(model, type) else None
    if cls is None:
        raise TypeError(
            f"model must be moreau.Logistic, moreau.Multinomial or moreau.LeastSquares (got {model!r})"
        )
    return cls(X, y, sizes, mu=mu, weights=weights, ratio=ratio, **options)


class _FromSamples(RaggedSamples):
    """The constructor shared by the ragged classes: ``Ragged<Model>(X, y, sizes, *, mu=0.0,
    weights=None, ratio=2.0, **options)``, the arguments of :func:`ragged`."""

    _model: type

    def __init__(
        self,
        X: Any,
        y: Any,
        sizes: Any,
        *,
        mu: Any = 0.0,
        weights: Any = None,
        ratio: float = 2.0,
        **options: Any,
    ) -> None:
        model = self._model
        layout = Layout(sizes, ratio)
        xp = constructor_namespace(X=X, y=y, mu=mu, weights=weights)
        X = real_array(X, xp, "X")
        N = int(np.sum(layout.sizes))
        if X.ndim != 2 or X.shape[0] != N:
            raise ValueError(
                f"X must have shape (N, d) with N = sizes.sum() = {N} rows, the samples of all "
                f"entries concatenated (got shape {tuple(X.shape)})"
            )
        y = _check_labels(model, y, xp, X.dtype, N, options)
        w = _check_weights(weights, xp, X.dtype, layout)
        mu = real_array(mu, xp, "mu", dtype=X.dtype)
        try:
            fits = np.broadcast_shapes(tuple(mu.shape), layout.shape) == layout.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"mu must be a scalar or broadcast to the batch shape sizes.shape = {layout.shape} "
                f"(got shape {tuple(mu.shape)})"
            )
        parts = []
        for b, mu_b in enumerate(layout.split(mu, 0)):
            rows, valid = layout.rows(b)
            k, width = rows.shape
            r, v = xp.asarray(np.reshape(rows, (-1,))), xp.asarray(valid)
            Xb = xp.where(v[..., None], xp.reshape(xp.take(X, r, axis=0), (k, width, X.shape[1])), 0.0)
            yb = xp.where(v, xp.reshape(xp.take(y, r), (k, width)), self._fill)
            wb = xp.where(v, xp.reshape(xp.take(w, r), (k, width)), 0.0)
            parts.append(model(Xb, yb, mu=mu_b, weights=wb, **options))
        self._setup(layout, parts, (), mu, options)


def _check_labels(model: type, y: Any, xp: Namespace, dtype: DType, N: int, options: dict[str, Any]) -> Array:
    """``y`` ``(N,)`` checked over all entries at once (an error names its index in ``y``)."""
    y = real_array(y, xp, "y", dtype=dtype)
    if tuple(y.shape) != (N,):
        raise ValueError(
            f"y must have shape (N,) = ({N},), one label per row of X (got shape {tuple(y.shape)})"
        )
    if model is Logistic:
        return _labels(y, xp)
    if model is Multinomial:
        yh = np.asarray(to_numpy(y))
        bad = (yh != np.round(yh)) | (yh < 0)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise ValueError(f"y must hold integer class labels 0..C-1 (got {float(yh[i]):g} at index {i})")
        C = options.setdefault("n_classes", max(int(yh.max()) + 1, 2))
        if isinstance(C, bool) or not isinstance(C, int | np.integer) or C < 2:
            raise ValueError(f"n_classes must be an integer >= 2 (got {C!r})")
        if yh.max() >= C:
            i = int(np.argmax(yh >= C))
            raise ValueError(f"y must hold labels < n_classes={C} (got {float(yh[i]):g} at index {i})")
        options.setdefault("max_bytes", MAX_BYTES)
    return y


def _check_weights(weights: Any, xp: Namespace, dtype: DType, layout: Layout) -> Array:
    """Per-sample weights ``(N,)`` (default ones): finite, >= 0, a positive sum per entry."""
    N = int(np.sum(layout.sizes))
    if weights is None:
        return xp.ones((N,), dtype=dtype)
    w = real_array(weights, xp, "weights", dtype=dtype)
    if tuple(w.shape) != (N,):
        raise ValueError(
            f"weights must have shape (N,) = ({N},), one weight per row of X (got shape {tuple(w.shape)})"
        )
    wh = np.asarray(to_numpy(w))
    if np.any(wh < 0):
        raise ValueError(f"weights must be >= 0 (got min {float(wh.min()):.6g})")
    total = np.add.reduceat(wh, layout.offsets).reshape(layout.shape)
    if np.any(total <= 0):
        i = tuple(int(k) for k in np.argwhere(total <= 0)[0])
        raise ValueError(f"weights must have a positive sum for every entry (all zero at batch index {i})")
    return w


class _PerBucket(Objective):
    """The objective protocol of a ragged sample loss, run on each bucket and merged."""

    # set by RaggedSamples._setup
    layout: Layout
    parts: tuple[Any, ...]
    _outer: tuple[int, ...]

    def _each(
        self,
        name: str,
        args: tuple[Any, ...] = (),
        tails: tuple[int, ...] = (),
        out: int | tuple[int, ...] = 0,
        **kw: Any,
    ) -> Any:
        lay = self.layout
        split = [lay.split(a, t, self._outer) for a, t in zip(args, tails, strict=True)]
        got = [getattr(p, name)(*(s[b] for s in split), **kw) for b, p in enumerate(self.parts)]
        if isinstance(out, tuple):
            return tuple(
                None if got[0][i] is None else lay.merge([g[i] for g in got], t) for i, t in enumerate(out)
            )
        return lay.merge(got, out)

    def _const(self, name: str) -> Array:
        """A per-entry constant of the parts (shape ``(...)``) on the whole batch."""
        xp = self.xp
        parts = [xp.broadcast_to(getattr(p, name)(), p.batch_shape) for p in self.parts]
        return self.layout.merge(parts, 0)

    def value(self, theta: Array) -> Array:
        return self._each("value", (self._point(theta),), (1,))

    def grad(self, theta: Array) -> Array:
        return self._each("grad", (self._point(theta),), (1,), 1)

    def hess(self, theta: Array) -> Array:
        return self._each("hess", (self._point(theta),), (1,), 2)

    def hvp(self, theta: Array, v: Array) -> Array:
        return self._each("hvp", (self._point(theta), self._point(v, "v")), (1, 1), 1)

    def third(self, theta: Array, v: Array) -> Array:
        return self._each("third", (self._point(theta), self._point(v, "v")), (1, 1), 2)

    def _value_grad(self, theta: Array, **kw: bool) -> tuple[Array | None, Array | None]:
        # **kw: Logistic's value=/grad= switches, handed to each bucket
        return self._each("_value_grad", (self._point(theta),), (1,), (0, 1), **kw)

    def _hess_scale(
        self, theta: Array, *, hess: bool = True, scale: bool = True
    ) -> tuple[Array | None, Array | None]:
        return self._each("_hess_scale", (self._point(theta),), (1,), (2, 0), hess=hess, scale=scale)

    def _grad_rounding(self, theta: Array) -> Array:
        return self._each("_grad_rounding", (self._point(theta),), (1,))

    def _grad_error_scale(self, theta: Array) -> Array:
        return self._each("_grad_error_scale", (self._point(theta),), (1,))

    def curvature_bounds(self) -> tuple[Array, Array]:
        xp, lay = self.xp, self.layout
        got = [[xp.broadcast_to(c, p.batch_shape) for c in p.curvature_bounds()] for p in self.parts]
        return lay.merge([g[0] for g in got], 0), lay.merge([g[1] for g in got], 0)

    def strong_convexity(self) -> Array:
        return self._const("strong_convexity")

    def _smoothness_bound(self) -> Array:
        return self._const("_smoothness_bound")

    def _certified_curvature(self) -> Array:
        return self._const("_certified_curvature")

    def hessian_lipschitz(self) -> Array:
        return self._const("hessian_lipschitz")

    def _solve(
        self,
        w: Array,
        lam: Array,
        *,
        tol: Array | float | None = None,
        max_iter: int = 100,
        info: bool = False,
        want_u: bool = True,
    ) -> tuple[Array, Array | None, ProxInfo | None]:
        """Each bucket's prox (certified Newton), merged; a bucket that cannot certify some
        entries raises :class:`~moreau.ProxConvergenceError` over the whole batch after every
        bucket has run (its fields, and the entries named, in the ragged batch)."""
        lay = self.layout
        if tol is not None and not isinstance(tol, float | int):
            tol = np.asarray(to_numpy(tol), dtype=float)
        ws, lams, tols = (
            lay.split(w, 1, self._outer),
            lay.split(lam, 0, self._outer),
            lay.split(tol, 0, self._outer),
        )
        got: list[tuple[Array, Array | None, ProxInfo]] = []  # theta None: a failed bucket's
        errors: list[tuple[np.ndarray, str] | None] = []
        for p, wb, lb, tb in zip(self.parts, ws, lams, tols, strict=True):
            try:
                # info=True from every bucket (Newton forms it anyway): where another bucket
                # fails, the batch's ProxConvergenceError carries this bucket's bounds too
                theta, u, inf = p._solve(wb, lb, tol=tb, max_iter=max_iter, info=True, want_u=want_u)
                errors.append(None)
            except ProxConvergenceError as e:
                shape = tuple(np.shape(e.error_bound))
                theta = None if e.theta is None else self.xp.asarray(e.theta)
                u, inf = None, ProxInfo(iterations=e.iterations, error_bound=e.error_bound, tol=e.tol)
                errors.append((np.broadcast_to(True if e.failed is None else e.failed, shape), str(e)))
            got.append((theta, u, inf))
        if any(e is not None for e in errors):
            self._raise(got, errors)
        theta = lay.merge([g[0] for g in got], 1)
        u = lay.merge([g[1] for g in got], 1) if want_u else None
        if not info:
            return theta, u, None
        return theta, u, self._merge_info([g[2] for g in got], [g[0].shape[:-1] for g in got])

    def _merge_info(self, infos: list[ProxInfo], shapes: list[tuple[int, ...]]) -> ProxInfo:
        lay = self.layout

        def field(name: str) -> np.ndarray:
            vals = [getattr(i, name) for i in infos]
            return lay.merge(
                [np.broadcast_to(np.asarray(v), s) for v, s in zip(vals, shapes, strict=True)], 0
            )

        tol = None if any(i.tol is None for i in infos) else field("tol")
        return ProxInfo(iterations=field("iterations"), error_bound=field("error_bound"), tol=tol)

    def _raise(
        self,
        got: list[tuple[Array | None, Array | None, ProxInfo]],
        errors: list[tuple[np.ndarray, str] | None],
    ) -> NoReturn:
        lay = self.layout
        shapes = [np.shape(g[2].error_bound) for g in got]
        failed = lay.merge(
            [np.zeros(s, dtype=bool) if e is None else e[0] for e, s in zip(errors, shapes, strict=True)], 0
        )
        info = self._merge_info([g[2] for g in got], shapes)
        thetas = [g[0] for g in got]
        theta = None if any(t is None for t in thetas) else np.asarray(to_numpy(lay.merge(thetas, 1)))
        first = tuple(int(k) for k in np.argwhere(failed)[0])
        raise ProxConvergenceError(
            f"prox of {type(self).__name__}: {int(failed.sum())} of {failed.size} entries not certified (first: "
            f"batch index {first}; worst bound {float(np.max(np.where(failed, info.error_bound, -np.inf))):.3g}); "
            "per bucket: " + "; ".join(e[1] for e in errors if e is not None),
            error_bound=info.error_bound,
            tol=info.tol,
            iterations=info.iterations,
            failed=failed,
            theta=theta,
        )


class RaggedLogistic(_PerBucket, _FromSamples, RaggedSamples, Logistic):
    """:class:`~moreau.Logistic` over entries of different sizes, in size buckets (see :func:`ragged`)."""

    _model = Logistic
    _fill = 1.0

    def gradient_bound(self) -> Array:
        """``max_j ||x_j||`` over rows of positive weight, per entry (needs ``mu = 0``)."""
        return self._const("gradient_bound")


class RaggedMultinomial(_PerBucket, _FromSamples, RaggedSamples, Multinomial):
    """:class:`~moreau.Multinomial` over entries of different sizes, in size buckets (see :func:`ragged`)."""

    _model = Multinomial

    def _hess_error(self, theta: Array, split: bool = False, state: Any = None) -> Any:
        theta = self._point(theta)
        return self._each("_hess_error", (theta,), (1,), (0, 0) if split else 0, split=split)


class RaggedLeastSquares(_FromSamples, RaggedSamples, LeastSquares):
    """:class:`~moreau.LeastSquares` over entries of different sizes: a :class:`~moreau.Quadratic`
    whose moments ``A, b, c`` (``d x d`` per entry) are formed per size bucket (see :func:`ragged`);
    every quadratic operation (closed-form prox, exact constants, the FedProx closed form) is the
    parent's."""

    _model = LeastSquares

    def _setup(
        self,
        layout: Layout,
        parts: list[LeastSquares],
        outer: tuple[int, ...],
        mu: Array,
        options: dict[str, Any],
    ) -> None:
        super()._setup(layout, parts, outer, mu, options)
        xp, d = self.xp, self.dim

        def moment(name: str, tail: int) -> Array:
            return layout.merge(
                [xp.broadcast_to(getattr(p, name), p.batch_shape + (d,) * tail) for p in parts], tail
            )

        Quadratic.__init__(self, moment("A", 2), moment("b", 1), moment("c", 0))
        self.batch_shape = tuple(outer) + layout.shape


_CLASSES: dict[type, type[RaggedLogistic] | type[RaggedMultinomial] | type[RaggedLeastSquares]] = {
    Logistic: RaggedLogistic,
    Multinomial: RaggedMultinomial,
    LeastSquares: RaggedLeastSquares,
}
