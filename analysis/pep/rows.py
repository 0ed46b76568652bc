r"""Rows of ``moreau check --pep``: the helpers every PEP builder uses.

A paper package declares, in a module of its own (``pep_worst_cases``), ``PEP = {statement id:
builder}`` and ``PEP_NOT_APPLICABLE = {statement id: why}`` (``moreau.analysis.engine.registry``
collects them).  Each builder takes the checker's statement, its quadratic-family batch
(``moreau.analysis.engine.runner``) and the run's seed (for a seeded search only) and returns rows
``dict(part, cls, parameters, pep, paper, orientation, inst, sharp, note, ...)`` made by
:func:`row`: ``pep`` the class worst case (a :class:`moreau.analysis.pep.solve.Solve`-valued
pair), ``paper`` the paper's constant at the same parameters, ``orientation`` "upper" (the true
quantity must stay below the paper's: ratio = PEP/paper) or "lower" (a strong-convexity
constant: ratio = paper/PEP), ``inst`` the checker's LHS/RHS on its worst instance at those
parameters.  The parameters are those of the checker's worst applicable instance (:func:`worst`),
so the instance's ratio and the PEP's ratio are comparable number for number.
``moreau.analysis.pep.report`` turns rows into records.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant

__all__ = ["row", "run_parts", "worst"]


def worst(part):
    r = np.where(part.sides.applicable, part.ratio, -np.inf)
    i = int(np.argmax(r))
    return i, float(r[i])


def run_parts(st, batch, changes=None, name="pep: one iterate"):
    res = st.run("quadratic", None, None, mutant=Mutant(name, changes) if changes else None, batch=batch)
    return {p.name: p for p in res.parts}


def row(
    part, cls, params, pep, paper, orientation, inst, sharp="", note="", required=True, outside=False, **extra
):
    """``required=False``: a supplementary solve (its failure is reported, not a failure of the run);
    ``outside=True``: parameters outside the statement's conditions (a threshold sweep)."""
    return dict(
        part=part,
        cls=cls,
        parameters={k: float(v) for k, v in params.items()},
        pep=pep,
        paper=float(paper),
        orientation=orientation,
        inst=inst,
        sharp=sharp,
        note=note,
        required=required,
        outside=outside,
        **extra,
    )
