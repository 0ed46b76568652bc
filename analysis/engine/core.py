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

The claim is the statement **as printed** in the paper (its conditions, constants and exponents
exactly as printed): the run's headline verdict is about it.  A :class:`Reading` is a separate,
named claim (a repair, another reading of ambiguous text, or the paper's own text elsewhere that
contradicts the statement) given as claim entries replaced; it gets its own verdict and never
replaces the printed one.  ``Statement.expect`` and ``Reading.expect`` record what the catalogue
expects of each ("holds" or "fails"): they decide the exit code only (a known failure that
reproduces is expected), never a verdict.

Every part is normalised to ``lhs <= rhs`` (a lower bound ``c <= mu_true`` has
``lhs = c``).  An instance on which the part's assumptions are not met is
*not applicable*: it is never counted as a failure of the theorem.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from moreau.analysis.engine.core_batch import LOGISTIC_SCALING as LOGISTIC_SCALING
from moreau.analysis.engine.core_batch import QUADRATIC_SCALING as QUADRATIC_SCALING
from moreau.analysis.engine.core_batch import scale_fields as scale_fields
from moreau.analysis.engine.core_batch import take as take
from moreau.analysis.engine.core_evaluate import _batch_size as _batch_size
from moreau.analysis.engine.core_evaluate import _replay_precise as _replay_precise
from moreau.analysis.engine.core_evaluate import _undecided_rows as _undecided_rows
from moreau.analysis.engine.core_evaluate import evaluate_claim as evaluate_claim
from moreau.analysis.engine.core_types import _ID as _ID
from moreau.analysis.engine.core_types import EXPECTATIONS as EXPECTATIONS
from moreau.analysis.engine.core_types import READING_KINDS as READING_KINDS
from moreau.analysis.engine.core_types import REPAIR_CLASSES as REPAIR_CLASSES
from moreau.analysis.engine.core_types import Mutant as Mutant
from moreau.analysis.engine.core_types import Reading as Reading
from moreau.analysis.engine.core_types import Result as Result
from moreau.analysis.engine.core_types import check_id as check_id
from moreau.analysis.engine.judge import NEAR_TIE as NEAR_TIE
from moreau.analysis.engine.judge import (
    RATE_KINDS,
    RTOL,
    TIGHT_RTOL,
    PartResult,
    Sides,
    rate_sides,
    sweep_sides,
    worst_point,
)
from moreau.analysis.engine.judge import judge as judge
from moreau.analysis.engine.rates import fit_exponent

# The statement is here; the values it is made of and gives (Mutant, Reading, Result, the id rule) are
# in core_types, a claim judged on a batch in core_evaluate, the batch operations in core_batch.  Their
# names are imported here as themselves, so that moreau.analysis.engine.core.<name> keeps working.

__all__ = [
    "scale_fields",
    "QUADRATIC_SCALING",
    "LOGISTIC_SCALING",
    "Sides",
    "Mutant",
    "Reading",
    "Statement",
    "PartResult",
    "Result",
    "evaluate_claim",
    "worst_point",
    "sweep_sides",
    "fit_exponent",
    "rate_sides",
    "RTOL",
    "TIGHT_RTOL",
    "RATE_KINDS",
    "READING_KINDS",
    "EXPECTATIONS",
    "REPAIR_CLASSES",
    "ORIGINS",
]

#: where a statement comes from: "printed" (a theorem, lemma, proposition or corollary as the paper
#: prints it), "remark" (a sentence of the paper's discussion turned into a claim: judged on its own
#: id, never as the verdict of the theorem it follows), "reconstruction" (no statement is printed;
#: the catalogue reconstructs one from the text, e.g. the thesis's chapter 4): the summary counts
#: each apart
ORIGINS = ("printed", "remark", "reconstruction")


#: what a statement claims overall (``Statement.claimed``), as a part does (``Sides.claimed``)
CLAIMED = ("upper", "tight", "exact", "rate")


@dataclass(frozen=True)
class Statement:
    """One catalogue entry; see the module docstring."""

    id: str
    source: str  # paper, theorem/lemma number, equation
    paper: str  # source paper key (the paper package's PAPER["key"])
    latex: str
    text: str
    assumptions: tuple
    families: dict  # family -> tuple of instance kinds it covers
    claimed: str  # "upper" | "tight" | "rate" (what the paper claims overall)
    instances: Callable  # (family, trials, rng) -> batch
    evaluate: Callable  # (batch, claim) -> {part: Sides}
    claim: dict
    mutants: tuple = ()
    equivalent_mutants: dict = field(default_factory=dict)  # name -> why it cannot be rejected
    findings: tuple = ()  # notes: the catalogue authors' prose about the statement (--describe and
    # docs/catalogue.md only, labelled; never a run's findings, which are computed: engine.findings)
    strategy: Callable | None = None  # optional: family -> hypothesis strategy of batches (analysis.search)
    prepare: Callable | None = None  # optional: batch -> claim-independent data that evaluate receives
    scaling: dict = field(default_factory=dict)  # optional: family -> (batch, s, c) -> the batch under
    # theta -> s theta, f -> c f (moreau.analysis.engine.analyse)
    sharp: dict = field(default_factory=dict)  # optional: family -> {part name: () -> Derivation}, the
    # sympy-derived sharp constant (moreau.analysis.engine.sharp)
    readings: tuple = ()  # Reading: named claims beside the printed one (repairs, variants)
    evidence_only: dict = field(default_factory=dict)  # family -> why no mutant can be rejected there: its
    # holding is evidence, not part of the verdict
    counterexamples: dict = field(default_factory=dict)  # family -> a recorded minimal counterexample of
    # the printed claim (a one-instance batch, exact
    # numbers, or a callable returning it),
    # evaluated by every run
    # family -> recorded worst instances of the bounds (a batch, or a callable returning it; found by the
    # worst-case search, moreau.analysis.engine.optimise), evaluated by every run: they count in the max ratio
    worst: dict = field(default_factory=dict)
    # family -> recorded class worst cases (engine.class_worst.ClassWorst: a PEP value with its source and
    # why the family cannot reach it), stated beside this run's instances in every default run
    class_worst: dict = field(default_factory=dict)
    consistency_checks: dict = field(default_factory=dict)  # part name -> why it is a definitional
    # consistency check no mutant can reject
    expect: str = "holds"  # what the catalogue expects of the printed statement
    origin: str = "printed"  # ORIGINS: printed, a remark of the discussion, or a reconstruction
    implies: tuple = ()  # names of engine.properties.PROPERTIES the printed hypotheses imply (never
    # reported as shared by every instance)
    waived: dict = field(default_factory=dict)  # property name (every family) or (family, name) -> why the
    # catalogue cannot widen its generators to the complement; reported as waived, with the reason
    simplify: dict = field(
        default_factory=dict
    )  # family -> shrink.Simplify: what the fields of an instance are,
    # so that a failing one is shrunk to a readable counterexample
    pep: Callable | str | None = None  # optional: a PEP builder (st, quadratic batch, seed) -> rows
    # (moreau.analysis.pep.rows) for --pep, or why none applies
    precise: Callable | None = (
        None  # optional: evaluate in higher precision (mpmath), (batch, claim) -> {part:
    )
    # Sides}; run on the instances whose failure sits at the rounding floor
    # (Sides.floor, sweep_sides), which it then decides
    trials_used: Callable | None = (
        None  # optional: (family, --trials) -> (the number the checker uses, why) where
    )
    # it raises or rounds it (reported in the run and the JSON's run record)
    powered: tuple = ()  # Statements checking this one's rate claim where its power reaches 0.05 (longer
    # horizons, instances that attain the rate): run under --analyse, not by default (engine.power)

    def __post_init__(self):
        check_id(self.id)
        if not isinstance(self.powered, tuple) or not all(isinstance(x, Statement) for x in self.powered):
            raise TypeError(
                f"{self.id}: powered must be a tuple of Statement objects (got {self.powered!r:.60})"
            )
        if self.claimed not in CLAIMED:
            raise ValueError(f"{self.id}: claimed must be one of {CLAIMED} (got {self.claimed!r})")
        if not isinstance(self.families, Mapping) or not all(isinstance(f, str) and f for f in self.families):
            raise TypeError(
                f"{self.id}: families must be a dict {{family name: tuple of instance kinds}} "
                f"(got {type(self.families).__name__} {self.families!r})"
            )
        for name in ("instances", "evaluate"):
            if not callable(getattr(self, name)):
                raise TypeError(f"{self.id}: {name} must be callable (got {getattr(self, name)!r})")
        if not isinstance(self.claim, Mapping):
            raise TypeError(f"{self.id}: claim must be a dict of formulas (got {type(self.claim).__name__})")
        for kind, cls, items in (("mutants", Mutant, self.mutants), ("readings", Reading, self.readings)):
            if not isinstance(items, tuple | list):
                raise TypeError(
                    f"{self.id}: {kind} must be a tuple of {cls.__name__} objects (got {items!r:.60})"
                )
            bad = [type(x).__name__ for x in items if not isinstance(x, cls)]
            if bad:
                raise TypeError(f"{self.id}: {kind} must be {cls.__name__} objects (got {bad})")
            for x in items:
                extra = {"flip"} if cls is Mutant else set()
                unknown = sorted(set(x.changes) - set(self.claim) - extra, key=str)
                if unknown:
                    raise ValueError(
                        f"{self.id}: {kind[:-1]} {x.name!r} changes unknown claim entries {unknown}; "
                        f"the claim's entries are {sorted(self.claim, key=str)}"
                    )
        if self.expect not in EXPECTATIONS:
            raise ValueError(f"{self.id}: expect must be one of {EXPECTATIONS} (got {self.expect!r})")
        if self.origin not in ORIGINS:
            raise ValueError(f"{self.id}: origin must be one of {ORIGINS} (got {self.origin!r})")
        _check_properties(self.id, self.implies, self.waived)
        names = [r.name for r in self.readings]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.id}: reading names must be distinct (got {names})")

    @property
    def notes(self) -> tuple:
        """The catalogue's prose about the statement (the ``findings=`` field, kept under that name for
        the statements already written): shown by ``--describe`` and docs/catalogue.md under
        ``engine.findings.NOTES_LABEL``, never in a run's report or JSON (docs/findings.md)."""
        return tuple(self.findings)

    @property
    def reference(self):
        """The claim mutants are applied to: None (the printed claim) when it is expected to hold,
        else the first reading expected to hold (a mutant of a failing claim refutes nothing)."""
        if self.expect == "holds":
            return None
        return next((r for r in self.readings if r.expect == "holds" and r.kind != "inconsistency"), None)

    def reading(self, name):
        """The reading called ``name``."""
        for r in self.readings:
            if r.name == name:
                return r
        raise KeyError(f"{self.id} has no reading {name!r}; readings: {[r.name for r in self.readings]}")

    def prepared(self, batch):
        """What ``evaluate`` receives for ``batch``: ``prepare(batch)``, or the batch itself."""
        return batch if self.prepare is None else self.prepare(batch)

    def worst_instances(self, family: str) -> dict:
        """The recorded worst instances on ``family`` (``worst``) as a batch."""
        one = self.worst[family]
        return one() if callable(one) else one

    def counterexample(self, family: str) -> dict:
        """The recorded minimal counterexample on ``family`` as a one-instance batch (a callable in
        ``counterexamples`` builds it, e.g. from a row of the generator's own batch)."""
        one = self.counterexamples[family]
        return one() if callable(one) else one

    def run(
        self,
        family: str,
        trials: int | None,
        rng,
        mutant: Mutant | None = None,
        batch=None,
        prepared=None,
        reading: Reading | None | str = "reference",
    ) -> Result:
        """Check the printed statement (``reading=None``), a reading, or ``mutant`` on ``batch``
        (drawn when None).  ``reading`` defaults to "reference": the printed claim without a
        mutant, :attr:`reference` with one.  ``prepared``: the output of :meth:`prepared` for this
        batch, when the caller has it already."""
        if family not in self.families:
            raise ValueError(
                f"{self.id} does not apply to family {family!r} (it covers {sorted(self.families)})"
            )
        t0 = time.perf_counter()
        if batch is None:
            batch = self.instances(family, trials, rng)
        if isinstance(reading, str):
            reading = (
                (self.reference if mutant is not None else None)
                if reading == "reference"
                else self.reading(reading)
            )
        claim = dict(self.claim)
        if reading is not None:
            unknown = set(reading.changes) - set(claim)
            if unknown:
                raise KeyError(
                    f"reading {reading.name!r} of {self.id} changes unknown claim entries {unknown}"
                )
            claim.update(reading.changes)
        flip = ()
        if mutant is not None:
            changes = dict(mutant.changes)
            flip = tuple(changes.pop("flip", ()))
            unknown = set(changes) - set(claim)
            if unknown:
                raise KeyError(f"mutant {mutant.name!r} of {self.id} changes unknown claim entries {unknown}")
            claim.update(changes)
        data = prepared if prepared is not None else self.prepared(batch)
        n = _batch_size(batch)
        parts = evaluate_claim(self.evaluate, data, claim, flip, n=n, who=f"{self.id} [{family}]")
        if self.precise is not None and any(_undecided_rows(p).size for p in parts):
            parts = _replay_precise(self.precise, batch, claim, parts, flip)
        return Result(self.id, family, n, parts, time.perf_counter() - t0)


def _check_properties(sid: str, implies: object, waived: object) -> None:
    """``implies`` a tuple of property names and ``waived`` a dict {name or (family, name): reason},
    every name one of :data:`moreau.analysis.engine.properties.PROPERTIES`."""
    from moreau.analysis.engine.properties import PROPERTIES

    if not isinstance(implies, tuple | list) or not all(isinstance(n, str) for n in implies):
        raise TypeError(f"{sid}: implies must be a tuple of property names (got {implies!r:.80})")
    if not isinstance(waived, Mapping):
        raise TypeError(f"{sid}: waived must be a dict {{property name: why}} (got {type(waived).__name__})")
    names = list(implies)
    for key, why in waived.items():
        name = key[1] if isinstance(key, tuple) and len(key) == 2 else key
        if not isinstance(name, str) or not isinstance(why, str) or not why.strip():
            raise ValueError(
                f"{sid}: waived maps a property name or (family, name) to why it is waived (got {key!r}: {why!r:.60})"
            )
        names.append(name)
    unknown = sorted({n for n in names if n not in PROPERTIES})
    if unknown:
        raise ValueError(
            f"{sid}: unknown properties {unknown} in implies/waived; known: {sorted(PROPERTIES)}"
        )
