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
from functools import cache, lru_cache

__all__ = [
    "REQUIRED_IDS",
    "ENTRY_POINT_GROUP",
    "StatementError",
    "catalogue",
    "declared",
    "full_catalogue",
    "get",
    "load_module",
    "paper_packages",
    "user_statements",
]

#: an installed package of statements declares its modules in this entry-point group
ENTRY_POINT_GROUP = "moreau.statements"


class StatementError(ValueError):
    """A user's statements cannot be loaded or run (exit 2 with one line, never a pass)."""


#: ids the catalogue must contain
REQUIRED_IDS = (
    "pfedme.prop1",
    "pfedme.lemma1",
    "pfedme.lemma2",
    "fedprox.lemma1",
    "fedprox.lemma2",
    "fedprox.lemma3",
    "perfedavg.lemma4_2",
    "perfedavg.lemma4_4",
    "gd.strongly_convex",
    "gd.nonconvex",
    "fw.convex",
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


@cache
def _modules(role) -> tuple:
    """The modules of one role (None: the checker modules, every module without a fixed role)."""
    names = [
        n
        for n in _module_names()
        if (n.rpartition(".")[2] == role if role else n.rpartition(".")[2] not in ROLE_MODULES)
    ]
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


# --- statements outside the package: a user's module, an installed package's entry points ------

_LOADED: dict = {}


def load_module(spec: str) -> list:
    """The statements a user's module declares: its module-level ``STATEMENTS`` (a sequence of
    :class:`moreau.analysis.api.Statement`).  ``spec`` is a path to a ``.py`` file or a dotted
    module name importable from the current environment.  Raises :class:`StatementError` (one line)
    when the module cannot be loaded or declares no valid statements."""
    if spec not in _LOADED:  # a user's module runs once per process, however often it is asked for
        _LOADED[spec] = _load_module(spec)
    return _LOADED[spec]


def module_of(statement_id: str) -> str | None:
    """The ``--module`` spec that declared ``statement_id`` in this process (an absolute path for a
    file), or None (the catalogue's, an entry point's: found without ``--module``)."""
    from pathlib import Path

    for spec, statements in _LOADED.items():
        if any(st.id == statement_id for st in statements):
            path = Path(spec)
            return str(path.resolve()) if spec.endswith(".py") or path.is_file() else spec
    return None


def _load_module(spec: str) -> list:
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(spec)
    try:
        if spec.endswith(".py") or path.exists():
            if not path.is_file():
                raise StatementError(f"--module {spec}: no such file")
            name = f"moreau_user_{path.stem}_{abs(hash(str(path.resolve()))) % 10**8}"
            loader = importlib.util.spec_from_file_location(name, path)
            if loader is None or loader.loader is None:  # a file Python cannot import (no .py)
                raise StatementError(f"--module {spec}: cannot load it (not a Python source file)")
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(spec)
    except StatementError:
        raise
    except SystemExit as exc:  # sys.exit() on import: the module's own choice, not the CLI's exit status
        raise StatementError(
            f"--module {spec}: cannot load it (it called sys.exit({exc.code!r}) on import)"
        ) from exc
    except Exception as exc:  # the user's code: any error is reported in one line, with its type
        raise StatementError(f"--module {spec}: cannot load it ({type(exc).__name__}: {exc})") from exc
    return _statements_of(module, f"--module {spec}")


def _statements_of(module, where) -> list:
    from moreau.analysis.engine.core import Statement

    found = getattr(module, "STATEMENTS", None)
    if found is None:
        raise StatementError(f"{where}: the module defines no STATEMENTS (a sequence of Statement)")
    found = list(found) if isinstance(found, (list, tuple)) else [found]
    bad = [type(s).__name__ for s in found if not isinstance(s, Statement)]
    if bad or not found:
        raise StatementError(
            f"{where}: STATEMENTS must be a non-empty sequence of Statement (got {bad or 'nothing'})"
        )
    for st in found:
        if not st.families:
            raise StatementError(f"{where}: statement {st.id!r} declares no family (nothing would run)")
    return found


def user_statements(modules=()) -> dict:
    """``{id: Statement}`` of the installed entry points (group ``moreau.statements``) and of the
    modules given (``--module``), in that order."""
    from importlib.metadata import entry_points

    out = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = ep.load()
        except Exception as exc:
            raise StatementError(
                f"entry point {ep.name!r} ({ep.value}): cannot load it ({type(exc).__name__}: {exc})"
            ) from exc
        for st in _statements_of(loaded, f"entry point {ep.name!r}"):
            out[st.id] = st
    for spec in modules:
        for st in load_module(spec):
            if st.id in out:
                raise StatementError(f"--module {spec}: statement id {st.id!r} defined twice")
            out[st.id] = st
    return out


def full_catalogue(modules=()) -> dict:
    """The catalogue, then the users' statements (entry points, ``--module``); a user's id may not
    shadow one of the catalogue's."""
    cat = dict(catalogue())
    for sid, st in user_statements(modules).items():
        if sid in cat:
            raise StatementError(f"statement id {sid!r} is the catalogue's: give your statement another id")
        cat[sid] = st
    return cat
