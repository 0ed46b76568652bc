"""sympy-derived formulas vs the numeric closed forms, and vs the docstrings.

``moreau.symbolic.quadratic_formulas()`` derives per-eigenvalue formulas by
solving optimality conditions; here they are evaluated (lambdify) on diagonal
quadratics and compared with what the numeric code returns, and every
``Formula (sympy): name = expr`` docstring line is checked against them.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from _tol import assert_close

import moreau as mo
from moreau import symbolic

FORMULAS = symbolic.quadratic_formulas()
S = symbolic.symbols()


def fn(expr):
    return sp.lambdify([S[k] for k in ("a", "b", "w", "lam", "gamma", "alpha")], expr, "numpy")


@pytest.fixture
def diag():
    """Diagonal quadratic (eigenbasis = coordinates): a mixed-sign spectrum, b, w, lam, gamma, alpha."""
    a = np.array([-1.5, 0.2, 1.0, 4.0])
    b, w = np.array([0.3, -1.0, 2.0, 0.5]), np.array([1.0, 2.0, -0.5, 3.0])
    lam = 2.5  # > 1.5 = -a_min
    a1 = lam * a / (lam + a)
    gamma = -a1.min() + 1.0
    return a, b, w, lam, gamma, 0.1


def test_prox_and_envelope(diag):
    a, b, w, lam, gamma, alpha = diag
    q = mo.Quadratic(np.diag(a), b)
    args = (a, b, w, lam, gamma, alpha)
    assert_close(mo.prox(q, w, lam), fn(FORMULAS.prox)(*args))
    F = mo.envelope(q, lam)
    assert_close(F.value(w), np.sum(fn(FORMULAS.envelope)(*args)))
    assert_close(F.grad(w), fn(FORMULAS.envelope_grad)(*args))
    assert_close(np.diag(F.hess(w)), fn(FORMULAS.envelope_curvature)(*args))
    assert_close(F.hess(w) - np.diag(np.diag(F.hess(w))), np.zeros((4, 4)), scale=np.abs(a).max())


def test_nested_envelope_curvature(diag):
    a, b, w, lam, gamma, alpha = diag
    N = mo.envelope(mo.envelope(mo.Quadratic(np.diag(a), b), lam), gamma)
    assert_close(np.diag(N.hess(w)), fn(FORMULAS.nested_curvature)(a, b, w, lam, gamma, alpha))


def test_meta_objective(diag):
    a, b, w, lam, gamma, alpha = diag
    G = mo.meta_objective(mo.Quadratic(np.diag(a), b), alpha)
    args = (a, b, w, lam, gamma, alpha)
    assert_close(G.value(w), np.sum(fn(FORMULAS.meta)(*args)))
    assert_close(G.grad(w), fn(FORMULAS.meta_grad)(*args))
    assert_close(np.diag(G.hess(w)), fn(FORMULAS.meta_curvature)(*args))
    lo, hi = G.curvature_bounds()
    curv = fn(FORMULAS.meta_curvature)(*args)
    assert_close(lo, curv.min(), scale=np.abs(curv).max())
    assert_close(hi, curv.max(), scale=np.abs(curv).max())


DOCUMENTED = [
    (obj, name)
    for obj in (mo.Quadratic, mo.Envelope, mo.MetaObjective)
    for name in symbolic.docstring_formulas(obj)
]


def test_every_class_documents_a_formula():
    assert {obj for obj, _ in DOCUMENTED} == {mo.Quadratic, mo.Envelope, mo.MetaObjective}


@pytest.mark.parametrize("obj, name", DOCUMENTED, ids=[f"{o.__name__}.{n}" for o, n in DOCUMENTED])
def test_docstring_formula_is_the_derived_formula(obj, name):
    documented = symbolic.docstring_formulas(obj)[name]
    assert symbolic.equal(documented, getattr(FORMULAS, name)), f"{obj.__name__}: {name} = {documented}"


@pytest.mark.parametrize(
    "wrong", ["(b + lam*w)/(a - lam)", "(b - lam*w)/(a + lam)", "lam*w/(a + lam)", "(b + lam*w)/(2*a + lam)"]
)
def test_a_wrong_formula_is_found_unequal(wrong):
    """The check can fail: a docstring with a wrong prox formula is detected."""

    class Fake:
        __doc__ = f"A quadratic.\n\n    Formula (sympy): prox = {wrong}\n"

    documented = symbolic.docstring_formulas(Fake)
    assert set(documented) == {"prox"}
    assert not symbolic.equal(documented["prox"], FORMULAS.prox)
