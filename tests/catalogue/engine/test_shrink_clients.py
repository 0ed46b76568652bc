"""A multi-client counterexample shrinks to fewer clients (``Simplify.clients``), for a statement
written as a new user would (a module file run through ``moreau check --module``).

The (false) claim: the clients' mean squared loss is at most the square of their mean loss,
mean(x_i^2) <= mean(x_i)^2 — Jensen's inequality the wrong way round.  It holds with equality for
one client and fails for any two different clients, so the smallest counterexample has 2 clients
(its sides are recomputed here with exact fractions)."""

import json
import textwrap
from fractions import Fraction

from moreau._cli import main

MODULE = """
import numpy as np
from moreau.analysis.api import Sides, Simplify, Statement

def instances(family, trials, rng):
    T = trials or 32
    x = rng.uniform(0.5, 3.0, (T, 6))           # 6 clients' losses per instance
    return {"x": x, "m": np.full(T, 6.0)}

def evaluate(batch, claim):
    x = batch["x"]
    return {"jensen": Sides(np.mean(x**2, axis=1), np.mean(x, axis=1) ** 2, "upper")}

STATEMENTS = (Statement(id="u.clients", source="me", paper="me", latex="", text="mean of squares <= square of mean",
    assumptions=(), families={"clients": ("6 clients",)}, claimed="upper", instances=instances,
    evaluate=evaluate, claim={}, expect="fails",
    simplify={"clients": Simplify(clients=("x",), derive=lambda inst: {"m": np.array([inst["x"].shape[1]], float)},
                                  valid=lambda inst: np.all(inst["x"] > 0))}),)
"""


def test_a_multi_client_counterexample_drops_clients(tmp_path):
    path = tmp_path / "mine_clients.py"
    path.write_text(textwrap.dedent(MODULE))
    out = tmp_path / "r.json"
    assert main(["check", "--module", str(path), "--json", str(out)]) == 0  # fails, as expected
    (rec,) = json.loads(out.read_text())
    shrunk = rec["shrunk_counterexample"]
    assert "clients 6 -> 2" in shrunk["steps"]
    x = [Fraction(v).limit_denominator(1000) for v in shrunk["instance"]["x"][0]]
    assert len(x) == 2 and shrunk["instance"]["m"] == [2.0]  # the derived field follows the clients
    mean_sq, sq_mean = sum(v * v for v in x) / 2, (sum(x) / 2) ** 2
    assert mean_sq > sq_mean  # still a counterexample, checked with exact rationals
    (part,) = shrunk["parts"]
    assert shrunk["fails"] and not part["holds"]
    assert abs(part["lhs"] - float(mean_sq)) <= 1e-12 and abs(part["rhs"] - float(sq_mean)) <= 1e-12
