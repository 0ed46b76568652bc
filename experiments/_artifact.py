"""Provenance for every artifact written by ``experiments/`` (see :mod:`moreau._provenance`)."""
from __future__ import annotations

import json
from pathlib import Path

from moreau._provenance import provenance

__all__ = ["provenance", "write_json"]


def write_json(path, payload: dict, params: dict, seed) -> Path:
    """Write ``payload`` with its provenance next to it under key ``provenance``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**payload, "provenance": provenance(params, seed)}, indent=1))
    return path
