"""Sphinx configuration of moreau's documentation site.

Build (the ``docs`` extra: ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs build/docs

Why Sphinx, and what builds what: docs/development.md ("The documentation site"). No extension
here reaches the network (no intersphinx): the site builds offline.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import moreau  # noqa: E402  (after the path of the local extensions: conf.py is run as a script)

project = "moreau"
author = "the moreau authors"
copyright = "the moreau authors"
version = release = moreau.__version__

# the index of pages (docs/README.md, read on GitHub too) is the site's root page
root_doc = "README"
extensions = [
    "myst_parser",  # the Markdown pages, as they are
    "sphinx.ext.autodoc",  # the API reference, from the modules' docstrings (the real modules imported)
    "sphinx.ext.napoleon",  # numpy-style "Parameters" / "Returns" sections
    "sphinx.ext.mathjax",  # ".. math::" in the docstrings
    "sphinx_gallery.gen_gallery",  # the demos, executed, with their figures
    "moreau_gallery",  # docs/_ext: the demos as gallery scripts (before sphinx-gallery reads them)
    "moreau_findings",  # docs/_ext: the findings page, from a `moreau check --json` run at build time
    "moreau_api",  # docs/_ext: a re-exported constant's description, read where it is defined
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = [
    "examples",  # docs/examples/*.py: files the pages' examples import, not pages
    "_ext",
    "generated/demos",  # the gallery's sources (moreau_gallery writes them); its pages are generated/gallery
    "generated/gallery/*.ipynb",
    "**/.ipynb_checkpoints",
]

# Markdown: "page.md#a-heading" links resolve to the heading (levels 1-3), as on GitHub
myst_heading_anchors = 3

# API reference: members in the order of the module's __all__; signatures without the module path
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
add_module_names = False
# the API pages document every name of __all__ (":undoc-members:"; tests/test_docs_site.py checks that
# each has a description); a constant's value is not shown (some are large tables: DEVIATIONS)
autodoc_default_options = {"no-value": True}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

sphinx_gallery_conf = {
    "examples_dirs": "generated/demos",
    "gallery_dirs": "generated/gallery",
    "filename_pattern": r".*\.py$",  # run every demo (the default runs only plot_*.py)
    "image_scrapers": ("moreau_gallery.demo_figures",),  # the demos save and close their figures
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "write_computation_times": False,  # no sg_execution_times page: sphinx-gallery logs the times
    "abort_on_example_error": True,  # a demo that raises fails the build
    "remove_config_comments": True,
    "show_signature": False,
}

html_theme = "alabaster"
html_title = f"moreau {release}"
html_static_path: list[str] = []
html_show_sourcelink = False


def _index_redirect(app, exception):
    """``index.html``, which a browser or a web server opens first, sends the reader to the root page."""
    if exception is None and app.builder.format == "html":
        page = Path(app.outdir) / "index.html"
        page.write_text(
            '<!DOCTYPE html>\n<meta charset="utf-8">\n<title>moreau</title>\n'
            '<meta http-equiv="refresh" content="0; url=README.html">\n'
            '<a href="README.html">moreau\'s documentation</a>\n',
            encoding="utf-8",
        )


def setup(app):  # Sphinx runs a conf.py's setup() like an extension's
    app.connect("build-finished", _index_redirect)
