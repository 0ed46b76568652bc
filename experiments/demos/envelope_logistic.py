# %% [markdown]
# # Moreau envelopes of a logistic loss and of a weakly convex quadratic (1-D)
#
# The slide of `experiments/envelope_demo.py`: a convex logistic loss f with its envelopes
# `F_λ` (below f, smoother as λ decreases, the same minimiser), a weakly convex quadratic whose
# envelope exists only for λ > |a| (curvature λa/(λ + a)), and the prox map pulling w towards
# the minimiser, harder for small λ. Every number is moreau's (certified prox, exact envelopes).

# %%
import json
import os
from pathlib import Path

import numpy as np

from moreau.experiments import envelope_demo
from moreau.experiments.demos import plotted

OUT = Path(globals().get("OUT") or os.environ.get("MOREAU_DEMO_OUT", "out/demos"))
SEED = int(globals().get("SEED") or 0)
envelope_demo.main(["--out", str(OUT), "--seed", str(SEED)])
FIGURES = [OUT / "envelope_demo.png"]
saved = json.loads((OUT / "envelope_demo.json").read_text())
data = saved["logistic"]
lams, quad_lams = saved["provenance"]["params"]["lams"], saved["provenance"]["params"]["quad_lams"]
ROWS = plotted("logistic", "f", data["theta"], data["f"])
ROWS += [
    r
    for lam, F in zip(lams, data["envelope"], strict=True)
    for r in plotted("logistic", f"F, lam = {lam:g}", data["theta"], F)
]
ROWS += [
    r
    for lam, P in zip(lams, data["prox"], strict=True)
    for r in plotted("prox", f"prox, lam = {lam:g}", data["theta"], P)
]
ROWS += plotted("quadratic", "f", saved["quadratic"]["theta"], saved["quadratic"]["f"])
ROWS += [
    r
    for lam, F in zip(quad_lams, saved["quadratic"]["envelope"], strict=True)
    for r in plotted("quadratic", f"F, lam = {lam:g}", saved["quadratic"]["theta"], F)
]

# %% [markdown]
# What the picture claims, checked on the plotted numbers: F_λ ≤ f everywhere, and the prox
# fixes the minimiser of f.

# %%
f, F = np.array(data["f"]), np.array(data["envelope"])
prox, theta = np.array(data["prox"]), np.array(data["theta"])
i = int(np.argmin(np.abs(theta - data["minimiser"])))
CLAIMS = {
    "F_lam <= f on the grid (max of F - f)": {
        "value": float(np.max(F - f)),
        "holds": bool(np.all(F <= f + 1e-12)),
    },
    "prox pulls every w towards the minimiser (max |prox - t*| / |w - t*|)": {
        "value": float(
            np.max(
                np.abs(prox[:, np.arange(len(theta)) != i] - data["minimiser"])
                / np.abs(theta[np.arange(len(theta)) != i] - data["minimiser"])
            )
        ),
        "holds": bool(np.all(np.abs(prox - data["minimiser"]) <= np.abs(theta - data["minimiser"]) + 1e-12)),
    },
}
if __name__ == "__main__":
    for claim, v in CLAIMS.items():
        print(("holds: " if v["holds"] else "FAILS: ") + claim, v["value"])
