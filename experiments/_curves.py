r"""Curves over communication rounds: long-format rows, the band over seeds, last and best rounds.

Every experiment that runs an algorithm over rounds writes one row per round × method × seed ×
metric, ``{**grid, "round", "method", "seed", "metric", "value"}`` (``grid``: the columns that name
the problem or the setting, such as ``setting`` or ``R``), and documents its columns in the
manifest (:func:`columns`).  Figures draw, per method, the mean over seeds and a band whose kind
is a configuration key (``band``) and whose label says what it is (:func:`band_label`).

Last round against best round: :func:`selections` reports, per method and seed, the test accuracy
at the last round and at the best round, chosen either on the test set itself (``best round on
test``: the test set chose the round, so the number *leaks* it and is optimistic) or on a
validation split held out of each client's training data (``best round on validation``: an
honest model selection).  pFedMe's code reports the best round on test; we report all three.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = [
    "BANDS",
    "COLUMNS",
    "LAST",
    "BEST_TEST",
    "BEST_VAL",
    "band",
    "band_label",
    "check_band",
    "columns",
    "curve",
    "long_rows",
    "selections",
    "SELECTION_COLUMNS",
]

COLUMNS = {
    "round": "communication round t (0: the starting model, before any round)",
    "method": "the algorithm and the model evaluated (e.g. pFedMe-PM: pFedMe's personalised models)",
    "seed": "seed index: a fresh data set (and split) per seed, shared by every method of that seed",
    "metric": "what value measures (the metrics listed under 'metrics')",
    "value": "the metric's value at that round for that method and seed",
}

#: band kind -> (how it is computed, the words of the figure's label)
BANDS = {
    "std": "mean ± 1 standard deviation over seeds",
    "ci95": "95 % t interval of the mean over seeds",
    "minmax": "min–max over seeds",
}

LAST = "last round"
BEST_TEST = "best round on test (leaks the test set)"
BEST_VAL = "best round on validation"

SELECTION_COLUMNS = {
    "method": COLUMNS["method"],
    "seed": COLUMNS["seed"],
    "selection": f"which round is reported: '{LAST}'; '{BEST_TEST}': the round of highest test accuracy, chosen "
    "on the test set itself, so the number is optimistic; "
    f"'{BEST_VAL}': the round of highest accuracy on a validation split held out of each client's "
    "training data (not trained on): an honest choice",
    "round": "the round selected",
    "test_accuracy": "test accuracy (%) of the method's models at that round",
    "validation_accuracy": "validation accuracy (%) at that round (empty without a validation split)",
}


def check_band(name: str, kind) -> str:
    """``kind`` if it names a band, else a one-line ``ValueError`` naming the experiment."""
    if kind not in BANDS:
        raise ValueError(f"{name}: band must be one of {', '.join(BANDS)} (got {kind!r})")
    return kind


def long_rows(metrics: dict, *, method: str, seed: int, rounds=None, **grid) -> list:
    """One row per round and metric: ``metrics`` ``{metric: values (T,)}`` at ``rounds`` (default
    ``0..T-1``); ``grid`` columns first.  NaN values (a metric undefined at a round) are left out."""
    out = []
    for metric, values in metrics.items():
        values = np.asarray(values, dtype=float).reshape(-1)
        ts = np.arange(values.size) if rounds is None else np.asarray(rounds)
        out += [
            {
                **grid,
                "round": int(t),
                "method": method,
                "seed": int(seed),
                "metric": metric,
                "value": float(v),
            }
            for t, v in zip(ts, values, strict=True)
            if not math.isnan(v)
        ]
    return out


def columns(metrics: dict, grid: dict | None = None) -> dict:
    """The manifest's dictionary of a long-format CSV: the grid columns, the five columns, and
    ``metrics`` ``{metric: meaning}``."""
    return {**(grid or {}), **COLUMNS, "metrics": dict(metrics)}


def curve(rows, metric, method, **match):
    """``(rounds (T,), values (S, T), seeds)`` of one method's metric, seeds in increasing order,
    the rounds every seed has."""
    sel = [
        r
        for r in rows
        if r.get("metric") == metric and r["method"] == method and all(r[k] == v for k, v in match.items())
    ]
    seeds = sorted({int(r["seed"]) for r in sel})
    by = {(int(r["seed"]), int(r["round"])): float(r["value"]) for r in sel}
    ts = sorted(set.intersection(*[{t for s2, t in by if s2 == s} for s in seeds])) if seeds else []
    values = np.array([[by[(s, t)] for t in ts] for s in seeds], dtype=float).reshape(len(seeds), len(ts))
    return np.array(ts, dtype=int), values, seeds


def band(values, kind: str, log: bool = False):
    """``(mean, low, high)`` over the seeds (axis 0) of ``values`` ``(S, T)``; one seed: no band.
    ``log``: the same on the logarithms (the geometric mean, a band symmetric on a log axis; values
    floored at the smallest positive float), for metrics drawn on a log axis."""
    if log:
        logs = np.log(np.maximum(np.asarray(values, dtype=float), np.finfo(float).tiny))
        return tuple(np.exp(b) for b in band(logs, kind))
    v = np.asarray(values, dtype=float)
    mean = v.mean(axis=0)
    S = v.shape[0]
    if S < 2:
        return mean, mean, mean
    if kind == "std":
        half = v.std(axis=0, ddof=1)
    elif kind == "ci95":
        half = stats.t.ppf(0.975, S - 1) * v.std(axis=0, ddof=1) / math.sqrt(S)
    else:
        return mean, v.min(axis=0), v.max(axis=0)
    return mean, mean - half, mean + half


def band_label(kind: str, seeds: int, log: bool = False) -> str:
    """The figure's words for the band: ``lines: mean over 5 seeds; band: mean ± 1 standard ...``;
    ``log``: some panels are on log axes, where mean and band are those of the logarithms."""
    if seeds < 2:
        return f"lines: {seeds} seed (no band)"
    text = f"lines: mean over {seeds} seeds; band: {BANDS[kind]}"
    return text + (" (on log axes: of the logarithms, the line a geometric mean)" if log else "")


def selections(rows, methods, *, test="test_accuracy", validation="validation_accuracy", **match) -> list:
    """Per method and seed, the rows ``{method, seed, selection, round, test_accuracy,
    validation_accuracy}`` of the last round, the best round on test (leaks it) and, when the
    rows have ``validation`` values, the best round on validation.  Ties: the earliest round."""
    out = []
    for method in methods:
        ts, acc, seeds = curve(rows, test, method, **match)
        if not seeds:
            continue
        vts, val, _ = curve(rows, validation, method, **match)
        has_val = vts.size == ts.size and vts.size > 0 and np.array_equal(vts, ts)
        for k, s in enumerate(seeds):
            picks = [(LAST, ts.size - 1), (BEST_TEST, int(np.argmax(acc[k])))]
            if has_val:
                picks.append((BEST_VAL, int(np.argmax(val[k]))))
            for what, j in picks:
                out.append(
                    {
                        **match,
                        "method": method,
                        "seed": s,
                        "selection": what,
                        "round": int(ts[j]),
                        "test_accuracy": float(acc[k, j]),
                        "validation_accuracy": float(val[k, j]) if has_val else None,
                    }
                )
    return out
