"""What a run does differently from the paper, computed from the run's own parameters.

An experiment declares ``deviations(params) -> [line]`` (:class:`moreau.experiments._experiment.
Experiment`); each line says one way the run differs from the paper, ours first, the paper's value
after it (``N = 20 users (paper: 50)``).  :func:`moreau.experiments._sweep.run` writes the lines
into the three places a reader meets the numbers: the manifest (``deviations``), a comment header
of every CSV of the run (lines starting with ``# ``: read them with ``pandas.read_csv(path,
comment="#")``, or skip lines starting with ``#``), and the caption (the title block) of every
figure :func:`moreau.experiments._plot.save` writes while the experiment's ``finish`` runs.

:func:`differing` builds the lines of the settings that can be compared by value: a line only when
the run's value differs from the paper's, so ``--set n_clients=50`` removes that line.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence

__all__ = ["COMMENT", "captioned", "caption_lines", "differing", "csv_header"]

COMMENT = "# "

_CAPTION: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("moreau_deviations", default=())


def _text(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return "{" + ", ".join(_text(x) for x in v) + "}"
    return str(v)


def differing(params: Mapping, paper: Mapping[str, tuple[object, str]]) -> list[str]:
    """One line ``"{words} = {ours} (paper: {theirs})"`` per key of ``paper`` (``{key: (the paper's
    value, words)}``; a dotted key reads a nested table) whose value in ``params`` differs."""
    out = []
    for key, (theirs, words) in paper.items():
        ours: object = params
        for part in key.split("."):
            ours = ours[part]  # type: ignore[index]
        if ours != theirs:
            out.append(f"{words} = {_text(ours)} (paper: {_text(theirs)})")
    return out


@contextlib.contextmanager
def captioned(lines: Sequence[str]) -> Iterator[None]:
    """While inside, every figure saved by ``_plot.save`` carries ``lines`` in its caption."""
    token = _CAPTION.set(tuple(lines))
    try:
        yield
    finally:
        _CAPTION.reset(token)


def caption_lines() -> tuple[str, ...]:
    """The deviations the figures saved now must show (empty outside :func:`captioned`)."""
    return _CAPTION.get()


def csv_header(lines: Sequence[str]) -> str:
    """The comment header of a CSV (empty without deviations)."""
    if not lines:
        return ""
    return "".join(f"{COMMENT}{x}\n" for x in ("differs from the paper:", *(f"- {ln}" for ln in lines)))
