r"""Verdicts on what a figure claims: ``holds``, ``fails`` or ``undecided``, in ``moreau check``'s words.

A claim that compares methods or settings across seeds is one or more *comparisons*, each a
difference oriented so that a positive value supports the claim (``pFedMe-PM − Per-FedAvg`` for
"pFedMe-PM ahead of Per-FedAvg"; ``1.5·LocalTrain − adaptive`` for "adaptive within 1.5× of
LocalTrain"; a claim "A ≥ B" with a stated tie margin δ is ``A − B + δ``).  Each comparison gets a
two-sided t interval for its mean:

* **paired** (:func:`paired`): the differences of the same seed (the same data set for both
  sides), :math:`\bar d \pm t_{S-1}\, s_d/\sqrt S`;
* **unpaired** (:func:`welch`): two independent samples (levels drawn from their own data sets),
  :math:`a\bar x - b\bar y` with Welch's standard error and Satterthwaite's degrees of freedom.

Several comparisons (an ordering, "at every level") are controlled together by Holm's step-down
method at family level ``level`` (default 95 %): the p-values ascending, the comparison of rank j
(from 0) is tested at :math:`\alpha/(k - j)` until the first that is not rejected; its interval
is drawn at that level, and every later one at the level where the procedure stopped, so that a
comparison's interval excludes 0 exactly when Holm rejects it.  A comparison *holds* when its
interval lies above 0 and *fails* when it lies below 0; the claim holds when every comparison
holds, fails when one fails, and is undecided otherwise (also with fewer than 2 seeds, said in
its reason).  (For "holds" of a conjunction the correction is conservative; it is what keeps
"fails" — some comparison reversed — at the family level.)

Exact claims (deterministic numbers: closed forms, expectations, one fixed problem) keep their
rule and say ``"method": "exact"``, ``"interval": None``.

References: S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J.
Statist. 6 (1979); B. L. Welch, Biometrika 34 (1947).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from moreau.analysis.engine.verdict import FAILS, HOLDS, SCHEMA_VERSION, UNDECIDED

__all__ = [
    "FAILS",
    "HOLDS",
    "LEVEL",
    "QUICK_NOTE",
    "SCHEMA_VERSION",
    "UNDECIDED",
    "by_seed",
    "decide",
    "exact",
    "holm",
    "line",
    "paired",
    "welch",
]

LEVEL = 0.95
QUICK_NOTE = "quick: not the paper's size"


def exact(claim: str, holds, value=None, rule: str = "") -> dict:
    """The verdict on a claim about deterministic numbers (no sampling error, no interval);
    ``rule``: what ``holds`` tested, when the claim's text does not say it."""
    return {
        "claim": claim,
        "verdict": HOLDS if bool(holds) else FAILS,
        "reason": rule,
        "interval": None,
        "level": None,
        "method": "exact",
        "seeds": None,
        "value": value,
    }


def holm(p) -> np.ndarray:
    """Holm-adjusted p-values of ``p`` (k,), in the input's order: the sorted p-values times
    k, k − 1, …, 1, made non-decreasing, capped at 1."""
    p = np.asarray(p, dtype=float)
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((p.size - np.arange(p.size)) * p[order]))
    out = np.empty_like(adj)
    out[order] = adj
    return out


def by_seed(rows, key, **match) -> np.ndarray:
    """``key`` of the rows matching ``match``, one value per seed in increasing seed."""
    sel = sorted((r for r in rows if all(r[k] == v for k, v in match.items())), key=lambda r: r["seed"])
    return np.array([float(r[key]) for r in sel])


def paired(claim, diffs, names, *, value=None, level=LEVEL, kind="paired t", units="") -> dict:
    """The verdict on a claim from per-seed differences ``diffs`` (k, S): comparison j's difference
    on seed s (positive supports the claim), both sides computed on the same data set."""
    d = np.asarray(diffs, dtype=float)
    d = d.reshape(1, -1) if d.ndim == 1 else d
    S = d.shape[1]
    if S < 2:
        return _too_few(claim, S, len(names), kind, level, value)
    est, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(S)
    method = f"{kind} over {S} seeds" + _family(len(names))
    return decide(
        claim,
        names,
        est,
        se,
        np.full(len(names), S - 1.0),
        level=level,
        method=method,
        seeds=S,
        value=value,
        units=units,
    )


def welch(claim, pairs, names, *, value=None, level=LEVEL, units="") -> dict:
    """The verdict on a claim from independent samples: ``pairs`` holds ``(x, y, a, b)`` per
    comparison, whose difference is ``a·mean(x) − b·mean(y)`` (positive supports the claim)."""
    est, se, df, sizes = [], [], [], []
    for x, y, a, b in pairs:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        sizes += [x.size, y.size]
        if min(x.size, y.size) < 2:
            return _too_few(claim, min(sizes), len(names), "Welch t", level, value)
        vx, vy = a * a * x.var(ddof=1) / x.size, b * b * y.var(ddof=1) / y.size
        est.append(a * x.mean() - b * y.mean())
        se.append(math.sqrt(vx + vy))
        df.append(
            (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1)) if vx + vy > 0 else x.size - 1.0
        )
    S = min(sizes)
    method = f"Welch t over {S} seeds per level (unpaired: each level its own data sets)" + _family(
        len(names)
    )
    return decide(
        claim,
        names,
        np.array(est),
        np.array(se),
        np.array(df),
        level=level,
        method=method,
        seeds=S,
        value=value,
        units=units,
    )


def decide(claim, names, est, se, df, *, level=LEVEL, method="", seeds=None, value=None, units="") -> dict:
    """Holm over the comparisons ``names`` with estimates ``est``, standard errors ``se`` and
    degrees of freedom ``df`` (each (k,)): the claim's verdict with every comparison's interval."""
    est, se, df = (np.asarray(a, dtype=float) for a in (est, se, df))
    k, alpha = len(names), 1.0 - level

    def out(verdict, reason, interval, **more):
        return {
            "claim": claim,
            "verdict": verdict,
            "reason": reason,
            "interval": interval,
            "level": level,
            "method": method,
            "seeds": seeds,
            "value": value,
            **more,
        }

    if not (np.all(np.isfinite(est)) and np.all(np.isfinite(se))):
        return out(UNDECIDED, "a compared value is not finite (a diverged run?)", None)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(est) / np.where(se > 0, se, 1.0), np.where(est != 0, np.inf, 0.0))
    p = 2 * stats.t.sf(t, df)
    adj, order = holm(p), np.argsort(p, kind="stable")
    stop = next((j for j in range(k) if adj[order[j]] > alpha), k)  # the first rank Holm does not reject
    comps = []
    for j, i in enumerate(order):
        a_j = alpha / (k - min(j, stop))
        q = stats.t.ppf(1 - a_j / 2, df[i]) if se[i] > 0 else 0.0
        lo, hi = float(est[i] - q * se[i]), float(est[i] + q * se[i])
        v = UNDECIDED if j >= stop else (HOLDS if est[i] > 0 else FAILS)
        comps.append(
            (
                i,
                {
                    "comparison": names[i],
                    "estimate": float(est[i]),
                    "interval": [lo, hi],
                    "level": 1 - a_j,
                    "p": float(p[i]),
                    "p_holm": float(adj[i]),
                    "verdict": v,
                },
            )
        )
    ordered = [c for _, c in sorted(comps, key=lambda ic: ic[0])]  # back in the order of names
    fails = [c for c in ordered if c["verdict"] == FAILS]
    if fails:
        verdict, key = FAILS, min(fails, key=lambda c: c["interval"][1])
    else:
        verdict = HOLDS if all(c["verdict"] == HOLDS for c in ordered) else UNDECIDED
        key = min((c for c in ordered if c["verdict"] == verdict), key=lambda c: c["interval"][0])
    return out(
        verdict,
        _reason(verdict, key, k, units),
        key["interval"],
        interval_level=key["level"],
        comparisons=ordered,
    )


def line(v: dict) -> str:
    """One printed line for a claim's verdict: the word, the claim, why, how; quick runs say so."""
    word = {HOLDS: "holds", FAILS: "FAILS", UNDECIDED: "UNDECIDED"}[v["verdict"]]
    if v["method"] == "exact":
        how = (f"exact: {v['reason']}" if v["reason"] else "exact") + f"; value {_short(v.get('value'))}"
    else:
        how = f"{v['reason']}; {v['method']}"
    return f"{word}: {v['claim']} ({how}){' [' + QUICK_NOTE + ']' if v.get('quick') else ''}"


def _too_few(claim, S, k, kind, level, value):
    return {
        "claim": claim,
        "verdict": UNDECIDED,
        "reason": f"{S} seed{'s' * (S != 1)}: a comparison across seeds needs at least 2 (--trials)",
        "interval": None,
        "level": level,
        "method": f"{kind} over {S} seed{'s' * (S != 1)}" + _family(k),
        "seeds": S,
        "value": value,
    }


def _family(k):
    return f", Holm-adjusted over {k} comparisons" if k > 1 else ", one comparison"


def _reason(verdict, c, k, units):
    lo, hi = c["interval"]
    what = (
        f"{c['comparison']} = {c['estimate']:+.3g}{units}, {100 * c['level']:.4g}% interval "
        f"[{lo:.3g}, {hi:.3g}]"
    )
    if verdict == HOLDS:
        return (
            (f"every one of the {k} differences is above 0; the weakest: " if k > 1 else "")
            + what
            + (" above 0" if k == 1 else "")
        )
    if verdict == FAILS:
        return what + " below 0: the interval excludes the claim"
    return what + " contains 0"


def _short(value, width=80):
    """``value`` in a few characters: numbers to 4 significant digits, long text cut."""

    def fmt(x):
        if isinstance(x, (float, np.floating)):
            return f"{x:.4g}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(fmt(y) for y in x) + "]"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k}: {fmt(y)}" for k, y in x.items()) + "}"
        return str(x)

    text = fmt(value)
    return text if len(text) <= width else text[: width - 1] + "…"
