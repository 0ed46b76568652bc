"""The formal statements of the source papers, and which of them the catalogue checks.

Each paper package declares ``PAPER`` (its citation) and ``FORMAL_STATEMENTS``: every formal
statement (theorem, lemma, proposition, corollary, and the equations a statement rests on) that
the catalogue checks or is meant to check, as ``(id, where, one line)``.  :func:`known_gaps` is
the part of those lists that the registry does not (yet) check: every ``moreau check`` run ends
with it, so "all statements hold" never reads as "the paper is verified".
"""

from __future__ import annotations

from moreau.analysis.engine.registry import catalogue, paper_packages

__all__ = ["formal_statements", "known_gaps", "paper_citation", "paper_short"]


def _papers() -> dict:
    return {pkg.PAPER["key"]: pkg for pkg in paper_packages()}


def paper_citation(key: str) -> str:
    """The full citation of a paper key (a ``Statement.paper`` value)."""
    pkg = _papers().get(key)
    return pkg.PAPER["citation"] if pkg else key


def paper_short(key: str) -> str:
    """The short name of a paper key ("pFedMe", "FedProx analysis", ...)."""
    pkg = _papers().get(key)
    return pkg.PAPER["short"] if pkg else key


def formal_statements() -> list:
    """``[(id, paper key, where, one line)]`` over every paper package."""
    return [
        (sid, pkg.PAPER["key"], where, line)
        for pkg in paper_packages()
        for sid, where, line in pkg.FORMAL_STATEMENTS
    ]


def known_gaps(checked_ids=None):
    """``[(id, paper, where, line)]`` (paper: its short name) of the listed statements the registry
    does not check."""
    if checked_ids is None:
        checked_ids = set(catalogue())
    return [
        (sid, paper_short(p), where, line)
        for sid, p, where, line in formal_statements()
        if sid not in checked_ids
    ]
