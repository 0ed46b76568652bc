"""The API pages' one addition to autodoc: a re-exported constant keeps its description.

A public module re-exports the constants its private modules define (``moreau.audit.DEVIATIONS``
is ``moreau/audit/_deviations.py``'s), and their descriptions are the ``#:`` comments above the
definitions. autodoc looks for such a comment in the module being documented only, where the
constant is an import; this extension follows the ``from .module import NAME`` line of the public
module to the defining module and reads the comment there (:func:`constant_doc`).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect


def _defining_module(modname: str, name: str) -> tuple[str, str] | None:
    """``(module, name there)`` of the ``from ... import`` in ``modname`` that binds ``name``."""
    module = importlib.import_module(modname)
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return None
    anchor = modname if hasattr(module, "__path__") else modname.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    if node.level:
                        return importlib.util.resolve_name(
                            "." * node.level + (node.module or ""), anchor
                        ), alias.name
                    return node.module or "", alias.name
    return None


def constant_doc(modname: str, name: str) -> list[str]:
    """The ``#:`` comment lines documenting ``name`` of ``modname``: in ``modname`` itself, else in
    the module its ``from ... import`` of ``name`` reads it from (followed through re-exports)."""
    from sphinx.errors import PycodeError
    from sphinx.pycode import ModuleAnalyzer

    seen = set()
    while (modname, name) not in seen:
        seen.add((modname, name))
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except PycodeError:
            return []
        if ("", name) in docs:
            return list(docs[("", name)])
        found = _defining_module(modname, name)
        if found is None:
            return []
        modname, name = found
    return []


def _fill_constant_doc(app: object, what: str, name: str, obj: object, options: object, lines: list) -> None:
    """A constant's ``#:`` comment, where it is defined, in place of what autodoc found: nothing, or
    the docstring of the constant's type (a ``dict``'s), which says nothing about the constant."""
    if what != "data":
        return
    modname, _, attr = name.rpartition(".")
    comment = constant_doc(modname, attr)
    if comment:
        lines[:] = comment
    elif "\n".join(lines).strip() == inspect.cleandoc(type(obj).__doc__ or "").strip():
        lines[:] = []


def setup(app):  # Sphinx's extension entry point
    app.connect("autodoc-process-docstring", _fill_constant_doc)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
