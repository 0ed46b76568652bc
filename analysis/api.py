r"""The authoring API: what you need to write a statement of your own and check it.

A statement is a :class:`Statement`: an id, where it comes from, its claim as a dict of formulas
(the paper's text, as printed), an instance generator per family, and ``evaluate(batch, claim)``
returning both sides of every part (:class:`Sides`) side by side.  Put your statements in a module
of your own as a module-level ``STATEMENTS`` sequence and run::

    moreau check --module path/to/my_statements.py          # or a dotted module name
    moreau check --module my_statements.py --mutants --search 50 --analyse --json out.json

An installed package declares its modules in the entry-point group ``moreau.statements``
(``[project.entry-points."moreau.statements"] mine = "my_package.statements"``); ``moreau check``
then includes them.  In your own test suite, :func:`moreau.testing.check` turns a statement into a
pytest assertion.  The tutorial, from a paper's text to verdicts, mutants and analyses, is
docs/tutorial.md (its code runs in the project's tests).

Families are any names your generator understands: ``instances(family, trials, rng)`` returns a
*batch* (a dict of arrays, instances along the first axis); the built-in generators below draw
quadratics with a prescribed spectrum and logistic data.  A run on no instance is an error, never
a pass.

Names:

* :class:`Statement`, :class:`Sides`, :class:`Mutant`, :class:`Reading` — a statement, both
  sides of a part, a wrong version that must be rejected, a named reading beside the printed claim;
* :func:`rate_sides`, :func:`fit_exponent` — an O(·) rate checked by a fitted exponent with an
  interval; :func:`worst_point` — reduce a sweep (iterates, points) to its worst entry per instance;
  :func:`sweep_sides` — the same, with the rounding floor read off the sweep (a failure below some
  eps times the largest magnitude the quantity went through is "at the rounding floor", undecided),
  and ``Statement.precise`` — the statement evaluated in higher precision (mpmath), which decides
  such instances;
* :func:`quadratic_batch`, :func:`logistic_batch`, :func:`log_uniform`, :func:`orthogonal` —
  instance generators; :func:`nonsmooth_batch` — instances that violate one common assumption at a
  time (ℓ1 and hinge: not smooth; Huber: not strongly convex; double wells: not convex; exact proxes,
  with per-instance ``smooth``/``convex``/``strongly_convex`` flags), so that ``--analyse`` can find
  each assumption necessary or not; :func:`scale_fields` — declare how a batch rescales (``--analyse``);
* :class:`Simplify`, :func:`quadratic_fields` — say what an instance's fields are (the matrix, vectors in
  its coordinates, free scalars, derived fields, rotation invariance) in ``Statement.simplify`` and a
  failing instance is shrunk to a readable counterexample (fewest clients, diagonal, fewest dimensions,
  round numbers);
* ``Statement.pep`` with :data:`pep_classes` (PEPit problems: envelope and prox constants, the prox
  displacement, GD, Frank–Wolfe; the ``pep`` extra), :func:`pep_row`, :func:`pep_parts`,
  :func:`pep_worst` — the class worst case of a part beside the instances' (``moreau check --pep``);
  :func:`pep_gradient_descent`, :func:`pep_proximal_point`, :func:`pep_frank_wolfe` — the worst value
  of a common method over its class (convex, strongly convex, smooth; ‖x⁰ − x*‖ ≤ R, f(x⁰) − f* ≤ Δ
  or ‖∇f(x⁰)‖ ≤ G), a float from PEPit and Clarabel, without importing a solver (docs/tutorial.md,
  "Class worst cases for your method");
* ``Statement.implies`` and ``Statement.waived`` with :data:`PROPERTIES` and
  :func:`instance_properties` — the library of properties an instance may have beyond the printed
  hypotheses (one client, d = 1, isotropic / shared / commuting Hessians, equal weights, convex or
  strongly convex sample losses, noise independent of θ, x⁰ in the set, μ > 0, bounded gradients,
  λ against L), computed from the instances' numbers; every run reports, per statement and family,
  each property all its instances have that ``implies`` does not name and ``waived`` (name or
  (family, name) -> why the generator cannot be widened) does not excuse (docs/instances.md); for a
  stronger hypothesis of a nested pair that ``implies`` names (strongly convex objective, strongly
  convex sample losses), ``--analyse`` judges the claim on instances that are convex and not strongly
  convex and says whether it needs the stronger one (docs/conditions.md, "Nested hypotheses");
* :func:`check` — run statements and get their verdicts (the Python form of ``moreau check``);
* :class:`Case`, :func:`derive` — a sympy derivation of the sharp constant of a part whose
  quadratic worst case is one eigenvalue (``Statement.sharp``; ``--analyse`` compares it with the
  instances, for your statements as for the catalogue's: see ``analysis/pfedme/sharp_constants.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, overload

from moreau.analysis.engine.core import (
    Mutant,
    Reading,
    Sides,
    Statement,
    fit_exponent,
    rate_sides,
    scale_fields,
    sweep_sides,
    worst_point,
)
from moreau.analysis.engine.instances import log_uniform, logistic_batch, orthogonal, quadratic_batch
from moreau.analysis.engine.nonsmooth_instances import nonsmooth_batch
from moreau.analysis.engine.properties import PROPERTIES, instance_properties
from moreau.analysis.engine.sharp import Case, derive
from moreau.analysis.engine.shrink import Simplify, quadratic_fields
from moreau.analysis.pep import classes as pep_classes
from moreau.analysis.pep.methods import frank_wolfe as pep_frank_wolfe
from moreau.analysis.pep.methods import gradient_descent as pep_gradient_descent
from moreau.analysis.pep.methods import proximal_point as pep_proximal_point
from moreau.analysis.pep.rows import row as pep_row
from moreau.analysis.pep.rows import run_parts as pep_parts
from moreau.analysis.pep.rows import worst as pep_worst

__all__ = [
    "Statement",
    "Sides",
    "Mutant",
    "Reading",
    "rate_sides",
    "fit_exponent",
    "worst_point",
    "sweep_sides",
    "scale_fields",
    "quadratic_batch",
    "logistic_batch",
    "log_uniform",
    "orthogonal",
    "nonsmooth_batch",
    "PROPERTIES",
    "instance_properties",
    "check",
    "Case",
    "derive",
    "Simplify",
    "quadratic_fields",
    "pep_classes",
    "pep_row",
    "pep_parts",
    "pep_worst",
    "pep_gradient_descent",
    "pep_proximal_point",
    "pep_frank_wolfe",
]


@overload
def check(
    statements: Statement,
    *,
    family: str = ...,
    trials: int | None = ...,
    seed: int = ...,
    mutants: bool = ...,
) -> dict[str, Any]: ...
@overload
def check(
    statements: Iterable[Statement],
    *,
    family: str = ...,
    trials: int | None = ...,
    seed: int = ...,
    mutants: bool = ...,
) -> list[dict[str, Any]]: ...
def check(
    statements: Statement | Iterable[Statement],
    *,
    family: str = "all",
    trials: int | None = None,
    seed: int = 0,
    mutants: bool = False,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Run ``statements`` (a :class:`Statement` or a sequence) and return their verdicts.

    Each verdict is ``moreau.analysis.engine.verdict.statement_verdict``'s dict: ``"printed"``
    (``{"verdict": "holds" | "fails" | "undecided", "max_ratio", "reason", ...}``), ``"readings"``
    and ``"as_expected"``; with ``mutants=True`` also ``"mutants"``: ``{name: rejected}``.  Raises
    ``moreau.analysis.engine.registry.StatementError`` when a statement draws no instance."""
    from moreau.analysis.engine import runner
    from moreau.analysis.engine.report import group, verdict_of

    sts = [statements] if isinstance(statements, Statement) else list(statements)
    cat = {s.id: s for s in sts}
    records = runner.run(list(cat), family, trials, seed, mutants, cat=cat)
    out = []
    for st, recs in group(records):
        v = verdict_of(st, recs)
        if mutants:
            v["mutants"] = {
                m.name: any(rej for rec in recs for mm, rej, _ in rec.mutants if mm.name == m.name)
                for m in st.mutants
            }
        out.append(v)
    return out[0] if isinstance(statements, Statement) else out
