r"""Sharp constants of pFedMe's one-eigenvalue statements, derived with sympy.

``moreau check --analyse`` compares them with the ratios the instances reach; the machinery
(cases, certified sups) is ``moreau.analysis.engine.sharp``.  The checkers point here through
``Statement.sharp``.
"""

from __future__ import annotations

from functools import cache

from moreau.analysis.engine.sharp import Case, all_true, derive, sym_context

__all__ = ["pfedme_prop1"]


@cache
def pfedme_prop1(part):
    """pFedMe Proposition 1 on quadratics: ``convex`` (L_F = λ, a ∈ [0, L]), ``nonconvex``
    (L_F = λ, λ > 2L, a ∈ [−L, L]) or ``mu_F`` (claimed μ_F over the curvature, a ∈ [μ, L])."""
    sp, q, a, lam, alpha, w, b, L, mu, eta, s, t, x = sym_context()
    kappa = q.envelope_curvature  # λa/(λ + a), derived as d²F/dw²
    if part == "convex":
        case = Case(
            "f convex: a in [0, L]", (0, L), {}, all_true, ("lam/L", {lam: x * L}, 0, sp.oo, True, True)
        )
        return derive(
            kappa / lam, a, (case,), {"lam": lambda B: B["lam"], "L": lambda B: B["L"]}, absolute=True
        )
    if part == "nonconvex":
        case = Case(
            "f L-smooth, lam > 2L: a in [-L, L]",
            (-L, L),
            {lam: L * (2 + s)},
            all_true,
            ("lam/L", {lam: x * L}, 2, sp.oo, True, True),
        )
        return derive(
            kappa / lam, a, (case,), {"lam": lambda B: B["lam"], "L": lambda B: B["L"]}, absolute=True
        )
    case = Case(
        "f mu-strongly convex: a in [mu, L]",
        (mu, L),
        {L: mu + s},
        all_true,
        ("lam/mu", {lam: x * mu}, 0, sp.oo, True, True),
    )
    return derive(
        kappa.subs(a, mu) / kappa,
        a,
        (case,),
        {"lam": lambda B: B["lam"], "mu": lambda B: B["eig"][:, 0], "L": lambda B: B["L"]},
    )
