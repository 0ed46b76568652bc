r"""perfedavg.appendix_h — Per-FedAvg, Appendix H: Lemmas H.1 (first order) and H.2 (Hessian free).

Statement (paper), for α ∈ [0, 1/L], any w, Assumptions 2-4, independent batches D, D', D'':

H.1 (FO-MAML, eq. (112)): the estimate ∇̃f_i(w − α∇̃f_i(w, D), D') of ∇F_i(w) satisfies

    ‖E[∇̃F_i(w) − ∇F_i(w)]‖ ≤ m_F^FO := αL(σ_G/√D + B),
    E‖∇̃F_i(w) − ∇F_i(w)‖² ≤ (σ̃_F^FO)² := 2σ_G²(1/D' + (αL)²/D) + 2(αLB)².

H.2 (HF-MAML, eqs. (120)-(121)): g̃ = ∇̃f_i(w − α∇̃f_i(w, D), D') and the estimate
g̃ − α d̃, d̃ = (∇̃f_i(w + δg̃, D'') − ∇̃f_i(w − δg̃, D''))/(2δ), satisfies

    ‖E[∇̃F_i(w) − ∇F_i(w)]‖ ≤ m_F^HF := α(2Lσ_G/√D + Lσ_G/√D' + ρδB²),
    E‖∇̃F_i(w) − ∇F_i(w)‖² ≤ (σ̃_F^HF)² := 6σ_G²(2(αL)²/D + 2/D' + α²/(2δ²D'')) + 2(αρδ)²B⁴.

ρ: Assumption 3 (Hessian Lipschitz).  The text of §5 writes the difference quotient with δ in
place of 2δ; Appendix H (119), (121) and the proof use 2δ, as does ``moreau.fl.per_fedavg``: the
lemmas hold as printed, and §5's divisor read into H.2 is the reading "§5: difference quotient
over δ" (an inconsistency of the paper's text, expected to fail).

Local constants (as in perfedavg.lemma4_3): L exact; B = ‖∇f(w − α∇f(w))‖ (the only gradient the
proofs bound by B: (116), (129)); σ_G² the largest per-sample gradient variance over w and every
w − α∇̃f(w, D) (H.1 and the H.2 bias), and also over every w ± δg̃ for the H.2 second moment (the
proof uses (11) there, (127)); each at most the printed sup, so a pass is a pass as printed.
ρ: 0 on quadratics; logistic: (1/(6√3)) mean_j ‖x_j‖³, the exact Hessian-Lipschitz constant when the
samples share one feature vector (up to sign), a valid upper bound otherwise.

Instances and expectations: those of perfedavg.lemma4_3 (``perfedavg.estimators.instances``), with δ
log-uniform (10⁻² to 10 over the curvature scale; 10/L on half the adversarial quadratics).  On
quadratics both estimates have closed-form moments: FO is eq. (8) without its Hessian factor, and
HF *is* eq. (8) (the central difference is exact), whatever δ.  On logistic samples the
expectations are exact (every D, and for HF every pair (D, D'), enumerated; D'' in closed form)
or Monte Carlo with empirical-Bernstein intervals (D, D' = 10, 40).

Claimed by the paper: upper bounds.  What the check shows: H.1's bias bound is attained, with
identical samples (σ_G = 0) and ∇f(w − α∇f(w)) along an eigenvector of ±L: the bias is then
α‖∇²f(w)∇f(w − α∇f(w))‖ = αLB exactly; its second-moment bound is within a factor 2 (ratio 1/2 at
stationary points of shared-A quadratics: the factor 2 of (117) is not needed when the FO
estimate is unbiased for G, as on quadratics).  H.1 never uses α ≤ 1/L: its parts also hold for
αL ∈ (1, 4] (checked as a separate part).  H.2 is loose on quadratics (ratio at most 1/3, the
same 12-versus-4 as Lemma 4.3), and its ρδB² terms are needed: on a single logistic sample the
bias is α‖d − ∇²f(w)g‖ > 0 with σ_G = 0.  §5's δ-divisor estimate violates H.2 (a finding: the
reading "§5: difference quotient over δ" fails).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import QUADRATIC_SCALING, Mutant, Reading, Sides, Statement, scale_fields
from moreau.analysis.perfedavg.estimators.instances import FAMILIES, logistic_instances, quadratic_instances
from moreau.analysis.perfedavg.estimators.sides import (
    LEVEL,
    ZERO_PART,
    bound_sides,
    logistic_parts,
    quadratic_parts,
)

__all__ = ["STATEMENTS"]

CLAIM = {
    "m_FO": lambda alpha, L, sG, B, D: alpha * L * (sG / np.sqrt(D) + B),
    "s2_FO": lambda alpha, L, sG2, B, D, D1: (
        2 * sG2 * (1 / D1 + (alpha * L) ** 2 / D) + 2 * (alpha * L * B) ** 2
    ),
    "m_HF": lambda alpha, L, sG, rho, delta, B, D, D1: (
        alpha * (2 * L * sG / np.sqrt(D) + L * sG / np.sqrt(D1) + rho * delta * B**2)
    ),
    "s2_HF": lambda alpha, L, sG2, rho, delta, B, D, D1, D2: (
        6 * sG2 * (2 * (alpha * L) ** 2 / D + 2 / D1 + alpha**2 / (2 * delta**2 * D2))
        + 2 * (alpha * rho * delta) ** 2 * B**4
    ),
    "condition_FO": lambda alpha, L: (alpha >= 0) & (alpha <= 1 / L),
    "condition_HF": lambda alpha, L: (alpha >= 0) & (alpha <= 1 / L),
    "divisor": 2.0,  # d~ = (grad(w + delta g) - grad(w - delta g)) / (divisor delta), eq. (121)
}

#: §5's Hessian-free estimate read into Lemma H.2: the difference quotient over delta, not 2 delta
SECTION5 = "§5: difference quotient over δ"
READINGS = (
    Reading(
        SECTION5,
        {"divisor": 1.0},
        kind="inconsistency",
        expect="fails",
        why="Section 5 defines Per-FedAvg (HF) with (grad phi(u + delta v) - grad phi(u - delta v))/delta, "
        "Appendix H (119), (121) and Lemma H.2's proof with /(2 delta): with §5's divisor the Hessian term "
        "is doubled and H.2's bias bound fails (findings); a finding about §5's text, not a failure of "
        "the lemma",
    ),
)

PARTS = (
    "H.1 bias: ||E grad~F - grad F|| <= alpha L (sigma_G/sqrt(D) + B)",
    "H.1 second moment: <= 2 sigma_G^2 (1/D' + (alpha L)^2/D) + 2 (alpha L B)^2",
    "H.2 bias: <= alpha (2 L sigma_G/sqrt(D) + L sigma_G/sqrt(D') + rho delta B^2)",
    "H.2 second moment: <= 6 sigma_G^2 (2 (alpha L)^2/D + 2/D' + alpha^2/(2 delta^2 D'')) + "
    "2 (alpha rho delta)^2 B^4",
    "H.1 beyond its range: both bounds for alpha L in (1, 4] (the proof never uses alpha <= 1/L)",
)


def instances(family, trials, rng):
    if family == "quadratic":
        return quadratic_instances(rng, trials or 54)
    return logistic_instances(rng, trials or 20)


def _moments(batch, kind, divisor):
    return (quadratic_parts if "A" in batch else logistic_parts)(batch, kind, divisor)


def prepare(batch):
    """Claim-independent moments of both estimates (HF with the printed divisor 2)."""
    quad = "A" in batch
    if quad:
        consts = {
            "L": "exact: max |eig(mean A_j)|",
            "rho": "exact: 0 (constant Hessians)",
            "sigma_G^2": "exact: max per-sample gradient variance over w, every u_D (and every w +- delta g~ "
            "for H.2's second moment): hull vertices",
            "B": "||grad f(w - alpha grad f(w))|| (the proofs' only use of B)",
            "expectations": "exact closed forms (sample moments)",
        }
    else:
        consts = {
            "L": "exact: lambda_max(X^T X)/(4n)",
            "rho": "(1/(6 sqrt 3)) mean ||x_j||^3: exact for shared features, a valid bound otherwise",
            "sigma_G^2": "exact where enumerated (over w, every u_D, every w +- delta g~); over the draws for "
            "D = 10, 40",
            "B": "||grad f(w - alpha grad f(w))||",
            "expectations": f"exact enumeration (D, D' <= 3); D, D' = 10, 40: Monte Carlo, "
            f"{batch['cD'].shape[1]} draws, empirical Bernstein {LEVEL} two-sided",
        }
    return {
        "batch": batch,
        "consts": consts,
        "fo": _moments(batch, "first_order", 2.0),
        "hf": {2.0: _moments(batch, "hessian_free", 2.0)},
    }


def evaluate(data, claim):
    batch, fo, consts = data["batch"], data["fo"], data["consts"]
    div = float(claim["divisor"])
    hf = data["hf"][div] if div in data["hf"] else _moments(batch, "hessian_free", div)
    alpha, D, D1, D2, delta = (batch[k] for k in ("alpha", "D", "D1", "D2", "delta"))
    L = fo["L"]
    level = None if "A" in batch else LEVEL
    ci = (lambda v, k: None) if "A" in batch else (lambda v, k: v[k])
    m_fo = claim["m_FO"](alpha, L, np.sqrt(fo["sG2"]), fo["B"], D)
    s_fo = claim["s2_FO"](alpha, L, fo["sG2"], fo["B"], D, D1)
    m_hf = claim["m_HF"](alpha, L, np.sqrt(hf["sG2"]), hf["rho"], delta, hf["B"], D, D1)
    s_hf = claim["s2_HF"](alpha, L, hf["sG2_hf"], hf["rho"], delta, hf["B"], D, D1, D2)
    app_fo, app_hf = claim["condition_FO"](alpha, L), claim["condition_HF"](alpha, L)
    out = bound_sides(
        [
            (
                PARTS[0],
                fo["bias"],
                m_fo,
                ci(fo, "bias_ci"),
                1,
                app_fo,
                fo["scale"],
                "attained (ratio 1): identical samples, grad f(w - alpha grad f(w)) along an eigenvector of +-L",
            ),
            (
                PARTS[1],
                fo["second"],
                s_fo,
                ci(fo, "second_ci"),
                2,
                app_fo,
                fo["scale"],
                "at most 1/2 on quadratics (E FO = G there)",
            ),
            (
                PARTS[2],
                hf["bias"],
                m_hf,
                ci(hf, "bias_ci"),
                1,
                app_hf,
                hf["scale"],
                "0 on quadratics (HF = eq. (8) there)",
            ),
            (
                PARTS[3],
                hf["second"],
                s_hf,
                ci(hf, "second_ci"),
                2,
                app_hf,
                hf["scale"],
                "at most 1/3 on quadratics; the rho terms carry single logistic samples",
            ),
        ],
        consts,
        level,
    )
    # H.1 where its printed range does not reach: per instance the part with the larger ratio
    beyond = (alpha * L > 1) & (alpha * L <= 4) & (m_fo > 0) & (s_fo > 0)
    worst = fo["bias"] / np.where(m_fo > 0, m_fo, 1.0) >= fo["second"] / np.where(s_fo > 0, s_fo, 1.0)
    out[PARTS[4]] = Sides(
        np.where(worst, fo["bias"], fo["second"]),
        np.where(worst, m_fo, s_fo),
        "upper",
        applicable=beyond,
        constants=consts,
        role="auxiliary",
        note="not the paper's claim (its range is alpha <= 1/L): the proof does not use the range",
    )
    return out


_FINDINGS = (
    "Appendix H vs Section 5: §5 defines the Hessian-free estimate with (grad phi(u + delta v) - grad phi(u - delta v))"
    "/delta, Appendix H (121) and the proof of Lemma H.2 with /(2 delta). With §5's divisor the Hessian term is "
    "doubled and Lemma H.2's bias bound fails whenever sigma_G is small: one logistic sample, x = 1, y = 1 (f(w) = "
    "log(1 + e^-w), L = 1/4, rho = 1/(6 sqrt 3), B = 1), w = 0, alpha = 1/L = 4, delta = 0.1, sigma_G = 0: "
    "grad F(0) = 0 but §5's estimate is 0.119 while m_F^HF = alpha rho delta B^2 = 0.0385 (moreau check "
    "perfedavg.appendix_h: the reading '§5: difference quotient over δ', an inconsistency of the paper's "
    "text, fails; Lemma H.2 holds as printed). moreau.fl.per_fedavg follows (121).",
    "Lemma H.1's bias bound is attained: identical samples (sigma_G = 0), 1/2 x^T A x - b^T x with A = diag(-1, 0.5), "
    "b = (-1, 0), w = 0 (grad f(0) = (1, 0)), alpha = 0.5: grad f(w - alpha grad f(w)) = (1.5, 0), the FO bias is "
    "alpha ||A (1.5, 0)|| = 0.75 = alpha L B. Its second-moment bound is loose by 2 on quadratics (ratio 1/2).",
    "Lemma H.1 holds for every alpha >= 0, not only alpha <= 1/L: (33), (35) and (116) do not use the range "
    "(checked on alpha L in (1, 4] as an auxiliary part).",
)

STATEMENTS = (
    Statement(
        id="perfedavg.appendix_h",
        source="Per-FedAvg, Appendix H, Lemmas H.1 and H.2",
        paper="per-fedavg-maml.md",
        latex=r"m_F^{FO} = \alpha L\Big(\frac{\sigma_G}{\sqrt D} + B\Big),\ (\tilde\sigma_F^{FO})^2 = 2\sigma_G^2"
        r"\Big(\frac1{D'} + \frac{(\alpha L)^2}{D}\Big) + 2(\alpha LB)^2;\ m_F^{HF} = \alpha\Big(\frac{2L\sigma_G}"
        r"{\sqrt D} + \frac{L\sigma_G}{\sqrt{D'}} + \rho\delta B^2\Big),\ (\tilde\sigma_F^{HF})^2 = 6\sigma_G^2"
        r"\Big(\frac{2(\alpha L)^2}{D} + \frac2{D'} + \frac{\alpha^2}{2\delta^2D''}\Big) + 2(\alpha\rho\delta)^2B^4",
        text="bias and second moment of the first-order (H.1) and Hessian-free (H.2) estimates of grad F_i are at most "
        "m_F and sigma~_F^2 as printed, alpha in [0, 1/L]",
        assumptions=(
            "alpha in [0, 1/L]",
            "f_i L-smooth, ||grad f_i|| <= B (Assumption 2)",
            "hess f_i rho-Lipschitz (Assumption 3)",
            "per-sample gradient variance <= sigma_G^2 (Assumption 4)",
            "D, D', D'' independent i.i.d. batches (with replacement); delta > 0",
        ),
        scaling={
            "quadratic": scale_fields({**QUADRATIC_SCALING, "alpha": (2, -1), "delta": (2, -1)}),
            "logistic": scale_fields(
                {"X": (-1, 0), "w": (1, 0), "alpha": (2, 0), "delta": (2, 0)}, c_free=False
            ),
        },
        families=FAMILIES,
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        prepare=prepare,
        claim=CLAIM,
        readings=READINGS,
        mutants=(
            Mutant(
                "H.1 bias: B term dropped (alpha L sigma_G/sqrt(D))",
                {"m_FO": lambda a, L, sG, B, D: a * L * sG / np.sqrt(D)},
            ),
            Mutant("H.1 bias: B -> B/2", {"m_FO": lambda a, L, sG, B, D: a * L * (sG / np.sqrt(D) + B / 2)}),
            Mutant(
                "H.1 second moment: 2 -> 0.9",
                {
                    "s2_FO": lambda a, L, g, B, D, D1: (
                        0.9 * g * (1 / D1 + (a * L) ** 2 / D) + 0.9 * (a * L * B) ** 2
                    )
                },
            ),
            Mutant(
                "H.1 second moment: 1/D' -> 1/D'^2",
                {
                    "s2_FO": lambda a, L, g, B, D, D1: (
                        2 * g * (1 / D1**2 + (a * L) ** 2 / D) + 2 * (a * L * B) ** 2
                    )
                },
            ),
            Mutant(
                "H.2 bias: rho delta B^2 dropped",
                {
                    "m_HF": lambda a, L, sG, rho, dl, B, D, D1: (
                        a * (2 * L * sG / np.sqrt(D) + L * sG / np.sqrt(D1))
                    )
                },
            ),
            Mutant(
                "H.2 bias: the sigma_G terms 12x smaller (below what the logistic instances reach, 0.085)",
                {
                    "m_HF": lambda a, L, sG, rho, dl, B, D, D1: (
                        a * ((2 * L * sG / np.sqrt(D) + L * sG / np.sqrt(D1)) / 12 + rho * dl * B**2)
                    )
                },
            ),
            Mutant(
                "H.2 second moment: 6 -> 1.9",
                {
                    "s2_HF": lambda a, L, g, rho, dl, B, D, D1, D2: (
                        1.9 * g * (2 * (a * L) ** 2 / D + 2 / D1 + a**2 / (2 * dl**2 * D2))
                        + 2 * (a * rho * dl) ** 2 * B**4
                    )
                },
            ),
            Mutant(
                "H.2 second moment: alpha^2/(2 delta^2 D'') -> alpha^2/(2 delta^2 D''^2)",
                {
                    "s2_HF": lambda a, L, g, rho, dl, B, D, D1, D2: (
                        6 * g * (2 * (a * L) ** 2 / D + 2 / D1 + a**2 / (2 * dl**2 * D2**2))
                        + 2 * (a * rho * dl) ** 2 * B**4
                    )
                },
            ),
            Mutant(
                "H.2 second moment: rho term dropped",
                {
                    "s2_HF": lambda a, L, g, rho, dl, B, D, D1, D2: (
                        6 * g * (2 * (a * L) ** 2 / D + 2 / D1 + a**2 / (2 * dl**2 * D2))
                    )
                },
            ),
            Mutant(
                "H.2 condition relaxed: alpha <= 4/L", {"condition_HF": lambda a, L: (a >= 0) & (a <= 4 / L)}
            ),
            Mutant("inequality reversed (H.1 bias)", {"flip": (PARTS[0],)}),
        ),
        consistency_checks={
            ZERO_PART: "definitional: where the bound is 0 the estimate is exact (lhs = 0), a "
            "consistency check of the instances' sides that no claim entry enters"
        },
        equivalent_mutants={
            "H.1 condition relaxed (alpha <= 4/L, or any alpha >= 0)": "true: H.1's proof does not use alpha <= 1/L "
            "((33), (35), (116) hold for every alpha); the auxiliary part checks alpha L in (1, 4]",
            "H.1 second moment: 2 -> 1": (
                "true on quadratics (the FO estimate's mean is G = grad f(w - alpha grad f(w)) there, so "
                "the cross term of (117) vanishes; the ratio 1/2 is attained) and far from refuted on "
                "logistic data"
            ),
            "H.2 bias: any change of the sigma_G terms": "the HF estimate is unbiased on quadratics; on logistic data "
            "the sigma_G terms are never approached (bias ratio below 0.2)",
        },
        findings=_FINDINGS,
    ),
)
