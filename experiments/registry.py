"""The experiments of ``moreau reproduce``: each module defines ``EXPERIMENT``.

Add a module name to ``MODULES`` to add its experiment to ``moreau reproduce``
(``--list``, the CLI and the test suite); the teaching demos of
``experiments/demos`` follow the experiments.
"""
from __future__ import annotations

import importlib
from functools import lru_cache

__all__ = ["MODULES", "experiments", "get"]

MODULES = (
    "experiments.pfedme_prop1",
    "experiments.fedprox_fig1a",
    "experiments.fedprox_fig1d",
    "experiments.fedprox_fig1b",
    "experiments.fedprox_fig2",
    "experiments.fedprox_comm",
    "experiments.fedprox_rates",
    "experiments.perfedavg_vs_pfedme",
    "experiments.pfedme_synthetic",
    "experiments.pfedme_digits",
)


@lru_cache(maxsize=1)
def experiments():
    """``{name: Experiment}`` in registry order, the demos last."""
    from .demos import DEMOS, demo_experiment

    out = {}
    for module in MODULES:
        exp = importlib.import_module(module).EXPERIMENT
        if exp.name in out:
            raise ValueError(f"experiment name {exp.name!r} defined twice ({module})")
        out[exp.name] = exp
    for name in DEMOS:
        out[name] = demo_experiment(name)
    return out


def get(name: str):
    table = experiments()
    if name not in table:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(table)}")
    return table[name]
