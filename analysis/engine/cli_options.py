"""``moreau check``'s options checked before a run: the argument types (seconds, ratios), the flags
that cannot go together, the paths that cannot be written, and the one-line error (exit 2) that
names the argument, the condition and the value."""

from __future__ import annotations

import argparse
import sys

__all__ = ["DEFAULT_SEARCH_SECONDS", "OPTIMISE_SECONDS"]


#: the default run's short search per (id, family) of a statement expected to hold, in seconds
DEFAULT_SEARCH_SECONDS = 0.03
#: the worst-case search's budget per (id, family) under --analyse / --search (moreau.analysis.engine.optimise)
OPTIMISE_SECONDS = 2.0


def _seconds_arg(text):
    """A number of seconds in [0, 3600]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in [0, 3600] (got {text!r})") from None
    if not 0 <= x <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in [0, 3600] (got {text!r})")
    return x


def _ratio_arg(text):
    """A ratio in (0, 1]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1] (got {text!r})") from None
    if not 0 < x <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1] (got {text!r})")
    return x


def _fail(msg) -> int:
    print(f"moreau check: {msg}", file=sys.stderr)
    return 2


def _users_error(args: argparse.Namespace, exc: Exception) -> int:
    """A user's statements cannot be loaded or run: one line naming the statement (exit 2), the
    traceback of their code first with ``--debug``."""
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exception(exc)
    return _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _writable_file(path) -> str | None:
    """Why ``path`` cannot be written (None if it can), checked before a long run."""
    import os
    from pathlib import Path

    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        return f"{path} is a directory"
    if not parent.is_dir():
        return f"directory {parent} does not exist"
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK):
        return f"{path} is not writable"
    return None


def _writable_dir(path) -> str | None:
    from pathlib import Path

    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe = Path(path) / ".moreau-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return f"{path} is not a writable directory ({exc.strerror or exc})"
    return None


def _conflicts(args):
    """Flags that cannot be combined: ``(flag, given, other flag, given, why)``."""
    replay = args.replay is not None
    return [
        ("--list", args.list, "--describe", args.describe, "--list prints every entry's summary"),
        (
            "--list",
            args.list,
            "statement ids",
            bool(args.ids),
            "--list lists the whole catalogue; use --describe ID for given ids",
        ),
        (
            "--search",
            bool(args.search),
            "--search-seconds",
            args.search_seconds is not None,
            "--search N replaces the timed short search",
        ),
        ("--replay", replay, "--json", args.json is not None, "a replay re-checks one saved instance"),
        ("--replay", replay, "--mutants", args.mutants, "a replay re-checks one saved instance"),
        ("--replay", replay, "--trials", args.trials is not None, "a replay re-checks one saved instance"),
    ]


def _usage_problem(args):
    """A one-line reason why the flags cannot run as given (empty paths, conflicting flags), or None."""
    for flag, value in (
        ("--json", args.json),
        ("--save-counterexamples", args.save_counterexamples),
        ("--save-worst", args.save_worst),
        ("--replay", args.replay),
        ("--scheduler", args.scheduler),
    ):
        if value is not None and not str(value).strip():
            return (
                f"{flag} needs a non-empty {'address' if flag == '--scheduler' else 'path'} (got {value!r})"
            )
    for a, given_a, b, given_b, why in _conflicts(args):
        if given_a and given_b:
            return f"{a} and {b} cannot be used together ({why})"
    for flag, value in (("--optimise-seconds", args.optimise_seconds), ("--save-worst", args.save_worst)):
        if value is not None and not (args.analyse or args.search):
            return (
                f"{flag} needs --analyse or --search (the worst-case search runs under them; got {value!r})"
            )
    return None
