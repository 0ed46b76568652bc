r"""``fedprox-rates``: FedProx's statistical error against n, m and R, log–log, beside Theorem 1's bounds.

Least-squares clients with fixed designs (``moreau.data.least_squares``: :math:`X_i^\top X_i/n = A_i`
with spectrum in [μ, L], noise σ, exact heterogeneity R and ρ² = σ² tr A_i), FedProx with
Theorem 1's adaptive λ.  The errors are *exact* expectations over the noise: the FedProx
solution is affine in it (``moreau.analysis.fedprox.thm1.least_squares_moments.error_maps``:
E‖error‖² = ‖bias‖² + ‖K‖_F², the same computation the ``fedprox.thm1`` check compares with Monte
Carlo).  Panels:

* (a) error against n with R ≫ n^{-1/2} (LocalTrain-like: slope −1) and along R = n^{-1/2}/2
  (the middle regime: C2 R/√n = O(1/n));
* (b) error against m as R → 0 (GlobalTrain-like: C1/(mn), slope −1);
* (c) error against R at fixed n: O(R/√n) then O(1/n) (the bound's min).

Global error :math:`E\|\tilde w^{(g)} - w_\star^{(g)}\|^2` (solid) with bound (4) (dashed), local
:math:`\max_i E\|\tilde w^{(i)} - w_\star^{(i)}\|^2` with bound (5) (dash-dot); fitted slopes
(``moreau.analysis.engine.rates.fit_exponent``) in the legends.  Exact: ``--trials`` does not apply.
"""

from __future__ import annotations

import numpy as np

from moreau import data

from ._experiment import Experiment
from ._plot import figure, save
from ._verdicts import exact

__all__ = ["EXPERIMENT"]


def config(quick, trials):
    if trials is not None:
        raise ValueError("fedprox-rates is exact (expectations in closed form): --trials does not apply")
    k = 5 if quick else 9
    return {
        "m": 10,
        "d": 5,
        "mu": 1.0,
        "L": 4.0,
        "sigma": 1.0,
        "n_grid": np.unique(np.round(np.logspace(np.log10(50), np.log10(5000), k))).astype(int).tolist(),
        "m_grid": [2, 4, 8, 16, 32] if quick else [2, 4, 8, 16, 32, 64, 128],
        "R_grid": np.logspace(-4, 1, 6 if quick else 16).tolist(),
        "R_large": 10.0,
        "n_fixed": 400,
    }


def points(params):
    out = [{"sweep": "n, R large", "x": n} for n in params["n_grid"]]
    out += [{"sweep": "n, R = n^-1/2/2", "x": n} for n in params["n_grid"]]
    out += [{"sweep": "m, R -> 0", "x": m} for m in params["m_grid"]]
    out += [{"sweep": "R, n fixed", "x": R} for R in params["R_grid"]]
    return out


def _bounds(rho, mu, n, N, R):
    """Theorem 1's (4) and (5) with C4 as printed (∧)."""
    C1 = rho**2 / mu**2
    C2 = max(((1 + np.sqrt(1 + 2 * mu)) * rho / (2 * mu)) ** 2, 2 * rho / mu)
    C4 = min((rho * (1 + np.sqrt(1 + 4 * mu * (C2 + 1))) / (2 * mu)) ** 2, 8 * C2 + 2 * rho / mu)
    het = min(1 / n, R / np.sqrt(n))
    return C1 / N + C2 * het, 8 * C1 / N + C4 * het + 16 * min(rho**2 / (mu**2 * n), R**2)


def compute(params, point, rng):
    from moreau.analysis.fedprox.thm1.least_squares_moments import error_maps, exact_errors

    from .fedprox_fig1a import adaptive_lambda

    m, n = params["m"], params["n_fixed"]
    R = params["R_large"]
    if point["sweep"].startswith("n"):
        n = int(point["x"])
        R = params["R_large"] if point["sweep"] == "n, R large" else 0.5 / np.sqrt(n)
    elif point["sweep"].startswith("m"):
        m, R = int(point["x"]), 1e-6
    else:
        R = float(point["x"])
    P = data.least_squares(
        rng, m=m, n=n, d=params["d"], R=R, mu=params["mu"], L=params["L"], sigma=params["sigma"]
    )
    rho = float(np.sqrt(np.max(P.constants["rho2"])))
    A = np.asarray(P.objective.A) - 0.0  # X^T X / n of every client (the fixed design)
    lam = float(adaptive_lambda(rho, R, n))
    err = exact_errors(*error_maps(A, np.asarray(P.w_star), lam, params["sigma"], n))
    b4, b5 = _bounds(rho, params["mu"], n, m * n, R)
    return [
        {
            "sweep": point["sweep"],
            "x": point["x"],
            "n": n,
            "m": m,
            "R": R,
            "lam": lam,
            "rho": rho,
            "global_error": float(err[0]),
            "local_error_max": float(np.max(err[1:])),
            "bound_4": float(b4),
            "bound_5": float(b5),
        }
    ]


def finish(rows, params, out, seed=0, quick=False):
    from matplotlib.ticker import NullFormatter

    from moreau.analysis.engine.rates import fit_exponent

    fig, ax = figure(3, width=7.0, aspect=1.45)
    panels = [("n, R large", "n, R = n^-1/2/2"), ("m, R -> 0",), ("R, n fixed",)]
    xlabels = ("samples per client n", "clients m", "heterogeneity R")
    slopes = {}
    for a, sweeps, xl, tag in zip(ax[0], panels, xlabels, "abc", strict=True):
        for k, sw in enumerate(sweeps):
            sel = [r for r in rows if r["sweep"] == sw]
            x = np.array([r["x"] for r in sel], float)
            g, loc = np.array([r["global_error"] for r in sel]), np.array([r["local_error_max"] for r in sel])
            b4, b5 = np.array([r["bound_4"] for r in sel]), np.array([r["bound_5"] for r in sel])
            lab = {"n, R large": f"R = {params['R_large']:g}", "n, R = n^-1/2/2": r"$R=n^{-1/2}/2$"}.get(
                sw, ""
            )
            if sw != "R, n fixed":
                sg, _ = fit_exponent(x, g)
                sl, _ = fit_exponent(x, loc)
                slopes[sw] = (float(sg), float(sl))
                lg, ll = f"global {lab} (slope {sg:.2f})", f"max local {lab} (slope {sl:.2f})"
            else:
                lg, ll = "global", "max local"
            c = f"C{2 * k}"
            a.loglog(x, g, "o-", color=c, label=lg)
            a.loglog(x, loc, "s-", color=f"C{2 * k + 1}", label=ll, mfc="none")
            a.loglog(x, b4, "--", color=c, alpha=0.7, label="(4) " + lab if k == 0 or lab else "(4)")
            a.loglog(x, b5, "-.", color=f"C{2 * k + 1}", alpha=0.7, label="(5) " + lab)
        a.set(xlabel=xl, ylabel="expected squared error", title=f"({tag}) vs {xl.split()[-1]}")
        if tag == "b":
            a.set_xticks(params["m_grid"], [str(v) for v in params["m_grid"]])
            a.xaxis.set_minor_formatter(NullFormatter())
        a.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1, fontsize=5)
    figures = save(fig, out, "fedprox-rates", quick)
    ok = all(r["global_error"] <= r["bound_4"] and r["local_error_max"] <= r["bound_5"] for r in rows)

    def minus_one(text, sw):
        return exact(
            f"error vs {text}: slope -1 (within 0.1)",
            all(abs(x + 1) <= 0.1 for x in slopes[sw]),
            slopes[sw],
            "for the global and the max local error (value: both slopes)",
        )

    claims = [
        exact(
            "every error below its bound ((4) global, (5) local with C4 as printed)",
            ok,
            len(rows),
            "at every point (value: how many)",
        ),
        minus_one("n, R large", "n, R large"),
        minus_one("n along R = n^-1/2/2", "n, R = n^-1/2/2"),
        minus_one("m as R -> 0", "m, R -> 0"),
    ]
    theorems = {
        "fedprox.thm1": {
            "assumptions": {
                "fixed design: every client's empirical risk mu-strongly convex (Assumption 2)": True,
                "rho^2 = sigma^2 tr(A_i) exact, heterogeneity R exact (Assumptions 1, 3)": True,
                "n_i = n, p_i = 1/m, lambda the adaptive rule": True,
            }
        }
    }
    return {"figures": figures, "claims": claims, "theorems": theorems}


EXPERIMENT = Experiment(
    name="fedprox-rates",
    paper="FedProx analysis",
    figure="Theorem 1 (rates)",
    summary="exact expected statistical error vs n (both regimes), m and R, log-log with the bounds (4)-(5) "
    "and fitted slopes (least squares)",
    expected=("~2 s", "~3 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
)
