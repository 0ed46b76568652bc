"""pFedMe's recorded minimal counterexamples (``Statement.counterexamples``, built in
``moreau.analysis.pfedme.minimal_counterexamples``): each fails the printed claim with finite sides, on the
part and with the numbers its comment derives, at the size (d, N) it says; the reading each statement
holds under holds on it too."""

from fractions import Fraction

import numpy as np
import pytest

from moreau.analysis.engine.report import minimal_text
from moreau.analysis.pfedme import cor, thm1, thm2
from moreau.analysis.pfedme.thm1.text_delta import minimal_instance

STATEMENTS = {st.id: st for st in (*thm1.STATEMENTS, *thm2.STATEMENTS, *cor.STATEMENTS)}

#: (statement, family) -> (the failing part's name starts with, (d, N), lhs, rhs): the comment's numbers
_h = 5 / 24  # thm2: the outer-piece curvature lam L/(lam + L), L = 1/4, lam = 5/4
_q = 1 - 1e-3 * _h  # thm2: 1 - eta h
EXPECTED = {
    ("pfedme.thm1", "quadratic"): ("(a) linear rate", (1, 1), 1 / 6216, -2 * np.log1p(-1 / 18648)),
    ("pfedme.thm1", "logistic"): ("(a) linear rate", (1, 1), 1 / 6216, -2 * np.log1p(-1 / 18648)),
    ("pfedme.thm1b", "quadratic"): (
        "(b) fresh two-point inner errors",
        (1, 1),
        float(minimal_instance(Fraction(1, 10))["b"]),
        1e-3,
    ),
    ("pfedme.thm2", "quadratic"): (
        "(a) identical clients, delta = 0",
        (1, 1),
        _h**2 * (1 - _q**3000) / (1500 * (1 - _q**2)),
        75 * 1.25**3 * _h / 1500,
    ),
    ("pfedme.cor1", "quadratic"): ("(i) beta = sqrt(N)/T", (None, 1), 0.0, -1.0),
    ("pfedme.cor2", "quadratic"): (
        "beta = N^(1/2) R^(1/4), T = (NR)^2: Theorem 2(a) third term, sigma_F2 part",
        (None, 1),
        -5 / 3,
        -2.0,
    ),
}


def _size(sid, fam, one):
    """(d, N) of the recorded instance (d None where no objective is evaluated: the corollaries)."""
    if sid == "pfedme.thm1" and fam == "logistic":
        return one["Xl"].shape[-1], int(one["N"][0])
    if sid in ("pfedme.thm1", "pfedme.thm1b"):
        return one["A"].shape[-1], one["A"].shape[1]
    if sid == "pfedme.thm2":
        sizes = {one[k].shape[1:] for k in ("s", "sp_s", "sp_c", "sd_u")}  # every client set of the instance
        assert len(sizes) == 1
        N, d = sizes.pop()
        return d, N
    assert one["T"][0] == 1 and one["R"][0] == 1
    return None, int(one["N"][0])


def test_every_handled_statement_records_one_per_failing_family():
    assert {(sid, fam) for sid, st in STATEMENTS.items() for fam in st.counterexamples} == set(EXPECTED)
    for st in STATEMENTS.values():
        assert st.expect == "fails" and set(st.counterexamples) <= set(st.families)


@pytest.mark.parametrize("sid, fam", sorted(EXPECTED))
def test_the_recorded_instance_fails_the_printed_claim(sid, fam):
    st = STATEMENTS[sid]
    one = st.counterexample(fam)
    assert all(np.shape(v)[0] == 1 for v in one.values())  # one instance
    name, size, lhs, rhs = EXPECTED[(sid, fam)]
    assert _size(sid, fam, one) == size
    res = st.run(fam, None, None, batch=one, reading=None)
    assert not res.holds
    failing = [p for p in res.parts if p.failures.size and p.sides.role == "theorem"]
    assert failing and failing[0].name.startswith(name)  # the part the report line shows
    s = failing[0].sides
    assert np.isfinite(s.lhs[0]) and np.isfinite(s.rhs[0]) and s.lhs[0] > s.rhs[0]
    if s.claimed != "rate":  # a bound: positive right side
        assert s.rhs[0] > 0
    np.testing.assert_allclose([s.lhs[0], s.rhs[0]], [lhs, rhs], rtol=1e-6, atol=1e-12)
    word = "exponent " if s.claimed == "rate" else "lhs "  # a rate: exponents, not bounds
    assert minimal_text(one, res).startswith(f"minimal counterexample [{fam}]: {word}")


@pytest.mark.parametrize("sid, fam", sorted(EXPECTED))
def test_the_reading_that_holds_holds_on_it(sid, fam):
    st = STATEMENTS[sid]
    for r in st.readings:
        if r.expect == "holds":
            assert st.run(fam, None, None, batch=st.counterexample(fam), reading=r.name).holds, r.name


def test_the_builders_return_fresh_batches():
    one = thm2.STATEMENTS[0].counterexamples["quadratic"]
    a, b = one(), one()
    a["lam"][0] = 99.0
    assert b["lam"][0] == 1.25 and one()["lam"][0] == 1.25
