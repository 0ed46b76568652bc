"""pFedMe (T Dinh, Tran, Nguyen, NeurIPS 2020): the Moreau-envelope statements.

A paper package: ``PAPER`` cites the paper, ``FORMAL_STATEMENTS`` lists its formal statements
(theorems, lemmas, propositions, corollaries, and the equations a statement rests on) that the
catalogue checks or is meant to check, in the paper's order, as ``(id, where, one line)``.  The
checkers are the modules below this one; ``moreau.analysis.engine.registry`` finds them.
"""

from __future__ import annotations

PAPER = {
    "key": "pfedme-moreau-envelopes.md",
    "short": "pFedMe",
    "citation": (
        "C. T. Dinh, N. H. Tran, T. D. Nguyen, Personalized Federated Learning with Moreau "
        "Envelopes (pFedMe), NeurIPS 2020"
    ),
}

FORMAL_STATEMENTS = (
    ("pfedme.prop1", "Proposition 1, eq. (6)", "envelope smoothness λ, strong convexity λμ/(λ+μ), gradient"),
    ("pfedme.lemma1", "Lemma 1", "inexact personalised model: E‖θ̃ − θ̂‖² ≤ δ²"),
    ("pfedme.lemma2", "Lemma 2 (a), (b)", "bounded diversity of the envelopes"),
    ("pfedme.thm1", "Theorem 1 (a), (b)", "strongly convex pFedMe: linear rate to a λ²δ²/μ_F neighbourhood"),
    (
        "pfedme.thm1b",
        "Theorem 1 (b)",
        "personalised models' error (deterministic core exactly on quadratics)",
    ),
    ("pfedme.thm2", "Theorem 2 (a), (b)", "nonconvex pFedMe: stationarity rate"),
    ("pfedme.cor1", "Corollary 1", "choices of β and the linear / quadratic speed-up exponents"),
    ("pfedme.cor2", "Corollary 2", "nonconvex speed-up exponents"),
    (
        "pfedme.inner_complexity",
        "§3.2, after eq. (8)",
        "K = O(κ log(d/ν)) inner gradient steps reach ‖∇h̃_i‖² ≤ ν",
    ),
    ("pfedme.remark2", "Remark 2", "Corollary 2's speed-up O(1/(TRN)^(2/3)) beats O(1/√(TRN))"),
)
