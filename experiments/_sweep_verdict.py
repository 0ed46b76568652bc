"""The catalogue's verdict on a statement, for the manifest of an experiment that reproduces a figure
or table about it (the same JSON as ``moreau check --json``'s ``verdict``).
"""

from __future__ import annotations

__all__ = ["catalogue_verdict"]


def catalogue_verdict(sid: str, family: str = "quadratic") -> dict:
    """The catalogue's verdict on statement ``sid`` (default instances, seed 0), for a manifest: the
    same JSON as ``moreau check --json``'s ``verdict`` (schema :data:`SCHEMA_VERSION`): the printed
    statement's verdict, each reading's, and whether they are what the catalogue expects."""
    from moreau.analysis.engine.records import verdict_json
    from moreau.analysis.engine.report import verdict_of
    from moreau.analysis.engine.runner import run as run_check
    from moreau.analysis.engine.verdict import SCHEMA_VERSION

    recs = run_check([sid], family)
    return {
        "schema_version": SCHEMA_VERSION,
        "statement": sid,
        "family": family,
        "instances": int(sum(r.result.instances for r in recs)),
        **verdict_json(verdict_of(recs[0].statement, recs)),
    }
