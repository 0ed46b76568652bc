"""The worst-case search over counts (issue 27, item 2): integer parameters searched in log10 and rounded,
with a 1-D line search and declared limits (``Simplify.integers``, ``Simplify.bounds``); the growth law
fitted along a ray where one parameter moves; FedProx Theorem 1 (5) found tight by the search itself."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from moreau.analysis.engine import optimise as O
from moreau.analysis.engine.core import Sides, Statement
from moreau.analysis.engine.shrink import Simplify


def _toy(lhs, rhs, fields, spec=None, integer=()):
    def instances(family, trials, rng):
        n = trials or 8
        return {k: (rng.integers(2, 6, n) if k in integer else rng.uniform(0.3, 3.0, n)) for k in fields}

    def evaluate(batch, claim):
        return {"bound": Sides(lhs(batch), rhs(batch), "upper")}

    return Statement(
        id="toy.counts",
        source="test",
        paper="none",
        latex="",
        text="toy",
        assumptions=(),
        families={"toy": ("uniform",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim={},
        simplify={} if spec is None else {"toy": spec},
    )


def _run(st, seconds=2.0):
    batch = st.instances("toy", 8, np.random.default_rng(0))
    res = st.run("toy", None, None, batch=batch, reading=None)
    (out,) = O.optimise_record(st, "toy", batch, res.parts, seconds)
    return out


def test_a_count_is_searched_up_to_its_declared_limit_and_said_to_sit_there():
    # m/(m + 7) rises with the count m; the search may take m up to 500 (a declared limit, not the family's edge)
    spec = Simplify(scalars=("m", "x"), bounds={"m": (2, 500)})
    st = _toy(
        lambda b: b["m"] / (b["m"] + 7.0) + 0 * b["x"], lambda b: 1 + 0 * b["x"], ("m", "x"), spec, ("m",)
    )
    out = _run(st)
    assert out["parameters"]["m"] == 500
    assert out["best"] == pytest.approx(500 / 507, rel=1e-12)
    assert out["at_limit"] == {"m": 500.0}


def test_a_count_without_declared_limits_never_grows_above_its_start():
    # the same rising ratio, m without limits: the search may lower m but not raise it (its cost is the
    # statement's to declare), so the best is at the largest count the batch itself holds
    spec = Simplify(scalars=("m", "x"))
    st = _toy(
        lambda b: b["m"] / (b["m"] + 7.0) + 0 * b["x"], lambda b: 1 + 0 * b["x"], ("m", "x"), spec, ("m",)
    )
    batch = st.instances("toy", 8, np.random.default_rng(0))
    out = _run(st)
    top = int(np.max(batch["m"]))
    assert out["parameters"]["m"] == top
    assert out["best"] == pytest.approx(top / (top + 7.0), rel=1e-12)
    assert out["at_limit"] == {"m": float(top)}  # said, and not pathed towards larger counts


def test_a_count_inside_its_limits_is_found_by_the_line_search():
    # an interior integer optimum: m e^(-m/37) is largest at m = 37, a plateau for a simplex in log10 m
    spec = Simplify(scalars=("m",), bounds={"m": (1, 10**6)})
    st = _toy(
        lambda b: b["m"] * np.exp(-b["m"] / 37.0),
        lambda b: 37.0 * np.exp(-1.0) + 0 * b["m"],
        ("m",),
        spec,
        ("m",),
    )
    out = _run(st)
    assert out["parameters"]["m"] == 37 and "at_limit" not in out
    assert out["best"] == pytest.approx(1.0, rel=1e-12)


def test_growth_is_fitted_along_one_parameter_with_the_others_fixed():
    # x^0.5 y^0.3: both at the box's edge; the joint path grows like x^0.8, one parameter's ray like x^0.5
    st = _toy(lambda b: b["x"] ** 0.5 * b["y"] ** 0.3, lambda b: 1 + 0 * b["x"], ("x", "y"))
    out = _run(st)
    assert out["status"] == "unbounded"
    path = out["path"]
    assert path["parameter"] == "x" and path["also"] == [] and "alone" in path["ray"]
    assert out["growth"]["slope"] == pytest.approx(0.5, abs=0.01)
    assert out["growth"]["law"].startswith("LHS/RHS ~ x^")
    assert sorted([path["joint"]["parameter"], *path["joint"]["also"]]) == ["x", "y"]


def _fedprox_part5_exact(m, mu, sigma, n, R):
    """FedProx Theorem 1 (5) at d = 1 (A_i = μ, u_i = ±1) in mpmath, from the paper's formulas: the local
    solution w̃_i = (1 − t) ŵ_i + t mean_j ŵ_j, t = λ/(μ + λ), ŵ_i − w⋆_i ~ N(0, s), s = σ²/(nμ):
    E‖w̃_i − w⋆_i‖² = s((1 − t)² + (2t(1 − t) + t²)/m) + t²R² against C3/N + C4 (1/n ∧ R/√n) + 16(ρ²/(μ²n) ∧ R²)."""
    mp = mpmath.mp
    mp.dps = 40
    m, mu, sigma, n, R = (mpmath.mpf(v) for v in (m, mu, sigma, n, R))
    rho = sigma * mpmath.sqrt(mu)
    lam = rho / (mpmath.sqrt(n) * R) if R <= n**-0.5 else rho**2 / (n * R**2)
    t = lam / (mu + lam)
    s = sigma**2 / (n * mu)
    lhs = s * ((1 - t) ** 2 + (2 * t * (1 - t) + t**2) / m) + t**2 * R**2
    C1 = rho**2 / mu**2
    C2 = max(((1 + mpmath.sqrt(1 + 2 * mu)) * rho / (2 * mu)) ** 2, 2 * rho / mu)
    C4 = min((rho * (1 + mpmath.sqrt(1 + 4 * mu * (C2 + 1))) / (2 * mu)) ** 2, 8 * C2 + 2 * rho / mu)
    rhs = 8 * C1 / (m * n) + C4 * min(1 / n, R / mpmath.sqrt(n)) + 16 * min(rho**2 / (mu**2 * n), R**2)
    return float(lhs / rhs)


@pytest.mark.slow
def test_fedprox_thm1_part5_search_from_an_ordinary_configuration_gets_095():
    # the search's own result, from a catalogue configuration (m = 2, d = 1, μ = 1000, σ = 0.1) at the grid
    # point n = 50, R = 1 (ratio ~ 0.2): no recorded worst instance, no knowledge of the tight region
    from moreau.analysis.engine.registry import get

    st = get("fedprox.thm1")
    part = "(5) local, C4 with ∧ (printed), exact"
    start = {
        "family": np.zeros(1, int),
        "m": np.array([2]),
        "d": np.array([1]),
        "mu": np.array([1000.0]),
        "L": np.array([1000.0]),
        "sigma": np.array([0.1]),
        "seed": np.array([0]),
        "mc_trials": np.array([1000]),
        "worst": np.array([1]),
        "n": np.array([50.0]),
        "R": np.array([1.0]),
    }
    out = O.optimise_part(st, "quadratic", part, [start], 4.0)
    assert out["best"] >= 0.95
    p = out["instance"]
    got = _fedprox_part5_exact(*(float(p[k][0]) for k in ("m", "mu", "sigma", "n", "R")))
    assert out["best"] == pytest.approx(got, rel=1e-8)
