"""One entry of ``moreau reproduce``: :class:`Experiment`.

Its own module so that the registry, the demos and the sweep runner (``moreau.experiments._sweep``)
import it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Experiment"]


@dataclass(frozen=True)
class Experiment:
    """One entry of ``moreau reproduce``.

    ``config(quick, trials) -> params`` (JSON-able; the grid lives in it; every key can be set
    from the command line: ``moreau.experiments._config``), ``points(params) -> [point]``
    (JSON-able dicts; a ``ValueError`` for parameters the experiment cannot run),
    ``compute(params, point, rng) -> [row]`` (a module-level function: it runs in worker
    processes), ``finish(rows, params, out, seed, quick) -> {"figures": [paths], "claims":
    [verdict], "theorems": {...}}`` (plots, marked when ``quick``; one verdict per claim from
    ``moreau.experiments._verdicts``; for each theorem the figure illustrates, whether the
    parameters meet its assumptions), optionally ``"tables": {stem: rows}`` (more CSV files; the
    experiment's own name replaces the CSV of the computed rows) and ``"columns": {file: {column:
    meaning}}`` (the manifest's dictionary of its CSV files).  ``notes``: keys of ``params`` that
    describe the run and are not parameters (they cannot be set).  ``ranges``: ``{dotted key:
    moreau.experiments._config.Range}``, the values each numeric parameter may take (a list's
    elements each); ``rules(params)``: the cross-field rules (``mu <= L``), a one-line ``ValueError``
    when one fails.  Both are checked when the configuration is resolved, before anything is written.
    ``deviations(params) -> [line]``: how a run with these parameters differs from the paper, one
    line each (``moreau.experiments._deviations``): written into the manifest, every CSV's comment
    header and every figure's caption.
    """

    name: str
    paper: str
    figure: str
    summary: str
    expected: tuple  # (quick, full) run time measured on a 2-core CPU with 2 workers
    config: Callable
    points: Callable
    compute: Callable
    finish: Callable
    kind: str = "figure"  # "figure" or "demo"
    notes: tuple = ()
    ranges: Mapping = field(default_factory=dict)
    rules: Callable | None = None
    deviations: Callable | None = None
