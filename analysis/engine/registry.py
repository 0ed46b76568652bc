"""The theorem catalogue, found by walking the paper packages.

A *paper package* is a subpackage of ``moreau.analysis`` whose ``__init__`` declares ``PAPER``
(``key``: the paper's file name, ``short``, ``citation``) and ``FORMAL_STATEMENTS`` (the paper's
formal statements in its own order, ``(id, where, one line)``).  Every module below a paper
package is imported (``pkgutil.walk_packages``), and a module contributes what it declares at
module level:

* ``STATEMENTS``: a sequence of :class:`moreau.analysis.engine.core.Statement` (the checkers);
* ``PEP``: ``{statement id: builder}``, the class worst cases of ``moreau check --pep``, and
  ``PEP_NOT_APPLICABLE``: ``{statement id: why no PEP formulation applies}``;
* ``PROOFS`` and ``MUTANT_PROOFS``: :class:`moreau.analysis.engine.symbolic.Proof` sequences
  (``moreau check --symbolic``).

Two module names have a fixed role and are imported only when their declarations are asked for
(so that loading the catalogue stays cheap): ``proofs`` (``PROOFS``, ``MUTANT_PROOFS``; sympy) and
``pep_worst_cases`` (``PEP``, ``PEP_NOT_APPLICABLE``).  No list of module names is kept by hand:
a new checker module is found where it is put.  The
catalogue's order is the papers' (by package name), and within a paper the order of its
``FORMAL_STATEMENTS`` (statements it does not list come after, in walk order).  The machinery
(``engine``, ``pep``) is not walked and never imports a paper package by name.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

__all__ = ["REQUIRED_IDS", "catalogue", "declared", "get", "paper_packages"]

#: ids the catalogue must contain
REQUIRED_IDS = (
    "pfedme.prop1", "pfedme.lemma1", "pfedme.lemma2",
    "fedprox.lemma1", "fedprox.lemma2", "fedprox.lemma3",
    "perfedavg.lemma4_2", "perfedavg.lemma4_4",
    "gd.strongly_convex", "gd.nonconvex", "fw.convex",
)

_ROOT = "moreau.analysis"


@lru_cache(maxsize=1)
def paper_packages() -> tuple:
    """The paper packages (module objects), by name."""
    root = importlib.import_module(_ROOT)
    out = []
    for info in sorted(pkgutil.iter_modules(root.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        pkg = importlib.import_module(f"{_ROOT}.{info.name}")
        if hasattr(pkg, "PAPER") and hasattr(pkg, "FORMAL_STATEMENTS"):
            out.append(pkg)
    return tuple(out)


#: module names with a fixed role, and what each declares
ROLE_MODULES = {"proofs": ("PROOFS", "MUTANT_PROOFS"), "pep_worst_cases": ("PEP", "PEP_NOT_APPLICABLE")}


@lru_cache(maxsize=1)
def _module_names() -> tuple:
    """Every module of every paper package, the package first, then the walk's order."""
    out = []
    for pkg in paper_packages():
        out.append(pkg.__name__)
        out += [info.name for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
    return tuple(out)


@lru_cache(maxsize=None)
def _modules(role) -> tuple:
    """The modules of one role (None: the checker modules, every module without a fixed role)."""
    names = [n for n in _module_names() if (n.rpartition(".")[2] == role if role else
                                             n.rpartition(".")[2] not in ROLE_MODULES)]
    return tuple(importlib.import_module(n) for n in names)


def declared(name: str) -> list:
    """``[(module name, value)]`` for every catalogue module that defines ``name`` at module level."""
    role = next((r for r, names in ROLE_MODULES.items() if name in names), None)
    return [(m.__name__, vars(m)[name]) for m in _modules(role) if name in vars(m)]


@lru_cache(maxsize=1)
def catalogue():
    """``{id: Statement}`` in catalogue order."""
    found, where = {}, {}
    for module, statements in declared("STATEMENTS"):
        for s in statements:
            if s.id in found:
                raise ValueError(f"statement id {s.id!r} defined twice ({where[s.id]} and {module})")
            found[s.id], where[s.id] = s, module
    order = [sid for pkg in paper_packages() for sid, *_ in pkg.FORMAL_STATEMENTS]
    rank = {sid: i for i, sid in enumerate(order)}
    papers = {pkg.__name__: i for i, pkg in enumerate(paper_packages())}

    def key(sid):
        paper = next(i for name, i in papers.items() if where[sid].startswith(name))
        return paper, rank.get(sid, len(rank))

    return {sid: found[sid] for sid in sorted(found, key=key)}


def get(statement_id: str):
    cat = catalogue()
    if statement_id not in cat:
        raise KeyError(f"unknown statement id {statement_id!r}; known: {', '.join(cat)}")
    return cat[statement_id]
