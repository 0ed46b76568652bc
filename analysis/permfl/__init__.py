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
the paper; all checked in the code, at commit 85f46c6).  Each item ends with its evidence in brackets:
a test (``path::function``) or a documentation section (``page § heading``); "read in the code" marks
an item transcribed from the source but not exercised by the audit's runs (equal teams, every team
and device sampled).  (1) ``UserPerMFL`` passes its arguments to ``User.__init__``
positionally, shifted by one, so the device optimizer's λ is the local step count
``local_epochs`` (default 20) while the team update uses λ (``moreau.fl.permfl(lam_device=L)``
reproduces it, to 4.7e-16 on the audit's runs; with L = 1 it is invisible: the single device step
starts at the team model, where the penalty is zero) [evidence: docs/audits.md § PerMFL;
tests/test_audit_pfl.py::test_each_deviation_is_diagnosed_with_its_parameter;
tests/test_audit_torch_pfl.py::test_each_torch_deviation_is_diagnosed_with_its_parameter];
(2) devices take mini-batch steps (``get_next_train_batch``, batch 124: a full batch on devices of at
most 124 samples) [evidence: docs/audits.md § PerMFL];
(3) the team average θ̄ divides by ``num_users`` (devices selected per team), equal to 1/N_i only
with full participation of equal teams [evidence: read in the code, docs/audits.md § PerMFL];
(4) ``p_teams`` teams are sampled per global round
(``random.sample``) while w̄ still averages all M team models with 1/M (stale models of the
teams not sampled); device sampling is seeded by the team-round index (``np.random.seed(round)``)
[evidence: read in the code, docs/audits.md § PerMFL]; (5) team weights 1/M and
device weights 1/N_i (eq. (4.3)); the sample-size weights ``tau`` are computed and unused
[evidence: read in the code, docs/thesis-systems.md § The thesis's systems];
(6) the mini-batches are sequential and unshuffled (``get_next_train_batch`` walks each device's
data in its stored order: no shuffle, the iterator restarts after the last, short, batch), not i.i.d.
draws (``moreau.fl.permfl``'s ``batch_size`` draws i.i.d. with replacement); measured: batch 8 fitted
exactly (B = 8, to 3.1e-16) [evidence: docs/audits.md § PerMFL;
tests/test_audit_pfl.py::test_each_deviation_is_diagnosed_with_its_parameter];
(7) the default β = 0.99 with γ = 5 gives βγ = 4.95 > 1, violating the reconstructed bound β ≤ 1/γ:
the global step x ← (1 − βγ)x + βγ w̄ overshoots w̄ (its own factor 1 − βγ = −3.95, not a convex
combination).  Measured, this does NOT make the defaults diverge: the full round composes that step
with the team rounds, which pull w̄ towards x, and its linear part has spectral radius 0.71 on the
audit's instance (largest |eigenvalue| 0.707; 0.88 with every sample scaled by 4); the default run
(K = 10, L = 20) settles (last step 2e-16) [evidence: docs/audits.md § PerMFL];
(8) where the defaults' run goes: it settles 9.07 % (relative) from the optimum of (4.3) on the
audit's instance, of which the paper's algorithm itself (λ_d = λ, finite K and L) accounts for
5.67 %; with K = L = 1 (where the code equals the paper's algorithm) it is still 35.05 % away after
100 rounds, not settled.  The review's "2.4 % (K = 10, L = 20)" was on another instance: the bias
depends on the instance (the reconstruction's bias is measured by ``permfl.thm1``) [evidence:
docs/audits.md § PerMFL;
tests/catalogue/permfl/test_thm1_rate_bias.py::test_the_run_goes_to_the_reweighted_point_not_to_x_star];
(9) ``select_users`` runs every device of a team only when the team has exactly ``num_users``
devices (one number for all teams): a smaller team fails an assertion, so teams of unequal sizes
cannot run with every device [evidence: docs/audits.md § PerMFL].
(1) means the device penalty is the local step count, 20 by default, whatever
λ is set to.  ``moreau.fl.permfl`` samples teams (``S``) and devices (``devices``) with a seed and
averages the sampled ones, not (3)–(4) [evidence:
tests/test_fl_permfl_sampling.py::test_sampled_permfl_equals_a_loop_over_teams_and_devices].

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
