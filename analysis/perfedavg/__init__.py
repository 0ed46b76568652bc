"""Per-FedAvg (Fallah, Mokhtari, Ozdaglar, NeurIPS 2020): the MAML-objective statements.

A paper package: ``PAPER`` cites the paper, ``FORMAL_STATEMENTS`` lists its formal statements
(theorems, lemmas, propositions, corollaries, and the equations a statement rests on) that the
catalogue checks or is meant to check, in the paper's order, as ``(id, where, one line)``.  The
checkers are the modules below this one; ``moreau.analysis.engine.registry`` finds them.
"""

from __future__ import annotations

PAPER = {
    "key": "per-fedavg-maml.md",
    "short": "Per-FedAvg",
    "citation": (
        "A. Fallah, A. Mokhtari, A. Ozdaglar, Personalized Federated Learning with Theoretical "
        "Guarantees: A Model-Agnostic Meta-Learning Approach (Per-FedAvg), NeurIPS 2020"
    ),
}

FORMAL_STATEMENTS = (
    ("perfedavg.lemma4_2", "Lemma 4.2", "smoothness of the MAML objective, 4L + αρB"),
    ("perfedavg.lemma4_3", "Lemma 4.3", "bias and second moment of the stochastic gradient estimate"),
    ("perfedavg.lemma4_4", "Lemma 4.4", "gradient diversity of the MAML objectives, 3B²α²γ_H² + 192γ_G²"),
    ("perfedavg.tv", "eq. (14a)", "γ_G², γ_H² from total-variation distances"),
    ("perfedavg.w1", "eq. (16)", "γ_G², γ_H² from 1-Wasserstein distances"),
    ("perfedavg.thm4_5", "Theorem 4.5, Corollary 4.6", "Per-FedAvg stationarity rate"),
    ("perfedavg.propf1", "Proposition F.1, Corollary F.2", "client drift"),
    ("perfedavg.appendix_h", "Appendix H", "first-order and Hessian-free estimators' bounds"),
    ("perfedavg.remark4_7", "Remark 4.7", "the bound holds for the server's models with t_k drawn uniformly"),
    (
        "perfedavg.remark4_8",
        "Remark 4.8, Remark G.1",
        "the same complexity with diminishing steps β_k = O(1/√(τk))",
    ),
)
