"""The mutants' verdicts of a run: the first instance that rejects a mutant, the instance closest to
rejecting one that survives, and the survivors tried again on the checker's default batch and (with
``--search``) on a hypothesis search's instance."""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.batches import rng_for
from moreau.analysis.engine.core import take
from moreau.analysis.engine.judge import judged_over
from moreau.analysis.engine.search import MAX_TRIALS, search

__all__: list[str] = []


def _try_survivors(st, fam, trials, seed, search_examples, pending, verdicts, searches):
    """Mutants the run's batch did not reject: tried on the checker's default batch (when --trials
    was given: its adversarial instances must not disappear with a small --trials), then (with
    --search) on a hypothesis search's instance."""
    if pending and trials:
        extra = st.instances(fam, None, rng_for(seed, st.id, fam, "default"))
        prepared = st.prepared(extra)
        for m in list(pending):
            r = st.run(fam, None, None, mutant=m, batch=extra, prepared=prepared)
            if not r.holds:
                verdicts[m.name] = (True, r, "default", *_rejecting_instance(extra, r))
                pending.remove(m)
    if pending and search_examples:
        with judged_over(search_examples * MAX_TRIALS):  # Monte Carlo levels over every instance searched
            for m in list(pending):
                report = {}
                found = search(st, fam, m, max_examples=search_examples, seed=seed, report=report)
                searches.append((m.name, report))
                if found is not None:
                    r = st.run(fam, None, None, mutant=m, batch=found)
                    if not r.holds:
                        verdicts[m.name] = (True, r, "search", *_rejecting_instance(found, r))
                        pending.remove(m)


def _closest_instance(batch, res, offset=0):
    """``(one-instance batch, its index, its ratio)``: the applicable instance with the largest
    LHS/RHS over the inequality parts of a result that holds (the closest to failing), or
    ``(None, None, -inf)`` when no inequality part has an applicable instance."""
    best, where = -np.inf, None
    for p in res.parts:
        if p.claimed not in ("upper", "tight") or not p.applicable:
            continue
        r = np.where(p.sides.applicable & np.isfinite(p.ratio), p.ratio, -np.inf)
        k = int(np.argmax(r))
        if r[k] > best:
            best, where = float(r[k]), k
    if where is None:
        return None, None, -np.inf
    return take(batch, [where]), offset + where, best


def _rejecting_instance(batch, res, offset=0):
    """``(one-instance batch, its index)`` of the first instance on which ``res`` fails, or
    ``(None, None)`` (it holds, or it fails only as a whole: a claimed-tight bound not attained)."""
    f = res.failures
    return (take(batch, f[:1]), offset + int(f[0])) if f.size else (None, None)
