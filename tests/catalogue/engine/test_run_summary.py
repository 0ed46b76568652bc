"""The closing block of ``moreau check`` (issue 27): what the run did, counted from its records, and what
each step cost, measured where it runs (docs/check.md).  Timings are checked for their keys and signs
only, never compared: no two runs agree on them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from moreau._cli import main
from moreau.analysis.engine import runner
from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement

DOC = Path(__file__).resolve().parents[3] / "docs" / "check.md"
CLI_STEPS = {"analyse", "symbolic", "pep", "report", "total"}


def _toy(sid="toy.sum", c=2.5, expect="fails", minimal=True):
    """x ~ U(0.5, 2), one part 'x <= c', a reading c = 3, a mutant c = 0.1 and (``minimal``) a recorded
    counterexample x = 3 on quadratic."""

    def instances(family, trials, rng):
        return {"x": rng.uniform(0.5, 2.0, trials or 40)}

    def evaluate(batch, claim):
        return {"x <= c": Sides(batch["x"], np.full(batch["x"].shape, claim["c"]), "upper")}

    return Statement(
        id=sid,
        source="toy, Lemma 0",
        paper="toy",
        latex="x <= c",
        text="x <= c",
        assumptions=("x",),
        families={"quadratic": ("toy",), "logistic": ("toy",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim={"c": c},
        mutants=(Mutant("c = 0.1", {"c": 0.1}),),
        readings=(Reading("c = 3", {"c": 3.0}),),
        counterexamples={"quadratic": {"x": np.array([3.0])}} if minimal else {},
        expect=expect,
    )


@pytest.fixture
def toys(monkeypatch):
    from moreau.analysis.engine import registry

    cat = {st.id: st for st in (_toy(), _toy("toy.other", c=4.0, expect="holds", minimal=False))}
    monkeypatch.setattr(runner, "catalogue", lambda: cat)
    monkeypatch.setattr(registry, "catalogue", lambda: cat)
    return cat


def _block(out: str) -> str:
    """The closing block, its wrapped lines joined: from the line starting "ran:" to the end."""
    lines = out.rstrip("\n").splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("ran: "))
    block = lines[start:]
    assert 2 <= len(block) <= 8, block
    assert any(line.startswith("time: ") for line in block)
    return " ".join(line.strip() for line in block)


def _num(text: str, pattern: str) -> int:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in {text!r}"
    return int(m.group(1))


def _check_counts(text: str, data: list) -> None:
    """The block's counts equal the JSON records' (an independent count of the same run)."""
    assert _num(text, r"ran: (\d+) statements? ") == len({d["id"] for d in data})
    assert _num(text, r"= (\d+) records?") == len(data)
    assert _num(text, r"(\d+) instances judged") == sum(d["instances"] for d in data)
    assert _num(text, r"readings judged on the same instances: (\d+)") == sum(
        len(d["readings"]) for d in data
    )
    assert _num(text, r"recorded minimal counterexamples evaluated: (\d+)") == sum(
        "minimal_counterexample" in d for d in data
    )
    assert _num(text, r"recorded worst instances evaluated: (\d+)") == sum(
        "worst_instances" in d for d in data
    )
    short = [s for d in data for s in d.get("search", []) if s.get("short")]
    if short:
        assert _num(text, r"short search: (\d+) batches") == sum(s["examples"] for s in short)
        skipped = sum(bool(s.get("skipped")) for s in short)  # too costly to search: said so
        assert _num(text, r"batches on (\d+) \(id, family\) pairs") == len(short) - skipped
        assert (f"({skipped} too costly to search)" in text) == bool(skipped)


def _check_timings(data: list) -> None:
    for d in data:
        assert set(d["step_seconds"]) == set(runner.STEPS)
        assert all(isinstance(v, float) and v >= 0 for v in d["step_seconds"].values())
    run = data[0]["run"]["step_seconds"]
    assert set(run) == set(runner.STEPS) | CLI_STEPS and all(v >= 0 for v in run.values())


def test_the_block_counts_what_the_run_did(toys, tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["check", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    text, data = _block(out), json.loads(path.read_text())
    assert out.rstrip("\n").splitlines()[-1].strip().endswith(" s")  # the block closes the report
    assert len(data) == 4 and sum("minimal_counterexample" in d for d in data) == 1
    _check_counts(text, data)
    assert "mutants: not run (--mutants)" in text and "analyses: not run (--analyse)" in text
    assert "mutants not run" in text  # the time line names it too, with no number
    for step in ("instances drawn", "printed claims' sides", "readings", "short search", "report", "total"):
        assert re.search(re.escape(step) + r" \d+\.\d s", text), step
    _check_timings(data)
    assert all(d["step_seconds"]["mutants"] == 0.0 for d in data)  # a step not run takes no time


def test_with_mutants_the_block_counts_them(toys, tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["check", "toy.other", "--mutants", "--search-seconds", "0", "--json", str(path)]) == 0
    text, data = _block(capsys.readouterr().out), json.loads(path.read_text())
    _check_counts(text, data)
    assert "search: not run (--search-seconds 0" in text and "search not run" in text
    assert not any(d.get("search") for d in data)
    assert _num(text, r"mutants: (\d+) \(mutant, family\) pairs judged") == sum(
        len(d["mutants"]) for d in data
    )
    assert re.search(r"mutants \d+\.\d s", text)
    _check_timings(data)


def test_a_failing_statement_and_the_real_catalogue(tmp_path, capsys):
    """Two catalogue statements: one failing as printed (its recorded minimal counterexample and
    reading), one expected to hold (the short search)."""
    path = tmp_path / "r.json"
    assert main(["check", "fw.convex", "gd.strongly_convex", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    text, data = _block(out), json.loads(path.read_text())
    assert "every verdict as the catalogue expects" in out
    _check_counts(text, data)
    assert any("minimal_counterexample" in d for d in data) and any(d.get("search") for d in data)
    _check_timings(data)


def test_record_timings_have_every_step(toys):
    recs = runner.run(["toy.sum"])
    assert [r.result.family for r in recs] == ["quadratic", "logistic"]
    for rec in recs:
        assert set(rec.timings) == set(runner.STEPS) and min(rec.timings.values()) >= 0
        assert rec.timings["mutants"] == 0.0 and rec.timings["shrink"] == 0.0  # not run: none asked
    assert recs[1].timings["minimal"] == 0.0  # no recorded counterexample on logistic


def test_every_step_is_described_in_docs():
    doc = DOC.read_text(encoding="utf-8")
    assert "## What a run does" in doc
    for step in (*runner.STEPS, *CLI_STEPS):
        assert f"`{step}`" in doc, step


def test_a_search_too_costly_is_counted_apart(monkeypatch, tmp_path, capsys):
    """A statement whose one instance costs more than the short search's seconds is not searched (the
    search says so): the block counts the pairs searched and those skipped, as the short search line does."""
    import dataclasses
    import time

    from moreau.analysis.engine import registry

    st = _toy("toy.slow", c=4.0, expect="holds", minimal=False)
    slow = dataclasses.replace(
        st, evaluate=lambda batch, claim: (time.sleep(0.002 * len(batch["x"])), st.evaluate(batch, claim))[1]
    )
    monkeypatch.setattr(runner, "catalogue", lambda: {slow.id: slow})
    monkeypatch.setattr(registry, "catalogue", lambda: {slow.id: slow})
    path = tmp_path / "r.json"
    assert main(["check", "toy.slow", "--trials", "5", "--search-seconds", "0.001", "--json", str(path)]) == 0
    text, data = _block(capsys.readouterr().out), json.loads(path.read_text())
    assert all(s["skipped"] for d in data for s in d["search"])  # each instance sleeps 0.002 s > 0.001 s
    _check_counts(text, data)
    assert "short search: 0 batches on 0 (id, family) pairs (2 too costly to search)" in text
