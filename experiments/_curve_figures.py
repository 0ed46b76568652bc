r"""Drawing curves over rounds (pFedMe Figs. 3–4 style) and the last / best-round bars.

Every curve is the mean over seeds with a shaded band whose kind the caller chooses
(:data:`moreau.experiments._curves.BANDS`) and whose words go into the legend; the last round and
the best rounds (on validation; on test, which leaks it) are marked on the accuracy curves and
drawn side by side as bars, on an axis fitted to the data (not from 0), the paper's values marked
in every panel.
"""

from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ._curves import BEST_TEST, BEST_VAL, LAST, band, curve
from ._plot import plain_log_ticks, wrap

__all__ = [
    "curves_figure",
    "draw",
    "layered",
    "legend",
    "mark_selected",
    "method_handles",
    "selection_bars",
    "selection_handles",
]

MARKERS = {LAST: "o", BEST_VAL: "s", BEST_TEST: "^"}

#: an accuracy (%) lies in [0, 100]: its bands and error bars are clipped to it (a t interval over
#: two seeds can reach far outside), and the figure says so
ACCURACY_RANGE = (0.0, 100.0)
CLIPPED = "error bars clipped to the accuracy range [0, 100] %"


#: dash patterns by position: a curve drawn later must not hide an equal one drawn before it
_DASHES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)))


def layered(k: int) -> dict:
    """Line style of the k-th curve of a panel: later curves dashed and thinner, so that curves that
    coincide (methods that reach the same point) stay visible under each other."""
    return {"linestyle": _DASHES[k % len(_DASHES)], "linewidth": max(1.7 - 0.2 * k, 0.6)}


def draw(ax, rows, metric, methods, kind, *, log=False, **match) -> int:
    """One mean curve and band per method (colour ``C{k}`` by position in ``methods``; on a ``log``
    axis the mean and band of the logarithms); the number of seeds drawn."""
    S = 0
    for k, method in enumerate(methods):
        ts, v, seeds = curve(rows, metric, method, **match)
        if not seeds:
            continue
        S = max(S, len(seeds))
        mean, lo, hi = band(v, kind, log)
        if metric.endswith("accuracy"):  # a band is drawn inside the metric's range (the legend says so)
            lo, hi = np.clip(lo, *ACCURACY_RANGE), np.clip(hi, *ACCURACY_RANGE)
        ax.plot(ts, mean, color=f"C{k}", label=method, **layered(k))
        ax.fill_between(ts, lo, hi, color=f"C{k}", alpha=0.18, linewidth=0)
    if log:
        ax.set_yscale("log")
        plain_log_ticks(ax)
    return S


def _mean_of(table, method, what, key):
    vals = [r[key] for r in table if r["method"] == method and r["selection"] == what]
    return float(np.mean(vals)) if vals else None


def mark_selected(ax, table, methods) -> None:
    """On an accuracy panel: per method, the mean (over seeds) selected round and its mean test
    accuracy for the last round (●), the best round on validation (■) and on test (▲, leaks it)."""
    for k, method in enumerate(methods):
        for what, marker in MARKERS.items():
            t, a = _mean_of(table, method, what, "round"), _mean_of(table, method, what, "test_accuracy")
            if t is not None:
                ax.plot(
                    [t],
                    [a],
                    marker=marker,
                    color=f"C{k}",
                    markeredgecolor="k",
                    markeredgewidth=0.4,
                    markersize=4,
                    linestyle="none",
                    zorder=5,
                )


def selection_handles() -> list:
    """Legend entries of the markers of :func:`mark_selected`."""
    words = {
        LAST: "last round",
        BEST_VAL: "best round on validation",
        BEST_TEST: "best round on test (leaks test)",
    }
    return [
        Line2D([], [], marker=m, color="0.5", markeredgecolor="k", linestyle="none", label=words[w])
        for w, m in MARKERS.items()
    ]


def legend(fig, handles, title, ncol=4) -> None:
    """One legend for the whole figure, below the panels, titled with what the lines and band are
    (the title wrapped to the figure's width)."""
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=ncol,
        title=wrap(title, fig, 6),
        title_fontsize=6,
        fontsize=6,
    )


def method_handles(methods) -> list:
    """Legend entries of the methods' curves (colour ``C{k}``)."""
    return [Line2D([], [], color=f"C{k}", label=m) for k, m in enumerate(methods)]


def selection_bars(ax, table, methods, kind, *, paper=None, paper_label="paper") -> list:
    """Grouped bars per method: last round, best round on validation, best round on test (hatched:
    leaks the test set); error bars the band over seeds; the paper's values as stars; the y axis
    fitted to the data (bars start at the axis' lower edge, not at 0).  Returns the legend entries."""
    whats = [w for w in (LAST, BEST_VAL, BEST_TEST) if any(r["selection"] == w for r in table)]
    width = 0.8 / len(whats)
    x = np.arange(len(methods))
    lows, highs, clipped = [], [], False
    for j, what in enumerate(whats):
        means, err = [], []
        for method in methods:
            v = np.array(
                [
                    [
                        r["test_accuracy"]
                        for r in sorted(table, key=lambda r: r["seed"])
                        if r["method"] == method and r["selection"] == what
                    ]
                ]
            ).T  # (S, 1)
            mean, lo, hi = band(v, kind) if v.size else (np.array([np.nan]),) * 3
            clipped |= bool(lo[0] < ACCURACY_RANGE[0] or hi[0] > ACCURACY_RANGE[1])
            lo, hi = np.clip(lo, *ACCURACY_RANGE), np.clip(hi, *ACCURACY_RANGE)
            means.append(mean[0])
            err.append((mean[0] - lo[0], hi[0] - mean[0]))
            lows.append(lo[0])
            highs.append(hi[0])
        pos = x + (j - (len(whats) - 1) / 2) * width
        ax.bar(
            pos,
            means,
            width * 0.95,
            yerr=np.array(err).T,
            color=[f"C{k}" for k in x],
            capsize=1.5,
            alpha=(0.9, 0.6, 0.35)[j],
            hatch="////" if what == BEST_TEST else None,
            edgecolor="k",
            linewidth=0.3,
            error_kw={"linewidth": 0.7},
        )
    vals = [v for v in lows + highs if np.isfinite(v)]
    if paper:
        ax.plot(x, [paper.get(m, np.nan) for m in methods], "k*", markersize=6, zorder=6)
        vals += [paper[m] for m in methods if m in paper]
    lo, hi = min(vals), max(vals)
    pad = max(0.5, 0.08 * (hi - lo))
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xticks(x, methods, rotation=15)
    handles: list[Artist] = [
        Patch(facecolor="0.55", alpha=a, hatch=h, edgecolor="k", linewidth=0.3, label=w)
        # one style per plotted quantity: there are at most three, and a figure may show fewer
        for w, a, h in zip(whats, (0.9, 0.6, 0.35), (None, None, "////"), strict=False)
    ]
    if paper:
        handles.append(Line2D([], [], marker="*", color="k", linestyle="none", label=paper_label))
    if clipped:
        handles.append(Line2D([], [], color="none", label=CLIPPED))
    return handles


def curves_figure(
    rows, panels, metrics, methods, kind, out, stem, quick, *, table=None, suptitle=None
) -> list:
    """A grid of curves over rounds: one row of panels per ``(match, title)`` of ``panels`` (the
    rows of ``rows`` matching ``match``), one column per ``(metric, label, log)`` of ``metrics``
    (columns without data are left out); the selected rounds of ``table`` marked on the
    ``test_accuracy`` panels; one legend below.  Returns the paths written."""
    from ._curves import band_label
    from ._plot import figure, save

    metrics = [mt for mt in metrics if any(r.get("metric") == mt[0] for r in rows)]
    fig, ax = figure(
        len(metrics),
        len(panels),
        width=6.8 if len(metrics) > 1 else 3.4,
        aspect=0.75 * max(len(metrics), 2) / 2,
    )
    S = 0
    for i, (match, title) in enumerate(panels):
        for j, (metric, label, log) in enumerate(metrics):
            a = ax[i][j]
            S = max(S, draw(a, rows, metric, methods, kind, log=log, **match))
            if metric == "test_accuracy" and table is not None:
                mark_selected(a, [r for r in table if all(r.get(k) == v for k, v in match.items())], methods)
            a.set(xlabel="communication round t", ylabel=label, title=title if j == 0 else label)
    if suptitle:
        fig.suptitle(suptitle, fontsize=7)
    handles = method_handles(methods) + (selection_handles() if table is not None else [])
    words = band_label(kind, S, any(log for _, _, log in metrics)) + (
        "; accuracy bands clipped to [0, 100] %" if any(m.endswith("accuracy") for m, _, _ in metrics) else ""
    )
    words += (
        "; markers: mean over seeds of the selected round and its test accuracy" if table is not None else ""
    )
    legend(fig, handles, words, ncol=4)
    return save(fig, out, stem, quick)
