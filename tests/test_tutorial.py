"""docs/tutorial.md runs (its Python blocks, in order), a user's module runs from the CLI and as
an entry point, and a user's statements never enter the project's own catalogue or tests."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from moreau._cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "prox_statements.py"


def test_the_tutorial_runs_and_says_what_it_prints(capsys):
    blocks = re.findall(
        r"```python\n(.*?)```", (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8"), re.S
    )
    assert len(blocks) >= 4
    ns = {}
    for block in blocks:
        exec(compile(block, "docs/tutorial.md", "exec"), ns)  # noqa: S102 - the documented tutorial
    out = capsys.readouterr().out
    assert out.startswith("holds 0.99") and "{'lam + L for lam + mu': True}" in out
    assert "fails [('λ + μ', 'holds')] True" in out
    assert "tutorial.lemma1_draft fails as printed: counterexample [qua" in out
    assert "smallest counterexample found [quadratic]: lhs" in out and "'d 3 -> 2'" in out
    assert "0.071429 0.041667 " in out  # the PEP helpers: 1/14 (Drori & Teboulle) and 1/24 (R²/(4γn))


def test_check_module_runs_a_users_file(capsys):
    assert main(["check", "--module", str(EXAMPLE), "--mutants"]) == 0
    out = capsys.readouterr().out
    assert (
        "mine.prox_displacement " in out
        and "FAILS AS PRINTED" in out
        and "holds under reading 'λ + μ'" in out
    )
    assert "2 printed statements: 1 hold, 1 fail" in out
    assert "not checked (yet)" not in out  # the papers' coverage belongs to catalogue runs


@pytest.mark.parametrize(
    "flags",
    [["--json", "{tmp}/r.json"], ["--search", "5"], ["--analyse"], ["--save-counterexamples", "{tmp}/cex"]],
)
def test_a_users_module_runs_with_every_flag(flags, tmp_path):
    argv = ["check", "--module", str(EXAMPLE)] + [f.format(tmp=tmp_path) for f in flags]
    assert main(argv) == 0


def test_replay_of_a_users_counterexample(tmp_path, capsys):
    assert main(["check", "--module", str(EXAMPLE), "--save-counterexamples", str(tmp_path)]) == 0
    path = next(tmp_path.glob("mine.prox_displacement_L-*.npz"))
    assert main(["check", "--module", str(EXAMPLE), "mine.prox_displacement_L", "--replay", str(path)]) == 1
    assert "holds=False" in capsys.readouterr().out


def test_check_module_by_dotted_name(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    assert main(["check", "--module", "prox_statements"]) == 0
    assert "mine.prox_displacement" in capsys.readouterr().out


def test_entry_point_statements_are_checked(monkeypatch, capsys):
    import importlib.metadata as md

    import moreau.analysis.engine.registry as reg
    from moreau.analysis.engine.registry import load_module

    (first, _) = load_module(str(EXAMPLE))
    module = types.SimpleNamespace(STATEMENTS=(first,))
    ep = types.SimpleNamespace(name="mine", value="mine:statements", load=lambda: module)
    monkeypatch.setattr(md, "entry_points", lambda group=None: [ep] if group == reg.ENTRY_POINT_GROUP else [])
    assert main(["check", "mine.prox_displacement"]) == 0
    assert "mine.prox_displacement" in capsys.readouterr().out


@pytest.mark.parametrize(
    "source, message",
    [
        ("STATEMENTS = ()", "non-empty sequence of Statement"),
        ("X = 1", "defines no STATEMENTS"),
        ("raise RuntimeError('boom')", "cannot load it (RuntimeError: boom)"),
    ],
)
def test_a_bad_module_is_one_line_exit_2(tmp_path, capsys, source, message):
    path = tmp_path / "bad.py"
    path.write_text(source)
    assert main(["check", "--module", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def _user_statement(families, n=5):
    import numpy as np

    from moreau.analysis.api import Sides, Statement

    def instances(family, trials, rng):
        if family not in families:
            raise ValueError(f"unknown family {family!r}")
        return {"x": rng.uniform(0, 1, n)}

    return Statement(
        id="mine.family",
        source="mine",
        paper="mine",
        latex="",
        text="",
        assumptions=("x",),
        families={f: ("mine",) for f in families},
        claimed="upper",
        instances=instances,
        evaluate=lambda b, c: {"x <= 1": Sides(b["x"], np.ones_like(b["x"]), "upper")},
        claim={},
    )


def test_a_family_of_the_users_own_runs(tmp_path, capsys):
    """Families are extensible: a statement's generator may know "gaussian location"."""
    path = tmp_path / "fam.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_tutorial import _user_statement\n"
        "STATEMENTS = (_user_statement(('gaussian location',)),)\n"
    )
    assert main(["check", "--module", str(path)]) == 0
    assert "mine.family" in capsys.readouterr().out


def test_a_statement_that_runs_on_no_instance_is_an_error(tmp_path, capsys):
    path = tmp_path / "empty.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_tutorial import _user_statement\n"
        "STATEMENTS = (_user_statement(('quadratic',), n=0),)\n"
    )
    assert main(["check", "--module", str(path)]) == 2
    assert "drew no instance" in capsys.readouterr().err


def test_a_users_statement_never_enters_the_projects_catalogue():
    from moreau.analysis.engine.registry import catalogue, full_catalogue

    assert not any(sid.startswith("mine.") for sid in catalogue())
    assert "mine.prox_displacement" in full_catalogue([str(EXAMPLE)])
    with pytest.raises(Exception, match="the catalogue's"):
        path = EXAMPLE.parent / "_clash_tmp.py"
        try:
            path.write_text(
                "from moreau.analysis.engine.registry import catalogue\n"
                "STATEMENTS = (catalogue()['fw.convex'],)\n"
            )
            full_catalogue([str(path)])
        finally:
            path.unlink()


def test_a_users_statement_gets_its_class_worst_case_with_pep(tmp_path, capsys):
    """Statement.pep: the user's own PEP builder runs under --pep; the class worst case of the prox
    displacement over L-smooth mu-strongly convex functions is 1/(lam + mu) at the record's parameters
    (the closed form, not the builder's own number), and a statement without one says why."""
    pytest.importorskip("PEPit")
    pytest.importorskip("clarabel")
    import json

    out = tmp_path / "pep.json"
    assert main(["check", "--module", str(EXAMPLE), "--pep", "--json", str(out)]) == 0
    recs = {r["id"]: r for r in json.loads(out.read_text())}
    (row,) = recs["mine.prox_displacement"]["pep"]
    p = row["parameters"]
    assert row["class"] == "L-smooth mu-strongly convex" and row["status"] in (
        "optimal",
        "optimal_inaccurate",
    )
    tol = 1e-5 if row["status"] == "optimal" else 1e-4
    assert row["pep_value"] == pytest.approx(1 / (p["lam"] + p["mu"]), rel=tol)
    assert row["verdict"].startswith("tight over the class")
    (none,) = recs["mine.prox_displacement_L"]["pep"]
    assert none["verdict"] == "not applicable" and "Statement.pep" in none["note"]
