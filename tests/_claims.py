"""Checks shared by the tests of ``moreau reproduce``'s claims: a claim's paired comparisons recomputed
independently (scipy's paired t, Holm's step-down) from the per-seed differences of the run's CSV."""

from __future__ import annotations

import numpy as np
import pytest


def check_paired_claim(v, diffs, family_level=0.95):
    """A claim's comparisons recomputed here from the per-seed differences ``diffs`` (name -> (S,)): the
    mean, scipy's paired t p-value and interval at the comparison's level, Holm's adjusted p-values and
    step-down levels (S. Holm 1979), each comparison's verdict from its interval's sign and the claim's from
    its comparisons (fails if one fails, holds if all hold)."""
    from scipy import stats

    comps = v["comparisons"]
    assert [c["comparison"] for c in comps] == list(diffs)
    k, alpha = len(comps), 1 - family_level
    tests = [stats.ttest_1samp(np.asarray(d, float), 0.0) for d in diffs.values()]
    p = np.array([t.pvalue for t in tests])
    order = np.argsort(p, kind="stable")
    adj = np.empty(k)
    adj[order] = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * p[order]))
    stop = next((j for j in range(k) if adj[order[j]] > alpha), k)
    for j, i in enumerate(order):
        c, d, t = comps[i], np.asarray(list(diffs.values())[i], float), tests[i]
        assert c["estimate"] == pytest.approx(d.mean(), rel=1e-9, abs=1e-9)
        assert c["p"] == pytest.approx(p[i], rel=1e-9, abs=1e-12)
        assert c["p_holm"] == pytest.approx(adj[i], rel=1e-9, abs=1e-12)
        assert c["level"] == pytest.approx(1 - alpha / (k - min(j, stop)), rel=1e-12)
        ci = t.confidence_interval(c["level"])
        assert c["interval"] == pytest.approx([ci.low, ci.high], rel=1e-9, abs=1e-9)
        assert c["verdict"] == ("holds" if ci.low > 0 else "fails" if ci.high < 0 else "undecided")
        assert (c["verdict"] != "undecided") == (
            j < stop
        )  # the interval excludes 0 exactly when Holm rejects
    words = {c["verdict"] for c in comps}
    assert v["verdict"] == ("fails" if "fails" in words else "holds" if words == {"holds"} else "undecided")
