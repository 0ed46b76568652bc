"""``moreau reproduce NAME --set KEY=VALUE / --config FILE.toml / --print-config``: every parameter
settable, one-line errors naming the key, the expected type and the value, the configuration in
the manifest and in the run's fingerprint."""

from __future__ import annotations

import csv
import json

import pytest

tomllib = pytest.importorskip("tomllib", reason="--config reads TOML with tomllib (Python >= 3.11)")
pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
import moreau._cli as cli  # noqa: E402
from moreau.experiments._config import read_toml, resolve  # noqa: E402
from moreau.experiments.registry import experiments  # noqa: E402

NAME = "fedprox-fig2"  # quick: 2 points, seconds


def reproduce(*args):
    return cli.main(["reproduce", *map(str, args)])


def print_config(capsys, *args):
    assert reproduce(*args, "--print-config") == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
@pytest.mark.parametrize("name", list(experiments()))
def test_print_config_reads_back_as_the_defaults(tmp_path, capsys, name, quick):
    exp = experiments()[name]
    text = print_config(capsys, name, *(["--quick"] if quick else []))
    path = tmp_path / "c.toml"
    path.write_text(text)
    assert resolve(exp, quick, None, read_toml(path))[0] == exp.config(quick, None)
    shown = tomllib.loads(text)
    assert set(shown) <= set(exp.config(quick, None)) - set(exp.notes)


def test_quick_and_full_defaults_differ_and_null_is_a_comment(capsys):
    quick = tomllib.loads(print_config(capsys, "pfedme-synthetic", "--quick"))
    full_text = print_config(capsys, "pfedme-synthetic")
    assert quick["rounds"] == 10 and tomllib.loads(full_text)["rounds"] == 600
    assert "# max_size = null" in full_text and quick["max_size"] == 100


def test_set_and_config_file_with_set_over_the_file(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("rounds = 7\nKs = [1, 5]\n\n")
    shown = tomllib.loads(
        print_config(capsys, NAME, "--quick", "--config", cfg, "--set", "rounds=5", "--set", "mu=1")
    )
    assert (
        shown["rounds"] == 5
        and shown["Ks"] == [1, 5]
        and shown["mu"] == 1.0
        and isinstance(shown["mu"], float)
    )
    nested = tomllib.loads(
        print_config(
            capsys, "pfedme-synthetic", "--quick", "--set", "tuned.lam=25", "--set", 'same={"beta": 1.5}'
        )
    )
    assert nested["tuned"]["lam"] == 25.0 and nested["same"]["beta"] == 1.5 and nested["same"]["lam"] == 15.0


@pytest.mark.reproduce
def test_a_run_uses_the_configuration_records_it_and_refuses_another(tmp_path, capsys):
    out = tmp_path / "run"
    args = (NAME, "--quick", "--workers", 1, "--out", out)
    assert reproduce(*args, "--set", "rounds=5", "--set", "Ks=[1,5]") == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["configuration"]["set"] == {"rounds": 5, "Ks": [1, 5]} and m["configuration"]["mode"] == "quick"
    assert m["configuration"]["effective"] == m["arguments"]["params"]
    assert m["arguments"]["params"]["rounds"] == 5
    with open(out / f"{NAME}.csv", newline="") as fh:
        rows = list(csv.DictReader(ln for ln in fh if not ln.startswith("#")))
    assert max(int(r["round"]) for r in rows) == 5 and {r["K"] for r in rows} == {"1", "5"}
    capsys.readouterr()
    assert reproduce(*args, "--set", "rounds=6", "--set", "Ks=[1,5]") == 2  # another configuration: refused
    err = capsys.readouterr().err
    assert "other arguments" in err and "params.rounds" in err and len(err.strip().splitlines()) == 1
    assert reproduce(*args, "--set", "Ks=[1,5]", "--set", "rounds=5") == 0  # the same one resumes
    assert json.loads((out / "manifest.json").read_text())["resumed_points"] == 2


def test_parameters_the_experiment_cannot_run_are_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "never"
    assert reproduce(NAME, "--quick", "--out", out, "--set", "lambdas=[0.1]") == 2
    assert "lambdas needs 2 values" in capsys.readouterr().err
    assert not (out / "run.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (("--set", "T=200"), "unknown key 'T' for fedprox-fig2"),
        (("--set", "rounds=abc"), "'rounds' expects an integer >= 1 (got the string 'abc')"),
        (("--set", "rounds=0"), "'rounds' expects an integer >= 1 (got 0)"),
        (("--set", "rounds=2.5"), "'rounds' expects an integer >= 1 (got 2.5)"),
        (("--set", 'lambdas=[0.1,"x"]'), "'lambdas[1]' expects a number (got the string 'x')"),
        (("--set", "lambdas=0.1"), "'lambdas' expects a non-empty list of numbers (got 0.1)"),
        (("--set", "lambdas=[]"), "'lambdas' expects a non-empty list of numbers (got [])"),
        (("--set", "rounds.x=1"), "'rounds' is an integer >= 1, not a table"),
        (("--set", "steps=x"), "'steps' is a note describing the run"),
        (("--set", "rounds"), "expected KEY=VALUE"),
        (("--trials", "3", "--set", "seeds=4"), "--trials 3 already sets seeds"),
        (("--config", "missing.toml"), "--config missing.toml"),
    ],
    ids=[
        "unknown",
        "string-for-int",
        "zero-count",
        "float-for-int",
        "element",
        "scalar-for-list",
        "empty-list",
        "not-a-table",
        "note",
        "no-equals",
        "trials-and-seeds",
        "missing-file",
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert reproduce(NAME, "--quick", "--out", tmp_path / "o", *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ('rounds = "x"\n', "'rounds' expects an integer >= 1 (got the string 'x')"),
        ("[tuned]\nlam = 1\n", "unknown key 'tuned' for fedprox-fig2"),
        ("rounds = \n", "not valid TOML"),
    ],
    ids=["type", "unknown-table", "syntax"],
)
def test_bad_config_file_names_the_file(tmp_path, capsys, text, message):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    assert reproduce(NAME, "--quick", "--config", cfg, "--print-config") == 2
    err = capsys.readouterr().err.strip()
    assert message in err and str(cfg) in err and len(err.splitlines()) == 1


def test_nested_keys_are_checked_too(capsys):
    assert reproduce("pfedme-synthetic", "--quick", "--set", "tuned.gamma=1", "--print-config") == 2
    assert "unknown key 'tuned.gamma' in table 'tuned'" in capsys.readouterr().err
    assert reproduce("pfedme-synthetic", "--quick", "--set", "max_size=null", "--print-config") == 0
    assert "# max_size = null" in capsys.readouterr().out
