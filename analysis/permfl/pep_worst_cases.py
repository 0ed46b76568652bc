r"""Class worst cases (PEP) of PerMFL's statements: none applies here.

``PEP_NOT_APPLICABLE`` says why, per statement.  Collected by ``moreau.analysis.engine.registry``;
printed by ``moreau check --pep``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]

PEP: dict[str, Callable[..., Any]] = {}
PEP_NOT_APPLICABLE = {
    "permfl.objective": "identities and limits of the optimum of (4.3) on quadratics (exact closed forms): no "
    "worst case over a function class is claimed",
    "permfl.thm1": "the level factors are spectral radii of quadratic maps, exact on the class's quadratic extremes "
    "(aligned devices attain them); the run's rho(P) involves three nested solvers per round, "
    "beyond the PEP formulations here",
    "permfl.thm2": "the smoothness constants are exact on quadratics with the extreme eigenvalue -L; the rate is GD on "
    "the nested envelope G, whose function class (an envelope of a mean of envelopes) has no PEP "
    "interpolation conditions here",
}
