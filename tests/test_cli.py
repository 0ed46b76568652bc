"""The top-level CLI: exit codes and one-line messages shared by every subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest

import moreau._cli as cli


def test_bad_backend_setting_is_a_usage_error(monkeypatch, capsys, fresh_backend):
    monkeypatch.setenv("MOREAU_BACKEND", "bogus")
    assert cli.main(["check", "pfedme.prop1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "MOREAU_BACKEND" in err and "bogus" in err and len(err.splitlines()) == 1


def _boom(args):
    raise RuntimeError("something deep\nwith a second line")


def test_internal_error_is_one_line_and_exit_3(monkeypatch, capsys):
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser.set_defaults(func=_boom)
    sub = next(a for a in parser._actions if a.dest == "command")
    sub.choices["check"].set_defaults(func=_boom)
    assert cli.main(["check"]) == 3
    err = capsys.readouterr().err.strip()
    assert (
        err == "moreau: internal error: RuntimeError: something deep (rerun with --debug for the traceback)"
    )


def test_debug_anywhere_shows_the_traceback(monkeypatch, capsys):
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    sub = next(a for a in parser._actions if a.dest == "command")
    sub.choices["check"].set_defaults(func=_boom)
    assert cli.main(["check", "--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "something deep" in err


@pytest.mark.parametrize("argv", [["bogus-command"], []])
def test_unknown_or_missing_command_exits_2(argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


# --- moreau check: every usage error is one line and exit 2; the run says what it did not check ---


def _check(*argv):
    return cli.main(["check", *map(str, argv)])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fw.convex", "--family", "logistic"], "nothing to check"),
        (["pfedme.prop1", "--json", "/nonexistent-dir/x.json"], "does not exist"),
        (["pfedme.prop1", "--save-counterexamples", "/proc/forbidden"], "not a writable directory"),
        (["no.such.id"], "unknown id"),
        # regressions: each of these was silently ignored (exit 0), the run going ahead without it
        (["gd.nonconvex", "--json", ""], "--json needs a non-empty path"),
        (["gd.nonconvex", "--save-counterexamples", ""], "--save-counterexamples needs a non-empty path"),
        (["--list", "--describe"], "--list and --describe cannot be used together"),
        (["--list", "gd.nonconvex"], "--list and statement ids cannot be used together"),
        (["gd.nonconvex", "--search", "2", "--search-seconds", "5"], "--search and --search-seconds cannot"),
        (["--replay", "x.npz", "--json", "r.json"], "--replay and --json cannot be used together"),
        (["--replay", "x.npz", "--mutants"], "--replay and --mutants cannot be used together"),
        (["--replay", "x.npz", "--trials", "3"], "--replay and --trials cannot be used together"),
        (["--family", "bogus"], "valid: all, logistic, multinomial, nonconvex, quadratic"),
    ],
    ids=[
        "empty-selection",
        "json-unwritable",
        "save-unwritable",
        "unknown-id",
        "json-empty",
        "save-empty",
        "list-describe",
        "list-ids",
        "search-seconds",
        "replay-json",
        "replay-mutants",
        "replay-trials",
        "family-bogus",
    ],
)
def test_check_usage_errors(capsys, argv, message):
    assert _check(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_check_help_lists_debug_as_the_docs_do(capsys):
    """docs/check.md's `moreau check` usage (the README's until issue 31) ends with [--debug];
    `moreau check --help` listed no --debug."""
    usage = (Path(__file__).resolve().parents[1] / "docs" / "check.md").read_text(encoding="utf-8")
    with pytest.raises(SystemExit):
        cli.main(["check", "--help"])
    assert "[--debug]" in usage and "--debug" in capsys.readouterr().out


def test_replay_of_a_file_that_is_not_a_counterexample_names_it_without_numpys_advice(tmp_path, capsys):
    """Regression: a JSON file passed numpy's 'allow_pickle=' advice through (unsafe, and not how moreau saves)."""
    path = tmp_path / "a.json"
    path.write_text("{}")
    assert _check("--replay", path) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and ".npz" in err and "pickle" not in err


def test_json_run_record_names_the_backend_and_the_modules(tmp_path, capsys):
    """Regression: a GPU run's JSON could not be told from a CPU run's, nor a --module run's from a catalogue run's."""
    import json

    from moreau._backend import get_backend

    example = Path(__file__).resolve().parents[1] / "docs" / "examples" / "prox_statements.py"
    path = tmp_path / "r.json"
    assert _check("--module", example, "--search-seconds", 0, "--json", path) == 0
    run = json.loads(path.read_text())[0]["run"]
    assert run["backend"] == get_backend() == "numpy" and run["modules"] == [str(example)]


@pytest.mark.parametrize("flag", ["--seed=-1", "--seed=x", "--trials=0", "--search=-3"])
def test_check_bad_numbers_are_usage_errors(flag):
    with pytest.raises(SystemExit) as exc:
        _check("pfedme.prop1", flag)
    assert exc.value.code == 2


def _saved(tmp_path):
    """A real counterexample file: the first instance of pfedme.prop1 on quadratics."""
    from moreau.analysis.engine import runner

    rec = runner.run(["pfedme.prop1"], "quadratic")[0]
    path, _ = runner.save_counterexample(rec, 0, tmp_path)
    return path


@pytest.mark.parametrize(
    "damage", ["truncated", "garbage", "meta-not-a-record", "wrong-family", "missing-array"]
)
def test_replay_of_a_damaged_file_is_a_usage_error(tmp_path, capsys, damage):
    import json

    import numpy as np

    path = _saved(tmp_path)
    bad = tmp_path / f"{damage}.npz"
    if damage == "truncated":
        bad.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        bad.write_bytes(b"not a zip file at all")
    else:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = json.loads(str(arrays["__meta__"]))
        if damage == "meta-not-a-record":
            arrays["__meta__"] = np.array(json.dumps([1, 2, 3]))
        elif damage == "wrong-family":
            meta["family"] = "multinomial-nope"
            arrays["__meta__"] = np.array(json.dumps(meta))
        else:
            arrays.pop(next(k for k in arrays if k != "__meta__"))
        np.savez(bad, **arrays)
    assert _check("--replay", bad) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("moreau check:") and len(err.splitlines()) == 1


def test_replay_of_a_good_file_holds(tmp_path, capsys):
    assert _check("--replay", _saved(tmp_path)) == 0
    assert "holds=True" in capsys.readouterr().out


def test_repeated_ids_run_once_and_the_run_lists_what_it_did_not_check(tmp_path, capsys):
    import json

    from moreau.analysis.engine.coverage import known_gaps

    path = tmp_path / "r.json"
    assert _check("pfedme.prop1", "pfedme.prop1", "--family", "quadratic", "--json", path) == 0
    assert len(json.loads(path.read_text())) == 1
    out = capsys.readouterr().out
    gaps = known_gaps()
    assert ("not checked (yet)" in out) == bool(gaps)
    assert all(sid in out for sid, *_ in gaps)


def test_a_part_without_applicable_instances_is_reported_not_tested(capsys):
    # one instance per family: some parts' assumptions (e.g. nonconvex, lam > 2L) are met by none
    assert _check("pfedme.prop1", "--family", "quadratic", "--trials", 1, "-v") == 0
    out = capsys.readouterr().out
    assert "NOT TESTED" in out and "not tested (no instance met their assumptions" in out


def test_describe_prints_the_catalogue_entry(capsys):
    from moreau.analysis.engine.registry import catalogue

    st = catalogue()["fedprox.lemma2"]
    assert _check("fedprox.lemma2", "--describe") == 0
    out = capsys.readouterr().out
    assert f"`{st.id}`" in out and all(m.name in out for m in st.mutants)


def test_mutant_names_are_never_cut(capsys):
    from moreau.analysis.engine.registry import catalogue

    st = catalogue()["fedprox.lemma1"]
    longest = max(st.mutants, key=lambda m: len(m.name))
    assert _check("fedprox.lemma1", "--family", "quadratic", "--mutants", "-v") in (0, 1)
    assert longest.name in capsys.readouterr().out


def test_json_on_a_full_disk_is_exit_2_and_keeps_the_earlier_report(tmp_path, monkeypatch, capsys):
    """Regression (issue 19): --json on a full disk truncated an earlier valid report to 8 KB of invalid JSON."""
    import errno
    import json as _json
    import os

    path = tmp_path / "r.json"
    assert _check("pfedme.prop1", "--family", "quadratic", "--json", path) == 0
    before = path.read_text()
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    assert _check("pfedme.prop1", "--family", "quadratic", "--json", path) == 2
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert "No space left on device" in capsys.readouterr().err
    assert path.read_text() == before and _json.loads(before)
    assert not [p for p in tmp_path.iterdir() if p.name != "r.json"]  # no temporary left behind


def test_trials_beyond_the_limit_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        _check("gd.strongly_convex", "--trials", "99999999999999999999")
    assert exc.value.code == 2 and "must be at most" in capsys.readouterr().err


def test_info_says_the_float32_caveat_where_a_gpu_is_usable(monkeypatch, capsys):
    """Seen on an H200: cupy flushes float32 subnormals; `moreau info` says so when a GPU is usable, not otherwise."""
    import moreau._backend as backend

    monkeypatch.setattr(backend, "gpu_status", lambda: (True, "NVIDIA test device"))
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "GPU usable: yes (NVIDIA test device)" in out and "flushes float32 subnormals" in out
    monkeypatch.setattr(backend, "gpu_status", lambda: (False, "no device"))
    assert cli.main(["info"]) == 0
    assert "flushes float32" not in capsys.readouterr().out


def test_mutants_equivalent_under_O_are_in_no_count(capsys):
    """Regression: `mutants: 241/241 rejected` counted the 4 mutants labelled "not counted", and --describe's
    header counted them too; each count now leaves them out, and the label says they were rejected."""
    import re

    from moreau.analysis.engine.registry import catalogue

    st = catalogue()["pfedme.thm1"]
    o_eq = [m for m in st.mutants if m.o_equivalent]
    counted = len(st.mutants) - len(o_eq)
    assert o_eq and counted
    assert _check("pfedme.thm1", "--family", "quadratic", "--mutants", "--search-seconds", 0) == 0
    out = capsys.readouterr().out
    k, n = map(int, re.search(r"mutants: (\d+)/(\d+) rejected", out).groups())
    assert n == counted and k <= n and f"{len(o_eq)} equivalent under O(.) not counted" in out
    line = next(ln for ln in out.splitlines() if o_eq[0].name in ln)
    assert "rejected by quadratic; equivalent under O(.), not counted" in line
    assert _check("pfedme.thm1", "--describe") == 0
    assert (
        f"**Mutants ({counted}, each must be rejected, and {len(o_eq)} equivalent" in capsys.readouterr().out
    )


def test_long_report_lines_wrap_and_keep_every_parameter_and_qualifier(capsys):
    """Regression: report lines were clipped at 119 columns with "...", cutting a minimal counterexample's
    parameters (pfedme.cor1 printed "... at T=1, R=1, N=1, massive=Tru...") and a Monte Carlo line's
    "interval reaches 1"; they now continue on indented lines, none over 120 columns."""
    from moreau.analysis.engine import report
    from moreau.analysis.engine.registry import catalogue
    from moreau.analysis.engine.verdict import headline

    st = catalogue()["pfedme.cor1"]
    one = st.counterexample("quadratic")
    assert _check("pfedme.cor1", "--search-seconds", 0) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 120 for line in out.splitlines()) and "..." not in out
    text = " ".join(
        line.strip() for line in out.split("minimal counterexample [quadratic]:")[1].splitlines()[:4]
    )
    assert all(f"{k}=" in text or f"{k}:" in text for k in one), (sorted(one), text)
    v = {
        "claim": "a reading whose name is long enough to push the interval clause past the column limit",
        "kind": "reading",
        "verdict": "holds",
        "shape_only": False,
        "max_ratio": 0.9999,
        "attained": True,
        "monte_carlo_max_ratio": 1.0000123,
        "as_expected": True,
        "expected": "holds",
        "families": {},
    }
    sv = {
        "printed": {**v, "claim": "printed", "verdict": "fails", "expected": "fails", "max_ratio": 3.0},
        "readings": [v],
    }
    lines = report._wrap(f"{'':22s}{headline(sv)[1]}").splitlines()
    assert len(lines) > 1 and all(len(line) <= 120 and line.startswith(" " * 22) for line in lines)
    assert "Monte Carlo 1.00001: interval reaches 1" in " ".join(line.strip() for line in lines)


def test_a_monte_carlo_estimate_above_1_never_prints_as_1():
    """Regression: `.4g` printed a point estimate of 1.00001 as "Monte Carlo 1: interval reaches 1"."""
    from moreau.analysis.engine.verdict import _ratio_text

    for mc in (1.00001, 1.0000004, 1.022, 1 + 2e-16):
        text = _ratio_text(
            {"verdict": "holds", "max_ratio": 1.0, "attained": True, "monte_carlo_max_ratio": mc}
        )
        shown = text.split("Monte Carlo ")[1].split(":")[0]
        assert float(shown) > 1, text


def test_trials_a_checker_raises_or_rounds_is_reported_and_recorded(tmp_path, capsys):
    """Regression: --trials below a checker's minimum was silently raised (fedprox.thm1: 30 Monte Carlo draws)
    or rounded (pflmf: a multiple of its groups) while the JSON recorded the number asked for; and
    perfedavg.propf1 / thm4_5 crashed (exit 3) on fewer quadratic instances than their designed ones."""
    import json

    path = tmp_path / "r.json"
    assert (
        _check(
            "pflmf.bm",
            "perfedavg.propf1",
            "--family",
            "quadratic",
            "--trials",
            1,
            "--search-seconds",
            0,
            "--json",
            path,
        )
        == 0
    )
    out = capsys.readouterr().out
    run = json.loads(path.read_text())[0]["run"]
    assert run["trials"] == 1 and run["trials_used"] == {
        "pflmf.bm": {"quadratic": 5},  # its 5 groups (4 ranks, 1 non-proportional)
        "perfedavg.propf1": {"quadratic": 8},
    }
    said = " ".join(out.split())
    assert "--trials 1 is not what every checker uses: pflmf.bm used 5 on quadratic" in said
    assert "perfedavg.propf1 used 8 on quadratic" in said
    assert (
        _check("gd.nonconvex", "--family", "quadratic", "--trials", 3, "--search-seconds", 0, "--json", path)
        == 0
    )
    assert (
        json.loads(path.read_text())[0]["run"]["trials_used"] == {}
        and "not what" not in capsys.readouterr().out
    )


@pytest.mark.parametrize(
    "argv",
    [["check", "--trials", "abc"], ["bogus"], ["reproduce", "--workers", "x"], ["check", "--no-such-flag"]],
)
def test_argparse_usage_errors_are_one_line(argv, capsys):
    """A value argparse rejects is one line on stderr (no usage block before it), exit 2."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "error:" in err and "--help" in err
