r"""pfedme.thm2 — pFedMe (T Dinh, Tran, Nguyen, NeurIPS 2020), Theorem 2 (a), (b).

Statement (paper): let Assumptions 1(b) (f_i nonconvex, L-smooth), 2 and 3 (σ_f² ≥
sup_w (1/N)Σ‖∇f_i(w) − ∇f(w)‖²) hold.  If η ≤ η̂₂/(βR), η̂₂ := 1/(75L_Fλ²), λ ≥ √(8L² + 1),
β ≥ 1, then

(a) E‖∇F(w_{t*})‖² ≤ O(Δ_F/(η̂₂T) + (Δ_F L_F σ²_{F,2}(N/S − 1))^{1/2}/√(TN)
    + Δ_F^{2/3}(Rσ²_{F,2} + λ²δ²)^{1/3}/(β^{4/3}R^{1/3}T^{2/3}) + λ²δ²),
(b) (1/N)Σ_i E‖θ̃_i^{t*}(w_{t*}) − w_{t*}‖² ≤ O(E‖∇F(w_{t*})‖²) + O(σ²_{F,2}/λ² + δ²),

Δ_F = F(w_0) − F*, t* uniform on {0, …, T−1}, L_F = λ (Proposition 1), σ²_{F,2} =
λ²σ_f²/(λ² − 8L²) (Lemma 2(b)), δ the accuracy of the δ-approximate inner solves, E‖θ̃ − θ̂‖ ≤ δ
(Section 3.2; Lemma 1 bounds E‖θ̃ − θ̂‖² ≤ δ²).  The paper file holds no appendix (no proof).

The claim (``CLAIM``) is the theorem as printed: the first term 2Δ_F/(η̂₂T) whatever η ≤ η̂₂/(βR), at a fixed
η a bound whose limit as T → ∞ is λ²δ² (0 with δ = 0: no drift), the S < N term (constant 100) with exponent
1/2 of N/S − 1, δ the text's.  Readings (``findings.READINGS``): "fixed-η terms, drift, second-moment δ" (the
repair, below: holds) and, each printed element alone, "printed first term Δ_F/(η̂₂T) only", "printed
no-drift limit only", "printed S < N term at fixed η only", "printed (N/S − 1)^(1/2) only" and the variant
"text's first-moment δ only" (each fails).

Assumptions checked: full gradients (Assumption 2 with γ_f = 0) except in the stochastic-gradient parts; S = N
and δ = 0 (exact inner solves) in the first parts, S < N and δ > 0 in their own parts (below), both together in
one.  With δ = 0 and S = N,
E‖∇F(w_{t*})‖² = (1/T)Σ_{t<T}‖∇F(w_t)‖² exactly (the iterates are deterministic); with S < N the
expectation over the sampling is computed exactly.  Models: nonconvex, L-smooth and bounded below, with a closed
form prox — separable double wells g(u) = La²/4 − Lu²/2 (|u| ≤ a/2), L(|u| − a)²/2 outside,
client i shifted by s_i (``moreau.analysis.pfedme.double_wells``: exact prox, envelope, F* by
enumerating pieces, σ_f² by breakpoints; quadratics with a negative eigenvalue are unbounded
below, Δ_F = ∞, and different curvatures make σ_f² = ∞).

Instances (family "quadratic": piecewise quadratics; N = 3, d = 2, 24 by default): half
identical clients (σ_f = 0), half heterogeneous (shifts s_i spread over ±1.5a, so at F's
minimiser some clients sit on the concave piece and others on the convex ones); L in
[0.1, 2], a in [1/2, 2]; λ = √(8L² + 1) exactly (the boundary) on a quarter, up to 3 times it
elsewhere, and on one in eight λ in (2L, √(8L² + 1)) (outside the theorem: not applicable; the
"condition relaxed" mutant must find them); (β, R) over (1, 1), (1, 3), (4, 2), (32, 5),
(1, 2), (2, 3); η = η̂₂/(βR)·2^{−k}, k over 0, 0, 3, 8 (the largest allowed step and smaller
ones: the theorem says *every* η ≤ η̂₂/(βR)); w_0 at the saddle s̄ (a stationary point), near it
(0.05a), at distance ~2a and ~30a.

Parts (numbers in the notes of the default run):

* exact: the closed-form loop against ``moreau.fl.pfedme`` (certified Newton prox on the same
  clients as a ``moreau.Objective``), 3 rounds.
* (a), first term, identical clients (σ²_{F,2} = 0 and δ = 0 leave only Δ_F/(η̂₂T)): for every
  T ≤ 1500, (1/T)Σ_{t<T}‖∇F(w_t)‖² ≤ the claim's first term.  The repair: the term 2Δ_F/(βRηT), with
  βRη in place of η̂₂ (equal at the largest step), constant 2 from the descent lemma (one
  round moves w by −βRη∇F(w) + e, ‖e‖ ≤ βRη·(λη(R−1)/2)(1 + λη)^R‖∇F(w)‖ with
  βRηλ ≤ 1/(75λ²): F decreases by at least ½βRη‖∇F‖²).
* (a), client drift, heterogeneous clients, R > 1, fixed η: pFedMe's limit w_∞ (the fixed
  point of the piecewise affine round map next to F's minimiser, solved exactly, attracting)
  is not stationary: lim_T (1/T)Σ‖∇F(w_t)‖² = ‖∇F(w_∞)‖² > 0, while the printed bound tends to
  λ²δ² = 0 as T → ∞ at fixed η (finding).  Checked: ‖∇F(w_∞)‖² ∝ η² (η·2^{−j}, j = 0..5,
  fitted exponent, atol 0.02), and the bound's limit at fixed η (as printed 0; the repair
  ‖∇F(w_∞)‖² ≤ 2k²σ²_{F,2}/(1 − k²λ²/(λ² − 8L²)),
  k = (1/R)Σ_{r<R}((1 + ηλ)^r − 1) ≈ ηλ(R − 1)/2, derived here: at the fixed point
  Σ_iΣ_r ∇F_i(w_{i,r}) = 0, so R‖∇F(w_∞)‖ ≤ (1/N)Σ_iΣ_r λ‖w_{i,r} − w_∞‖ ≤ Rk·((1/N)Σ‖∇F_i(w_∞)‖²)^{1/2},
  then Lemma 2(b).  It does not depend on β, nor does w_∞.  It is the T^{-2/3} term only when
  η shrinks with T (η ∝ T^{-1/3}): the printed "if η ≤ η̂₂/(βR)" has to be "for a tuned η".
* (b), δ = 0: the exact identity (1/N)Σ‖θ̂_i(w) − w‖² = (‖∇F(w)‖² + (1/N)Σ‖∇F_i(w) − ∇F(w)‖²)/λ²
  (∇F_i(w) = ∇f_i(θ̂_i(w)), the optimality condition of (3)), and with Lemma 2(b)
  (1/N)Σ‖θ̂_i(w) − w‖² ≤ ‖∇F(w)‖²/(λ² − 8L²) + 2σ²_{F,2}/λ², at iterates (rounds 0, 1, 10, 100,
  1500), F's minimiser, w_∞, points near the clients and far away; it holds pointwise, so in
  expectation over t*.

* S < N (``moreau.analysis.pfedme.outer_pieces``): the server samples S of N = 3 clients uniformly
  without replacement (Algorithm 1, line 9).  Instances: clients whose minimisers c_i = s_i ± a lie
  within a(λ + L)/(2λ) of each other, a random side per client and coordinate, w_0 = c̄ (= argmin F,
  Δ_F = 0) or inside the c_i's hull; certificate: every client stays on its outer piece on that hull
  (invariant: each round is a convex combination), so F_i = (h/2)‖w − c_i‖², h = λL/(λ + L), and
  E‖∇F(w_t)‖² = h²(q^{2t}‖w_0 − c̄‖² + κc_S V(1 − q^{2t})/(2 − κ)), κ = β(1 − (1 − ηh)^R), q = 1 − κ,
  c_S = (N/S − 1)/(N − 1), V = (1/N)Σ‖c_i − c̄‖², with closed-form Cesàro sums for every T.  Checked:
  the closed form against all C(N, S)^t sampling sequences enumerated through the closed-form prox
  loop (t ≤ 7, S = 1, 2; the tests also against a seeded Monte Carlo of ``moreau.fl.pfedme`` with an
  empirical-Bernstein interval); the claim's bound (as printed 2Δ_F/(βRηT) + 100(Δ_F L_Fσ²_{F,2}(N/S − 1)/(TN))^{1/2},
  the repair's fixed-η term) with the repair (1/T)Σ_{t<T}E‖∇F(w_t)‖² ≤ 2Δ_F/(βRηT) +
  2λβRη c_S σ²_{F,2} for T = 1, 2, 4, …, 2^60 (derived for R = 1: the descent lemma with the sampling
  variance c_S(1/N)Σ‖∇F_i − ∇F‖², bounded by Lemma 2(b), and λβη·λ² ≤ 1/75; checked for every (β, R) of
  the batch: with one curvature there is no drift); the sampling variance
  E‖∇F(w_t) − E∇F(w_t)‖² of the enumeration ∝ (N/S − 1)^1 (S = 1 against S = 2, every t); the floor
  lim_t E‖∇F(w_t)‖² ∝ η^1 (η·2^{−j}, j = 0..5; the drift floor is ∝ η²).  The printed term
  (Δ_F L_F σ²_{F,2}(N/S − 1))^{1/2}/√(TN) is the fixed-η term's value at η tuned to (Δ_F/T)^{1/2}: at a
  fixed η it vanishes as T → ∞ and at Δ_F = 0, the floor does not (finding).
* δ > 0 (Lemma 1, ‖θ̃ − θ̂‖ ≤ δ): every inner solve θ̃_i = θ̂_i + δu.  (a), the same u in every step (the
  worst case: outward on half the instances, a random direction on the others; identical clients on an
  outer piece, certified on the segment to the limit): ∇F(w_t) = hq^t(w_0 − c') + λδu, c' = c + λδu/h,
  checked against the closed-form prox loop with the error added (200 rounds); the reading
  (1/T)Σ_{t<T}‖∇F(w_t)‖² ≤ 2Δ_F/(βRηT) + λ²δ² (descent lemma for R = 1 with ‖λ(θ̃ − θ̂)‖ ≤ λδ:
  F(w_{t+1}) ≤ F(w_t) − (γ/2)‖∇F(w_t)‖² + (γ/2)λ²δ², γ = βη ≤ 1/λ) for T ≤ 2^60: the λ²δ² term holds
  with constant 1 and is attained (‖∇F(w_t)‖ → λδ).  A fresh uniform random unit u in every step
  (mean 0, exact second moments, certified on the ball of radius λδ/h): the same reading, whose λ²δ²
  term the errors reach only to a fraction ~hβη/(2N) (they average out).  (b): θ̃ = θ̂ + δ(θ̂ − w)/‖θ̂ − w‖,
  the farthest point of the δ-ball from w, at the (b) points: (1/N)Σ‖θ̃_i − w‖² = (1/N)Σ(‖θ̂_i − w‖ + δ)² ≤
  2(‖∇F(w)‖²/(λ² − 8L²) + 2σ²_{F,2}/λ²) + 2δ² ((x + y)² ≤ 2x² + 2y² and the δ = 0 reading); δ/a in
  [0.01, 3.2].
* The moments of δ, S < N with δ > 0, stochastic gradients (``moreau.analysis.pfedme.delta_moments``).  The
  text (Section 3.2) defines a δ-approximation by E‖θ̃ − θ̂‖ ≤ δ, Lemma 1 bounds E‖θ̃ − θ̂‖² ≤ δ²; the parts
  read δ through ``delta_of(first moment, root mean square)``: the text's as printed, Lemma 1's in the
  repair.  (a): fresh two-point errors e = (δ₁/p)u w.p. p, 0 otherwise (E‖e‖ = δ₁, E‖e‖² = δ₁²/p),
  identical clients with w_0 and u outward of the minimiser (every realisation stays on the outer piece,
  however large δ₁/p): exact
  E‖∇F(w_t)‖² = the biased closed form (mean δ₁u) + the fresh-error variance with E‖e − Ee‖² = δ₁²(1/p − 1),
  limit λ²δ₁²(1 + (1/p − 1)r), r = h²β²η²Σ_{r<R}A^{2r}/(Nκ(2 − κ)) ≈ hβη/(2N); p from 10^{-2}r to 10r, p = 1
  on one in eight.  (b): the (b) points with θ̃ = θ̂ + (δ₁/p)(θ̂ − w)/‖θ̂ − w‖ w.p. p (p in [1e-3, 0.5]):
  (1/N)Σ(x_i² + 2x_iδ₁ + δ₁²/p), x_i = ‖θ̂_i − w‖.  S < N with δ > 0: the sampling instances with client i's
  inner solves off by a fixed δu_i (one u for all on half): the sampling closed form with minimisers
  c_i + λδu_i/h, checked against all C(N, S)^t sequences enumerated through the prox loop with the errors
  (t ≤ 6), and the reading combine(sampling reading, λ²δ²) = their sum, with λ²δ² 1..10 times the S = 2
  sampling term (so that the larger term alone is exceeded).  Stochastic gradients: Theorem 2 holds γ_f only
  through δ (Lemma 1: δ² = 2(γ_f²/|D| + ν)/(λ − L)²; Lemma 1 itself is ``pfedme.lemma1``).  The mini-batch
  inner problem with ∇f + ζ (ζ uniform on {±γ_D e_k}, γ_D² = γ_f²/|D|) is solved by prox(w − ζ/λ) (residual
  checked, also on the concave piece), = θ̂ − ζ/(λ + L) on the outer piece (certified on the iterates' box
  widened by γ_D/λ): fresh errors of mean 0, so E‖∇F(w_t)‖² is the fresh-error closed form, checked against
  the reading 2Δ_F/(βRηT) + λ²δ² with Lemma 1's δ (ν = 0).

Claimed by the paper: rates (O(·)).  What the check shows (default run, seed 0): the first term
holds in the βRη reading with ratio up to 0.495 (the descent constant is ~1: on finding 1's instance at the
largest step the printed term with constant 1 is met with ratio 0.9994); read as printed (η̂₂ whatever η ≤
η̂₂/(βR)) it fails at k = 8 (finding 1).  Where a client sits on its concave piece at w_∞ (7 heterogeneous
instances with R > 1; 4 of them with λ in range and the same pieces over the η grid) ‖∇F(w_∞)‖² is
3e-15..8e-11 and ∝ η² (slopes 2.000..2.001), within the derived bound (ratio ≤ 4e-4: Cauchy–Schwarz over the
clients and Lemma 2(b)'s sup σ_f² are loose); elsewhere w_∞ is stationary to rounding (the
clients' maps share their slope).  The (b) identity holds to 2e-15 and the Lemma 2(b) form of (b)
with ratio 0.49..0.98 (exactly 1 − 8L²/λ² on identical clients away from stationary points).  S < N: the enumeration
meets the closed form to rounding (max error/allowed 7e-4); the fixed-η reading holds with ratio up to 0.499 (the
first term's transient; the sampling term alone is loose, limit ratio 1e-5..0.02), the variance exponent of
(N/S − 1) is 1 to 1e-9 and the floor's η-exponent 1.000 (floor 9e-11..3e-6 at S = 1), where the printed bound tends
to 0 (finding).  δ > 0: the loop meets the closed form (3e-4 of 1e-9 allowed), the λ²δ² reading holds with ratio 1
(attained in the limit) for a fixed u, 0.17..0.49 for fresh random errors (their floor 3e-9..3e-4 λ²δ²), (b) with
ratio 0.35..0.93.  Moments of δ: with Lemma 1's second moment (a) holds with ratio up to 1 (at p = 1; the
fresh fluctuation alone is loose, ratio down to 3e-9: it reaches only r·E‖e‖²) and (b) with ratio 0.37..0.70;
with the text's first moment both fail (the limit of (a) is 1..98 λ²δ₁² on the default run; finding 4).
S < N with δ > 0: the enumeration meets the closed form (1.2e-3 of allowed), the sum reading holds with ratio
up to 0.91, and the larger of the two terms alone fails on 9 instances (ratio up to 1.018: the sampling floor
adds to λ²δ²).  Stochastic gradients: the inner solution's residual is 2e-3 of 1e-13 allowed, the reading
with Lemma 1's δ holds with ratio 0.08..0.48, and dropping γ_f from δ (δ² = 2ν/(λ − L)² = 0) fails.
Not covered: S < N with clients on different pieces (the round map then is not affine on a certified
region); stochastic gradients and two-point errors with S < N or heterogeneous clients; ν > 0 in the
stochastic-gradient part (pfedme.lemma1 covers ν); the T^{-2/3} term's δ (it only matters for a tuned η).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Sides, Statement, fit_exponent, rate_sides, scale_fields
from moreau.analysis.pfedme.delta_moments import moment_parts
from moreau.analysis.pfedme.double_wells import (
    F_star,
    envelope,
    prox,
    ratio_range,
    sigma_f2,
    value_range,
    worst_pair,
)
from moreau.analysis.pfedme.minimal_counterexamples import MINIMAL_THM2
from moreau.analysis.pfedme.thm2.findings import (
    _FINDING_DRIFT,
    _FINDING_ETA,
    _FINDING_MOMENT,
    _FINDING_SAMPLING,
    _FINDING_SCALE,
    READINGS,
    delta_text,
    drift_printed,
    first_printed,
    sampling_printed,
)
from moreau.analysis.pfedme.thm2.instances import (
    ETA_STEPS,
    K_STEP,
    ROUNDS_B,
    T_MAX,
    _k,
    _trajectory,
    eta_hat_2,
    instances,
)
from moreau.analysis.pfedme.thm2.sampling_parts import PARTS_D, ext_parts

__all__ = ["STATEMENTS", "instances", "evaluate"]

_MACHINE = (
    "the checker's own machinery: a simulation equals the closed form it evaluates (no claim entry enters)"
)
#: parts no mutant can reject, and why
CONSISTENCY = {
    "(b) identity, delta = 0: (1/N) sum |theta_i(w) - w|^2 = (|grad F|^2 + (1/N) sum |grad F_i - grad F|^2)/lam^2": (
        "definitional: an identity of the envelope's gradient (Proposition 1), the step of (b)'s proof"
    ),
    "Algorithm 1 (exact inner) on double wells: closed-form loop = moreau.fl.pfedme (3 rounds)": _MACHINE,
    "S < N and delta > 0: E|grad F(w_t)|^2 over all C(N,S)^t sequences (closed-form prox loop, theta~ = theta^ + "
    "delta u_i) = closed form, t <= 6, S = 1, 2 of N = 3": _MACHINE,
    "S < N: E|grad F(w_t)|^2 over all C(N,S)^t sampling sequences (closed-form prox loop) = affine closed form, "
    "t <= 7, S = 1, 2 of N = 3": _MACHINE,
    "delta > 0: closed-form prox loop with theta~ = theta^ + delta u = affine closed form, 200 rounds": _MACHINE,
    "stochastic gradients: the mini-batch inner solution prox(w - zeta/lam) solves grad f + zeta + lam(theta - w) = 0 "
    "and is theta^ - zeta/(lam + L) on the outer piece": _MACHINE,
}

_O = (
    "Theorem 2 (a), (b) are printed with O(.): a changed constant is tested on the reading's explicit "
    "constants only, and rejecting it there refutes nothing printed"
)

#: Theorem 2 as printed (its readings: ``findings.READINGS``)
CLAIM = {
    "condition": lambda lam, L: lam >= np.sqrt(8 * L**2 + 1),
    # (a) first term 2 Delta_F/(eta_hat_2 T), for every eta <= eta_hat_2/(beta R)
    "first": first_printed,
    "drift_exponent_eta": 2.0,
    # (a) at a fixed eta, T -> inf: every term but lam^2 delta^2 vanishes (0 with delta = 0): no client drift
    "drift_bound": drift_printed,
    "b_bound": lambda gradF2, sF2, lam, L: gradF2 / (lam**2 - 8 * L**2) + 2 * sF2 / lam**2,
    # S < N at a fixed eta: the printed term (Delta_F L_F sigma_F2^2 (N/S - 1))^(1/2)/sqrt(TN), exponent 1/2 of N/S - 1
    "sampling": sampling_printed,
    "sampling_exponent": 0.5,
    "sampling_floor_eta": 1.0,
    # delta > 0: the descent lemma with the error lam (theta~ - theta^), |.| <= lam delta
    "delta_a": lambda Delta, eta, beta, R, T, lam, delta: (
        2 * Delta / (beta * R * eta * T) + (lam * delta) ** 2
    ),
    "b_delta": lambda gradF2, sF2, lam, L, delta: (
        2 * (gradF2 / (lam**2 - 8 * L**2) + 2 * sF2 / lam**2) + 2 * delta**2
    ),
    # the delta of the lam^2 delta^2 and delta^2 terms from an error's moments: the text's first moment (Section 3.2)
    "delta_of": delta_text,
    # S < N and delta > 0: the two terms add
    "delta_combine": lambda sampling, delta_term: sampling + delta_term,
    # Lemma 1 (Assumption 1(b)): delta^2 from the mini-batch variance gamma_f^2/|D| and the inner accuracy nu
    "lemma1_delta2": lambda gD2, nu, lam, L: 2 * (gD2 + nu) / (lam - L) ** 2,
}
PARTS = (
    "Algorithm 1 (exact inner) on double wells: closed-form loop = moreau.fl.pfedme (3 rounds)",
    "(a) identical clients, delta = 0, S = N: (1/T) sum_{t<T} |grad F(w_t)|^2 <= the first term, every T <= 1500",
    "(a) client drift, R > 1, fixed eta: |grad F(w_inf)|^2 ∝ eta^2",
    "(a) client drift, R > 1, fixed eta, T -> inf: |grad F(w_inf)|^2 <= the bound's limit",
    "(b) identity, delta = 0: (1/N) sum |theta_i(w) - w|^2 = (|grad F|^2 + (1/N) sum |grad F_i - grad F|^2)/lam^2",
    "(b) delta = 0, Lemma 2(b): (1/N) sum |theta_i(w) - w|^2 <= |grad F(w)|^2/(lam^2 - 8L^2) + "
    "2 sigma_F2^2/lam^2",
)


def evaluate(batch, claim):
    s, a, L, lam, beta, R, eta, ident = (
        batch[k] for k in ("s", "a", "L", "lam", "beta", "R", "eta", "ident")
    )
    ws, (drift2, drift_ok, mixed, x_star, w_inf, rounding), sim_err, ext, mom = _trajectory(batch)
    cond = np.asarray(claim["condition"](lam, L), bool) & (lam > L)
    Fv, gi = envelope(ws, s, a, L, lam)
    gradF2 = np.sum(gi.mean(axis=-2) ** 2, axis=-1)  # (T_MAX + 1, T)
    F_min, _ = F_star(s, a, L, lam)
    Delta = Fv[0].mean(axis=-1) - F_min
    Tgrid = np.arange(1, T_MAX + 1)[:, None]
    avg = np.cumsum(gradF2[:-1], axis=0) / Tgrid
    rhs1 = claim["first"](Delta, eta, beta, R, Tgrid, eta_hat_2(lam))
    l1, r1 = worst_pair(avg, np.broadcast_to(rhs1, avg.shape))
    sf2 = sigma_f2(s, a, L)
    with np.errstate(divide="ignore", invalid="ignore"):
        sF2 = lam**2 * sf2 / (lam**2 - 8 * L**2)
    hetero_drift = ~ident & (R > 1) & drift_ok & mixed & (lam > L)
    slope, ci = np.zeros(lam.size), (np.zeros(lam.size), np.zeros(lam.size))
    if hetero_drift.any():
        sl, c = fit_exponent(ETA_STEPS, drift2[hetero_drift])
        slope[hetero_drift], (ci[0][hetero_drift], ci[1][hetero_drift]) = sl, c
    k = np.stack([_k(eta * f, lam, R) for f in ETA_STEPS], axis=1)  # (T, J)
    with np.errstate(divide="ignore", invalid="ignore"):
        rhs3 = np.asarray(
            claim["drift_bound"](k, sF2[:, None], lam[:, None], L[:, None]), float
        ) * np.ones_like(k)
    l3, r3 = worst_pair(drift2.T, rhs3.T)
    # (b): points
    rng_pts = np.random.default_rng(7)
    near = s.mean(axis=1)[None] + a[None, :, None] * rng_pts.standard_normal((4, lam.size, s.shape[-1]))
    far = x_star[None] + 50 * a[None, :, None] * rng_pts.standard_normal((1, lam.size, s.shape[-1]))
    pts = np.concatenate([ws[list(ROUNDS_B)], x_star[None], w_inf[None], near, far])
    th = prox(pts, s, a, L, lam)
    lhs_b = np.mean(np.sum((th - pts[..., None, :]) ** 2, axis=-1), axis=-1)
    gpt = envelope(pts, s, a, L, lam)[1]
    gbar = gpt.mean(axis=-2)
    gF2_pts = np.sum(gbar**2, axis=-1)
    div = np.mean(np.sum((gpt - gbar[..., None, :]) ** 2, axis=-1), axis=-1)
    ident_err = np.abs(lhs_b - (gF2_pts + div) / lam**2) / (1 + lhs_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        rhs5 = claim["b_bound"](gF2_pts, sF2, lam, L)
    # + rounding of theta - w (~1e-16 (1 + |w|) per coordinate) where both sides vanish (stationary points)
    rhs5 = np.where(np.isnan(rhs5), -np.inf, rhs5) + (1e-15 * (1 + np.max(np.abs(pts), axis=-1))) ** 2
    l5, r5 = worst_pair(lhs_b, rhs5)
    # (b) with delta > 0: the worst theta~ within delta of theta^ moves away from w, |theta~ - w| = |theta^ - w| + delta
    delta = batch["dl_delta"]
    dist = np.sqrt(np.sum((th - pts[..., None, :]) ** 2, axis=-1))
    lhs_bd = np.mean((dist + delta[:, None]) ** 2, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rhs_bd = claim["b_delta"](gF2_pts, sF2, lam, L, delta)
    rhs_bd = np.where(np.isnan(rhs_bd), -np.inf, rhs_bd)
    l6, r6 = worst_pair(lhs_bd, rhs_bd)
    consts = {
        "L": "exact: |g''| = L on every piece",
        "F*": "exact: pieces of F enumerated",
        "sigma_f^2": "exact sup over w (breakpoints of the grad f_i)",
        "sigma_F2^2": "Lemma 2(b): lam^2 sigma_f^2/(lam^2 - 8L^2)",
        "L_F": "lam (Proposition 1)",
        "w_inf": "fixed point of the piecewise affine round map, checked |Phi(w) - w| <= 1e-13 (1 + |w|)",
    }
    return {
        PARTS[0]: Sides(
            sim_err,
            np.full(lam.size, 1e-10),
            "exact",
            applicable=lam > L,
            constants=consts,
            note="3 rounds, max |w_t - w_t(moreau)|/(1 + |w_t|); allowed 1e-10 (certified Newton prox)",
        ),
        PARTS[1]: Sides(
            l1,
            r1,
            "upper",
            applicable=ident & cond,
            constants=consts,
            note=f"worst T per instance; ratio {ratio_range(l1, r1, ident & cond)}; the claimed first term "
            f"over 2 Delta_F/(beta R eta T): {ratio_range(rhs1[0], 2 * Delta / (beta * R * eta), ident & cond)}"
            f"; eta = eta_hat_2/(beta R) 2^-k, k in {sorted(set(K_STEP))}; Delta_F exact",
        ),
        PARTS[2]: rate_sides(
            slope,
            ci,
            claim["drift_exponent_eta"],
            kind="equal",
            atol=0.02,
            applicable=hetero_drift & cond,
            constants=consts,
            level=0.95,
            note=f"eta 2^-j, j = 0..5, fixed points solved exactly; |grad F(w_inf)|^2 at the "
            f"instance's eta: {value_range(drift2[hetero_drift & cond, 0])}; atol 0.02 for the "
            f"O(eta) curvature",
        ),
        PARTS[3]: Sides(
            l3,
            r3 + rounding,
            "upper",
            applicable=~ident & (R > 1) & drift_ok & cond,
            constants=consts,
            note=f"worst eta of the grid; ratio {ratio_range(l3, r3, ~ident & (R > 1) & drift_ok & cond)};"
            f" the claimed limit: {value_range(rhs3[~ident & (R > 1) & drift_ok & cond, 0])};"
            f" + rounding (lam 1e-14 (1 + |w_inf|) + 1e-15 max |grad F_i|)^2 (w_inf = Bbar/(1 - Abar)); "
            f"instances with a client on the concave piece at w_inf: {np.sum(mixed & ~ident & (R > 1))}",
        ),
        PARTS[4]: Sides(
            np.max(ident_err, axis=0),
            np.full(lam.size, 1e-12),
            "exact",
            applicable=lam > L,
            constants=consts,
            note="max over the points of |lhs - rhs|/(1 + lhs); allowed 1e-12",
        ),
        PARTS[5]: Sides(
            l5,
            r5,
            "upper",
            applicable=cond,
            constants=consts,
            note=f"worst point per instance; ratio {ratio_range(l5, r5, cond)}; points: rounds "
            f"{ROUNDS_B}, F's minimiser, w_inf, 4 near the clients, 1 far",
        ),
        **ext_parts(batch, ext, claim, cond, consts),
        **moment_parts(batch, ext, mom, (dist, gF2_pts, sF2), claim, cond, consts),
        PARTS_D[3]: Sides(
            l6,
            r6,
            "upper",
            applicable=cond,
            constants=consts,
            note=f"worst point per instance (the points of the delta = 0 part); ratio "
            f"{ratio_range(l6, r6, cond)}; delta/a in [0.01, 3.2]",
        ),
    }


STATEMENTS = (
    Statement(
        id="pfedme.thm2",
        implies=("λ ≥ L",),
        source="pFedMe, Theorem 2 (a), (b)",
        paper="pfedme-moreau-envelopes.md",
        latex=r"\mathbb E\|\nabla F(w_{t^*})\|^2 \le O\Big(\frac{\Delta_F}{\hat\eta_2 T} + "
        r"\frac{(\Delta_F L_F\sigma_{F,2}^2(N/S - 1))^{1/2}}{\sqrt{TN}} + "
        r"\frac{\Delta_F^{2/3}(R\sigma_{F,2}^2 + \lambda^2\delta^2)^{1/3}}{\beta^{4/3}R^{1/3}T^{2/3}} + "
        r"\lambda^2\delta^2\Big);\ \frac1N\sum_i\mathbb E\|\tilde\theta_i - w_{t^*}\|^2 \le "
        r"O(\mathbb E\|\nabla F(w_{t^*})\|^2) + O\Big(\frac{\sigma_{F,2}^2}{\lambda^2} + \delta^2\Big)",
        text="nonconvex pFedMe, for every eta <= eta_hat_2/(beta R): stationarity of a uniformly drawn iterate, and "
        "the personalised models' distance to it (as printed: delta the text's, E|theta~ - theta^| <= delta)",
        assumptions=(
            "f_i nonconvex, L-smooth, bounded below (double wells)",
            "lam >= sqrt(8 L^2 + 1)",
            "Assumption 3: sigma_f^2 finite (exact sup)",
            "delta = 0 and S = N, or S < N of N = 3 (uniform without replacement), or |theta~ - theta^| <= delta",
            "two-point inner errors: E|theta~ - theta^| <= delta (Section 3.2)",
            "eta = eta_hat_2/(beta R) 2^-k, beta >= 1",
        ),
        scaling={
            "quadratic": scale_fields(
                {
                    "s": (1, 0),
                    "a": (1, 0),
                    "L": (-2, 1),
                    "lam": (-2, 1),
                    "eta": (2, -1),
                    "w0": (1, 0),
                    "sp_c": (1, 0),
                    "sp_s": (1, 0),
                    "sp_w0": (1, 0),
                    "dl_w0": (1, 0),
                    "dl_delta": (1, 0),
                    "dl_delta_r": (1, 0),
                    "tp_w0": (1, 0),
                    "sd_delta": (1, 0),
                }
            )
        },
        families={"quadratic": ("piecewise quadratic double wells: identical and heterogeneous clients",)},
        claimed="rate",
        instances=instances,
        evaluate=evaluate,
        claim=CLAIM,
        readings=READINGS,
        expect="fails",
        consistency_checks=CONSISTENCY,
        # N = 1, d = 1: the eta-free first term fails by T = 1500 (derived in pfedme.minimal_counterexamples)
        counterexamples=MINIMAL_THM2,
        mutants=(
            Mutant(
                "(a) first term over T^2",
                {"first": lambda Delta, eta, beta, R, T, eta_hat: 2 * Delta / (beta * R * eta * T**2)},
            ),
            Mutant(
                "(a) first term's constant 2 -> 1/2",
                {"first": lambda Delta, eta, beta, R, T, eta_hat: Delta / (2 * beta * R * eta * T)},
                o_equivalent=_O,
            ),
            Mutant("(a) no drift at fixed eta (the printed limit)", {"drift_bound": drift_printed}),
            Mutant("(a) drift exponent 1 in eta", {"drift_exponent_eta": 1.0}),
            Mutant(
                "(b) sigma_F2^2/lam^4 for sigma_F2^2/lam^2",
                {"b_bound": lambda gF2, sF2, lam, L: gF2 / (lam**2 - 8 * L**2) + 2 * sF2 / lam**4},
            ),
            Mutant(
                "(b) without the |grad F|^2 term",
                {"b_bound": lambda gF2, sF2, lam, L: 0 * gF2 + 2 * sF2 / lam**2},
            ),
            Mutant(
                "condition relaxed: lam > 2L (Proposition 1's)", {"condition": lambda lam, L: lam > 2 * L}
            ),
            Mutant("(b) inequality reversed", {"flip": (PARTS[5],)}),
            Mutant(
                "(a) S < N: S = N assumed (the sampling term dropped)",
                {"sampling": lambda Delta, eta, beta, R, T, lam, N, S, sF2: 2 * Delta / (beta * R * eta * T)},
            ),
            Mutant("(a) S < N: exponent of (N/S - 1) 2", {"sampling_exponent": 2.0}),
            Mutant("(a) S < N: sampling floor ∝ eta^2 (as the drift)", {"sampling_floor_eta": 2.0}),
            Mutant(
                "(a) delta > 0: delta = 0 assumed (the lam^2 delta^2 term dropped)",
                {"delta_a": lambda Delta, eta, beta, R, T, lam, delta: 2 * Delta / (beta * R * eta * T)},
            ),
            Mutant(
                "(a) delta > 0: lam^2 delta^2 -> lam^2 delta^2/2",
                {
                    "delta_a": lambda Delta, eta, beta, R, T, lam, delta: (
                        2 * Delta / (beta * R * eta * T) + (lam * delta) ** 2 / 2
                    )
                },
                o_equivalent=_O,
            ),
            Mutant(
                "(a) delta > 0: lam^2 delta for lam^2 delta^2",
                {
                    "delta_a": lambda Delta, eta, beta, R, T, lam, delta: (
                        2 * Delta / (beta * R * eta * T) + lam**2 * delta
                    )
                },
            ),
            Mutant(
                "(a) delta > 0: delta^2 without lam^2",
                {
                    "delta_a": lambda Delta, eta, beta, R, T, lam, delta: (
                        2 * Delta / (beta * R * eta * T) + delta**2
                    )
                },
            ),
            Mutant(
                "(b) delta > 0: the delta^2 term dropped",
                {
                    "b_delta": lambda gF2, sF2, lam, L, delta: (
                        2 * (gF2 / (lam**2 - 8 * L**2) + 2 * sF2 / lam**2)
                    )
                },
            ),
            Mutant(
                "(b) delta > 0: 2 delta^2 -> delta^2",
                {
                    "b_delta": lambda gF2, sF2, lam, L, delta: (
                        2 * (gF2 / (lam**2 - 8 * L**2) + 2 * sF2 / lam**2) + delta**2
                    )
                },
                o_equivalent=_O,
            ),
            Mutant(
                "(b) delta > 0: 2 delta for 2 delta^2",
                {
                    "b_delta": lambda gF2, sF2, lam, L, delta: (
                        2 * (gF2 / (lam**2 - 8 * L**2) + 2 * sF2 / lam**2) + 2 * delta
                    )
                },
            ),
            Mutant(
                "(a) S < N and delta > 0: the larger of the two terms, not their sum",
                {"delta_combine": lambda sampling, delta_term: np.maximum(sampling, delta_term)},
            ),
            Mutant(
                "(a) stochastic gradients ignored: Lemma 1's delta^2 = 2 nu/(lam - L)^2 (gamma_f = 0)",
                {"lemma1_delta2": lambda gD2, nu, lam, L: 2 * nu / (lam - L) ** 2 + 0 * gD2},
            ),
        ),
        findings=(_FINDING_ETA, _FINDING_DRIFT, _FINDING_SAMPLING, _FINDING_MOMENT, _FINDING_SCALE),
        equivalent_mutants={
            "eta_hat_2 larger (e.g. 1/(75 L_F) for 1/(75 L_F lam^2))": (
                "eta_hat_2 only sets the instances' steps; the checked readings hold for any step with beta "
                "R eta lam small (the descent factor 1 - O(beta R eta lam)), so a larger eta_hat_2 is not "
                "rejected on these instances (not expressible as a claim entry either)"
            ),
            "(a) S < N: the sampling term's constant 2 -> 1/2 (or c_S's N - 1 -> N)": (
                "the fixed-eta reading's sampling term is loose on double wells (limit over the term <= "
                "0.02: it charges L_F = lam where F's curvature is lam L/(lam + L) <= 0.26 lam, and Lemma "
                "2(b)'s sup sigma_f^2 where the floor sees (1/N) sum |grad F_i(w*)|^2), so a smaller "
                "constant is not rejected; the exponent of (N/S - 1) and the floor's exponent of eta are "
                "checked exactly instead"
            ),
            "(a) stochastic gradients: Lemma 1's delta^2 with (lam + L) for (lam - L), or without its factor 2": (
                "on the certified outer pieces the error is exactly zeta/(lam + L), so the smaller delta "
                "still bounds it and the fresh errors' floor is ~ h beta eta/(2N) of lam^2 delta^2; Lemma "
                "1's constants are checked (attained) in pfedme.lemma1"
            ),
        },
    ),
)
