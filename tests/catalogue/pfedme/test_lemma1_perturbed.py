"""pfedme.lemma1 on the family "nonconvex" (issue 27): the printed Lemma 1 fails on 1-D sample losses
f + ψ_j with θ-dependent, mean-zero noise, inside its printed hypotheses.

Every quantity of analysis/pfedme/lemma1_perturbed.py is recomputed here independently: θ̂, θ̃ and the
expectation in exact rational arithmetic (fractions.Fraction of the stored floats; θ̃ is checked to be
a root by evaluating h̃' at it exactly), γ² = sup_θ of the sample variance by a dense grid, and the
hypotheses (f μ-strongly convex, every h̃ strongly convex, mean-zero perturbations) exactly."""

from __future__ import annotations

import itertools
from fractions import Fraction as Fr

import numpy as np
import pytest

from moreau.analysis.engine.registry import catalogue
from moreau.analysis.engine.runner import rng_for, run
from moreau.analysis.pfedme import lemma1 as l1
from moreau.analysis.pfedme import lemma1_perturbed as lp

SID, FAM, READING = "pfedme.lemma1", "nonconvex", "sample losses meet Assumption 1"
PART = l1.PARTS[0]


@pytest.fixture(scope="module")
def batch():
    return l1.instances(FAM, None, rng_for(0, SID, FAM))


@pytest.fixture(scope="module")
def records():
    return run([SID], FAM, None, 0)


def _instance(batch, i):
    """Instance i as exact rationals: knots, rows of V (real samples only), λ, μ, c, w, m, mode, ν scale."""
    n = int(batch["weight"][i].sum())
    knots = [Fr(float(x)) for x in batch["knots"][i]]
    V = [[Fr(float(v)) for v in row] for row in batch["V"][i, :n]]
    scal = {k: Fr(float(batch[k][i])) for k in ("lam", "mu", "c", "w")}
    return knots, V, scal, int(batch["m"][i]), int(batch["mode"][i]), float(batch["nu_scale"][i])


def _interp(knots, vals, t):
    """Piecewise linear through (knots, vals), constant outside: exact."""
    if t <= knots[0]:
        return vals[0]
    if t >= knots[-1]:
        return vals[-1]
    for k in range(len(knots) - 1):
        if knots[k] <= t <= knots[k + 1]:
            return vals[k] + (vals[k + 1] - vals[k]) * (t - knots[k]) / (knots[k + 1] - knots[k])
    raise AssertionError("unreachable")


def _root(knots, vals, kappa, b, level):
    """The root of κθ − b + v(θ) = level by a scan for the sign change (slope κ outside the knots)."""
    g = [kappa * x - b + v - level for x, v in zip(knots, vals, strict=True)]
    if g[0] >= 0:
        t = knots[0] - g[0] / kappa
    elif g[-1] <= 0:
        t = knots[-1] - g[-1] / kappa
    else:
        k = max(j for j in range(len(g)) if g[j] < 0)
        t = knots[k] + (-g[k]) * (knots[k + 1] - knots[k]) / (g[k + 1] - g[k])
    assert kappa * t - b + _interp(knots, vals, t) - level == 0  # a root, exactly
    return t


def _exact(batch, i):
    """``(E|θ̃ − θ̂|², γ² as the max over knots, ν measured)`` of instance i, exactly (ν, the level √ν:
    the float the definition uses)."""
    knots, V, s, m, mode, nu_scale = _instance(batch, i)
    n = len(V)
    kappa, b = s["lam"] + s["mu"], s["mu"] * s["c"] + s["lam"] * s["w"]
    theta_hat = b / kappa  # Σ_j ψ_j' = 0 exactly (test_hypotheses): f = μ/2 (θ − c)²
    gamma2 = max(sum(row[p] ** 2 for row in V) / n for p in range(len(knots)))
    nu_t = nu_scale * float(gamma2) / m
    levels = (
        [Fr(0)] if mode == lp.EXACT or nu_t == 0 else [Fr(float(np.sqrt(nu_t))), -Fr(float(np.sqrt(nu_t)))]
    )
    total, nu = Fr(0), Fr(0)
    for D in itertools.product(range(n), repeat=m):
        vD = [sum(V[j][p] for j in D) / m for p in range(len(knots))]
        cands = [_root(knots, vD, kappa, b, r) for r in levels]
        t = max(cands, key=lambda t: abs(t - theta_hat))
        total += (t - theta_hat) ** 2
        nu = max(nu, (kappa * t - b + _interp(knots, vD, t)) ** 2)
    return total / n**m, gamma2, nu


def _rows(batch, max_n=40):
    return [i for i in range(batch["V"].shape[0]) if batch["weight"][i].sum() <= max_n]


def test_exact_quantities_match_an_independent_computation(batch):
    prep = lp.prepare(batch)
    rows = _rows(batch)
    assert len(rows) >= 30
    for i in rows:
        lhs, gamma2, nu = _exact(batch, i)
        # the module's floats vs exact rationals of the same data: rounding of a few operations
        assert abs(prep["lhs"][i] - float(lhs)) <= 1e-12 * float(lhs) + 1e-300, i
        assert prep["gamma2"][i] == pytest.approx(float(gamma2), rel=1e-14), i
        assert prep["nu"][i] == pytest.approx(float(nu), rel=1e-9, abs=1e-20 * float(gamma2)), i


def test_gamma2_is_the_sup_over_theta_of_the_sample_variance(batch):
    """A dense grid over the knots and beyond never exceeds γ², and reaches it (at a knot)."""
    prep = lp.prepare(batch)
    for i in range(batch["V"].shape[0]):
        n = int(batch["weight"][i].sum())
        knots, V = batch["knots"][i], batch["V"][i, :n]
        span = knots[-1] - knots[0] + 1.0
        grid = np.unique(np.concatenate([np.linspace(knots[0] - span, knots[-1] + span, 20001), knots]))
        var = np.mean([np.interp(grid, knots, row) ** 2 for row in V], axis=0)
        assert var.max() <= prep["gamma2"][i] * (1 + 1e-13)
        assert var.max() >= prep["gamma2"][i] * (1 - 1e-13)


def test_hypotheses_hold_on_every_instance(batch):
    """f μ-strongly convex (Σ_j ψ_j' = 0 exactly: f = μ/2 (θ − c)²; and f'' >= μ on a grid), every h̃
    strongly convex (κ + every slope > 0, exactly), and the sample losses not μ-strongly convex (some
    nonconvex) on the bump instances."""
    T = batch["V"].shape[0]
    nonconvex = bumps = 0
    for i in range(T):
        knots, V, s, *_ = _instance(batch, i)
        kappa = s["lam"] + s["mu"]
        assert s["mu"] > 0
        assert all(sum(row[p] for row in V) == 0 for p in range(len(knots)))  # mean zero, exactly
        slopes = [
            (row[p + 1] - row[p]) / (knots[p + 1] - knots[p]) for row in V for p in range(len(knots) - 1)
        ]
        assert min(slopes, default=0) > -kappa  # every h̃ (a mean of rows) strongly convex
        if min(slopes, default=0) < 0:  # ℓ_j'' = μ + slope < μ: not μ-strongly convex
            bumps += 1
            nonconvex += min(slopes) < -s["mu"]
        # f' = μ(θ − c) + mean ψ': increments of f' over a grid are μ times the step (f'' = μ)
        k, v = batch["knots"][i], batch["V"][i, : len(V)]
        grid = np.linspace(k[0] - 1, k[-1] + 1, 2001)
        fprime = float(s["mu"]) * (grid - float(s["c"])) + np.mean([np.interp(grid, k, r) for r in v], axis=0)
        assert np.all(np.diff(fprime) >= float(s["mu"]) * np.diff(grid) * (1 - 1e-9))
    prep = lp.prepare(batch)
    assert prep["hypotheses"].all()
    assert bumps >= T // 2 and nonconvex >= T // 3
    assert (~prep["samples_sc"]).sum() == bumps  # the reading excludes exactly these


def test_printed_lemma_fails_on_its_own_instances(records):
    (rec,) = records
    assert not rec.result.holds and rec.result.max_ratio > 3.9  # n = 100: 3.948
    st = catalogue()[SID]
    assert st.expect == "fails"
    # the worst group (|D| = 1, ν = 0) fails at every n of WORST_N, with ratios growing in n
    b, prep = rec.batch, lp.prepare(rec.batch)
    worst = (b["m"] == 1) & (b["nu_scale"] == 0) & (b["weight"].sum(axis=1) >= 5)
    ratio = prep["lhs"] / l1.CLAIM["delta2_sc"](
        b["lam"], b["mu"], b["mu"], prep["gamma2"], b["m"], prep["nu"]
    )
    by_n = {int(n): ratio[worst & (b["weight"].sum(axis=1) == n)].max() for n in lp.WORST_N}
    assert all(r > 1 for r in by_n.values()) and list(by_n.values()) == sorted(by_n.values())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reading_holds(seed, records):
    rec = records[0] if seed == 0 else run([SID], FAM, None, seed)[0]
    res = rec.readings[READING][0]
    assert res.holds and abs(res.max_ratio - 1) < 1e-12  # θ-independent ±a, ν = γ²: attained


def test_minimal_counterexample_n5(records):
    """n = 5 (no 1-D instance with n <= 4, |D| = 1, ν = 0 can fail): ratio 1.0880 exactly recomputed."""
    one = lp.minimal_counterexample()
    assert int(one["weight"].sum()) == 5 and one["m"][0] == 1 and one["nu_scale"][0] == 0
    lhs, gamma2, _ = _exact(one, 0)
    s = _instance(one, 0)[2]
    ratio = lhs / (2 / (s["lam"] + s["mu"]) ** 2 * gamma2)
    assert 1.0879 < float(ratio) < 1.0881
    res = catalogue()[SID].run(FAM, None, None, batch=one, reading=None)
    assert not res.holds and res.max_ratio == pytest.approx(float(ratio), rel=1e-12)
    (rec,) = records
    assert rec.minimal is not None and not rec.minimal[1].holds
    # the design's limit for n = 4 (two pairs) is 1: the same construction at n = 4 holds
    t = np.sqrt(np.array([3.0, 1.0]))
    x, V, _ = lp.bumps(4, t, t, 0.995, 1.0)
    th = lp.h_roots(x, V, 1.0, 0.0, np.zeros(4))
    assert np.mean(th**2) / (2 * lp.sup_variance(V, np.ones(4))) < 1
