r"""Symbolic proofs (sympy) of the FedProx analysis, Lemmas 2 and 3 (the constants, the envelope's gradient).

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
    envelope_objective,
    extreme,
    lam,
    mu,
    p,
    s,
    w,
    x,
)

__all__ = ["PROOFS", "MUTANT_PROOFS"]


def fedprox_gradient(grad=lambda lam, w, theta: lam * (w - theta)):
    """FedProx Lemma 3 by the envelope theorem: dF/dw = ∂h/∂w at θ̂ since ∂h/∂θ(θ̂) = 0."""
    q, h = envelope_objective()
    st = Steps()
    st.nonneg("h''(θ) = a + λ > 0 (a = s − λ)", sp.diff(h, x, 2).subs(a, s - lam), strict=True)
    st.identity(
        "chain rule dF/dw = ∂h/∂w(θ̂) + ∂h/∂θ(θ̂) dθ̂/dw",
        sp.diff(q.envelope, w),
        (sp.diff(h, w) + sp.diff(h, x) * sp.diff(q.prox, w)).subs(x, q.prox),
    )
    st.identity("∂h/∂θ(θ̂) = 0", sp.diff(h, x).subs(x, q.prox), 0)
    st.identity("∂h/∂w(θ̂) = claimed gradient", sp.diff(h, w).subs(x, q.prox), grad(lam, w, q.prox))
    st.nonneg(
        "∇F is C¹: denominator of d∇F/dw is a + λ > 0 (a = s − λ)",
        sp.fraction(sp.cancel(sp.diff(q.envelope, w, 2)))[1].subs(a, s - lam),
        strict=True,
    )
    return st.result()


def fedprox_constant(kind, claimed):
    """One of Lemma 2's constants: ``kind`` in mu_g, L_g, mu_l, L_l, L_w."""
    q, h = envelope_objective()
    st = Steps()
    expr, which, what = {
        "mu_g": (q.envelope_curvature, "min", "curvature of F_i λa/(λ+a)"),
        "L_g": (q.envelope_curvature, "max", "curvature of F_i λa/(λ+a)"),
        "mu_l": (sp.diff(h, x, 2), "min", "curvature of h_i in θ"),
        "L_l": (sp.diff(h, x, 2), "max", "curvature of h_i in θ"),
        "L_w": (sp.diff(q.prox, w), "max", "derivative of the prox map dθ̂/dw"),
    }[kind]
    st.nonneg(f"{what} > 0 for a > 0 (so it equals its absolute value)", expr.subs(a, p), strict=True)
    value = extreme(st, what, expr, which)
    if value is not None:
        st.identity(f"{kind} = {which} over [μ, L]", value, claimed)
    return st.result()


PROOFS = (
    Proof(
        "lemma2.mu_g",
        "μ_g = λμ/(λ + μ)",
        "fedprox.lemma2",
        partial(fedprox_constant, "mu_g", lam * mu / (lam + mu)),
    ),
    Proof(
        "lemma2.L_g",
        "L_g = λL/(λ + L)",
        "fedprox.lemma2",
        partial(fedprox_constant, "L_g", lam * L / (lam + L)),
    ),
    Proof("lemma2.mu_l", "μ_ℓ = μ + λ", "fedprox.lemma2", partial(fedprox_constant, "mu_l", mu + lam)),
    Proof("lemma2.L_l", "L_ℓ = L + λ", "fedprox.lemma2", partial(fedprox_constant, "L_l", L + lam)),
    Proof(
        "lemma2.L_w", "L_w = λ/(λ + μ)", "fedprox.lemma2", partial(fedprox_constant, "L_w", lam / (lam + mu))
    ),
    Proof("lemma3.grad", "∇F_i(w) = λ(w − prox(w)) (envelope theorem)", "fedprox.lemma3", fedprox_gradient),
)

#: wrong claims run through the same derivations; ``key`` names the proof mutated
MUTANT_PROOFS = (
    Proof(
        "lemma2.mu_g",
        "μ_g = λμ/(λ − μ)",
        "fedprox.lemma2",
        partial(fedprox_constant, "mu_g", lam * mu / (lam - mu)),
    ),
    Proof(
        "lemma2.L_g",
        "L_g = λL/(λ − L)",
        "fedprox.lemma2",
        partial(fedprox_constant, "L_g", lam * L / (lam - L)),
    ),
    Proof("lemma2.mu_l", "μ_ℓ = μ (λ forgotten)", "fedprox.lemma2", partial(fedprox_constant, "mu_l", mu)),
    Proof("lemma2.L_l", "L_ℓ = L (λ forgotten)", "fedprox.lemma2", partial(fedprox_constant, "L_l", L)),
    Proof(
        "lemma2.L_w",
        "L_w = λ/(λ + L) (wrong end of [μ, L])",
        "fedprox.lemma2",
        partial(fedprox_constant, "L_w", lam / (lam + L)),
    ),
    Proof(
        "lemma3.grad",
        "∇F_i(w) = λ(prox(w) − w)",
        "fedprox.lemma3",
        partial(fedprox_gradient, lambda lam, w, th: lam * (th - w)),
    ),
)
