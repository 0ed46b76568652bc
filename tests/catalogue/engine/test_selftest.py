"""The catalogue tests itself (issue 17): every part can fail, printed failures are found by the
checkers' own instances, and no part merely tracks the claim it is supposed to test.

* Every theorem part of the claim the mutants mutate (the printed statement, or the reading that
  holds) is rejected on its own by at least one mutant that counts (not equivalent under O(·)),
  or is listed in ``Statement.consistency_checks`` with the reason it is a definitional
  consistency check.
* A printed statement the catalogue expects to fail still fails with its readings, expectation
  and mutants removed: the failure comes from the printed claim and the statement's own default
  instances, nothing else.
* No part's LHS/RHS is invariant under every mutant that moves its right side: such a part would
  compute its left side from the claim's own formula and could not fail whatever the claim says.
"""

from __future__ import annotations

import dataclasses
import warnings
from functools import cache

import numpy as np
import pytest

from moreau.analysis.engine import runner
from moreau.analysis.engine.registry import catalogue

CAT = catalogue()
IDS = list(CAT)


@cache
def _records(sid):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return tuple(runner.run([sid], "all", None, 0, mutants=True))


def _reference_parts(rec):
    st = rec.statement
    res = rec.result if st.reference is None else rec.readings[st.reference.name][0]
    return [p for p in res.parts if p.sides.role == "theorem"]


@pytest.mark.parametrize("sid", IDS)
def test_every_theorem_part_is_rejected_by_some_mutant(sid):
    st = CAT[sid]
    rejected = set()
    for rec in _records(sid):
        for m, _, res in rec.mutants:
            if not m.o_equivalent:
                rejected |= {p.name for p in res.parts if not p.holds}
    parts = {p.name for rec in _records(sid) for p in _reference_parts(rec)}
    missing = sorted(parts - rejected - set(st.consistency_checks))
    assert not missing, (
        f"{sid}: no mutant rejects these parts on their own (add one, or list the part in "
        f"consistency_checks with why): {missing}"
    )


@pytest.mark.parametrize("sid", [s for s in IDS if CAT[s].expect == "fails"])
def test_a_printed_failure_is_found_from_the_printed_statement_alone(sid):
    bare = dataclasses.replace(CAT[sid], readings=(), expect="holds", mutants=(), equivalent_mutants={})
    failed = []
    for fam in bare.families:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = bare.run(fam, None, runner.rng_for(0, sid, fam), reading=None)
        failed += [p.name for p in res.parts if p.sides.role == "theorem" and not p.holds]
    assert failed, (
        f"{sid}: the printed statement holds on its own instances; the catalogue expects it to fail"
    )


def test_the_catalogue_expects_printed_failures_of_the_papers():
    """The statements whose printed text fails (docs/findings-catalogue.md) are expected to fail as printed;
    FedProx's Theorem 1 holds, the remark after it fails on its own id (issue 27)."""
    assert CAT["fedprox.thm1"].expect == "holds" and CAT["fedprox.thm1_remark"].origin == "remark"
    for sid in ("fw.convex", "fw.nonconvex", "sgd.nonconvex", "fedprox.thm1_remark", "pfedme.lemma1"):
        assert CAT[sid].expect == "fails" and CAT[sid].reference is not None


@pytest.mark.parametrize("sid", IDS)
def test_no_part_merely_tracks_the_claim(sid):
    st = CAT[sid]
    for rec in _records(sid):
        base = {p.name: p for p in _reference_parts(rec)}
        moved, changed = set(), set()
        for _mutant, _, res in rec.mutants:
            for p in res.parts:
                q = base.get(p.name)
                if q is None or p.claimed == "rate" or q.sides.rhs.shape != p.sides.rhs.shape:
                    continue
                app = (
                    q.sides.applicable & p.sides.applicable & (q.sides.lhs != 0)
                )  # lhs = 0: ratio 0 either way
                if not app.any() or np.allclose(q.sides.rhs[app], p.sides.rhs[app], rtol=1e-12, atol=0):
                    continue
                moved.add(p.name)
                with np.errstate(all="ignore"):
                    if not np.allclose(q.ratio[app], p.ratio[app], rtol=1e-9, atol=0, equal_nan=True):
                        changed.add(p.name)
        frozen = sorted(moved - changed - set(st.consistency_checks))
        assert not frozen, (
            f"{sid} [{rec.result.family}]: LHS/RHS does not move when a mutant moves the right "
            f"side: the left side is computed from the claim ({frozen})"
        )


def test_every_statement_says_whether_a_class_worst_case_applies():
    """--pep covers some statements; every other one says why not (printed in --pep and --describe)."""
    from moreau.analysis.pep.report import _builders, _not_applicable

    builders, reasons = _builders(), _not_applicable()
    silent = [sid for sid in IDS if sid not in builders and not reasons.get(sid)]
    assert not silent, f"statements with neither a PEP builder nor a reason: {silent}"
    assert not set(builders) & set(reasons)


@pytest.mark.parametrize("sid", IDS)
def test_a_family_on_which_no_mutant_is_rejected_is_declared_evidence_only(sid):
    """A family with no power (every counting mutant survives there) may not count toward a verdict:
    the statement declares it in evidence_only, with why."""
    from moreau.analysis.engine.report import family_power

    st = CAT[sid]
    for (_, fam), (rejected, counted) in family_power(_records(sid)).items():
        if counted and not rejected:
            assert fam in st.evidence_only, (
                f"{sid} [{fam}]: no mutant is rejected there; give it instances near "
                "the worst case or declare it evidence_only"
            )
