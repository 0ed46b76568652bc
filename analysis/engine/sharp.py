r"""Sharp constants of one-eigenvalue statements, derived with sympy (``moreau check --analyse``).

On a quadratic every statement whose worst case is one eigenvalue ``a`` splits into scalar
problems: LHS/RHS of an instance is (at most) ``max_k g(a_k)`` over its spectrum, for a ratio
``g(a)`` *derived* from :func:`moreau.symbolic.quadratic_formulas` (the envelope's curvature
``λa/(λ + a)``, the meta-objective's ``a(1 − αa)²``, ...).  The sharp constant of a part is then

.. math::  \sup_{a \in [lo, hi]} g(a) \quad (\text{or } |g(a)|),

the eigenvalue range ``[lo, hi]`` given by the statement's assumptions (``[0, L]`` for convex f,
``[−L, L]`` for L-smooth f, ``[μ, L]`` for strongly convex f).  :func:`derive` finds it without
sampling: g is differentiable on the interval (its poles are certified outside), so the sup is
attained at an endpoint or a critical point (``sympy.solve(g'(a) = 0)``); a critical point counts
when it is certified inside, is dropped when certified outside; the candidate that dominates
every other one (and their negatives for ``|g|``) is found by positivity certificates
(:func:`moreau.analysis.engine.symbolic.certify_nonneg`) after the case's constraints are written
as substitutions by nonnegative symbols (``λ > 2L`` is ``λ = L(2 + s)``, ``α ≤ 1/L`` is
``α = 1/(L(1 + t))``).  A case whose candidates cannot be ordered is NOT PROVED (reported, never
assumed).  Each case also reports the sup of the derived formula over all admissible parameters
(a function of one dimensionless ratio, e.g. ``λ/L``: endpoints as limits and critical points).

The formulas are evaluated on a batch's parameters (:meth:`Derivation.evaluate`) and compared
by ``moreau.analysis.engine.analyse`` with the ratios the instances reach: no instance may exceed its
derived sup (a violation is either a finding or a wrong derivation).

The declarations live with the checkers: ``Statement.sharp`` maps a family to
``{part name: zero-argument callable returning a Derivation}`` (each paper package's
``sharp_constants`` module, cached; sympy is imported only when one is called, so loading the
registry stays cheap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Case", "Derivation", "all_true", "derive", "sup_over_interval", "sym_context"]


@dataclass(frozen=True)
class Case:
    """One case of a derivation: the eigenvalue range, its constraints, the instances it covers.

    ``interval``: ``(lo, hi)`` sympy expressions of the parameters.  ``subs``: the case's
    constraints as a substitution of parameters by nonnegative symbols (certificates are taken
    after it).  ``where``: ``params (dict of arrays) -> mask`` of the instances in this case.
    ``x``: ``(name, substitution, lo, hi, lo_open, hi_open)``: the dimensionless ratio the
    formula depends on (``substitution`` writes a parameter through the symbol ``x``) and its
    admissible range, for the sup over parameters."""

    name: str
    interval: tuple
    subs: dict
    where: Callable
    x: tuple


@dataclass(frozen=True)
class Derivation:
    """The derived sharp constant of one part; :meth:`evaluate` gives it per instance."""

    ratio: str  # g(a), the per-eigenvalue LHS/RHS
    absolute: bool  # the sup of |g| (a norm of the Hessian) rather than of g
    cases: tuple  # dicts: name, interval, formula, argmax, sup_over_parameters, sup_value, attained
    proved: bool
    steps: tuple  # (ok, text)
    params: dict  # parameter name -> batch -> array
    funcs: tuple  # per case: numpy function of the parameters
    wheres: tuple  # per case: params -> mask

    @property
    def formula(self) -> str:
        forms = {c["formula"] for c in self.cases}
        if len(forms) == 1:
            return forms.pop()
        return "; ".join(f"{c['formula']} ({c['name']})" for c in self.cases)

    @property
    def sup_value(self) -> float:
        return max(c["sup_value"] for c in self.cases)

    def evaluate(self, batch) -> np.ndarray:
        """The derived sup per instance (NaN where no case covers it)."""
        p = {k: np.asarray(f(batch), dtype=float) for k, f in self.params.items()}
        n = np.shape(next(iter(p.values())))[0]
        out = np.full(n, np.nan)
        done = np.zeros(n, bool)
        for fn, where in zip(self.funcs, self.wheres, strict=True):
            m = np.asarray(where(p), bool) & ~done
            with np.errstate(divide="ignore", invalid="ignore"):
                v = np.broadcast_to(np.asarray(fn(**p), dtype=float), (n,))
            out[m], done = v[m], done | m
        return out

    def as_dict(self):
        return {
            "ratio": self.ratio,
            "absolute": self.absolute,
            "formula": self.formula,
            "proved": self.proved,
            "cases": [dict(c) for c in self.cases],
            "steps": [t for _, t in self.steps],
        }


def _certify(expr, strict=False):
    from moreau.analysis.engine.symbolic import certify_nonneg

    return certify_nonneg(expr, strict)[0]


def sup_over_interval(g, a, lo, hi, subs, absolute=False):
    """``(value, argmax, steps)``: sup of g (or |g|) over ``a ∈ [lo, hi]`` under the case ``subs``.

    ``value`` is a sympy expression of the parameters (None when not proved); ``steps`` the
    certified statements ``(ok, text)``."""
    import sympy as sp

    steps = []

    def sub(e):
        return sp.cancel(sp.together(sp.sympify(e).subs(subs)))

    den = sp.denom(sp.together(g))
    for pole in sp.solve(den, a):
        out = _certify(sub(lo - pole), True) or _certify(sub(pole - hi), True)
        steps.append((out, f"pole a = {pole} outside [{lo}, {hi}]"))
        if not out:
            return None, None, steps
    cands = [(lo, "endpoint"), (hi, "endpoint")]
    for c in sp.solve(sp.diff(g, a), a):
        if not c.is_real and c.is_real is not None:
            continue
        inside = _certify(sub(c - lo)) and _certify(sub(hi - c))
        outside = _certify(sub(lo - c)) or _certify(sub(c - hi))
        steps.append(
            (
                inside or outside,
                f"critical point a = {c}: "
                + ("inside" if inside else "outside (or on the boundary)" if outside else "position unknown"),
            )
        )
        if inside:
            cands.append((c, "critical point"))
        elif not outside:
            return None, None, steps
    vals = []
    for c, _ in cands:
        v = sp.simplify(g.subs(a, c))
        vals.append((v, c))
        if absolute:
            vals.append((-v, c))
    for v, c in vals:
        if all(_certify(sub(v - u)) for u, _ in vals):
            best = sp.factor(sp.simplify(v))
            steps.append(
                (
                    True,
                    f"sup{' |g|' if absolute else ''} over a in [{lo}, {hi}] = {best} at a = {c} "
                    f"(>= every other candidate: {', '.join(str(sp.factor(u)) for u, _ in vals)})",
                )
            )
            return best, f"a = {c}", steps
    steps.append((False, f"no candidate dominates: {[str(u) for u, _ in vals]}"))
    return None, None, steps


def _sup_over_x(F, x, lo, hi, lo_open, hi_open):
    """Sup of a one-variable expression over an interval: ``(value, where, attained)``."""
    import sympy as sp

    if x not in F.free_symbols:
        return F, "every admissible value", True
    cands = [
        (sp.limit(F, x, lo, "+") if lo_open or lo in (sp.oo, -sp.oo) else F.subs(x, lo), lo, not lo_open),
        (sp.limit(F, x, hi, "-") if hi_open or hi in (sp.oo, -sp.oo) else F.subs(x, hi), hi, not hi_open),
    ]
    for c in sp.solve(sp.diff(F, x), x):
        if c.is_real and bool(c > lo) and bool(c < hi):
            cands.append((F.subs(x, c), c, True))
    v, at, att = max(cands, key=lambda c: float(c[0]))
    return sp.nsimplify(v), f"x = {at}", att


def derive(g, a, cases, params, *, absolute=False, per_step=False):
    """A :class:`Derivation` of ``sup g`` (``|g|`` if ``absolute``) over each case's interval.

    ``per_step``: the ratio after t >= 1 steps is ``g(a)^t``: sup over (a, t) is the sup of g
    (at t = 1) once ``0 <= g <= sup g <= 1`` is certified."""
    import sympy as sp

    out, steps, funcs, ok_all = [], [], [], True
    syms = [sp.Symbol(k, **_assumptions(k)) for k in params]
    for case in cases:
        lo_c, hi_c = case.interval
        try:  # sympy may give up (a symbolic exponent, a transcendental g): this case is NOT PROVED, said why
            best, at, st = sup_over_interval(g, a, lo_c, hi_c, case.subs, absolute)
        except Exception as exc:
            best, at, st = None, None, [(False, f"derivation error: {type(exc).__name__}: {_short(exc)}")]
        steps += [(ok, f"[{case.name}] {t}") for ok, t in st]
        ok = best is not None
        if ok and per_step:
            low, _, st2 = sup_over_interval(-g, a, lo_c, hi_c, case.subs)
            good = (
                low is not None
                and _certify(sp.cancel(sp.together((-low).subs(case.subs))))
                and _certify(sp.cancel(sp.together((1 - best).subs(case.subs))))
            )
            steps.append(
                (
                    good,
                    f"[{case.name}] 0 <= g <= {best} <= 1 on the interval: g^t <= g for t >= 1, "
                    "so t = 1 is the worst step",
                )
            )
            ok = good
        ok_all &= ok
        if not ok:
            out.append(
                {
                    "name": case.name,
                    "interval": [str(lo_c), str(hi_c)],
                    "formula": "NOT PROVED",
                    "argmax": None,
                    "sup_over_parameters": None,
                    "sup_value": float("nan"),
                    "attained": None,
                }
            )
            funcs.append(lambda *args: np.nan)  # called with the parameters positionally (_kw)
            continue
        xname, xsubs, xlo, xhi, lo_open, hi_open = case.x
        x = sp.Symbol("x", nonnegative=True)
        F = sp.simplify(best.subs(xsubs))
        if F.free_symbols - {x}:
            sup, where, att = None, f"depends on {sorted(map(str, F.free_symbols - {x}))}", False
        else:
            try:
                sup, where, att = _sup_over_x(F, x, sp.sympify(xlo), sp.sympify(xhi), lo_open, hi_open)
                where = where.replace("x =", f"{xname} =")
            except Exception as exc:  # the sup over parameters is extra: its failure is said, the case stays
                sup, where, att = None, f"not derived ({type(exc).__name__}: {_short(exc)})", False
                steps.append((True, f"[{case.name}] sup over {xname}: {where}"))
        text = (
            None
            if sup is None
            else f"{sup}{_approx(sup)} at {where}" + ("" if att else " (a limit, not attained)")
        )
        out.append(
            {
                "name": case.name,
                "interval": [str(lo_c), str(hi_c)],
                "formula": _text(best),
                "argmax": at,
                "sup_over_parameters": text,
                "sup_value": float("nan") if sup is None else float(sup),
                "attained": att,
            }
        )
        funcs.append(sp.lambdify(syms, best, "numpy"))
    return Derivation(
        ratio=_text(g),
        absolute=absolute,
        cases=tuple(out),
        proved=ok_all,
        steps=tuple(steps),
        params=dict(params),
        funcs=tuple(_kw(f, list(params)) for f in funcs),
        wheres=tuple(c.where for c in cases),
    )


def _short(exc, n=200):
    text = " ".join(str(exc).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _approx(e, digits=4):
    """`` ≈ <decimal>`` when ``e`` carries a long rational constant (more than 3 digits in its
    numerator or denominator: ``3141/1000 ≈ 3.141``), else empty."""
    import sympy as sp

    e = sp.sympify(e)
    coeff, _ = sp.factor(e).as_coeff_Mul()
    rats = [r for r in e.atoms(sp.Rational) if r.q != 1] + [coeff]
    if not any(isinstance(r, sp.Rational) and max(len(str(abs(r.p))), len(str(r.q))) > 3 for r in rats):
        return ""
    return " ≈ " + sp.sstr(sp.N(e, digits)).replace("**", "^")


def _kw(f, names):
    def call(**kw):
        return f(*(kw[k] for k in names))

    return call


def _assumptions(name):
    return {"real": True} if name == "a" else {"positive": True}


def _text(e):
    """A readable closed form: factored, a minus sign moved into the denominator (L/(lam - L))."""
    import sympy as sp

    num, den = sp.fraction(sp.factor(e))
    if num.could_extract_minus_sign() and den != 1:
        num, den = -num, -den

    def show(v):  # sympy's order, unless it leads with a minus sign and the old order does not
        t = sp.sstr(v)
        return (
            sp.sstr(v, order="old")
            if t.startswith("-") and not sp.sstr(v, order="old").startswith("-")
            else t
        )

    n, d = show(num), show(den)
    if den == 1:
        return n.replace("**", "^") + _approx(e)
    n = n if num.is_Atom or num.is_Pow or num.is_Function else f"({n})" if num.is_Add else n
    d = d if den.is_Atom or den.is_Pow else f"({d})"
    return f"{n}/{d}".replace("**", "^") + _approx(e)


def sym_context():
    import sympy as sp

    from moreau.symbolic import quadratic_formulas, symbols

    S = symbols()
    a, lam, alpha, w, b = S["a"], S["lam"], S["alpha"], S["w"], S["b"]
    L, mu, eta = sp.symbols("L mu eta", positive=True)
    s, t, x = sp.symbols("s t x", nonnegative=True)
    return sp, quadratic_formulas(), a, lam, alpha, w, b, L, mu, eta, s, t, x


def all_true(p):
    return np.ones(np.shape(next(iter(p.values()))), bool)
