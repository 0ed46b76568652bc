r"""fedprox.thm1 on the logistic family: Monte Carlo over data sets with certified FedProx solves.

Each configuration draws one population (``moreau.data.logistic``: well specified, ridge μ, the
truth the population minimiser, ρ² by quadrature) with ``n·T`` samples per client and splits them
into ``T`` independent data sets of ``n``; ``moreau.fl.fedprox_optimum`` solves all of them at once
with a certified bound ``e`` on each model's distance to the exact optimum, so
``(‖w − w⋆‖ − e)₊² <= ‖w̃ − w⋆‖² <= (‖w − w⋆‖ + e)²`` bounds every squared error rigorously.  The
interval of the mean is the CLT interval (level ``LEVEL``, Bonferroni over clients for the max)
of the lower and upper squared errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from moreau import Logistic
from moreau.data import logistic
from moreau.fl import fedprox_optimum

__all__ = ["logistic_batch", "logistic_parts", "CONFIGS_LOGISTIC", "TRIALS_LOGISTIC"]

#: (m, d, μ) of the logistic configurations, the default data sets per grid point, and the grid
CONFIGS_LOGISTIC = np.array([(4, 3, 0.05)])
TRIALS_LOGISTIC = 100
N_GRID, R_GRID = np.array([50.0, 200.0]), np.array([1e-3, 0.5])
_MEMO: dict[Any, Any] = {}


def logistic_batch(trials, rng):
    T = len(CONFIGS_LOGISTIC)
    return {
        "family": np.ones(T, dtype=int),
        "m": CONFIGS_LOGISTIC[:, 0].astype(int),
        "d": CONFIGS_LOGISTIC[:, 1].astype(int),
        "mu": CONFIGS_LOGISTIC[:, 2],
        "seed": rng.integers(0, 2**62, T),
        "mc_trials": np.full(T, trials or TRIALS_LOGISTIC),
    }


def _solve(seed, m, d, mu, n, R, T, lam_rule):
    """Squared errors ``(lo, hi)`` of the global (T,) and local (T, m) models, ρ² and λ (memoised on
    everything that determines them: a mutant that leaves λ unchanged reuses the solves)."""
    P = logistic(seed, m=m, n=n * T, d=d, R=R, mu=mu)
    rho2 = float(P.constants["rho2"])
    lam = float(lam_rule(np.sqrt(rho2), R, n))
    key = (seed, m, d, mu, n, R, T, lam)
    if key not in _MEMO:
        if len(_MEMO) > 256:
            _MEMO.clear()
        X = np.asarray(P.objective.X).reshape(m, T, n, d).swapaxes(0, 1)  # T independent data sets
        y = np.asarray(P.objective.y).reshape(m, T, n).swapaxes(0, 1)
        w_g, w_l, info = fedprox_optimum(Logistic(X, y, mu=mu), lam, return_info=True)
        dist_g = np.linalg.norm(np.asarray(w_g) - P.w_star_global, axis=-1)
        dist_l = np.linalg.norm(np.asarray(w_l) - P.w_star, axis=-1)
        e_g, e_l = info.error_bound, info.local_error_bound
        _MEMO[key] = (
            (np.maximum(dist_g - e_g, 0) ** 2, (dist_g + e_g) ** 2),
            (np.maximum(dist_l - e_l, 0) ** 2, (dist_l + e_l) ** 2),
        )
    return _MEMO[key], rho2, lam


def _interval(lo_sq, hi_sq, z):
    T = lo_sq.shape[0]
    lo = lo_sq.mean(axis=0) - z * lo_sq.std(axis=0, ddof=1) / np.sqrt(T)
    hi = hi_sq.mean(axis=0) + z * hi_sq.std(axis=0, ddof=1) / np.sqrt(T)
    return (lo_sq.mean(axis=0) + hi_sq.mean(axis=0)) / 2, lo, hi


def logistic_parts(inst, claim, level):
    """``{part: dict(lhs, lo, hi, rhs, note)}`` for (4) and (5) in both C4 readings at the grid point
    closest to failing."""
    m, d, mu, T = int(inst["m"]), int(inst["d"]), float(inst["mu"]), int(inst["mc_trials"])
    z, zb = stats.norm.ppf(0.5 + level / 2), stats.norm.ppf(1 - (1 - level) / (2 * m))
    rows = []
    for n in N_GRID:
        for R in R_GRID:
            ((g_lo, g_hi), (l_lo, l_hi)), rho2, lam = _solve(
                int(inst["seed"]), m, d, mu, int(n), float(R), T, claim["lam"]
            )
            rho = np.sqrt(rho2)
            C1, C2 = claim["C1"](rho, mu), claim["C2"](rho, mu)
            het, extra = claim["het"](n, R), claim["local_extra"](rho, mu, n, R)
            g = _interval(g_lo, g_hi, z)
            loc = _interval(l_lo, l_hi, zb)
            rows.append(
                dict(
                    n=n,
                    R=R,
                    lam=lam,
                    g=g,
                    loc=[np.max(v) for v in loc],
                    rhs4=C1 / (m * n) + C2 * het,
                    rhs5=claim["C3"](C1) / (m * n) + claim["C4"](rho, mu, C2, np.minimum) * het + extra,
                    rhs5_or=claim["C3"](C1) / (m * n) + claim["C4"](rho, mu, C2, np.maximum) * het + extra,
                )
            )
    out = {}
    for part, val, rhs in (("4", "g", "rhs4"), ("5", "loc", "rhs5"), ("5or", "loc", "rhs5_or")):
        r = max(rows, key=lambda r: r[val][1] / r[rhs])
        out[part] = dict(
            lhs=r[val][0],
            lo=r[val][1],
            hi=r[val][2],
            rhs=r[rhs],
            note=f"logistic: worst at n = {r['n']:g}, R = {r['R']:g} (λ = {r['lam']:.4g}), "
            f"{T} data sets per point, certified solves",
        )
    return out
