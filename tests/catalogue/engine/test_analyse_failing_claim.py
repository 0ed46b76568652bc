"""``--analyse`` of a user's claim that fails as printed: its conditions are never marked NECESSARY
(the relaxed claim fails anyway), they are "necessity undecidable" with why; the same condition of a
claim that holds is found necessary (so the check can fail).  Written as a new user would: a module
file run through ``moreau check --module``.

Two claims on x in (0, 2) under the condition x >= 1:
* "needs": x <= x^2 (true exactly when x >= 1: the condition is necessary);
* "fails": x^2 <= x / 2 (false for every x > 1/2, condition or not)."""

import json
import textwrap

from moreau._cli import main

MODULE = """
import numpy as np
from moreau.analysis.api import Sides, Statement

def instances(family, trials, rng):
    return {"x": rng.uniform(0.01, 2.0, trials or 64)}

def evaluate(batch, claim):
    x = batch["x"]
    ok = claim["condition"](x)
    return {"bound": Sides(claim["lhs"](x), claim["rhs"](x), "upper", applicable=ok)}

def make(sid, lhs, rhs, expect):
    return Statement(id=sid, source="me", paper="me", latex="", text=sid, assumptions=("x >= 1",),
        families={"scalar": ("x in (0, 2)",)}, claimed="upper", instances=instances, evaluate=evaluate,
        claim={"lhs": lhs, "rhs": rhs, "condition": lambda x: x >= 1}, expect=expect)

STATEMENTS = (
    make("u.needs", lambda x: x, lambda x: x**2, "holds"),
    make("u.fails", lambda x: x**2, lambda x: x / 2, "fails"),
)
"""


def test_conditions_of_a_failing_claim_are_undecidable(tmp_path, capsys):
    path = tmp_path / "mine_cond.py"
    path.write_text(textwrap.dedent(MODULE))
    out = tmp_path / "r.json"
    assert main(["check", "--module", str(path), "--analyse", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    recs = {r["id"]: r["analyse"] for r in json.loads(out.read_text())}
    needs = {c["condition"]: c["verdict"] for c in recs["u.needs"]["conditions"]}
    assert needs["condition"] == "necessary"  # x <= x^2 fails for x < 1: the condition is needed
    fails = recs["u.fails"]["conditions"]
    assert fails and all(c["verdict"] == "necessity undecidable" for c in fails)
    assert all("fails on this batch as it is (part 'bound')" in c["detail"] for c in fails)
    block = text.split("u.fails [scalar]")[1]
    assert "NECESSARY" not in block and "necessity undecidable" in block


MUTANTS = """
import numpy as np
from moreau.analysis.api import Mutant, Sides, Statement

def instances(family, trials, rng):
    return {"x": rng.uniform(0.0, 2.0, trials or 32)}

def evaluate(batch, claim):
    x = batch["x"]
    return {"sq": Sides(x**2, claim["c"] * x, "upper")}

def make(sid, c, expect):
    return Statement(id=sid, source="me", paper="me", latex="", text=sid, assumptions=(),
        families={"unit": ("x in [0, 2)",)}, claimed="upper", instances=instances, evaluate=evaluate,
        claim={"c": c}, mutants=(Mutant("c/2", {"c": c / 2}),), expect=expect)

# x^2 <= 2x holds on [0, 2) and its mutant x^2 <= x is rejected; x^2 <= x fails already, so its
# mutant x^2 <= x/2 "rejected" there shows nothing
STATEMENTS = (make("u.ok", 2.0, "holds"), make("u.bad", 1.0, "fails"))
"""


def test_mutants_of_a_failing_claim_are_not_counted_as_rejected(tmp_path, capsys):
    path = tmp_path / "mine_mut.py"
    path.write_text(textwrap.dedent(MUTANTS))
    assert main(["check", "--module", str(path), "--mutants"]) == 0
    out = capsys.readouterr().out
    assert "mutants: 1/1 rejected, 1 undecidable not counted" in out
    assert "u.bad: c/2  undecidable, not counted: the claim it mutates fails on unit already" in out
