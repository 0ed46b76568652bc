"""The teaching demos (``experiments/demos/*.py``) as a sphinx-gallery gallery.

The demos are percent-format scripts whose text cells are Markdown (jupytext opens them as
notebooks); sphinx-gallery wants a script that opens with a reStructuredText docstring and whose
text blocks are reStructuredText. At ``builder-inited`` (before sphinx-gallery reads its examples)
this extension writes, for each demo of ``moreau.experiments.demos.DEMOS``, a copy of the script
into ``docs/generated/demos/`` (not committed) in which the first Markdown cell has become the
docstring and every Markdown cell reStructuredText; the code is the demo's, unchanged, and
sphinx-gallery executes it when the docs build.

The demos save their figures to files and close them (``moreau.experiments._plot.save``) instead
of leaving them open, so the matplotlib scraper would find nothing: :func:`demo_figures` is the
gallery's image scraper, picking up the PNG files a block added to the demo's ``FIGURES``.
``$MOREAU_DEMO_OUT`` (where a demo writes its figures) is set to ``build/docs-demos/`` for the
build.
"""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
#: the gallery's sources (generated from the demos) and its pages, relative to docs/
SOURCES = "generated/demos"
GALLERY = "generated/gallery"
#: where the demos write their figures during the build
FIGURE_DIR = ROOT / "build" / "docs-demos"

_HEADER = """Teaching demos
==============

Short scripts from ``experiments/demos/`` (each runs as plain Python, or opens as a notebook with
jupytext), executed when this site is built: every figure and every printed line below comes from
that run. Each script sets ``CLAIMS`` (what its picture claims, checked on the plotted numbers) and
prints them; ``moreau reproduce NAME`` runs a demo like an experiment (figures, CSV, manifest).
"""

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_EMPHASIS = re.compile(r"(?<![\w*])\*([^*\s](?:[^*]*[^*\s])?)\*(?![\w*])")
_RST_SPECIAL = re.compile(r"([\\*_|`<>\[\]])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_ENUMERATOR_START = re.compile(r"^(\(?[A-Za-z0-9#]{1,3}[.)]|[-*+]|\.\.)(\s|$)")


def _plain(text: str) -> str:
    """Markdown text without code spans or links as reStructuredText: ``*emphasis*`` kept, every
    other markup character escaped so that it shows as written."""
    out, pos = [], 0
    for m in _EMPHASIS.finditer(text):
        out.append(_RST_SPECIAL.sub(r"\\\1", text[pos : m.start()]))
        out.append("*" + _RST_SPECIAL.sub(r"\\\1", m.group(1)) + "*")
        pos = m.end()
    out.append(_RST_SPECIAL.sub(r"\\\1", text[pos:]))
    return "".join(out)


def inline(text: str) -> str:
    """One line of Markdown as reStructuredText: code spans become literals, links become links."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_links(text[pos : m.start()]))
        code = m.group(2).strip()
        out.append(f"``{code}``" if "``" not in code else _plain(code))
        pos = m.end()
    out.append(_links(text[pos:]))
    return "".join(out)


def _links(text: str) -> str:
    out, pos = [], 0
    for m in _LINK.finditer(text):
        out.append(_plain(text[pos : m.start()]))
        out.append(f"`{_plain(m.group(1))} <{m.group(2)}>`__")
        pos = m.end()
    out.append(_plain(text[pos:]))
    return "".join(out)


def _width(text: str) -> int:
    """Columns ``text`` takes (as docutils counts a title: wide characters twice, combining ones not)."""
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


def markdown_to_rst(lines: list[str]) -> str:
    """A demo's Markdown cell (its lines, without the leading ``# ``) as reStructuredText:
    headings (``#`` title, ``##`` section, ``###`` subsection), paragraphs, ``-`` lists, code
    spans, links and emphasis."""
    out: list[str] = []
    in_list = False
    for line in lines:
        heading = re.match(r"^(#{1,3})\s+(.*)$", line)
        if heading:
            title = inline(heading.group(2).strip())
            out += ["", title, "=-~"[len(heading.group(1)) - 1] * max(_width(title), 3), ""]
            in_list = False
        elif not line.strip():
            out.append("")
            in_list = False
        elif _LIST_ITEM.match(line):
            if out and out[-1] and not in_list:
                out.append("")
            out.append(inline(line))
            in_list = True
        else:
            if in_list and not line.startswith((" ", "\t")):
                out.append("")
                in_list = False
            text = inline(line)
            if (not out or not out[-1]) and not in_list:  # a paragraph's first line is never a list
                text = _ENUMERATOR_START.sub(r"\\\1\2", text, count=1)
            out.append(text)
    return "\n".join(out).strip("\n")


def cells(source: str) -> list[tuple[str, list[str]]]:
    """The cells of a percent-format script: ``("markdown", lines without "# ")`` or
    ``("code", lines)``; code before the first marker is a code cell."""
    out: list[tuple[str, list[str]]] = [("code", [])]
    for line in source.splitlines():
        if re.match(r"^# %%", line):
            out.append(("markdown" if "[markdown]" in line else "code", []))
        elif out[-1][0] == "markdown":
            if line.startswith("#"):
                out[-1][1].append(line[2:] if line.startswith("# ") else line[1:])
            elif line.strip():  # code right under a Markdown cell's comment lines: a code cell
                out.append(("code", [line]))
        else:
            out[-1][1].append(line)
    return [(kind, lines) for kind, lines in out if kind == "markdown" or any(s.strip() for s in lines)]


def gallery_script(source: str, script: str, name: str) -> str:
    """A demo's source as a sphinx-gallery script (reStructuredText docstring and text blocks)."""
    parts = cells(source)
    if not parts or parts[0][0] != "markdown" or not parts[0][1] or not parts[0][1][0].startswith("# "):
        raise ValueError(f"{script}: a demo must open with a Markdown cell whose first line is its '# title'")
    doc = markdown_to_rst(parts[0][1])
    doc += (
        f"\n\nThe script ``experiments/demos/{script}``; ``moreau reproduce {name}`` runs it as an "
        "experiment."
    )
    if '"""' in doc:
        raise ValueError(f"{script}: its first Markdown cell contains three double quotes")
    out = [f'r"""\n{doc}\n"""', ""]
    for kind, lines in parts[1:]:
        if kind == "markdown":
            text = markdown_to_rst(lines)
            out += ["# %%"] + [("# " + s).rstrip() for s in text.splitlines()] + [""]
        else:
            body = "\n".join(lines).strip("\n")
            # sphinx-gallery reads the comment lines right under a "# %%" as text: a code cell that
            # opens with a comment continues the previous code block instead
            out += ([] if body.lstrip().startswith("#") else ["# %%"]) + [body, ""]
    return "\n".join(out).rstrip() + "\n"


def write_sources(app: object = None) -> list[Path]:
    """Write the gallery's sources (one script per demo and the gallery's header) into
    ``docs/generated/demos/``; return the scripts' paths."""
    from moreau.experiments.demos import DEMOS, HERE

    target = DOCS / SOURCES
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / "README.txt").write_text(_HEADER, encoding="utf-8")
    written = []
    for name, (script, _) in DEMOS.items():
        path = target / script
        path.write_text(gallery_script((HERE / script).read_text(encoding="utf-8"), script, name), "utf-8")
        written.append(path)
    FIGURE_DIR.mkdir(parents=True, exist_ok=True)
    os.environ["MOREAU_DEMO_OUT"] = str(FIGURE_DIR)
    return written


_shown: dict[str, set[str]] = {}


def demo_figures(block: object, block_vars: dict, gallery_conf: dict) -> str:
    """sphinx-gallery image scraper: the PNG files the block added to the demo's ``FIGURES``."""
    from sphinx_gallery.scrapers import figure_rst

    shown = _shown.setdefault(block_vars["src_file"], set())
    images = []
    for path in block_vars["example_globals"].get("FIGURES", []) or []:
        path = Path(path)
        if path.suffix == ".png" and str(path) not in shown and path.is_file():
            shown.add(str(path))
            image = next(block_vars["image_path_iterator"])
            shutil.copyfile(path, image)
            images.append(image)
    return figure_rst(images, gallery_conf["src_dir"])


def setup(app):  # Sphinx's extension entry point
    # before sphinx-gallery (priority 500) reads its examples at builder-inited
    app.connect("builder-inited", write_sources, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
