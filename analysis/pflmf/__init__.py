"""pFL^MF (Dadras, Stich, Yurtsever; the Dadras thesis §4.1, Paper I): personalised FL as low-rank
matrix optimisation, its Burer–Monteiro form and the alternating gradient method (Algorithm 1).

A paper package: ``PAPER`` cites the paper, ``FORMAL_STATEMENTS`` lists its formal statements
(theorems, lemmas, propositions, corollaries, and the equations a statement rests on) that the
catalogue checks or is meant to check, in the paper's order, as ``(id, where, one line)``.  The
checkers are the modules below this one; ``moreau.analysis.engine.registry`` finds them.

Source text.  The printed text checked is the thesis's (shared/papers/dadras-thesis-personalized-fl.md,
§4.1: eqs. (4.1), (4.2) and the rates "O(1/√T) in the stochastic gradient setting and O(1/T) in the
deterministic gradient setting"); the journal paper's Algorithm 1 and theorem were not available
to this catalogue, so the algorithm's details and the theorem's assumptions are reconstructions,
stated in ``moreau.fl.pflmf`` and in each checker.  The paper key is the thesis's file (the one
printed source at hand).
"""

from __future__ import annotations

PAPER = {
    "key": "dadras-thesis-personalized-fl.md",
    "short": "pFL^MF (Dadras thesis §4.1)",
    "citation": (
        "A. Dadras, S. U. Stich, A. Yurtsever, Personalized Federated Learning via Low-Rank Matrix "
        "Optimization, TMLR 2025 (OPT 2024 workshop version), as summarised in A. Dadras, Personalized "
        "Models and Optimization in Federated Learning, doctoral thesis, Umeå University, 2025, §4.1"
    ),
}

FORMAL_STATEMENTS = (
    ("pflmf.bm", "thesis §4.1, eqs. (4.1)-(4.2)", "Burer-Monteiro (4.2) reaches the rank-r optimum of (4.1)"),
    ("pflmf.deterministic", "thesis §4.1 (Paper I, main theorem)", "deterministic gradients: O(1/T)"),
    ("pflmf.stochastic", "thesis §4.1 (Paper I, main theorem)", "stochastic gradients: O(1/sqrt(T))"),
)
