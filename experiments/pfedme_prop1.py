r"""``pfedme-prop1``: the Moreau envelope's smoothness and strong convexity against λ.

pFedMe's Proposition 1 says the envelope :math:`F(w) = \min_\theta f(\theta) + \frac{\lambda}{2}\|\theta - w\|^2`
of an L-smooth f is λ-smooth (for nonconvex f when λ > 2L) and, when f is
μ-strongly convex, λμ/(λ+μ)-strongly convex; the FedProx analysis (Lemma 2)
states the smoothness as :math:`L_g = \lambda L/(\lambda + L)`.  On quadratics
the envelope's Hessian is :math:`\lambda A(A + \lambda I)^{-1}`, so the true
constants are known in closed form.  This experiment measures them — the
eigenvalues (numpy ``eigvalsh``) of the Hessian that ``moreau.envelope``
returns — and plots them beside the three formulas:

* convex panel: f with spectrum in [μ, L] (μ and L attained): measured
  smoothness against pFedMe's λ and FedProx's λL/(λ+L), measured strong
  convexity against λμ/(λ+μ);
* weakly convex panel: f with smallest eigenvalue −L: measured smoothness
  (the envelope is then concave along that eigenvector, curvature
  −λL/(λ−L)) against pFedMe's λ: it is at most λ exactly when λ ≥ 2L.

Exact (no Monte Carlo): ``--trials`` does not apply.
"""

from __future__ import annotations

import numpy as np

import moreau as mo

from ._config import Range
from ._experiment import Experiment
from ._plot import figure, save, theory
from ._sweep import catalogue_verdict
from ._verdicts import exact

__all__ = ["EXPERIMENT"]

RTOL = 1e-12  # measured constants against the closed forms: eigvalsh of a d = 6 matrix, ~10 eps


def config(quick, trials):
    if trials is not None:
        raise ValueError("pfedme-prop1 is exact (no Monte Carlo): --trials does not apply")
    k = 25 if quick else 81
    return {
        "L": 1.0,
        "mu": 0.1,
        "d": 6,
        "lam_convex": np.logspace(-2, 2, k).tolist(),
        "lam_weak": (1.0 + np.logspace(-2, np.log10(19), k)).tolist(),
    }


#: the values each parameter may take (checked with the cross-field :func:`rules` before anything is
#: written): the envelope of the weakly convex panel exists for lam > L only
RANGES = {
    "L": Range(0, 1e150, lo_open=True, why="the smoothness constant of f (its square must stay finite)"),
    "mu": Range(0, 1e150, lo_open=True, why="the strong convexity constant of the convex panel's f"),
    "d": Range(2, 2000, why="the spectrum's two ends are attained; each point builds a dense d x d matrix"),
    "lam_convex": Range(0, 1e150, lo_open=True, why="the envelope's parameter lambda"),
    "lam_weak": Range(0, 1e150, lo_open=True, why="the envelope's parameter lambda"),
}


def rules(params):
    """The cross-field rules: mu <= L (the spectrum [mu, L]) and every lam_weak > L (the envelope of
    an f of curvature -L exists for lam > L only)."""
    L, mu = params["L"], params["mu"]
    if mu > L:
        raise ValueError(
            f"pfedme-prop1: mu must be <= L (the convex panel's spectrum is [mu, L]; got mu = {mu:g}, L = {L:g})"
        )
    low = [lam for lam in params["lam_weak"] if lam <= L]
    if low:
        raise ValueError(
            f"pfedme-prop1: every lam_weak must be > L = {L:g} (the envelope of an f with curvature -L exists "
            f"for lam > L only; got {low[0]:g})"
        )


def points(params):
    return [{"case": "convex", "lam": lam} for lam in params["lam_convex"]] + [
        {"case": "weakly convex", "lam": lam} for lam in params["lam_weak"]
    ]


def _quadratic(params, case, rng):
    d, L, mu = params["d"], params["L"], params["mu"]
    lo = mu if case == "convex" else -L
    a = np.concatenate([[lo, L], rng.uniform(lo, L, d - 2)])
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return mo.Quadratic((V * a) @ V.T, rng.standard_normal(d)), rng.standard_normal(d)


def compute(params, point, rng):
    q, w = _quadratic(params, point["case"], rng)
    lam = point["lam"]
    eig = np.linalg.eigvalsh(np.asarray(mo.envelope(q, lam).hess(w)))
    L, mu = params["L"], params["mu"]
    row = {
        "case": point["case"],
        "lam": lam,
        "smoothness_measured": float(np.max(np.abs(eig))),
        "curvature_min_measured": float(eig[0]),
        "pfedme_L_F": lam,
    }
    if point["case"] == "convex":
        row.update(fedprox_L_g=lam * L / (lam + L), mu_F=lam * mu / (lam + mu))
    else:
        row.update(exact_weak=lam * L / (lam - L), pfedme_condition_lam_gt_2L=bool(lam > 2 * L))
    return [row]


def finish(rows, params, out, seed=0, quick=False):
    L, mu = params["L"], params["mu"]
    cv = [r for r in rows if r["case"] == "convex"]
    wk = [r for r in rows if r["case"] == "weakly convex"]
    lc = np.array([r["lam"] for r in cv])
    lw = np.array([r["lam"] for r in wk])
    sm_c = np.array([r["smoothness_measured"] for r in cv])
    sc_c = np.array([r["curvature_min_measured"] for r in cv])
    sm_w = np.array([r["smoothness_measured"] for r in wk])

    fig, ax = figure(2)
    a, b = ax[0]
    a.loglog(lc, sm_c, "o", label="measured smoothness of F", color="C0")
    theory(a, lc, lc, r"pFedMe $L_F=\lambda$", color="C0", alpha=0.6)
    theory(a, lc, lc * L / (lc + L), r"FedProx $L_g=\lambda L/(\lambda+L)$", color="C2")
    a.loglog(lc, sc_c, "s", label="measured strong convexity of F", color="C1", mfc="none")
    theory(a, lc, lc * mu / (lc + mu), r"$\mu_F=\lambda\mu/(\lambda+\mu)$", color="C1")
    a.set(
        xlabel=r"$\lambda$",
        ylabel="curvature constant of $F$",
        title=f"(a) convex $f$, spectrum in [{mu:g}, {L:g}]",
    )
    a.legend(loc="upper left")
    b.loglog(lw / L, sm_w, "o", label="measured smoothness of F", color="C0")
    theory(b, lw / L, lw, r"pFedMe $L_F=\lambda$", color="C0", alpha=0.6)
    theory(b, lw / L, lw * L / (lw - L), r"exact $\lambda L/(\lambda-L)$", color="C3")
    b.axvline(2.0, color="0.4", linewidth=0.8, linestyle=":")
    b.annotate(r"$\lambda=2L$", (2.0, b.get_ylim()[0] * 1.5), fontsize=6, ha="left")
    b.set(xlabel=r"$\lambda/L$", ylabel="smoothness of $F$", title=r"(b) weakly convex $f$, $a_1=-L$")
    b.legend(loc="upper right")
    figures = save(fig, out, "pfedme-prop1", quick)

    rel = lambda x, y: float(np.max(np.abs(x - y) / np.abs(y)))  # noqa: E731
    ok_weak = sm_w <= lw * (1 + RTOL)
    smallest = float(np.min(lw[ok_weak]) / L) if ok_weak.any() else None
    claims = [
        exact(
            "convex: measured smoothness = lam L/(lam+L) (FedProx Lemma 2), max rel. error",
            rel(sm_c, lc * L / (lc + L)) <= RTOL,
            rel(sm_c, lc * L / (lc + L)),
            f"max rel. error <= {RTOL:g}",
        ),
        exact(
            "convex: measured smoothness <= lam (pFedMe), never attained: max ratio",
            np.all(sm_c < lc),
            float(np.max(sm_c / lc)),
            "every ratio < 1",
        ),
        exact(
            "convex: measured strong convexity = lam mu/(lam+mu), max rel. error",
            rel(sc_c, lc * mu / (lc + mu)) <= RTOL,
            rel(sc_c, lc * mu / (lc + mu)),
            f"max rel. error <= {RTOL:g}",
        ),
        exact(
            "weakly convex: smoothness <= lam exactly when lam >= 2L",
            np.all(ok_weak == (lw >= 2 * L * (1 - RTOL))),
            {"smallest lam/L with smoothness <= lam": smallest},
            "at every grid lam",
        ),
    ]
    theorems = {
        "pfedme.prop1": {
            "assumptions": {
                "convex panel: f convex, L-smooth, mu-strongly convex": True,
                "weakly convex panel: points with lam > 2L (the condition)": f"{int(np.sum(lw > 2 * L))} of {len(lw)}",
            },
            "check": catalogue_verdict("pfedme.prop1"),
        },
        "fedprox.lemma2": {
            "assumptions": {"convex panel: mu-strongly convex, L-smooth": True},
            "check": catalogue_verdict("fedprox.lemma2"),
        },
    }
    return {"figures": figures, "claims": claims, "theorems": theorems}


EXPERIMENT = Experiment(
    name="pfedme-prop1",
    paper="pFedMe (with FedProx analysis Lemma 2)",
    figure="none (Proposition 1)",
    summary="envelope smoothness / strong convexity vs lambda on quadratics: pFedMe's lam, FedProx's lam L/(lam+L), "
    "the weakly convex threshold lam = 2L",
    expected=("~1 s", "~4 s"),
    config=config,
    points=points,
    compute=compute,
    finish=finish,
    ranges=RANGES,
    rules=rules,
)
