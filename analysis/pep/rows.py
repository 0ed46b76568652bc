r"""Rows of ``moreau check --pep``: the helpers every PEP builder uses.

A paper package declares, in a module of its own (``pep_worst_cases``), ``PEP = {statement id:
builder}`` and ``PEP_NOT_APPLICABLE = {statement id: why}`` (``moreau.analysis.engine.registry``
collects them).  Each builder takes the checker's statement, a batch of its PEP family
(:func:`pep_family`: ``"quadratic"`` when the statement declares it, else its first family; drawn
by ``moreau.analysis.engine.runner``) and the run's seed (for a seeded search only) and returns rows
``dict(part, cls, parameters, pep, paper, orientation, inst, sharp, note, ...)`` made by
:func:`row`: ``pep`` the class worst case (a :class:`moreau.analysis.pep.solve.Solve`-valued
pair), ``paper`` the paper's constant at the same parameters, ``orientation`` "upper" (the true
quantity must stay below the paper's: ratio = PEP/paper) or "lower" (a strong-convexity
constant: ratio = paper/PEP), ``inst`` the checker's LHS/RHS on its worst instance at those
parameters.  The parameters are those of the checker's worst applicable instance (:func:`worst`),
so the instance's ratio and the PEP's ratio are comparable number for number.
``moreau.analysis.pep.report`` turns rows into records.

``pep`` may also be a zero-argument callable returning that pair (or the float of one of the
public helpers, e.g. ``moreau.analysis.api.pep_gradient_descent``, which return only optimal
Clarabel solves): :func:`row` calls it, and a solve that fails or is inaccurate (or any error)
then marks that row alone, with its reason, instead of ending the builder and its other rows.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant

__all__ = ["row", "run_parts", "worst", "pep_family"]


def pep_family(st) -> str:
    """The family whose batch ``--pep`` hands to ``st``'s builder: ``"quadratic"`` when ``st``
    declares it (the catalogue's), else the first family ``st`` declares."""
    return "quadratic" if "quadratic" in st.families else next(iter(st.families))


def worst(part):
    """``(instance, ratio)`` of the part's worst applicable instance, as the headline's maximum:
    over the instances whose right side is positive and left side not negative (a negative bound
    says nothing: it is no ratio).  ``ratio`` is None when no instance has a meaningful ratio (the
    instance is then the first applicable one, its parameters still usable)."""
    app = np.asarray(part.sides.applicable, bool)
    lhs, rhs = np.asarray(part.sides.lhs, float), np.asarray(part.sides.rhs, float)
    with np.errstate(invalid="ignore"):
        ok = app & (rhs > 0) & (lhs >= 0) & np.isfinite(part.ratio)
    if not ok.any():
        return (int(np.flatnonzero(app)[0]) if app.any() else 0), None
    r = np.where(ok, part.ratio, -np.inf)
    i = int(np.argmax(r))
    return i, float(r[i])


def run_parts(st, batch, changes=None, name="pep: one iterate", family=None):
    """``{part name: PartResult}`` of ``st`` on ``batch`` (family: :func:`pep_family` unless given)."""
    fam = pep_family(st) if family is None else family
    res = st.run(fam, None, None, mutant=Mutant(name, changes) if changes else None, batch=batch)
    return {p.name: p for p in res.parts}


def _call(pep):
    """A zero-argument ``pep`` called: its pair, or ``(None, why)`` when it raises."""
    try:
        out = pep()
    except Exception as exc:  # one failed solve marks its row, never the builder's other rows
        return None, f"{type(exc).__name__}: {exc}" if not _is_solve_error(exc) else str(exc)
    if isinstance(out, tuple):
        return out[0], out[1]
    return float(out), None


def row(
    part, cls, params, pep, paper, orientation, inst, sharp="", note="", required=True, outside=False, **extra
):
    """``required=False``: a supplementary solve (its failure is reported, not a failure of the run);
    ``outside=True``: parameters outside the statement's conditions (a threshold sweep)."""
    if callable(pep):
        pep = _call(pep)
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


def _is_solve_error(exc) -> bool:
    from moreau.analysis.pep.solve import PEPSolveError

    return isinstance(exc, PEPSolveError)
