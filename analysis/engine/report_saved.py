"""``moreau check --save-counterexamples``: the failing instances and the mutants' instances saved as
.npz, each printed with the command that replays it."""

from __future__ import annotations

__all__ = ["save"]


def save(records, directory, verbose=False):
    """The first failing instances of every statement (at most 5 per record), the instance that
    rejects each mutant (when one instance does) and, for a mutant that survives, the instance
    closest to rejecting it (largest LHS/RHS), each with the command that replays it."""
    from moreau.analysis.engine.records import save_counterexample, save_instance

    n = 0
    for rec in records:
        for i in rec.result.failures[:5]:
            path, cmd = save_counterexample(rec, int(i), directory)
            n += 1
            if verbose or n <= 3:
                print(f"saved {path}; reproduce: {cmd}")
        for (m, rejected, _), (where, one, i) in zip(rec.mutants, rec.mutant_batches, strict=True):
            if one is None:
                continue
            path, cmd = save_instance(
                one, rec.statement.id, rec.result.family, f"{where}{i}", directory, m.name
            )
            what = (
                f"rejects mutant {m.name!r}"
                if rejected
                else f"the instance closest to rejecting the surviving mutant {m.name!r}"
            )
            n += 1
            if verbose or n <= 3:
                print(f"saved {path} ({what}); replay: {cmd}")
    if n > 3 and not verbose:
        print(
            f"saved {n} instances in {directory} (each replays with: moreau check ID --replay FILE; -v lists them)"
        )
