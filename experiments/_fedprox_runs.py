"""Algorithm 1 on the FedProx paper's synthetic data with its §6.1 step sizes (shared by fig1d and fig2)."""

from __future__ import annotations

import numpy as np

from moreau import data, fl

__all__ = ["METRICS", "STEP_NOTE", "paper_run"]

STEP_NOTE = (
    "step sizes of §6.1: gamma = (lam + L)/(lam L) = 1/L_g, eta = 1/(L + lam), L = lambda_max(X^T X)/(4n) "
    "(without the ridge, as the paper computes it; the largest over clients)"
)

#: the per-round metrics of :func:`paper_run` (the long-format CSV's ``metric`` column)
METRICS = {
    "global_total": "||w_t^(g) - w*^(g)||^2: the global model's total error (w*^(g) = sum_k p_k w_k, the generating "
    "models' mean)",
    "local_total": "(1/m) sum_i ||w_t^(i) - w*^(i)||^2: the local models' total error",
    "distance_to_optimum": "||w_t^(g) - w~^(g)||^2: squared distance of the global model to this lambda's exact "
    "FedProx optimum (moreau.fl.fedprox_optimum)",
    "train_loss": "(1/m) sum_i f_i(w_t^(g)): the global model's training objective (logistic loss + ridge)",
    "test_accuracy": "the global model's accuracy (%) on every client's test rows (n_test per client, drawn after "
    "the training rows)",
    "local_test_accuracy": "the local models' accuracy (%), each on its own client's test rows, mean over clients",
    "global_statistical": "||w~^(g) - w*^(g)||^2: the exact optimum's global error (the level the total error "
    "approaches; the same every round)",
    "local_statistical": "(1/m) sum_i ||w~^(i) - w*^(i)||^2: the exact optimum's local error (the same every round)",
}


def _accuracy(test, W):
    """% of test rows whose label's sign the models ``W`` ``(T, m, d)`` predict; ``(T,)`` over all
    clients' rows and ``(T,)`` the mean over clients of each client's own."""
    X, y = np.asarray(test.X), np.asarray(test.y)
    margin = np.einsum("ind,tid->tin", X, W) * np.where(y > 0, 1.0, -1.0)  # (T, m, n_test)
    hits = (margin > 0) + 0.5 * (margin == 0)  # a tie (x.w = 0: w = 0 at round 0) is a coin flip: half a hit
    return 100 * hits.mean(axis=(1, 2)), 100 * hits.mean(axis=2).mean(axis=1)


def paper_run(rng, *, R, lams, Ks, rounds, m, n, d, mu, n_test=0, gamma_scale=1.0, eta_scale=1.0):
    """Algorithm 1 (``moreau.fl.fedprox``) on ONE data set for every ``lam`` in ``lams`` and ``K`` in
    ``Ks`` (so runs compare on the same data).  Yields ``(lam, K, {metric: values (rounds+1,)})``,
    the metrics of :data:`METRICS` (the accuracies only with ``n_test`` > 0 test rows per client,
    drawn after the training rows: the training data do not depend on ``n_test``).  The steps are
    §6.1's times ``gamma_scale`` and ``eta_scale`` (1: the paper's)."""
    P = data.fedprox_synthetic(rng, R=R, m=m, n=n, d=d, mu=mu, n_test=n_test)
    f, ws, wg = P.objective, np.asarray(P.w_star), np.asarray(P.w_star_global)
    L = float(np.max(P.constants["L"])) - mu
    for lam in lams:
        opt_g, opt_l = (np.asarray(a) for a in fl.fedprox_optimum(f, lam))
        stat = (float(np.sum((opt_g - wg) ** 2)), float(np.mean(np.sum((opt_l - ws) ** 2, axis=-1))))
        for K in Ks:
            gamma, eta = gamma_scale * (lam + L) / (lam * L), eta_scale / (L + lam)
            h = fl.fedprox(f, lam=lam, gamma=gamma, eta=eta, K=K, rounds=rounds)
            G, W = np.asarray(h.w_global), np.asarray(h.w_local)
            out = {
                "global_total": np.sum((G - wg) ** 2, axis=-1),
                "local_total": np.mean(np.sum((W - ws) ** 2, axis=-1), axis=-1),
                "distance_to_optimum": np.sum((G - opt_g) ** 2, axis=-1),
                "train_loss": np.mean(np.asarray(f.value(np.broadcast_to(G[:, None, :], W.shape))), axis=-1),
            }
            if n_test:
                out["test_accuracy"] = _accuracy(P.test, np.broadcast_to(G[:, None, :], W.shape))[0]
                out["local_test_accuracy"] = _accuracy(P.test, W)[1]
            out["global_statistical"] = np.full(G.shape[0], stat[0])
            out["local_statistical"] = np.full(G.shape[0], stat[1])
            yield lam, K, out
