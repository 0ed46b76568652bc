r"""Solving one performance-estimation problem (PEP) with a named solver, and nothing else.

PEPit (Goujaud, Moucer, Glineur, Hendrickx, Taylor, Dieuleveut) writes the worst case of a
first-order or proximal method over a function class as a small SDP on the Gram matrix of the
points and gradients the method touches; cvxpy hands it to a conic solver.  Here the solver is
always named (``CLARABEL``) and checked after the solve: cvxpy never picks one, and a solve
that does not end ``optimal`` with that solver raises :class:`PEPSolveError`.  (cvxpy >= 1.9
also probes ``import moreau`` for an unrelated conic solver of that name; with this package
installed ``cvxpy.installed_solvers()`` lists ``MOREAU``, which must never be used: naming the
solver is what keeps it out.)

References: Taylor, Hendrickx & Glineur, "Smooth strongly convex interpolation and exact
worst-case performance of first-order methods", Math. Program. 161 (2017); Goujaud et al.,
"PEPit: computer-assisted worst-case analyses of first-order optimization methods in Python",
Math. Program. Comput. 16 (2024).
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["SOLVER", "PEPSolveError", "Solve", "require_pep", "solve"]

#: the conic solver every PEP is handed to (named explicitly, never chosen by cvxpy)
SOLVER = "CLARABEL"
#: relative primal-dual gap accepted (Clarabel's default tolerances reach ~1e-8; see ``solve``)
GAP_RTOL = 1e-6

_EXTRA = (
    'the class worst case (PEP) needs the optional extra "pep": '
    'pip install -e ".[pep]" (pepit, cvxpy, clarabel)'
)


class PEPSolveError(RuntimeError):
    """A PEP whose solve did not end optimal with the named solver."""


@dataclass(frozen=True)
class Solve:
    """One solved PEP: the worst case ``value`` (the dual bound, a valid upper bound up to the
    solver's tolerance), the ``primal`` value (attained by the Gram matrix returned), the
    solver's ``status`` and ``solver`` name, and the problem (points evaluable with ``.eval()``)."""

    value: float
    primal: float
    status: str
    solver: str
    problem: object


def require_pep():
    """Raise ``ImportError`` naming the extra when pepit, cvxpy or clarabel is missing."""
    missing = [m for m in ("PEPit", "cvxpy", "clarabel") if _find(m) is None]
    if missing:
        raise ImportError(f"{_EXTRA}; missing: {', '.join(missing)}")


def _find(name):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a module set to None in sys.modules, a broken install
        return None


def solve(problem, accept=("optimal",)) -> Solve:
    """Solve a PEPit ``PEP`` with cvxpy and Clarabel; check status, solver and duality gap.

    Raises :class:`PEPSolveError` when the status is not in ``accept`` (default: ``optimal``
    only; a caller that accepts ``optimal_inaccurate`` reports that status with the value),
    when cvxpy reports a solver other than ``CLARABEL`` (no silent fallback), or when the
    primal and dual values differ by more than ``GAP_RTOL`` relative (plus 1e-9 absolute:
    values near zero) for ``optimal``, 1e-4 relative for ``optimal_inaccurate``.
    """
    with warnings.catch_warnings():
        if "optimal_inaccurate" in accept:  # the status is returned and reported: the warning says no more
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        dual = problem.solve(wrapper="cvxpy", solver=SOLVER, verbose=0)
    wrapper = problem.wrapper
    status, name = str(wrapper.prob.status), str(wrapper.solver_name)
    primal = float(wrapper.objective.value) if wrapper.objective.value is not None else float("nan")
    if name.upper() != SOLVER:
        raise PEPSolveError(f"PEP solved by {name!r}, not by the requested {SOLVER!r}: refusing the result")
    dual = float(dual) if dual is not None else float("nan")
    gap = abs(dual - primal) / max(abs(dual), 1e-300) if np.isfinite(dual) else float("nan")
    if status not in accept:
        head = "inaccurate: " if status == "optimal_inaccurate" else ""
        raise PEPSolveError(
            f"{head}PEP solve with {SOLVER} ended with status {status!r} (accepted: {', '.join(accept)})"
            + (
                f"; duality gap {gap:.2g} relative (primal {primal:.6g}, dual {dual:.6g})"
                if gap == gap
                else ""
            )
        )
    rtol = GAP_RTOL if status == "optimal" else 1e-4
    if not (np.isfinite(dual) and abs(dual - primal) <= rtol * abs(dual) + 1e-9):
        raise PEPSolveError(
            f"inaccurate: duality gap {gap:.2g} relative > {rtol} accepted (PEP solve with {SOLVER}, "
            f"status {status}: primal {primal!r}, dual {dual!r})"
        )
    return Solve(dual, primal, status, name, problem)
