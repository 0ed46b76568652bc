"""Scaffolding shared by the Per-FedAvg estimator tests (``perfedavg.lemma4_3`` and
``perfedavg.appendix_h``): the catalogue run with its mutants, the holds / every-mutant-rejected
assertions, random sample data, and the Monte Carlo comparison of ``moreau.fl.per_fedavg``'s
estimates (one step, β = 1, least squares) with the checkers' closed-form moments."""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
from moreau.analysis.engine.runner import run
from moreau.analysis.perfedavg.estimators.quadratic_moments import quadratic_moments
from moreau.fl import per_fedavg

__all__ = [
    "run_fixture",
    "assert_statement_holds",
    "assert_every_mutant_rejected",
    "parts_by_family",
    "symmetric_samples",
    "logistic_samples",
    "least_squares_samples",
    "assert_library_estimates_match",
]


def run_fixture(sid):
    """A module-scoped fixture ``with_mutants``: the default run (seed 0, every family) with mutants."""

    @pytest.fixture(scope="module")
    def with_mutants():
        return run([sid], "all", None, 0, mutants=True)

    return with_mutants


def assert_statement_holds(sid, seed, with_mutants, *, every_part_applicable=False):
    """Every part holds on the quadratic and the logistic family (seed 0: the fixture's run)."""
    records = with_mutants if seed == 0 else run([sid], "all", None, seed)
    assert {r.result.family for r in records} == {"quadratic", "logistic"}
    for rec in records:
        bad = [(p.name, p.failures) for p in rec.result.parts if not p.holds]
        assert rec.result.holds, f"fails on {rec.result.family} (seed {seed}): {bad}"
        if every_part_applicable:
            assert all(p.applicable for p in rec.result.parts), "every part is checked on every family"


def assert_every_mutant_rejected(with_mutants, at_least):
    """At least ``at_least`` mutants ran and each is rejected by some family."""
    rejected = {}
    for rec in with_mutants:
        for m, rej, _ in rec.mutants:
            rejected[m.name] = rejected.get(m.name, False) or rej
    assert len(rejected) >= at_least and all(rejected.values()), [k for k, v in rejected.items() if not v]


def parts_by_family(records):
    """``{(family, part name): part result}``."""
    return {(r.result.family, p.name): p for r in records for p in r.result.parts}


def symmetric_samples(rng, T, n, d):
    """(T, n, d, d) symmetric, indefinite sample Hessians."""
    A = rng.standard_normal((T, n, d, d))
    return (A + np.swapaxes(A, -1, -2)) / 2


def logistic_samples(rng, T, n, d):
    """Features (T, n, d) and labels ±1 (T, n)."""
    return rng.standard_normal((T, n, d)) * 1.5, np.where(rng.uniform(size=(T, n)) < 0.5, 1.0, -1.0)


def least_squares_samples(rng, n, d):
    """n least-squares samples ``(Xs, ys)``, their Hessians ``A_j = x_j x_jᵀ`` and ``b_j = y_j x_j``, and
    a start ``w0``."""
    Xs, ys = rng.standard_normal((n, d)) * 1.3, rng.standard_normal(n)
    A, b = Xs[:, :, None] * Xs[:, None, :], ys[:, None] * Xs
    return Xs, ys, A, b, rng.standard_normal(d)


def assert_library_estimates_match(Xs, ys, w0, alpha, outer, sizes, K, **per_fedavg_kw):
    """K independent one-step estimates ``w0 − w^1`` of ``moreau.fl.per_fedavg`` (β = 1) on the
    least-squares samples: their mean and second moment about ∇F(w0) agree with
    ``quadratic_moments`` (inner step ``alpha``, outer ``outer``, batch sizes ``sizes``) within 5
    standard errors."""
    A, b = Xs[:, :, None] * Xs[:, None, :], ys[:, None] * Xs
    h = per_fedavg(
        mo.LeastSquares(Xs[None], ys[None]),
        alpha=np.full(K, alpha),
        beta=1.0,
        tau=1,
        rounds=1,
        D=sizes[0],
        D_prime=sizes[1],
        w0=w0,
        **per_fedavg_kw,
    )
    est = w0 - np.asarray(h.w_global[1])  # (K, d): the estimates
    one = lambda x: np.array([x], float)  # noqa: E731
    bias, second, gF = quadratic_moments(A[None], b[None], w0[None], one(alpha), one(outer), *map(one, sizes))
    err = est - gF[0]
    sq = np.sum(err**2, axis=-1)
    assert np.all(np.abs(err.mean(axis=0) - bias[0]) < 5 * err.std(axis=0, ddof=1) / np.sqrt(K))
    assert abs(sq.mean() - second[0]) < 5 * sq.std(ddof=1) / np.sqrt(K)
