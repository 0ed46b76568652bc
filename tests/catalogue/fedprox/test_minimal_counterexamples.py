"""The recorded minimal counterexample of fedprox.thm1_remark, the sentence after FedProx's
Theorem 1 (``thm1.minimal_counterexample``).

Run as every ``moreau check`` runs it (``reading=None``: the printed claim): 'no worse than
LocalTrain' fails there, exactly (not by sampling), by the ratio its comment derives
(1 − t + t²(1/2 + μnR²/σ²), t = σ²/(σ² + nR²), nR² = 1.0201), on the smallest configuration
(m = 2 clients, d = 1, μ = L = 2, σ = 1); the reading holds, and so does the theorem itself
(eqs. (4)-(6)) on the same instance: the remark's failure is not the theorem's.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.fedprox import thm1

THEOREM, ST = thm1.STATEMENTS
FAILING = thm1.REMARK_PART


def _ratio(mu=2.0, sigma=1.0, nR2=1.01**2):
    t = sigma**2 / (sigma**2 + nR2)
    return 1 - t + t**2 * (0.5 + mu * nR2 / sigma**2)


def test_the_printed_claim_fails_exactly_on_the_recorded_instance():
    one = ST.counterexample("quadratic")
    res = ST.run("quadratic", None, None, batch=one, reading=None)
    assert res.instances == 1 and not res.holds
    failing = [p for p in res.parts if p.failures.size]
    assert [p.name for p in res.parts] == [p.name for p in failing] == [FAILING]  # the remark's one part
    s = failing[0].sides
    assert s.lhs_ci is None  # exact (bias² + trace), no Monte Carlo interval
    assert np.isfinite(s.lhs[0]) and np.isfinite(s.rhs[0]) and s.rhs[0] > 0 and s.lhs[0] > s.rhs[0]
    np.testing.assert_allclose(s.lhs[0] / s.rhs[0], _ratio(), rtol=1e-9)
    n = 1.0 / (2 * s.rhs[0])  # LocalTrain's σ²/(nμ) identifies the grid's n
    assert np.isclose(n, np.round(n)) and np.round(n) in thm1.N_GRID


def test_the_recorded_instance_is_the_smallest_configuration():
    one = ST.counterexample("quadratic")
    gen = ST.instances("quadratic", None, np.random.default_rng(0))
    assert set(one) == set(gen) and all(np.shape(v) == (1,) for v in one.values())
    assert all(np.asarray(one[k]).dtype.kind == np.asarray(gen[k]).dtype.kind for k in one)
    assert (int(one["m"][0]), int(one["d"][0])) == (2, 1)  # the fewest clients and dimensions allowed
    assert (one["mu"][0], one["L"][0], one["sigma"][0]) == (2.0, 2.0, 1.0)
    assert _ratio(mu=1.0) < 1 and _ratio(mu=2.0) > 1  # μ = 1 never fails (the comment's condition)


def test_the_failure_does_not_depend_on_the_seed():
    """The seed fixes the Monte Carlo parts only: the exact failing part fails by the same ratio at another
    seed (the ratio is the same at every n of the grid along R = 1.01 n^-1/2: which n is reported is
    rounding's tie-break)."""
    one = ST.counterexample("quadratic")
    for seed in (0, 7):
        res = ST.run("quadratic", None, None, batch=dict(one, seed=np.array([seed])), reading=None)
        p = next(p for p in res.parts if p.name == FAILING)
        assert p.failures.size
        np.testing.assert_allclose(p.sides.lhs[0] / p.sides.rhs[0], _ratio(), rtol=1e-9)


def test_the_reading_expected_to_hold_holds_on_it():
    one = ST.counterexample("quadratic")
    for r in ST.readings:
        assert r.expect == "holds" and ST.run("quadratic", None, None, batch=one, reading=r).holds


def test_the_theorem_holds_on_the_remarks_counterexample_and_has_no_remark_part():
    """Eqs. (4)-(6) hold where the remark fails: the theorem's verdict is its own (issue 27)."""
    assert (THEOREM.id, ST.id) == ("fedprox.thm1", "fedprox.thm1_remark")
    assert (THEOREM.expect, THEOREM.origin, ST.expect, ST.origin) == ("holds", "printed", "fails", "remark")
    res = THEOREM.run("quadratic", None, None, batch=ST.counterexample("quadratic"), reading=None)
    assert res.holds and FAILING not in [p.name for p in res.parts]
