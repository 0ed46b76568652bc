r"""Sharp constants of the FedProx analysis's one-eigenvalue statements, derived with sympy.

``moreau check --analyse`` compares them with the ratios the instances reach; the machinery
(cases, certified sups) is ``moreau.analysis.engine.sharp``.  The checkers point here through
``Statement.sharp``.
"""

from __future__ import annotations

from functools import cache

from moreau.analysis.engine.sharp import Case, all_true, derive, sym_context

__all__ = ["fedprox_lemma2"]


@cache
def fedprox_lemma2(part):
    """FedProx Lemma 2 on strongly convex quadratics (a ∈ [μ, L]): ``mu_g``, ``L_g``, ``mu_l``,
    ``L_l``, ``L_w``: each true quantity is a function of one eigenvalue, so sharp by construction
    (the derivation should give 1)."""
    sp, q, a, lam, alpha, w, b, L, mu, eta, s, t, x = sym_context()
    kappa = q.envelope_curvature
    h2 = sp.diff(q.f + lam / 2 * (sp.Symbol("x", real=True) - w) ** 2, sp.Symbol("x", real=True), 2)  # a + λ
    dprox = sp.diff(q.prox, w)  # λ/(λ + a)
    g, absolute = {
        "mu_g": (kappa.subs(a, mu) / kappa, False),  # claimed / true (lower bound)
        "L_g": (kappa / kappa.subs(a, L), True),
        "mu_l": (h2.subs(a, mu) / h2, False),
        "L_l": (h2 / h2.subs(a, L), True),
        "L_w": (dprox / dprox.subs(a, mu), True),
    }[part]
    case = Case(
        "L_i mu-strongly convex, L-smooth: a in [mu, L]",
        (mu, L),
        {L: mu + s},
        all_true,
        ("lam/mu", {lam: x * mu}, 0, sp.oo, True, True),
    )
    return derive(
        sp.simplify(g),
        a,
        (case,),
        {"lam": lambda B: B["lam"], "mu": lambda B: B["eig"][:, 0], "L": lambda B: B["eig"][:, -1]},
        absolute=absolute,
    )
