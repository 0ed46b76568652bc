"""The ``moreau`` command line: ``moreau info``, ``moreau check``, ``moreau reproduce``."""
from __future__ import annotations

import argparse
import platform
import sys
from importlib import metadata

__all__ = ["main"]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def cmd_info(args) -> int:
    from ._backend import get_backend, gpu_status

    print(f"moreau {_version('moreau')}  python {platform.python_version()}  ({platform.platform()})")
    for name in ("numpy", "scipy", "sympy", "array-api-compat", "array-api-strict", "hypothesis",
                 "matplotlib", "cupy-cuda12x", "cupy"):
        print(f"  {name:18s} {_version(name)}")
    ok, why = gpu_status()
    print("backends found: numpy" + (", cupy" if ok else "")
          + (", array-api-strict" if _version("array-api-strict") != "not installed" else ""))
    print(f"GPU usable: {'yes' if ok else 'no'} ({why})")
    try:
        backend = get_backend()
    except Exception as exc:  # a diagnostic reports a bad setting instead of crashing
        print(f"constructor backend: unusable ({type(exc).__name__}: {exc})")
        return 1
    print(f"constructor backend: {backend}  (MOREAU_BACKEND or moreau.set_backend)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moreau", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, backends found, whether a GPU is usable")
    try:
        from analysis.cli import add_check_parser
    except ImportError:  # analysis not installed alongside
        add_check_parser = None
    if add_check_parser is not None:
        add_check_parser(sub)
    try:
        from experiments.cli import add_reproduce_parser
    except ImportError:  # experiments not installed alongside
        add_reproduce_parser = None
    if add_reproduce_parser is not None:
        add_reproduce_parser(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            return cmd_info(args)
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and closed: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
