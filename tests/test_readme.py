"""The README example runs, says what it claims, and ``moreau info`` works."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from _tol import tol

import moreau._cli as cli

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_example_runs_and_matches_its_comments(capsys):
    blocks = python_blocks()
    assert len(blocks) == 1
    ns = {}
    exec(compile(blocks[0], str(README), "exec"), ns)  # noqa: S102 - the documented example
    assert capsys.readouterr().out.strip()
    m, d = ns["m"], ns["d"]
    assert ns["theta"].shape == (m, d)
    assert ns["sweep"].shape == (50, m, d)  # "(50, m, d): 50 lambdas, one call"
    assert ns["g"].shape == (m, d) and ns["H"].shape == (m, d, d)
    # "certified ||theta - prox||, 15*0.1/15.1"
    np.testing.assert_allclose(ns["F"].strong_convexity()[:3], 15 * 0.1 / 15.1, rtol=tol(np.float64))
    assert ns["info"].error_bound.shape == (m,)


def test_moreau_info_returns_zero(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "GPU usable:" in out and "constructor backend:" in out


def test_readme_counts_match_the_registry():
    """The README's opening counts (statements, mutants) are the registry's, not a stale number."""
    from moreau.analysis.engine.registry import catalogue

    cat = catalogue()
    text = " ".join(README.read_text(encoding="utf-8").split()[:200])
    n_statements = len(cat)
    n_mutants = sum(
        not m.o_equivalent for s in cat.values() for m in s.mutants
    )  # O(.)-equivalent: not counted
    assert f"{n_statements} statements of four papers" in text
    assert f"({n_mutants} in all)" in text
