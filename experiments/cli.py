"""``moreau reproduce``: the papers' figures and the teaching demos, with CSV and a manifest.

Parameters: --print-config shows the mode's defaults as TOML; --config FILE.toml
and --set KEY=VALUE (repeatable, VALUE parsed as JSON, else a string; --set
same.lam=20 for a nested key) change them, --set over the file.

Verdicts: one line per claim, holds / FAILS / UNDECIDED; claims that compare
methods or settings across seeds are decided by t intervals (paired by seed where
both sides share the data), Holm-adjusted over a claim's comparisons.

Exit status: 0 the run completed (claims that fail or are undecided are recorded
in the manifest, not hidden); 2 usage or environment errors (unknown name, a bad
--set/--config key or value, unwritable --out, --trials < 1, a directory holding
another run or in use by a running one, an unreachable --scheduler, a full disk
or another OS error, a worker process killed); 3 an internal error (the traceback with --debug);
128 + the signal number when stopped by SIGINT (130) or SIGTERM (143): the
finished points are saved and the same command resumes.

Without a terminal on stderr (logs, batch jobs) progress is a line every ~10 s, whether or not a
point finished; points are saved (and counted) when they finish, so an interruption loses the
points in progress (in most experiments a point is one seed).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import traceback
from concurrent.futures.process import BrokenProcessPool

from moreau._argtypes import nonnegative_int, positive_int

__all__ = ["add_reproduce_parser", "cmd_reproduce"]


def add_reproduce_parser(sub):
    p = sub.add_parser(
        "reproduce",
        help="reproduce the papers' figures (PNG, PDF, CSV, JSON manifest)",
        description=(__doc__ or "").replace("``", ""),  # the docstring's markup is not for a terminal
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", nargs="?", help="experiment name (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments and demos and exit")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (default: out/NAME); a rerun with the same "
        "arguments resumes from its checkpoints",
    )
    p.add_argument("--quick", action="store_true", help="small sizes: every experiment in seconds (CI)")
    p.add_argument(
        "--trials",
        type=positive_int,
        default=None,
        help="Monte Carlo trials per grid point (experiments that are exact refuse it)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="sets",
        help="set one parameter (repeatable): VALUE as JSON, else a string, e.g. --set rounds=200 "
        "--set lambdas=[0.1,1] --set tuned.lam=20",
    )
    p.add_argument(
        "--config",
        metavar="FILE.toml",
        help="parameters from a TOML file (the keys of --print-config); --set overrides it",
    )
    p.add_argument(
        "--data",
        metavar="FILE",
        help="compare: your federated data set, an .npz of X_0, y_0, X_1, y_1, "
        "... or a .csv with 'client' and 'label' columns (the same as --set data=FILE)",
    )
    p.add_argument(
        "--method",
        action="append",
        default=[],
        metavar="MODULE:FUNCTION",
        dest="methods",
        help="compare, pfedme-synthetic, pfedme-digits, perfedavg-table1: add your algorithm (repeatable): "
        "a function "
        "(objective, *, rounds, rng, **hyperparameters) -> moreau.fl.History, as MODULE:FUNCTION or "
        "path/to/file.py:FUNCTION (hyperparameters there: --set method_args.FUNCTION.KEY=VALUE)",
    )
    p.add_argument(
        "--print-config",
        action="store_true",
        help="print the effective parameters of the chosen mode (--quick or full) as TOML and exit",
    )
    p.add_argument(
        "--seed", type=nonnegative_int, default=0, help="run seed (per-point seeds derive from it; default 0)"
    )
    p.add_argument(
        "--backend", choices=("numpy", "cupy"), default="numpy", help="array backend (default numpy)"
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="local worker processes (default and most: the CPUs this process may use; "
        "1 runs in this process)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the grid points on this Dask scheduler (needs the [dask] extra)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=nonnegative_float,
        default=30.0,
        metavar="SECONDS",
        help="save a seed's state within it at most every SECONDS (default 30; the experiments that "
        "can resume mid-seed: pfedme-synthetic, pfedme-digits, perfedavg-table1); 0 after every round",
    )
    p.set_defaults(func=cmd_reproduce)
    return p


def nonnegative_float(s) -> float:
    """A finite number >= 0 (``--checkpoint-every``)."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0 (got {s!r})") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (got {s})")
    return v


def _fail(msg, code=2) -> int:
    print(f"moreau reproduce: {msg}", file=sys.stderr)
    return code


def cut_words(text: str, width: int) -> str:
    """``text`` if it fits in ``width`` characters, else cut at the last word boundary that leaves room
    for "…" (a word longer than ``width`` is cut inside it), with "…" appended."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    if text[width - 1] != " " and " " in head:
        head = head[: head.rfind(" ")]
    return head.rstrip(" ,;(") + "…"


def cmd_reproduce(args) -> int:
    from .registry import experiments

    table = experiments()
    if args.list:
        print(f"{'name':27s} {'paper / figure':44s} {'quick':>7s} {'full':>7s}  what it shows")
        for name, e in table.items():
            print(
                f"{name:27s} {cut_words(e.paper + ', ' + e.figure, 44):44s} {e.expected[0]:>7s} {e.expected[1]:>7s}  "
                f"{e.summary}"
            )
        return 0
    if not args.name:
        return _fail("name an experiment (moreau reproduce --list shows them)")
    if args.name not in table:
        return _fail(f"unknown experiment {args.name!r}; known: {', '.join(table)}")
    exp = table[args.name]
    from ._config import parse_set, read_toml, resolve, to_toml
    from ._sweep import RunConflict, run
    from ._verdicts import line

    try:
        overrides = (read_toml(args.config) if args.config else []) + parse_set(args.sets)
        overrides += _data_and_methods(exp, args, overrides)
        params, applied = resolve(exp, args.quick, args.trials, overrides)
    except ValueError as exc:
        return _fail(str(exc).splitlines()[0])
    if args.print_config:
        mode = "quick" if args.quick else "full"
        print(
            to_toml(
                params,
                exp.notes,
                [
                    f"moreau reproduce {exp.name}: the parameters of a {mode} run"
                    + (f" (set: {', '.join(applied)})" if applied else " (the defaults)"),
                    f"use with: moreau reproduce {exp.name}{' --quick' * args.quick} --config FILE.toml",
                ],
            ),
            end="",
        )
        return 0

    if args.backend != "numpy":
        from moreau import BackendError, set_backend

        try:
            set_backend(args.backend)
        except BackendError as exc:
            return _fail(f"--backend {args.backend}: {exc}")
    out = args.out or f"out/{args.name}"
    try:
        manifest = run(
            exp,
            out,
            quick=args.quick,
            trials=args.trials,
            seed=args.seed,
            backend=args.backend,
            workers=args.workers,
            scheduler=args.scheduler,
            overrides=overrides,
            state_every=args.checkpoint_every,
        )
    except (RunConflict, ConnectionError, ValueError) as exc:
        return _fail(str(exc).splitlines()[0])
    except OSError as exc:  # the environment (full disk, quota, permissions, I/O error): not a bug
        return _fail(_os_error(exc, out))
    except BrokenProcessPool:
        return _fail(
            f"a worker process was killed (out of memory?); finished points are saved in {out}: "
            "rerun the same command to resume"
        )
    except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM through _sweep.Interrupted
        signum = getattr(exc, "signum", signal.SIGINT)
        return _fail(
            f"stopped by {signal.Signals(signum).name}; finished points are saved in {out}: "
            "rerun the same command to resume",
            128 + signum,
        )
    except Exception as exc:  # an internal error: one line, the traceback with --debug
        if getattr(args, "debug", False):
            traceback.print_exc()
        return _fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", 3)
    print(
        f"{exp.name}: {manifest['points']} points ({manifest['resumed_points']} resumed) in "
        f"{manifest['wall_seconds']:.1f} s on {manifest['executor']}"
    )
    for v in manifest["claims"]:
        print(f"  {line(v)}")
    files = manifest["figures"] + [manifest["csv"], *manifest.get("tables", []), "manifest.json"]
    print(f"wrote {out}/: {', '.join(files)}")
    return 0


def _data_and_methods(exp, args, overrides) -> list:
    """``--data FILE`` as ``--set data=FILE``; each ``--method`` appended to the ``methods`` list
    that the defaults, the file and ``--set`` give (overrides, in order)."""
    from ._config import ConfigError, resolve

    if not args.data and not args.methods:
        return []
    keys = resolve(exp, args.quick, args.trials)[0]
    for flag, key, given in (("--data", "data", args.data), ("--method", "methods", args.methods)):
        if given and key not in keys:
            raise ConfigError(
                f"{flag} applies to experiments with a '{key}' parameter (moreau reproduce compare"
                f"{', pfedme-synthetic, pfedme-digits, perfedavg-table1' if key == 'methods' else ''}), "
                f"not to {exp.name}"
            )
    out = [(f"--data {args.data}", "data", args.data)] if args.data else []
    if args.methods:
        current = resolve(exp, args.quick, args.trials, overrides + out)[0]["methods"]
        out.append((f"--method {' --method '.join(args.methods)}", "methods", current + list(args.methods)))
    return out


def _os_error(exc: OSError, out) -> str:
    """One line: the file, the system's words for the error and its code, and what to do."""
    if exc.errno is None:  # raised with a message of ours (e.g. an unwritable --out)
        return str(exc).splitlines()[0]
    where = exc.filename if exc.filename is not None else f"a file in {out}"
    code = errno.errorcode.get(exc.errno, str(exc.errno))
    return (
        f"{where}: {exc.strerror or os.strerror(exc.errno)} ({code}); finished points are saved in {out}: "
        "fix this and rerun the same command to resume"
    )
