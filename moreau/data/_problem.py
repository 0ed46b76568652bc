r"""The record every generator returns, seeded per-trial streams, argument checks."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np

from .._objective import Objective
from .._quadratic import Quadratic
from .._typing import Seed

__all__ = ["FederatedProblem", "trial_rngs", "MAX_BYTES"]

MAX_BYTES = 8 * 2**30  #: default refusal level of a generator's estimated memory (its max_bytes)


@dataclass(frozen=True, eq=False)  # fields hold arrays: identity equality
class FederatedProblem:
    r"""A federated data set with its ground truth and the constants of the theory.

    Fields (``T = trials`` shape, ``m`` clients, ``d`` parameter dimension):

    - ``objective``: the clients' empirical losses :math:`L_i(w, S_i)`, batch
      shape ``(*T, m)`` (a :class:`~moreau.LeastSquares`, :class:`~moreau.Logistic`
      or :class:`~moreau.Multinomial`; clients of different sizes are held in
      size buckets, :func:`moreau.ragged`, not padded to the largest).
    - ``w_star`` ``(*T, m, d)``: the ground-truth local models
      :math:`w_\star^{(i)}` (population minimisers where the generator says so).
    - ``w_star_global`` ``(*T, d)``: :math:`w_\star^{(g)} = \sum_i p_i w_\star^{(i)}`.
    - ``p`` ``(m,)``: the client weights :math:`p_i` (sum 1).
    - ``constants``: name -> value (floats, or arrays over ``T`` / ``(*T, m)``),
      e.g. ``"R"``, ``"rho2"``, ``"mu"``, ``"L"``, ``"sigma"``.
    - ``how``: name -> one line saying how that constant (or field) was computed.
    - ``params``: the generator's arguments, the seed included.
    - ``test``: held-out samples as an objective of the same type, or ``None``.

    Arrays are host numpy; the objectives live on the constructor backend
    (numpy, or cupy under ``MOREAU_BACKEND=cupy``).

    :meth:`resample` draws fresh data sets of the same problem where the
    generator supports it (fixed-design least squares).

    References: the FedProx analysis, Section 3 (notation) and Assumptions 1-3.
    """

    objective: Objective
    w_star: np.ndarray
    w_star_global: np.ndarray
    p: np.ndarray
    constants: dict[str, Any]
    how: dict[str, str]
    params: dict[str, Any]
    test: Objective | None = None
    # (rng, size, raw) -> a Quadratic, or (A, b, c) with raw
    _sampler: Callable[[Seed, tuple[int, ...], bool], Any] | None = field(
        default=None, repr=False, compare=False
    )

    @overload
    def resample(
        self, rng: Seed, size: int | tuple[int, ...] = ..., *, raw: Literal[False] = ...
    ) -> Quadratic: ...
    @overload
    def resample(
        self, rng: Seed, size: int | tuple[int, ...] = ..., *, raw: Literal[True]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def resample(
        self, rng: Seed, size: int | tuple[int, ...] = (), *, raw: bool = False
    ) -> Quadratic | tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Fresh data sets of this problem, without materialising the samples.

        ``size`` (int or tuple) adds leading axes: the result has batch shape
        ``(*size, *T, m)``.  Returns a :class:`~moreau.Quadratic` equal in
        distribution to the ``objective`` of a fresh draw of the noise (or,
        with ``raw=True``, the arrays ``(A, b, c)``).  Only generators with a
        sufficient-statistic sampler support it (``least_squares``).
        """
        if self._sampler is None:
            raise TypeError(
                f"resample() is not available for this problem (generator "
                f"{self.params.get('generator')!r}): only fixed-design least squares "
                "has an exact sufficient-statistic sampler"
            )
        return self._sampler(rng, _shape(size, "size"), raw)


def trial_rngs(rng: Seed, trials: int | tuple[int, ...] = ()) -> list[np.random.Generator]:
    r"""The per-trial generators a batched call uses, in C order over ``trials``.

    ``trials=()``: one generator, ``rng`` itself when it is a Generator, else
    ``numpy.random.default_rng(rng)`` (an int or a ``SeedSequence``).  A
    non-empty ``trials`` of ``K`` entries: the children
    ``SeedSequence(rng).spawn(K)`` for an int or SeedSequence, ``rng.spawn(K)``
    for a Generator.  Trial ``k`` of a batched call equals a call with
    ``trials=()`` and ``rng=trial_rngs(rng, trials)[k]`` (for an int seed the
    children are a pure function of the seed).
    """
    trials = _shape(trials, "trials")
    rng = check_seed(rng)
    if trials == ():
        return [rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)]
    k = math.prod(trials)
    if isinstance(rng, np.random.Generator):
        return rng.spawn(k)
    ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(int(rng))
    return [np.random.default_rng(c) for c in ss.spawn(k)]


def check_seed(rng: object) -> Seed:
    """``rng`` if it is a Generator, a SeedSequence or a non-negative int seed (else TypeError or
    ValueError naming it)."""
    if isinstance(rng, bool) or not isinstance(
        rng, (np.random.Generator, np.random.SeedSequence, int, np.integer)
    ):
        raise TypeError(f"rng must be a numpy.random.Generator, a SeedSequence or an int seed (got {rng!r})")
    if isinstance(rng, (int, np.integer)) and rng < 0:
        raise ValueError(f"rng must be a non-negative int seed (got {rng})")
    return rng


def seed_record(rng: Seed) -> int | str | dict[str, Any]:
    """What ``params`` records about ``rng``: the int, or the SeedSequence entropy and spawn key."""
    if isinstance(rng, (int, np.integer)):
        return int(rng)
    ss = rng if isinstance(rng, np.random.SeedSequence) else getattr(rng.bit_generator, "seed_seq", None)
    if ss is None:
        return repr(rng)
    return {"entropy": ss.entropy, "spawn_key": tuple(ss.spawn_key)}


class Streams:
    """Draws with a leading trial shape, each trial from its own generator.

    The only Python loop over trials in the generators: drawing from each
    trial's own stream (so that a trial can be reproduced alone); all the
    arithmetic afterwards is batched.
    """

    def __init__(self, rng: Seed, trials: int | tuple[int, ...]) -> None:
        self.trials = _shape(trials, "trials")
        self.gens = trial_rngs(rng, self.trials)

    def normal(self, shape: Sequence[int]) -> np.ndarray:
        shape = tuple(shape)
        return np.stack([g.standard_normal(shape) for g in self.gens]).reshape(self.trials + shape)

    def uniform(self, shape: Sequence[int]) -> np.ndarray:
        shape = tuple(shape)
        return np.stack([g.random(shape) for g in self.gens]).reshape(self.trials + shape)

    def permutation(self, m: int) -> np.ndarray:
        return np.stack([g.permutation(m) for g in self.gens]).reshape(self.trials + (m,))

    def lognormal(self, mean: Any, sigma: Any, shape: Sequence[int]) -> np.ndarray:
        shape = tuple(shape)
        return np.stack([g.lognormal(mean, sigma, shape) for g in self.gens]).reshape(self.trials + shape)


def _shape(t: Any, name: str) -> tuple[int, ...]:
    """``()``, an int or a tuple of ints >= 1, as a tuple."""
    if isinstance(t, (int, np.integer)) and not isinstance(t, bool):
        t = (int(t),)
    if not isinstance(t, tuple) or not all(
        isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in t
    ):
        raise TypeError(f"{name} must be () , an int or a tuple of ints (got {t!r})")
    if any(k < 1 for k in t):
        raise ValueError(f"{name} must hold positive ints (got {t!r})")
    return tuple(int(k) for k in t)


def check_int(value: Any, name: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int (got {value!r})")
    if value < lo:
        raise ValueError(f"{name} must be >= {lo} (got {value})")
    return int(value)


def check_real(value: Any, name: str, *, lo: float | None = None, strict: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number (got {value!r})") from None
    if isinstance(value, (complex, np.complexfloating)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number (got {value!r})")
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite (got {value!r})")
    if lo is not None and (v <= lo if strict else v < lo):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {lo:g} (got {v:g})")
    return v


def client_weights(p: Any, m: int) -> np.ndarray:
    """Validated ``p`` ``(m,)`` (default uniform): finite, > 0, summing to 1 (to 1e-12)."""
    if p is None:
        return np.full(m, 1.0 / m)
    p = np.asarray(p)
    if p.dtype.kind not in "biuf":
        raise TypeError(f"p must be a real array (got dtype {p.dtype})")
    p = p.astype(float)
    if p.shape != (m,):
        raise ValueError(f"p must have shape (m,) = ({m},) (got {p.shape})")
    if not np.all(np.isfinite(p)) or np.any(p <= 0):
        raise ValueError(f"p must be finite and > 0 (got {p})")
    if abs(p.sum() - 1) > 1e-12:
        raise ValueError(f"p must sum to 1 (got sum {p.sum():.17g})")
    return p


def check_memory(max_bytes: float, nbytes: float, call: str, formula: str, names: str) -> None:
    """``ValueError`` with the estimate ``nbytes`` where it exceeds ``max_bytes``, before anything
    is allocated: ``call`` the call as written, ``formula`` how the estimate is formed, ``names``
    the arguments to lower."""
    if (
        isinstance(max_bytes, bool)
        or not isinstance(max_bytes, (int, float, np.integer))
        or not max_bytes > 0
    ):
        raise ValueError(f"max_bytes must be a positive number (got {max_bytes!r})")
    if nbytes <= max_bytes:
        return
    raise ValueError(
        f"{call} would allocate about {_size(nbytes)} ({formula}), above max_bytes = "
        f"{_size(max_bytes)}: lower {names}, or pass a larger max_bytes if the machine has the memory"
    )


def _size(b: float) -> str:
    b = float(b)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024:
            return f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} PiB"
