# %% [markdown]
# # FedProx interpolates between LocalTrain and GlobalTrain
#
# Five clients with 2-D least-squares losses (`moreau.data.least_squares`: fixed designs,
# heterogeneity R exact). As λ runs from 0 to ∞, each FedProx local model `w̃_i(λ)` travels
# from the client's LocalTrain model (its own minimiser, ○) to the GlobalTrain model (the
# minimiser of the average loss, ★); the FedProx global model `w̃(λ)` travels from the
# average of the local minimisers to the same ★. Every point is exact
# (`moreau.fl.fedprox_optimum`, `local_train`, `global_train`).

# %%
import os
from pathlib import Path

import numpy as np

from moreau import data, fl
from moreau.experiments._plot import figure, save
from moreau.experiments.demos import plotted

OUT = Path(globals().get("OUT") or os.environ.get("MOREAU_DEMO_OUT", "out/demos"))
OUT.mkdir(parents=True, exist_ok=True)
SEED = int(globals().get("SEED") or 0)
P = data.least_squares(SEED, m=5, n=20, d=2, R=1.0, mu=0.5, L=3.0, sigma=0.2)
f = P.objective
lams = np.logspace(-3, 3, 121)
w_g, w_loc = (np.asarray(v) for v in fl.fedprox_optimum(f, lams))
local, glob = np.asarray(fl.local_train(f)), np.asarray(fl.global_train(f))

# %%
fig, ax = figure(2, width=6.8, aspect=0.85)
p, q = ax[0]
for i in range(local.shape[0]):
    p.plot(w_loc[:, i, 0], w_loc[:, i, 1], color=f"C{i}", linewidth=1)
    p.plot(*local[i], "o", color=f"C{i}", mfc="none", markersize=5)
p.plot(w_g[:, 0], w_g[:, 1], "k--", linewidth=1, label=r"global $\tilde w(\lambda)$")
p.plot(*glob, "k*", markersize=9, label="GlobalTrain")
p.plot([], [], "o", color="0.4", mfc="none", label="LocalTrain (each client)")
p.set(
    xlabel=r"$w_1$",
    ylabel=r"$w_2$",
    title=r"(a) $\tilde w_i(\lambda)$, $\lambda$ from $10^{-3}$ to $10^3$",
    aspect="equal",
)
p.legend(loc="upper right", fontsize=5)
to_local = np.linalg.norm(w_loc - local, axis=-1).mean(axis=1)
to_global = np.linalg.norm(w_loc - glob, axis=-1).mean(axis=1)
q.loglog(lams, to_local, label=r"mean $\|\tilde w_i - \hat w_i^{\mathrm{local}}\|$")
q.loglog(lams, to_global, label=r"mean $\|\tilde w_i - \hat w^{\mathrm{global}}\|$")
q.set(xlabel=r"$\lambda$", ylabel="distance", title="(b) from LocalTrain to GlobalTrain")
q.legend(loc="center left")
FIGURES = save(fig, OUT, "demo-fedprox-interpolation")
ROWS = [
    r
    for i in range(local.shape[0])
    for r in plotted("(a)", f"client {i}: w~_i(lam) (x: w_1, y: w_2)", w_loc[:, i, 0], w_loc[:, i, 1])
]
ROWS += plotted("(a)", "global w~(lam)", w_g[:, 0], w_g[:, 1]) + plotted(
    "(a)", "GlobalTrain", glob[0], glob[1]
)
ROWS += [
    r
    for i in range(local.shape[0])
    for r in plotted("(a)", f"LocalTrain client {i}", local[i, 0], local[i, 1])
]
ROWS += plotted("(b)", "mean ||w~_i - w^_i local||", lams, to_local)
ROWS += plotted("(b)", "mean ||w~_i - w^ global||", lams, to_global)

# %%
CLAIMS: dict[str, dict[str, object]] = {
    "lam -> 0: FedProx local models equal LocalTrain's (mean distance at lam = 1e-3, relative to the spread)": {
        "value": float(to_local[0] / np.linalg.norm(local - glob, axis=-1).mean()),
        "holds": bool(to_local[0] < 1e-2 * np.linalg.norm(local - glob, axis=-1).mean()),
    },
    "lam -> inf: FedProx local and global models equal GlobalTrain's (mean distance at lam = 1e3, relative)": {
        "value": float(to_global[-1] / np.linalg.norm(local - glob, axis=-1).mean()),
        "holds": bool(to_global[-1] < 1e-2 * np.linalg.norm(local - glob, axis=-1).mean()),
    },
    "the distance to LocalTrain grows and the distance to GlobalTrain shrinks monotonically in lam": {
        "value": None,
        "holds": bool(np.all(np.diff(to_local) > 0) and np.all(np.diff(to_global) < 0)),
    },
}
if __name__ == "__main__":
    for claim, v in CLAIMS.items():
        print(("holds: " if v["holds"] else "FAILS: ") + claim, v["value"])
