"""``--pep`` for a user's statements, written as a new user would (a module file run through
``moreau check --module``), and the public PEP helpers against the literature's closed forms.

Closed forms (the literature's, computed here with exact fractions): gradient descent with step
h/L, 0 < h <= 1, on L-smooth convex f from ||x0 - x*|| <= R: f(x_N) - f* <= L R^2/(4Nh + 2), tight
(Drori & Teboulle, Math. Program. 145 (2014), Thm 3.1 and the matching lower bound); on L-smooth
mu-strongly convex f: ||x_N - x*||^2 <= max(|1 - h mu/L|, |1 - h|)^(2N) R^2, attained by a quadratic;
the proximal point method with step gamma on convex f: f(x_N) - f* <= R^2/(4 gamma N), tight (Taylor,
Hendrickx & Glineur, Math. Program. 161 (2017), Thm 4.1); Frank-Wolfe, step 2/(k+2), on a convex
set of diameter D: f(x_t) - f* <= 2 L D^2/(t + 2) (Jaggi, ICML 2013), exactly L D^2/2 at t = 1.
"""

import json
import re
import textwrap
from fractions import Fraction

import pytest

from moreau._cli import main

RTOL = 1e-6  # the solves stop at a relative duality gap of ~1e-8 (Clarabel defaults)


def _pep():
    for m in ("PEPit", "cvxpy", "clarabel"):
        pytest.importorskip(m, reason="needs the pep extra (pip install -e '.[pep]')")
    from moreau.analysis import api

    return api


# a user's module: 1-d quadratics f(x) = a x^2/2 in a family named "scalar" (not "quadratic"); the part
# is the envelope's smoothness lam a/(lam + a) <= lam L/(lam + L) (Moreau envelope of an L-smooth convex f)
HEAD = """
import numpy as np
from moreau.analysis.api import (
    Sides, Statement, log_uniform, pep_classes, pep_gradient_descent, pep_parts, pep_row, pep_worst,
)

def instances(family, trials, rng):
    if family != "scalar":
        raise ValueError(f"unknown family {family!r}")
    T = trials or 32
    L = log_uniform(rng, 0.5, 5, T)
    return {"a": L * rng.uniform(0, 1, T), "L": L, "lam": log_uniform(rng, 0.1, 10, T)}

def evaluate(batch, claim):
    a, L, lam = batch["a"], batch["L"], batch["lam"]
    return {"envelope smoothness": Sides(lam * a / (lam + a), claim["c"](lam, L), "upper")}

def good(st, batch, seed=0):
    i, ratio = pep_worst(pep_parts(st, batch)["envelope smoothness"])
    lam, L = batch["lam"][i], batch["L"][i]
    return [pep_row("envelope smoothness", "L-smooth convex", dict(lam=lam, L=L),
                    pep_classes.envelope_smoothness(lam, L), st.claim["c"](lam, L), "upper", ratio)]

def make(sid, pep, c=lambda lam, L: lam * L / (lam + L)):
    return Statement(id=sid, source="me", paper="me", latex="", text="envelope smoothness",
        assumptions=("f convex, L-smooth",), families={"scalar": ("1-d quadratics",)}, claimed="upper",
        instances=instances, evaluate=evaluate, claim={"c": c}, pep=pep)
"""


def _module(tmp_path, body):
    path = tmp_path / "mine.py"
    path.write_text(HEAD + textwrap.dedent(body))
    return str(path)


def _run(tmp_path, path, capsys):
    out_json = tmp_path / "r.json"
    code = main(["check", "--module", path, "--pep", "--json", str(out_json)])
    recs = {r["id"]: r["pep"] for r in json.loads(out_json.read_text())}
    return code, capsys.readouterr().out, recs


@pytest.mark.pep
def test_a_bad_builder_and_a_failed_solve_are_reported_and_the_other_rows_stay(tmp_path, capsys):
    _pep()
    path = _module(
        tmp_path,
        """
        def bad(st, batch, seed=0):
            raise ZeroDivisionError("my builder divided by zero")

        def two_rows(st, batch, seed=0):
            rows = good(st, batch)
            # a second row whose solve fails: the function-value start cannot bound the distance (unbounded)
            rows.append(pep_row("GD distance", "L-smooth convex", dict(L=1.0),
                lambda: pep_gradient_descent(L=1, gamma=1, n=2, norm="function", metric="distance"),
                1.0, "upper", None))
            return rows

        STATEMENTS = (make("u.bad", bad), make("u.two", two_rows), make("u.good", good))
        """,
    )
    code, out, recs = _run(tmp_path, path, capsys)
    assert code == 1  # a required PEP failed: reported, not an internal error (3)
    (bad,) = recs["u.bad"]
    assert bad["status"] == (
        "failed: the PEP builder of u.bad raised (ZeroDivisionError: my builder divided by zero)"
    )
    assert "the PEP builder of u.bad raised (ZeroDivisionError" in out
    ok, failed = recs["u.two"]
    assert ok["status"] == "optimal" and ok["pep_ratio"] == pytest.approx(1.0, rel=1e-5)
    assert failed["part"] == "GD distance" and failed["pep_value"] is None
    assert re.search(r"status '(unbounded|infeasible)", failed["status"])
    assert "GD distance" in out and "u.two" in out
    (g,) = recs["u.good"]
    assert g["status"] == "optimal" and g["pep_ratio"] == pytest.approx(1.0, rel=1e-5)


class _FakeWrapper:
    def __init__(self, status, primal):
        self.prob = type("P", (), {"status": status})()
        self.solver_name = "CLARABEL"
        self.objective = type("O", (), {"value": primal})()


class _FakeProblem:
    """What ``solve`` reads of a PEPit problem: a solve whose primal and dual values disagree."""

    def __init__(self, status, primal, dual):
        self.wrapper, self._dual = _FakeWrapper(status, primal), dual

    def solve(self, **kw):
        return self._dual


@pytest.mark.pep
def test_an_inaccurate_solve_marks_its_row_only(tmp_path, capsys):
    _pep()
    from moreau.analysis.pep.solve import PEPSolveError, Solve, solve

    with pytest.raises(PEPSolveError, match=r"^inaccurate: duality gap 0\.01 relative"):
        solve(_FakeProblem("optimal", 0.99, 1.0))
    with pytest.raises(PEPSolveError, match=r"^inaccurate: .*status 'optimal_inaccurate'"):
        solve(_FakeProblem("optimal_inaccurate", 1.0, 1.0))
    assert Solve  # the pair a user's row may carry
    path = _module(
        tmp_path,
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from moreau.analysis.pep.solve import Solve, solve
        from fake_problem import FakeProblem

        def rows(st, batch, seed=0):
            out = good(st, batch)
            out.append(pep_row("gap too large", "c", dict(L=1.0),
                lambda: (lambda s: (s.value, s))(solve(FakeProblem("optimal", 0.99, 1.0))), 1.0, "upper", None))
            # accepted as optimal_inaccurate by its builder: the value is kept, its verdict marked
            out.append(pep_row("accepted inaccurate", "c", dict(L=1.0),
                (0.5, Solve(0.5, 0.50001, "optimal_inaccurate", "CLARABEL", None)), 1.0, "upper", None))
            return out

        STATEMENTS = (make("u.rows", rows),)
        """,
    )
    src = textwrap.dedent(
        """
        class _W:
            def __init__(self, status, primal):
                self.prob = type("P", (), {"status": status})()
                self.solver_name = "CLARABEL"
                self.objective = type("O", (), {"value": primal})()

        class FakeProblem:
            def __init__(self, status, primal, dual):
                self.wrapper, self._dual = _W(status, primal), dual

            def solve(self, **kw):
                return self._dual
        """
    )
    (tmp_path / "fake_problem.py").write_text(src)
    code, out, recs = _run(tmp_path, path, capsys)
    good_row, gap, inacc = recs["u.rows"]
    assert good_row["status"] == "optimal" and good_row["pep_ratio"] == pytest.approx(1.0, rel=1e-5)
    assert (
        gap["status"].startswith("failed: inaccurate: duality gap 0.01 relative") and gap["pep_value"] is None
    )
    assert (
        inacc["pep_value"] == 0.5
        and "[inaccurate: solver status optimal_inaccurate, duality gap 2e-05" in (inacc["verdict"])
    )
    assert code == 1 and "gap too large" in out


@pytest.mark.pep
def test_pep_uses_the_declared_family_and_a_negative_bound_says_nothing(tmp_path, capsys):
    _pep()
    path = _module(
        tmp_path,
        """
        def shifted(st, batch, seed=0):
            # the paper's bound at the worst instance with a positive right side, and at a fixed point
            # where the (shifted) bound is negative: no ratio there
            i, ratio = pep_worst(pep_parts(st, batch)["envelope smoothness"])
            lam, L = batch["lam"][i], batch["L"][i]
            return [
                pep_row("envelope smoothness", "L-smooth convex", dict(lam=lam, L=L),
                        pep_classes.envelope_smoothness(lam, L), st.claim["c"](lam, L), "upper", ratio),
                pep_row("envelope smoothness", "L-smooth convex", dict(lam=0.05, L=0.5),
                        pep_classes.envelope_smoothness(0.05, 0.5), st.claim["c"](0.05, 0.5), "upper", None),
            ]

        # the bound minus 0.05: negative where lam L/(lam + L) < 0.05 (small lam), positive elsewhere
        STATEMENTS = (make("u.good", good), make("u.shift", shifted, c=lambda lam, L: lam * L / (lam + L) - 0.05))
        """,
    )
    code, out, recs = _run(tmp_path, path, capsys)
    (g,) = recs["u.good"]
    assert g["status"] == "optimal" and g["pep_ratio"] == pytest.approx(1.0, rel=1e-5)
    pos, neg = recs["u.shift"]
    lam, L = pos["parameters"]["lam"], pos["parameters"]["L"]
    bound = lam * L / (lam + L) - 0.05
    assert bound > 0  # the worst instance is taken among those whose bound is positive, as the headline's
    assert pos["pep_ratio"] == pytest.approx(lam * L / (lam + L) / bound, rel=1e-5)
    assert pos["verdict"].startswith("fails over the class")
    assert neg["pep_ratio"] is None and neg["paper_constant"] == pytest.approx(0.05 * 0.5 / 0.55 - 0.05)
    assert neg["verdict"].startswith("no ratio at these parameters: the paper's bound is -0.")
    assert "says nothing" in neg["verdict"]
    assert code == 1  # the shifted bound fails over the class (and on the instances)


# -- the public helpers against closed forms -----------------------------------------------------
@pytest.mark.pep
@pytest.mark.parametrize("h, n, L, R", [(1, 3, 1, 1), (0.5, 3, 1, 1), (0.25, 2, 2, 3), (1, 5, 4, 0.5)])
def test_gradient_descent_matches_drori_teboulle(h, n, L, R):
    api = _pep()
    exact = Fraction(L) * Fraction(R) ** 2 / (4 * n * Fraction(h) + 2)
    value = api.pep_gradient_descent(L=L, mu=0, gamma=h / L, n=n, norm="distance", bound=R)
    assert value == pytest.approx(float(exact), rel=RTOL)


@pytest.mark.pep
@pytest.mark.parametrize("mu, L, gamma, n", [(0.1, 1.0, 1.5, 3), (0.5, 2.0, 0.3, 2)])
def test_gradient_descent_strongly_convex_distance(mu, L, gamma, n):
    api = _pep()
    rho = max(abs(1 - Fraction(gamma) * Fraction(mu)), abs(1 - Fraction(gamma) * Fraction(L)))
    value = api.pep_gradient_descent(L=L, mu=mu, gamma=gamma, n=n, metric="distance")
    assert value == pytest.approx(float(rho ** (2 * n)), rel=RTOL)


@pytest.mark.pep
@pytest.mark.parametrize("gamma, n, R", [(1.0, 1, 1.0), (2.0, 3, 1.0), (0.5, 4, 2.0)])
def test_proximal_point_matches_r2_over_4_gamma_n(gamma, n, R):
    api = _pep()
    exact = Fraction(R) ** 2 / (4 * Fraction(gamma) * n)
    assert api.pep_proximal_point(gamma=gamma, n=n, bound=R) == pytest.approx(float(exact), rel=RTOL)


@pytest.mark.pep
@pytest.mark.parametrize("t", [1, 2, 3, 5])
def test_frank_wolfe_below_jaggi(t):
    api = _pep()
    L, D = 2.0, 1.5
    value = api.pep_frank_wolfe(L=L, D=D, n=t)
    assert value <= 2 * L * D**2 / (t + 2) * (1 + RTOL)
    if t == 1:
        assert value == pytest.approx(L * D**2 / 2, rel=RTOL)
    else:
        assert value < 2 * L * D**2 / (t + 2) * 0.9  # the bound is loose for t >= 2 (a check that can fail)


@pytest.mark.pep
def test_a_metric_the_start_does_not_bound_says_why():
    api = _pep()
    from moreau.analysis.pep.solve import PEPSolveError

    with pytest.raises(PEPSolveError, match=r"status '(unbounded|infeasible)"):
        api.pep_gradient_descent(L=1, gamma=1, n=2, norm="function", metric="distance")


@pytest.mark.parametrize(
    "fn, kw, err, match",
    [
        (
            "pep_gradient_descent",
            dict(L=0, gamma=1, n=1),
            ValueError,
            r"L must be a finite number > 0 \(got 0\)",
        ),
        ("pep_gradient_descent", dict(L=1, mu=1, gamma=1, n=1), ValueError, r"mu must be < L \(got mu=1"),
        ("pep_gradient_descent", dict(L=1, gamma=1, n=2.0), TypeError, r"n must be an int \(got 2\.0\)"),
        ("pep_gradient_descent", dict(L=1, gamma=1, n=1, norm="dist"), ValueError, r"norm must be one of"),
        ("pep_gradient_descent", dict(L=1, gamma=1, n=1, metric="x"), ValueError, r"metric must be one of"),
        ("pep_proximal_point", dict(gamma=-1, n=1), ValueError, r"gamma must be a finite number > 0"),
        ("pep_proximal_point", dict(gamma=1, n=1, norm="gradient"), ValueError, r"norm must be one of"),
        ("pep_frank_wolfe", dict(L=1, D="1", n=1), TypeError, r"D must be a real number \(got '1'\)"),
        ("pep_frank_wolfe", dict(L=1, D=1, n=0), ValueError, r"n must be >= 1 \(got 0\)"),
    ],
    ids=[
        "L zero",
        "mu = L",
        "n float",
        "bad norm",
        "bad metric",
        "gamma < 0",
        "prox gradient",
        "D str",
        "n 0",
    ],
)
def test_helper_arguments(fn, kw, err, match):
    api = _pep()
    with pytest.raises(err, match=match):
        getattr(api, fn)(**kw)
