r"""Both sides of one part (:class:`Sides`) and judging it: ``lhs <= rhs`` on every applicable instance, rate parts,
the per-instance ratio.

:func:`judge` decides a part from its :class:`~moreau.analysis.engine.core.Sides`; a non-finite
left side, or an undefined right side, never holds.  :func:`rate_sides` builds a rate part (fitted
exponents against the theory's).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

__all__ = [
    "Sides",
    "PartResult",
    "judge",
    "rate_sides",
    "worst_point",
    "sweep_sides",
    "familywise",
    "INSTANCES",
    "judged_over",
    "RTOL",
    "TIGHT_RTOL",
    "ROUND_ULPS",
    "NEAR_TIE",
    "rounding_floor",
    "RATE_KINDS",
]

#: relative tolerance of ``lhs <= rhs``: both sides are exact closed forms or
#: certified proxes accurate to ~1e-12 relative, so 1e-9 separates rounding
#: from a violated bound by three orders of magnitude.
RTOL = 1e-9
#: a claimed-tight bound counts as attained when max lhs/rhs >= 1 - TIGHT_RTOL: the adversarial
#: instances attain it up to the rounding of the closed forms (~1e-12 relative), so 1e-9 (= RTOL)
#: separates "attained" from a supremum only approached (a grid, a sweep, a limit reached within 1e-6:
#: 1e-6 reported such suprema as attained)
TIGHT_RTOL = 1e-9
#: the rounding error a float64 side carries, in units of eps times the magnitudes involved (the
#: sides themselves and ``Sides.scale``, the terms combined to compute them): a sum of k terms, a
#: difference of iterates after k steps carry some k ulps of the largest term; 64 covers sweeps of a
#: contraction (q = 0.99: ~2 ulps standard deviation, ~10 at the extreme of 2000 x 60 points)
ROUND_ULPS = 64.0
#: a failure whose relative margin (lhs - rhs) / max(|lhs|, |rhs|) is at most NEAR_TIE is a near tie:
#: where the statement gives ``precise``, the run replays it in higher precision (core._replay_precise)
NEAR_TIE = 1e-6
_EPS = float(np.finfo(np.float64).eps)
#: how a fitted exponent is compared with the theory's (see :func:`rate_sides`)
RATE_KINDS = ("equal", "at most", "at least")


@dataclass
class Sides:
    """Both sides of one part on every instance of a batch (numpy 1-d arrays).

    ``claimed``: "upper" (an inequality the paper states), "tight" (the
    paper's constant is attained: max lhs/rhs must reach 1), "exact" (an
    identity: lhs is an error norm, rhs the allowed rounding), "rate" (lhs a
    fitted exponent, rhs the theory's; built by :func:`rate_sides`).
    ``lhs_ci``: for Monte Carlo sides, ``(lo, hi)`` arrays of the confidence
    interval of lhs; the part fails on an instance only when ``lo > rhs``.
    ``confidence``: the two-sided level of ``lhs_ci`` (per instance, as the checker computed it).
    ``family``: set by :func:`familywise` when the judge widens ``lhs_ci`` so that ``confidence``
    holds jointly over that many instances (the run's instances of this statement and family).
    ``kind``, ``atol``: rate parts only (see :func:`rate_sides`).
    ``applicable``: boolean mask (assumptions met); default all.
    ``constants``: how each constant was obtained ("exact", "bound: ...").
    ``role``: "theorem" (a part of the paper's statement, the default) or "auxiliary" (a check
    of the checker's own machinery or estimates: how loose a computed constant is, a proof
    step); a record's ``max_ratio`` is LHS/RHS of the theorem's own parts.
    """

    lhs: np.ndarray
    rhs: np.ndarray
    claimed: str = "upper"
    applicable: Any = None  # a boolean array after __post_init__ (None when made: every instance)
    lhs_ci: tuple | None = None
    confidence: float | None = None
    constants: dict = field(default_factory=dict)
    note: str = ""
    kind: str = ""
    atol: float = 0.0
    role: str = "theorem"
    family: int | None = None
    floor: Any = None  # optional, per instance: the rounding level of the computed left side (e.g.
    # 64 eps |w_0 - w*| for an iterate's distance); a failure with lhs <= floor, or
    # lhs - rhs <= floor, is "at the rounding floor": not a failure, the verdict is
    # undecided there (or decided by Statement.precise); -inf: none (decided in higher precision)
    scale: Any = None  # optional, per instance: the magnitude of the terms combined to compute the
    # sides (|x*| for a distance |x_t - x*| of iterates near x*, the largest term of a sum
    # that cancels): the default rounding floor is ROUND_ULPS eps max(|lhs|, |rhs|, scale)
    # (:func:`rounding_floor`); without it, only the sides' own magnitudes are known

    def __post_init__(self):
        self.lhs = np.atleast_1d(np.asarray(self.lhs, dtype=float))
        self.rhs = np.broadcast_to(np.asarray(self.rhs, dtype=float), self.lhs.shape).copy()
        if self.applicable is None:
            self.applicable = np.ones(self.lhs.shape, dtype=bool)
        self.applicable = np.broadcast_to(np.asarray(self.applicable, dtype=bool), self.lhs.shape).copy()
        if self.claimed not in ("upper", "tight", "exact", "rate"):
            raise ValueError(f"claimed must be 'upper', 'tight', 'exact' or 'rate' (got {self.claimed!r})")
        if self.role not in ("theorem", "auxiliary"):
            raise ValueError(f"role must be 'theorem' or 'auxiliary' (got {self.role!r})")
        if self.claimed == "rate" and self.kind not in RATE_KINDS:
            raise ValueError(f"a rate part needs kind in {RATE_KINDS} (got {self.kind!r})")
        if self.floor is not None:
            self.floor = np.broadcast_to(np.asarray(self.floor, dtype=float), self.lhs.shape).copy()
        if self.scale is not None:
            self.scale = np.broadcast_to(np.asarray(self.scale, dtype=float), self.lhs.shape).copy()
        if self.lhs_ci is not None:
            self.lhs_ci = tuple(
                np.broadcast_to(np.asarray(c, dtype=float), self.lhs.shape).copy() for c in self.lhs_ci
            )


@dataclass
class PartResult:
    name: str
    claimed: str
    instances: int
    applicable: int
    holds: bool
    max_ratio: float
    tight: bool
    failures: np.ndarray  # instance indices where the part fails
    sides: Sides
    holds_each: Any = None  # per instance (True where not applicable)
    slack: Any = None  # per instance: rhs - lhs (negative: violated)
    ratio: Any = None  # per instance: lhs / rhs
    rhs_negative: int = 0  # applicable instances whose right side is negative (the bound says nothing)
    at_floor: int = 0  # instances that fail only at the rounding floor (``Sides.floor``)
    floor_rows: Any = None  # their indices (for a replay in higher precision: ``Statement.precise``)
    replayed: int = 0  # at-floor instances decided by that replay (held or failed there)
    index: Any = None  # global instance index of each row of ``sides`` (None: the row itself;


def _ratio(lhs, rhs):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # huge ratios are inf
        r = np.where(rhs != 0, lhs / rhs, np.where(lhs == 0, 1.0, np.inf * np.sign(lhs)))
    return r


def worst_point(lhs, rhs, ok=None):
    """Reduce ``(P, T)`` sides (P points or iterates per instance) to ``(T,)``: per instance,
    the row with the largest lhs/rhs among the ``ok`` rows (default all), ratio as in :func:`judge`."""
    r = _ratio(lhs, rhs)
    r = np.where(np.isnan(r), -np.inf, r)
    if ok is not None:
        r = np.where(ok, r, -np.inf)
    k = np.argmax(r, axis=0)
    t = np.arange(lhs.shape[1])
    return lhs[k, t], rhs[k, t]


def sweep_sides(
    lhs, rhs, claimed="upper", *, ok=None, floor_factor=ROUND_ULPS, eps=None, scale=None, **kw
) -> Sides:
    """:class:`Sides` of a sweep ``(P, T)`` (P iterates or points per instance) reduced to its worst
    point per instance (:func:`worst_point`), with the rounding floor set from the sweep itself:
    ``floor_factor * eps * max_P |lhs|`` — a quantity computed in floating point (a distance to an
    optimum, a gap) carries an absolute error of some eps times the largest magnitude it went through,
    so a bound below that (a geometric rate q^t run until q^t = 1e-30) cannot be refuted by the
    float computation: the judge reports such failures "at the rounding floor" (undecided, or decided
    by ``Statement.precise``).  ``eps``: of the computation's dtype (default: ``lhs``'s float dtype).
    ``scale`` (broadcast to ``(P, T)``): the magnitude of the terms combined to compute lhs (``|x*|``
    for ``|x_t - x*|``): the floor is then taken of ``max(|lhs|, |scale|)`` — a distance between
    iterates near x* = 1e4 carries the rounding of 1e4, whatever its own size.  Other keywords go to
    :class:`Sides`."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    if eps is None:
        eps = float(np.finfo(lhs.dtype if np.issubdtype(lhs.dtype, np.floating) else np.float64).eps)
    rhs = np.broadcast_to(rhs, lhs.shape)
    mag = np.abs(np.where(np.isfinite(lhs), lhs, 0.0))
    if scale is not None:
        scale = np.abs(np.broadcast_to(np.asarray(scale, dtype=float), lhs.shape))
        mag = np.maximum(mag, np.where(np.isfinite(scale), scale, 0.0))
    floor = floor_factor * eps * np.max(mag, axis=0)
    # a failure above the floor is a failure whatever happens below it: the worst point above the floor
    # where there is a failing one, else the worst point of all (which may sit at the floor)
    with np.errstate(invalid="ignore"):
        real = (
            (lhs - rhs > floor)
            & (lhs > rhs + RTOL * np.maximum(np.abs(lhs), np.abs(rhs)))
            & (np.abs(lhs) > floor)
        )
    if ok is not None:
        real &= ok
    l_up, r_up = worst_point(lhs, rhs, real)
    l_all, r_all = worst_point(lhs, rhs, ok)
    fails_up = np.any(real, axis=0)
    return Sides(np.where(fails_up, l_up, l_all), np.where(fails_up, r_up, r_all), claimed, floor=floor, **kw)


def rounding_floor(s: Sides) -> np.ndarray:
    """Per instance, the rounding error the float sides of ``s`` may carry: :data:`ROUND_ULPS` eps times
    the largest magnitude involved (|lhs|, |rhs| and ``s.scale``, the terms combined to compute them:
    a distance |x_t - x*| of order 1e-7 between iterates of order 1e4 carries the rounding of 1e4,
    not of 1e-7), or ``s.floor`` where that is larger; -inf where ``s.floor`` is -inf (an instance
    decided in higher precision: no floor)."""
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.maximum(
            np.where(np.isfinite(s.lhs), np.abs(s.lhs), 0.0), np.where(np.isfinite(s.rhs), np.abs(s.rhs), 0.0)
        )
        if s.scale is not None:
            mag = np.maximum(mag, np.where(np.isfinite(s.scale), np.abs(s.scale), 0.0))
        floor = ROUND_ULPS * _EPS * mag
        if s.floor is not None:
            floor = np.where(s.floor == -np.inf, -np.inf, np.fmax(floor, s.floor))
    return floor


#: how many instances the run judges for the statement and family being judged (set by the runner
#: around one statement and family; chunks and cluster workers carry the run's total): a Monte
#: Carlo interval's level is shared over them (:func:`familywise`)
INSTANCES = contextvars.ContextVar("moreau_instances_judged", default=0)


@contextlib.contextmanager
def judged_over(n):
    """Within the block, Monte Carlo intervals are judged jointly over at least ``n`` instances
    (:data:`INSTANCES`; a block inside another keeps the larger count)."""
    token = INSTANCES.set(max(int(INSTANCES.get() or 0), int(n or 0)))
    try:
        yield
    finally:
        INSTANCES.reset(token)


def familywise(s: Sides) -> Sides:
    """``s`` with its Monte Carlo intervals widened so that their level holds jointly over the
    ``n`` instances judged (Bonferroni): each side's distance from the estimate times
    ``z(1 - a/(2n)) / z(1 - a/2)``, ``a = 1 - confidence``, ``n`` the larger of the batch and
    :data:`INSTANCES` (exact for the normal-theory intervals the checkers compute; the t-quantiles
    of a few runs are approximated by the normal ratio).  Without it, each instance keeps a 5 %
    chance of a false failure, and a run of 200 instances reports some for a statement that holds
    (``pflmf.stochastic``, ``fedfw.stochastic`` at ``--trials 200`` did).  Unchanged without an
    interval or a level, and once widened (``family`` set)."""
    if s.lhs_ci is None or s.confidence is None or s.family is not None or not 0 < float(s.confidence) < 1:
        return s
    n = max(int(s.lhs.size), int(INSTANCES.get() or 0))
    if n <= 1:
        return dataclasses.replace(s, family=max(n, 1))
    a = 1.0 - float(s.confidence)
    k = NormalDist().inv_cdf(a / (2 * n)) / NormalDist().inv_cdf(a / 2)  # lower tails: accurate for tiny a/n
    lo, hi = s.lhs_ci
    with np.errstate(invalid="ignore"):
        lo = s.lhs - np.maximum(s.lhs - lo, 0.0) * k
        hi = s.lhs + np.maximum(hi - s.lhs, 0.0) * k
    return dataclasses.replace(s, lhs_ci=(lo, hi), family=n)


def judge(name: str, s: Sides, flip: bool = False) -> PartResult:
    """Decide one part: holds (on applicable instances), max ratio, tight.

    A rate part (see :func:`rate_sides`) holds on an instance when its interval
    meets the claim; flipped, where it does not (an "at most" claim flipped
    claims ``slope >= exponent - atol``, an "at least" claim ``slope <= exponent + atol``).
    Monte Carlo intervals are judged at their level jointly over the run's instances
    (:func:`familywise`)."""
    s = familywise(s)
    if s.claimed == "rate":
        return _judge_rate(name, s, flip)
    app = s.applicable
    lhs_lo = s.lhs_ci[0] if s.lhs_ci is not None else s.lhs
    lhs_hi = s.lhs_ci[1] if s.lhs_ci is not None else s.lhs
    allow = RTOL * np.maximum(np.abs(s.lhs), np.abs(s.rhs))
    if s.claimed == "exact":
        allow = np.zeros_like(allow)  # rhs already is the allowed error
    with np.errstate(invalid="ignore"):
        if not flip:
            ok = lhs_lo <= s.rhs + allow
        else:
            ok = lhs_hi >= s.rhs - allow
    # a non-finite left side, or an undefined right side, never holds (an infinite right side is a
    # vacuous bound: it holds, and the report says so)
    ok &= np.isfinite(s.lhs) & np.isfinite(lhs_lo) & np.isfinite(lhs_hi) & ~np.isnan(s.rhs)
    # at the rounding floor: the excess of the left side over the right side within the computation's
    # rounding error (:func:`rounding_floor`: some ulps of the magnitudes involved, or the statement's
    # own ``floor``), or the left side itself within a given ``floor``: the float evaluation cannot
    # tell such an instance from one that holds (flipped, the claim is lhs >= rhs: a failure is at the
    # floor only where rhs - lhs is within it)
    floor = rounding_floor(s)
    with np.errstate(invalid="ignore"):
        if flip:
            at_floor = app & ~ok & np.isfinite(s.lhs) & (s.rhs - s.lhs <= floor)
        else:
            lhs_at = np.abs(s.lhs) <= s.floor if s.floor is not None else np.zeros_like(ok)
            at_floor = app & ~ok & np.isfinite(s.lhs) & (lhs_at | (s.lhs - s.rhs <= floor))
    ok |= at_floor
    fail = app & ~ok
    ratio = _ratio(s.lhs, s.rhs)
    # LHS/RHS means something only where the right side is positive and the left side not negative: a
    # negative right side makes the ratio negative and would hide a failing part behind a small maximum
    meaningful = app & (s.rhs > 0) & (s.lhs >= 0) & ~at_floor  # an at-floor ratio is rounding, not a ratio
    with np.errstate(invalid="ignore"):
        max_ratio = (
            float(np.max(ratio[meaningful]))
            if meaningful.any()
            else (float(np.max(ratio[app])) if app.any() and not (app & (s.rhs < 0)).any() else float("nan"))
        )
    tight = bool(app.any() and max_ratio >= 1 - TIGHT_RTOL)
    holds = not fail.any()
    if s.claimed == "tight" and not flip and app.any() and not tight:
        holds = False  # the paper's constant is claimed attained and is not (untestable without instances)
    return PartResult(
        name=name,
        claimed=s.claimed,
        instances=int(s.lhs.size),
        applicable=int(app.sum()),
        holds=bool(holds),
        max_ratio=max_ratio,
        tight=tight,
        failures=np.flatnonzero(fail),
        sides=s,
        holds_each=~fail,
        slack=s.rhs - s.lhs,
        ratio=ratio,
        rhs_negative=int(np.sum(app & (s.rhs < 0))),
        at_floor=int(np.sum(at_floor)),
        floor_rows=np.flatnonzero(at_floor),
    )


def rate_sides(
    slope, ci, exponent, *, kind="equal", atol=0.05, note="", constants=None, applicable=None, level=None
) -> Sides:
    r"""A rate part: fitted exponents against the theory's, one row per instance (one sweep).

    ``slope`` ``(T,)`` and ``ci = (lo, hi)`` from :func:`fit_exponent`;
    ``exponent`` the theory's exponent (scalar or ``(T,)``; read it from the
    claim so that a mutant changes it).  ``kind="equal"``: holds when
    ``[lo − atol, hi + atol]`` contains ``exponent`` (the error decays at the
    stated rate).  ``kind="at most"``: holds unless ``lo > exponent + atol``
    (the measured decay is at least as fast as the theory's: a slower decay
    is a failure only when the whole interval shows it).  ``kind="at least"``:
    holds unless ``hi < exponent − atol`` (what a bound ``C x^a`` as ``x → 0``
    implies: the quantity vanishes at least as fast as ``x^a``).  ``atol >= 0``
    absorbs the curvature of a finite grid (say why in ``note``); ``level``
    is the interval's two-sided level (shown in the report and the JSON).
    """
    if kind not in RATE_KINDS:
        raise ValueError(f"kind must be one of {RATE_KINDS} (got {kind!r})")
    if not (np.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol must be finite and >= 0 (got {atol!r})")
    if not (isinstance(ci, (tuple, list)) and len(ci) == 2):
        raise ValueError(f"ci must be a pair (lo, hi) (got {type(ci).__name__})")
    slope = np.atleast_1d(np.asarray(slope, dtype=float))
    lo, hi = (np.broadcast_to(np.asarray(c, dtype=float), slope.shape) for c in ci)
    if np.any(lo > hi):
        raise ValueError("ci must have lo <= hi on every instance")
    return Sides(
        slope,
        exponent,
        "rate",
        applicable=applicable,
        lhs_ci=(lo, hi),
        confidence=level,
        constants=dict(constants or {}),
        note=note,
        kind=kind,
        atol=float(atol),
    )


def _judge_rate(name, s, flip):
    app, (lo, hi), e = s.applicable, s.lhs_ci, s.rhs
    if s.kind == "equal":
        inside = np.minimum(e - (lo - s.atol), hi + s.atol - e)  # >= 0: the interval meets the claim
        ok = inside >= 0 if not flip else inside < 0
    elif s.kind == "at most":
        inside = e + s.atol - lo
        ok = inside >= 0 if not flip else hi >= e - s.atol
    else:
        inside = hi - (e - s.atol)
        ok = inside >= 0 if not flip else lo <= e + s.atol
    fail = app & ~ok
    ratio = _ratio(s.lhs, s.rhs)
    finite = ratio[app][np.isfinite(ratio[app])]
    max_ratio = float(np.max(finite)) if finite.size else float("nan")
    return PartResult(
        name=name,
        claimed="rate",
        instances=int(s.lhs.size),
        applicable=int(app.sum()),
        holds=not fail.any(),
        max_ratio=max_ratio,
        tight=False,
        failures=np.flatnonzero(fail),
        sides=s,
        holds_each=~fail,
        slack=inside,
        ratio=ratio,
    )
