"""Readable counterexamples (analysis/engine/shrink.py): a random failing instance shrunk to a small,
simple one that still fails, with every derived field recomputed and the family's constraints kept."""

from __future__ import annotations

import numpy as np
import pytest

from moreau.analysis.api import Sides, Simplify, Statement, log_uniform, quadratic_batch, quadratic_fields
from moreau.analysis.engine import runner
from moreau.analysis.engine.shrink import shrink


def _instances(family, trials, rng):
    T = trials or 64
    batch = quadratic_batch(rng, T, 4, "strongly_convex")
    batch["lam"] = log_uniform(rng, 1e-2, 1e2, T)
    batch["w"] = rng.standard_normal((T, 4)) * batch["L"][:, None]
    return batch


def _prox_displacement(A, b, w, lam):
    """|prox_{f/lam}(w) - w| for f = x'Ax/2 - b'x, by a linear solve (independent of moreau)."""
    d = A.shape[-1]
    theta = np.linalg.solve(A + lam[:, None, None] * np.eye(d), (b + lam[:, None] * w)[..., None])[..., 0]
    return np.linalg.norm(theta - w, axis=-1)


def _evaluate(batch, claim):
    A, b, w, lam = batch["A"], batch["b"], batch["w"], batch["lam"]
    grad = np.linalg.norm(np.einsum("tij,tj->ti", A, w) - b, axis=-1)
    return {
        "|prox(w) - w| <= |grad f(w)|/(lam + L)": Sides(
            _prox_displacement(A, b, w, lam), grad / (lam + batch["L"]), "upper"
        )
    }


SPEC = Simplify(
    matrix="A",
    vectors=("b", "w"),
    scalars=("lam",),
    derive=quadratic_fields,
    rotation_invariant=True,
    valid=lambda inst: (inst["eig"][:, 0] > 0) & (inst["lam"] > 0),
)
FALSE = Statement(
    id="toy.prox_L",
    source="toy",
    paper="none.md",
    latex="",
    text="with lam + L (false)",
    assumptions=("strongly convex",),
    families={"quadratic": ("d = 4",)},
    claimed="upper",
    instances=_instances,
    evaluate=_evaluate,
    claim={},
    expect="fails",
    simplify={"quadratic": SPEC},
)


def test_a_random_4x4_counterexample_becomes_a_diagonal_2x2_with_round_numbers():
    (rec,) = runner.run([FALSE.id], cat={FALSE.id: FALSE})
    assert not rec.result.holds
    one, res, log, evals = rec.shrunk
    A, b, w, lam = one["A"][0], one["b"][0], one["w"][0], one["lam"][0]
    assert A.shape == (2, 2) and A[0, 1] == A[1, 0] == 0  # d = 1 cannot fail: mu = L there
    assert log[:2] == ["diagonalised", "d 4 -> 2"] and 0 < evals <= 400
    assert all(float(x) == float(f"{x:.0e}") for x in (*np.diag(A), *b, *w, lam))  # one significant digit
    # derived fields recomputed from the new matrix, and the family's constraint kept (mu > 0)
    np.testing.assert_array_equal(one["eig"][0], np.sort(np.diag(A)))
    assert one["L"][0] == np.max(np.diag(A)) and one["eig"][0, 0] > 0
    # it fails, by a hand computation of both sides (not the statement's own evaluation)
    a = np.diag(A)
    theta = (b + lam * w) / (a + lam)
    lhs, rhs = np.linalg.norm(theta - w), np.linalg.norm(a * w - b) / (lam + a.max())
    assert lhs > rhs > 0
    assert res.parts[0].sides.lhs[0] == pytest.approx(lhs) and res.parts[0].sides.rhs[0] == pytest.approx(rhs)


def test_a_step_that_leaves_the_family_or_stops_failing_is_not_taken():
    rng = np.random.default_rng(1)
    batch = _instances("quadratic", 64, rng)
    res = FALSE.run("quadratic", None, None, batch=batch)
    i = int(res.failures[0])
    one = {k: v[[i]] for k, v in batch.items()}
    # without rotation invariance the matrix is not diagonalised, only rounded entry by entry
    small, log, _ = shrink(
        FALSE, "quadratic", one, Simplify(**{**SPEC.__dict__, "rotation_invariant": False})
    )
    assert "diagonalised" not in log
    assert FALSE.run("quadratic", None, None, batch=small).failures.size == 1
    # a family constraint that no candidate can meet leaves the instance as it was
    same, log, evals = shrink(
        FALSE, "quadratic", one, Simplify(**{**SPEC.__dict__, "valid": lambda inst: False})
    )
    assert log == [] and evals > 0
    np.testing.assert_array_equal(same["A"], one["A"])


def test_the_json_and_the_report_carry_the_shrunk_counterexample(capsys):
    from moreau.analysis.engine.records import record_json
    from moreau.analysis.engine.report import print_verdicts

    recs = runner.run([FALSE.id], cat={FALSE.id: FALSE})
    j = record_json(recs[0])["shrunk_counterexample"]
    assert (
        j["fails"]
        and j["steps"][:2] == ["diagonalised", "d 4 -> 2"]
        and np.shape(j["instance"]["A"]) == (1, 2, 2)
    )
    print_verdicts(recs)
    assert "smallest counterexample found [quadratic]: lhs" in capsys.readouterr().out
