r"""``fedprox-comm``: communication rounds and gradient evaluations against λ (FedProx analysis, Corollary 1).

Algorithm 1 (``moreau.fl.fedprox``) is run on quadratic clients with the corollary's parameters
on two families: **shared directions** — the clients' Hessians share eigenvectors, μ and L on
the same directions for every client, so the aggregate problem really has condition number
κ_g (the corollary's worst case; the checks are on this family) — and **generic** least
squares (``moreau.data.least_squares``: fixed designs with independent random eigenvectors per
client, spectrum in [μ, L]), whose averaged envelope Hessian is far better conditioned than
κ_g, so it needs far fewer rounds than the bound.  Parameters: :math:`\eta = 1/(\lambda + L)`,
:math:`\gamma = (\lambda + L)/(2\lambda L)` (times ``eta_scale`` and ``gamma_scale``, default 1,
settable with ``--set``) and K the smallest integer satisfying condition (12)
(``moreau.analysis.fedprox.round_matrix.k_min``, which is :math:`\tilde O((\lambda+L)/(\lambda+\mu))`).
From :math:`w_0 = 0`, the rounds T to
an ε-solution (:math:`\|w_T^{(g)} - \tilde w^{(g)}\|^2 \le \varepsilon` and every
:math:`\|w_T^{(i)} - \tilde w^{(i)}\|^2 \le \varepsilon`, the exact optimum by
``moreau.fl.fedprox_optimum``) are measured over λ spanning five decades, beside the
corollary's :math:`\kappa_g\log(1/\varepsilon)`, :math:`\kappa_g = \kappa(\lambda+\mu)/(\lambda+L)`
(eq. (13)), and the total gradient evaluations T·K beside :math:`\kappa\log(1/\varepsilon)`
(eq. (14)).  The corollary is an O(·) statement: the dashed curves carry one constant each,
the median ratio over the grid, stated in the legend.

Exact apart from floating point (no Monte Carlo): ``--trials`` does not apply.
"""

from __future__ import annotations

import numpy as np

from moreau import data, fl

from ._config import Range
from ._experiment import Experiment
from ._plot import figure, save, theory
from ._sweep import catalogue_verdict
from ._verdicts import exact

__all__ = ["EXPERIMENT"]


def config(quick, trials):
    if trials is not None:
        raise ValueError("fedprox-comm is deterministic (no Monte Carlo): --trials does not apply")
    return {
        "m": 10,
        "n": 50,
        "d": 5,
        "mu": 1.0,
        "L": 20.0,
        "R": 1.0,
        "eps": 1e-6 if quick else 1e-10,
        "lam_over_L": np.logspace(-3, 2, 6 if quick else 16).tolist(),
        "gamma_scale": 1.0,
        "eta_scale": 1.0,
    }


#: FedProx's step sizes as multiples of the corollary's (both per lambda)
RANGES = {
    "gamma_scale": Range(
        0,
        2,
        lo_open=True,
        hi_open=True,
        why="FedProx's server step gamma, a multiple of (lam + L)/(2 lam L); condition (12) needs gamma L_g < 1",
    ),
    "eta_scale": Range(
        0, 1, lo_open=True, why="FedProx's local step eta, a multiple of 1/(lam + L); (12) needs eta <= 1/L_l"
    ),
}


def points(params):
    """One point per family: every lambda runs on the same clients (so the curve compares lambdas only)."""
    return [{"case": c} for c in ("shared directions", "generic")]


def _shared(rng, m, d, mu, L):
    """Quadratic clients A_i = U diag(a_i) U^T with one U, a_i in [mu, L] with a_i1 = mu and a_id = L."""
    import moreau as mo

    a = rng.uniform(mu, L, (m, d))
    a[:, 0], a[:, -1] = mu, L
    U, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = (U * a[:, None, :]) @ U.T
    return mo.Quadratic((A + np.swapaxes(A, -1, -2)) / 2, rng.standard_normal((m, d)) * L)


def compute(params, point, rng):
    from moreau.analysis.fedprox.round_matrix import k_min

    mu, L, eps = params["mu"], params["L"], params["eps"]
    if point["case"] == "generic":
        f = data.least_squares(
            rng, m=params["m"], n=params["n"], d=params["d"], R=params["R"], mu=mu, L=L
        ).objective
    else:
        f = _shared(rng, params["m"], params["d"], mu, L)
    rows = []
    for x in params["lam_over_L"]:
        lam = x * L
        eta, gamma = params["eta_scale"] / (lam + L), params["gamma_scale"] * (lam + L) / (2 * lam * L)
        K = int(k_min(lam, mu, L, gamma, eta))
        kappa, kappa_g = L / mu, (L / mu) * (lam + mu) / (lam + L)
        w_g, w_l = (np.asarray(a) for a in fl.fedprox_optimum(f, lam))
        t_max = int(np.ceil(20 * kappa_g * np.log(1 / eps))) + 50
        h = fl.fedprox(f, lam=lam, gamma=gamma, eta=eta, K=K, rounds=t_max)
        err_g = np.sum((np.asarray(h.w_global) - w_g) ** 2, axis=-1)
        err_l = np.max(np.sum((np.asarray(h.w_local) - w_l) ** 2, axis=-1), axis=-1)
        ok = np.flatnonzero((err_g <= eps) & (err_l <= eps))
        T = int(ok[0]) if ok.size else None
        rows.append(
            {
                "case": point["case"],
                "lam": lam,
                "lam_over_L": x,
                "K": K,
                "rounds": T,
                "grad_evals": None if T is None else T * K,
                "kappa_g_log": kappa_g * np.log(1 / eps),
                "kappa_log": kappa * np.log(1 / eps),
                "eta": eta,
                "gamma": gamma,
                "t_max": t_max,
            }
        )
    return rows


def _series(rows, case, key):
    sel = [r for r in rows if r["case"] == case]
    return np.array([np.nan if r[key] is None else r[key] for r in sel], dtype=float)


def finish(rows, params, out, seed=0, quick=False):
    x = _series(rows, "shared directions", "lam_over_L")
    T, TK = _series(rows, "shared directions", "rounds"), _series(rows, "shared directions", "grad_evals")
    Tg, TKg = _series(rows, "generic", "rounds"), _series(rows, "generic", "grad_evals")
    K = _series(rows, "shared directions", "K")
    kg, kl = (
        _series(rows, "shared directions", "kappa_g_log"),
        _series(rows, "shared directions", "kappa_log"),
    )
    c_T, c_TK = float(np.nanmedian(T / kg)), float(np.nanmedian(TK / kl))
    fig, ax = figure(2, width=6.8, aspect=0.78)
    a, b = ax[0]
    a.loglog(x, T, "o-", label="rounds T, shared directions")
    a.loglog(x, Tg, "^-", color="0.55", label="rounds T, generic least squares")
    theory(a, x, c_T * kg, rf"{c_T:.2f}$\kappa_g\log(1/\varepsilon)$ (Cor. 1, eq. 13)", color="C3")
    a.set(
        xlabel=r"$\lambda/L$",
        ylabel="communication rounds T to an ε-solution",
        title=rf"(a) rounds, $\kappa={params['L'] / params['mu']:g}$, $\varepsilon={params['eps']:g}$",
    )
    a.legend(loc="upper left")
    b.loglog(x, TK, "o-", label="gradient evaluations T·K, shared directions")
    b.loglog(x, TKg, "^-", color="0.55", label="T·K, generic least squares")
    b.loglog(x, K, "s:", color="0.3", label="local steps K (smallest with (12))")
    theory(b, x, c_TK * kl, rf"{c_TK:.2f}$\kappa\log(1/\varepsilon)$ (Cor. 1, eq. 14)", color="C3")
    b.set(xlabel=r"$\lambda/L$", ylabel="per client", title="(b) computation", ylim=(0.3, None))
    b.legend(loc="lower left")
    figures = save(fig, out, "fedprox-comm", quick)
    ratio = T / kg
    log_bound = np.log(params["L"] / params["mu"] * 1e2 / params["eps"])
    claims = [
        exact(
            "every lambda reaches the epsilon-solution (both families)",
            ~np.isnan(np.r_[T, Tg]).any(),
            int(np.sum(np.isnan(T)) + np.sum(np.isnan(Tg))),
            "no run without one (value: how many)",
        ),
        exact(
            "shared directions: rounds increase with lambda (less personalisation needs more communication)",
            np.all(np.diff(T) >= 0),
            T.tolist(),
        ),
        exact(
            "shared directions: T/(kappa_g log 1/eps) within a factor 2 over the lambda grid (max/min)",
            np.nanmax(ratio) / np.nanmin(ratio) <= 2,
            float(np.nanmax(ratio) / np.nanmin(ratio)),
        ),
        exact(
            "shared directions: total gradient evaluations T K vary by at most a factor log(kappa lam_max/(mu eps))",
            np.nanmax(TK) / np.nanmin(TK) <= log_bound,
            float(np.nanmax(TK) / np.nanmin(TK)),
            f"max/min <= {log_bound:.3g}",
        ),
    ]
    theorems = {
        "fedprox.cor1": {
            "assumptions": {
                "eta = 1/(lam + L), gamma = (lam + L)/(2 lam L), K from (12)": params["eta_scale"] == 1
                and params["gamma_scale"] == 1,
                "clients mu-strongly convex and L-smooth (spectrum in [mu, L])": True,
            },
            "check": catalogue_verdict("fedprox.cor1"),
        }
    }
    return {"figures": figures, "claims": claims, "theorems": theorems}


EXPERIMENT = Experiment(
    name="fedprox-comm",
    paper="FedProx analysis",
    figure="Corollary 1 (and Figure 1(d)'s message)",
    summary="rounds to an eps-solution and total gradient evaluations vs lambda over five decades, beside "
    "kappa_g log(1/eps) and kappa log(1/eps)",
    expected=("~12 s", "~41 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    ranges=RANGES,
)
