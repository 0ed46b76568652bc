"""Provenance of a result: package versions, python, machine and git commit (no I/O beyond git)."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

__all__ = ["DISTRIBUTION", "versions", "git_commit", "provenance", "PACKAGES"]

#: the distribution name on the package index ("moreau" there is an unrelated conic solver)
DISTRIBUTION = "moreau-pfl"
PACKAGES = (DISTRIBUTION, "numpy", "scipy", "sympy", "array-api-compat", "matplotlib", "hypothesis")


def versions(packages=PACKAGES) -> dict[str, str | None]:
    """``{distribution: version or None}``."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit() -> str:
    """The commit of the source tree moreau runs from (``+dirty`` with local changes), or
    ``"not a git checkout"``."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=here, timeout=10
        )
        if out.returncode != 0:
            return "not a git checkout"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=here,
            timeout=10,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"


def provenance(params: dict, seed) -> dict:
    """Parameters, seed, versions, python, machine and git commit of a run."""
    return {
        "params": params,
        "seed": seed,
        "versions": versions(),
        "python": platform.python_version(),
        "machine": platform.platform(),
        "git_commit": git_commit(),
    }
