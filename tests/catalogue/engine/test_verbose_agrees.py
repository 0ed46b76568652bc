"""``-v`` part lines say what the summary says, for a user's statement (a module file run through
``moreau check --module``): the same counterexample instance, a failing part never "attained", the
instances with a negative right side counted alike."""

import re
import textwrap

from moreau._cli import main

MODULE = """
import numpy as np
from moreau.analysis.api import Sides, Statement

def instances(family, trials, rng):
    return {"x": rng.uniform(0.0, 2.0, trials or 32)}

def evaluate(batch, claim):
    x = batch["x"]
    return {"square below": Sides(x**2, claim["c"] * x, "upper"),   # fails for x > 1
            "shifted": Sides(x, x - 1.5, "upper")}                  # right side negative for x < 1.5

STATEMENTS = (Statement(id="u.v", source="me", paper="me", latex="", text="two parts", assumptions=(),
    families={"unit": ("x in [0, 2)",)}, claimed="upper", instances=instances, evaluate=evaluate,
    claim={"c": 1.0}, expect="fails"),)
"""


def test_verbose_part_lines_agree_with_the_summary(tmp_path, capsys):
    path = tmp_path / "mine_v.py"
    path.write_text(textwrap.dedent(MODULE))
    assert main(["check", "--module", str(path), "-v"]) == 0
    out = capsys.readouterr().out
    table, summary = out.split("\n\n", 1)
    (cex,) = re.findall(r"counterexample \[unit #(\d+)\]", summary)
    (v_cex,) = re.findall(r"counterexample \(the summary's\): #(\d+)", table)
    assert v_cex == cex
    (neg,) = re.findall(r"right side negative on (\d+)/(\d+) instances", summary)
    assert f"right side negative on {neg[0]} (left out of max L/R" in table
    part_lines = [ln for ln in table.splitlines() if "<-- FAILS" in ln]
    assert len(part_lines) == 2 and all("exceeded" in ln and "attained" not in ln for ln in part_lines)
    # the header line of the failing record: holds NO, and no 'tight yes' beside a failure
    (head,) = [ln for ln in table.splitlines() if ln.startswith("u.v ")]
    assert head.split()[4:5] == ["NO"] and head.split()[6] == "-"
