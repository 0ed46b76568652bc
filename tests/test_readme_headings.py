"""Issue 31: the README is short and nothing of the old one is lost.

``tests/data/readme_headings_v0.4.txt`` lists every section heading of the 0.4 README (all levels,
outside code blocks), saved before it was cut down; each must still be a heading of the README or of
a page in ``docs/``.  The README's links into ``docs/`` must reach an existing page and, with an
anchor, a heading of that page (the site's build checks the links between the pages themselves)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
OLD_HEADINGS = Path(__file__).resolve().parent / "data" / "readme_headings_v0.4.txt"
MAX_LINES = 250


def _normalise(text: str) -> str:
    """Whitespace and backticks only: the heading's words must survive as they were."""
    return " ".join(text.replace("`", "").split())


def headings(text: str) -> list[str]:
    """The Markdown headings (``#`` to ``######``) outside fenced code blocks, without their ``#``."""
    found, fence = [], None
    for line in text.splitlines():
        m = re.match(r"\s*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence is None:
            h = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if h:
                found.append(h.group(1))
    return found


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading, which MyST's ``myst_heading_anchors`` reproduces."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower().replace(" ", "-"))


def _homes() -> dict[str, list[str]]:
    homes: dict[str, list[str]] = {}
    for path in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for h in headings(path.read_text(encoding="utf-8")):
            homes.setdefault(_normalise(h), []).append(path.relative_to(ROOT).as_posix())
    return homes


def test_the_heading_parser_skips_code_blocks_and_keeps_every_level():
    text = "# a\n```python\n# not a heading\n```\n#### b `c`\n~~~\n## no\n~~~\ntext # no\n"
    assert headings(text) == ["a", "b `c`"]


def test_the_old_readme_headings_file_is_there():
    old = [line for line in OLD_HEADINGS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(old) == len(set(old)) >= 10  # the 0.4 README had 14 section headings


@pytest.mark.parametrize(
    "heading",
    [line for line in OLD_HEADINGS.read_text(encoding="utf-8").splitlines() if line.strip()],
)
def test_every_old_readme_heading_has_a_home(heading):
    assert _normalise(heading) in _homes(), (
        f"the old README's section {heading!r} is no heading of README.md or of any docs/*.md"
    )


def test_the_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines; at most {MAX_LINES} (the rest belongs in docs/)"


def _readme_links() -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))


def test_the_readme_links_into_docs():
    assert sum(link.startswith("docs/") for link in _readme_links()) >= 10


@pytest.mark.parametrize("link", sorted({link for link in _readme_links() if "://" not in link}))
def test_every_readme_link_reaches_a_file_and_its_heading(link):
    path, _, anchor = link.partition("#")
    target = ROOT / path
    assert target.is_file(), f"README.md links to {path}, which does not exist"
    if anchor:
        slugs = {_slug(h) for h in headings(target.read_text(encoding="utf-8"))}
        assert anchor in slugs, f"README.md links to {link}: no heading of {path} has the anchor {anchor!r}"
