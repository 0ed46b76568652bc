r"""The recorded minimal counterexamples of pFedMe's printed statements (``Statement.counterexamples``).

One builder per (statement, family): a one-instance batch with the generator's fields, exact small numbers,
d = 1 and N = 1 (one client) wherever the printed claim fails there, every hypothesis the paper prints met and
every derived field (L, μ, μ_F, κ_F, w*) the one the data give.  The statement's own ``evaluate`` computes
both sides (every run evaluates the instance and prints it as "minimal counterexample [family]"); builders
return a fresh batch on each call (``Statement.counterexamples`` takes the callable).  The comment above each
builder derives its numbers.  The tests are in tests/catalogue/pfedme/test_minimal_counterexamples.py.

References: pFedMe (T Dinh et al., 2020), Theorems 1 and 2, Corollaries 1 and 2; the findings of
``pfedme.thm1``, ``pfedme.thm2``, ``pfedme.cor``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MINIMAL_THM1", "MINIMAL_THM1B", "MINIMAL_THM2", "MINIMAL_COR1", "MINIMAL_COR2"]


def _s(x):
    """A per-instance scalar field ``(1,)``."""
    return np.full(1, float(x))


def _v(x):
    """A point ``(1, d)``, d = 1."""
    return np.full((1, 1), float(x))


def _c(x):
    """A per-client point ``(1, N, d)``, N = d = 1."""
    return np.full((1, 1, 1), float(x))


def _quadratic_one(lam, R, w0, beta=1.0):
    """pfedme.thm1's quadratic fields for N = 1, d = 1, f(x) = x²/2 (A = 1, b = 0: μ = L = 1, w* = 0), identical
    clients; the mini-batch least squares: 16 samples x_j = 1, y_j = (−1)^j (per-sample gradient variance 1);
    then the two-point fields as the generator derives them (``delta_fields``: u = H's flattest eigenvector, here
    1, and δ₁ = 0.01 (1 + |w_0|)), p set by the caller."""
    from moreau.analysis.pfedme.thm1.text_delta import delta_fields

    b = {
        "A": np.ones((1, 1, 1, 1)),
        "b": np.zeros((1, 1, 1)),
        "mu": _s(1),
        "L": _s(1),
        "lam": _s(lam),
        "beta": _s(beta),
        "R": np.array([R]),
        "w0": _v(w0),
        "ident": np.array([True]),
        "X": np.ones((1, 1, 16, 1)),
        "y": np.tile((-1.0) ** np.arange(16), (1, 1, 1)),
        "seed": np.array([0]),
    }
    return {**b, **delta_fields(b)}


# pfedme.thm1, quadratic (the finding's instance): N = 1, d = 1, f(x) = x^2/2 (mu = L = 1, w* = 0), lam = 1, so
# mu_F = lam mu/(lam + mu) = 1/2, L_F = 1, kappa_F = 2; beta = 1: eta_hat_1 = 1/(6 (3 + 128 kappa_F/beta)) = 1/1554;
# R = 3: eta = eta_hat_1/(beta R) = 1/4662 (the largest the theorem allows); w_0 = 1.  A local step is
# w -> (1 - eta/2) w, the round Q = (1 - eta/2)^3 < rho = 1 - eta mu_F/2 = 1 - 1/18648 (w_bar_T's weight ratio),
# so F(w_bar_T) - F* decays exactly like rho^(2T): exact exponent -2 log(1 - 1/18648) = 1.0725e-4 per round against
# the printed eta_hat_1 mu_F/2 = 1/6216 = 1.6088e-4 (ratio 1.50 = beta R/2 to first order).  Minimal: d = N = 1;
# the failure needs beta R > 2, so beta = 1, R = 3 (the smallest integers), f = x^2/2 and lam = 1 the simplest
# constants.  The other parts hold or do not apply (R = 3: no R = 1 part; N = 1: no S < N, no drift); the two-point
# errors have p = 1 (both moments delta_1 = 1/50: the text's delta and Lemma 1's agree).
def _thm1_quadratic():
    return {**_quadratic_one(lam=1, R=3, w0=1), "tp_p": _s(1)}


# pfedme.thm1, logistic: the same constants with a logistic client: N = 1 (field N), d = 1, n = 2 samples x = (1, 1),
# y = (1, -1), ridge mu = 1 (the exact inf of the curvature): f(t) = (log(1 + e^-t) + log(1 + e^t))/2 + t^2/2 is
# even, so w* = 0 and hess f(w*) = 1/4 + 1 = 5/4; lam = 1, beta = 1, R = 3: mu_F = 1/2, eta_hat_1 = 1/1554,
# eta = 1/4662.  The round Jacobian at w* is Q = (1 - eta (5/4)/(9/4))^3 = (1 - 5 eta/9)^3 < rho = 1 - eta/4: the
# exact local exponent is -2 log(1 - 1/18648) = 1.0725e-4 against the printed 1/6216 = 1.6088e-4 (ratio 1.50).
# Minimal as for the quadratic (two samples: the fewest that make w* = 0 exact).
def _thm1_logistic():
    return {
        "Xl": np.ones((1, 2, 1)),
        "yl": np.array([[1.0, -1.0]]),
        "mu": _s(1),
        "lam": _s(1),
        "beta": _s(1),
        "R": np.array([3]),
        "N": np.array([1]),
    }


#: pfedme.thm1: family -> builder
MINIMAL_THM1 = {"quadratic": _thm1_quadratic, "logistic": _thm1_logistic}


# pfedme.thm1b (finding B's instance; text_delta.minimal_instance(1/10) gives the same limit in exact rationals):
# N = 1, d = 1, f(x) = x^2/2, lam = 1 (mu_F = 1/2), beta = R = 1 (eta = eta_hat_1 = 1/1554), w_0 = w* = 0, so
# delta_1 = 0.01 (1 + |w_0|) = 1/100; fresh inner errors e = (delta_1/p) u = 1/10 with probability p = 1/10, else 0:
# E|e| = 1/100 = delta (the text's first moment), E|e|^2 = 1/1000.  Exactly, lim_T E|theta~(w_T) - w*|^2 =
# 20201/15537500 = 1.3001e-3 (about delta_1^2 (3 + 1/p)) > 2 lam^2 delta^2/mu_F^2 + 2 delta^2 = 10 delta^2 = 1e-3:
# ratio 1.30.  Minimal: d = N = 1, the simplest constants; the ratio is about (3 + 1/p)/10 (independent of
# delta_1), so p < 1/7 is needed and 1/10 is the simplest such p.  With Lemma 1's delta^2 = E|e|^2 = 1/1000 the
# bound is 1e-2 (ratio 0.13: the reading "Lemma 1's second-moment δ" holds here).
def _thm1b_quadratic():
    return {**_quadratic_one(lam=1, R=1, w0=0), "far": _s(10), "tp_p": _s(0.1)}


#: pfedme.thm1b: family -> builder
MINIMAL_THM1B = {"quadratic": _thm1b_quadratic}


# pfedme.thm2 (finding 1, the eta-free first term, on the checked horizon T <= 1500): N = 1, d = 1, the double well
# g(u) = L a^2/4 - L u^2/2 (|u| <= a/2), L (|u| - a)^2/2 outside, a = 1, L = 1/4, s = 0; lam = 5/4
# (lam^2 = 25/16 >= 8 L^2 + 1 = 3/2), beta = R = 1, eta = 1/1000 <= eta_hat_2 = 1/(75 lam^3) = 64/9375; w_0 = 2.
# On the outer piece (|w| >= tau = a (lam - L)/(2 lam) = 2/5) F(w) = (h/2)(w - 1)^2, h = lam L/(lam + L) = 5/24,
# F* = 0 at w = 1: Delta_F = 5/48, and w_t - 1 = (1 - eta h)^t, so |grad F(w_t)|^2 = h^2 q^(2t), q = 1 - 1/4800.  At
# T = 1500: (1/T) sum_{t<T} |grad F(w_t)|^2 = h^2 (1 - q^3000)/(1500 (1 - q^2)) = 0.032279 > 2 Delta_F/(eta_hat_2 T)
# = 75 lam^3 h/1500 = 0.020345 (ratio 1.587; it grows like T).  Minimal: d = N = 1; the ratio at T is at most
# h T/(75 lam^3), so the bound fails by T <= 1500 only if 75 lam^3/h < 1500, which lam >= sqrt(8 L^2 + 1) rules out
# for L = 1 (2700: finding 1's L = a = 1, lam = 3 fails at T = 10^4) and for L = 1/2, lam = 2 (1500); L = 1/4,
# lam = 5/4 (703, exact in binary) is the simplest pair that fails (L = 1/3, lam = 3/2 too: ratio 1.10), eta = 1/1000
# the simplest step well below eta_hat_2 (1/500 fails too, ratio 1.22; 1/200 holds).  The other fields keep the
# other parts holding or not applicable (N = 1: no S < N, no drift): the sampling problem is one client at c = 0
# (s = -1, side +1, w_0 = c), the inexact solves delta = 1/10 along u = +1 (outward) from w_0 = 2, the fresh
# errors' radius 1/20 (<= 0.9 L a/(2 lam) = 0.09), the sampling errors delta = 1/20, and the two-point errors are
# deterministic (p = 1 for (a) and for (b), where the generator draws p in [1e-3, 1/2]: with the text's delta and
# p = 1/2 the two-point (b) part fails too on this instance, ratio 1.14, finding 4).
def _thm2_quadratic():
    return {
        "s": _c(0),
        "a": _s(1),
        "L": _s(0.25),
        "lam": _s(1.25),
        "beta": _s(1),
        "R": np.array([1]),
        "eta": _s(1e-3),
        "w0": _v(2),
        "ident": np.array([True]),
        "sp_c": _c(0),
        "sp_side": _c(1),
        "sp_s": _c(-1),
        "sp_w0": _v(0),
        "dl_side": _v(1),
        "dl_w0": _v(2),
        "dl_delta": _s(0.1),
        "dl_u": _v(1),
        "dl_delta_r": _s(0.05),
        "tp_side": _v(1),
        "tp_w0": _v(2),
        "tp_u": _v(1),
        "tp_p": _s(1),
        "tp_pb": _s(1),
        "sd_u": _c(1),
        "sd_delta": _s(0.05),
    }


#: pfedme.thm2: family -> builder
MINIMAL_THM2 = {"quadratic": _thm2_quadratic}


def _cor_constants():
    """The problem constants of both corollaries from L = mu = 1, lam = 3 = sqrt(8 L^2 + 1): mu_F = lam mu/(lam + mu)
    = 3/4, kappa_F = lam/mu_F = 4; sigma^2 = delta^2 = Delta = 1 and the Theta-constants c_beta = c_T = 1."""
    return {
        "s2": _s(1),
        "d2": _s(1),
        "lam": _s(3),
        "muF": _s(0.75),
        "kappa": _s(4),
        "Delta": _s(1),
        "cb": _s(1),
        "cT": _s(1),
    }


# pfedme.cor1, case (i): T = R = N = 1 (sqrt(N) >= T holds: N = 1 forces T = 1), the exponent of T (var = 0):
# beta = sqrt(N)/T makes T beta = sqrt(N), so Theorem 1(a)'s third term, sigma part sigma^2 kappa_F/(mu_F^2 N) and
# delta part delta^2 lam^2 kappa_F/(mu_F^2 R N), does not depend on T: fitted exponent 0 (lhs) against the printed
# -1 of O(1/(TRN)) (rhs): 0 > -1 (a rate part: its sides are exponents, the rhs negative).  Minimal: one client,
# the one T it allows, R = 1; the exponents do not depend on the constants (any positive ones; the simplest).
def _cor1_quadratic():
    return {
        "T": _s(1),
        "R": _s(1),
        "N": _s(1),
        "massive": np.array([True]),
        "var": np.array([0]),
        **_cor_constants(),
    }


#: pfedme.cor1: family -> builder
MINIMAL_COR1 = {"quadratic": _cor1_quadratic}


# pfedme.cor2: N = R = 1, the exponent of R (var = 0): T = c_T (NR)^2 = 1, beta = N^(1/2) R^(1/4) = 1; Theorem
# 2(a)'s sigma part Delta_F^(2/3) (R sigma^2)^(1/3)/(beta^(4/3) R^(1/3) T^(2/3)) = Delta_F^(2/3) sigma^(2/3)/(N^(2/3)
# R^(1/3) T^(2/3)) with T = (NR)^2 is N^-2 R^(-5/3): fitted exponent -5/3 (lhs) against the printed -2 of
# O(1/(TRN)^(2/3)) = O((NR)^-2) (rhs): -5/3 > -2.  Minimal: one client (as the finding's instance; the generator
# draws N in [2, 10^3], the corollary asks nothing of N), R = 1; the exponents do not depend on the constants.
def _cor2_quadratic():
    return {"T": _s(1), "R": _s(1), "N": _s(1), "var": np.array([0]), **_cor_constants()}


#: pfedme.cor2: family -> builder
MINIMAL_COR2 = {"quadratic": _cor2_quadratic}
