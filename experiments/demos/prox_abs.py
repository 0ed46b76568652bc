# %% [markdown]
# # The prox as an implicit gradient step, and the envelope as smoothing
#
# For λ > 0 the prox and the Moreau envelope of f are
# `prox(w) = argmin_θ f(θ) + (λ/2)(θ − w)²` and `F(w) = min_θ f(θ) + (λ/2)(θ − w)²`.
# The optimality condition of the prox, `θ = w − (1/λ) f'(θ)`, is a gradient step of size
# 1/λ with the gradient taken at the *end* point: an implicit (backward Euler) step. And
# `F'(w) = λ(w − prox(w))`: the envelope is a smoothed f with the same minimisers.
#
# Runs as plain Python (figures into `$MOREAU_DEMO_OUT`, default `out/demos`) or as a
# notebook with jupytext.

# %%
import os
from pathlib import Path

import numpy as np

import moreau as mo
from moreau.experiments._plot import figure, save, theory
from moreau.experiments.demos import plotted

OUT = Path(globals().get("OUT") or os.environ.get("MOREAU_DEMO_OUT", "out/demos"))
OUT.mkdir(parents=True, exist_ok=True)
LAMS = (0.5, 1.0, 2.0)
w = np.linspace(-3, 3, 601)

# %% [markdown]
# ## |x|: soft thresholding and the Huber function
# The prox of |x| moves w towards 0 by 1/λ and stops at 0 (soft thresholding); its envelope
# is the Huber function: λw²/2 near 0, |w| − 1/(2λ) beyond |w| = 1/λ — smooth, with slope
# at most 1, below |x| by at most 1/(2λ). moreau's objectives are smooth, so these closed
# forms are numpy; a brute-force minimisation over a fine grid confirms them.


# %%
def soft_threshold(w, lam):
    return np.sign(w) * np.maximum(np.abs(w) - 1 / lam, 0.0)


def huber(w, lam):
    return np.where(np.abs(w) <= 1 / lam, lam * w**2 / 2, np.abs(w) - 1 / (2 * lam))


grid = np.linspace(-4, 4, 8001)  # brute force: spacing 1e-3, at points off the w grid
wb = w[::6] + 3.7e-4
brute_err = 0.0
for lam in LAMS:
    h = np.abs(grid)[None, :] + lam / 2 * (grid[None, :] - wb[:, None]) ** 2
    brute_err = max(
        brute_err,
        float(np.max(np.abs(h.min(axis=1) - huber(wb, lam)))),
        float(np.max(np.abs(grid[h.argmin(axis=1)] - soft_threshold(wb, lam)))),
    )

# %% [markdown]
# ## Implicit versus explicit steps on a quadratic
# For f(θ) = aθ²/2 the explicit step is `w ↦ (1 − a/λ) w`, which diverges when the step
# 1/λ exceeds 2/a; the prox (implicit step) is `w ↦ λw/(λ + a)` (moreau computes it), a
# contraction for every λ > 0. Iterating the prox is the proximal point method.

# %%
a, lam_q, steps = 4.0, 1.0, 12
q = mo.Quadratic(np.array([[a]]), np.array([0.0]))
explicit_w, implicit_w = [1.0], [1.0]
for _ in range(steps):
    explicit_w.append(explicit_w[-1] - (a * explicit_w[-1]) / lam_q)
    implicit_w.append(float(mo.prox(q, np.array([implicit_w[-1]]), lam_q)[0]))
explicit, implicit = np.abs(explicit_w), np.abs(implicit_w)

# %%
fig, ax = figure(3, width=6.8, aspect=0.8)
p, s, r = ax[0]
p.plot(w, np.abs(w), "k", label="|w|")
for lam in LAMS:
    p.plot(w, huber(w, lam), label=rf"Huber, $\lambda={lam:g}$")
p.set(xlabel="w", ylabel=r"$F_\lambda(w)$", title="(a) envelope of |x|", ylim=(-0.1, 4.6))
p.legend(loc="upper center", ncol=2)
s.plot(w, w, "k:", linewidth=0.8, label="identity")
for lam in LAMS:
    s.plot(w, soft_threshold(w, lam), label=rf"$\lambda={lam:g}$")
s.set(xlabel="w", ylabel="prox(w)", title="(b) prox of |x|: soft thresholding")
s.legend(loc="upper left")
k = np.arange(steps + 1)
r.semilogy(k, explicit, "o-", label=rf"explicit $w-\frac{{1}}{{\lambda}}f'(w)$ ($a/\lambda={a / lam_q:g}$)")
r.semilogy(k, implicit, "s-", label="implicit: prox (moreau)")
theory(r, k, (lam_q / (lam_q + a)) ** k, r"$(\lambda/(\lambda+a))^k$", color="0.3")
r.set(xlabel="step k", ylabel=r"$|\theta_k|$", title=r"(c) $f=a\theta^2/2$: steps of size $1/\lambda$")
r.legend(loc="lower left")
FIGURES = save(fig, OUT, "demo-prox-abs")
ROWS = plotted("(a)", "|w|", w, np.abs(w))
ROWS += [r for lam in LAMS for r in plotted("(a)", f"Huber, lam = {lam:g}", w, huber(w, lam))]
ROWS += [
    r for lam in LAMS for r in plotted("(b)", f"soft thresholding, lam = {lam:g}", w, soft_threshold(w, lam))
]
ROWS += plotted("(c)", "explicit steps |theta_k|", k, explicit) + plotted(
    "(c)", "prox steps |theta_k| (moreau)", k, implicit
)
ROWS += plotted("(c)", "(lam/(lam + a))^k", k, (lam_q / (lam_q + a)) ** k)

# %%
CLAIMS = {
    "Huber envelope and soft thresholding match brute-force minimisation (max error, grid 1e-3)": {
        "value": brute_err,
        "holds": brute_err <= 1e-3,
    },
    "prox iterates contract at lam/(lam+a) (moreau against the closed form, max rel. error)": {
        "value": float(np.max(np.abs(implicit / (lam_q / (lam_q + a)) ** k - 1))),
        "holds": bool(np.allclose(implicit, (lam_q / (lam_q + a)) ** k, rtol=1e-13, atol=0)),
    },
    "explicit steps diverge when 1/lam > 2/a": {
        "value": float(explicit[-1]),
        "holds": bool(explicit[-1] > explicit[0]),
    },
}
if __name__ == "__main__":
    for claim, v in CLAIMS.items():
        print(("holds: " if v["holds"] else "FAILS: ") + claim, v["value"])
