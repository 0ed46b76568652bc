"""The replay command printed for a user's counterexample names its ``--module`` (without it the id is
unknown), and runs as printed from another directory.  Written as a new user would: a module file
run through ``moreau check --module``."""

import re
import shlex
import textwrap

from moreau._cli import main

MODULE = """
import numpy as np
from moreau.analysis.api import Sides, Statement

def instances(family, trials, rng):
    return {"x": rng.uniform(0.0, 2.0, trials or 32)}

def evaluate(batch, claim):
    x = batch["x"]
    return {"square below": Sides(x**2, claim["c"] * x, "upper")}   # x^2 <= x fails for x > 1

STATEMENTS = (Statement(id="u.replay", source="me", paper="me", latex="", text="x^2 <= x",
    assumptions=(), families={"unit": ("x in [0, 2)",)}, claimed="upper", instances=instances,
    evaluate=evaluate, claim={"c": 1.0}, expect="fails"),)
"""


def test_the_printed_replay_command_names_the_module_and_runs(tmp_path, monkeypatch, capsys):
    (tmp_path / "mine").mkdir()
    path = tmp_path / "mine" / "replay_statements.py"
    path.write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path / "mine")
    assert (
        main(["check", "--module", "replay_statements.py", "--save-counterexamples", str(tmp_path / "cex")])
        == 0
    )
    out = capsys.readouterr().out
    cmds = re.findall(r"reproduce: (moreau check .*)", out)
    assert cmds
    argv = shlex.split(cmds[0])
    assert argv[2:4] == ["--module", str(path.resolve())]  # absolute: it runs from anywhere
    monkeypatch.chdir(tmp_path)
    assert main(argv[1:]) == 1  # the saved instance fails the printed claim: exit 1, as for any replay
    assert "holds=False" in capsys.readouterr().out
