"""The ``moreau`` command line: ``moreau info``, ``moreau check``, ``moreau reproduce``, ``moreau audit``."""

from __future__ import annotations

import argparse
import platform
import sys
from importlib import metadata

from ._provenance import DISTRIBUTION

__all__ = ["main"]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def cmd_info(args) -> int:
    from ._backend import get_backend, gpu_status

    print(f"moreau {_version(DISTRIBUTION)}  python {platform.python_version()}  ({platform.platform()})")
    for name in (
        "numpy",
        "scipy",
        "sympy",
        "array-api-compat",
        "array-api-strict",
        "hypothesis",
        "matplotlib",
        "cupy-cuda12x",
        "cupy-cuda13x",
        "cupy",
    ):
        print(f"  {name:18s} {_version(name)}")
    ok, why = gpu_status()
    print(
        "backends found: numpy"
        + (", cupy" if ok else "")
        + (", array-api-strict" if _version("array-api-strict") != "not installed" else "")
    )
    print(f"GPU usable: {'yes' if ok else 'no'} ({why})")
    if ok:  # measured on an H200 (benchmarks/RESULTS.md section 9)
        print(
            "  note: cupy flushes float32 subnormals to zero; float32 error bounds on cupy are not proven below "
            "1.18e-38 (float64 is unaffected)"
        )
    try:
        backend = get_backend()
    except Exception as exc:  # a diagnostic reports a bad setting instead of crashing
        print(f"constructor backend: unusable ({type(exc).__name__}: {exc})")
        return 1
    print(f"constructor backend: {backend}  (MOREAU_BACKEND or moreau.set_backend)")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's usage errors on one line (exit 2), not a usage block before them."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="moreau", description=(__doc__ or "").replace("``", ""))  # no rst markup on a terminal
    p.add_argument("--version", action="version", version=f"moreau {_version(DISTRIBUTION)}")
    p.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an internal error (accepted anywhere on the command line)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, backends found, whether a GPU is usable")
    try:
        from moreau.analysis.engine.cli import add_check_parser
    except ImportError:  # analysis not installed alongside
        pass
    else:
        add_check_parser(sub)
    try:
        from moreau.experiments.cli import add_reproduce_parser
    except ImportError:  # experiments not installed alongside
        pass
    else:
        add_reproduce_parser(sub)
    from .audit._cli import add_audit_parser

    add_audit_parser(sub)
    return p


def main(argv=None) -> int:
    """Run the CLI; returns the exit code.

    Exit codes shared by the subcommands: 0 success, 1 a statement failed (``check``) or the
    implementation departs (``audit``),
    2 a usage error (one line on stderr), 3 an internal error (one line; the traceback
    with ``--debug``, accepted anywhere on the command line), 130 interrupted.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    parser = build_parser()
    args = parser.parse_args([a for a in argv if a != "--debug"])
    args.debug = debug
    try:
        if args.command != "info":
            from ._backend import BackendError, get_backend

            try:
                get_backend()
            except (ValueError, BackendError) as exc:  # a bad MOREAU_BACKEND is a usage error
                print(f"moreau: {exc}", file=sys.stderr)
                return 2
        if args.command == "info":
            return cmd_info(args)
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and closed: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("moreau: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence: one line, code 3
        if debug:
            import traceback

            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(
            f"moreau: internal error: {type(exc).__name__}: {first}"
            + ("" if debug else " (rerun with --debug for the traceback)"),
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
