r"""Properties an instance may have beyond a statement's printed hypotheses (issue 27).

Interface (shared by the shared-property report and the condition search):

* :data:`PROPERTIES` — ``{name: Property}``, the library;
* :func:`instance_properties` ``(statement, family, batch) -> {name: bool array}`` — each
  property that can be computed on this batch, one boolean per instance, computed from the
  instances' own numbers (never from flags the generator sets).

This module is a stub being filled in; the names above are the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Property", "PROPERTIES", "instance_properties"]


@dataclass(frozen=True)
class Property:
    """``compute(batch) -> bool array`` (one per instance) or None where it cannot be computed on
    that batch (the fields it needs are absent)."""

    name: str
    compute: Callable
    why: str = ""


PROPERTIES: dict[str, Property] = {}


def instance_properties(statement, family: str, batch: dict) -> dict[str, np.ndarray]:
    """Every property of :data:`PROPERTIES` computable on ``batch``: ``{name: bool array}``."""
    out = {}
    for name, prop in PROPERTIES.items():
        value = prop.compute(batch)
        if value is not None:
            out[name] = np.asarray(value, dtype=bool)
    return out
