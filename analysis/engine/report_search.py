"""What the run's searches tried: the default run's short search in one line, ``--search``'s per
(id, family) and per surviving mutant."""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.report_text import _wrap

__all__ = ["print_short_search", "print_searches"]


def print_short_search(records):
    """One line: what the default run's short search tried, and any failure it found (by statement)."""
    reps = [(rec, rep) for rec in records for name, rep in rec.searches if not name and rep.get("short")]
    if not reps:
        return
    found = [f"{rec.statement.id} [{rec.result.family}]" for rec, rep in reps if rep["found"]]
    n, secs = sum(rep["examples"] for _, rep in reps), sum(rep["seconds"] for _, rep in reps)
    pairs = len({(rec.statement.id, rec.result.family) for rec, _ in reps})
    what = ("a failing instance for " + ", ".join(found)) if found else "no failure beyond the run's batch"
    skipped = sum(1 for _, rep in reps if rep.get("skipped"))
    more = f" ({skipped} too costly to search)" if skipped else ""
    print(
        _wrap(
            f"short search: {n} batches on {pairs - skipped} (id, family) pairs in {secs:.1f} s: {what}{more}"
        )
    )


def print_searches(records, n):
    """What --search searched: per (id, family), the statement's search and each surviving mutant's."""
    print(f"hypothesis search (at most {n} generated batches before a failure, then shrinking):")
    for rec in records:
        for name, rep in rec.searches:
            what = f"{rec.statement.id} [{rec.result.family}]" + (f" mutant {name!r}" if name else "")
            if rep["found"]:
                inst = "; ".join(
                    f"{k}={np.array2string(np.asarray(v), precision=4, threshold=8)}"
                    for k, v in rep["instance"].items()
                )
                print(
                    f"  {what}: FAILURE after {rep['before_failure']} batches, shrunk in {rep['shrinks']} steps to "
                    f"{rep['batch_size']} instance(s); smallest failing instance: {inst}"
                )
            else:
                print(f"  {what}: no failure in {rep['examples']} batches")
    print()
