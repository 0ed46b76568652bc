"""Regression tests for issue 28 (a newcomer's sweep): bad input is a clear one-line error naming
the argument, the condition and the value; a check that checked nothing never passes; the user's
own code and data are reported as theirs (exit 2, naming the statement), not as internal errors.

Each row: a call, the exception it must raise and a message fragment naming the argument.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import moreau as mo
from moreau import fl
from moreau._cli import main
from moreau.analysis.api import Mutant, Sides, Statement
from moreau.fl import Box
from moreau.testing import check

RNG = np.random.default_rng(28)
X20 = RNG.standard_normal((20, 3))
Y20 = np.where(RNG.standard_normal(20) > 0, 1.0, -1.0)
Q = mo.Quadratic(np.tile(np.eye(2), (3, 1, 1)), RNG.standard_normal((3, 2)))
BOX = Box(-np.ones(2), np.ones(2))


def _row(name, call, exc, match):
    return pytest.param(call, exc, match, id=name)


def _x(family, trials, rng):
    return {"x": rng.uniform(0, 1, 5)}


def _x_le_1(batch, claim):
    return {"x <= 1": Sides(batch["x"], np.ones_like(batch["x"]), "upper")}


def _statement(**changes):
    """A user's statement that holds (x <= 1 on uniform x), with ``changes`` to its fields."""
    fields = dict(
        id="mine.x",
        source="mine",
        paper="mine",
        latex="",
        text="",
        assumptions=("x",),
        families={"quadratic": ("mine",)},
        claimed="upper",
        instances=_x,
        evaluate=_x_le_1,
        claim={"c": 1.0},
    )
    return Statement(**{**fields, **changes})


def _boom(batch, claim):
    raise RuntimeError("boom")


#: a user's statements whose own code or data is wrong: name -> statement (built in the user's module)
USERS = {
    "raising-evaluate": lambda: _statement(evaluate=_boom),
    "sides-claimed-bogus": lambda: _statement(
        evaluate=lambda b, c: {"p": Sides(b["x"], 1.0, claimed="bogus")}
    ),
    "evaluate-returns-tuples": lambda: _statement(evaluate=lambda b, c: {"p": (b["x"], np.ones(5))}),
    "evaluate-returns-a-list": lambda: _statement(evaluate=lambda b, c: [b["x"], np.ones(5)]),
    "evaluate-returns-fewer-rows": lambda: _statement(
        evaluate=lambda b, c: {"p": Sides(b["x"][:3], np.ones(3))}
    ),
    "instances-returns-a-list": lambda: _statement(instances=lambda f, t, r: [1, 2, 3]),
    "nan-in-the-batch": lambda: _statement(instances=lambda f, t, r: {"x": np.array([0.5, np.nan])}),
    "mutant-unknown-claim-key": lambda: _statement(mutants=(Mutant("m", {"nope": 2.0}),)),
}
UNDECIDED = _statement(evaluate=lambda b, c: {"p": Sides(b["x"], np.ones(5), applicable=False)})
NOTHING = _statement(evaluate=lambda b, c: {})
OK = _statement()


CASES = [
    # 1. ragged sizes: an infinite or astronomically large size looped forever, memory growing
    _row(
        "ragged-infinite-size",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([np.inf, 3, 12, 5])),
        ValueError,
        r"sizes must be finite integer sample counts \(got inf at index \(0,\)\)",
    ),
    _row(
        "ragged-nan-size",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([np.nan, 3, 12, 5])),
        ValueError,
        r"sizes must be finite integer sample counts \(got nan at index \(0,\)\)",
    ),
    _row(
        "ragged-size-1e300",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([1e300, 3, 12, 5])),
        ValueError,
        r"sizes must sum to the number of rows of X, at most 2\^53 \(got sizes.sum\(\) = 1e\+300\)",
    ),
    _row(
        "ragged-sizes-sum-overflows-int64",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.full(20, 2**60)),
        ValueError,
        r"sizes must sum to the number of rows of X, at most 2\^53",
    ),
    _row(
        "ragged-sizes-sum-not-rows",
        lambda: mo.ragged(mo.Logistic, X20, Y20, np.array([4, 3, 12, 5])),
        ValueError,
        r"N = sizes.sum\(\) = 24 rows.*got shape \(20, 3\)",
    ),
    # 2. fedfw_optimum: max_iter 0 or negative returned a non-optimal point with iterations -2/-10
    _row(
        "fedfw-optimum-max-iter-0",
        lambda: fl.fedfw_optimum(Q, BOX, max_iter=0),
        ValueError,
        r"max_iter must be >= 1 \(got 0\)",
    ),
    _row(
        "fedfw-optimum-max-iter-negative",
        lambda: fl.fedfw_optimum(Q, BOX, max_iter=-10),
        ValueError,
        r"max_iter must be >= 1 \(got -10\)",
    ),
    _row(
        "fedfw-optimum-max-iter-float",
        lambda: fl.fedfw_optimum(Q, BOX, max_iter=2.5),
        TypeError,
        r"max_iter must be an integer \(got 2.5\)",
    ),
]


CASES += [
    # 6. evaluate returning fewer rows than the batch: a wrong counterexample was printed
    _row(
        "evaluate-returns-fewer-rows",
        lambda: USERS["evaluate-returns-fewer-rows"]().run("quadratic", None, np.random.default_rng(0)),
        ValueError,
        r"mine.x \[quadratic\]: part 'p' has lhs and rhs of length 3 for a batch of 5 instances",
    ),
    _row(
        "evaluate-returns-tuples",
        lambda: USERS["evaluate-returns-tuples"]().run("quadratic", None, np.random.default_rng(0)),
        TypeError,
        r"mine.x \[quadratic\]: evaluate returned tuple for part 'p', not a Sides",
    ),
    _row(
        "evaluate-returns-a-list",
        lambda: USERS["evaluate-returns-a-list"]().run("quadratic", None, np.random.default_rng(0)),
        TypeError,
        r"evaluate must return a dict \{part name: Sides\} \(got list\)",
    ),
    # 7. ids are names, never paths; a statement is checked when it is made
    _row(
        "statement-id-escapes",
        lambda: _statement(id="../../escaped"),
        ValueError,
        r"Statement id must be a name of letters, digits.*\(got '../../escaped'\)",
    ),
    _row(
        "statement-id-slash", lambda: _statement(id="mine/x"), ValueError, r"Statement id .*\(got 'mine/x'\)"
    ),
    _row("statement-id-empty", lambda: _statement(id=""), ValueError, r"Statement id .*\(got ''\)"),
    _row("statement-id-not-a-string", lambda: _statement(id=3), TypeError, r"Statement id must be a string"),
    _row(
        "statement-claimed-bogus",
        lambda: _statement(claimed="bogus"),
        ValueError,
        r"mine.x: claimed must be one of \('upper', 'tight', 'exact', 'rate'\) \(got 'bogus'\)",
    ),
    _row(
        "statement-families-a-string",
        lambda: _statement(families="quadratic"),
        TypeError,
        r"mine.x: families must be a dict \{family name: tuple of instance kinds\} \(got str 'quadratic'\)",
    ),
    _row(
        "statement-mutant-unknown-claim-key",
        USERS["mutant-unknown-claim-key"],
        ValueError,
        r"mine.x: mutant 'm' changes unknown claim entries \['nope'\]; the claim's entries are \['c'\]",
    ),
    # 3-5. moreau.testing.check: a check that decided nothing never passes; its arguments are checked
    _row(
        "check-no-instance-meets-the-assumptions",
        lambda: check(UNDECIDED, search=False),
        AssertionError,
        r"mine.x is undecided as printed \(not a pass\): quadratic: no instance met the assumptions",
    ),
    _row(
        "check-evaluate-returns-nothing",
        lambda: check(NOTHING, search=False),
        AssertionError,
        r"mine.x: nothing was checked on quadratic: evaluate returned no part",
    ),
    _row(
        "check-unknown-family",
        lambda: check(OK, family="banana", search=False),
        ValueError,
        r"family must be 'all' or one of mine.x's families 'quadratic' \(got 'banana'\)",
    ),
    _row(
        "check-unknown-family-default-search",
        lambda: check(OK, family="banana"),
        ValueError,
        r"family must be 'all' or one of mine.x's families",
    ),
    _row(
        "check-unknown-reading",
        lambda: check(OK, reading="nope"),
        ValueError,
        r"reading must be None \(the printed claim\) or one of mine.x's readings \(it has none\) \(got 'nope'\)",
    ),
    _row(
        "check-a-string-not-a-statement",
        lambda: check("mine.x"),
        TypeError,
        r"statement must be a moreau.analysis.api.Statement \(got str 'mine.x'\)",
    ),
    _row(
        "check-seed-negative",
        lambda: check(OK, seed=-1),
        ValueError,
        r"seed must be a whole number >= 0 \(got -1\)",
    ),
    _row(
        "check-trials-0",
        lambda: check(OK, trials=0),
        ValueError,
        r"trials must be None or a whole number.*\(got 0\)",
    ),
    _row("check-trials-negative", lambda: check(OK, trials=-5), ValueError, r"trials must .*\(got -5\)"),
    _row("check-trials-float", lambda: check(OK, trials=2.5), ValueError, r"trials must .*\(got 2.5\)"),
]


@pytest.mark.parametrize("call, exc, match", CASES)
def test_bad_input_is_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match) as info:
        call()
    assert len(str(info.value).splitlines()) == 1


def test_fedfw_optimum_max_iter_1_still_returns_a_point():
    tg = fl.fedfw_optimum(Q, BOX, max_iter=1)
    assert tg.iterations >= 1 and np.all(np.isfinite(tg.gap))


def test_check_passes_a_statement_that_holds():
    check(OK, search=False)
    check(OK)


def test_check_without_hypothesis_skips_saying_why_under_pytest_and_fails_elsewhere(monkeypatch):
    """5. the search asked for cannot run: never a silent pass (the instances are checked first)."""
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # `import hypothesis` raises ImportError
    with pytest.raises(pytest.skip.Exception, match="hypothesis is not installed"):
        check(OK)
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    with pytest.raises(ImportError, match="mine.x: its instances hold, but the hypothesis search"):
        check(OK)
    check(OK, search=False)  # the instances alone: checked, and they hold
    with pytest.raises(AssertionError, match="undecided"):  # a failure is still a failure first
        check(UNDECIDED)


# -- moreau check: the user's own code and data are the user's (exit 2, naming the statement) -------

TESTS = Path(__file__).resolve().parent


def _users_module(tmp_path, name):
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        f"from test_bad_input_issue28 import USERS\nSTATEMENTS = (USERS[{name!r}](),)\n"
    )
    return path


@pytest.mark.parametrize(
    "name, message",
    [
        ("raising-evaluate", "mine.x [quadratic]: running it raised RuntimeError: boom"),
        ("sides-claimed-bogus", "mine.x [quadratic]: running it raised ValueError: claimed must be 'upper'"),
        (
            "evaluate-returns-tuples",
            "mine.x [quadratic]: running it raised TypeError: evaluate returned tuple",
        ),
        (
            "evaluate-returns-a-list",
            "mine.x [quadratic]: running it raised TypeError: evaluate must return a dict",
        ),
        ("evaluate-returns-fewer-rows", "part 'p' has lhs and rhs of length 3 for a batch of 5 instances"),
        ("instances-returns-a-list", "mine.x [quadratic]: its instance generator returned list, not a batch"),
        ("nan-in-the-batch", "mine.x [quadratic]: its instance generator returned NaN in 'x' (instance #1)"),
        ("mutant-unknown-claim-key", "mine.x: mutant 'm' changes unknown claim entries ['nope']"),
    ],
    ids=lambda v: v if "-" in v and " " not in v else "",
)
def test_the_users_code_and_data_are_theirs_exit_2(tmp_path, capsys, name, message):
    path = _users_module(tmp_path, name)
    assert main(["check", "--module", str(path), "--mutants"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "internal error" not in err, err
    assert main(["check", "--module", str(path), "--debug"]) == 2  # the traceback of their code with --debug
    err = capsys.readouterr().err
    assert "Traceback" in err and message.split(": ")[-1][:20] in err.splitlines()[-1]


def test_a_module_that_calls_sys_exit_on_import_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(4)\n")
    assert main(["check", "--module", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"moreau check: --module {path}: cannot load it (it called sys.exit(4) on import)"


def test_an_id_that_is_a_path_is_refused_when_the_module_loads(tmp_path, capsys):
    path = tmp_path / "escapes.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from test_bad_input_issue28 import _statement\nSTATEMENTS = (_statement(id='../../escaped'),)\n"
    )
    assert main(["check", "--module", str(path), "--save-counterexamples", str(tmp_path / "cex")]) == 2
    err = capsys.readouterr().err.strip()
    assert "Statement id must be a name" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.parent.glob("escaped*"))


@pytest.mark.parametrize(
    "sid, family", [("../../escaped", "quadratic"), ("mine.x", "../../up"), ("a", "b/c d")]
)
def test_a_counterexample_file_stays_in_its_directory(tmp_path, sid, family):
    """7, belt and braces: whatever the id and family, the file is a name inside the directory."""
    from moreau.analysis.engine.records import load_counterexample, save_instance

    out = tmp_path / "deep" / "cex"
    path, cmd = save_instance({"x": np.ones(1)}, sid, family, 0, out)
    assert path.parent == out and path.is_file() and list(out.iterdir()) == [path]
    meta, batch = load_counterexample(path)
    assert meta["id"] == sid and meta["family"] == family and batch["x"].shape == (1,)


def test_the_catalogue_ids_are_valid_names():
    from moreau.analysis.engine.core import check_id
    from moreau.analysis.engine.registry import catalogue

    ids = list(catalogue())
    assert "pfedme.thm1b" in ids and "fedfw.sparse" in ids
    assert [check_id(i) for i in ids] == ids


# -- moreau reproduce compare: a user's method and data ------------------------------------------


def _history(w_global):
    return fl.History(w_global=w_global, w_local=None, rounds=3, local_steps=1, grad_evals=0)


def test_a_method_with_nan_models_is_an_error_naming_it_and_the_round():
    """8. NaN models reported accuracies (exit 0, no warning)."""
    from moreau.experiments import _methods

    h = _history(np.zeros((4, 3)))
    h.w_global[2:] = np.nan
    with pytest.raises(
        ValueError,
        match=r"--method my.py:nanm: its History holds non-finite models "
        r"\(NaN or inf\) for nanm from round 2 of 0..3",
    ) as info:
        _methods.models("my.py:nanm", h, 2, 3, 3)
    assert len(str(info.value).splitlines()) == 1
    assert set(_methods.models("my.py:fine", _history(np.zeros((4, 3))), 2, 3, 3)) == {"fine"}


@pytest.mark.reproduce
def test_compare_with_a_nan_method_exits_2(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
    path = tmp_path / "nan_method.py"
    path.write_text(
        "import dataclasses\nimport numpy as np\nfrom moreau import fl\n\n"
        "def nanm(objective, *, rounds, rng):\n"
        "    h = fl.fedavg(objective, eta=0.1, tau=1, rounds=rounds)\n"
        "    w = np.array(h.w_global, dtype=float)\n    w[2:] = np.nan\n"
        "    return dataclasses.replace(h, w_global=w)\n"
    )
    out = tmp_path / "o"
    argv = ["reproduce", "compare", "--quick", "--workers", "1", "--out", str(out)]
    assert main([*argv, "--set", f'methods=["{path}:nanm"]']) == 2
    (err,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("moreau reproduce:")]
    assert "nanm: its History holds non-finite models (NaN or inf) for nanm from round 2" in err


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated"], ids=["zero-bytes", "truncated"])
def test_an_unreadable_npz_is_a_usage_error(tmp_path, content):
    from moreau.experiments import _userdata

    path = tmp_path / "clients.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"--data .*clients.npz: not a readable .npz file \(") as info:
        _userdata.load(path)
    assert len(str(info.value).splitlines()) == 1
    assert (content != b"") or "the file is empty, 0 bytes" in str(info.value)
