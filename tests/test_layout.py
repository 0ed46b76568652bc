"""The source's layout (issue 16): no import circle anywhere, modules under 400 lines, the
machinery apart from the paper packages, every paper package found by the registry.

Imports are read with ``ast`` from the files, counting imports inside functions too; an import
``from a.b import c`` is an edge to the module ``a.b.c`` when that is a module, else to ``a.b``.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"moreau": "moreau", "analysis": "moreau.analysis", "experiments": "moreau.experiments"}
# A module past WARN_LINES is reported (a pytest warning naming it), never failed for that alone: a
# file is one idea, and cutting an idea in the middle to meet a count makes it harder to read
# (issue 26). Past MAX_LINES a module holds several ideas whatever they are: that fails.
WARN_LINES = 400
MAX_LINES = 800


def _modules():
    """``{dotted name: path}`` of every source module."""
    out = {}
    for folder, dotted in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join((dotted, *parts))] = path
    return out


MODULES = _modules()


def _imports(name, path):
    """The source modules ``name`` imports (anywhere in the file)."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:  # `import a.b.c` of a module: itself; of a name: its module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_under_the_line_limit(name):
    n = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert n < MAX_LINES, f"{MODULES[name]}: {n} lines (limit {MAX_LINES}): split it by what it computes"
    if n >= WARN_LINES:
        warnings.warn(f"{MODULES[name]}: {n} lines (over {WARN_LINES}): is it still one idea?", stacklevel=1)


def _paper_packages():
    """The subpackages of analysis/ other than the machinery (modules such as api.py are not papers)."""
    return sorted(
        {p.name for p in (ROOT / "analysis").iterdir() if (p / "__init__.py").exists()} - {"engine", "pep"}
    )


def test_the_machinery_never_imports_a_paper_package():
    """The engine, the PEP machinery and the core never name a paper module (the registry finds
    them by walking); experiments may use a paper's helpers (e.g. FedProx's round as a matrix)."""
    papers = tuple(f"moreau.analysis.{p}" for p in _paper_packages())
    for name, deps in GRAPH.items():
        if name.startswith(("moreau.analysis.engine", "moreau.analysis.pep")) or not name.startswith(
            ("moreau.analysis", "moreau.experiments")
        ):
            bad = sorted(d for d in deps if d.startswith(papers))
            assert not bad, f"{name} imports paper modules {bad}"


def test_paper_packages_import_each_other_only_through_named_modules():
    """A paper package may use another's module only where this table says why (none today)."""
    allowed = {}
    for name, deps in GRAPH.items():
        parts = name.split(".")
        if len(parts) < 3 or parts[1] != "analysis" or parts[2] not in _paper_packages():
            continue
        for d in deps:
            dp = d.split(".")
            if len(dp) > 2 and dp[1] == "analysis" and dp[2] not in ("engine", "pep", parts[2]):
                assert (name, d) in allowed, f"{name} imports {d} of another paper"


def test_every_paper_package_is_found_by_the_registry():
    from moreau.analysis.engine.registry import declared, paper_packages

    assert [p.__name__.rpartition(".")[2] for p in paper_packages()] == _paper_packages()
    found = {m.split(".")[2] for m, _ in declared("STATEMENTS")}
    assert found == set(_paper_packages())
