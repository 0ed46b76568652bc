r"""Shared pieces of the federated algorithms: argument checks, the history record, sampling.

Randomness layout (so that a batched run equals a loop over clients and trials):
every random draw of a round is ONE host draw from the ``numpy.random.Generator``
with the full batch shape, in a fixed order documented by each algorithm
(e.g. client sampling first, shape ``(*trials, m)``; then mini-batches, shape
``(*trials, m, n)`` per local step).  A loop that reproduces a batched run
makes the same draws with the same shapes and slices them.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._backend import _all_finite, as_array, to_numpy
from .._least_squares import LeastSquares, RowsLeastSquares
from .._logistic import Logistic
from .._multinomial import Multinomial
from .._objective import Objective
from .._quadratic import Quadratic
from .._ragged import RaggedLogistic
from .._ragged_samples import RaggedSamples
from .._typing import Array, Namespace

__all__ = ["History"]


@dataclass(frozen=True)
class History:
    r"""Iterate history of a federated algorithm (arrays in the objective's namespace).

    ``w_global`` ``(rounds+1, *lead, d)``: the global model after each round (index 0 is the
    start; ``None`` for :func:`gd`, which has no server); ``w_local`` ``(rounds+1, *lead, m, d)``
    the local models where the algorithm keeps them (else ``None``); ``theta``
    ``(rounds+1, *lead, m, d)`` personalised models where the paper defines them (pFedMe:
    :math:`\hat\theta_i(w_t)`; Per-FedAvg: one step
    :math:`w_t - \alpha\nabla f_i(w_t)`), else ``None``; ``w_bar`` the averaged models where the
    paper states its result for an average, else ``None``: pFedMe Theorem 1's :math:`\bar w_T`
    ``(*lead, d)``; Per-FedAvg Theorem 4.5's :math:`\bar w_{k+1,t}` ``(rounds, tau, *lead, d)``.
    ``lead`` is the broadcast of the trial batch shape with the shapes of array parameters.

    Counters, per client: ``rounds`` (communication rounds), ``local_steps`` (local updates per
    round), ``grad_evals`` (gradient evaluations in the whole run, one per (mini-batch) gradient
    of f_i or h_i; an int, or a host array ``(*lead, m)`` when client sampling or pFedMe's accuracy
    stop (8) makes it differ between clients), ``hvp_evals`` (Hessian-vector products), ``prox_evals`` (exact, certified
    proxes).  ``sampled`` holds the sampled client indices ``(rounds, *lead, S)`` (host numpy) when
    the algorithm samples clients, else ``None``.  ``params``: the arguments the run used.
    """

    w_global: Array | None
    w_local: Array | None
    rounds: int
    local_steps: int
    grad_evals: int | np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    theta: Array | None = None
    w_bar: Array | None = None
    hvp_evals: int | np.ndarray = 0
    prox_evals: int | np.ndarray = 0
    sampled: np.ndarray | None = None


# --- argument checks -----------------------------------------------------------------------


def check_objective(objective: Any, name: str = "objective") -> tuple[Objective, int]:
    """The objective and its client count m; the batch shape must end with the client axis."""
    if not isinstance(objective, Objective):
        raise TypeError(f"{name} must be a moreau Objective (got {type(objective).__name__})")
    if len(objective.batch_shape) < 1:
        raise ValueError(
            f"{name} must have a client axis: batch shape (..., m) (got batch shape "
            f"{tuple(objective.batch_shape)})"
        )
    return objective, objective.batch_shape[-1]


def positive(value: Any, name: str, f: Objective, *, allow_zero: bool = False) -> Array:
    """A real parameter > 0 (>= 0 with ``allow_zero``): a number or an array broadcasting against
    the trial shape ``f.batch_shape[:-1]``; returned as an array of ``f``'s namespace and dtype
    (host numpy arrays are accepted on every backend: parameters are small)."""
    xp = f.xp
    if isinstance(value, bool) or value is None:
        raise TypeError(f"{name} must be a real number or array (got {value!r})")
    if isinstance(value, numbers.Real):
        v = float(value)
        ok = math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
        if not ok:
            raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'} (got {v:g})")
        return xp.asarray(v, dtype=f.dtype)
    try:
        arr = as_array(value, xp, name, dtype=f.dtype, host_ok=True)
    except ValueError:
        raise ValueError(f"{name} must be finite (got NaN or inf)") from None
    host = np.asarray(to_numpy(arr))
    bad = host < 0 if allow_zero else host <= 0
    if np.any(bad):
        raise ValueError(
            f"{name} must be {'>= 0' if allow_zero else '> 0'} (got {float(host[bad].reshape(-1)[0]):g})"
        )
    trials = tuple(f.batch_shape[:-1])
    try:
        np.broadcast_shapes(tuple(arr.shape), trials)
    except ValueError:
        raise ValueError(
            f"{name} of shape {tuple(arr.shape)} must broadcast against the trial shape "
            f"{trials} (the objective's batch shape without its client axis)"
        ) from None
    return arr


def count(value: Any, name: str, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools and floats are refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer (got {value!r})")
    if int(value) < minimum:
        raise ValueError(f"{name} must be >= {minimum} (got {int(value)})")
    return int(value)


def client_weights(weights: Any, f: Objective, m: int, name: str = "weights") -> Array:
    r"""The p_i, shape ``(..., m)`` normalised to sum 1 (default uniform 1/m)."""
    xp = f.xp
    if weights is None:
        return xp.full((m,), 1.0 / m, dtype=f.dtype)
    p = as_array(weights, xp, name, dtype=f.dtype, host_ok=True)
    if p.ndim < 1 or p.shape[-1] != m:
        raise ValueError(
            f"{name} must have shape (..., m) with m={m} clients (the objective's last batch "
            f"axis); got shape {tuple(p.shape)}"
        )
    try:
        np.broadcast_shapes(tuple(p.shape[:-1]), tuple(f.batch_shape[:-1]))
    except ValueError:
        raise ValueError(
            f"{name} batch shape {tuple(p.shape[:-1])} does not broadcast with the trial "
            f"shape {tuple(f.batch_shape[:-1])}"
        ) from None
    if not bool(xp.all(p >= 0)):
        raise ValueError(f"{name} must be >= 0 (got min {float(xp.min(p)):g})")
    with np.errstate(over="ignore"):
        total = xp.sum(p, axis=-1, keepdims=True)
    if not bool(xp.all(total > 0)):
        raise ValueError(f"{name} must have a positive sum over the clients (got an all-zero row)")
    if not bool(xp.all(xp.isfinite(total))):  # every p_i / sum would be 0
        raise ValueError(
            f"{name} must have a finite sum over the clients: it overflows {f.dtype} (largest "
            f"weight {float(xp.max(p)):.3g}); rescale them (only their ratios matter)"
        )
    return p / total


def check_diverged(xp: Namespace, f: Objective, W: Array, what: str, where: str, steps: str = "eta") -> None:
    """``ValueError`` when the iterates ``W`` of ``what`` after ``where`` (e.g. "round 3") are no
    longer finite: the run diverged, almost always a step size ``steps`` above the stability
    limit (``2/L`` for a gradient step), and is reported as such instead of as a bad point
    passed to the next gradient."""
    if _all_finite(W, xp):  # one pass, no mask the size of W
        return
    try:
        L = float(xp.max(f.smoothness()))
        hint = (
            f" (the clients' largest smoothness is L = {L:.3g}: a plain gradient step is stable "
            f"only below 2/L = {2 / L:.3g})"
        )
    except Exception:  # noqa: BLE001  (the hint is optional: no constant, no hint)
        hint = ""
    raise ValueError(
        f"{what} diverged: the iterates overflowed to inf or NaN at {where}; the step size "
        f"{steps} is likely too large{hint}"
    )


def point(w0: Any, f: Objective, lead: tuple[int, ...], name: str = "w0", *, clients: bool = False) -> Array:
    """A start point broadcast to ``lead + (d,)`` (``lead + (m, d)`` with ``clients``); default 0."""
    xp = f.xp
    d = f.dim
    shape = tuple(lead) + ((f.batch_shape[-1],) if clients else ()) + (d,)
    if w0 is None:
        return xp.zeros(shape, dtype=f.dtype)
    w = as_array(w0, xp, name, dtype=f.dtype, host_ok=True)
    if w.ndim < 1 or w.shape[-1] != d:
        raise ValueError(f"{name} must have shape (..., d) with d={d} (got shape {tuple(w.shape)})")
    try:
        out = np.broadcast_shapes(tuple(w.shape), shape)
    except ValueError:
        out = None
    if out != shape:
        want = "(*trials, m, d)" if clients else "(*trials, d)"
        raise ValueError(f"{name} must broadcast to {want} = {shape} (got shape {tuple(w.shape)})")
    return xp.broadcast_to(w, shape)


def lead_shape(f: Objective, *params: Array) -> tuple[int, ...]:
    """Broadcast of the trial shape with the shapes of the (array) parameters."""
    return tuple(np.broadcast_shapes(tuple(f.batch_shape[:-1]), *(tuple(p.shape) for p in params)))


def generator(rng: np.random.Generator | int | None, needed: bool, why: str) -> np.random.Generator | None:
    """``numpy.random.Generator`` from a Generator or an int seed; required when ``needed``."""
    if rng is None:
        if needed:
            raise ValueError(f"rng is required when {why}: pass a numpy.random.Generator or an int seed")
        return None
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, numbers.Integral):
        raise TypeError(f"rng must be a numpy.random.Generator or an int seed (got {type(rng).__name__})")
    if int(rng) < 0:  # numpy's own message ("expected non-negative integer") names nothing
        raise ValueError(f"rng must be a numpy.random.Generator or a non-negative int seed (got {int(rng)})")
    return np.random.default_rng(int(rng))


def sample_size(S: int | None, m: int, name: str = "S") -> int:
    """S of N = m clients: default all of them."""
    if S is None:
        return m
    S = count(S, name)
    if S > m:
        raise ValueError(f"{name} must be <= N = {m} clients (got {S})")
    return S


def sample_clients(rng: np.random.Generator, lead: tuple[int, ...], m: int, S: int) -> np.ndarray:
    """Host indices ``(*lead, S)``: S of m clients uniformly without replacement (one draw
    ``rng.random((*lead, m))``, the S smallest keys), sorted ascending."""
    keys = rng.random(tuple(lead) + (m,))
    return np.sort(np.argsort(keys, axis=-1)[..., :S], axis=-1)


def participation(
    rng: np.random.Generator | None, lead: tuple[int, ...], m: int, S: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """``(mask (*lead, m) bool, indices (*lead, S) or None)``: the clients taking part in a round —
    all of them when S = m (no draw), else :func:`sample_clients`."""
    if S >= m:
        return np.ones(tuple(lead) + (m,), dtype=bool), None
    assert rng is not None, "sampling S < m clients needs an rng (generator(rng, needed=True))"
    idx = sample_clients(rng, lead, m, S)
    mask = np.zeros(tuple(lead) + (m,), dtype=bool)
    np.put_along_axis(mask, idx, True, axis=-1)
    return mask, idx


def batched_objective(f: Any, counts: Any) -> Any:
    """``f`` with mini-batch weights ``counts`` (host ``(*lead, m, n)``): for the sample losses
    (:class:`~moreau.LeastSquares`, :class:`~moreau.Logistic`, :class:`~moreau.Multinomial` and their
    ragged forms) the rows of positive count gathered into a new objective of the model class with
    those counts as weights (:func:`gathered`: the same function, its cost that of the mini-batch,
    not of all the client's samples); any other objective ``f.with_weights(counts)``."""
    if not _gathers(f):
        return f.with_weights(f.xp.asarray(counts, dtype=f.dtype))
    counts = np.asarray(counts)
    k = max(int(np.max(np.sum(counts > 0, axis=-1))), 1)
    idx = np.argsort(counts <= 0, axis=-1, kind="stable")[..., :k]  # the rows drawn, ascending
    return gathered(f, idx, np.take_along_axis(counts, idx, axis=-1))


def _gathers(
    f: Objective,
) -> bool:  # the built-in sample losses and their ragged forms (a subclass may hold more)
    return type(f) in (LeastSquares, Logistic, Multinomial) or isinstance(f, RaggedSamples)


def gathered(f: Any, idx: Any, weights: Any = None) -> Any:
    r"""The rows ``idx`` (host ints ``S + (k,)``, ``S`` broadcasting against the batch; indices into
    each entry's samples in the padded layout, repeats allowed) of the sample loss ``f`` with per-row
    ``weights`` (host, default ones): one object of the model class, batch ``S`` broadcast with the
    batch, the function of ``f.with_weights`` with those weights summed per row.  The rows were
    validated by ``f``: no check is repeated (a shallow copy of ``f`` with the rows; least squares:
    :class:`~moreau._least_squares.RowsLeastSquares`)."""
    xp = f.xp
    idx = np.asarray(idx)
    full = tuple(np.broadcast_shapes(idx.shape[:-1], tuple(f.batch_shape)))
    idx = np.broadcast_to(idx, full + idx.shape[-1:])
    if isinstance(f, RaggedSamples):  # from each size bucket, back in entry order
        lay, proto = f.layout, f.parts[0]
        got = [
            _take_rows(xp, p.X, p.y, ib) for p, ib in zip(f.parts, lay.split(idx, 1, f._outer), strict=True)
        ]
        X, y = lay.merge([g[0] for g in got], 2), lay.merge([g[1] for g in got], 1)
    else:
        (X, y), proto = _take_rows(xp, f.X, f.y, idx), f
    w = xp.ones(tuple(idx.shape), dtype=f.dtype) if weights is None else xp.asarray(weights, dtype=f.dtype)
    if isinstance(proto, LeastSquares):
        return RowsLeastSquares(xp, X, y, f.mu, w, full)
    new = copy.copy(proto)  # its caches (row norms, constants, one-hot labels) are of other rows: dropped
    cached = _cached_names(type(proto))
    new.__dict__ = {k: v for k, v in vars(proto).items() if k not in cached}
    new.X, new.y, new.mu, new.weights = X, y, f.mu, w
    new._p = w / xp.sum(w, axis=-1, keepdims=True)
    new.batch_shape = full
    return new


_CACHED_NAMES: dict[type, frozenset[str]] = {}


def _cached_names(cls: type) -> frozenset[str]:
    """The names of ``cls``'s cached properties (its caches, dropped by :func:`gathered`): per class,
    once (a class's properties are fixed when it is defined)."""
    names = _CACHED_NAMES.get(cls)
    if names is None:
        names = frozenset(
            k for c in cls.__mro__ for k, v in vars(c).items() if isinstance(v, cached_property)
        )
        _CACHED_NAMES[cls] = names
    return names


def _take_rows(xp: Namespace, X: Array, y: Array, idx: np.ndarray) -> tuple[Array, Array]:
    """``X`` ``(..., n, d)``, ``y`` ``(..., n)`` at the rows ``idx`` (host ``(*lead, k)``): one ``take`` each."""
    lead, k = tuple(idx.shape[:-1]), idx.shape[-1]
    n, d = X.shape[-2], X.shape[-1]

    def flat(
        a: Array, tail: tuple[int, ...]
    ) -> tuple[Array, np.ndarray]:  # a as (rows, *tail) and the flat row index of idx in it (no copy of a)
        own = tuple(a.shape[: a.ndim - 1 - len(tail)])
        M = math.prod(own)
        rows = xp.reshape(a, (M * n,) + tail)
        if M == 1:
            return rows, idx
        entry = np.broadcast_to(np.reshape(np.arange(M) * n, own), lead)  # a's entry of each idx row
        return rows, entry[..., None] + idx

    Xf, ix = flat(X, (d,))
    Xb = xp.reshape(xp.take(Xf, xp.asarray(np.reshape(ix, (-1,))), axis=0), lead + (k, d))
    yf, iy = flat(y, ())
    return Xb, xp.reshape(xp.take(yf, xp.asarray(np.reshape(iy, (-1,))), axis=0), lead + (k,))


def minibatch_size(size: Any, f: Any, name: str = "batch_size", *, replace: bool) -> int | None:
    """A mini-batch size (None: full batches), checked against the objective before any round."""
    if size is None:
        return None
    size = count(size, name)
    if not hasattr(f, "with_weights"):
        raise TypeError(
            f"{name} needs an objective with samples and with_weights (LeastSquares, Logistic, "
            f"Multinomial); got {type(f).__name__}"
        )
    if not replace:
        parts = f.parts if isinstance(f, RaggedSamples) else (f,)  # ragged: per bucket (no m x n_max array)
        nvalid = min(int(np.min(np.sum(np.asarray(to_numpy(p.weights)) > 0, axis=-1))) for p in parts)
        if size > nvalid:
            raise ValueError(
                f"{name}={size} exceeds the number of samples of a client ({nvalid}) "
                "for sampling without replacement"
            )
    return size


def gradient(f: Any) -> tuple[Callable[[Array], Array], bool]:
    """``(grad, fresh)``: the gradient for the algorithm's own iterates (finite: :func:`check_diverged`
    after every step; of the batch's shape by construction), the built-in models' ``_grad`` that does
    not check them again (per size bucket for the ragged ones), else ``f.grad``; ``fresh``: it returns
    a new array the caller may overwrite (a user's objective may return a cached one)."""
    if type(f).grad in (Logistic.grad, Multinomial.grad, LeastSquares.grad):
        return f._grad, True
    if type(f).grad is RaggedLogistic.grad:  # the ragged models' per-bucket gradient
        lay = f.layout
        return (
            lambda W: lay.merge(
                [p._grad(w) for p, w in zip(f.parts, lay.split(W, 1, f._outer), strict=True)], 1
            )
        ), True
    return f.grad, type(f).grad is Quadratic.grad


def scaled(s: Any, g: Array, fresh: bool) -> Array:
    """``s * g``, formed in ``g`` when ``fresh`` (``g`` is the caller's own new array) and ``s``
    broadcasts into it: the same numbers, one array fewer per step."""
    return g.__imul__(s) if _fits(g, s, fresh) else s * g


def added(g: Array, h: Any, fresh: bool) -> Array:
    """``g + h``, formed in ``g`` as :func:`scaled` (``g + h = h + g`` exactly)."""
    return g.__iadd__(h) if _fits(g, h, fresh) else g + h


def _fits(g: Array, s: Any, fresh: bool) -> bool:
    shape = tuple(getattr(s, "shape", ()))  # a scalar or g's own shape: no broadcast to work out
    return fresh and (
        not shape or shape == tuple(g.shape) or np.broadcast_shapes(tuple(g.shape), shape) == g.shape
    )


def expand(x: Array, k: int = 1) -> Array:
    """Append ``k`` trailing axes to a parameter (0-d stays 0-d)."""
    for _ in range(k):
        x = x[..., None] if x.ndim else x
    return x
