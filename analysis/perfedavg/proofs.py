r"""Symbolic proofs (sympy) of Per-FedAvg Lemma 4.2 (the meta-objective's Hessian and smoothness).

On a quadratic every statement splits over the eigenvectors of A into scalar problems
``f(x) = a x²/2 − b x``; ``moreau.analysis.engine.symbolic`` has the method (identities by
``simplify``, inequalities by positivity certificates) and runs these with ``moreau check
--symbolic``.  ``PROOFS`` are the paper's claims, ``MUTANT_PROOFS`` the same derivations given
wrong formulas: they must come out NOT PROVED.
"""

from __future__ import annotations

from functools import partial

import sympy as sp

from moreau.analysis.engine.symbolic import L, Proof, Steps, a, alpha, t, w, x
from moreau.symbolic import quadratic_formulas

__all__ = ["PROOFS", "MUTANT_PROOFS"]


def meta_hessian(hess=lambda a, alpha: a * (1 - alpha * a) ** 2):
    """d²/dw² f(w − αf'(w)) = a(1 − αa)², and eq. (5) ∇F = (1 − αf'')f'(w − αf'(w))."""
    q = quadratic_formulas()
    st = Steps()
    fp = sp.diff(q.f, x)
    st.identity(
        "eq. (5): ∇F(w) = (1 − α f'') f'(w − α f'(w))",
        q.meta_grad,
        ((1 - alpha * sp.diff(q.f, x, 2)) * fp.subs(x, w - alpha * fp.subs(x, w))),
    )
    st.identity("d²F/dw² = claimed Hessian", sp.diff(q.meta, w, 2), hess(a, alpha))
    return st.result()


def meta_smoothness(bound=lambda L, alpha: L * (1 + alpha * L) ** 2, L_F=lambda L: 4 * L):
    """max over a ∈ [−L, L] of |a(1 − αa)²| = bound, attained at a = −L; bound ≤ L_F for α ∈ (0, 1/L]."""
    q = quadratic_formulas()
    st = Steps()
    g = q.meta_curvature
    alpha_in = {alpha: 1 / (L * (1 + t))}  # α ∈ (0, 1/L]
    st.nonneg("|g(−L)| = −g(−L) ≥ 0", -g.subs(a, -L))
    st.identity("|g(−L)| = claimed max", -g.subs(a, -L), bound(L, alpha))
    st.nonneg("g(L) ≥ 0 for α ≤ 1/L, so |g(L)| = g(L)", g.subs(a, L).subs(alpha_in))
    st.nonneg("claimed max − |g(L)| ≥ 0", (bound(L, alpha) - g.subs(a, L)).subs(alpha_in))
    roots = sp.solve(sp.diff(g, a), a)
    st.check(len(roots) == 2, f"critical points of g: {roots}")
    for r in roots:
        k = sp.simplify(r * alpha)  # r = k/α, inside [−L, L] only when α ≥ k/L
        if k.free_symbols:
            st.check(False, f"critical point {r} is not of the form k/α")
            continue
        gr = sp.Abs(sp.simplify(g.subs(a, r) * alpha)) / alpha
        st.nonneg(
            f"claimed max − |g({r})| ≥ 0 where {r} ≤ L (α = ({k} + t)/L)",
            (bound(L, alpha) - gr).subs(alpha, (k + t) / L),
        )
    st.nonneg(
        "L_F − claimed max ≥ 0 for α ∈ (0, 1/L] (α = 1/(L(1 + t)))", (L_F(L) - bound(L, alpha)).subs(alpha_in)
    )
    st.identity("tight: claimed max = L_F at α = 1/L (a = −L)", bound(L, 1 / L), L_F(L))
    return st.result()


PROOFS = (
    Proof(
        "lemma4_2.hess",
        "Hessian of f(w − αf'(w)) = a(1 − αa)², gradient eq. (5)",
        "perfedavg.lemma4_2",
        meta_hessian,
    ),
    Proof(
        "lemma4_2.L_F",
        "max_{|a|≤L} |a(1 − αa)²| = L(1 + αL)² ≤ 4L for α ≤ 1/L, = 4L at α = 1/L",
        "perfedavg.lemma4_2",
        meta_smoothness,
    ),
)

#: wrong claims run through the same derivations; ``key`` names the proof mutated
MUTANT_PROOFS = (
    Proof(
        "lemma4_2.hess",
        "Hessian a(1 − αa)",
        "perfedavg.lemma4_2",
        partial(meta_hessian, lambda a, alpha: a * (1 - alpha * a)),
    ),
    Proof(
        "lemma4_2.L_F",
        "max attained at a = +L: L(1 − αL)²",
        "perfedavg.lemma4_2",
        partial(meta_smoothness, lambda L, alpha: L * (1 - alpha * L) ** 2),
    ),
    Proof("lemma4_2.L_F", "L_F = 2L", "perfedavg.lemma4_2", partial(meta_smoothness, L_F=lambda L: 2 * L)),
)
