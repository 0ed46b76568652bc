r"""The pFedMe §5 comparison shared by ``pfedme-synthetic`` and ``pfedme-digits``.

Two hyperparameter settings per data set, on the same data per seed:

* ``same`` (pFedMe Fig. 3/4: the same parameters for every algorithm): η = 0.005,
  |D| = 20, R = 20 local steps, K = 5, β = 1, λ = 15; FedAvg η = 0.005; Per-FedAvg
  α = β̂ = 0.005 (our reading of "the same learning rate");
* ``tuned`` (Table 1's fine-tuned values): FedAvg η = 0.02; Per-FedAvg (α̂, β̂) of the table;
  pFedMe λ, η = 0.01 and β = 2 of the table.

pFedMe's inner step is :math:`1/(L_i + \lambda)`, :math:`L_i` the Multinomial curvature bound of
client i (valid, so the K inner steps contract; the paper does not state its step): pFedMe runs
:func:`moreau.fl.pfedme` with ``inner_eta="client"``, which takes :math:`L_i` from the clients'
objective built here (checked equal to the ``L`` passed in).
Accuracy as the paper measures it: correct test predictions of all N clients together over
their test samples (75/25 split per client), the personalised models (pFedMe-PM: the last
inner solution :math:`\tilde\theta_i`; Per-FedAvg: one α-step from the global model) or the
global model (FedAvg, pFedMe-GM) on every client's test data.  Reported after the last
round (the paper's code reports the best round; we do not).  Every method runs on the same data
set per seed, so the claims compare them by paired t intervals over the seeds, an ordering or
"most accurate" with Holm over its comparisons (``moreau.experiments._verdicts``).
"""
from __future__ import annotations

import numpy as np

from . import _pfedme_runs as runs
from ._plot import figure, save
from ._verdicts import by_seed, paired

__all__ = ["METHODS", "SETTINGS", "compare", "finish_compare"]

METHODS = ("FedAvg", "Per-FedAvg", "pFedMe-GM", "pFedMe-PM")
SETTINGS = ("same", "tuned")


def compare(rng, train, test, L, mu, params):
    """Rows ``{setting, method, accuracy}`` of one seed: ``train``/``test`` = (X, y, weights) padded
    ``(N, n, D)``, ``L`` ``(N,)`` the clients' curvature bounds."""
    X, y, wt = train
    C = params["n_classes"]
    Y = (y[..., None] == np.arange(C)).astype(float)
    n = wt.sum(axis=-1).astype(np.int64)
    common = {"rounds": params["rounds"], "S": params["S"], "B": params["batch"]}
    acc = lambda model: runs.accuracy(*test, model)  # noqa: E731
    f = runs.objective(X, Y, n, mu)
    if not np.allclose(np.asarray(f.smoothness()), L, rtol=1e-12, atol=0):
        raise ValueError("L must be the clients' Multinomial curvature bounds (the objective's smoothness())")
    rows = []
    for setting in SETTINGS:
        hp = params[setting]
        w = runs.fedavg(rng, X, Y, n, mu, eta=hp["fedavg_eta"], tau=params["R"], **common)
        _, th_p = runs.per_fedavg(rng, X, Y, n, mu, alpha=hp["alpha"], beta=hp["beta_hat"], tau=params["R"],
                                  **common)
        w_g, th = runs.pfedme(rng, X, Y, n, mu, lam=hp["lam"], eta=hp["eta"], beta=hp["beta"], R=params["R"],
                              K=params["K"], inner_eta="client", f=f, **common)
        for method, model in zip(METHODS, (w, th_p, w_g, th)):
            rows.append({"setting": setting, "method": method, "accuracy": 100 * acc(model)})
    return rows


def summary(rows, setting):
    """``{method: (mean, std over seeds, seeds)}`` of one setting."""
    out = {}
    for method in METHODS:
        a = np.array([r["accuracy"] for r in rows if r["setting"] == setting and r["method"] == method])
        out[method] = (float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0, int(a.size))
    return out


def finish_compare(rows, params, out, stem, paper, data_label, paper_label, quick=False):
    """Figure (one panel per setting: mean ± std over seeds, the paper's Table 1 beside the
    tuned panel) and the ordering claims."""
    fig, ax = figure(2, width=6.8, aspect=0.8)
    x = np.arange(len(METHODS))
    stats = {s: summary(rows, s) for s in SETTINGS}
    for a, setting in zip(ax[0], SETTINGS):
        st = stats[setting]
        a.bar(x, [st[m][0] for m in METHODS], yerr=[st[m][1] for m in METHODS], color=[f"C{k}" for k in x],
              alpha=0.8, capsize=3)
        k = st[METHODS[0]][2]
        a.bar([0], [0], color="0.6", label=f"measured (mean ± std, {k} seed{'s' * (k > 1)})")  # legend key
        if setting == "tuned":
            a.plot(x, [paper[m] for m in METHODS], "k*", markersize=7, label=f"pFedMe paper, Table 1 ({paper_label})")
        a.set_xticks(x, METHODS)
        a.set(ylabel="test accuracy (%)", ylim=(0, 119),
              title=f"({'a' if setting == 'same' else 'b'}) {data_label}: "
                    + ("same hyperparameters (Fig. 3/4)" if setting == "same" else "tuned (Table 1)")
                    + f", T = {params['rounds']}")
        a.legend(loc="upper left")
    figures = save(fig, out, stem, quick)
    tuned = stats["tuned"]
    means = {m: tuned[m][0] for m in METHODS}
    acc = {(st, m): by_seed(rows, "accuracy", setting=st, method=m) for st in SETTINGS for m in METHODS}
    paper_order = sorted(METHODS, key=lambda m: -paper[m])

    def ahead(setting, pairs):  # per-seed accuracy differences (points) of (a ahead of b) pairs
        return [acc[(setting, a)] - acc[(setting, b)] for a, b in pairs], [f"{a} − {b}" for a, b in pairs]

    best = [("pFedMe-PM", m) for m in METHODS if m != "pFedMe-PM"]
    claims = [
        paired("Table 1 ordering (tuned): " + " > ".join(paper_order) + " (value: measured means, %)",
               *ahead("tuned", list(zip(paper_order, paper_order[1:]))), value=means, units=" points"),
        paired("pFedMe's personalised model is the most accurate (tuned)", *ahead("tuned", best),
               value=max(METHODS, key=lambda m: means[m]), units=" points"),
        paired("pFedMe's personalised model is the most accurate (same hyperparameters, Fig. 3/4)",
               *ahead("same", best), value={m: stats["same"][m][0] for m in METHODS}, units=" points"),
        paired("pFedMe-GM beats FedAvg (tuned; 'the global model of pFedMe only performs better than FedAvg')",
               *ahead("tuned", [("pFedMe-GM", "FedAvg")]), value=means["pFedMe-GM"] - means["FedAvg"],
               units=" points"),
    ]
    return {"figures": figures, "claims": claims}
