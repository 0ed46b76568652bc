"""Provenance for every artifact written by ``experiments/``."""
from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

__all__ = ["provenance", "write_json"]

_PACKAGES = ("moreau", "numpy", "scipy", "sympy", "matplotlib", "array-api-compat")


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True,
                               cwd=Path(__file__).resolve().parent, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(params: dict, seed) -> dict:
    """Parameters, seed, versions, python, machine and git commit of a run."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"params": params, "seed": seed, "versions": versions, "python": platform.python_version(),
            "machine": platform.platform(), "git_commit": _git_commit()}


def write_json(path, payload: dict, params: dict, seed) -> Path:
    """Write ``payload`` with its provenance next to it under key ``provenance``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**payload, "provenance": provenance(params, seed)}, indent=1))
    return path
