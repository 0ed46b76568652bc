"""The Dadras thesis, chapter 2: GD, SGD and Frank–Wolfe rates.

A paper package: ``PAPER`` cites the paper, ``FORMAL_STATEMENTS`` lists its formal statements
(theorems, lemmas, propositions, corollaries, and the equations a statement rests on) that the
catalogue checks or is meant to check, in the paper's order, as ``(id, where, one line)``.  The
checkers are the modules below this one; ``moreau.analysis.engine.registry`` finds them.
"""

from __future__ import annotations

PAPER = {
    "key": "dadras-thesis-personalized-fl.md",
    "short": "Dadras thesis",
    "citation": (
        "A. Dadras, Personalized Models and Optimization in Federated Learning, doctoral thesis, "
        "Umeå University, 2025"
    ),
}

FORMAL_STATEMENTS = (
    ("gd.strongly_convex", "ch. 2, GD, strongly convex", "F(xᵗ) − F* ≤ (1 − μη)ᵗ (F(x⁰) − F*)"),
    ("gd.nonconvex", "ch. 2, GD, nonconvex", "(1/T)Σ‖∇F(xᵗ)‖² ≤ 2(F(x⁰) − F*)/(ηT)"),
    ("sgd.strongly_convex", "ch. 2, Theorem 3", "SGD, strongly convex, both step rules"),
    ("sgd.nonconvex", "ch. 2, Theorem 4", "SGD, nonconvex"),
    ("fw.convex", "ch. 2, Theorem 5", "Frank–Wolfe, convex: 2LR²/(t+2)"),
    ("fw.nonconvex", "ch. 2, Theorem 6", "Frank–Wolfe, nonconvex"),
)
