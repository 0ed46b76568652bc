"""The files of a run written by ``experiments/``: provenance, JSON, CSV and point checkpoints.

Every artifact carries its parameters, seed, package versions and the git commit (see
:mod:`moreau._provenance`); every file is written whole or not at all, with the mode the
umask asks for (:func:`moreau._files.atomic_write`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path

import numpy as np

from moreau._files import atomic_write
from moreau._provenance import provenance

__all__ = [
    "canonical",
    "device",
    "jsonable",
    "provenance",
    "read_checkpoint",
    "write_checkpoint",
    "write_csv",
    "write_json",
]


def canonical(obj) -> str:
    """Canonical JSON (sorted keys, no spaces): the text that fingerprints and seeds hash."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=jsonable)


def jsonable(x):
    """``json.dumps(default=...)`` for numpy scalars and arrays."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def write_json(path, payload: dict, params: dict, seed) -> Path:
    """Write ``payload`` with its provenance next to it under key ``provenance``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        path, json.dumps({**payload, "provenance": provenance(params, seed)}, indent=1, default=jsonable)
    )
    return path


def write_csv(path, rows: list, deviations=()) -> None:
    """``rows`` (dicts) as CSV, columns in order of first appearance, floats exactly (``repr``);
    ``deviations`` (how the run differs from the paper) as ``# `` comment lines before the header
    (:mod:`moreau.experiments._deviations`)."""
    from ._deviations import csv_header

    cols = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    buf = io.StringIO(csv_header(deviations))
    buf.seek(0, io.SEEK_END)
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _fmt(v) for k, v in r.items()})
    atomic_write(path, buf.getvalue())


def _fmt(v):
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return v


def write_checkpoint(path, point: dict, rows: list, fingerprint: str, timing: dict | None = None) -> None:
    """Save the rows of one finished grid point, with the point, the run's fingerprint and (``timing``)
    when, how long and on which worker it was computed."""
    doc = {"fingerprint": fingerprint, "point": point, "rows": rows, **({"timing": timing} if timing else {})}
    atomic_write(path, json.dumps(doc, default=jsonable))


def checkpoint_timing(path) -> dict | None:
    """The ``timing`` a checkpoint recorded (None for an older one or an unreadable file)."""
    try:
        t = json.loads(Path(path).read_text(encoding="utf-8")).get("timing")
    except (OSError, ValueError, AttributeError):
        return None
    return t if isinstance(t, dict) else None


def read_checkpoint(path, point: dict, fingerprint: str):
    """``(rows, None)`` from a good checkpoint, ``(None, None)`` when there is none, and
    ``(None, why)`` when it is damaged: not JSON, no rows, another point, or another run's."""
    path = Path(path)
    if not path.exists():
        return None, None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None, "not valid JSON (a truncated or damaged file)"
    rows = saved.get("rows") if isinstance(saved, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return None, "no list of rows in it"
    if canonical(saved.get("point")) != canonical(point):
        return None, "it holds another grid point"
    if saved.get("fingerprint", fingerprint) != fingerprint:  # older checkpoints carry no fingerprint
        return None, "it belongs to a run with other arguments"
    return rows, None


def device(backend: str) -> str:
    """Where the numbers were computed, for the manifest."""
    if backend == "numpy":
        import platform

        return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    from moreau._backend import gpu_status

    _, why = gpu_status()
    return f"cupy: {why}"
