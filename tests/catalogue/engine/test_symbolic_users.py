"""sympy derivations of a user's statement (``Statement.sharp``) under ``--symbolic`` and ``--analyse``,
written as a new user would (a module file run through ``moreau check --module``): an unprovable case
and a symbolic exponent are reported on their own part, never raised; a long rational constant is
printed as a decimal too."""

import json
import re
import textwrap
from fractions import Fraction

import pytest

from moreau._cli import main

pytest.importorskip("sympy")

MODULE = """
import numpy as np
import sympy as sp
from moreau.analysis.api import Case, Sides, Statement, derive, log_uniform

a = sp.Symbol("a", real=True)
lam, L, k = sp.symbols("lam L k", positive=True)
x = sp.Symbol("x", nonnegative=True)
PARAMS = {"lam": lambda b: b["lam"], "L": lambda b: b["L"]}
CASES = (Case("convex", (0, L), {}, lambda p: np.ones(np.shape(p["lam"]), bool),
              ("lam/L", {lam: x * L}, 0, sp.oo, True, True)),)

def instances(family, trials, rng):
    T = trials or 64
    L_ = log_uniform(rng, 0.5, 5, T)
    return {"a": L_ * rng.uniform(0, 1, T), "L": L_, "lam": log_uniform(rng, 0.1, 10, T)}

def evaluate(batch, claim):
    a_, L_, lam_ = batch["a"], batch["L"], batch["lam"]
    return {
        "scaled": Sides(3.141 * a_ / (lam_ + a_), claim["c"] * np.ones_like(a_), "upper"),
        "power": Sides(a_**1.5, L_**1.5 + lam_, "upper"),
        "shifted": Sides((a_ - lam_) ** 2, (lam_ + L_) ** 2, "upper"),
    }

SHARP = {"scalar": {
    # sup over a in [0, L] of (3141/4000) a/(lam + a): 3141 L/(4000 (L + lam)), proved
    "scaled": lambda: derive(sp.Rational(3141, 4000) * a / (lam + a), a, CASES, PARAMS),
    # a symbolic exponent: sympy cannot take it apart
    "power": lambda: derive(a**k / (L**k + lam), a, CASES, {**PARAMS, "k": lambda b: 1.5 + 0 * b["L"]}),
    # a critical point a = lam whose position in [0, L] is not certified: NOT PROVED
    "shifted": lambda: derive((a - lam) ** 2 / (lam + L) ** 2, a, CASES, PARAMS),
}}

STATEMENTS = (Statement(id="u.sym", source="me", paper="me", latex="", text="three parts",
    assumptions=("a in [0, L]",), families={"scalar": ("1-d quadratics",)}, claimed="upper",
    instances=instances, evaluate=evaluate, claim={"c": 4.0}, sharp=SHARP),)
"""


@pytest.fixture
def module(tmp_path):
    path = tmp_path / "mine_sym.py"
    path.write_text(textwrap.dedent(MODULE))
    return str(path)


def test_symbolic_runs_a_users_derivations_part_by_part(module, capsys):
    assert main(["check", "--module", module, "--symbolic"]) == 1  # two parts NOT PROVED: said, not raised
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "u.sym" in ln and "sharp constant of" in ln]
    assert len(lines) == 3
    by = {ln.split("sharp constant of ")[1].split("'")[1]: ln for ln in lines}
    assert by["scaled"].startswith("proved")
    assert by["power"].startswith("NOT PROVED") and by["shifted"].startswith("NOT PROVED")
    assert "derivation error: " in out  # the symbolic exponent: sympy's reason, on its part
    assert "critical point a = lam: position unknown" in out
    # the long rational constant with its decimal: 3141/4000 = 0.78525 (exact, by fractions)
    (dec,) = set(re.findall(r"3141/4000 ≈ ([0-9.]+)", out))
    assert float(dec) == pytest.approx(float(Fraction(3141, 4000)), abs=1e-4)
    assert "1/1 proved" not in out and "1/3 proved" in out
    assert "pfedme" not in out  # the catalogue's proofs are not about a user's statement


def test_analyse_reports_each_derivation_on_its_part(module, tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["check", "--module", module, "--analyse", "--json", str(path)]) == 0
    (rec,) = json.loads(path.read_text())
    derived = {s["part"]: s["derived"] for a in [rec["analyse"]] for s in a["sharpest"]}
    assert derived["scaled"]["proved"]
    (dec,) = re.findall(r"≈ ([0-9.]+)\*L/\(L \+ lam\)$", derived["scaled"]["formula"])
    assert float(dec) == pytest.approx(float(Fraction(3141, 4000)), abs=1e-4)
    (dec,) = re.findall(r"^3141/4000 ≈ ([0-9.]+) at lam/L = 0", derived["scaled"]["sup_over_parameters"])
    assert float(dec) == pytest.approx(float(Fraction(3141, 4000)), abs=1e-4)
    assert derived["scaled"]["exceeded"] == 0  # no instance above the derived sup
    assert not derived["power"]["proved"] and any("derivation error" in s for s in derived["power"]["steps"])
    assert not derived["shifted"]["proved"]
    assert "NOT PROVED" in capsys.readouterr().out
