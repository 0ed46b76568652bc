r"""Sharp constants of Per-FedAvg's one-eigenvalue statements, derived with sympy.

``moreau check --analyse`` compares them with the ratios the instances reach; the machinery
(cases, certified sups) is ``moreau.analysis.engine.sharp``.  The checkers point here through
``Statement.sharp``.
"""

from __future__ import annotations

from functools import cache

from moreau.analysis.engine.sharp import Case, derive, sym_context

__all__ = ["perfedavg_lemma4_2", "perfedavg_lemma4_4"]


@cache
def perfedavg_lemma4_2(part):
    """Per-FedAvg Lemma 4.2 on quadratics (ρ = 0): ``|a(1 − αa)²|/(4L)``, α ∈ [0, 1/L], over
    a ∈ [0, L] (``convex``) or [−L, L] (``nonconvex``); two cases by whether the critical point
    a = 1/(3α) lies in the interval (αL ≥ 1/3)."""
    sp, q, a, lam, alpha, w, b, L, mu, eta, s, t, x = sym_context()
    lo = 0 if part == "convex" else -L
    p = {"alpha": lambda B: B["alpha"], "L": lambda B: B["L"]}
    cases = (
        Case(
            "alpha L <= 1/3",
            (lo, L),
            {alpha: 1 / (3 * L * (1 + t))},
            lambda v: v["alpha"] * v["L"] <= 1 / 3,
            ("alpha L", {alpha: x / L}, 0, sp.Rational(1, 3), False, False),
        ),
        Case(
            "1/3 <= alpha L <= 1",
            (lo, L),
            {alpha: (3 + t) / (3 * L * (1 + t))},
            lambda v: v["alpha"] * v["L"] > 1 / 3,
            ("alpha L", {alpha: x / L}, sp.Rational(1, 3), 1, False, False),
        ),
    )
    return derive(q.meta_curvature / (4 * L), a, cases, p, absolute=True)


@cache
def perfedavg_lemma4_4():
    """Per-FedAvg Lemma 4.4 on shared-A quadratics (γ_H = 0): the i-th gradient of F_i depends on
    b_i through −(1 − αa)² per eigenvector, so LHS/RHS ≤ sup (1 − αa)⁴/192, α ∈ [0, 1/L], over
    a ∈ [−L, L] (a_1 < 0) or [0, L] (convex)."""
    sp, q, a, lam, alpha, w, b, L, mu, eta, s, t, x = sym_context()
    g = sp.diff(q.meta_grad, b) ** 2 / 192  # |d grad F / d b|² per eigenvector, over 192 γ_G²
    p = {"alpha": lambda B: B["alpha"], "L": lambda B: B["L"], "a1": lambda B: B["eig"][:, 0]}
    xr = ("alpha L", {alpha: x / L}, 0, 1, False, False)
    cases = (
        Case(
            "f nonconvex (a_1 < 0): a in [-L, L]",
            (-L, L),
            {alpha: 1 / (L * (1 + t))},
            lambda v: v["a1"] < 0,
            xr,
        ),
        Case(
            "f convex (a_1 >= 0): a in [0, L]", (0, L), {alpha: 1 / (L * (1 + t))}, lambda v: v["a1"] >= 0, xr
        ),
    )
    return derive(g, a, cases, p)
