"""Power of the rate parts (issue 27, item 6): the three mutants the audit found accepted are rejected,
rates.detectable_change agrees with the judge on synthetic intervals, and every rate part's JSON
record carries its detectable change."""

from __future__ import annotations

import numpy as np
import pytest

from moreau.analysis.engine.judge import judge, rate_sides
from moreau.analysis.engine.rates import detectable_change
from moreau.analysis.engine.records import _part_json, identically_zero
from moreau.analysis.engine.registry import get

NEW_MUTANTS = (
    ("fedprox.cor1", "lam^0.1 factor in (13): kappa_g log(1/eps) lam^0.1"),
    ("perfedavg.thm4_5", "Corollary 4.6: exponent 1.1 (O(eps^1.1))"),
    ("pfedme.thm1", "mini-batch exponent -1.1 in |D|"),
)


@pytest.mark.parametrize(("sid", "name"), NEW_MUTANTS)
def test_new_power_mutant_rejected(sid, name):
    st = get(sid)
    (m,) = [m for m in st.mutants if m.name == name]
    res = st.run("quadratic", None, np.random.default_rng(0), mutant=m)
    assert not res.holds, f"{sid}: mutant {name!r} survives"


@pytest.mark.parametrize("kind", ["equal", "at most", "at least"])
def test_detectable_change_matches_the_judge(kind):
    """Synthetic intervals: a claim moved by d + 1e-6 (in the direction the kind sees) is rejected,
    by d - 1e-6 it is not (the judge's own rule, rate_sides/judge, decides)."""
    rng = np.random.default_rng(1)
    slope = rng.normal(-1.0, 0.3, 50)
    half = rng.uniform(0.0, 0.2, 50)
    lo, hi, e, atol = slope - half, slope + half, -1.0, 0.03
    d = detectable_change(lo, hi, e, kind, atol)
    signs = {"equal": (1, -1), "at most": (-1,), "at least": (1,)}[kind]
    for i in np.flatnonzero(d > 1e-5):
        for sg in signs:
            moved_far = judge(
                "p", rate_sides(slope[i], (lo[i], hi[i]), e + sg * (d[i] + 1e-6), kind=kind, atol=atol)
            )
            assert not moved_far.holds
        near = [
            judge("p", rate_sides(slope[i], (lo[i], hi[i]), e + sg * (d[i] - 1e-6), kind=kind, atol=atol))
            for sg in signs
        ]
        assert any(r.holds for r in near)  # the nearest side (equal) or the only side is not rejected below d
    # the closed form, by hand, for one interval
    expect = {"equal": max(0.1, 0.05) + 0.03, "at most": 0.05 + 0.03, "at least": 0.1 + 0.03}[kind]
    assert detectable_change(-1.05, -0.9, -1.0, kind, 0.03) == pytest.approx(expect)


@pytest.mark.parametrize("kind", ["equal", "at most", "at least"])
@pytest.mark.parametrize("e", [0.5, 1.6])
def test_detectable_change_of_a_rejected_claim_is_minus_its_distance(kind, e):
    """A claim outside [lo - atol, hi + atol] (on the side its kind sees): d < 0, and -d is the distance to
    the nearest accepted claim (the judge accepts e moved towards the interval by -d + 1e-6, not by
    -d - 1e-6)."""
    lo, hi, atol = 0.9, 1.1, 0.01
    if (kind, e) in (("at most", 1.6), ("at least", 0.5)):  # the side this kind cannot reject
        return
    d = float(detectable_change(lo, hi, e, kind, atol))
    assert d == pytest.approx(-(lo - atol - e) if e < lo else -(e - hi - atol))
    toward = 1.0 if e < lo else -1.0
    for step, holds in ((-d + 1e-6, True), (-d - 1e-6, False)):
        r = judge("p", rate_sides(1.0, (lo, hi), e + toward * step, kind=kind, atol=atol))
        assert r.holds is holds


def test_detectable_change_bad_input():
    with pytest.raises(ValueError, match="kind"):
        detectable_change(0.0, 1.0, 0.5, "about", 0.0)
    with pytest.raises(ValueError, match="atol"):
        detectable_change(0.0, 1.0, 0.5, "equal", -1.0)


@pytest.mark.parametrize("sid", ["fedprox.cor1", "perfedavg.thm4_5", "perfedavg.lemma4_3"])
def test_rate_parts_carry_detectable_change(sid):
    st = get(sid)
    res = st.run("quadratic", None, np.random.default_rng(0))
    for p in res.parts:
        pj = _part_json(p)
        if p.claimed == "rate":
            assert "detectable_change" in pj
            if p.applicable:
                assert pj["detectable_change"] is not None and np.isfinite(pj["detectable_change"])
        elif p.claimed in ("upper", "tight"):
            assert pj["identically_zero"] == identically_zero(p)


def test_identically_zero_bias_on_quadratics():
    """perfedavg.lemma4_3's bias is 0 exactly on quadratics (the estimate is unbiased there): flagged, not evidence."""
    st = get("perfedavg.lemma4_3")
    res = st.run("quadratic", None, np.random.default_rng(0))
    bias = next(p for p in res.parts if p.name.startswith("bias"))
    assert np.all(bias.sides.lhs[bias.sides.applicable] == 0)
    assert _part_json(bias)["identically_zero"] is True
    assert not any(_part_json(p).get("identically_zero") for p in res.parts if not p.name.startswith("bias"))
