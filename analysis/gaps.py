"""The formal statements of the four source papers, and which of them the catalogue checks.

``PAPERS`` cites each source paper.  ``STATEMENTS`` lists every formal statement
(theorem, lemma, proposition, corollary, and the equations a statement rests
on) that the catalogue checks or is meant to check, as ``(id, paper key,
where, one line)``.  :func:`known_gaps` is the part of that list that the
registry does not (yet) check: every ``moreau check`` run ends with it, so
"all statements hold" never reads as "the paper is verified".
"""
from __future__ import annotations

__all__ = ["PAPERS", "SHORT", "STATEMENTS", "known_gaps", "paper_citation"]

PAPERS = {
    "pfedme-moreau-envelopes.md":
        "C. T. Dinh, N. H. Tran, T. D. Nguyen, Personalized Federated Learning with Moreau Envelopes "
        "(pFedMe), NeurIPS 2020",
    "fedprox-personalization-analysis.md":
        "X. Yu, Z. He, Y. Sun, L. Xue, R. Li, The Effect of Personalization in FedProx: A Fine-grained "
        "Analysis on Statistical Accuracy and Communication Efficiency",
    "per-fedavg-maml.md":
        "A. Fallah, A. Mokhtari, A. Ozdaglar, Personalized Federated Learning with Theoretical Guarantees: "
        "A Model-Agnostic Meta-Learning Approach (Per-FedAvg), NeurIPS 2020",
    "dadras-thesis-personalized-fl.md":
        "A. Dadras, Personalized Models and Optimization in Federated Learning, doctoral thesis, "
        "Umeå University, 2025",
}

SHORT = {
    "pfedme-moreau-envelopes.md": "pFedMe",
    "fedprox-personalization-analysis.md": "FedProx analysis",
    "per-fedavg-maml.md": "Per-FedAvg",
    "dadras-thesis-personalized-fl.md": "Dadras thesis",
}

_P, _F, _M, _T = ("pfedme-moreau-envelopes.md", "fedprox-personalization-analysis.md", "per-fedavg-maml.md",
                  "dadras-thesis-personalized-fl.md")

STATEMENTS = (
    ("pfedme.prop1", _P, "Proposition 1, eq. (6)", "envelope smoothness λ, strong convexity λμ/(λ+μ), gradient"),
    ("pfedme.lemma1", _P, "Lemma 1", "inexact personalised model: E‖θ̃ − θ̂‖² ≤ δ²"),
    ("pfedme.lemma2", _P, "Lemma 2 (a), (b)", "bounded diversity of the envelopes"),
    ("pfedme.thm1", _P, "Theorem 1 (a), (b)", "strongly convex pFedMe: linear rate to a λ²δ²/μ_F neighbourhood"),
    ("pfedme.thm1b", _P, "Theorem 1 (b)", "personalised models' error (deterministic core exactly on quadratics)"),
    ("pfedme.thm2", _P, "Theorem 2 (a), (b)", "nonconvex pFedMe: stationarity rate"),
    ("pfedme.cor1", _P, "Corollary 1", "choices of β and the linear / quadratic speed-up exponents"),
    ("pfedme.cor2", _P, "Corollary 2", "nonconvex speed-up exponents"),
    ("fedprox.lemma1", _F, "Lemma 1, eq. (3)", "model estimation error ≤ (λ/2)(R² − heterogeneity estimate)"),
    ("fedprox.thm1", _F, "Theorem 1, eqs. (4)–(6)", "statistical error with the adaptive λ"),
    ("fedprox.lemma2", _F, "Lemma 2", "μ_g, L_g, μ_ℓ, L_ℓ, L_w"),
    ("fedprox.lemma3", _F, "Lemma 3", "∇F_i(w) = λ(w − prox(w))"),
    ("fedprox.thm2", _F, "Theorem 2, eq. (12)", "linear convergence of one-stage FedProx (Algorithm 1)"),
    ("fedprox.cor1", _F, "Corollary 1, eqs. (13)–(14)", "communication O(κ_g log 1/ε), computation independent of λ"),
    ("perfedavg.lemma4_2", _M, "Lemma 4.2", "smoothness of the MAML objective, 4L + αρB"),
    ("perfedavg.lemma4_3", _M, "Lemma 4.3", "bias and second moment of the stochastic gradient estimate"),
    ("perfedavg.lemma4_4", _M, "Lemma 4.4", "gradient diversity of the MAML objectives, 3B²α²γ_H² + 192γ_G²"),
    ("perfedavg.tv", _M, "eq. (14a)", "γ_G², γ_H² from total-variation distances"),
    ("perfedavg.w1", _M, "eq. (16)", "γ_G², γ_H² from 1-Wasserstein distances"),
    ("perfedavg.thm4_5", _M, "Theorem 4.5, Corollary 4.6", "Per-FedAvg stationarity rate"),
    ("perfedavg.propf1", _M, "Proposition F.1, Corollary F.2", "client drift"),
    ("perfedavg.appendix_h", _M, "Appendix H", "first-order and Hessian-free estimators' bounds"),
    ("gd.strongly_convex", _T, "ch. 2, GD, strongly convex", "F(xᵗ) − F* ≤ (1 − μη)ᵗ (F(x⁰) − F*)"),
    ("gd.nonconvex", _T, "ch. 2, GD, nonconvex", "(1/T)Σ‖∇F(xᵗ)‖² ≤ 2(F(x⁰) − F*)/(ηT)"),
    ("sgd.strongly_convex", _T, "ch. 2, Theorem 3", "SGD, strongly convex, both step rules"),
    ("sgd.nonconvex", _T, "ch. 2, Theorem 4", "SGD, nonconvex"),
    ("fw.convex", _T, "ch. 2, Theorem 5", "Frank–Wolfe, convex: 2LR²/(t+2)"),
    ("fw.nonconvex", _T, "ch. 2, Theorem 6", "Frank–Wolfe, nonconvex"),
)


def paper_citation(key: str) -> str:
    """The full citation of a paper key (a ``Statement.paper`` value)."""
    return PAPERS.get(key, key)


def known_gaps(checked_ids=None):
    """``[(id, paper, where, line)]`` (paper: its short name) of the listed statements the registry
    does not check."""
    if checked_ids is None:
        from .registry import catalogue

        checked_ids = set(catalogue())
    return [(sid, SHORT.get(p, p), where, line) for sid, p, where, line in STATEMENTS
            if sid not in checked_ids]
