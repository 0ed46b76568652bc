r"""Per-FedAvg's Table 1 runs on the digits (``perfedavg-table1``): the data split, the training loop
and the evaluation after one local step.

* :func:`split`: Per-FedAvg §5 / Appendix I's pattern scaled to the digits (half the users ``a`` images
  of each of the classes 0-4, the other half ``a/2`` of one of them and ``2a`` of one of 5-9),
  each user's images of each class split into train and test;
* :func:`run_method`: FedAvg (``moreau.fl.fedavg``), Per-FedAvg FO and HF (``moreau.fl.per_fedavg``)
  from w = 0, called in chunks of ``eval_every`` rounds with the same generator;
* :func:`run_local_only`: the local-only baseline (each user trains alone, no communication),
  evaluated by the same protocol on per-user models;
* :class:`Evaluator`: the global model adapted per user by one stochastic gradient step of size α
  on a mini-batch (drawn from the training rows, or from the evaluated rows with ``adapt_on =
  "test"``: the paper's wording, which leaks them), the mean over users of each user's accuracy.

References: Per-FedAvg (Fallah et al., 2020), §5, Appendix H and I.
"""

from __future__ import annotations

import math

import numpy as np

from moreau import fl

from . import _pfedme_runs as runs
from ._evaluate import Split

__all__ = ["LOCAL", "METHODS", "SHOWN", "Evaluator", "run_local_only", "run_method", "split", "user_accuracy"]

METHODS = ("FedAvg + update", "Per-FedAvg (FO)", "Per-FedAvg (HF)")
#: the baseline beside them (figures, tables, summary; not part of the paper's claims)
LOCAL = "Local only"
SHOWN = (*METHODS, LOCAL)


def split(X, y, N, a, rng, train_fraction=0.75):
    """Per-FedAvg's split (module doc): ``(train, test)``, each ``(X, y, weights)`` padded ``(N, n, D)``
    (valid rows first, zero rows of weight 0 after them)."""
    half = N // 2
    counts = np.zeros((N, 10), dtype=np.int64)
    counts[:half, :5] = a
    j = np.arange(N - half)
    counts[half + rng.permutation(j), j % 5] = a // 2
    counts[half + rng.permutation(j), 5 + j % 5] = 2 * a
    pools = [list(rng.permutation(np.flatnonzero(y == c))) for c in range(10)]
    parts = {"train": [[] for _ in range(N)], "test": [[] for _ in range(N)]}
    for i in range(N):
        for c in range(10):
            k = int(counts[i, c])
            if k == 0:
                continue
            if len(pools[c]) < k:
                raise ValueError(f"class {c} has too few images for this split")
            idx, pools[c] = pools[c][:k], pools[c][k:]
            n_tr = math.floor(train_fraction * k)
            parts["train"][i] += idx[:n_tr]
            parts["test"][i] += idx[n_tr:]

    def pad(lists):
        n = max(len(v) for v in lists)
        out_X, out_y, w = np.zeros((N, n, X.shape[1])), np.zeros((N, n)), np.zeros((N, n))
        for i, v in enumerate(lists):
            v = rng.permutation(np.asarray(v, dtype=np.int64))
            out_X[i, : v.size], out_y[i, : v.size], w[i, : v.size] = X[v], y[v], 1.0
        return out_X, out_y, w

    return pad(parts["train"]), pad(parts["test"])


def user_accuracy(X, y, w, theta):
    """Mean over users (with rows) of each user's accuracy (%): ``X`` ``(m, n, D)``, ``theta`` ``(m, D*C)``."""
    m, _, D = X.shape
    theta = np.broadcast_to(theta, (m, theta.shape[-1]))
    pred = np.argmax(X @ theta.reshape(m, D, -1), axis=-1)
    n = w.sum(axis=1)
    acc = ((pred == y) * w).sum(axis=1) / np.where(n > 0, n, 1.0)
    return float(100.0 * acc[n > 0].mean()) if np.any(n > 0) else float("nan")


class Evaluator:
    """The metrics of a global model ``(D*C,)`` (or per-user models ``(m, D*C)``: Local only) at round t:
    the one-step update per user on batches that depend on (round, which rows) only, so that every
    method meets the same batches."""

    def __init__(self, key, parts, params, alpha):
        self.key, self.parts, self.alpha = key, parts, alpha
        self.mu, self.B, self.on = params["mu"], params["batch"], params["adapt_on"]
        self.C = 10

    def adapt(self, w, t, which):
        X, y, wt = self.parts[which]
        n = wt.sum(axis=1).astype(np.int64)
        Y = (y[..., None] == np.arange(self.C)).astype(float)
        g = np.random.default_rng([self.key, t, ("train", "validation", "test").index(which)])
        W = np.broadcast_to(w, (X.shape[0], w.shape[-1]))
        return W - self.alpha * runs.grad(*runs.batch(g, X, Y, np.maximum(n, 1), self.B), self.mu, W)

    def __call__(self, t, w):
        theta = self.adapt(w, t, "train") if self.on == "train" else None
        out = {}
        for which in ("test", "validation"):
            if which not in self.parts:
                continue
            th = theta if theta is not None else self.adapt(w, t, which)
            out[f"{which}_accuracy"] = user_accuracy(*self.parts[which], th)
        out["test_accuracy_before_update"] = user_accuracy(*self.parts["test"], w)
        th = theta if theta is not None else self.adapt(w, t, "train")
        out["train_loss"] = Split(*self.parts["train"]).loss(th, self.mu)
        return out


def run_method(method, f, rng, params, tau, alpha, evaluate, start=None, save=None):
    """One method over ``rounds`` rounds in chunks of ``eval_every`` (moreau.fl called per chunk with
    w0 = the last global model, the same generator: the draws of one long call); the metrics at the
    evaluated rounds ``{metric: [values]}`` and the rounds.  ``save(t, state)``, if given, is called
    after every chunk but the last with ``state()`` the run's state (the model, the generator's state,
    the metrics so far); ``start = (t, state)`` continues from one as if the run had not stopped."""
    T, every = params["rounds"], params["eval_every"]
    B, S, beta = params["batch"], params["S"], params["beta"]
    w = np.zeros(f.dim)
    rounds, values = [], {}

    def record(t):
        rounds.append(t)
        for k, v in evaluate(t, w).items():
            values.setdefault(k, []).append(v)

    if start is None:
        record(0)
        t = 0
    else:
        t, state = start
        w, rounds, values = state["w"], state["rounds"], state["values"]
        rng.bit_generator.state = state["rng"]
    while t < T:
        k = min(every - t % every, T - t)
        if method == METHODS[0]:
            h = fl.fedavg(f, eta=beta, tau=tau, rounds=k, S=S, batch_size=B, w0=w, rng=rng)
        elif method == METHODS[1]:
            h = fl.per_fedavg(
                f,
                alpha=alpha,
                beta=beta,
                tau=tau,
                rounds=k,
                S=S,
                D=B,
                D_prime=B,
                variant="first_order",
                w0=w,
                rng=rng,
            )
        else:
            h = fl.per_fedavg(
                f,
                alpha=alpha,
                beta=beta,
                tau=tau,
                rounds=k,
                S=S,
                D=B,
                D_prime=B,
                D_second=B,
                variant="hessian_free",
                delta=params["delta"],
                w0=w,
                rng=rng,
            )
        w = np.asarray(h.w_global[-1])
        t += k
        record(t)
        if save is not None and t < T:
            save(t, lambda w=w: {"w": w, "rng": rng.bit_generator.state, "rounds": rounds, "values": values})
    return rounds, values


def run_local_only(train, rng, params, tau, evaluate, start=None, save=None):
    """The local-only baseline: every user trains alone from 0, τ mini-batch gradient steps of size β
    (FedAvg's step and local steps) per round on its own training rows (batches of ``batch`` rows drawn
    with replacement, :func:`moreau.experiments._pfedme_runs.local_only`), no server; its per-user models
    evaluated by ``evaluate`` at the rounds :func:`run_method` evaluates.  ``train`` = (X, y, weights)
    padded ``(m, n, D)``; ``start`` and ``save`` as in :func:`run_method` (a save after every round)."""
    X, y, w = train
    Y = (y[..., None] == np.arange(10)).astype(float)
    n = w.sum(axis=1).astype(np.int64)
    T, every = params["rounds"], params["eval_every"]
    rounds, values = [], {}

    def record(t, _, personal):
        if t % every and t != T:
            return
        rounds.append(t)
        for k, v in evaluate(t, personal()).items():
            values.setdefault(k, []).append(v)

    loop_start = None
    if start is not None:
        t, state = start
        rounds, values = state["rounds"], state["values"]
        rng.bit_generator.state = state["rng"]
        loop_start = (t, {"W": state["W"]})

    def save_loop(t, model):
        save(t, lambda: {**model(), "rng": rng.bit_generator.state, "rounds": rounds, "values": values})

    runs.local_only(
        rng,
        X,
        Y,
        n,
        params["mu"],
        eta=params["beta"],
        tau=tau,
        rounds=T,
        B=params["batch"],
        record=record,
        start=loop_start,
        save=None if save is None else save_loop,
    )
    return rounds, values
