"""Teaching demos: short percent-format scripts (``# %%`` cells).

Each runs as plain Python (``python experiments/demos/NAME.py``, figures into
``$MOREAU_DEMO_OUT`` or ``out/demos``), opens as a notebook with jupytext, finishes
in seconds and explains in its cells what the picture shows.  Each sets
``CLAIMS``: what the picture claims, checked on the numbers it plots, and ``ROWS``: those
numbers (:func:`plotted`), the CSV of ``moreau reproduce NAME``.
``moreau reproduce NAME`` runs a demo like an experiment (figures, manifest).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

__all__ = ["COLUMNS", "DEMOS", "demo_experiment", "plotted", "run_demo"]

#: the columns of a demo's CSV (its ``ROWS``: every plotted number)
COLUMNS = {
    "panel": "the figure's panel, as its title letters it",
    "series": "the curve or points (its legend label)",
    "x": "abscissa of the plotted point",
    "y": "ordinate of the plotted point",
}


def plotted(panel: str, series: str, x, y) -> list:
    """Rows ``{panel, series, x, y}`` of one plotted curve (a demo's ``ROWS`` collect them: the CSV)."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    return [
        {"panel": panel, "series": series, "x": float(a), "y": float(b)}
        for a, b in zip(x.ravel(), y.ravel(), strict=True)
    ]


HERE = Path(__file__).resolve().parent

#: name -> (script, one line on what it shows)
DEMOS = {
    "demo-envelope": (
        "envelope_logistic.py",
        "1-D envelopes of a logistic loss and of a weakly convex quadratic; "
        "the prox map shrinking w towards the minimiser",
    ),
    "demo-prox-abs": (
        "prox_abs.py",
        "prox of |x| (soft thresholding) and its envelope (Huber); the prox as an "
        "implicit gradient step, for |x|, a quadratic and the logistic loss",
    ),
    "demo-personalisation": (
        "personalisation.py",
        "the personalisation trade-off in lam on two clients: "
        "personalised and global models, price against benefit (exact)",
    ),
    "demo-fedprox-interpolation": (
        "fedprox_interpolation.py",
        "FedProx's local and global models travel from "
        "LocalTrain (lam -> 0) to GlobalTrain (lam -> inf), five 2-D clients, exact",
    ),
    "demo-weakly-convex": (
        "weakly_convex.py",
        "a weakly convex quadratic: the envelope exists for lam > L and is lam-smooth exactly when lam >= 2L",
    ),
}


def run_demo(name: str, out, seed: int = 0) -> dict:
    """Run one demo script with its figures going to ``out``; return its namespace."""
    script, _ = DEMOS[name]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return runpy.run_path(str(HERE / script), init_globals={"OUT": out, "SEED": seed}, run_name="__demo__")


def demo_experiment(name: str):
    """The :class:`~moreau.experiments._sweep.Experiment` that runs demo ``name`` (one point, no grid)."""
    from .._experiment import Experiment

    script, summary = DEMOS[name]

    def config(quick, trials):
        if trials is not None:
            raise ValueError(f"{name} is a demo (no Monte Carlo): --trials does not apply")
        return {"script": f"experiments/demos/{script}"}

    def compute(params, point, rng):
        return []

    def finish(rows, params, out, seed=0, quick=False):
        """The demo's figures and its claims as exact verdicts (a demo has one size: ``quick`` is
        recorded on the verdicts by the runner and changes nothing here)."""
        from .._verdicts import exact

        ns = run_demo(name, out, seed)
        claims = [exact(text, v["holds"], v.get("value")) for text, v in ns.get("CLAIMS", {}).items()]
        return {
            "figures": ns.get("FIGURES", []),
            "claims": claims,
            "theorems": ns.get("THEOREMS", {}),
            "tables": {name: ns["ROWS"]},
            "columns": {f"{name}.csv": COLUMNS},
        }

    return Experiment(
        name=name,
        paper="teaching demo",
        figure="demo",
        summary=summary,
        expected=("~1 s", "~1 s"),
        config=config,
        points=lambda params: [{}],
        compute=compute,
        finish=finish,
        kind="demo",
        notes=("script",),
    )
