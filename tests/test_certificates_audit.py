"""Adversarial audit of the logistic and multinomial certificates against 50-digit mpmath (slow).

Two bounds, each a theorem about floats, checked on a few hundred small instances drawn where
they are most likely to break: extreme margins (features up to 1e4 with points up to 1e3, so
margins up to ~1e7 and sigmoids of 1e-300), tiny mu (1e-300, 1e-12), huge and tiny lam
(1e-10 .. 1e12), zero weights, separable data:

* ``f._eval(theta)``'s rounding bound ``E >= ||fl(grad f(theta)) - grad f(theta)||`` at random
  points and at the returned prox, the exact gradient in 50 digits (``_grad_mp``);
* ``ProxInfo.error_bound >= ||theta - prox(w)||`` (``_mpref``), and for a call that raises
  :class:`moreau.ProxConvergenceError` the bound it carries for its ``theta``.

The assertion counts violations over all instances and requires zero (the list of the first
offenders is in the message).  ``--runslow``: about a minute on one core.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from _mpref import error, logistic_prox, multinomial_prox

import moreau as mo

pytestmark = pytest.mark.slow

mp.mp.dps = 50


def _grad_mp(kind, X, y, p, mu, theta, C=None):
    """``grad f(theta)`` in 50 digits from the data as represented (``p`` the raw weights)."""
    n, d = X.shape
    P = [mp.mpf(float(v)) for v in p]
    tot = mp.fsum(P)
    P = [v / tot for v in P]
    t = [mp.mpf(float(v)) for v in theta]
    mu = mp.mpf(float(mu))
    g = [mu * v for v in t]
    for j in range(n):
        x = [mp.mpf(float(v)) for v in X[j]]
        if kind == "logistic":
            yj = mp.mpf(float(y[j]))
            z = yj * mp.fsum(x[k] * t[k] for k in range(d))
            sn = 1 / (1 + mp.exp(z))
            for k in range(d):
                g[k] -= P[j] * sn * yj * x[k]
        else:
            z = [mp.fsum(x[k] * t[k * C + c] for k in range(d)) for c in range(C)]
            top = max(z)
            e = [mp.exp(v - top) for v in z]
            s = mp.fsum(e)
            for k in range(d):
                for c in range(C):
                    r = e[c] / s - (1 if c == int(y[j]) else 0)
                    g[k * C + c] += P[j] * x[k] * r
    return g


def _grad_err(g_float, g_mp):
    return float(mp.sqrt(mp.fsum((mp.mpf(float(a)) - b) ** 2 for a, b in zip(g_float, g_mp, strict=True))))


def _instance(rng, kind):
    n = int(rng.integers(1, 6))
    d = int(rng.integers(1, 4)) if kind == "logistic" else int(rng.integers(1, 3))
    scale = 10.0 ** rng.uniform(-3, 4)
    X = rng.normal(size=(n, d)) * scale
    if rng.random() < 0.2:  # rows of very different sizes
        X *= 10.0 ** rng.uniform(-3, 3, size=(n, 1))
    weights = rng.uniform(0.0, 1.0, n) * (rng.random(n) < 0.85)
    weights[int(rng.integers(n))] = rng.uniform(0.5, 1.0)  # a positive sum
    mu = float(rng.choice([0.0, 1e-300, 1e-12, 1e-3]))
    lam = float(10.0 ** rng.choice([rng.uniform(-10, -4), rng.uniform(-4, 4), rng.uniform(4, 12)]))
    if kind == "logistic":
        if rng.random() < 0.3:  # separable: labels from the sign of a direction
            y = np.where(X @ rng.normal(size=d) >= 0, 1.0, -1.0)
        else:
            y = rng.choice([-1.0, 1.0], n)
        f = mo.Logistic(X, y, mu=mu, weights=weights)
        D, C = d, None
    else:
        C = 3
        y = rng.integers(0, C, n)
        f = mo.Multinomial(X, y, n_classes=C, mu=mu, weights=weights)
        D = d * C
    w = rng.normal(size=D) * 10.0 ** rng.uniform(-2, 3)
    return f, X, y, weights, mu, lam, w, C


def _audit(kind, seeds):
    bad, counts = [], {"prox": 0, "raised": 0, "grad": 0, "skipped": 0}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        f, X, y, weights, mu, lam, w, C = _instance(rng, kind)
        # the gradient's rounding bound at a point with extreme margins
        t = rng.normal(size=w.shape) * 10.0 ** rng.uniform(-2, 3)
        _, g, E, _ = f._eval(t)
        g_mp = _grad_mp(kind, X, y, weights, mu, t, C)
        counts["grad"] += 1
        if math.isfinite(float(E)) and _grad_err(np.asarray(g), g_mp) > float(E):
            bad.append((seed, "grad", _grad_err(np.asarray(g), g_mp), float(E)))
        try:
            theta, info = mo.prox(f, w, lam, return_info=True)
            bound = float(info.error_bound)
            counts["prox"] += 1
        except mo.ProxConvergenceError as exc:
            theta, bound = np.asarray(exc.theta), float(np.asarray(exc.error_bound))
            counts["raised"] += 1
        except ValueError:  # the subproblem overflows at w: refused as bad input, nothing claimed
            counts["skipped"] += 1
            continue
        if not math.isfinite(bound):
            continue
        if kind == "logistic":
            ref = logistic_prox(X, y, weights, mu, w, lam, np.asarray(theta, np.float64))
        else:
            ref = multinomial_prox(X, y, weights, C, mu, w, lam, np.asarray(theta, np.float64))
        err = error(theta, ref)
        if err > bound:
            bad.append((seed, "prox", err, bound))
        # the rounding bound at the prox itself (margins as Newton saw them at the end)
        _, g, E, _ = f._eval(np.asarray(theta))
        g_mp = _grad_mp(kind, X, y, weights, mu, np.asarray(theta), C)
        counts["grad"] += 1
        if math.isfinite(float(E)) and _grad_err(np.asarray(g), g_mp) > float(E):
            bad.append((seed, "grad at prox", _grad_err(np.asarray(g), g_mp), float(E)))
    return bad, counts


def test_logistic_bounds_adversarial():
    bad, counts = _audit("logistic", range(1000, 1300))
    assert counts["prox"] + counts["raised"] >= 250, counts  # the audit audited something
    assert not bad, (len(bad), bad[:5], counts)


def test_multinomial_bounds_adversarial():
    bad, counts = _audit("multinomial", range(2000, 2150))
    assert counts["prox"] + counts["raised"] >= 120, counts
    assert not bad, (len(bad), bad[:5], counts)
