r"""Sharp constants of the thesis, chapter 2's one-eigenvalue statements, derived with sympy.

``moreau check --analyse`` compares them with the ratios the instances reach; the machinery
(cases, certified sups) is ``moreau.analysis.engine.sharp``.  The checkers point here through
``Statement.sharp``.
"""

from __future__ import annotations

from functools import cache

from moreau.analysis.engine.sharp import Case, all_true, derive, sym_context

__all__ = ["gd_strongly_convex"]


@cache
def gd_strongly_convex():
    """Thesis Theorem 1 on quadratics: per eigenvalue one GD step multiplies f − f* by (1 − ηa)²
    (derived), so LHS/RHS after t steps is ((1 − ηa)²/(1 − μη))^t, a ∈ [μ, L], η ≤ 1/L."""
    sp, q, a, lam, alpha, w, b, L, mu, eta, s, t, x = sym_context()
    z = sp.Symbol("z", real=True)
    f0 = q.f.subs(b, 0)  # a z²/2, minimiser 0
    step = z - eta * sp.diff(f0, sp.Symbol("x", real=True)).subs(sp.Symbol("x", real=True), z)
    factor = sp.simplify(f0.subs(sp.Symbol("x", real=True), step) / f0.subs(sp.Symbol("x", real=True), z))
    g = factor / (1 - mu * eta)
    # mu < L (s > 0): at mu = L = 1/eta the ratio's denominator 1 - mu eta vanishes (no such instance)
    sp_ = sp.Symbol("s", positive=True)
    case = Case(
        "eta <= 1/L, mu < L: a in [mu, L]",
        (mu, L),
        {L: mu * (1 + sp_), eta: 1 / (mu * (1 + sp_) * (1 + t))},
        all_true,
        ("mu eta", {eta: x / mu}, 0, 1, True, False),
    )
    return derive(
        g,
        a,
        (case,),
        {"mu": lambda B: B["mu"], "L": lambda B: B["L"], "eta": lambda B: B["eta"]},
        per_step=True,
    )
