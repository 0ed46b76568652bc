# %% [markdown]
# # The personalisation trade-off in λ, on two clients
#
# Two clients with quadratic losses `f_i(θ) = (a_i/2)(θ − c_i)²` share a FedProx / pFedMe problem
# `min Σ_i ½ (f_i(w_i) + (λ/2)(w_i − w)²)`. Each client's personalised model `w̃_i(λ)` sits
# between its own optimum `c_i` (λ → 0: no collaboration) and the common global model (λ → ∞:
# one model for both). Every number is exact (`moreau.fl.fedprox_optimum`).
#
# What the picture shows: (a) the two personalised models and the global model as λ grows;
# (b) the price of personalising — each client's loss at its personalised model above its own
# minimum — against the benefit, the distance between the two clients' models.

# %%
import os
from pathlib import Path

import numpy as np

import moreau as mo
from moreau import fl
from moreau.experiments._plot import figure, save, theory
from moreau.experiments.demos import plotted

OUT = Path(globals().get("OUT") or os.environ.get("MOREAU_DEMO_OUT", "out/demos"))
OUT.mkdir(parents=True, exist_ok=True)
a, c = np.array([1.0, 4.0]), np.array([-1.0, 2.0])
clients = mo.Quadratic(a[:, None, None], (a * c)[:, None])  # f_i = a_i θ²/2 − a_i c_i θ (+ const)
lams = np.logspace(-2, 2, 81)
w_g, w_loc = (np.asarray(v) for v in fl.fedprox_optimum(clients, lams))
w_g, w_loc = w_g[:, 0], w_loc[:, :, 0]

# %% [markdown]
# Closed form to compare with: the envelopes have curvature `h_i = λa_i/(λ + a_i)`, so
# `w̃ = Σ h_i c_i / Σ h_i` and `w̃_i = (a_i c_i + λ w̃)/(a_i + λ)`.

# %%
h = lams[:, None] * a / (lams[:, None] + a)
w_closed = np.sum(h * c, axis=1) / np.sum(h, axis=1)
wi_closed = (a * c + lams[:, None] * w_closed[:, None]) / (a + lams[:, None])
excess = a / 2 * (w_loc - c) ** 2  # f_i(w~_i) - min f_i

fig, ax = figure(2, width=6.8, aspect=0.78)
p, q = ax[0]
for i in range(2):
    p.semilogx(
        lams,
        w_loc[:, i],
        color=f"C{i}",
        label=rf"client {i + 1}: $\tilde w_{i + 1}$ ($a={a[i]:g}$, $c={c[i]:g}$)",
    )
    p.axhline(c[i], color=f"C{i}", linestyle=":", linewidth=0.8)
p.semilogx(lams, w_g, "k", label=r"global $\tilde w$")
theory(p, lams, np.full_like(lams, np.sum(a * c) / np.sum(a)), "GlobalTrain (λ → ∞)", color="0.5")
p.set(xlabel=r"$\lambda$", ylabel="model", title="(a) personalised and global models")
p.legend(loc="lower right")
q.loglog(np.abs(w_loc[:, 0] - w_loc[:, 1]), excess.sum(axis=1), "o-", markersize=2)
q.set(
    xlabel=r"$|\tilde w_1 - \tilde w_2|$ (how personal)",
    ylabel=r"$\sum_i f_i(\tilde w_i) - \min f_i$",
    title="(b) price of collaborating vs personalisation",
)
FIGURES = save(fig, OUT, "demo-personalisation")
ROWS = [r for i in range(2) for r in plotted("(a)", f"client {i + 1}: w~_{i + 1}", lams, w_loc[:, i])]
ROWS += plotted("(a)", "global w~", lams, w_g) + plotted(
    "(a)", "GlobalTrain (lam -> inf)", lams, np.sum(a * c) / np.sum(a)
)
ROWS += plotted(
    "(b)",
    "sum_i f_i(w~_i) - min f_i against |w~_1 - w~_2|",
    np.abs(w_loc[:, 0] - w_loc[:, 1]),
    excess.sum(axis=1),
)

# %%
CLAIMS: dict[str, dict[str, object]] = {
    "fedprox_optimum equals the two-client closed form (max abs error)": {
        "value": float(max(np.abs(w_g - w_closed).max(), np.abs(w_loc - wi_closed).max())),
        "holds": bool(np.allclose(w_g, w_closed, atol=1e-12) and np.allclose(w_loc, wi_closed, atol=1e-12)),
    },
    "personalised models move monotonically from c_i (lam -> 0) to the GlobalTrain model (lam -> inf)": {
        "value": [float(w_loc[0, 0]), float(w_loc[-1, 0])],
        "holds": bool(np.all(np.diff(w_loc[:, 0]) >= 0) and np.all(np.diff(w_loc[:, 1]) <= 0)),
    },
}
if __name__ == "__main__":
    for claim, v in CLAIMS.items():
        print(("holds: " if v["holds"] else "FAILS: ") + claim, v["value"])
