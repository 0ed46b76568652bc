r"""The class worst cases, one PEP each: envelope and prox constants, GD, Frank–Wolfe, FedProx rounds.

Every function builds one PEPit problem and returns ``(value, solve)``, ``value`` the worst case
in the statement's own units (a constant, a contraction factor, a gap) and ``solve`` the
:class:`moreau.analysis.pep.solve.Solve` with the solver's status.  Function classes (PEPit names):
``"convex"`` (closed convex, possibly nonsmooth: ``ConvexFunction``), ``"smooth_convex"``
(L-smooth, μ-strongly convex, μ ≥ 0: ``SmoothStronglyConvexFunction``), ``"weakly_convex"``
(L-smooth, curvature in [−L, L]: ``SmoothFunction``), ``"quadratic"`` (½xᵀQx with
μI ⪯ Q ⪯ LI: ``SmoothStronglyConvexQuadraticFunction``).  The prox is PEPit's
``proximal_step(w, f, 1/λ)``: θ = w − ∇f(θ)/λ (the papers' prox_{f/λ}; unique for λ > −μ).

A Lipschitz or smoothness constant c of a map u ↦ v is the worst case of ‖v₁ − v₂‖² under
‖u₁ − u₂‖² ≤ 1 (c is its square root); a strong-convexity constant m of F is 1/(the worst case
of ‖w₁ − w₂‖² under ⟨∇F(w₁) − ∇F(w₂), w₁ − w₂⟩ ≤ 1): both homogeneous, so exact.

References: Taylor, Hendrickx & Glineur, Math. Program. 161 (2017) (interpolation conditions);
Bousselmi, Hendrickx & Glineur, arXiv:2302.08781 (quadratics); Goujaud et al., PEPit (2024).
"""

from __future__ import annotations

import numbers

from moreau.analysis.pep.solve import solve

__all__ = [
    "envelope_smoothness",
    "envelope_strong_convexity",
    "prox_lipschitz",
    "prox_displacement",
    "h_smoothness",
    "h_strong_convexity",
    "gd_strongly_convex",
    "gd_nonconvex",
    "frank_wolfe",
    "fedprox_rounds",
    "CLASSES",
]

CLASSES = ("convex", "smooth_convex", "weakly_convex", "quadratic")


def _positive(**kw):
    for k, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{k} must be a real number (got {v!r})")
        if not v > 0:
            raise ValueError(f"{k} must be a number > 0 (got {v!r})")


def _count(**kw):
    for k, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{k} must be an int (got {v!r})")
        if v < 1:
            raise ValueError(f"{k} must be >= 1 (got {v!r})")


def _declare(problem, cls, L=None, mu=0.0):
    from PEPit import functions as F

    if cls == "convex":
        return problem.declare_function(F.ConvexFunction)
    if cls == "smooth_convex":
        return problem.declare_function(F.SmoothStronglyConvexFunction, mu=mu, L=L)
    if cls == "weakly_convex":
        return problem.declare_function(F.SmoothFunction, L=L)
    if cls == "quadratic":
        return problem.declare_function(F.SmoothStronglyConvexQuadraticFunction, mu=mu, L=L)
    raise ValueError(f"cls must be one of {CLASSES} (got {cls!r})")


def _check_class(cls, lam, L, mu):
    _positive(lam=lam)
    if cls != "convex":
        _positive(L=L)
    if not 0 <= mu <= (L if cls != "convex" else float("inf")):
        raise ValueError(f"mu must be in [0, L] (got mu={mu!r}, L={L!r})")
    if cls == "weakly_convex" and not lam > L:
        raise ValueError(f"the prox of an L-smooth nonconvex f needs lam > L (got lam={lam!r}, L={L!r})")


def _two_proxes(cls, lam, L, mu):
    from PEPit import PEP
    from PEPit.primitive_steps import proximal_step

    _check_class(cls, lam, L, mu)
    problem = PEP()
    f = _declare(problem, cls, L, mu)
    w1, w2 = problem.set_initial_point(), problem.set_initial_point()
    t1, g1, _ = proximal_step(w1, f, 1 / lam)
    t2, g2, _ = proximal_step(w2, f, 1 / lam)
    return problem, (w1, t1, g1), (w2, t2, g2)  # g = grad f(theta) = lam (w - theta) = grad F(w)


def envelope_smoothness(lam, L=None, mu=0.0, cls="smooth_convex"):
    r"""Worst-case smoothness of F(w) = min_θ f(θ) + (λ/2)‖θ − w‖² over the class:
    sup ‖∇F(w₁) − ∇F(w₂)‖ / ‖w₁ − w₂‖ (λ is ``lam``; ``L``, ``mu`` the class's constants)."""
    problem, (w1, _, g1), (w2, _, g2) = _two_proxes(cls, lam, L, mu)
    problem.set_initial_condition((w1 - w2) ** 2 <= 1)
    problem.set_performance_metric((g1 - g2) ** 2)
    s = solve(problem)
    return s.value**0.5, s


def envelope_strong_convexity(lam, mu, L=None, cls="smooth_convex"):
    r"""Worst-case (smallest) strong convexity of F over the class:
    inf ⟨∇F(w₁) − ∇F(w₂), w₁ − w₂⟩/‖w₁ − w₂‖²."""
    _positive(mu=mu)
    problem, (w1, _, g1), (w2, _, g2) = _two_proxes(cls, lam, L, mu)
    problem.set_initial_condition((g1 - g2) * (w1 - w2) <= 1)
    problem.set_performance_metric((w1 - w2) ** 2)
    s = solve(problem)
    return 1 / s.value, s


def prox_lipschitz(lam, mu, L=None, cls="smooth_convex"):
    r"""Worst-case Lipschitz constant of w ↦ prox_{f/λ}(w) over the class."""
    problem, (w1, t1, _), (w2, t2, _) = _two_proxes(cls, lam, L, mu)
    problem.set_initial_condition((w1 - w2) ** 2 <= 1)
    problem.set_performance_metric((t1 - t2) ** 2)
    s = solve(problem)
    return s.value**0.5, s


def prox_displacement(lam, mu, L=None, cls="smooth_convex", accept=("optimal", "optimal_inaccurate")):
    r"""Worst-case ratio ‖prox_{f/λ}(w) − w‖ / ‖∇f(w)‖ over the class (one point w); at small λ and μ/L
    the solve may end 'optimal_inaccurate' (accepted by default: reported with its status)."""
    from PEPit import PEP
    from PEPit.primitive_steps import proximal_step

    _check_class(cls, lam, L, mu)
    problem = PEP()
    f = _declare(problem, cls, L, mu)
    w = problem.set_initial_point()
    theta, _, _ = proximal_step(w, f, 1 / lam)
    problem.set_initial_condition(f.gradient(w) ** 2 <= 1)
    problem.set_performance_metric((theta - w) ** 2)
    s = solve(problem, accept=accept)
    return s.value**0.5, s


def _two_h_gradients(lam, L, mu):
    from PEPit import PEP

    _check_class("smooth_convex", lam, L, mu)
    problem = PEP()
    f = _declare(problem, "smooth_convex", L, mu)
    w = problem.set_initial_point()
    t1, t2 = problem.set_initial_point(), problem.set_initial_point()
    h1, h2 = f.gradient(t1) + lam * (t1 - w), f.gradient(t2) + lam * (t2 - w)  # grad_theta h(theta, w)
    return problem, t1, t2, h1, h2


def h_smoothness(lam, L, mu=0.0):
    r"""Worst-case smoothness in θ of h(θ, w) = f(θ) + (λ/2)‖w − θ‖² over L-smooth μ-strongly convex f."""
    problem, t1, t2, h1, h2 = _two_h_gradients(lam, L, mu)
    problem.set_initial_condition((t1 - t2) ** 2 <= 1)
    problem.set_performance_metric((h1 - h2) ** 2)
    s = solve(problem)
    return s.value**0.5, s


def h_strong_convexity(lam, mu, L):
    r"""Worst-case strong convexity in θ of h(θ, w) over L-smooth μ-strongly convex f."""
    problem, t1, t2, h1, h2 = _two_h_gradients(lam, L, mu)
    problem.set_initial_condition((h1 - h2) * (t1 - t2) <= 1)
    problem.set_performance_metric((t1 - t2) ** 2)
    s = solve(problem)
    return 1 / s.value, s


def gd_strongly_convex(mu, L, eta, t, cls="smooth_convex"):
    r"""Worst case of (F(x^t) − F*)/(F(x^0) − F*) for GD x^{k+1} = x^k − η∇F(x^k) over the class."""
    from PEPit import PEP

    _positive(mu=mu, L=L, eta=eta)
    _count(t=t)
    problem = PEP()
    f = _declare(problem, cls, L, mu)
    xs = f.stationary_point()
    fs = f(xs)
    x = x0 = problem.set_initial_point()
    problem.set_initial_condition(f(x0) - fs <= 1)
    for _ in range(int(t)):
        x = x - eta * f.gradient(x)
    problem.set_performance_metric(f(x) - fs)
    s = solve(problem)
    return s.value, s


def gd_nonconvex(L, eta, T):
    r"""Worst case of (1/T) Σ_{t<T} ‖∇F(x^t)‖² over L-smooth F (nonconvex) with F(x^0) − F(x^T) ≤ 1.

    F(x^T) ≥ F* = inf F, so this bounds the statement's worst case (with F(x^0) − F* ≤ 1) from
    above; the thesis's proof telescopes exactly this quantity.
    """
    from PEPit import PEP

    _positive(L=L, eta=eta)
    _count(T=T)
    problem = PEP()
    f = _declare(problem, "weakly_convex", L)
    x = x0 = problem.set_initial_point()
    total = None
    for _ in range(int(T)):
        g = f.gradient(x)
        total = g**2 if total is None else total + g**2
        x = x - eta * g
    problem.set_initial_condition(f(x0) - f(x) <= 1)
    problem.set_performance_metric(total / T)
    s = solve(problem)
    return s.value, s


def frank_wolfe(L, R, t, cls="smooth_convex", accept=("optimal",)):
    r"""Worst case of F(x^t) − F* for Frank–Wolfe, η_k = 2/(k+2), x^0 ∈ B, B convex of diameter R.

    Returns ``(value, solve, trace)``; ``trace`` holds the PEPit points (x^0, the LMO outputs
    s^k, the iterates x^k, x*, and the function F) so a worst case can be read back.  ``accept``:
    the solver statuses taken (see :func:`moreau.analysis.pep.solve.solve`).
    """
    from PEPit import PEP
    from PEPit.functions import ConvexIndicatorFunction
    from PEPit.primitive_steps import linear_optimization_step

    _positive(L=L, R=R)
    _count(t=t)
    problem = PEP()
    f = _declare(problem, cls, L, 0.0)
    ind = problem.declare_function(ConvexIndicatorFunction, D=R)
    xs = (f + ind).stationary_point()
    fs = f(xs)
    x = x0 = problem.set_initial_point()
    ind(x0)  # x^0 in B
    xs_list, ss = [x0], []
    for k in range(int(t)):
        s_k, _, _ = linear_optimization_step(f.gradient(x), ind)
        ss.append(s_k)
        x = (1 - 2 / (k + 2)) * x + 2 / (k + 2) * s_k
        xs_list.append(x)
    problem.set_performance_metric(f(x) - fs)
    s = solve(problem, accept)
    return s.value, s, {"x": xs_list, "s": ss, "xs": xs, "f": f}


def fedprox_rounds(lam, mu, L, gamma, eta, K, N, m=1, accept=("optimal",)):
    r"""Worst case over m L-smooth μ-strongly convex clients f_1..f_m of N rounds of FedProx Algorithm 1:
    (‖w_N − w̃‖² + Σ_i‖θ_{i,N} − w̃_i‖²) / (‖w_0 − w̃‖² + Σ_i‖θ_{i,0} − w̃_i‖²).

    A round: each client's warm-started local model θ_i takes K gradient steps of size η on
    h_i(θ, w) = f_i(θ) + (λ/2)‖θ − w‖², then w ← w − (γ/m) Σ_i λ(w − θ_i) (p_i = 1/m).  The FedProx
    optimum (w̃, w̃_i) is declared by its optimality conditions: ∇f_i(w̃_i) = λ(w̃ − w̃_i) and
    w̃ = (1/m) Σ_i w̃_i (with m = 1: w̃ = w̃_1 = argmin f_1).  ``accept``: as in :func:`frank_wolfe`.
    """
    from PEPit import PEP, Expression

    _positive(lam=lam, mu=mu, L=L, gamma=gamma, eta=eta)
    _count(K=K, N=N, m=m)
    problem = PEP()
    fs = [_declare(problem, "smooth_convex", L, mu) for _ in range(int(m))]
    wt = problem.set_initial_point()
    opt = [problem.set_initial_point() for _ in range(int(m) - 1)]
    opt.append(m * wt - sum(opt[1:], opt[0]) if m > 1 else wt)
    for f, o in zip(fs, opt, strict=True):
        f.add_point((o, lam * (wt - o), Expression()))
    w = problem.set_initial_point()
    th = [problem.set_initial_point() for _ in fs]
    err = lambda w, th: sum(((t - o) ** 2 for t, o in zip(th, opt, strict=True)), (w - wt) ** 2)  # noqa: E731
    problem.set_initial_condition(err(w, th) <= 1)
    for _ in range(int(N)):
        for _ in range(int(K)):
            th = [t - eta * (f.gradient(t) + lam * (t - w)) for f, t in zip(fs, th, strict=True)]
        w = w - (gamma * lam / m) * sum((w - t for t in th[1:]), w - th[0])
    problem.set_performance_metric(err(w, th))
    s = solve(problem, accept)
    return s.value, s
