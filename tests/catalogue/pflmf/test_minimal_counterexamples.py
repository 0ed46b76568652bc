"""pflmf.deterministic's recorded minimal counterexample: d = 2, m = 2 clients, rank 1, τ = 1, p = 1/2,
f_i = |x - c_i|^2/2 with c_i = (3, ±1), started at the rank-1 optimum.

Built as the runner builds it, run on the printed claim (``reading=None``): the rate part fails (the fitted
exponent's whole interval above -1 + 0.05) with the step condition held along every run; the certified fields
(σ, P, R, L_i, L, a_d) are those of the data, checked against ``moreau.fl.low_rank_optimum`` and an SVD.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.registry import get
from moreau.analysis.pflmf import clients
from moreau.analysis.pflmf.deterministic import ATOL, GROUPS, RUNS
from moreau.fl._pflmf import low_rank_optimum


def _one():
    st = get("pflmf.deterministic")
    return st, st.counterexample("quadratic")


def test_the_printed_claim_fails_on_the_recorded_instance():
    st, one = _one()
    res = st.run("quadratic", None, None, batch=one, reading=None)
    (part,) = res.parts
    assert part.applicable == 1 and part.failures.tolist() == [0]  # the step condition holds along every run
    s = part.sides
    assert np.isfinite(s.lhs[0]) and s.lhs[0] > s.rhs[0] == -1.0  # a rate part: the claimed exponent is -1
    assert s.lhs_ci[0][0] > s.rhs[0] + ATOL
    assert -0.8 < s.lhs_ci[0][0] < s.lhs[0] < s.lhs_ci[1][0] < -0.6
    for r in st.readings:  # p = 1 only: not applicable here, holds
        if r.expect == "holds":
            assert st.run("quadratic", None, None, batch=one, reading=r).holds


def test_the_recorded_instance_is_as_small_as_its_comment_says():
    _, one = _one()
    n, m, d = one["C"].shape
    assert (n, m, d) == (1, 2, 2)
    assert (int(one["r"][0]), int(one["tau"][0]), float(one["p"][0])) == (1, 1, 0.5) in GROUPS
    assert one["U0"].shape == (1, RUNS, d, 1) and one["V0"].shape == (1, RUNS, m, 1)
    assert np.array_equal(one["A"][0], np.eye(2)) and np.array_equal(one["s"][0], [1.0, 1.0])
    assert np.array_equal(one["C"][0], [[3.0, 1.0], [3.0, -1.0]])
    # the certified fields are the data's: M = A^{1/2} C^T W^{1/2} = P diag(sigma) R^T, L_i = s_i a_d
    w = one["s"][0] / m
    M = one["C"][0].T * np.sqrt(w)
    assert np.allclose(one["P"][0] @ np.diag(one["sigma"][0]) @ one["R"][0].T, M, rtol=0, atol=1e-15)
    assert np.allclose(np.linalg.svd(M, compute_uv=False), one["sigma"][0], rtol=1e-15)
    assert np.array_equal(one["sigma"][0], [3.0, 1.0])
    assert one["ad"][0] == np.linalg.eigvalsh(one["A"][0])[-1]
    assert np.array_equal(one["Li"], one["s"] * one["ad"][:, None]) and one["L"][0] == one["Li"].max()
    # the start is the rank-1 optimum x_i* = (3, 0), where the residuals are not 0 one by one
    opt = low_rank_optimum(clients.objective(one), 1)
    assert np.allclose(np.asarray(opt.sigma)[0], one["sigma"][0], rtol=1e-15)
    X0 = one["V0"][0, 0] @ one["U0"][0, 0].T
    assert np.allclose(X0, np.asarray(opt.X)[0], rtol=0, atol=1e-14) and np.array_equal(
        X0, [[3.0, 0.0], [3.0, 0.0]]
    )
    assert np.all(np.abs(X0 - one["C"][0]).sum(axis=1) > 0)
    assert np.all(one["U0"] == one["U0"][:, :1]) and np.all(one["V0"] == one["V0"][:, :1])  # every run
