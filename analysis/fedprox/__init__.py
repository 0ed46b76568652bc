"""The FedProx analysis (Yu, He, Sun, Xue, Li): statistical accuracy and communication of FedProx.

A paper package: ``PAPER`` cites the paper, ``FORMAL_STATEMENTS`` lists its formal statements
(theorems, lemmas, propositions, corollaries, and the equations a statement rests on) that the
catalogue checks or is meant to check, in the paper's order, as ``(id, where, one line)``.  The
checkers are the modules below this one; ``moreau.analysis.engine.registry`` finds them.
"""

from __future__ import annotations

PAPER = {
    "key": "fedprox-personalization-analysis.md",
    "short": "FedProx analysis",
    "citation": (
        "X. Yu, Z. He, Y. Sun, L. Xue, R. Li, The Effect of Personalization in FedProx: A Fine-"
        "grained Analysis on Statistical Accuracy and Communication Efficiency"
    ),
}

FORMAL_STATEMENTS = (
    ("fedprox.lemma1", "Lemma 1, eq. (3)", "model estimation error ≤ (λ/2)(R² − heterogeneity estimate)"),
    ("fedprox.thm1", "Theorem 1, eqs. (4)–(6)", "statistical error with the adaptive λ"),
    (
        "fedprox.thm1_remark",
        "after Theorem 1 (a remark)",
        "FedProx always performs no worse than LocalTrain",
    ),
    ("fedprox.lemma2", "Lemma 2", "μ_g, L_g, μ_ℓ, L_ℓ, L_w"),
    ("fedprox.lemma3", "Lemma 3", "∇F_i(w) = λ(w − prox(w))"),
    ("fedprox.thm2", "Theorem 2, eq. (12)", "linear convergence of one-stage FedProx (Algorithm 1)"),
    (
        "fedprox.cor1",
        "Corollary 1, eqs. (13)–(14)",
        "communication O(κ_g log 1/ε), computation independent of λ",
    ),
    (
        "fedprox.remark1",
        "Remark 1",
        "Algorithm 1's analysis extends to mini-batches, partial participation, variance reduction",
    ),
)
