"""Per-FedAvg Lemmas 4.2 / 4.4 and the thesis' chapter-2 rates: holds, mutants, tightness.

The checkers live in ``analysis/perfedavg/lemma4_2.py``, ``perfedavg_lemma4_4.py``
and ``thesis/gd.py``, ``thesis/fw/``; this file asserts what their reports claim.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import moreau as mo
from moreau.analysis.engine import runner
from moreau.analysis.engine.core import TIGHT_RTOL, Mutant
from moreau.analysis.engine.registry import get
from moreau.analysis.engine.report import mutant_verdicts
from moreau.analysis.thesis import gd as thesis_gd
from moreau.analysis.thesis.fw import nonconvex as _thesis_fw

IDS = (
    "perfedavg.lemma4_2",
    "perfedavg.lemma4_4",
    "gd.strongly_convex",
    "gd.nonconvex",
    "fw.convex",
    "fw.nonconvex",
)
#: max-ratio comparisons: both sides are closed forms or eigvalsh of d <= 4 matrices,
#: exact to a few eps; 1e-12 (~4500 eps) separates rounding from a wrong constant
RATIO_TOL = 1e-12


def _part(rec, prefix):
    (p,) = [p for p in rec.result.parts if p.name.startswith(prefix)]
    return p


def _record(sid, family, seed=0, mutants=False):
    (rec,) = runner.run([sid], family, None, seed, mutants)
    return rec


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sid", IDS)
def test_statement_holds_on_its_families(sid, seed):
    records = runner.run([sid], "all", None, seed)
    assert {r.result.family for r in records} == set(get(sid).families)
    st = get(sid)
    for rec in records:  # the printed statement, or (expected to fail as printed) the reading that holds
        res = rec.result if st.reference is None else rec.readings[st.reference.name][0]
        bad = [(p.name, p.failures[:3].tolist()) for p in res.parts if not p.holds]
        assert res.holds, f"{sid} on {rec.result.family} (seed {seed}): {bad}"


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sid", IDS)
def test_every_mutant_is_rejected(sid, seed):
    verdicts = mutant_verdicts(runner.run([sid], "all", None, seed, mutants=True))
    assert len(verdicts) >= 3
    survived = [name for (_, name), fams in verdicts.items() if not fams]
    assert not survived, f"{sid}: mutants not rejected by any family: {survived}"


def test_lemma4_2_bound_attained_only_in_the_nonconvex_case():
    rec = _record("perfedavg.lemma4_2", "quadratic")
    nonconvex = _part(rec, "smoothness L_F = 4L + αρB (f nonconvex")
    convex = _part(rec, "smoothness L_F = 4L + αρB (f convex")
    assert nonconvex.claimed == "tight" and nonconvex.tight
    assert 1 - TIGHT_RTOL <= nonconvex.max_ratio <= 1 + RATIO_TOL
    # a(1 - alpha a)^2 <= a <= L for a in [0, L]: at most L/(4L) = 1/4, equal at alpha = 0
    assert abs(convex.max_ratio - 0.25) <= RATIO_TOL
    assert not convex.tight


def test_lemma4_2_alpha_above_1_over_L_is_not_applicable_not_a_failure():
    rec = _record("perfedavg.lemma4_2", "quadratic")
    b, part = rec.batch, _part(rec, "smoothness L_F = 4L + αρB (f nonconvex")
    over = b["alpha"] > 1 / b["L"]
    assert over.any()
    assert not part.sides.applicable[over].any()
    assert np.any(part.sides.lhs[over] > part.sides.rhs[over])  # the bound is violated there ...
    assert part.holds and part.failures.size == 0  # ... and not counted against the lemma
    m = Mutant("alpha <= 2/L", {"condition": lambda a, L: (a >= 0) & (a <= 2 / L)})
    assert not get("perfedavg.lemma4_2").run("quadratic", None, None, mutant=m, batch=b).holds


def test_lemma4_2_gradient_formula_matches_finite_differences_on_logistic():
    rec = _record("perfedavg.lemma4_2", "logistic")
    part = _part(rec, "gradient formula (5)")
    assert part.holds and part.max_ratio < 1e-2  # errors ~1e-10 against a 1e-6 tolerance


def test_lemma4_4_sharp_constant_16_on_shared_A_quadratics():
    rec = _record("perfedavg.lemma4_4", "quadratic")
    part = rec.result.parts[0]
    assert abs(part.max_ratio - 16 / 192) <= RATIO_TOL  # (1 + alpha L)^4 = 16 at a_1 = -L, alpha = 1/L
    over = rec.batch["alpha"] > 1 / rec.batch["L"]
    assert over.any() and not part.sides.applicable[over].any()


def test_lemma4_4_constants_are_sup_bounds_not_samples():
    rec = _record("perfedavg.lemma4_4", "logistic")
    for prefix in ("our gamma_G^2 bound", "our gamma_H^2 bound"):
        p = _part(rec, prefix)
        assert p.holds and p.max_ratio < 1  # the bound is above every sampled diversity
    assert "bound" in rec.result.parts[0].sides.constants["gamma_G^2"]


@pytest.mark.parametrize(
    "sid, name, changes, family",
    [
        (
            "gd.strongly_convex",
            "rate (1 - mu eta)^(2t)",
            {"rate": lambda mu, L, eta, t: (1 - mu * eta) ** (2 * t)},
            "quadratic",
        ),
        (
            "perfedavg.lemma4_4",
            "192 -> 16",
            {"gamma_F2": lambda B, a, h, g: 3 * B**2 * a**2 * h + 16 * g},
            "quadratic",
        ),
    ],
)
def test_documented_equivalent_mutants_hold_and_are_attained(sid, name, changes, family):
    st = get(sid)
    assert name in st.equivalent_mutants
    rec = _record(sid, family)
    res = st.run(family, None, None, mutant=Mutant(name, changes), batch=rec.batch)
    assert res.holds
    assert abs(res.max_ratio - 1) <= 1e-9  # the sharper statement is exact on these instances


def test_gd_step_above_1_over_L_is_not_applicable():
    for sid in ("gd.strongly_convex", "gd.nonconvex"):
        rec = _record(sid, "quadratic")
        over = rec.batch["eta"] > 1 / rec.batch["L"]
        p = rec.result.parts[0]
        assert over.any() and not p.sides.applicable[over].any()
        assert np.any(p.sides.lhs[over] > p.sides.rhs[over]) and p.holds


def test_gd_nonconvex_attained_and_meta_objective_instances_are_nonconvex():
    rec = _record("gd.nonconvex", "quadratic")
    for p in rec.result.parts:
        assert 1 - TIGHT_RTOL <= p.max_ratio <= 1 + RATIO_TOL
    b = _record("gd.nonconvex", "logistic").batch
    f = mo.Logistic(b["X"], b["y"])
    F = mo.meta_objective(f, b["alpha"])
    W = np.concatenate([b["x0"][None], 2 * np.random.default_rng(0).standard_normal((40,) + b["x0"].shape)])
    lowest = np.linalg.eigvalsh(F.hess(W))[..., 0].min(axis=0)
    meta = b["alpha"] > 0
    assert np.mean(lowest[meta] < 0) >= 0.5  # most meta-objectives have negative curvature somewhere
    xs = thesis_gd._newton_min(f, np.zeros_like(b["x0"]))
    assert np.max(np.linalg.norm(f.grad(xs), axis=-1)) < 1e-12


def test_fw_printed_range_fails_at_t0_on_the_finding_instance():
    # d = 1, B = [-1, 1] (R = 2), F = x^2/2 - 5x (L = 1), x^0 = -1: F(x^0) - F* = 10 > L R^2 = 4
    st = get("fw.convex")
    batch = {
        "A": np.ones((1, 1, 1)),
        "b": np.full((1, 1), 5.0),
        "L": np.ones(1),
        "h": np.ones((1, 1)),
        "x0": -np.ones((1, 1)),
    }
    assert st.run("quadratic", None, None, batch=batch, reading="x⁰ ∈ B, t ≥ 1").holds
    for reading in ("x⁰ ∈ B, t ≥ 0", None):  # the printed range of t alone, and the printed statement
        res = st.run("quadratic", None, None, batch=batch, reading=reading)
        assert not res.holds and abs(res.parts[0].max_ratio - 10 / 4) <= RATIO_TOL
    assert st.findings


def _fw_1d_exact(c, x0, steps):
    """Frank-Wolfe on B = [-1, 1] for F = (x - c)^2/2 in exact rationals: F(x^t) - F* for t = 1..steps."""
    F = lambda x: (x - c) ** 2 / 2  # noqa: E731
    Fstar = min(F(Fraction(v)) for v in (-1, 1, max(-1, min(1, c))))  # convex: the clipped minimiser
    x, out = Fraction(x0), []
    for t in range(steps):
        s = Fraction(-1) if x - c > 0 else Fraction(1)  # LMO of [-1, 1] at the gradient x - c
        x += Fraction(2, t + 2) * (s - x)
        out.append(F(x) - Fstar)
    return out


def test_fw_start_outside_B_fails_at_t1_on_the_finding_instance():
    # d = 1, B = [-1, 1] (R = 2), F = (x - 10)^2/2 (L = 1), x^0 = 20: x^1 = s^0 = -1, F(x^1) - F* = 20 > 8/3
    gaps = _fw_1d_exact(10, 20, 5)
    assert gaps[0] == 20 and gaps[0] / Fraction(8, 3) == Fraction(15, 2)
    assert all(g > Fraction(8, t + 3) for t, g in enumerate(gaps))  # fails at t = 1..5
    far = _fw_1d_exact(100, 200, 60)
    assert far[0] / Fraction(8, 3) == 75
    assert [t + 1 for t, g in enumerate(far) if g > Fraction(8, t + 3)] == list(range(1, 51))
    st = get("fw.convex")
    batch = {
        "A": np.ones((1, 1, 1)),
        "b": np.full((1, 1), 10.0),
        "L": np.ones(1),
        "h": np.ones((1, 1)),
        "x0": np.full((1, 1), 20.0),
    }
    res = st.run("quadratic", None, None, batch=batch, reading="x⁰ ∈ B, t ≥ 1")
    assert res.holds and res.parts[0].applicable == 0  # outside the reading (x^0 in B)
    for reading in ("t ≥ 1, x⁰ anywhere", None):  # the printed x^0 in R^d alone, and the printed statement
        res = st.run("quadratic", None, None, batch=batch, reading=reading)
        assert not res.holds and abs(res.parts[0].max_ratio - 7.5) <= RATIO_TOL
    assert any("x^0 = 20" in f for f in st.findings)


@pytest.mark.parametrize("seed", [0, 1])
def test_fw_draws_starts_outside_B_and_they_are_not_applicable(seed):
    rec = _record("fw.convex", "quadratic", seed)
    b = rec.batch
    outside = np.any(np.abs(b["x0"]) > b["h"], axis=-1)
    part = rec.readings["x⁰ ∈ B, t ≥ 1"][0].parts[0]
    assert outside.sum() >= 4 and not part.sides.applicable[outside].any()
    printed = rec.result.parts[0]  # the printed x^0 in R^d: applicable there, and fails on drawn instances
    assert printed.sides.applicable[outside].all() and np.any(
        printed.failures[:, None] == np.flatnonzero(outside)
    )


def test_fw_bound_reaches_three_quarters_at_t1_and_F_star_is_certified():
    rec = _record("fw.convex", "quadratic")
    rate, bracket = rec.readings["x⁰ ∈ B, t ≥ 1"][0].parts
    assert 0.74 <= rate.max_ratio < 0.75  # -> 3/4 as the minimiser approaches the vertex (eps = 1e-3)
    assert bracket.holds


def test_fw_nonconvex_box_min_against_multistart_lbfgsb():
    from scipy.optimize import minimize

    b = _record("fw.nonconvex", "quadratic").batch
    Fstar, xs = _thesis_fw.box_min(b["A"], b["b"], b["h"])
    grid = np.array(list(itertools.product((-0.8, 0.0, 0.8), repeat=3)))
    for i in range(b["A"].shape[0]):
        A, bb, h = b["A"][i], b["b"][i], b["h"][i]

        def f(x, A=A, bb=bb):
            return 0.5 * x @ A @ x - bb @ x

        def f_grad(x, A=A, bb=bb):
            return A @ x - bb

        best = min(
            minimize(
                f,
                g * h,
                jac=f_grad,
                method="L-BFGS-B",
                bounds=list(zip(-h, h, strict=True)),
                options={"ftol": 1e-15, "gtol": 1e-12},
            ).fun
            for g in grid
        )
        scale = abs(best) + b["L"][i] * np.sum(h**2)
        assert Fstar[i] <= best + 1e-12 * scale  # nothing the local solver finds is lower ...
        assert best - Fstar[i] <= 1e-7 * scale  # ... and it finds the same minimum (its own tolerance)
        assert np.all(np.abs(xs[i]) <= h) and abs(f(xs[i]) - Fstar[i]) <= 1e-12 * scale


def test_fw_nonconvex_gap_is_the_max_over_vertices():
    b = _record("fw.nonconvex", "quadratic").batch
    gaps, _ = _thesis_fw.fw_gaps(b["A"], b["b"], b["h"], b["x0"])
    V = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
    g0 = np.einsum("tij,tj->ti", b["A"], b["x0"]) - b["b"]
    brute = np.max(np.einsum("ti,tvi->tv", g0, b["x0"][:, None, :] - V[None] * b["h"][:, None, :]), axis=1)
    assert np.allclose(gaps[0], brute, rtol=1e-12, atol=1e-12 * np.max(np.abs(brute)))


def test_fw_nonconvex_finding_start_outside_B():
    # d = 1, B = [-1, 1], F = (x - 10)^2/2, x^0 = 19: F(x^0) = F*, bound 4/sqrt(T); exact rationals
    x, gaps = Fraction(19), []
    for t in range(6):
        g = x - 10
        s = Fraction(-1) if g > 0 else Fraction(1)
        gaps.append(g * (x - s))
        x += Fraction(2, t + 2) * (s - x)
    assert gaps[:5] == [180, 22, Fraction(58, 9), Fraction(28, 9), Fraction(46, 25)]
    ratios = [float(min(gaps[:T])) / (4 / np.sqrt(T)) for T in range(1, 7)]
    assert all(r > 1 for r in ratios[:5]) and ratios[5] < 1
    assert ratios[0] == 45.0 and abs(ratios[4] - 1.0286) < 1e-4
    st = get("fw.nonconvex")
    batch = {
        "A": np.ones((1, 1, 1)),
        "b": np.full((1, 1), 10.0),
        "L": np.ones(1),
        "h": np.ones((1, 1)),
        "x0": np.full((1, 1), 19.0),
    }
    assert st.run(
        "quadratic", None, None, batch=batch, reading="x⁰ ∈ B"
    ).holds  # x^0 outside B: not applicable
    res = st.run("quadratic", None, None, batch=batch, reading=None)  # as printed: x^0 in R^d
    assert not res.holds and abs(res.parts[0].max_ratio - 45.0) <= RATIO_TOL
    assert st.findings


def test_fw_nonconvex_instances_are_nonconvex_and_start_outside():
    rec = _record("fw.nonconvex", "quadratic")
    b = rec.batch
    lo = np.linalg.eigvalsh(b["A"])[:, 0]
    assert np.sum(lo < -1e-9) >= len(lo) // 2 and np.any(np.isclose(lo, -b["L"]))
    outside = np.any(np.abs(b["x0"]) > b["h"], axis=-1)
    assert outside.sum() >= 4
    for p, q in zip(rec.readings["x⁰ ∈ B"][0].parts, rec.result.parts, strict=True):  # reading, printed
        assert not p.sides.applicable[outside].any() and q.sides.applicable[outside].all()
        assert np.any(q.ratio[outside] > 1) and q.failures.size
