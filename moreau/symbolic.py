r"""Symbolic derivations (sympy) of the per-eigenvalue closed forms.

On the eigenbasis of ``A`` a quadratic splits into scalar problems
``f(x) = a x^2/2 - b x``.  :func:`quadratic_formulas` *derives* (it solves
the optimality conditions; nothing is typed in) the prox, the envelope and
its derivatives, the nested envelope and the Per-FedAvg meta-objective for
one eigenvalue, and returns the formulas.  Tests compare them with the
numeric closed forms and with the formulas written in docstrings
(lines ``Formula (sympy): name = expression``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

__all__ = ["QuadraticFormulas", "quadratic_formulas", "docstring_formulas", "symbols"]


@lru_cache(maxsize=1)
def symbols():
    """The symbols used: ``a, b, w, x, lam, gamma, alpha`` (``a`` real, the others as documented)."""
    a, b, w, x = sp.symbols("a b w x", real=True)
    lam, gamma, alpha = sp.symbols("lam gamma alpha", positive=True)
    return {"a": a, "b": b, "w": w, "x": x, "lam": lam, "gamma": gamma, "alpha": alpha}


@dataclass(frozen=True)
class QuadraticFormulas:
    """Derived formulas for ``f(x) = a x^2/2 - b x`` (one eigen-direction)."""

    f: sp.Expr
    prox: sp.Expr  # argmin_x f(x) + lam/2 (x - w)^2
    envelope: sp.Expr  # F(w)
    envelope_grad: sp.Expr  # dF/dw
    envelope_curvature: sp.Expr  # d2F/dw2
    nested_curvature: sp.Expr  # curvature of envelope(envelope(f, lam), gamma)
    meta: sp.Expr  # f(w - alpha f'(w))
    meta_grad: sp.Expr
    meta_curvature: sp.Expr

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _argmin(expr, var):
    sol = sp.solve(sp.Eq(sp.diff(expr, var), 0), var, dict=True)
    if len(sol) != 1:
        raise ArithmeticError(f"expected one stationary point, got {sol}")
    return sp.simplify(sol[0][var])


@lru_cache(maxsize=1)
def quadratic_formulas() -> QuadraticFormulas:
    """Derive the per-eigenvalue formulas (valid where ``lam + a > 0``)."""
    s = symbols()
    a, b, w, x, lam, gamma, alpha = (s[k] for k in ("a", "b", "w", "x", "lam", "gamma", "alpha"))
    f = a * x**2 / 2 - b * x
    prox = _argmin(f + lam / 2 * (x - w) ** 2, x)
    env = sp.simplify((f + lam / 2 * (x - w) ** 2).subs(x, prox))
    env_grad = sp.simplify(sp.diff(env, w))
    env_curv = sp.simplify(sp.diff(env, w, 2))
    # nested: envelope of F (a quadratic in w) with parameter gamma
    v = sp.Symbol("v", real=True)
    F_v = env.subs(w, v)
    v_hat = _argmin(F_v + gamma / 2 * (v - w) ** 2, v)
    nested = sp.simplify((F_v + gamma / 2 * (v - w) ** 2).subs(v, v_hat))
    nested_curv = sp.simplify(sp.diff(nested, w, 2))
    meta = sp.expand(f.subs(x, w - alpha * sp.diff(f, x).subs(x, w)))
    meta_grad = sp.simplify(sp.diff(meta, w))
    meta_curv = sp.factor(sp.diff(meta, w, 2))
    return QuadraticFormulas(
        f=f,
        prox=prox,
        envelope=env,
        envelope_grad=env_grad,
        envelope_curvature=env_curv,
        nested_curvature=nested_curv,
        meta=meta,
        meta_grad=meta_grad,
        meta_curvature=meta_curv,
    )


_FORMULA = re.compile(r"Formula \(sympy\):\s*(\w+)\s*=\s*(.+)")


def docstring_formulas(obj):
    """``{name: sympy expression}`` for every ``Formula (sympy): name = expr`` line in ``obj.__doc__``."""
    out = {}
    for name, expr in _FORMULA.findall(obj.__doc__ or ""):
        out[name] = sp.sympify(expr.strip(), locals=symbols())
    return out


def equal(e1, e2) -> bool:
    """Whether two expressions are identically equal (``simplify(e1 - e2) == 0``)."""
    return sp.simplify(e1 - e2) == 0
