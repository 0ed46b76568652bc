"""Figure conventions shared by the experiments: a paper's column width, PNG and PDF.

Headless (the CLI, the tests, a script) the figures are drawn with Agg and closed once saved.
Inside a Jupyter kernel (a demo opened as a notebook) the kernel's backend is kept (inline,
ipympl, ...) and a saved figure stays open, so that the notebook displays it.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import matplotlib

#: matplotlib backends that only write files: in a kernel set to one of them nothing is displayed
_FILE_ONLY = {"agg", "cairo", "pdf", "pgf", "ps", "svg", "template"}


def shows_figures() -> bool:
    """Whether figures are displayed where this runs: inside a Jupyter (IPython) kernel whose
    matplotlib backend is not a file-only one (the inline backend ipykernel selects, ipympl, a GUI).
    False on the command line, in scripts and in the tests: there Agg is forced and figures closed."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    getter = getattr(matplotlib.rcParams, "_get_backend_or_none", None)  # no backend resolution
    backend = getter() if getter is not None else matplotlib.rcParams.get("backend")
    return not isinstance(backend, str) or backend.lower() not in _FILE_ONLY


def close_unless_shown(fig) -> None:
    """Close ``fig`` (saved) unless a notebook is to display it: the inline backend shows the
    figures still open at the end of the cell, and closes them itself."""
    if not shows_figures():
        plt.close(fig)


if not shows_figures():
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import LogFormatter  # noqa: E402

from ._deviations import caption_lines  # noqa: E402  (after the backend is chosen, as the others)
from ._verdicts import QUICK_NOTE  # noqa: E402

__all__ = ["figure", "plain_log_ticks", "save", "theory", "wrap", "COLUMN_WIDTH"]

COLUMN_WIDTH = 3.4  # inches: one column of a two-column paper
_RC = {
    "font.size": 7,
    "axes.titlesize": 7,
    "axes.labelsize": 7,
    "legend.fontsize": 6,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
    "lines.linewidth": 1.1,
    "lines.markersize": 3,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.framealpha": 0.85,
    "savefig.dpi": 200,
}


def figure(ncols=1, nrows=1, *, width=None, aspect=0.75):
    """``(fig, axes)`` sized for a paper: ``width`` inches (default one column per panel, max two)."""
    width = width or COLUMN_WIDTH * min(ncols, 2)
    previous = {k: plt.rcParams[k] for k in _RC}
    plt.rcParams.update(_RC)  # the style holds while this figure is drawn; save() restores the caller's
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(width, width / ncols * aspect * nrows), squeeze=False, constrained_layout=True
    )
    fig._moreau_rc = previous
    return fig, axes


class _PlainLog(LogFormatter):
    """The ticks matplotlib's log formatter labels, written as plain numbers (``30``, ``0.25``,
    ``122.5``) instead of ``3 × 10¹`` or ``1.225 × 10²``."""

    def __call__(self, x, pos=None):
        text = super().__call__(x, pos)
        return f"{x:.4g}" if text else ""


def plain_log_ticks(ax, axis: str = "y") -> None:
    """Label a log ``axis`` of ``ax`` (``"x"``, ``"y"`` or ``"both"``) with plain numbers, minor
    ticks included where matplotlib labels them (an axis spanning less than a decade or two)."""
    for a in (ax.xaxis, ax.yaxis) if axis == "both" else (getattr(ax, f"{axis}axis"),):
        a.set_major_formatter(_PlainLog(labelOnlyBase=False))
        a.set_minor_formatter(_PlainLog(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def wrap(text: str, fig, fontsize: float = 6) -> str:
    """``text`` broken into lines that fit the width of ``fig`` at ``fontsize`` points."""
    return "\n".join(textwrap.wrap(text, max(40, int(fig.get_figwidth() * 130 / fontsize))))


def theory(ax, x, y, label, **kw):
    """A theory curve: dashed, labelled with its formula."""
    return ax.plot(x, y, linestyle="--", label=label, **kw)


def save(fig, out, stem, quick=False) -> list:
    """Write ``stem.png`` and ``stem.pdf`` into ``out``; return the paths.  A ``quick`` run's
    figure says so in its title (``quick: not the paper's size``); while an experiment's ``finish``
    runs, the title block also lists how the run differs from the paper
    (:func:`moreau.experiments._deviations.caption_lines`), wrapped to the figure's width."""
    out = Path(out)
    devs = caption_lines()
    if quick or devs:
        old = fig._suptitle.get_text() if fig._suptitle is not None else ""
        size = fig._suptitle.get_fontsize() if old else 7
        text = f"{old} ({QUICK_NOTE})" if old and quick else (old or QUICK_NOTE) if quick else old
        if devs:
            text += ("\n" if text else "") + wrap("differs from the paper: " + "; ".join(devs), fig, size)
        fig.suptitle(text, fontsize=size, color="C3" if quick else "k")
    paths = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, metadata={"Creator": "moreau reproduce"} if p.suffix == ".pdf" else None)
    close_unless_shown(fig)
    plt.rcParams.update(getattr(fig, "_moreau_rc", {}))
    return paths
