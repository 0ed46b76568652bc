"""pFedMe, Theorem 1 under the text's first-moment delta: the exact mean/covariance recursion of the
round with fresh two-point inner errors against all error sequences enumerated through a plain loop,
the closed-form limits against the recursion at large T, the minimal instance re-derived in exact
rationals (sympy: stationary Lyapunov equations of the averaged chain), the parts on the default
family (the text's delta rejected, Lemma 1's holding) and bad input."""

from fractions import Fraction
from itertools import pairwise, product

import numpy as np
import pytest
import sympy as sp

import moreau as mo
from moreau.analysis.engine.instances import orthogonal
from moreau.analysis.pfedme import thm1
from moreau.analysis.pfedme.thm1.text_delta import (
    PART_A,
    PART_B,
    average_factor,
    minimal_instance,
    recursion,
    two_point_limits,
)
from moreau.fl import fedprox_optimum


def _clients(rng, N, d, ident):
    a = rng.uniform(0.3, 3.0, (N, d))
    U = orthogonal(rng, N, d)
    A = (U * a[..., None, :]) @ np.swapaxes(U, -1, -2)
    A, b = (A + np.swapaxes(A, -1, -2)) / 2, rng.standard_normal((N, d))
    if ident:
        A[:], b[:] = A[0], b[0]
    return A, b


def _enumerate(A, b, lam, eta, beta, R, u, delta1, p, w0, T):
    """Algorithm 1 written out (prox by a linear solve, theta~ = theta^ + e), every error sequence with its
    probability: E[F(w_bar_T) - F*] (F by moreau.envelope, w* by fedprox_optimum) and E (1/N) sum |theta~_i(w_T) - w*|^2
    (a fresh error in the personalised model too)."""
    N, d = b.shape
    q = mo.Quadratic(A[None], b[None])
    w_star = fedprox_optimum(q, np.array([lam]))[0][0]
    env = mo.envelope(q, np.array([lam])[:, None])
    F = lambda w: env.value(np.broadcast_to(w, (1, N, d))).mean()  # noqa: E731
    mu = np.min(np.linalg.eigvalsh(A))
    rho = 1 - eta * lam * mu / (lam + mu) / 2
    gap = b_lhs = 0.0
    for seq in product((0, 1), repeat=T * N * R):
        prob = np.prod([p if s else 1 - p for s in seq])
        jumps = iter(seq)
        w, ws = np.asarray(w0, float), []
        for _t in range(T):
            ws.append(w)
            locs = []
            for i in range(N):
                v = w.copy()
                for _ in range(R):
                    theta = (
                        np.linalg.solve(A[i] + lam * np.eye(d), b[i] + lam * v) + next(jumps) * delta1 / p * u
                    )
                    v = v - eta * lam * (v - theta)
                locs.append(v)
            w = (1 - beta) * w + beta * np.mean(locs, axis=0)
        wts = rho ** -(np.arange(T) + 1.0)
        wbar = np.sum(wts[:, None] * np.array(ws), axis=0) / wts.sum()
        gap += prob * (F(wbar) - F(w_star))
        th = [np.linalg.solve(A[i] + lam * np.eye(d), b[i] + lam * w) - w_star for i in range(N)]
        b_lhs += prob * np.mean(
            [(1 - p) * th_i @ th_i + p * np.sum((th_i + delta1 / p * u) ** 2) for th_i in th]
        )
    return gap, b_lhs


@pytest.mark.parametrize(
    "N, R, T, ident", [(1, 1, 6, True), (2, 2, 2, False), (2, 1, 4, False), (1, 3, 3, True)]
)
def test_recursion_equals_every_error_sequence_enumerated(N, R, T, ident):
    rng = np.random.default_rng(N * 10 + R * 3 + T)
    A, b = _clients(rng, N, 2, ident)
    u = rng.standard_normal(2)
    u /= np.linalg.norm(u)
    args = (A, b, 1.3, 0.2, 1.5, R, u, 0.3, 0.2, rng.standard_normal(2), T)
    np.testing.assert_allclose(recursion(*args), _enumerate(*args), rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("ident, R, beta", [(True, 3, 1.5), (False, 1, 2.0), (True, 1, 1.0), (True, 2, 0.7)])
def test_closed_form_limits_equal_the_recursion_at_large_T(ident, R, beta):
    rng = np.random.default_rng(R + 5 * ident)
    A, b = _clients(rng, 3, 2, ident)
    lam, eta, p, d1 = 1.3, 0.1, 0.05, 0.3
    mu = np.min(np.linalg.eigvalsh(A))
    mu_F = lam * mu / (lam + mu)
    for u in (rng.standard_normal(2), np.linalg.eigh(A.mean(axis=0))[1][:, 0]):
        u = u / np.linalg.norm(u)
        gap, bl = two_point_limits(
            A[None],
            np.array([lam]),
            np.array([mu_F]),
            np.array([eta]),
            np.array([beta]),
            np.array([R]),
            u[None],
            np.array([d1]),
            np.array([p]),
        )
        rec = recursion(A, b, lam, eta, beta, R, u, d1, p, rng.standard_normal(2), 4000)  # rho^4000 < 1e-15
        np.testing.assert_allclose(gap[0], rec[0], rtol=1e-9)
        if ident:
            np.testing.assert_allclose(bl[0], rec[1], rtol=1e-9)


def _sympy_limits(p, d1):
    """The minimal instance from scratch: fixed point of the biased round and the stationary covariance of
    (x, x_bar) for x' = q x + xi, x_bar' = rho x_bar + (1 - rho) x (the weights' limit), solved by sympy."""
    lam, a, beta, eta = sp.Integer(1), sp.Integer(1), 1, sp.Rational(1, 1554)
    P = 1 / (a + lam)
    h = lam * (1 - lam * P)
    mu_F = lam * a / (lam + a)
    m = sp.symbols("m")
    m_inf = sp.solve(sp.Eq(m, m - eta * lam * (m - (P * lam * m + d1))), m)[0]  # w* = 0; mean error d1
    q, rho = 1 - beta * eta * h, 1 - eta * mu_F / 2
    W = (beta * eta * lam) ** 2 * d1**2 * (1 / p - 1)
    kxx, kxb, kbb = sp.symbols("kxx kxb kbb")
    sol = sp.solve(
        [
            sp.Eq(kxx, q**2 * kxx + W),
            sp.Eq(kxb, q * rho * kxb + q * (1 - rho) * kxx),
            sp.Eq(kbb, rho**2 * kbb + 2 * rho * (1 - rho) * kxb + (1 - rho) ** 2 * kxx),
        ],
        [kxx, kxb, kbb],
    )
    gap = h / 2 * (m_inf**2 + sol[kbb])
    th = lam * P * m_inf  # E theta^(w_T) - w*
    b = th**2 + (lam * P) ** 2 * sol[kxx] + 2 * th * d1 + d1**2 / p
    return gap, b, mu_F, lam


def test_minimal_instance_in_exact_rationals():
    p, d1 = sp.Rational(1, 100000), sp.Rational(1, 100)
    gap, b, mu_F, lam = _sympy_limits(p, d1)
    m = minimal_instance(Fraction(1, 100000), Fraction(1, 100))
    assert sp.Rational(m["gap"].numerator, m["gap"].denominator) == gap
    assert sp.Rational(m["b"].numerator, m["b"].denominator) == b
    # the finding's numbers, from the sympy derivation
    assert gap / (lam**2 * d1**2 / mu_F) == sp.Rational(2291588602231, 720282533795)  # 3.18
    assert gap / (lam**2 * (d1**2 / p) / mu_F) < sp.Rational(1, 30000)  # 3.2e-5
    gap10, b10, _, _ = _sympy_limits(sp.Rational(1, 10), d1)
    bound = lambda dl2: 2 * lam**2 * dl2 / mu_F**2 + 2 * dl2  # noqa: E731
    assert sp.Rational(13, 10) < b10 / bound(d1**2) < sp.Rational(131, 100)
    assert sp.Rational(13, 100) < b10 / bound(d1**2 * 10) < sp.Rational(14, 100)
    assert 10000 < b / bound(d1**2) < 10003 and b / bound(d1**2 / p) < sp.Rational(11, 100)


def test_first_moment_ratio_unbounded_second_moment_ratio_at_most_half():
    ps = [Fraction(1, 10**k) for k in range(13)]
    text = [minimal_instance(p)["ratio_text"] for p in ps]
    lemma = [minimal_instance(p)["ratio_lemma1"] for p in ps]
    assert all(x < y for x, y in pairwise(text)) and text[-1] > 10**6 / 2
    assert max(lemma) == Fraction(1, 2) == lemma[0] and all(x <= Fraction(1, 2) for x in lemma)
    # rg from the closed form = the sympy stationary value (weights rho^(T-1-t) keep g = 1/3 roughly)
    g = average_factor(np.array([1 / 6216]), np.array([1 / 3108]))
    np.testing.assert_allclose(g[0] / 6215, float(minimal_instance(Fraction(1, 2))["rg"]), rtol=1e-12)


def test_parts_on_the_default_family_text_delta_rejected_lemma1_holds():
    batch = thm1.instances("quadratic", None, np.random.default_rng(3))
    a, b = thm1.STATEMENTS
    for st, name, part, mod in (
        (a, "exponent ημ_F/2, second-moment δ", PART_A, thm1.evaluate),
        (b, "Lemma 1's second-moment δ", PART_B, thm1.evaluate_b),
    ):
        if mod is thm1.evaluate_b:
            batch = thm1.instances_b("quadratic", None, np.random.default_rng(3))
        s = mod(batch, dict(st.claim, **st.reading(name).changes))[part]  # Lemma 1's delta
        assert np.all(s.lhs[s.applicable] <= s.rhs[s.applicable])
        bad = mod(batch, st.claim)[part]  # as printed: the text's delta
        fails = bad.applicable & (bad.lhs > bad.rhs)
        assert fails.sum() >= 2
        assert np.all(batch["tp_p"][fails] < 1)  # deterministic errors (p = 1): both moments agree


def test_bad_p_is_a_value_error():
    with pytest.raises(ValueError, match="p .*0 < p <= 1"):
        minimal_instance(Fraction(0))
    with pytest.raises(ValueError, match="0 < p <= 1"):
        two_point_limits(
            np.eye(1)[None, None],
            np.ones(1),
            np.ones(1),
            np.ones(1),
            np.ones(1),
            np.ones(1, int),
            np.ones((1, 1)),
            np.ones(1),
            np.array([1.5]),
        )
