"""Algorithm 1 on the FedProx paper's synthetic data with its §6.1 step sizes (shared by fig1d and fig2)."""
from __future__ import annotations

import numpy as np

from moreau import data, fl

__all__ = ["paper_run", "STEP_NOTE"]

STEP_NOTE = ("step sizes of §6.1: gamma = (lam + L)/(lam L) = 1/L_g, eta = 1/(L + lam), L = lambda_max(X^T X)/(4n) "
             "(without the ridge, as the paper computes it; the largest over clients)")


def paper_run(rng, *, R, lams, Ks, rounds, m, n, d, mu):
    """Algorithm 1 (``moreau.fl.fedprox``) on ONE data set for every ``lam`` in ``lams`` and ``K`` in
    ``Ks`` (so runs compare on the same data).  Yields ``(lam, K, global total (rounds+1,), local
    total (rounds+1,), global distance to the exact optimum ||w_t^(g) - w~^(g)||^2 (rounds+1,),
    statistical errors (global, local) of the exact optimum, L)``; local errors are means over
    clients of ``||w_t^(i) - w*^(i)||^2``."""
    P = data.fedprox_synthetic(rng, R=R, m=m, n=n, d=d, mu=mu)
    f, ws, wg = P.objective, np.asarray(P.w_star), np.asarray(P.w_star_global)
    L = float(np.max(P.constants["L"])) - mu
    for lam in lams:
        opt_g, opt_l = (np.asarray(a) for a in fl.fedprox_optimum(f, lam))
        stat = (float(np.sum((opt_g - wg) ** 2)), float(np.mean(np.sum((opt_l - ws) ** 2, axis=-1))))
        for K in Ks:
            h = fl.fedprox(f, lam=lam, gamma=(lam + L) / (lam * L), eta=1 / (L + lam), K=K, rounds=rounds)
            g_err = np.sum((np.asarray(h.w_global) - wg) ** 2, axis=-1)
            l_err = np.mean(np.sum((np.asarray(h.w_local) - ws) ** 2, axis=-1), axis=-1)
            to_opt = np.sum((np.asarray(h.w_global) - opt_g) ** 2, axis=-1)
            yield lam, K, g_err, l_err, to_opt, stat, L


def mean_curves(rows, key, **match):
    """``(rounds, mean over seeds, std)`` of ``key`` for the rows matching ``match``."""
    sel = [r for r in rows if all(r[k] == v for k, v in match.items())]
    ts = sorted({r["round"] for r in sel})
    vals = np.array([[r[key] for r in sel if r["round"] == t] for t in ts])
    return np.array(ts), vals.mean(axis=1), vals.std(axis=1)
