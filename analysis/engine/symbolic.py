r"""Symbolic proofs (sympy) of the quadratic identities behind the catalogue: the method.

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

The proofs live with their papers: a paper package's ``proofs`` module declares ``PROOFS`` and
``MUTANT_PROOFS`` (:class:`Proof` sequences; ``moreau.analysis.engine.registry`` collects them).
Each proof takes the claimed formula as an argument (default: the paper's); the mutant proofs
are the same derivations given wrong formulas, and must come out NOT PROVED.  This module is the
method: :func:`certify_nonneg`, :class:`Steps` (a proof's recorded steps), the shared
derivations (:func:`envelope_objective`, :func:`curvature`, :func:`extreme`) and
:func:`run_proofs` / :func:`print_proofs` (``moreau check --symbolic``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy as sp

from moreau.symbolic import quadratic_formulas, symbols

__all__ = [
    "Proof",
    "Steps",
    "certify_nonneg",
    "curvature",
    "envelope_objective",
    "extreme",
    "mutant_proofs",
    "print_proofs",
    "proofs",
    "run_derivations",
    "run_proofs",
]

_S = symbols()

a, w, x, lam, gam, alpha = (_S[k] for k in ("a", "w", "x", "lam", "gamma", "alpha"))
mu, L, s, p = sp.symbols("mu L s p", positive=True)
t, u = sp.symbols("t u", nonnegative=True)


@dataclass(frozen=True)
class Proof:
    """A named claim and its check: ``check() -> (proved, detail)``."""

    key: str  # short handle; a mutant carries the key of the proof it mutates
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
        return any(
            c > 0 and all(syms[i].is_positive for i, k in enumerate(m) if k)
            for m, c in zip(P.monoms(), P.coeffs(), strict=True)
        )

    ok = (
        all(c >= 0 for c in num.coeffs())
        and all(c >= 0 for c in den.coeffs())
        and positive_term(den)
        and (positive_term(num) or not strict)
    )
    return bool(ok), f"{sp.factor(e)} {'>' if strict else '>='} 0"


class Steps:
    """The steps of one proof: each an identity or a certified inequality, with its text."""

    def __init__(self):
        self.steps = []

    def check(self, ok, text):
        self.steps.append((bool(ok), text))
        return bool(ok)

    def identity(self, what, lhs, rhs):
        d = sp.simplify(lhs - rhs)
        return self.check(
            d == 0,
            f"{what}: {sp.factor(lhs)} = {sp.factor(rhs)}"
            + ("" if d == 0 else f" (difference {sp.factor(d)})"),
        )

    def nonneg(self, what, expr, strict=False):
        ok, text = certify_nonneg(expr, strict)
        return self.check(ok, f"{what}: {text}")

    def result(self):
        return all(ok for ok, _ in self.steps), "\n".join(
            f"{'ok  ' if ok else 'FAIL'} {text}" for ok, text in self.steps
        )


def envelope_objective():
    """``h(θ) = f(θ) + λ/2 (θ − w)²`` (θ is ``x``) and the derived formulas."""
    q = quadratic_formulas()
    return q, q.f + lam / 2 * (x - w) ** 2


def curvature(st):
    """Record d²F/dw² = λa/(λ + a) in ``st``; return it."""
    q = quadratic_formulas()
    st.identity("d²F/dw² = λa/(λ + a)", q.envelope_curvature, lam * a / (lam + a))
    st.nonneg(
        "dκ/da > 0 for a > −λ (a = s − λ): a ↦ κ(a) is increasing",
        sp.diff(q.envelope_curvature, a).subs(a, s - lam),
        strict=True,
    )
    return q.envelope_curvature


def extreme(st, what, expr, which):
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


def proofs() -> tuple:
    """Every paper package's ``PROOFS``, in catalogue order."""
    from moreau.analysis.engine.registry import declared

    return tuple(pr for _, group in declared("PROOFS") for pr in group)


def mutant_proofs() -> tuple:
    """Every paper package's ``MUTANT_PROOFS``."""
    from moreau.analysis.engine.registry import declared

    return tuple(pr for _, group in declared("MUTANT_PROOFS") for pr in group)


def run_proofs(selection=None) -> list:
    """``[{"key", "name", "statement", "proved", "detail"}]``; an exception counts as NOT PROVED."""
    out = []
    for pr in proofs() if selection is None else selection:
        try:
            proved, detail = pr.check()
        except Exception as exc:  # a failed derivation step is a failed proof, reported
            proved, detail = False, f"FAIL {type(exc).__name__}: {exc}"
        out.append(
            {
                "key": pr.key,
                "name": pr.name,
                "statement": pr.statement,
                "proved": bool(proved),
                "detail": detail,
            }
        )
    return out


def run_derivations(statements) -> list:
    """The sympy derivations a user's statements declare (``Statement.sharp``: family -> {part:
    zero-argument callable returning a :class:`moreau.analysis.engine.sharp.Derivation`}), one
    result per part in :func:`run_proofs`' form; an error (sympy giving up on a symbolic exponent,
    a derivation that cannot run) is that part's NOT PROVED with its reason, never raised."""
    out = []
    for st in statements:
        for fam, parts in (getattr(st, "sharp", None) or {}).items():
            for part, make in parts.items():
                try:
                    d = make()
                    proved = bool(d.proved)
                    detail = "\n".join(
                        [f"sup LHS/RHS = {d.formula}"]
                        + [f"{'ok  ' if ok else 'FAIL'} {t}" for ok, t in d.steps]
                        + [
                            f"[{c['name']}] over all admissible parameters: {c['sup_over_parameters']}"
                            for c in d.cases
                            if c.get("sup_over_parameters")
                        ]
                    )
                except Exception as exc:  # the user's derivation: reported on its part, the others still run
                    proved, detail = False, f"FAIL derivation error: {type(exc).__name__}: {exc}"
                out.append(
                    {
                        "key": f"{st.id}:{fam}:{part}",
                        "name": f"sharp constant of {part!r} [{fam}]",
                        "statement": st.id,
                        "proved": proved,
                        "detail": detail,
                    }
                )
    return out


def print_proofs(statements=None, catalogue_proofs=True) -> bool:
    """Print "proved"/"NOT PROVED" per identity with its steps; True when all are proved.

    ``statements``: a user's statements whose derivations (:func:`run_derivations`) are run too;
    ``catalogue_proofs``: whether the catalogue's own proofs run (a run of users' statements only
    does not need them)."""
    results = (run_proofs() if catalogue_proofs else []) + run_derivations(statements or ())
    if statements:
        bare = [st.id for st in statements if not getattr(st, "sharp", None)]
        if bare:
            print(f"no sympy derivation declared (Statement.sharp) for {', '.join(bare)}")
    print("symbolic proofs (one eigenvalue a of a quadratic; sympy)")
    for r in results:
        print(f"{'proved' if r['proved'] else 'NOT PROVED':10s} {r['statement']:20s} {r['name']}")
        for line in r["detail"].splitlines():
            print(f"{'':12s}{line}")
    n = sum(r["proved"] for r in results)
    print(f"{n}/{len(results)} proved\n")
    return n == len(results)
