r"""fw.convex's recorded class worst cases (PEP), beside which every default run states its instances' gap.

Theorem 5's ratio (F(x^t) − F*)/(2LR²/(t+2)) at iterate t over every L-smooth convex F on every convex
set of diameter R, x^0 in the set (scale-free: L = R = 1), and over convex quadratics only.  Recorded from
``moreau.analysis.pep.classes.frank_wolfe(1.0, 1.0, t)`` (``cls="smooth_convex"``, status optimal) and
``frank_wolfe(1.0, 1.0, t, cls="quadratic", accept=("optimal", "optimal_inaccurate"))``, PEPit with the
Clarabel solver 0.11.1, 2026-12-05; ``tests/catalogue/thesis/test_fw_class_worst.py`` (marker ``pep``)
recomputes them.  The value is the PEP's worst F(x^t) − F* divided by 2/(t + 2).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.class_worst import ClassWorst

__all__ = ["PEP_SMOOTH_CONVEX", "PEP_QUADRATIC", "SOURCE", "CLASS_WORST", "iterate_only"]

#: t -> the class worst case of LHS/RHS, L-smooth convex functions on a convex set of diameter R
PEP_SMOOTH_CONVEX = {1: 0.7500000121, 2: 0.6252339886, 3: 0.5696202619, 4: 0.5340993602, 5: 0.5117436424}
#: t -> the same over convex quadratics (any convex set of diameter R, any dimension)
PEP_QUADRATIC = {1: 0.7500000055, 2: 0.5554198408, 3: 0.5551380511, 4: 0.5044179197, 5: 0.4806992397}
SOURCE = "PEPit frank_wolfe(1, 1, t), Clarabel, optimal: analysis/thesis/fw/class_worst.py"


def iterate_only(t0: int):
    """The bound at iterate ``t0`` only (infinite elsewhere): the part then measures LHS/RHS at t0."""

    def bound(L, R, t):
        return np.where(t == t0, 2 * L * R**2 / (t + 2), np.inf)

    return bound


def _why(t: int) -> str:
    q, c = PEP_QUADRATIC[t], PEP_SMOOTH_CONVEX[t]
    if q >= c * (1 - 1e-4):
        return "the worst case is a quadratic, on a polytope conv(x⁰, s⁰, …, x*) in its own dimension"
    return (
        "the worst function is not a quadratic (quadratics: "
        + "/".join(f"{PEP_QUADRATIC[k]:.3g}" for k in sorted(PEP_QUADRATIC) if k >= 2)
        + " at t = 2..5), and the worst quadratic lives on a polytope conv(x⁰, s⁰, …, x*), "
        "not a box, ball, simplex or ℓ1 ball in d = 3"
    )


#: t = 1..5 under the reading "x⁰ ∈ B, t ≥ 1" (the standard theorem: the class's hypotheses)
CLASS_WORST = tuple(
    ClassWorst(
        label=f"t = {t}",
        part="F(x^t) - F* <= 2 L R^2/(t + 2), t <= 100",
        value=PEP_SMOOTH_CONVEX[t],
        source=SOURCE,
        why=_why(t) if t >= 2 else "reached by the adversarial group (3/4 in the limit)",
        changes={"bound": iterate_only(t)},
        reading="x⁰ ∈ B, t ≥ 1",
    )
    for t in range(1, 6)
)
