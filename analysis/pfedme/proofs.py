r"""Symbolic proofs (sympy) of pFedMe Proposition 1 (the envelope's gradient, smoothness, strong convexity).

On a quadratic every statement splits over the eigenvectors of A into scalar problems
``f(x) = a x²/2 − b x``; ``moreau.analysis.engine.symbolic`` has the method (identities by
``simplify``, inequalities by positivity certificates) and runs these with ``moreau check
--symbolic``.  ``PROOFS`` are the paper's claims, ``MUTANT_PROOFS`` the same derivations given
wrong formulas: they must come out NOT PROVED.
"""

from __future__ import annotations

from functools import partial

import sympy as sp

from moreau.analysis.engine.symbolic import (
    L,
    Proof,
    Steps,
    a,
    curvature,
    envelope_objective,
    lam,
    mu,
    s,
    u,
    w,
    x,
)

__all__ = ["PROOFS", "MUTANT_PROOFS"]


def gradient_formula(grad=lambda lam, w, theta: lam * (w - theta)):
    """∇F(w) = λ(w − θ̂(w)), F derived as the minimum of h (pFedMe eq. (6))."""
    q, h = envelope_objective()
    st = Steps()
    st.nonneg(
        "h''(θ) = a + λ > 0 where a > −λ (a = s − λ): θ̂ is the unique minimiser",
        sp.diff(h, x, 2).subs(a, s - lam),
        strict=True,
    )
    st.identity("h'(θ̂) = 0", sp.diff(h, x).subs(x, q.prox), 0)
    st.identity("dF/dw = claimed gradient", sp.diff(q.envelope, w), grad(lam, w, q.prox))
    return st.result()


def convex_smoothness(L_F=lambda lam: lam):
    """|κ(a)| ≤ L_F = λ for every a ≥ 0 (f convex)."""
    st = Steps()
    kappa = curvature(st).subs(a, u)
    st.nonneg("κ(a) ≥ 0 for a = u ≥ 0", kappa)
    st.nonneg("L_F − κ(a) ≥ 0 for a = u ≥ 0", L_F(lam) - kappa)
    return st.result()


def nonconvex_threshold(threshold=lambda L: 2 * L):
    """a ∈ [−L, L], λ > L: max|κ| = κ-worst at a = −L, and ≤ λ iff λ ≥ threshold."""
    st = Steps()
    kappa = curvature(st)  # increasing: on [−L, L] it lies in [κ(−L), κ(L)]
    worst = -kappa.subs(a, -L)
    st.identity("|κ(−L)| = −κ(−L) = λL/(λ − L)", worst, lam * L / (lam - L))
    st.nonneg(
        "−κ(−L) − κ(L) > 0 (λ = L + s): max over [−L, L] of |κ| is at a = −L",
        (worst - kappa.subs(a, L)).subs(lam, L + s),
        strict=True,
    )
    th = threshold(L)
    ratio = sp.cancel((lam - worst) / (lam - th))
    st.nonneg(
        f"(λ − λL/(λ − L)) / (λ − ({th})) > 0 (λ = L + s), so λL/(λ − L) ≤ λ iff λ ≥ {th}",
        ratio.subs(lam, L + s),
        strict=True,
    )
    ell = sp.Symbol("ell", real=True)
    st.identity(
        "homogeneous: worst(λ, L) = L worst(λ/L, 1)",
        worst.subs(lam, ell * L),
        L * worst.subs({lam: ell, L: 1}),
    )
    sol = sp.solveset(worst.subs({L: 1, lam: ell}) <= ell, ell, sp.Interval.open(1, sp.oo))
    st.check(
        sol == sp.Interval(threshold(1), sp.oo),
        f"solveset of λ/(λ − 1) ≤ λ on λ > 1 (L = 1): {sol}; claimed [{threshold(1)}, oo)",
    )
    return st.result()


def strong_convexity(mu_F=lambda lam, mu: lam * mu / (lam + mu)):
    """μ_F = κ(μ) = λμ/(λ+μ), the minimum curvature (κ increasing: attained at a_1 = μ)."""
    st = Steps()
    kappa = curvature(st)
    st.identity("κ(μ) = claimed μ_F", kappa.subs(a, mu), mu_F(lam, mu))
    return st.result()


PROOFS = (
    Proof(
        "prop1.grad",
        "gradient formula (6): dF/dw = λ(w − θ̂), F derived as a min",
        "pfedme.prop1",
        gradient_formula,
    ),
    Proof(
        "prop1.convex",
        "L_F = λ for convex f: 0 ≤ λa/(λ + a) ≤ λ for a ≥ 0",
        "pfedme.prop1",
        convex_smoothness,
    ),
    Proof(
        "prop1.nonconvex",
        "nonconvex: |λa/(λ+a)| ≤ λ on [−L, L] iff λ ≥ 2L (worst a = −L)",
        "pfedme.prop1",
        nonconvex_threshold,
    ),
    Proof(
        "prop1.mu_F",
        "μ_F = λμ/(λ + μ), the curvature at a_1 = μ (κ increasing)",
        "pfedme.prop1",
        strong_convexity,
    ),
)

#: wrong claims run through the same derivations; ``key`` names the proof mutated
MUTANT_PROOFS = (
    Proof(
        "prop1.grad",
        "gradient sign flipped: λ(θ̂ − w)",
        "pfedme.prop1",
        partial(gradient_formula, lambda lam, w, th: lam * (th - w)),
    ),
    Proof(
        "prop1.grad",
        "gradient (w − θ̂)/λ",
        "pfedme.prop1",
        partial(gradient_formula, lambda lam, w, th: (w - th) / lam),
    ),
    Proof(
        "prop1.convex",
        "L_F = λ/2 for convex f",
        "pfedme.prop1",
        partial(convex_smoothness, lambda lam: lam / 2),
    ),
    Proof(
        "prop1.nonconvex",
        "nonconvex threshold λ ≥ L instead of 2L",
        "pfedme.prop1",
        partial(nonconvex_threshold, lambda L: L),
    ),
    Proof(
        "prop1.nonconvex",
        "nonconvex threshold λ ≥ 3L instead of 2L",
        "pfedme.prop1",
        partial(nonconvex_threshold, lambda L: 3 * L),
    ),
    Proof(
        "prop1.mu_F",
        "μ_F = λμ/(λ − μ)",
        "pfedme.prop1",
        partial(strong_convexity, lambda lam, mu: lam * mu / (lam - mu)),
    ),
)
