"""The top-level CLI: exit codes and one-line messages shared by every subcommand."""
from __future__ import annotations

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
    assert err == "moreau: internal error: RuntimeError: something deep (rerun with --debug for the traceback)"


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
