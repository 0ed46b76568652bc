r"""pfedme.cor1, pfedme.cor2 — pFedMe (T Dinh, Tran, Nguyen, NeurIPS 2020), Corollaries 1 and 2.

Statements (paper, §4, with no client sampling, S = N, so the (N/S − 1) terms of Theorems 1(a)
and 2(a) are 0):

* Corollary 1 (of Theorem 1): "we can choose either (i) β = Θ(√N/T) if √N ≥ T (i.e., massive
  clients) or (ii) β = Θ(N√R) otherwise, to obtain either linear speedup O(1/(TRN)) or quadratic
  speedup O(1/(TRN)²) w.r.t computation rounds, respectively."
* Corollary 2 (of Theorem 2): "we can choose β = Θ(N^{1/2}R^{1/4}) and Θ(T^{1/3}) = Θ((NR)^{2/3})
  to obtain a sublinear speed-up of O(1/(TRN)^{2/3})."

The paper file holds no appendix (no proof of either corollary).  What is checked: the printed
β (and, for Corollary 2, T = Θ((NR)²)) substituted into the printed terms of the theorems,
and the exponents of T, R, N of each term compared with the printed rate.  The terms (S = N):

* Theorem 1(a), third term Õ((Rσ²_{F,1} + δ²λ²)κ_F/(R(Tβμ_F)²)), split into its σ part
  σ²_{F,1}κ_F/(Tβμ_F)² and its δ part δ²λ²κ_F/(R(Tβμ_F)²);
* Theorem 2(a), first term Δ_F/(η̂₂T) (η̂₂ = 1/(75L_Fλ²) does not depend on T, R, N, β) and
  third term Δ_F^{2/3}(Rσ²_{F,2} + λ²δ²)^{1/3}/(β^{4/3}R^{1/3}T^{2/3}), split likewise
  ((a + b)^{1/3} ≤ a^{1/3} + b^{1/3} ≤ 2^{2/3}(a + b)^{1/3}: the sum is Θ of the larger part).

Derivation (sympy, ``exponents``; every term is a monomial in T, R, N once β is substituted):

* Cor. 1 (i), β = √N/T: Tβ = √N, so the σ part is σ²κ_F/(μ_F²N) ∝ T⁰R⁰N⁻¹ and the δ part
  δ²λ²κ_F/(μ_F²RN) ∝ T⁰R⁻¹N⁻¹; printed: T⁻¹R⁻¹N⁻¹.  Neither decays with T.
* Cor. 1 (ii), β = N√R: σ part σ²κ_F/(μ_F²T²N²R) ∝ T⁻²R⁻¹N⁻²; δ part ∝ T⁻²R⁻²N⁻² (as printed).
* Cor. 2, β = N^{1/2}R^{1/4}, T = (NR)²: first term 75L_Fλ²Δ_F/T ∝ N⁻²R⁻² (as printed:
  (TRN)^{-2/3} = (NR)⁻²); δ part ∝ N^{-2/3}R^{-1/3}R^{-1/3}T^{-2/3} = N⁻²R⁻² (as printed); σ part
  Δ_F^{2/3}σ^{2/3}/(β^{4/3}T^{2/3}) ∝ N^{-2/3}R^{-1/3}T^{-2/3} = N⁻²R^{-5/3}; printed N⁻²R⁻².

So both corollaries' choices of β make the δ part decay at the printed rate but not the σ part
(client diversity σ²_{F,1}, σ²_{F,2} > 0): it loses a factor R (Cor. 1 (ii)), R^{1/3} (Cor. 2),
and in Cor. 1 (i) the T and R decay altogether (findings below).  With σ_F = 0 (i.i.d. clients)
the printed rates follow for (ii) and Cor. 2; the β that would give them for the σ part are
β = NR (Cor. 1 (ii)) and β = (NR)^{1/2} (Cor. 2), the ones for which the δ part would decay
faster than printed.  Not exponents, so not parts (stated here): the first term of Theorem 1(a),
O(Δ_0μ_F e^{−η̂₁μ_F T/2}), decays faster than any power of T but not at all in R or N (η̂₁ ↑
1/(18L_F) as β grows), and the last terms O(λ²δ²/μ_F), O(λ²δ²) do not vanish: the corollaries
need δ to shrink with T, R, N, which they do not say.

Sides.  Instances (family "quadratic", the only one: no objective is evaluated, only the
theorems' terms): points (T, R, N) — Cor. 1: half with √N ≥ T (case (i): T in [2, 30], N/T² in
[1, 100]), half with √N < T (case (ii): T in [10, 10³], N/T² in [10⁻³, 1)), R in [1, 50];
Cor. 2: N in [2, 10³], R in [1, 50], T = c_T(NR)² — with random Θ-constants c_β, c_T in
[1/2, 2] and random positive problem constants (σ², δ², λ ≥ √(8L² + 1), κ_F, μ_F, Δ);
each instance asks for the exponent of one variable (cycling over T, R, N; over N, R for
Cor. 2).  Per part: the log-log slope of the term (coded in numpy from the printed formula) by a
central difference in that variable (β, and T for Cor. 2, recomputed from the claim), exact for
a monomial up to rounding; an "exact" part checks it against sympy's exponent
(x ∂_x log term, simplified to a constant); rate parts (``rate_sides``, kind "equal",
atol 1e-6) compare it with the claimed exponent.

Claimed by the paper: rates.  The claim is the corollary as printed: its β (and T) and, per term, the
exponents of the printed rate; it fails where the substitution contradicts them (findings).  The reading
"the exponents the substitution gives" holds; for Corollary 1 each contradicted printed rate alone is a
reading too ("(i) printed O(1/(TRN)), σ part only", "(i) printed O(1/(TRN)), δ part only", "(ii) printed
O(1/(TRN)²), σ part only"), each failing.  The mutants (applied to that reading) change an exponent of β or
of the rate.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement, rate_sides
from moreau.analysis.engine.instances import log_uniform
from moreau.analysis.pfedme.minimal_counterexamples import MINIMAL_COR1, MINIMAL_COR2

SYMPY_PART = "numpy slope of each substituted term = sympy's exponent"
_SYMPY_WHY = (
    "the checker's own machinery: the numeric slope of each substituted term equals the exponent sympy "
    "derives for it (no claim entry enters)"
)

__all__ = ["STATEMENTS", "instances_cor1", "instances_cor2", "terms", "exponents"]

VARS1, VARS2 = ("T", "R", "N"), ("R", "N")
H = 1e-4  # step of the central difference in log x (exact for monomials; rounding ~1e-12)
ATOL = 1e-6  # slope vs exponent: rounding of the difference quotient, far below any 1/12 step of exponents

PRINTED1, PRINTED2 = {"i": (-1.0,) * 3, "ii": (-2.0,) * 3}, (-2.0, -2.0)
#: Corollary 1 as printed: its beta, and per term the exponents of (T, R, N) of the printed rate
CLAIM1 = {
    "beta_i": lambda T, R, N: N**0.5 / T,  # (i) beta = Theta(sqrt(N)/T), sqrt(N) >= T
    "beta_ii": lambda T, R, N: N * R**0.5,  # (ii) beta = Theta(N sqrt(R))
    "i_sigma": PRINTED1["i"],  # (i) linear speedup O(1/(TRN))
    "i_delta": PRINTED1["i"],
    "ii_sigma": PRINTED1["ii"],  # (ii) quadratic speedup O(1/(TRN)^2)
    "ii_delta": PRINTED1["ii"],
}
#: Corollary 2 as printed: its beta and T, and per term the exponents of (R, N) of O(1/(TRN)^(2/3)) = (NR)^-2
CLAIM2 = {
    "beta": lambda T, R, N: N**0.5 * R**0.25,  # beta = Theta(N^(1/2) R^(1/4))
    "T": lambda R, N: (N * R) ** 2,  # Theta(T^(1/3)) = Theta((NR)^(2/3))
    "first": PRINTED2,
    "delta": PRINTED2,
    "sigma": PRINTED2,
}
#: the exponents the substitution gives where they differ from the printed rate (module docstring)
SUBSTITUTED1 = {"i_sigma": (0.0, 0.0, -1.0), "i_delta": (0.0, -1.0, -1.0), "ii_sigma": (-2.0, -1.0, -2.0)}
SUBSTITUTED2 = {"sigma": (-5.0 / 3.0, -2.0)}
_WHY = "the exponents that substituting the corollary's beta{} into the theorem's printed terms gives (sympy)"


def _only1(key):
    return {k: v for k, v in SUBSTITUTED1.items() if k != key}


READINGS1 = (
    Reading(
        "the exponents the substitution gives",
        dict(SUBSTITUTED1),
        why=_WHY.format(""),
        repairs="rate",
    ),
    Reading(
        "(i) printed O(1/(TRN)), σ part only",
        _only1("i_sigma"),
        expect="fails",
        why="the printed linear speedup for the sigma_F1 part alone: it is O(1/N), constant in T and R",
        repairs="rate",
    ),
    Reading(
        "(i) printed O(1/(TRN)), δ part only",
        _only1("i_delta"),
        expect="fails",
        why="the printed linear speedup for the delta part alone: it is O(1/(RN)), constant in T",
        repairs="rate",
    ),
    Reading(
        "(ii) printed O(1/(TRN)²), σ part only",
        _only1("ii_sigma"),
        expect="fails",
        why="the printed quadratic speedup for the sigma_F1 part alone: it is O(1/(T^2 R N^2)), a factor R short",
        repairs="rate",
    ),
)
READINGS2 = (
    Reading(
        "the exponents the substitution gives",
        dict(SUBSTITUTED2),
        why=_WHY.format(" and T"),
        repairs="rate",
    ),
)


# --- the printed terms ---------------------------------------------------------------------


def terms(name, T, R, N, beta, c):
    """The printed term ``name`` at (T, R, N) with the given β; ``c`` a dict of problem constants.

    Theorem 1(a) third term (σ part, δ part) and Theorem 2(a) first and third terms (σ, δ parts),
    S = N; written with ``**`` only, so it takes numpy arrays and sympy symbols alike."""
    if name == "thm1_sigma":
        return (R * c["s2"] + 0 * c["d2"]) * c["kappa"] / (R * (T * beta * c["muF"]) ** 2)
    if name == "thm1_delta":
        return (0 * R * c["s2"] + c["d2"] * c["lam"] ** 2) * c["kappa"] / (R * (T * beta * c["muF"]) ** 2)
    if name == "thm2_first":
        eta2 = 1 / (75 * c["lam"] * c["lam"] ** 2)  # eta_hat_2 = 1/(75 L_F lam^2), L_F = lam
        return c["Delta"] / (eta2 * T)
    if name == "thm2_sigma":
        return (
            c["Delta"] ** (2 / 3) * (R * c["s2"]) ** (1 / 3) / (beta ** (4 / 3) * R ** (1 / 3) * T ** (2 / 3))
        )
    if name == "thm2_delta":
        return (
            c["Delta"] ** (2 / 3)
            * (c["lam"] ** 2 * c["d2"]) ** (1 / 3)
            / (beta ** (4 / 3) * R ** (1 / 3) * T ** (2 / 3))
        )
    raise KeyError(name)


def _substituted(term, claim, case, T, R, N, c):
    """The term with the claim's β (and, for Corollary 2, T) substituted."""
    if case == "cor2":
        T = claim["T"](R, N) * c["cT"]
        return terms(term, T, R, N, claim["beta"](T, R, N) * c["cb"], c)
    return terms(term, T, R, N, claim["beta_" + case](T, R, N) * c["cb"], c)


@lru_cache(maxsize=64)
def _sympy_exponents(term, case, beta_fn, T_fn):
    import sympy as sp

    T, R, N = sp.symbols("T R N", positive=True)
    c = {k: sp.Symbol(k, positive=True) for k in ("s2", "d2", "kappa", "muF", "lam", "Delta", "cb", "cT")}
    claim = {"beta": beta_fn, "T": T_fn, "beta_i": beta_fn, "beta_ii": beta_fn}
    expr = _substituted(term, claim, case, T, R, N, c)
    log = sp.expand_log(sp.log(expr), force=True)
    out = {}
    for name, x in (("T", T), ("R", R), ("N", N)):
        e = sp.simplify(x * sp.diff(log, x))
        out[name] = float(e) if e.is_number else float("nan")
    return out


def exponents(term, claim, case):
    """Sympy's exponents ``{"T": ., "R": ., "N": .}`` of ``term`` after substituting the claim's β
    (and T for Corollary 2): x ∂_x log(term), simplified; NaN where it is not a constant."""
    if case == "cor2":
        return _sympy_exponents(term, case, claim["beta"], claim["T"])
    return _sympy_exponents(term, case, claim["beta_" + case], None)


def _slopes(term, claim, case, batch):
    """Central-difference slopes of log(term) in the instance's variable, numpy, ``(P,)``."""
    names = VARS2 if case == "cor2" else VARS1
    c = {k: batch[k] for k in ("s2", "d2", "kappa", "muF", "lam", "Delta", "cb", "cT")}
    out = np.empty(batch["var"].size)
    for j, v in enumerate(names):
        s = batch["var"] == j
        if not s.any():
            continue
        cs = {k: x[s] for k, x in c.items()}
        pts = {k: batch[k][s] for k in ("T", "R", "N")}
        vals = []
        for sign in (1, -1):
            p = dict(pts)
            p[v] = p[v] * np.exp(sign * H)
            vals.append(np.log(_substituted(term, claim, case, p["T"], p["R"], p["N"], cs)))
        out[s] = (vals[0] - vals[1]) / (2 * H)
    return out


# --- instances ------------------------------------------------------------------------------


def _constants(rng, P):
    L = log_uniform(rng, 0.05, 5.0, P)
    lam = np.sqrt(8 * L**2 + 1) * log_uniform(rng, 1.0, 10.0, P)
    mu = L * log_uniform(rng, 0.01, 1.0, P)
    muF = lam * mu / (lam + mu)
    return {
        "s2": log_uniform(rng, 1e-3, 1e2, P),
        "d2": log_uniform(rng, 1e-6, 1e-1, P),
        "lam": lam,
        "muF": muF,
        "kappa": lam / muF,
        "Delta": log_uniform(rng, 1e-2, 1e2, P),
        "cb": log_uniform(rng, 0.5, 2.0, P),
        "cT": log_uniform(rng, 0.5, 2.0, P),
    }


def instances_cor1(family, trials, rng):
    P = trials or 24
    massive = np.arange(P) % 2 == 0  # case (i): sqrt(N) >= T
    T = np.where(massive, log_uniform(rng, 2.0, 30.0, P), log_uniform(rng, 10.0, 1e3, P))
    N = T**2 * np.where(massive, log_uniform(rng, 1.0, 100.0, P), log_uniform(rng, 1e-3, 1.0 - 1e-9, P))
    N = np.maximum(N, 1.0)
    massive = np.sqrt(N) >= T
    return {
        "T": T,
        "R": log_uniform(rng, 1.0, 50.0, P),
        "N": N,
        "massive": massive,
        "var": (np.arange(P) // 2) % 3,
        **_constants(rng, P),
    }


def instances_cor2(family, trials, rng):
    P = trials or 12
    return {
        "T": np.ones(P),
        "R": log_uniform(rng, 1.0, 50.0, P),
        "N": log_uniform(rng, 2.0, 1e3, P),
        "var": np.arange(P) % 2,
        **_constants(rng, P),
    }


# --- sides ----------------------------------------------------------------------------------


def _parts(batch, claim, spec, names):
    """``spec``: (part label, term, case, claim key, applicable mask); one exact part (numpy slope
    against sympy's exponent, every term) and one rate part per term."""
    out, err = {}, np.zeros(batch["var"].size)
    rate = {}
    for label, term, case, key, app in spec:
        slope = _slopes(term, claim, case, batch)
        ex = exponents(term, claim, case)
        sym = np.array([ex[names[j]] for j in batch["var"]])
        err = np.maximum(err, np.where(app, np.abs(slope - sym), 0.0))
        claimed = np.array([claim[key][j] for j in batch["var"]], float)
        note = (
            f"sympy: exponents of {', '.join(names)} = "
            f"{', '.join(f'{ex[n]:.4g}' for n in names)}; claimed {tuple(claim[key])}"
        )
        rate[label] = rate_sides(
            slope,
            (slope, slope),
            claimed,
            kind="equal",
            atol=ATOL,
            applicable=app,
            note=note,
            constants={
                "exponent": "sympy x d/dx log(term), and a numpy central difference in log x (step 1e-4)"
            },
        )
    out[SYMPY_PART] = Sides(
        err,
        np.full(err.shape, ATOL),
        "exact",
        note="max over the terms of |central difference - sympy exponent|; allowed 1e-6 (rounding / step)",
    )
    out.update(rate)
    return out


def evaluate_cor1(batch, claim):
    m = batch["massive"]
    spec = (
        (
            "(i) beta = sqrt(N)/T, sqrt(N) >= T: Theorem 1(a) third term, sigma_F1 part",
            "thm1_sigma",
            "i",
            "i_sigma",
            m,
        ),
        (
            "(i) beta = sqrt(N)/T, sqrt(N) >= T: Theorem 1(a) third term, delta part",
            "thm1_delta",
            "i",
            "i_delta",
            m,
        ),
        (
            "(ii) beta = N sqrt(R), sqrt(N) < T: Theorem 1(a) third term, sigma_F1 part",
            "thm1_sigma",
            "ii",
            "ii_sigma",
            ~m,
        ),
        (
            "(ii) beta = N sqrt(R), sqrt(N) < T: Theorem 1(a) third term, delta part",
            "thm1_delta",
            "ii",
            "ii_delta",
            ~m,
        ),
    )
    return _parts(batch, claim, spec, VARS1)


def evaluate_cor2(batch, claim):
    one = np.ones(batch["var"].size, bool)
    spec = (
        (
            "beta = N^(1/2) R^(1/4), T = (NR)^2: Theorem 2(a) first term Delta_F/(eta_hat_2 T)",
            "thm2_first",
            "cor2",
            "first",
            one,
        ),
        (
            "beta = N^(1/2) R^(1/4), T = (NR)^2: Theorem 2(a) third term, delta part",
            "thm2_delta",
            "cor2",
            "delta",
            one,
        ),
        (
            "beta = N^(1/2) R^(1/4), T = (NR)^2: Theorem 2(a) third term, sigma_F2 part",
            "thm2_sigma",
            "cor2",
            "sigma",
            one,
        ),
    )
    return _parts(batch, claim, spec, VARS2)


_FINDING1 = (
    "pFedMe Corollary 1 as printed: substituting its beta into Theorem 1(a)'s third term "
    "O((R sigma_F1^2 + delta^2 lam^2) kappa_F/(R (T beta mu_F)^2)) (S = N) does not give the printed rates when "
    "sigma_F1 > 0. (ii) beta = N sqrt(R): the sigma part is sigma_F1^2 kappa_F/(mu_F^2 T^2 N^2 R), i.e. "
    "O(1/(T^2 R N^2)), not the quadratic speedup O(1/(TRN)^2) (a factor R missing; beta = N R would give it); the "
    "delta part is O(1/(TRN)^2) as printed. (i) beta = sqrt(N)/T: T beta = sqrt(N), so the sigma part is "
    "sigma_F1^2 kappa_F/(mu_F^2 N) = O(1/N) and the delta part O(1/(RN)): neither decays with T, not the linear "
    "speedup O(1/(TRN)). Minimal instance (constants 1: sigma_F1^2 = kappa_F = mu_F = 1, delta = 0): (ii) T = 2, "
    "N = 1, R = 4, beta = N sqrt(R) = 2: third term 1/(T beta)^2 = 1/16, against (TRN)^-2 = 1/64; doubling R "
    "halves the term, not quarters it. (i) N = 4, T = 2, beta = 1: the term is 1/4 = 1/N for every R, against "
    "1/(TRN) = 1/(8R). Derivation: sympy, x d/dx log(term) after the substitution "
    "(moreau check pfedme.cor1 -v: the printed rates fail, each alone too; reading 'the exponents the "
    "substitution gives' holds)."
)
_FINDING2 = (
    "pFedMe Corollary 2 as printed: with beta = N^(1/2) R^(1/4) and T = (NR)^2 substituted into Theorem 2(a) "
    "(S = N), the first term Delta_F/(eta_hat_2 T) and the delta part of the third term decay like (NR)^-2 = "
    "(TRN)^(-2/3) as printed, but the sigma_F2 part Delta_F^(2/3) (R sigma_F2^2)^(1/3)/(beta^(4/3) R^(1/3) "
    "T^(2/3)) = Delta_F^(2/3) sigma_F2^(2/3)/(N^(2/3) R^(1/3) T^(2/3)) is O(N^-2 R^(-5/3)), not O((NR)^-2) = "
    "O(1/(TRN)^(2/3)): a factor R^(1/3) missing (at fixed T: R^(-1/3) for the printed R^(-2/3)); beta = (NR)^(1/2) "
    "would give it. Minimal instance (Delta_F = sigma_F2^2 = 1, delta = 0): N = 1, R = 8, T = 64 (= (NR)^2), "
    "beta = 8^(1/4): sigma part 1/(8^(1/3) 64^(2/3)) = 1/32, against (TRN)^(-2/3) = 512^(-2/3) = 1/64; "
    "R = 64 (T = 4096): 1/1024 against 1/4096. The last term O(lam^2 delta^2) does not vanish at all: the "
    "corollary needs delta to shrink with T, R, N, which it does not say. Reading 'the exponents the substitution "
    "gives' holds."
)

_M1 = (
    Mutant("(ii) beta = N R^(1/4) (exponent of R 1/2 -> 1/4)", {"beta_ii": lambda T, R, N: N * R**0.25}),
    Mutant(
        "(ii) beta = N^(1/2) sqrt(R) (exponent of N 1 -> 1/2)", {"beta_ii": lambda T, R, N: N**0.5 * R**0.5}
    ),
    Mutant("(i) beta = sqrt(N)/T^2 (exponent of T -1 -> -2)", {"beta_i": lambda T, R, N: N**0.5 / T**2}),
    Mutant("(ii) delta part O(1/(TRN)) (rate exponent -2 -> -1)", {"ii_delta": (-1.0, -1.0, -1.0)}),
)
_M2 = (
    Mutant("beta = N^(1/2) R^(1/2) (exponent of R 1/4 -> 1/2)", {"beta": lambda T, R, N: N**0.5 * R**0.5}),
    Mutant("beta = N R^(1/4) (exponent of N 1/2 -> 1)", {"beta": lambda T, R, N: N * R**0.25}),
    Mutant("T = (NR)^(3/2) (Theta(T^(1/3)) = Theta((NR)^(1/2)))", {"T": lambda R, N: (N * R) ** 1.5}),
    Mutant("rate O(1/(TRN)^(1/2)) for the first term", {"first": (-1.5, -1.5)}),
)

#: --analyse: why these checks have no rescaling (see moreau.analysis.engine.analyse)
_NO_SCALING = (
    "no problem instance: each part substitutes the corollary's beta (and T) into the theorem's "
    "printed terms and compares exponents in T, R, N, which a change of units leaves unchanged"
)


STATEMENTS = (
    Statement(
        id="pfedme.cor1",
        source="pFedMe, Corollary 1 (of Theorem 1(a))",
        paper="pfedme-moreau-envelopes.md",
        latex=r"S = N:\ \beta = \Theta(\sqrt N/T)\ (\sqrt N \ge T) \Rightarrow O(1/(TRN));\quad "
        r"\beta = \Theta(N\sqrt R) \Rightarrow O(1/(TRN)^2)",
        text="S = N: beta = Theta(sqrt(N)/T) (sqrt(N) >= T) gives the linear speedup O(1/(TRN)), beta = "
        "Theta(N sqrt(R)) the quadratic speedup O(1/(TRN)^2); checked: the exponents of T, R, N of Theorem "
        "1(a)'s third term with the corollary's beta substituted",
        assumptions=(
            "S = N (no client sampling)",
            "beta >= 1 (case (i) needs sqrt(N) >= T)",
            "the O-terms of Theorem 1(a) as printed; first and last terms are not powers (docstring)",
        ),
        scaling={"quadratic": _NO_SCALING},
        families={"quadratic": ("symbolic: points (T, R, N) in both regimes; no objective is evaluated",)},
        claimed="rate",
        instances=instances_cor1,
        evaluate=evaluate_cor1,
        consistency_checks={SYMPY_PART: _SYMPY_WHY},
        claim=CLAIM1,
        readings=READINGS1,
        expect="fails",
        # T = R = N = 1, case (i): the exponent of T is 0, printed -1 (derived in pfedme.minimal_counterexamples)
        counterexamples=MINIMAL_COR1,
        mutants=_M1,
        findings=(_FINDING1,),
    ),
    Statement(
        id="pfedme.cor2",
        source="pFedMe, Corollary 2 (of Theorem 2(a))",
        paper="pfedme-moreau-envelopes.md",
        latex=r"S = N,\ \beta = \Theta(N^{1/2}R^{1/4}),\ \Theta(T^{1/3}) = \Theta((NR)^{2/3}) "
        r"\Rightarrow O(1/(TRN)^{2/3})",
        text="S = N: beta = Theta(N^(1/2) R^(1/4)) and Theta(T^(1/3)) = Theta((NR)^(2/3)) give the sublinear "
        "speedup O(1/(TRN)^(2/3)); checked: the exponents of R, N of Theorem 2(a)'s terms with that beta and T",
        assumptions=("S = N (no client sampling)", "beta >= 1", "the O-terms of Theorem 2(a) as printed"),
        scaling={"quadratic": _NO_SCALING},
        families={"quadratic": ("symbolic: points (R, N), T = c (NR)^2; no objective is evaluated",)},
        claimed="rate",
        instances=instances_cor2,
        evaluate=evaluate_cor2,
        consistency_checks={SYMPY_PART: _SYMPY_WHY},
        claim=CLAIM2,
        readings=READINGS2,
        expect="fails",
        # N = R = 1: the exponent of R of the sigma part is -5/3, printed -2 (derived in pfedme.minimal_counterexamples)
        counterexamples=MINIMAL_COR2,
        mutants=_M2,
        findings=(_FINDING2,),
    ),
)
