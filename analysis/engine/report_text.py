"""The text report's line shapes: numbers as ``moreau check`` prints them, a statement's place in
its paper in 26 columns, and lines wrapped within the report's width (nothing cut)."""

from __future__ import annotations

import re
import textwrap

import numpy as np

__all__ = ["WIDTH"]


WIDTH = 119


def _num(x):
    """A number for a counterexample: non-finite values shown as they are (inf, nan)."""
    return f"{x:.4g}"


def _short(source):
    """The statement's place in its paper (the id names the paper): "Theorem 2 (a), (b)"."""
    where = source.split(", ", 1)[-1] if ", " in source else source
    if len(where) <= 26:
        return where
    cut = where[:25]  # at a word boundary when there is one, marked with an ellipsis
    head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return head.rstrip(" ,;(") + "…"


def _wrap(line, indent=22):
    """``line`` within WIDTH columns: a longer one continues on lines indented like the report's continuation
    lines (nothing is cut: the qualifiers and parameters at its end are part of what it says)."""
    if len(line) <= WIDTH:
        return line
    body = line.lstrip(" ")
    body = re.sub(r"\[[^\]]*\]", lambda m: m.group().replace(" ", "\0"), body)  # an array stays on one line
    return "\n".join(
        textwrap.wrap(
            body,
            WIDTH,
            initial_indent=line[: len(line) - len(body)],
            subsequent_indent=" " * indent,
            break_on_hyphens=False,
        )
    ).replace("\0", " ")


def _fmt(x):
    return "-" if x is None or not np.isfinite(x) else f"{x:.4g}"
