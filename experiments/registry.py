"""The experiments of ``moreau reproduce``: each module defines ``EXPERIMENT``.

Add a module name to ``MODULES`` to add its experiment to ``moreau reproduce``
(``--list``, the CLI and the test suite).
"""
from __future__ import annotations

import importlib
from functools import lru_cache

__all__ = ["MODULES", "experiments", "get"]

MODULES = (
    "experiments.pfedme_prop1",
)


@lru_cache(maxsize=1)
def experiments():
    """``{name: (module name, Experiment)}`` in registry order."""
    out = {}
    for module in MODULES:
        exp = importlib.import_module(module).EXPERIMENT
        if exp.name in out:
            raise ValueError(f"experiment name {exp.name!r} defined twice ({module})")
        out[exp.name] = (module, exp)
    return out


def get(name: str):
    table = experiments()
    if name not in table:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(table)}")
    return table[name]
