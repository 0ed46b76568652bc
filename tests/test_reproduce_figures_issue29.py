"""Issue 29's figure fixes: accuracy error bars clipped to [0, 100] (and said so), plain numbers on
log axes, legend titles wrapped to the figure's width."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from moreau.experiments._curve_figures import CLIPPED, legend, selection_bars
from moreau.experiments._curves import LAST
from moreau.experiments._plot import figure, plain_log_ticks


def _table(values):
    return [{"method": "m", "seed": s, "selection": LAST, "test_accuracy": v} for s, v in enumerate(values)]


def _bar_extent(ax):
    """(lowest, highest) y of the error bars drawn on ``ax``."""
    ys = [seg[:, 1] for c in ax.collections for seg in c.get_segments()]
    return float(min(y.min() for y in ys)), float(max(y.max() for y in ys))


def test_wide_intervals_are_clipped_to_the_accuracy_range_and_labelled():
    fig, ax = plt.subplots()
    handles = selection_bars(ax, _table([5.0, 95.0]), ["m"], "ci95")  # t interval over 2 seeds: ±570
    lo, hi = _bar_extent(ax)
    assert lo >= 0.0 and hi <= 100.0 and hi == 100.0
    assert CLIPPED in [h.get_label() for h in handles]
    plt.close(fig)


def test_narrow_intervals_are_not_clipped_nor_labelled():
    fig, ax = plt.subplots()
    handles = selection_bars(ax, _table([50.0, 52.0, 51.0]), ["m"], "std")
    lo, hi = _bar_extent(ax)
    assert np.isclose(lo, 51.0 - 1.0) and np.isclose(hi, 51.0 + 1.0)  # mean ± 1 std, std = 1
    assert CLIPPED not in [h.get_label() for h in handles]
    plt.close(fig)


def test_log_axis_ticks_are_plain_numbers():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [110.0, 140.0])
    ax.set_yscale("log")
    plain_log_ticks(ax)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels(minor=True) + ax.get_yticklabels()]
    shown = [s for s in labels if s]
    assert shown, "no tick labelled at all"
    assert all("10^" not in s and "times" not in s and "×" not in s for s in shown), shown
    assert all(float(s) > 0 for s in shown)
    plt.close(fig)


def test_a_long_legend_title_stays_inside_the_figure(tmp_path):
    fig, ax = figure(2, 1, width=6.8)
    (line,) = ax[0][0].plot([0, 1], [0, 1], label="a")
    legend(fig, [line], "lines: mean over 2 seeds; band: " + "a long description " * 20)
    fig.savefig(tmp_path / "f.png")
    box = fig.legends[0].get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    plt.close(fig)
