"""The small values a catalogue entry is made of and gives: a :class:`Mutant` (a wrong claim), a
:class:`Reading` (a named claim beside the printed one) with what a reading may be and repair, a
:class:`Result` (one statement, or mutant, on one family) and the rule for a statement id."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["Mutant", "Reading", "Result", "check_id", "READING_KINDS", "EXPECTATIONS", "REPAIR_CLASSES"]


#: what a reading is: a repair of the printed statement, another reading of ambiguous printed
#: text, or the paper's own text elsewhere (an algorithm's step) read into the statement
READING_KINDS = ("reading", "variant", "inconsistency")


#: what the catalogue may expect of a printed statement or a reading
EXPECTATIONS = ("holds", "fails", "undecided")


#: what a reading repairs, when it is the nearest reading that holds of a statement that fails as
#: printed (the statement's failure class, computed by the run: moreau.analysis.engine.verdict):
#: "misprint" (the reading restores what the paper's own text says elsewhere: ``Reading.cite``
#: says where), "missing hypothesis" (an assumption added or a range narrowed), "constant" (a
#: constant changed), "rate" (an exponent, a rate or a term's form changed)
REPAIR_CLASSES = ("misprint", "missing hypothesis", "constant", "rate")


@dataclass(frozen=True)
class Mutant:
    """A wrong version of a statement: ``changes`` replace entries of the claim.

    ``changes`` may also hold ``"flip": (part name, ...)``: those parts'
    inequalities reversed (``lhs >= rhs`` is claimed instead).  A mutant is applied to the
    statement's reference claim (:attr:`Statement.reference`).  ``o_equivalent``: why the mutant
    differs from the printed claim only by a constant inside O(·) — rejecting it (on a reading's explicit
    constants) refutes nothing printed: it is reported as "equivalent under O(·)", with whether a family
    rejects it, and never counted (not in the mutant totals of the report, README or --describe).
    """

    name: str
    changes: dict
    o_equivalent: str = ""


@dataclass(frozen=True)
class Reading:
    """A named claim beside the printed statement: ``changes`` replace entries of the printed claim.

    ``kind``: "reading" (a repair: "x⁰ ∈ B, t ≥ 1", "second-moment δ"), "variant" (another reading
    of ambiguous printed text) or "inconsistency" (the paper's own text elsewhere, e.g. an
    algorithm's step, read into the statement: its failure is a finding about that text, not a
    failure of the statement).  ``expect``: what the catalogue expects of it.  ``why``: prose for
    ``--describe`` and docs/catalogue.md (never printed as a result).  ``repairs``: what the reading
    changes, one of :data:`REPAIR_CLASSES` ("" for a reading not meant as a repair); when it is the
    nearest reading that holds (the first in ``Statement.readings`` order that holds in the run),
    it is the statement's failure class.  ``cite``: for a "misprint", where the paper's own text
    says what the reading restores.
    """

    name: str
    changes: dict
    kind: str = "reading"
    expect: str = "holds"
    why: str = ""
    repairs: str = ""
    cite: str = ""

    def __post_init__(self):
        if self.kind not in READING_KINDS:
            raise ValueError(f"Reading.kind must be one of {READING_KINDS} (got {self.kind!r})")
        if self.expect not in EXPECTATIONS:
            raise ValueError(f"Reading.expect must be one of {EXPECTATIONS} (got {self.expect!r})")
        if self.repairs not in ("", *REPAIR_CLASSES):
            raise ValueError(f"Reading.repairs must be one of {REPAIR_CLASSES} or '' (got {self.repairs!r})")
        if self.repairs == "misprint" and not self.cite.strip():
            raise ValueError(
                f"reading {self.name!r}: a misprint repair needs cite= (where the paper's own text says it)"
            )


#: a statement id: a name (it names saved counterexample files), never a path
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_id(sid: object) -> str:
    """``sid`` when it is a valid statement id: letters, digits, ``_``, ``-`` and ``.`` (not first,
    never ``..``), e.g. "pfedme.thm1b"; a ValueError naming it otherwise (a TypeError for a non-string)."""
    if not isinstance(sid, str):
        raise TypeError(f"Statement id must be a string (got {type(sid).__name__} {sid!r})")
    if not _ID.fullmatch(sid) or ".." in sid:
        raise ValueError(
            "Statement id must be a name of letters, digits, '_', '-' and '.' (not first, no '..'), "
            f"e.g. 'mine.lemma1' (got {sid!r})"
        )
    return sid


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
