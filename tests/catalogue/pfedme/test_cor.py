"""pFedMe, Corollaries 1 and 2: the exponents after substituting the corollaries' beta, derived here
independently (sympy powsimp of the hand-substituted monomials, exact rationals at two points), the
findings' minimal instances by plain arithmetic, the statements on their default run and every mutant
rejected: the printed claims fail, the reading 'the exponents the substitution gives' holds."""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from moreau.analysis.engine import runner
from moreau.analysis.pfedme import cor

SUBST = "the exponents the substitution gives"
T, R, N = sp.symbols("T R N", positive=True)
s2, d2, lam, kap, muF, Dl = sp.symbols("sigma2 delta2 lam kappa mu_F Delta", positive=True)


def _powers(expr):
    """Exponents of T, R, N of a monomial (sympy's own factorisation, not a log-derivative)."""
    d = sp.powsimp(sp.expand_power_base(sp.simplify(expr), force=True), force=True).as_powers_dict()
    return tuple(sp.nsimplify(d.get(x, 0)) for x in (T, R, N))


def _thm1_third(beta):  # printed: (R s2 + d2 lam^2) kappa/(R (T beta mu_F)^2), split in its two parts
    return (R * s2 * kap / (R * (T * beta * muF) ** 2), d2 * lam**2 * kap / (R * (T * beta * muF) ** 2))


def _thm2(beta, TT):
    def third(a):
        return (
            Dl ** sp.Rational(2, 3)
            * a ** sp.Rational(1, 3)
            / (beta ** sp.Rational(4, 3) * R ** sp.Rational(1, 3) * TT ** sp.Rational(2, 3))
        )

    return 75 * lam**3 * Dl / TT, third(R * s2), third(lam**2 * d2)


def test_corollary_1_exponents_by_hand():
    sig, dlt = _thm1_third(sp.sqrt(N) / T)  # (i)
    assert _powers(sig) == (0, 0, -1) and _powers(dlt) == (0, -1, -1)
    sig, dlt = _thm1_third(N * sp.sqrt(R))  # (ii)
    assert _powers(sig) == (-2, -1, -2) and _powers(dlt) == (-2, -2, -2)
    # the beta that would give the printed quadratic speedup for the sigma part: N R
    assert _powers(_thm1_third(N * R)[0]) == (-2, -2, -2)
    (st, _) = cor.STATEMENTS
    claim = dict(cor.CLAIM1, **st.reading(SUBST).changes)
    for key, want in (
        ("i_sigma", (0, 0, -1)),
        ("i_delta", (0, -1, -1)),
        ("ii_sigma", (-2, -1, -2)),
        ("ii_delta", (-2, -2, -2)),
    ):
        assert tuple(claim[key]) == want
    # as printed: linear speedup (i), quadratic speedup (ii)
    printed = [tuple(cor.CLAIM1[k]) for k in ("i_sigma", "i_delta", "ii_sigma", "ii_delta")]
    assert printed == [(-1,) * 3] * 2 + [(-2,) * 3] * 2


def test_corollary_2_exponents_by_hand():
    TT = (N * R) ** 2
    first, sig, dlt = _thm2(sp.sqrt(N) * R ** sp.Rational(1, 4), TT)
    assert _powers(first)[1:] == (-2, -2) and _powers(dlt)[1:] == (-2, -2)
    assert _powers(sig)[1:] == (sp.Rational(-5, 3), -2)
    # printed (TRN)^(-2/3) with T = (NR)^2 is (NR)^-2; beta = (NR)^(1/2) would give it for the sigma part
    assert _powers((TT * R * N) ** sp.Rational(-2, 3))[1:] == (-2, -2)
    assert _powers(_thm2(sp.sqrt(N * R), TT)[1])[1:] == (-2, -2)
    assert tuple(cor.STATEMENTS[1].reading(SUBST).changes["sigma"]) == (-5 / 3, -2.0)
    assert tuple(cor.CLAIM2["sigma"]) == (-2.0, -2.0)  # as printed


def test_module_exponents_agree_with_exact_rationals():
    """The module's sympy exponents against exact ratios of the hand-substituted term at rational points."""
    ex = cor.exponents("thm1_sigma", cor.CLAIM1, "ii")
    # sigma part with beta = N sqrt(R): R s2 kappa/(R (T beta mu_F)^2) = 1/(T^2 N^2 R) (constants 1)
    term = lambda t, r, n: Fraction(1, t**2 * n**2 * r)  # noqa: E731
    base = term(2, 4, 3)
    for k, (t, r, n) in zip("TRN", ((4, 4, 3), (2, 8, 3), (2, 4, 6)), strict=True):  # one variable doubled
        ratio = term(t, r, n) / base
        assert ratio == Fraction(2) ** int(round(ex[k]))
    # the module's numpy term at (T, R, N) = (2, 4, 3), beta from the claim: 1/(2^2 3^2 4)
    c = {"s2": 1.0, "d2": 0.0, "kappa": 1.0, "muF": 1.0, "lam": 1.0, "Delta": 1.0, "cb": 1.0, "cT": 1.0}
    assert cor.terms("thm1_sigma", 2.0, 4.0, 3.0, cor.CLAIM1["beta_ii"](2.0, 4.0, 3.0), c) == pytest.approx(
        1 / 144
    )
    ex2 = cor.exponents("thm2_sigma", cor.CLAIM2, "cor2")
    assert ex2["R"] == pytest.approx(-5 / 3, abs=1e-12) and ex2["N"] == pytest.approx(-2, abs=1e-12)


def test_finding_minimal_instances_by_arithmetic():
    # Corollary 1 (ii): T = 2, N = 1, R = 4, beta = N sqrt(R) = 2; third term's sigma part 1/(T beta)^2
    Tn, Nn, Rn = 2, 1, 4
    beta = Nn * Fraction(2)  # sqrt(4)
    assert Fraction(1) / (Tn * beta) ** 2 == Fraction(1, 16)
    assert Fraction(1, (Tn * Rn * Nn) ** 2) == Fraction(1, 64)
    # doubling R halves it: R = 16 (sqrt exact): beta = 4 -> 1/64 (R x4 -> term /4, printed /16)
    assert Fraction(1) / (Tn * 4) ** 2 == Fraction(1, 64)
    # Corollary 1 (i): N = 4, T = 2, beta = sqrt(N)/T = 1: 1/(T beta)^2 = 1/4 = 1/N for every R
    assert Fraction(1) / (2 * 1) ** 2 == Fraction(1, 4)
    # Corollary 2: N = 1, R = 8, T = 64, beta^(4/3) = 8^(1/3) = 2: sigma part R^(1/3)/(beta^(4/3) R^(1/3) T^(2/3))
    assert Fraction(2) / (2 * 2 * 16) == Fraction(1, 32)  # 8^(1/3) = 2, 64^(2/3) = 16
    assert 512 ** (-2 / 3) == pytest.approx(1 / 64)
    # R = 64, T = 4096: beta^(4/3) = 64^(1/3) = 4; 4/(4 * 4 * 256) = 1/1024 against (TRN)^(-2/3) = 2^-12
    assert Fraction(4) / (4 * 4 * 256) == Fraction(1, 1024)
    assert (4096 * 64) ** (-2 / 3) == pytest.approx(1 / 4096)
    # the same numbers from the module's numpy terms (beta, T from the claim, all constants 1)
    c = {"s2": 1.0, "d2": 0.0, "kappa": 1.0, "muF": 1.0, "lam": 1.0, "Delta": 1.0, "cb": 1.0, "cT": 1.0}
    assert cor.terms("thm1_sigma", 2.0, 4.0, 1.0, cor.CLAIM1["beta_ii"](2.0, 4.0, 1.0), c) == pytest.approx(
        1 / 16
    )
    for Rn, want in ((8.0, 1 / 32), (64.0, 1 / 1024)):
        Tn = cor.CLAIM2["T"](Rn, 1.0)
        assert cor.terms("thm2_sigma", Tn, Rn, 1.0, cor.CLAIM2["beta"](Tn, Rn, 1.0), c) == pytest.approx(want)


@pytest.mark.parametrize("st", cor.STATEMENTS, ids=lambda st: st.id)
def test_printed_fails_reading_holds_and_every_mutant_rejected(st):
    # run through the statement itself (not the registry: other checkers may be mid-edit)
    rng = runner.rng_for(0, st.id, "quadratic")
    batch = st.instances("quadratic", None, rng)
    res = st.run("quadratic", None, rng, batch=batch, reading=SUBST)
    assert res.holds and all(p.applicable for p in res.parts)
    assert st.expect == "fails" and not st.run("quadratic", None, rng, batch=batch, reading=None).holds
    for r in st.readings:  # each printed rate alone fails
        assert st.run("quadratic", None, rng, batch=batch, reading=r.name).holds is (r.expect == "holds"), (
            r.name
        )
    survivors = [m.name for m in st.mutants if st.run("quadratic", None, rng, mutant=m, batch=batch).holds]
    assert not survivors
    assert st.findings


def test_slopes_follow_a_mutated_beta():
    """A changed beta changes the numpy slope and sympy's exponent alike (the exact part stays at rounding)."""
    batch = cor.instances_cor1("quadratic", 12, np.random.default_rng(5))
    claim = dict(cor.CLAIM1, beta_ii=lambda T, R, N: N * R)
    sides = cor.evaluate_cor1(batch, claim)
    exact = sides["numpy slope of each substituted term = sympy's exponent"]
    assert np.all(exact.lhs <= 1e-6)
    part = [s for k, s in sides.items() if k.startswith("(ii)") and "sigma" in k][0]
    r = batch["var"][~batch["massive"]]
    assert np.allclose(part.lhs[~batch["massive"]], np.array([-2.0, -2.0, -2.0])[r], atol=1e-6)
