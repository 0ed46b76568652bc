r"""PerMFL (Banerjee, Dadras, Yurtsever, Bhuyan, ICONIP 2024): personalised multi-tier FL.

A paper package: ``PAPER`` cites the paper, ``FORMAL_STATEMENTS`` lists its formal statements
(theorems, lemmas, propositions, corollaries, and the equations a statement rests on) that the
catalogue checks or is meant to check, in the paper's order, as ``(id, where, one line)``.  The
checkers are the modules below this one; ``moreau.analysis.engine.registry`` finds them.

**What is read, what is reconstructed.**  The paper's full text (arXiv 2407.14251) could not be
obtained here: the public summaries (its abstract; the thesis's §4.2) say "linear convergence
rates for smooth strongly convex problems and sub-linear convergence rates for smooth non-convex
problems", "under suitable conditions", "with explicit parameter bounds".  The objective is the
thesis's eq. (4.3), printed.  The update rules are the authors' code (sourasb05/PerMFL_1:
``FLAlgorithms/servers/serverPerMFL.py``, ``users/userPerMFL.py``, ``optimizers/fedoptimizer.py``),
which a third-party report on that code (kaushik-kyle/PerMFL_1) transcribes with the same three
equations and quotes the paper's condition γ > 2λ and its EMNIST-10 settings.  So the
statements ``permfl.thm1`` and ``permfl.thm2`` are RECONSTRUCTIONS, each built from what any
theorem of that description must contain, with constants derived here (never read from the paper):

* the explicit step bounds are the smoothness bounds of each level: α ≤ 1/(L+λ) (device
  problem f_ij + (λ/2)‖·−w‖², (L+λ)-smooth), η ≤ 1/(λ+γ) (team problem F_i + (γ/2)‖·−x‖², F_i
  λ-smooth, so the code's "stability" 1 − ηλ − ηγ ≥ 0), β ≤ 1/γ (G γ-smooth: the code's
  x ← (1 − βγ)x + βγ w̄ is a convex combination);
* Theorem 1 (strongly convex): the contraction factors 1 − α(μ+λ), 1 − η(μ_F+γ), 1 − βμ_G of the
  three levels with exact inner solves (μ_F = λμ/(λ+μ), μ_G = γμ_F/(γ+μ_F), pFedMe's
  Proposition 1 applied twice) and linear convergence of the algorithm as run (K team rounds,
  L local steps) at the composed factor 1 − β(1 − ρ̃_team^K)μ̃_G, μ̃_F = (1 − ρ_dev^L)μ_F (derived
  here, attained by aligned devices), to a fixed point that is not the optimum of (4.3) (finite K, L
  reweight teams and devices: ``round_map.reweighted_fixed_point``; the bias is measured);
* Theorem 2 (nonconvex): λ > 2L and γ > 2λ (the latter quoted from the paper by the report;
  the former pFedMe's condition one level down) make F_i λ-smooth and G_i γ-smooth, and GD on
  G with β ≤ 1/γ gives (1/T)Σ‖∇G(x^t)‖² ≤ 2(G(x⁰) − G*)/(βT).

Differences between the authors' code and the equations (update rules as the report transcribes
the paper; all checked in the code): (1) ``UserPerMFL`` passes its arguments to ``User.__init__``
positionally, shifted by one, so the device optimizer's λ is the local step count
``local_epochs`` (default 20) while the team update uses λ (``moreau.fl.permfl(lam_device=L)``
reproduces it); (2) devices take mini-batch steps (``get_next_train_batch``, batch 124);
(3) the team average θ̄ divides by ``num_users`` (devices selected per team), equal to 1/N_i only
with full participation of equal teams; (4) ``p_teams`` teams are sampled per global round
(``random.sample``) while w̄ still averages all M team models with 1/M (stale models of the
teams not sampled); device sampling is seeded by the team-round index; (5) team weights 1/M and
device weights 1/N_i (eq. (4.3)); the sample-size weights ``tau`` are computed and unused;
(6) the mini-batches are sequential and unshuffled (``get_next_train_batch`` walks each device's
data in its stored order: no shuffle), not i.i.d. draws (``moreau.fl.permfl``'s
``batch_size`` draws i.i.d. with replacement); (7) the default β = 0.99 with γ = 5 gives βγ = 4.95 > 1,
violating the reconstructed bound β ≤ 1/γ: the global step x ← (1 − βγ)x + βγ w̄ overshoots w̄ (not a
convex combination).  (1) means the device penalty is the local step count, 20 by default, whatever
λ is set to.  ``moreau.fl.permfl`` samples teams (``S``) and devices (``devices``) with a seed and
averages the sampled ones, not (3)–(4).

Statements here: ``permfl.objective`` (thesis eq. (4.3): nested envelopes, the limits γ → ∞,
λ → ∞, both, and one device per team), ``permfl.thm1``, ``permfl.thm2``.
"""

from __future__ import annotations

PAPER = {
    "key": "dadras-thesis-personalized-fl.md",
    "short": "PerMFL (thesis Paper II)",
    "citation": (
        "S. Banerjee, A. Dadras, A. Yurtsever, M. Bhuyan, Personalized Multi-tier Federated Learning, "
        "ICONIP 2024 (arXiv 2407.14251); Paper II of A. Dadras, Personalized Models and Optimization in "
        "Federated Learning, doctoral thesis, Umeå University, 2025, §4.2"
    ),
}

FORMAL_STATEMENTS = (
    (
        "permfl.objective",
        "thesis §4.2, eq. (4.3)",
        "nested envelopes: limits γ → ∞ (pFedMe over devices), λ → ∞ "
        "(pFedMe over teams), both (GlobalTrain), one device per team (pFedMe with λγ/(λ+γ))",
    ),
    (
        "permfl.thm1",
        "Paper II, strongly convex theorem (reconstructed)",
        "linear rate under α ≤ 1/(L+λ), η ≤ 1/(λ+γ), β ≤ 1/γ",
    ),
    (
        "permfl.thm2",
        "Paper II, nonconvex theorem (reconstructed)",
        "λ > 2L, γ > 2λ: sublinear stationarity (1/T)Σ‖∇G(xᵗ)‖² ≤ 2(G(x⁰) − G*)/(βT)",
    ),
)
