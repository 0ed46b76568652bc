"""The rounding floor (issue: a user's geometric rate evaluated until q^t = 1e-30): a true statement
whose float left side stops at rounding level is "inconclusive at the rounding floor", never FAILS;
a statement evaluated again in higher precision (Statement.precise, mpmath) is decided there; a real
failure above the floor stays a failure."""

from __future__ import annotations

import mpmath as mp
import numpy as np

from moreau.analysis.api import Statement, check, sweep_sides
from moreau.analysis.engine.verdict import FAILS, HOLDS, UNDECIDED

T = 80  # iterations: q^t reaches 1e-30 and below


def _instances(family, trials, rng):
    n = trials or 16
    return {
        "a": rng.uniform(0.5, 2.0, n),
        "eta": rng.uniform(0.2, 0.45, n),
        "w0": rng.uniform(1.0, 10.0, n),
        "wstar": rng.uniform(1.0, 3.0, n),
    }


def _gd_float(batch, claim):
    """GD on f(w) = a (w - w*)^2 / 2 from w0, in float64: |w_t - w*| against q^t |w0 - w*|, q = 1 - eta a
    (exact: w_t - w* = q^t (w0 - w*)), the rate claimed with the factor claim["c"]."""
    a, eta, w0, ws = batch["a"], batch["eta"], batch["w0"], batch["wstar"]
    w, dist = w0.copy(), []
    for _ in range(T + 1):
        dist.append(np.abs(w - ws))
        w = w - eta * a * (w - ws)
    t = np.arange(T + 1)[:, None]
    rhs = claim["c"] * np.abs(1 - eta * a)[None] ** t * np.abs(w0 - ws)[None]
    return {"|w_t - w*| <= c q^t |w0 - w*|": sweep_sides(np.array(dist), rhs)}


def _gd_mp(batch, claim):
    """The same in 60-digit arithmetic (mpmath): the iterates' distances are no longer stuck at 1e-16."""
    mp.mp.dps = 60
    lhs, rhs = [], []
    for a, eta, w0, ws in zip(batch["a"], batch["eta"], batch["w0"], batch["wstar"], strict=True):
        a, eta, w, ws, c = (mp.mpf(float(x)) for x in (a, eta, w0, ws, claim["c"]))
        d0, q, worst = abs(w - ws), abs(1 - eta * a), None
        for t in range(T + 1):
            r = (abs(w - ws), c * q**t * d0)
            if worst is None or r[0] / r[1] > worst[0] / worst[1]:
                worst = r
            w = w - eta * a * (w - ws)
        lhs.append(float(worst[0]))
        rhs.append(float(worst[1]))
    from moreau.analysis.api import Sides

    return {"|w_t - w*| <= c q^t |w0 - w*|": Sides(np.array(lhs), np.array(rhs), "upper")}


def _statement(c, precise=None, sid="toy.gd_rate"):
    return Statement(
        id=sid,
        source="toy",
        paper="none.md",
        latex="",
        text="GD on a quadratic: linear rate",
        assumptions=("eta a < 1",),
        families={"quadratic": ("1-D",)},
        claimed="upper",
        instances=_instances,
        evaluate=_gd_float,
        claim={"c": c},
        precise=precise,
    )


def test_a_true_rate_at_the_rounding_floor_is_inconclusive_not_a_failure():
    v = check(_statement(1.0))
    assert v["printed"]["verdict"] == UNDECIDED and "rounding floor" in v["printed"]["reason"]


def test_higher_precision_decides_the_floor_instances():
    assert check(_statement(1.0, precise=_gd_mp))["printed"]["verdict"] == HOLDS
    st = _statement(1.0, precise=_gd_mp)
    (p,) = st.run("quadratic", None, np.random.default_rng(0)).parts
    assert p.holds and p.at_floor == 0 and p.replayed > 0  # every floor instance decided in 60 digits
    # a constant just below the truth fails above the floor already at t = 0 (|w0 - w*| > 0.999 |w0 - w*|)
    st = _statement(0.999, precise=_gd_mp, sid="toy.gd_rate_low")
    (p,) = st.run("quadratic", None, np.random.default_rng(0)).parts
    assert p.failures.size == p.instances and p.replayed == 0
    assert check(st)["printed"]["verdict"] == FAILS


def test_the_precise_evaluation_can_also_find_a_failure_the_floor_hid():
    """A rate false only by a factor 1 + 1e-14 hides below the float floor; 60 digits expose it."""

    def mp_too_strict(batch, claim):
        sides = _gd_mp(batch, claim)
        ((name, s),) = sides.items()
        s.rhs = s.rhs * (1 - 1e-9)  # the 'paper's' constant, a hair too small, visible only in high precision
        return {name: s}

    st = _statement(1.0, precise=mp_too_strict, sid="toy.gd_rate_hair")
    (p,) = st.run("quadratic", None, np.random.default_rng(0)).parts
    assert p.replayed > 0 and not p.holds and p.failures.size


def test_a_failure_above_the_floor_is_not_hidden_by_the_floor():
    # c = 1/2: fails at t = 0 (|w0 - w*| > |w0 - w*|/2), far above the floor; the worst ratio of the sweep is
    # at the floor (1e-16 against 1e-30), but the failure reported is the one above it
    st = _statement(0.5)
    res = st.run("quadratic", None, np.random.default_rng(1))
    (p,) = res.parts
    assert p.failures.size == res.instances and p.at_floor == 0
    assert np.all(p.ratio[p.failures] < 10)  # the t = 0 failure (ratio 2), not a floor ratio of 1e14
    assert check(st)["printed"]["verdict"] == FAILS
