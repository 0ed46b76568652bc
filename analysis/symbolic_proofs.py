r"""Symbolic proofs (sympy) of the quadratic identities behind the catalogue.

On a quadratic every statement splits over the eigenvectors of A into scalar
problems ``f(x) = a x²/2 − b x``, one per eigenvalue ``a``;
:func:`moreau.symbolic.quadratic_formulas` derives the prox, the envelope (as
a minimum: it solves the optimality condition) and the Per-FedAvg
meta-objective for one eigenvalue.  Each proof here checks one claim of
the catalogue (docs/catalogue.md) on that scalar problem and returns ``(proved, detail)``.

How a claim is proved, so that a wrong claim comes out NOT PROVED:

* identities: ``simplify(lhs − rhs) == 0``;
* inequalities: a positivity certificate.  Case conditions become
  substitutions by positive symbols (``λ + a > 0`` is ``a = s − λ``, s > 0;
  ``λ > L`` is ``λ = L + s``; ``α ∈ (0, 1/L]`` is ``α = 1/(L(1+t))``, t ≥ 0),
  the expression is brought to one fraction ``p/q`` of polynomials, and every
  coefficient of ``p`` and of ``q`` must be ≥ 0 (a polynomial with
  nonnegative coefficients is ≥ 0 on nonnegative variables).  No certificate
  means NOT PROVED (the claim may still be true: nothing is ever asserted).

Each proof takes the claimed formula as an argument (default: the paper's);
:data:`MUTANT_PROOFS` are the same derivations given wrong formulas, and must
come out NOT PROVED.  ``moreau check --symbolic`` runs :func:`print_proofs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import sympy as sp

from moreau.symbolic import quadratic_formulas, symbols

__all__ = ["Proof", "PROOFS", "MUTANT_PROOFS", "run_proofs", "print_proofs", "certify_nonneg"]

_S = symbols()
a, w, x, lam, gam, alpha = (_S[k] for k in ("a", "w", "x", "lam", "gamma", "alpha"))
mu, L, s, p = sp.symbols("mu L s p", positive=True)
t, u = sp.symbols("t u", nonnegative=True)


@dataclass(frozen=True)
class Proof:
    """A named claim and its check: ``check() -> (proved, detail)``."""

    key: str        # short handle; a mutant carries the key of the proof it mutates
    name: str
    statement: str  # catalogue id the claim belongs to
    check: Callable


def certify_nonneg(expr, strict=False):
    """``(ok, text)``: whether ``expr ≥ 0`` (``> 0`` if strict) is certified.

    Every free symbol must be declared positive or nonnegative; ``expr = p/q``
    with all coefficients of the polynomials p and q ≥ 0 (after flipping both
    signs if q's are all ≤ 0).  Strict needs a monomial of p with a positive
    coefficient in positive symbols only.
    """
    e = sp.cancel(sp.together(expr))
    syms = sorted(e.free_symbols, key=str)
    unknown = [g for g in syms if not g.is_nonnegative]
    if unknown:
        return False, f"{sp.factor(e)}: sign of {unknown} unknown"
    if not syms:
        return bool(e > 0 if strict else e >= 0), str(e)
    num, den = (sp.Poly(v, *syms) for v in sp.fraction(e))
    if all(c <= 0 for c in den.coeffs()):
        num, den = -num, -den

    def positive_term(P):
        return any(c > 0 and all(syms[i].is_positive for i, k in enumerate(m) if k)
                   for m, c in zip(P.monoms(), P.coeffs()))

    ok = (all(c >= 0 for c in num.coeffs()) and all(c >= 0 for c in den.coeffs())
          and positive_term(den) and (positive_term(num) or not strict))
    return bool(ok), f"{sp.factor(e)} {'>' if strict else '>='} 0"


class _Steps:
    def __init__(self):
        self.steps = []

    def check(self, ok, text):
        self.steps.append((bool(ok), text))
        return bool(ok)

    def identity(self, what, lhs, rhs):
        d = sp.simplify(lhs - rhs)
        return self.check(d == 0, f"{what}: {sp.factor(lhs)} = {sp.factor(rhs)}"
                          + ("" if d == 0 else f" (difference {sp.factor(d)})"))

    def nonneg(self, what, expr, strict=False):
        ok, text = certify_nonneg(expr, strict)
        return self.check(ok, f"{what}: {text}")

    def result(self):
        return all(ok for ok, _ in self.steps), "\n".join(
            f"{'ok  ' if ok else 'FAIL'} {text}" for ok, text in self.steps)


def _h():
    """``h(θ) = f(θ) + λ/2 (θ − w)²`` (θ is ``x``) and the derived formulas."""
    q = quadratic_formulas()
    return q, q.f + lam / 2 * (x - w) ** 2


# --- pFedMe Proposition 1 and FedProx Lemma 3: the gradient of the envelope -----

def gradient_formula(grad=lambda lam, w, theta: lam * (w - theta)):
    """∇F(w) = λ(w − θ̂(w)), F derived as the minimum of h (pFedMe eq. (6))."""
    q, h = _h()
    st = _Steps()
    st.nonneg("h''(θ) = a + λ > 0 where a > −λ (a = s − λ): θ̂ is the unique minimiser",
              sp.diff(h, x, 2).subs(a, s - lam), strict=True)
    st.identity("h'(θ̂) = 0", sp.diff(h, x).subs(x, q.prox), 0)
    st.identity("dF/dw = claimed gradient", sp.diff(q.envelope, w), grad(lam, w, q.prox))
    return st.result()


def fedprox_gradient(grad=lambda lam, w, theta: lam * (w - theta)):
    """FedProx Lemma 3 by the envelope theorem: dF/dw = ∂h/∂w at θ̂ since ∂h/∂θ(θ̂) = 0."""
    q, h = _h()
    st = _Steps()
    st.nonneg("h''(θ) = a + λ > 0 (a = s − λ)", sp.diff(h, x, 2).subs(a, s - lam), strict=True)
    st.identity("chain rule dF/dw = ∂h/∂w(θ̂) + ∂h/∂θ(θ̂) dθ̂/dw", sp.diff(q.envelope, w),
                (sp.diff(h, w) + sp.diff(h, x) * sp.diff(q.prox, w)).subs(x, q.prox))
    st.identity("∂h/∂θ(θ̂) = 0", sp.diff(h, x).subs(x, q.prox), 0)
    st.identity("∂h/∂w(θ̂) = claimed gradient", sp.diff(h, w).subs(x, q.prox), grad(lam, w, q.prox))
    st.nonneg("∇F is C¹: denominator of d∇F/dw is a + λ > 0 (a = s − λ)",
              sp.fraction(sp.cancel(sp.diff(q.envelope, w, 2)))[1].subs(a, s - lam), strict=True)
    return st.result()


# --- pFedMe Proposition 1: smoothness and strong convexity of the envelope ------

def _curvature(st):
    q = quadratic_formulas()
    st.identity("d²F/dw² = λa/(λ + a)", q.envelope_curvature, lam * a / (lam + a))
    st.nonneg("dκ/da > 0 for a > −λ (a = s − λ): a ↦ κ(a) is increasing",
              sp.diff(q.envelope_curvature, a).subs(a, s - lam), strict=True)
    return q.envelope_curvature


def convex_smoothness(L_F=lambda lam: lam):
    """|κ(a)| ≤ L_F = λ for every a ≥ 0 (f convex)."""
    st = _Steps()
    kappa = _curvature(st).subs(a, u)
    st.nonneg("κ(a) ≥ 0 for a = u ≥ 0", kappa)
    st.nonneg("L_F − κ(a) ≥ 0 for a = u ≥ 0", L_F(lam) - kappa)
    return st.result()


def nonconvex_threshold(threshold=lambda L: 2 * L):
    """a ∈ [−L, L], λ > L: max|κ| = κ-worst at a = −L, and ≤ λ iff λ ≥ threshold."""
    st = _Steps()
    kappa = _curvature(st)  # increasing: on [−L, L] it lies in [κ(−L), κ(L)]
    worst = -kappa.subs(a, -L)
    st.identity("|κ(−L)| = −κ(−L) = λL/(λ − L)", worst, lam * L / (lam - L))
    st.nonneg("−κ(−L) − κ(L) > 0 (λ = L + s): max over [−L, L] of |κ| is at a = −L",
              (worst - kappa.subs(a, L)).subs(lam, L + s), strict=True)
    th = threshold(L)
    ratio = sp.cancel((lam - worst) / (lam - th))
    st.nonneg(f"(λ − λL/(λ − L)) / (λ − ({th})) > 0 (λ = L + s), so λL/(λ − L) ≤ λ iff λ ≥ {th}",
              ratio.subs(lam, L + s), strict=True)
    ell = sp.Symbol("ell", real=True)
    st.identity("homogeneous: worst(λ, L) = L worst(λ/L, 1)", worst.subs(lam, ell * L),
                L * worst.subs({lam: ell, L: 1}))
    sol = sp.solveset(worst.subs({L: 1, lam: ell}) <= ell, ell, sp.Interval.open(1, sp.oo))
    st.check(sol == sp.Interval(threshold(1), sp.oo),
             f"solveset of λ/(λ − 1) ≤ λ on λ > 1 (L = 1): {sol}; claimed [{threshold(1)}, oo)")
    return st.result()


def strong_convexity(mu_F=lambda lam, mu: lam * mu / (lam + mu)):
    """μ_F = κ(μ) = λμ/(λ+μ), the minimum curvature (κ increasing: attained at a_1 = μ)."""
    st = _Steps()
    kappa = _curvature(st)
    st.identity("κ(μ) = claimed μ_F", kappa.subs(a, mu), mu_F(lam, mu))
    return st.result()


# --- FedProx Lemma 2: five constants, extremes over a ∈ [μ, L], 0 < μ ≤ L -------

def _extreme(st, what, expr, which):
    """Max or min of ``expr`` over a ∈ [μ, L] via a certified sign of d/da (a = p > 0)."""
    d = sp.diff(expr, a).subs(a, p)
    if certify_nonneg(d)[0]:
        at = L if which == "max" else mu
        st.check(True, f"{what} is nondecreasing in a > 0 (d/da = {sp.factor(d)}): {which} at a = {at}")
    elif certify_nonneg(-d)[0]:
        at = mu if which == "max" else L
        st.check(True, f"{what} is nonincreasing in a > 0 (d/da = {sp.factor(d)}): {which} at a = {at}")
    else:
        st.check(False, f"{what}: no certified sign of d/da = {sp.factor(d)}")
        return None
    return expr.subs(a, at)


def fedprox_constant(kind, claimed):
    """One of Lemma 2's constants: ``kind`` in mu_g, L_g, mu_l, L_l, L_w."""
    q, h = _h()
    st = _Steps()
    expr, which, what = {
        "mu_g": (q.envelope_curvature, "min", "curvature of F_i λa/(λ+a)"),
        "L_g": (q.envelope_curvature, "max", "curvature of F_i λa/(λ+a)"),
        "mu_l": (sp.diff(h, x, 2), "min", "curvature of h_i in θ"),
        "L_l": (sp.diff(h, x, 2), "max", "curvature of h_i in θ"),
        "L_w": (sp.diff(q.prox, w), "max", "derivative of the prox map dθ̂/dw"),
    }[kind]
    st.nonneg(f"{what} > 0 for a > 0 (so it equals its absolute value)", expr.subs(a, p), strict=True)
    value = _extreme(st, what, expr, which)
    if value is not None:
        st.identity(f"{kind} = {which} over [μ, L]", value, claimed)
    return st.result()


# --- Per-FedAvg Lemma 4.2 ----------------------------------------------------------

def meta_hessian(hess=lambda a, alpha: a * (1 - alpha * a) ** 2):
    """d²/dw² f(w − αf'(w)) = a(1 − αa)², and eq. (5) ∇F = (1 − αf'')f'(w − αf'(w))."""
    q = quadratic_formulas()
    st = _Steps()
    fp = sp.diff(q.f, x)
    st.identity("eq. (5): ∇F(w) = (1 − α f'') f'(w − α f'(w))", q.meta_grad,
                ((1 - alpha * sp.diff(q.f, x, 2)) * fp.subs(x, w - alpha * fp.subs(x, w))))
    st.identity("d²F/dw² = claimed Hessian", sp.diff(q.meta, w, 2), hess(a, alpha))
    return st.result()


def meta_smoothness(bound=lambda L, alpha: L * (1 + alpha * L) ** 2, L_F=lambda L: 4 * L):
    """max over a ∈ [−L, L] of |a(1 − αa)²| = bound, attained at a = −L; bound ≤ L_F for α ∈ (0, 1/L]."""
    q = quadratic_formulas()
    st = _Steps()
    g = q.meta_curvature
    alpha_in = {alpha: 1 / (L * (1 + t))}  # α ∈ (0, 1/L]
    st.nonneg("|g(−L)| = −g(−L) ≥ 0", -g.subs(a, -L))
    st.identity("|g(−L)| = claimed max", -g.subs(a, -L), bound(L, alpha))
    st.nonneg("g(L) ≥ 0 for α ≤ 1/L, so |g(L)| = g(L)", g.subs(a, L).subs(alpha_in))
    st.nonneg("claimed max − |g(L)| ≥ 0", (bound(L, alpha) - g.subs(a, L)).subs(alpha_in))
    roots = sp.solve(sp.diff(g, a), a)
    st.check(len(roots) == 2, f"critical points of g: {roots}")
    for r in roots:
        k = sp.simplify(r * alpha)  # r = k/α, inside [−L, L] only when α ≥ k/L
        if k.free_symbols:
            st.check(False, f"critical point {r} is not of the form k/α")
            continue
        gr = sp.Abs(sp.simplify(g.subs(a, r) * alpha)) / alpha
        st.nonneg(f"claimed max − |g({r})| ≥ 0 where {r} ≤ L (α = ({k} + t)/L)",
                  (bound(L, alpha) - gr).subs(alpha, (k + t) / L))
    st.nonneg("L_F − claimed max ≥ 0 for α ∈ (0, 1/L] (α = 1/(L(1 + t)))",
              (L_F(L) - bound(L, alpha)).subs(alpha_in))
    st.identity("tight: claimed max = L_F at α = 1/L (a = −L)", bound(L, 1 / L), L_F(L))
    return st.result()


# --- nested envelopes ---------------------------------------------------------------

def nested_envelope(lam_eff=lambda lam, gam: lam * gam / (lam + gam)):
    """envelope(envelope(f, λ), γ) = envelope(f, λγ/(λ + γ)), both proxes existing for a > −λγ/(λ+γ)."""
    q = quadratic_formulas()
    st = _Steps()
    v = sp.Symbol("v", real=True)
    H = q.envelope.subs(w, v) + gam / 2 * (v - w) ** 2
    (v_hat,) = sp.solve(sp.diff(H, v), v)
    nested = H.subs(v, v_hat)
    le = lam_eff(lam, gam)
    dom = {a: s - le}
    st.nonneg("inner prox exists: λ + a > 0 (a = s − λ_eff)", (lam + a).subs(dom), strict=True)
    st.nonneg("outer prox exists: d²/dv² (F(v) + γ/2 (v − w)²) > 0", sp.diff(H, v, 2).subs(dom), strict=True)
    st.identity("envelope(envelope(f, λ), γ) = envelope(f, λ_eff)", nested, q.envelope.subs(lam, le))
    st.identity("curvature (moreau.symbolic) = κ with λ_eff", q.nested_curvature,
                q.envelope_curvature.subs(lam, le))
    return st.result()


PROOFS = (
    Proof("prop1.grad", "gradient formula (6): dF/dw = λ(w − θ̂), F derived as a min", "pfedme.prop1",
          gradient_formula),
    Proof("prop1.convex", "L_F = λ for convex f: 0 ≤ λa/(λ + a) ≤ λ for a ≥ 0", "pfedme.prop1",
          convex_smoothness),
    Proof("prop1.nonconvex", "nonconvex: |λa/(λ+a)| ≤ λ on [−L, L] iff λ ≥ 2L (worst a = −L)", "pfedme.prop1",
          nonconvex_threshold),
    Proof("prop1.mu_F", "μ_F = λμ/(λ + μ), the curvature at a_1 = μ (κ increasing)", "pfedme.prop1",
          strong_convexity),
    Proof("lemma2.mu_g", "μ_g = λμ/(λ + μ)", "fedprox.lemma2",
          partial(fedprox_constant, "mu_g", lam * mu / (lam + mu))),
    Proof("lemma2.L_g", "L_g = λL/(λ + L)", "fedprox.lemma2",
          partial(fedprox_constant, "L_g", lam * L / (lam + L))),
    Proof("lemma2.mu_l", "μ_ℓ = μ + λ", "fedprox.lemma2", partial(fedprox_constant, "mu_l", mu + lam)),
    Proof("lemma2.L_l", "L_ℓ = L + λ", "fedprox.lemma2", partial(fedprox_constant, "L_l", L + lam)),
    Proof("lemma2.L_w", "L_w = λ/(λ + μ)", "fedprox.lemma2", partial(fedprox_constant, "L_w", lam / (lam + mu))),
    Proof("lemma3.grad", "∇F_i(w) = λ(w − prox(w)) (envelope theorem)", "fedprox.lemma3", fedprox_gradient),
    Proof("lemma4_2.hess", "Hessian of f(w − αf'(w)) = a(1 − αa)², gradient eq. (5)", "perfedavg.lemma4_2",
          meta_hessian),
    Proof("lemma4_2.L_F", "max_{|a|≤L} |a(1 − αa)²| = L(1 + αL)² ≤ 4L for α ≤ 1/L, = 4L at α = 1/L",
          "perfedavg.lemma4_2", meta_smoothness),
    Proof("nested", "envelope(envelope(f, λ), γ) = envelope(f, λγ/(λ + γ))", "envelopes nest (docs/catalogue.md, Conventions)",
          nested_envelope),
)

#: wrong claims run through the same derivations; ``key`` names the proof mutated
MUTANT_PROOFS = (
    Proof("prop1.grad", "gradient sign flipped: λ(θ̂ − w)", "pfedme.prop1",
          partial(gradient_formula, lambda lam, w, th: lam * (th - w))),
    Proof("prop1.grad", "gradient (w − θ̂)/λ", "pfedme.prop1",
          partial(gradient_formula, lambda lam, w, th: (w - th) / lam)),
    Proof("prop1.convex", "L_F = λ/2 for convex f", "pfedme.prop1", partial(convex_smoothness, lambda lam: lam / 2)),
    Proof("prop1.nonconvex", "nonconvex threshold λ ≥ L instead of 2L", "pfedme.prop1",
          partial(nonconvex_threshold, lambda L: L)),
    Proof("prop1.nonconvex", "nonconvex threshold λ ≥ 3L instead of 2L", "pfedme.prop1",
          partial(nonconvex_threshold, lambda L: 3 * L)),
    Proof("prop1.mu_F", "μ_F = λμ/(λ − μ)", "pfedme.prop1",
          partial(strong_convexity, lambda lam, mu: lam * mu / (lam - mu))),
    Proof("lemma2.mu_g", "μ_g = λμ/(λ − μ)", "fedprox.lemma2",
          partial(fedprox_constant, "mu_g", lam * mu / (lam - mu))),
    Proof("lemma2.L_g", "L_g = λL/(λ − L)", "fedprox.lemma2", partial(fedprox_constant, "L_g", lam * L / (lam - L))),
    Proof("lemma2.mu_l", "μ_ℓ = μ (λ forgotten)", "fedprox.lemma2", partial(fedprox_constant, "mu_l", mu)),
    Proof("lemma2.L_l", "L_ℓ = L (λ forgotten)", "fedprox.lemma2", partial(fedprox_constant, "L_l", L)),
    Proof("lemma2.L_w", "L_w = λ/(λ + L) (wrong end of [μ, L])", "fedprox.lemma2",
          partial(fedprox_constant, "L_w", lam / (lam + L))),
    Proof("lemma3.grad", "∇F_i(w) = λ(prox(w) − w)", "fedprox.lemma3",
          partial(fedprox_gradient, lambda lam, w, th: lam * (th - w))),
    Proof("lemma4_2.hess", "Hessian a(1 − αa)", "perfedavg.lemma4_2",
          partial(meta_hessian, lambda a, alpha: a * (1 - alpha * a))),
    Proof("lemma4_2.L_F", "max attained at a = +L: L(1 − αL)²", "perfedavg.lemma4_2",
          partial(meta_smoothness, lambda L, alpha: L * (1 - alpha * L) ** 2)),
    Proof("lemma4_2.L_F", "L_F = 2L", "perfedavg.lemma4_2", partial(meta_smoothness, L_F=lambda L: 2 * L)),
    Proof("nested", "nested envelope with λ + γ", "envelopes nest (docs/catalogue.md, Conventions)",
          partial(nested_envelope, lambda lam, gam: lam + gam)),
    Proof("nested", "nested envelope with 2λγ/(λ + γ) (harmonic mean)", "envelopes nest (docs/catalogue.md, Conventions)",
          partial(nested_envelope, lambda lam, gam: 2 * lam * gam / (lam + gam))),
)


def run_proofs(proofs=PROOFS) -> list:
    """``[{"key", "name", "statement", "proved", "detail"}]``; an exception counts as NOT PROVED."""
    out = []
    for pr in proofs:
        try:
            proved, detail = pr.check()
        except Exception as exc:  # a failed derivation step is a failed proof, reported
            proved, detail = False, f"FAIL {type(exc).__name__}: {exc}"
        out.append({"key": pr.key, "name": pr.name, "statement": pr.statement, "proved": bool(proved),
                    "detail": detail})
    return out


def print_proofs() -> bool:
    """Print "proved"/"NOT PROVED" per identity with its steps; True when all are proved."""
    results = run_proofs()
    print("symbolic proofs (one eigenvalue a of a quadratic; sympy)")
    for r in results:
        print(f"{'proved' if r['proved'] else 'NOT PROVED':10s} {r['statement']:20s} {r['name']}")
        for line in r["detail"].splitlines():
            print(f"{'':12s}{line}")
    n = sum(r["proved"] for r in results)
    print(f"{n}/{len(results)} proved\n")
    return n == len(results)
