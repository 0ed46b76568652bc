"""fedfw.sparse's recorded minimal counterexample: d = 2, one client, the box [-1, 1]^2, f = |x|^2/2 - x_1 - x_2.

Built as the runner builds it, run on the printed claim (``reading=None``): the box part fails with 2 non-zeros
> 1; the instance's derived fields are the generator's (L exact, x̄^1 the set's centre, λ0 = (L + G/D)/m), and the
reading expected to hold is not contradicted (its parts do not apply to a box).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.registry import get
from moreau.analysis.fedfw.instances import SETS, centre, diameter, run


def _one():
    st = get("fedfw.sparse")
    return st, st.counterexample("quadratic")


def test_the_printed_claim_fails_on_the_recorded_instance():
    st, one = _one()
    res = st.run("quadratic", None, None, batch=one, reading=None)
    failing = [p for p in res.parts if p.failures.size]
    assert [p.name for p in failing] == ["box: non-zeros of s_i^t <= 1 (one index and one value per round)"]
    s = failing[0].sides
    assert np.isfinite(s.lhs[0]) and s.rhs[0] > 0 and s.lhs[0] > s.rhs[0]
    assert (s.lhs[0], s.rhs[0]) == (2.0, 1.0)
    for r in st.readings:
        if r.expect == "holds":
            assert st.run("quadratic", None, None, batch=one, reading=r).holds


def test_the_recorded_instance_is_as_small_as_its_comment_says():
    _, one = _one()
    T, m, d = one["b"].shape
    assert (T, m, d) == (1, 1, 2)
    assert SETS[int(one["set"][0])] == "box" and np.array_equal(one["h"], np.ones((1, 2)))
    assert np.array_equal(one["A"][0, 0], np.eye(2)) and np.array_equal(one["b"][0, 0], [1.0, 1.0])
    # derived fields exactly as client_batch derives them (u = 1 in λ0 = u (L + G/D)/m)
    A, b, h = one["A"], one["b"], one["h"]
    assert one["L"][0] == np.max(np.abs(np.linalg.eigvalsh(A)))
    assert np.array_equal(one["x0"], centre(h, one["set"]))
    G = np.max(
        np.linalg.norm(A, ord=2, axis=(2, 3)) * np.linalg.norm(h, axis=-1)[:, None]
        + np.linalg.norm(b, axis=-1)
    )
    assert np.isclose(one["lam0"][0], (one["L"][0] + G / diameter(h, one["set"])[0]) / m, rtol=1e-15)
    # round 1 sends the vertex (1, 1): two non-zeros
    hist = run(one, 3)
    assert np.array_equal(hist["directions"][0, 0, 0], [1.0, 1.0]) and hist["nnz"][0, 0, 0] == 2
