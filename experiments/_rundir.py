"""The run directory's bookkeeping for ``moreau reproduce`` (``moreau.experiments._sweep``): claiming
``DIR`` for one set of arguments (``run.json``), the run's log (``run.log``: a line per session and per
point) and its sessions (``sessions.json``: wall seconds and points computed per invocation, so that
the manifest's time covers every resume)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from moreau._files import atomic_write

from ._artifact import canonical

__all__ = ["RunConflict", "_claim_directory", "_log", "_sessions", "_utc", "_writable"]


class RunConflict(RuntimeError):
    """The output directory holds a run with other arguments, or another run is writing into it."""


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _log(out: Path, line: str) -> None:
    """Append one line to the run's log file (``run.log``: the run's sessions and every point's start,
    time and worker; kept over resumes)."""
    path = out / "run.log"
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{_utc()} {line}\n")
    except OSError as exc:  # named, as every output of the run is (a full disk, a file-size limit)
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _sessions(out: Path, wall: float | None = None, computed: int = 0, finished: bool = False) -> list:
    """The run's sessions so far (``sessions.json``: one per invocation, its wall seconds and points
    computed), with this one appended when ``wall`` is given."""
    path = out / "sessions.json"
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
        held = held if isinstance(held, list) else []
    except (OSError, ValueError):
        held = []
    if wall is not None:
        held.append(
            {
                "ended": _utc(),
                "wall_seconds": round(wall, 3),
                "points_computed": computed,
                "finished": finished,
            }
        )
        atomic_write(path, json.dumps(held, indent=1))
    return held


def _writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"  # per process: a run holding out/ may be probing too
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PermissionError(
            f"--out {str(out)!r} is not a writable directory ({exc.strerror or exc})"
        ) from None


def _claim_directory(out: Path, args: dict, fingerprint: str) -> None:
    meta = out / "run.json"
    if meta.exists():
        try:
            held = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise RunConflict(f"{meta} is unreadable: remove it or choose another --out") from None
        if held.get("fingerprint") != fingerprint and _holds_nothing(out):
            _log(out, "a run with other arguments left no finished point here: this run takes the directory")
            (out / "sessions.json").unlink(missing_ok=True)  # that run's sessions are not this run's
        elif held.get("fingerprint") != fingerprint:
            diff = _differences(held.get("arguments", {}), json.loads(canonical(args)))
            raise RunConflict(
                f"{out} holds a run with other arguments (differs in: {', '.join(diff) or '?'}); "
                f"rerun with the same arguments to resume, or choose another --out"
            )
        if held.get("fingerprint") == fingerprint:
            return
    atomic_write(
        meta, json.dumps({"fingerprint": fingerprint, "arguments": json.loads(canonical(args))}, indent=1)
    )


def _holds_nothing(out: Path) -> bool:
    """Whether ``out`` holds no result of a run: no finished point (``points/*.json``) and no
    manifest (a run that failed before its first point left only its bookkeeping: it is not a run)."""
    return not (out / "manifest.json").exists() and not any((out / "points").glob("*.json"))


def _differences(held: dict, now: dict) -> list:
    """The arguments that differ, parameters by name (``params.rounds``)."""
    out = []
    for k in sorted(set(held) | set(now)):
        a, b = held.get(k), now.get(k)
        if k == "params" and isinstance(a, dict) and isinstance(b, dict):
            out += [f"params.{p}" for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)]
        elif a != b:
            out.append(k)
    return out
