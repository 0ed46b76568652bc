r"""The pieces every theorem checker is made of.

A :class:`Statement` is one entry of the catalogue (an id of docs/catalogue.md).
It owns

* ``instances(family, trials, rng)`` -> a *batch*: a dict of numpy arrays,
  every array with the instance index as its leading axis (so one instance
  is ``{k: v[i:i+1]}``, saved to ``.npz`` and replayed without pickle);
* ``evaluate(batch, claim)`` -> ``{part name: Sides}``: the left and right
  side of each part of the statement, computed on every instance, side by
  side in plain code;
* ``claim``: the paper's formulas (constants, exponents, conditions) as a
  dict; ``evaluate`` reads every formula from the claim it is given, so a
  :class:`Mutant` is the same dict with one entry changed;
* optionally ``prepare(batch)`` -> the claim-independent quantities of a
  batch (certified proxes, spectra, Monte Carlo draws: whatever no formula
  of the claim enters).  With ``prepare`` set, ``evaluate`` receives its
  output instead of the batch, and the runner prepares each batch once for
  the statement and all its mutants, which then cost only the formulas.

Every part is normalised to ``lhs <= rhs`` (a lower bound ``c <= mu_true`` has
``lhs = c``).  An instance on which the part's assumptions are not met is
*not applicable*: it is never counted as a failure of the theorem.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from moreau.analysis.engine.rates import fit_exponent

__all__ = ["scale_fields", "QUADRATIC_SCALING", "LOGISTIC_SCALING", "Sides", "Mutant", "Statement", "PartResult", "Result", "evaluate_claim", "worst_point",
           "fit_exponent", "rate_sides", "RTOL", "TIGHT_RTOL", "RATE_KINDS"]

#: relative tolerance of ``lhs <= rhs``: both sides are exact closed forms or
#: certified proxes accurate to ~1e-12 relative, so 1e-9 separates rounding
#: from a violated bound by three orders of magnitude.
RTOL = 1e-9
#: a claimed-tight bound counts as attained when max lhs/rhs >= 1 - TIGHT_RTOL
#: (the adversarial instances attain it up to rounding of the closed forms).
TIGHT_RTOL = 1e-6
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
    ``confidence``: the two-sided level of ``lhs_ci`` (per instance).
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
    applicable: np.ndarray | None = None
    lhs_ci: tuple | None = None
    confidence: float | None = None
    constants: dict = field(default_factory=dict)
    note: str = ""
    kind: str = ""
    atol: float = 0.0
    role: str = "theorem"

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
        if self.lhs_ci is not None:
            self.lhs_ci = tuple(np.broadcast_to(np.asarray(c, dtype=float), self.lhs.shape).copy()
                                for c in self.lhs_ci)


@dataclass(frozen=True)
class Mutant:
    """A wrong version of a statement: ``changes`` replace entries of the claim.

    ``changes`` may also hold ``"flip": (part name, ...)``: those parts'
    inequalities reversed (``lhs >= rhs`` is claimed instead).
    """

    name: str
    changes: dict


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
    holds_each: np.ndarray = None   # per instance (True where not applicable)
    slack: np.ndarray = None        # per instance: rhs - lhs (negative: violated)
    ratio: np.ndarray = None        # per instance: lhs / rhs
    index: np.ndarray = None        # global instance index of each row of ``sides`` (None: the row itself;
                                    # a chunked run keeps only some rows, see moreau.analysis.engine.chunks)


@dataclass
class Result:
    """The outcome of one statement on one family (or of one mutant)."""

    id: str
    family: str
    instances: int
    parts: list
    seconds: float

    @property
    def holds(self) -> bool:
        return all(p.holds for p in self.parts)

    @property
    def max_ratio(self) -> float:
        """Max LHS/RHS over the theorem's own inequality parts (exact parts report error/allowed
        and rate parts slope/exponent, not a ratio of bounds, and auxiliary parts check the
        checker's estimates: they count only when a statement has nothing else)."""
        ineq = [p for p in self.parts if p.claimed in ("upper", "tight")]
        bounds = [p for p in ineq if p.sides.role == "theorem"] or ineq or self.parts
        r = [p.max_ratio for p in bounds if np.isfinite(p.max_ratio)]
        return max(r) if r else float("nan")

    @property
    def failures(self) -> np.ndarray:
        f = [p.failures for p in self.parts if p.failures.size]
        return np.unique(np.concatenate(f)) if f else np.zeros(0, dtype=int)


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


def judge(name: str, s: Sides, flip: bool = False) -> PartResult:
    """Decide one part: holds (on applicable instances), max ratio, tight.

    A rate part (see :func:`rate_sides`) holds on an instance when its interval
    meets the claim; flipped, where it does not (an "at most" claim flipped
    claims ``slope >= exponent - atol``, an "at least" claim ``slope <= exponent + atol``)."""
    if s.claimed == "rate":
        return _judge_rate(name, s, flip)
    app = s.applicable
    lhs_lo = s.lhs_ci[0] if s.lhs_ci is not None else s.lhs
    lhs_hi = s.lhs_ci[1] if s.lhs_ci is not None else s.lhs
    allow = RTOL * np.maximum(np.abs(s.lhs), np.abs(s.rhs))
    if s.claimed == "exact":
        allow = np.zeros_like(allow)  # rhs already is the allowed error
    if not flip:
        ok = lhs_lo <= s.rhs + allow
    else:
        ok = lhs_hi >= s.rhs - allow
    fail = app & ~ok
    ratio = _ratio(s.lhs, s.rhs)
    max_ratio = float(np.max(ratio[app])) if app.any() else float("nan")
    tight = bool(app.any() and max_ratio >= 1 - TIGHT_RTOL)
    holds = not fail.any()
    if s.claimed == "tight" and not flip and app.any() and not tight:
        holds = False  # the paper's constant is claimed attained and is not (untestable without instances)
    return PartResult(name=name, claimed=s.claimed, instances=int(s.lhs.size), applicable=int(app.sum()),
                      holds=bool(holds), max_ratio=max_ratio, tight=tight,
                      failures=np.flatnonzero(fail), sides=s, holds_each=~fail,
                      slack=s.rhs - s.lhs, ratio=ratio)


def rate_sides(slope, ci, exponent, *, kind="equal", atol=0.05, note="", constants=None,
               applicable=None, level=None) -> Sides:
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
    return Sides(slope, exponent, "rate", applicable=applicable, lhs_ci=(lo, hi), confidence=level,
                 constants=dict(constants or {}), note=note, kind=kind, atol=float(atol))


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
    return PartResult(name=name, claimed="rate", instances=int(s.lhs.size), applicable=int(app.sum()),
                      holds=not fail.any(), max_ratio=max_ratio, tight=False, failures=np.flatnonzero(fail),
                      sides=s, holds_each=~fail, slack=inside, ratio=ratio)


@dataclass(frozen=True)
class Statement:
    """One catalogue entry; see the module docstring."""

    id: str
    source: str                 # paper, theorem/lemma number, equation
    paper: str                  # source paper key (the paper package's PAPER["key"])
    latex: str
    text: str
    assumptions: tuple
    families: dict              # family -> tuple of instance kinds it covers
    claimed: str                # "upper" | "tight" | "rate" (what the paper claims overall)
    instances: Callable         # (family, trials, rng) -> batch
    evaluate: Callable          # (batch, claim) -> {part: Sides}
    claim: dict
    mutants: tuple = ()
    equivalent_mutants: dict = field(default_factory=dict)  # name -> why it cannot be rejected
    findings: tuple = ()        # documented findings about the statement
    strategy: Callable | None = None  # optional: family -> hypothesis strategy of batches (analysis.search)
    prepare: Callable | None = None   # optional: batch -> claim-independent data that evaluate receives
    scaling: dict = field(default_factory=dict)  # optional: family -> (batch, s, c) -> the batch under
                                                 # theta -> s theta, f -> c f (moreau.analysis.engine.analyse)
    sharp: dict = field(default_factory=dict)    # optional: family -> {part name: () -> Derivation}, the
                                                 # sympy-derived sharp constant (moreau.analysis.engine.sharp)

    def prepared(self, batch):
        """What ``evaluate`` receives for ``batch``: ``prepare(batch)``, or the batch itself."""
        return batch if self.prepare is None else self.prepare(batch)

    def run(self, family: str, trials: int, rng, mutant: Mutant | None = None, batch=None,
            prepared=None) -> Result:
        """Check the statement (or ``mutant``) on ``batch`` (drawn when None).  ``prepared``: the
        output of :meth:`prepared` for this batch, when the caller has it already."""
        if family not in self.families:
            raise ValueError(f"{self.id} does not apply to family {family!r} "
                             f"(it covers {sorted(self.families)})")
        t0 = time.perf_counter()
        if batch is None:
            batch = self.instances(family, trials, rng)
        claim = dict(self.claim)
        flip = ()
        if mutant is not None:
            changes = dict(mutant.changes)
            flip = tuple(changes.pop("flip", ()))
            unknown = set(changes) - set(claim)
            if unknown:
                raise KeyError(f"mutant {mutant.name!r} of {self.id} changes unknown claim entries {unknown}")
            claim.update(changes)
        data = prepared if prepared is not None else self.prepared(batch)
        parts = evaluate_claim(self.evaluate, data, claim, flip)
        n = _batch_size(batch)
        return Result(self.id, family, n, parts, time.perf_counter() - t0)


def evaluate_claim(evaluate, batch, claim, flip=()):
    sides = evaluate(batch, claim)
    unknown = set(flip) - set(sides)
    if unknown:
        raise KeyError(f"flip names unknown parts {unknown}; parts are {list(sides)}")
    return [judge(name, s, name in flip) for name, s in sides.items()]


def _batch_size(batch) -> int:
    sizes = {np.shape(v)[0] for v in batch.values() if np.ndim(v) > 0}
    if len(sizes) != 1:
        raise ValueError(f"a batch needs one leading instance axis (got sizes {sizes})")
    return sizes.pop()


def scale_fields(powers, c_free=True):
    """A ``Statement.scaling`` entry from ``{field: (power of s, power of c)}``: under θ → sθ,
    f → cf each listed batch field is multiplied by ``s**ps * c**pc`` (a curvature, λ or μ by
    ``c/s²``: (-2, 1); a point by s: (1, 0); a linear term by c/s: (-1, 1); a step size by ``s²/c``:
    (2, -1)); unlisted fields are dimensionless.  ``c_free=False``: the family cannot express
    ``c f`` (a logistic loss times c is not a logistic loss): only ``c = 1`` is analysed (the
    entry returns None otherwise)."""
    def scale(batch, s, c):
        if not c_free and c != 1:
            return None
        return {k: (np.asarray(v) * (s ** powers[k][0]) * (c ** powers[k][1]) if k in powers else v)
                for k, v in batch.items()}
    scale.powers = dict(powers)
    return scale


#: the scaling of the quadratic batches most checkers draw (A, b, eigenvalues, L, lam, points)
QUADRATIC_SCALING = {"A": (-2, 1), "b": (-1, 1), "eig": (-2, 1), "L": (-2, 1), "mu": (-2, 1), "lam": (-2, 1),
                     "w": (1, 0), "w2": (1, 0)}
#: logistic batches (features X, ridge mu, lam, points): theta -> s theta only (c = 1)
LOGISTIC_SCALING = {"X": (-1, 0), "mu": (-2, 0), "lam": (-2, 0), "w": (1, 0), "w2": (1, 0)}


def take(batch, idx):
    """The sub-batch of the given instance indices (keeps the leading axis)."""
    idx = np.atleast_1d(idx)
    return {k: (v[idx] if np.ndim(v) > 0 else v) for k, v in batch.items()}
