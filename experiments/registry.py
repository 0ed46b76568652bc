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
    "moreau.experiments.pfedme_prop1",
    "moreau.experiments.fedprox_fig1a",
    "moreau.experiments.fedprox_fig1d",
    "moreau.experiments.fedprox_fig1b",
    "moreau.experiments.fedprox_fig2",
    "moreau.experiments.fedprox_comm",
    "moreau.experiments.fedprox_rates",
    "moreau.experiments.perfedavg_vs_pfedme",
    "moreau.experiments.pfedme_synthetic",
    "moreau.experiments.pfedme_digits",
    "moreau.experiments.pfedme_official_conventions",
    "moreau.experiments.pfedme_k_beta",
    "moreau.experiments.perfedavg_table1",
    "moreau.experiments.compare",
    "moreau.experiments.pflmf_rank",
    "moreau.experiments.permfl_digits",
    "moreau.experiments.fedfw_synthetic",
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
