r"""Class worst cases of three common methods, for a user's statement: GD, the proximal point method, Frank–Wolfe.

Each function builds one PEPit problem (Goujaud et al.), solves it with Clarabel through
:func:`moreau.analysis.pep.solve.solve` and returns the worst value over the whole function class
(a float; the dual bound, exact up to the solver's tolerance, relative gap ≤ 1e-6).  A solve
that does not end ``optimal`` raises :class:`moreau.analysis.pep.solve.PEPSolveError` saying why
(the solver's status, the duality gap): e.g. an unbounded worst case (a metric the normalisation
does not control) is never returned as a number.

Normalisations of the starting point (``norm``, its size ``bound``):

* ``"distance"``: ‖x⁰ − x*‖ ≤ R (``bound`` = R);
* ``"function"``: f(x⁰) − f* ≤ Δ (``bound`` = Δ);
* ``"gradient"``: ‖∇f(x⁰)‖ ≤ G (``bound`` = G; a subgradient for the proximal point method is not
  defined at x⁰, so there only the first two).

Metrics (``metric``): ``"function"`` f(xⁿ) − f*, ``"distance"`` ‖xⁿ − x*‖², ``"gradient"``
‖∇f(xⁿ)‖² (for the proximal point method: the squared norm of the subgradient its last step
produces).  x* is a minimiser, f* = f(x*).

References: Drori & Teboulle, Math. Program. 145 (2014) (GD, L R²/(4Nh + 2) for step h/L,
0 < h ≤ 1); Taylor, Hendrickx & Glineur, Math. Program. 161 (2017) and SIAM J. Optim. 27 (2017)
(interpolation; the proximal point method's R²/(4γN)); Jaggi, ICML 2013 (Frank–Wolfe,
2LD²/(t + 2)); Goujaud et al., PEPit, Math. Program. Comput. 16 (2024).
"""

from __future__ import annotations

import numbers

from moreau.analysis.pep.solve import require_pep, solve

__all__ = ["gradient_descent", "proximal_point", "frank_wolfe", "NORMS", "METRICS"]

NORMS = ("distance", "function", "gradient")
METRICS = ("function", "distance", "gradient")


def _real(name, v, *, positive=True, allow_zero=False):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number (got {v!r})")
    if not (v > 0 or (allow_zero and v == 0)) or v != v or v == float("inf"):
        raise ValueError(f"{name} must be a finite number {'>= 0' if allow_zero else '> 0'} (got {v!r})")
    return float(v)


def _count(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int (got {v!r})")
    if v < 1:
        raise ValueError(f"{name} must be >= 1 (got {v!r})")
    return int(v)


def _choice(name, v, allowed):
    if v not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))} (got {v!r})")
    return v


def _start(problem, f, x0, xs, fs, norm, bound, g0=None):
    if norm == "distance":
        problem.set_initial_condition((x0 - xs) ** 2 <= bound**2)
    elif norm == "function":
        problem.set_initial_condition(f(x0) - fs <= bound)
    else:
        problem.set_initial_condition((f.gradient(x0) if g0 is None else g0) ** 2 <= bound**2)


def gradient_descent(
    *,
    L: float,
    gamma: float,
    n: int,
    mu: float = 0.0,
    norm: str = "distance",
    bound: float = 1.0,
    metric: str = "function",
) -> float:
    r"""Worst case of ``metric`` after ``n`` steps of x^{k+1} = x^k − γ∇f(x^k) over L-smooth
    μ-strongly convex f (μ = 0: convex), started under ``norm`` of size ``bound``.

    γ is ``gamma`` (an absolute step: step h/L is ``gamma = h / L``).  Closed form for the default
    (μ = 0, ‖x⁰ − x*‖ ≤ R, f(xⁿ) − f*): L R²/(4nh + 2) for 0 < h = γL ≤ 1 (Drori & Teboulle)."""
    require_pep()
    from PEPit import PEP
    from PEPit.functions import SmoothStronglyConvexFunction

    L, gamma, bound = _real("L", L), _real("gamma", gamma), _real("bound", bound)
    mu = _real("mu", mu, allow_zero=True)
    if not mu < L:
        raise ValueError(f"mu must be < L (got mu={mu!r}, L={L!r})")
    n = _count("n", n)
    _choice("norm", norm, NORMS)
    _choice("metric", metric, METRICS)
    problem = PEP()
    f = problem.declare_function(SmoothStronglyConvexFunction, mu=mu, L=L)
    xs = f.stationary_point()
    fs = f(xs)
    x = x0 = problem.set_initial_point()
    _start(problem, f, x0, xs, fs, norm, bound)
    for _ in range(n):
        x = x - gamma * f.gradient(x)
    problem.set_performance_metric(_metric(f, x, xs, fs, metric))
    return solve(problem).value


def proximal_point(
    *,
    gamma: float,
    n: int,
    mu: float = 0.0,
    norm: str = "distance",
    bound: float = 1.0,
    metric: str = "function",
) -> float:
    r"""Worst case of ``metric`` after ``n`` steps of x^{k+1} = prox_{γf}(x^k) = argmin_x f(x) +
    ‖x − x^k‖²/(2γ) over closed convex f (μ = 0, possibly nonsmooth) or μ-strongly convex f.

    γ is ``gamma``; ``norm`` is ``"distance"`` or ``"function"``.  Closed form for the default
    (convex, ‖x⁰ − x*‖ ≤ R, f(xⁿ) − f*): R²/(4γn) (Taylor, Hendrickx & Glineur)."""
    require_pep()
    from PEPit import PEP
    from PEPit.functions import ConvexFunction, StronglyConvexFunction
    from PEPit.primitive_steps import proximal_step

    gamma, bound = _real("gamma", gamma), _real("bound", bound)
    mu = _real("mu", mu, allow_zero=True)
    n = _count("n", n)
    _choice("norm", norm, NORMS[:2])
    _choice("metric", metric, METRICS)
    problem = PEP()
    f = (
        problem.declare_function(ConvexFunction)
        if mu == 0
        else problem.declare_function(StronglyConvexFunction, mu=mu)
    )
    xs = f.stationary_point()
    fs = f(xs)
    x = x0 = problem.set_initial_point()
    _start(problem, f, x0, xs, fs, norm, bound)
    for _ in range(n):
        x, g, fx = proximal_step(x, f, gamma)
    what = {"function": fx - fs, "distance": (x - xs) ** 2, "gradient": g**2}[metric]
    problem.set_performance_metric(what)
    return solve(problem).value


def frank_wolfe(*, L: float, D: float, n: int) -> float:
    r"""Worst case of f(xⁿ) − f* after ``n`` Frank–Wolfe steps x^{k+1} = (1 − η_k)x^k + η_k s^k,
    η_k = 2/(k + 2), s^k = argmin_{s ∈ C} ⟨∇f(x^k), s⟩, over L-smooth convex f and convex sets C of
    diameter D (``D``), x⁰ ∈ C (no other normalisation: the diameter bounds every distance).

    At most 2LD²/(n + 2) (Jaggi); at n = 1 exactly LD²/2."""
    require_pep()
    from moreau.analysis.pep.classes import frank_wolfe as _fw

    L, D = _real("L", L), _real("D", D)
    n = _count("n", n)
    return _fw(L, D, n)[0]


def _metric(f, x, xs, fs, metric):
    return {"function": f(x) - fs, "distance": (x - xs) ** 2, "gradient": f.gradient(x) ** 2}[metric]
