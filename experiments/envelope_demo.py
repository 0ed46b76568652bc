r"""What the prox and the Moreau envelope do, in one dimension: a figure for a slide.

Three panels, every number computed by moreau (certified prox, exact envelopes):

1. a convex 1-D logistic loss
   :math:`f(\theta) = \frac1n\sum_j \log(1 + e^{-y_j x_j\theta}) + \frac{\mu}{2}\theta^2`
   on a small seeded data set, with its envelopes
   :math:`F_\lambda(w) = \min_\theta f(\theta) + \frac{\lambda}{2}(\theta - w)^2`:
   :math:`F_\lambda \le f`, smoother as λ decreases, same minimiser;
2. a weakly convex quadratic :math:`f(\theta) = a\theta^2/2 - b\theta` with ``a < 0``: the
   envelope exists only for λ > |a| and is the quadratic of curvature λa/(λ+a) (more
   concave than f, same stationary point b/a);
3. the prox map :math:`w \mapsto \mathrm{prox}_{f/\lambda}(w)` of the logistic loss, below
   the identity's slope: it pulls w towards the minimiser, harder for small λ.

λ is ``lam`` (the papers' convention, γ = 1/λ elsewhere).  Writes ``envelope_demo.png``
and ``envelope_demo.json`` (the plotted arrays, parameters, seed, versions, git commit)::

    python -m moreau.experiments.envelope_demo --out DIR [--seed S] [--lams 0.5 2 8] [--quad-lams 1.5 2 8]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

import moreau as mo  # noqa: E402
from moreau.experiments._artifact import write_json  # noqa: E402
from moreau.experiments._plot import close_unless_shown  # Agg unless in a Jupyter kernel

MU, A, B, N_SAMPLES, N_GRID = 0.1, -1.0, 1.0, 20, 401


def logistic_data(rng, n=N_SAMPLES):
    """Features ``x ~ N(0, 4²)`` and labels ``P(y = 1) = sigmoid(x/2)``, shapes ``(n,)``.

    Spread-out features give f a sharp bottom (seed 0: curvature 1.6 at the minimiser,
    slopes about −2 and +1.5 away from it), so the envelope's smoothing shows on a slide.
    """
    x = rng.normal(0.0, 4.0, size=n)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-x / 2)), 1.0, -1.0)
    return x, y


def compute(lams, quad_lams, seed):
    """The plotted arrays (numpy) and the data, keyed by panel."""
    x, y = logistic_data(np.random.default_rng(seed))
    f = mo.Logistic(x[:, None], y, mu=MU)
    grad = lambda t: float(f.grad(np.array([t]))[0])  # noqa: E731
    r = np.mean(np.abs(x)) / (2 * MU) + 1  # f' increasing, f'(t) >= f'(0) + μt, |f'(0)| <= mean|x|/2
    minimiser = brentq(grad, -r, r, xtol=1e-14)
    theta = np.linspace(minimiser - 4, minimiser + 4, N_GRID)
    lam = np.asarray(lams, dtype=float)[:, None]  # (L, 1): one call per quantity for all λ
    prox, info = mo.prox(f, theta[:, None], lam, return_info=True)
    logistic = {
        "theta": theta,
        "f": f.value(theta[:, None]),
        "x": x,
        "y": y,
        "envelope": mo.envelope(f, lam).value(theta[:, None]),
        "prox": prox[..., 0],
        "minimiser": minimiser,
        "prox_error_bound": float(np.max(info.error_bound)),
    }
    q = mo.Quadratic(np.array([[A]]), np.array([B]))
    stationary = B / A
    tq = np.linspace(stationary - 3, stationary + 3, N_GRID)
    quad = {
        "theta": tq,
        "f": q.value(tq[:, None]),
        "stationary": stationary,
        "envelope": mo.envelope(q, np.asarray(quad_lams, dtype=float)[:, None]).value(tq[:, None]),
    }
    return {"logistic": logistic, "quadratic": quad}


def plot(data, lams, quad_lams, path):
    """Three panels side by side, saved as a PNG."""
    lg, qd = data["logistic"], data["quadratic"]
    values = sorted(set(lams) | set(quad_lams))
    colors = dict(zip(values, plt.cm.viridis_r(np.linspace(0.15, 0.9, len(values))), strict=True))
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.8), dpi=150, constrained_layout=True)
    t = lg["theta"]
    ax[0].plot(t, lg["f"], "k", lw=2.2, label="f (logistic)")
    for lam, F in zip(lams, lg["envelope"], strict=True):
        ax[0].plot(t, F, color=colors[lam], label=f"$F_\\lambda$, λ = {lam:g}")
    ax[0].axvline(lg["minimiser"], color="0.5", ls=":", lw=1, label=f"minimiser θ* = {lg['minimiser']:.2f}")
    ax[0].set(
        title="Convex: $F_\\lambda \\leq f$, same minimiser",
        xlabel="θ (and w)",
        ylabel="f(θ),  $F_\\lambda(w)$",
    )
    ax[0].legend(fontsize=8, loc="upper center")
    t = qd["theta"]
    ax[1].plot(t, qd["f"], "k", lw=2.2, label=f"f = aθ²/2 − bθ  (a = {A:g}, b = {B:g})")
    for lam, F in zip(quad_lams, qd["envelope"], strict=True):
        curv = lam * A / (lam + A)
        ax[1].plot(t, F, color=colors[lam], label=f"λ = {lam:g}: curvature {curv:.2f}")
    ax[1].axvline(qd["stationary"], color="0.5", ls=":", lw=1)
    ax[1].text(
        0.98,
        0.97,
        "λ ≤ |a|: no envelope\n(the inf is −∞)",
        transform=ax[1].transAxes,
        ha="right",
        va="top",
        fontsize=8,
        color="firebrick",
    )
    ax[1].set(
        title=f"Weakly convex (a = {A:g}): $F_\\lambda$ needs λ > |a|",
        xlabel="θ (and w)",
        ylabel="f(θ),  $F_\\lambda(w)$",
        ylim=(qd["envelope"].min() - 1.5, qd["f"].max() + 2.5),
    )
    ax[1].legend(
        fontsize=8,
        loc="lower center",
        title_fontsize=8,
        title=f"only λ > |a| = {abs(A):g}; curvature λa/(λ+a)",
    )
    t = lg["theta"]
    ax[2].plot(t, t, "k--", lw=1, label="identity (λ → ∞)")
    for lam, p in zip(lams, lg["prox"], strict=True):
        ax[2].plot(t, p, color=colors[lam], label=f"λ = {lam:g}")
    ax[2].axhline(lg["minimiser"], color="0.5", ls=":", lw=1, label="θ*: the fixed point")
    ax[2].set(
        title="Prox shrinks w towards θ*",
        xlabel="w",
        ylabel="$\\mathrm{prox}_{f/\\lambda}(w)$",
        aspect="equal",
    )
    ax[2].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        "Moreau envelope $F_\\lambda(w) = \\min_\\theta\\, f(\\theta) + "
        "\\frac{\\lambda}{2}(\\theta - w)^2$ and its prox (1-D)",
        fontsize=11,
    )
    fig.savefig(path)
    close_unless_shown(fig)


def _positive(s):
    v = float(s)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"λ must be > 0 (got {s})")
    return v


def main(argv=None):
    """Parse ``argv``, compute, write the PNG and the JSON into ``--out``; returns 0."""
    ap = argparse.ArgumentParser(
        prog="python -m moreau.experiments.envelope_demo", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    ap.add_argument("--seed", type=int, default=0, help="seed of the logistic data set (default 0)")
    ap.add_argument(
        "--lams",
        type=_positive,
        nargs="+",
        default=[0.5, 2.0, 8.0],
        help="λ values for the logistic panels (default 0.5 2 8)",
    )
    ap.add_argument(
        "--quad-lams",
        type=_positive,
        nargs="+",
        default=[1.5, 2.0, 8.0],
        help=f"λ values for the quadratic panel, each > |a| = {abs(A):g} (default 1.5 2 8)",
    )
    args = ap.parse_args(argv)
    bad = [v for v in args.quad_lams if not v > abs(A)]
    if bad:
        ap.error(f"--quad-lams must all be > |a| = {abs(A):g} (no envelope otherwise); got {bad}")
    data = compute(args.lams, args.quad_lams, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    plot(data, args.lams, args.quad_lams, args.out / "envelope_demo.png")
    payload = {panel: {k: np.asarray(v).tolist() for k, v in d.items()} for panel, d in data.items()}
    params = {
        "lams": args.lams,
        "quad_lams": args.quad_lams,
        "mu": MU,
        "a": A,
        "b": B,
        "n_samples": N_SAMPLES,
        "n_grid": N_GRID,
        "seed": args.seed,
        "data": "x ~ N(0, 4^2), P(y = 1) = sigmoid(x/2)",
    }
    write_json(args.out / "envelope_demo.json", payload, params, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
