r"""Symbolic proofs (sympy) of the thesis's nested envelopes (PerMFL's objective, eq. (4.3)).

On a quadratic every statement splits over the eigenvectors of A into scalar problems
``f(x) = a x²/2 − b x``; ``moreau.analysis.engine.symbolic`` has the method (identities by
``simplify``, inequalities by positivity certificates) and runs these with ``moreau check
--symbolic``.  ``PROOFS`` are the paper's claims, ``MUTANT_PROOFS`` the same derivations given
wrong formulas: they must come out NOT PROVED.
"""

from __future__ import annotations

from functools import partial

import sympy as sp

from moreau.analysis.engine.symbolic import Proof, Steps, a, gam, lam, s, w
from moreau.symbolic import quadratic_formulas

__all__ = ["PROOFS", "MUTANT_PROOFS"]


def nested_envelope(lam_eff=lambda lam, gam: lam * gam / (lam + gam)):
    """envelope(envelope(f, λ), γ) = envelope(f, λγ/(λ + γ)), both proxes existing for a > −λγ/(λ+γ)."""
    q = quadratic_formulas()
    st = Steps()
    v = sp.Symbol("v", real=True)
    H = q.envelope.subs(w, v) + gam / 2 * (v - w) ** 2
    (v_hat,) = sp.solve(sp.diff(H, v), v)
    nested = H.subs(v, v_hat)
    le = lam_eff(lam, gam)
    dom = {a: s - le}
    st.nonneg("inner prox exists: λ + a > 0 (a = s − λ_eff)", (lam + a).subs(dom), strict=True)
    st.nonneg("outer prox exists: d²/dv² (F(v) + γ/2 (v − w)²) > 0", sp.diff(H, v, 2).subs(dom), strict=True)
    st.identity("envelope(envelope(f, λ), γ) = envelope(f, λ_eff)", nested, q.envelope.subs(lam, le))
    st.identity(
        "curvature (moreau.symbolic) = κ with λ_eff", q.nested_curvature, q.envelope_curvature.subs(lam, le)
    )
    return st.result()


PROOFS = (
    Proof(
        "nested",
        "envelope(envelope(f, λ), γ) = envelope(f, λγ/(λ + γ))",
        "envelopes nest (docs/catalogue.md, Conventions)",
        nested_envelope,
    ),
)

#: wrong claims run through the same derivations; ``key`` names the proof mutated
MUTANT_PROOFS = (
    Proof(
        "nested",
        "nested envelope with λ + γ",
        "envelopes nest (docs/catalogue.md, Conventions)",
        partial(nested_envelope, lambda lam, gam: lam + gam),
    ),
    Proof(
        "nested",
        "nested envelope with 2λγ/(λ + γ) (harmonic mean)",
        "envelopes nest (docs/catalogue.md, Conventions)",
        partial(nested_envelope, lambda lam, gam: 2 * lam * gam / (lam + gam)),
    ),
)
