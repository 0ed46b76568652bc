# %% [markdown]
# # The weakly convex threshold λ > 2L
#
# A nonconvex L-smooth f has a Moreau envelope `F(w) = min_θ f(θ) + (λ/2)‖θ − w‖²` only
# when λ exceeds its weak-convexity modulus (λ > L at worst). pFedMe's Proposition 1 says F
# is then λ-smooth provided λ > 2L. On a quadratic with eigenvalue a the envelope has
# curvature λa/(λ + a); along a = −L that is −λL/(λ − L), whose size falls below λ exactly
# at λ = 2L: the condition is sharp.

# %%
import os
from pathlib import Path

import numpy as np

import moreau as mo
from moreau.experiments._plot import figure, save, theory
from moreau.experiments.demos import plotted

OUT = Path(globals().get("OUT") or os.environ.get("MOREAU_DEMO_OUT", "out/demos"))
OUT.mkdir(parents=True, exist_ok=True)
L = 1.0
q = mo.Quadratic(np.diag([-L, L / 2]), np.zeros(2))  # eigenvalues -L (the worst) and L/2
lams = L * (1 + np.logspace(-1.5, np.log10(9), 60))

# %% [markdown]
# moreau's envelope Hessian (implicit function theorem, exact on quadratics), its
# eigenvalues by numpy, against the formula.

# %%
curv = np.array([np.linalg.eigvalsh(np.asarray(mo.envelope(q, lam).hess(np.zeros(2))))[0] for lam in lams])
smooth = np.abs(curv)
crossing = lams[np.argmax(smooth <= lams)]  # first grid lam with |F''| <= lam

# %%
fig, ax = figure(2, width=6.8, aspect=0.75)
a, b = ax[0]
a.loglog(lams / L, smooth, "o", label=r"$|F''|$ along $a_1=-L$ (moreau)")
theory(a, lams / L, lams * L / (lams - L), r"$\lambda L/(\lambda-L)$", color="C3")
theory(a, lams / L, lams, r"pFedMe's $L_F=\lambda$", color="C0", alpha=0.6)
a.axvline(2, color="0.4", linestyle=":", linewidth=0.8)
a.set(xlabel=r"$\lambda/L$", ylabel="smoothness of F", title=r"(a) $L_F\leq\lambda$ iff $\lambda\geq 2L$")
a.legend(loc="upper right")
t = np.linspace(-2, 2, 201)
b.plot(t, -L * t**2 / 2, "k", label=r"$f=-L\theta^2/2$ (along $a_1$)")
for lam in (1.25 * L, 2 * L, 4 * L):
    b.plot(t, lam * (-L) / (lam - L) * t**2 / 2, label=rf"$F$, $\lambda={lam / L:g}L$")
b.set(xlabel=r"$w$", ylabel="value", title=r"(b) envelopes: more concave than $f$ for small $\lambda$")
b.legend(loc="lower center")
FIGURES = save(fig, OUT, "demo-weakly-convex")
ROWS = plotted("(a)", "|F''| along a_1 = -L (moreau), x: lam/L", lams / L, smooth)
ROWS += plotted("(a)", "lam L/(lam - L), x: lam/L", lams / L, lams * L / (lams - L))
ROWS += plotted("(a)", "pFedMe's L_F = lam, x: lam/L", lams / L, lams)
ROWS += plotted("(b)", "f = -L theta^2/2", t, -L * t**2 / 2)
ROWS += [
    r
    for lam in (1.25 * L, 2 * L, 4 * L)
    for r in plotted("(b)", f"F, lam = {lam / L:g}L", t, lam * (-L) / (lam - L) * t**2 / 2)
]

# %%
formula = -lams * L / (lams - L)
CLAIMS = {
    "envelope curvature along a_1 = -L equals -lam L/(lam - L) (max rel. error)": {
        "value": float(np.max(np.abs(curv / formula - 1))),
        "holds": bool(np.allclose(curv, formula, rtol=1e-12)),
    },
    "|F''| <= lam exactly for lam >= 2L (first grid lam/L where it holds)": {
        "value": float(crossing / L),
        "holds": bool(np.all((smooth <= lams * (1 + 1e-12)) == (lams >= 2 * L))),
    },
}
if __name__ == "__main__":
    for claim, v in CLAIMS.items():
        print(("holds: " if v["holds"] else "FAILS: ") + claim, v["value"])
