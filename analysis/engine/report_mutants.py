"""The mutants' report of ``moreau check --mutants``: which families reject each mutant, which mutants are
not counted (equivalent under O(.), or their mutated claim fails already), and families with no power."""

from __future__ import annotations

from moreau.analysis.engine.report_text import _wrap
from moreau.analysis.engine.verdict import _theorem_parts

__all__ = ["mutant_verdicts", "family_power", "print_mutants"]


def mutant_verdicts(records):
    """``{(id, mutant name): [families that reject it]}``: a mutant is rejected
    when at least one family has an instance where the mutated statement fails."""
    out = {}
    for rec in records:
        for m, rejected, _ in rec.mutants:
            fams = out.setdefault((rec.statement.id, m.name), [])
            if rejected:
                fams.append(rec.result.family)
    return out


def family_power(records):
    """``{(id, family): (mutants rejected there, mutants that count)}``: a family on which no
    mutant that counts is rejected has no power (nothing could fail there)."""
    out = {}
    for rec in records:
        counted = [(m, rej) for m, rej, _ in rec.mutants if not m.o_equivalent]
        out[(rec.statement.id, rec.result.family)] = (sum(rej for _, rej in counted), len(counted))
    return out


def _mutated_claim_fails(records) -> set:
    """``{(id, family)}`` where the claim the mutants mutate (the printed one, or the statement's
    reference reading) fails on the run's batch: no mutant's rejection there counts."""
    out = set()
    for rec in records:
        ref = rec.statement.reference
        res = rec.result if ref is None else (rec.readings.get(ref.name) or (None,))[0]
        if res is not None and any(not p.holds for p in _theorem_parts(res)):
            out.add((rec.statement.id, rec.result.family))
    return out


def print_mutants(records, restricted=False, verbose=False) -> bool:
    """Mutant table: per mutant the families that reject it and those that do not; a mutant
    equivalent under O(·) is labelled and not counted; families with no power are listed.  With
    ``--family`` restricted, a mutant that only another family can reject does not fail the run."""
    every: dict[str, list[str]] = {}
    for rec in records:
        every.setdefault(rec.statement.id, []).append(rec.result.family)
    equivalent = {(rec.statement.id, m.name): m.o_equivalent for rec in records for m, _, _ in rec.mutants}
    base_fails = _mutated_claim_fails(records)
    ok, lines, undecidable = True, [], set()
    table = mutant_verdicts(records)
    for (sid, name), fams in table.items():
        others = [f for f in every[sid] if f not in fams]
        failing = [f for f in fams if (sid, f) in base_fails]
        if (
            failing and not equivalent[(sid, name)]
        ):  # a rejection where the mutated claim fails anyway is none
            fams = [f for f in fams if f not in failing]
            others = [f for f in others if (sid, f) not in base_fails]
            if not fams:
                undecidable.add((sid, name))
                lines.append(
                    f"{sid}: {name}  undecidable, not counted: the claim it mutates fails on "
                    f"{', '.join(failing)} already (a rejection there shows nothing)"
                )
                continue
        if equivalent[(sid, name)]:
            verdict = (
                f"{'rejected by ' + ', '.join(fams) if fams else 'not rejected'}; equivalent under O(.), "
                f"not counted: {equivalent[(sid, name)]}"
            )
        elif fams:
            verdict = f"rejected by {', '.join(fams)}" + (f"; not by {', '.join(others)}" if others else "")
        elif restricted:
            verdict = "not rejected by the families run (the verdict needs --family all)"
        else:
            verdict = "SURVIVED (" + ", ".join(others) + ")"
            ok = False
        if verbose or not fams or others or equivalent[(sid, name)]:
            lines.append(f"{sid}: {name}  {verdict}")
    # O(.)-equivalent, or undecidable (the mutated claim fails already): not counted
    counted = {k: f for k, f in table.items() if not equivalent[k] and k not in undecidable}
    n_eq = len(table) - len(counted) - len(undecidable)
    print(
        _wrap(
            f"mutants: {sum(bool(f) for f in counted.values())}/{len(counted)} rejected"
            + (f", {n_eq} equivalent under O(.) not counted" if n_eq else "")
            + (f", {len(undecidable)} undecidable not counted" if undecidable else "")
            + (
                ""
                if verbose
                else " (listed: those some family does not reject, and those not counted; all with -v)"
            ),
            indent=2,
        )
    )
    for line in lines:
        print(f"  {line}")
    weak = [(sid, fam) for (sid, fam), (k, n_) in family_power(records).items() if n_ and not k]
    for sid, fam in weak:
        print(
            f"  {sid} [{fam}]: no power (no mutant is rejected on this family: its verdict rests on the others)"
        )
    print()
    return ok
