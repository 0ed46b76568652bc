r"""pFedMe, FedAvg and Per-FedAvg on multinomial logistic regression with gathered mini-batches.

The pFedMe comparison (its §5) runs these algorithms on data sets of up to 25,810 samples
per client.  pFedMe runs :func:`moreau.fl.pfedme` (mini-batches gathered as the ``|D|`` rows
drawn, the inner step :math:`1/(L_i + \lambda)` per client, ``personal="inner"``: the
personalised model is the δ-approximate :math:`\tilde\theta_i` of the last inner solve, as
the paper evaluates it, and no certified prox per round), one round per call so that the
server's client sampling keeps this module's draw (``rng.permutation``, below; moreau.fl
samples with ``rng.random`` keys): the seed stream, and so every number, is the one of the
hand-written loop it replaces (tested to 1e-12).  FedAvg and Per-FedAvg keep their own loops
here: ``moreau.fl.fedavg`` and ``per_fedavg`` draw a mini-batch as a weight vector over all
of a client's samples (a gradient over up to 25,810 rows where this loop takes 20) and
sample clients from another stream.  With full batches (``B=None``) and ``S = N`` every
update equals ``moreau.fl``'s (tested).

Data: ``X`` ``(m, n, D)``, one-hot ``Y`` ``(m, n, C)``, ``n`` ``(m,)`` the number of valid
rows of each client (padding after them), ``mu`` the ridge; models ``(m, D*C)`` flattened
row-major as :class:`moreau.Multinomial`.

References: pFedMe (T Dinh et al., 2020), Algorithm 1 and §5; Per-FedAvg (Fallah et al.,
2020), Algorithm 1 and §5 (first-order variant); FedAvg (McMahan et al., 2017).
"""

from __future__ import annotations

import numpy as np

from moreau import Multinomial, fl

__all__ = ["grad", "batch", "objective", "pfedme", "fedavg", "per_fedavg", "local_only", "accuracy"]


def grad(Xb, Yb, wb, mu, theta):
    r"""Gradient of :math:`\sum_j w_j\,\mathrm{CE}(W^\top x_j, y_j)/\sum_j w_j + \frac\mu2\|\theta\|^2`
    per client: ``Xb`` ``(m, B, D)``, ``Yb`` ``(m, B, C)``, ``wb`` ``(m, B)``, ``theta`` ``(m, D*C)``."""
    m, _, D = Xb.shape
    C = Yb.shape[-1]
    Z = Xb @ theta.reshape(m, D, C)
    P = np.exp(Z - Z.max(axis=-1, keepdims=True))
    P /= P.sum(axis=-1, keepdims=True)
    G = np.swapaxes(Xb, -1, -2) @ ((P - Yb) * wb[..., None]) / wb.sum(axis=-1)[:, None, None]
    return G.reshape(m, D * C) + mu * theta


def batch(rng, X, Y, n, B):
    """A fresh mini-batch per client: ``B`` rows i.i.d. uniform over its ``n_i`` valid rows (with
    replacement, one draw ``rng.random((m, B))``); ``B=None``: all valid rows."""
    if B is None:
        return X, Y, (np.arange(X.shape[1]) < n[:, None]).astype(float)
    idx = np.minimum((rng.random((X.shape[0], B)) * n[:, None]).astype(np.int64), n[:, None] - 1)
    return (
        np.take_along_axis(X, idx[..., None], axis=1),
        np.take_along_axis(Y, idx[..., None], axis=1),
        np.ones(idx.shape),
    )


def _pick(rng, m, S):
    """S of m clients, uniformly without replacement (boolean mask ``(m,)``)."""
    mask = np.zeros(m, dtype=bool)
    if S is None or S >= m:
        mask[:] = True
    else:
        mask[rng.permutation(m)[:S]] = True
    return mask


def objective(X, Y, n, mu, **kw):
    """The clients' :class:`moreau.Multinomial` (training rows, padding of weight 0); ``kw`` to it
    (``max_bytes``: its refusal of sizes whose prox would not fit in memory)."""
    valid = (np.arange(X.shape[1]) < n[:, None]).astype(X.dtype)
    return Multinomial(X, np.argmax(Y, axis=-1), n_classes=Y.shape[-1], mu=mu, weights=valid, **kw)


def pfedme(
    rng,
    X,
    Y,
    n,
    mu,
    *,
    lam,
    eta,
    beta,
    R,
    K,
    inner_eta,
    rounds,
    S=None,
    B=None,
    f=None,
    record=None,
    start=None,
    save=None,
):
    r"""pFedMe, Algorithm 1 with the inner problem (7) solved by K gradient steps of size
    ``inner_eta`` from :math:`\theta = w_{i,r}^t` (as the paper's experiments): ``"client"`` for
    :math:`1/(L_i + \lambda)`, or one number (an array equal across clients is that number);
    every client runs its R local rounds (:func:`moreau.fl.pfedme`, one round per call), the
    server averages S sampled ones with the β-step.  ``f``: the clients' objective if already
    built (else :func:`objective`).  Returns ``(w_T (D*C,), theta_tilde (m, D*C))``, the last
    inner solutions.  ``record(t, w_t, personal)``, if given, is called at the start (t = 0,
    :math:`\tilde\theta = 0`) and after every round, ``personal()`` returning the personalised models.
    ``save(t, state)``, if given, is called after every round t < T with ``state()`` the loop's state;
    ``start = (t, state)`` resumes from it (no record at t = 0 then): the run continues as if it had
    not stopped when ``rng`` holds the state it had then (the same for every loop of this module)."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    f = objective(X, Y, n, mu) if f is None else f
    if not isinstance(inner_eta, str):
        step = np.unique(np.asarray(inner_eta, dtype=float))
        if step.size != 1:
            raise ValueError(
                "inner_eta must be 'client' (1/(L_i + lam)) or one step for every client "
                f"(got {step.size} different values)"
            )
        inner_eta = float(step[0])
    w = np.zeros(DC)
    theta = np.zeros((m, DC))
    t0 = 0 if start is None else start[0]
    if start is not None:
        w, theta = start[1]["w"], start[1]["theta"]
    elif record is not None:
        record(0, w, lambda: theta)
    for t in range(t0, rounds):
        h = fl.pfedme(
            f,
            lam=lam,
            eta=eta,
            beta=1.0,
            R=R,
            rounds=1,
            batch_size=B,
            inner=K,
            inner_eta=inner_eta,
            w0=w,
            rng=rng,
            personal="inner",
        )
        W, theta = np.asarray(h.w_local[1]), np.asarray(h.theta[1])
        mask = _pick(rng, m, S)
        w = (1 - beta) * w + beta * W[mask].mean(axis=0)
        if record is not None:
            record(t + 1, w, lambda theta=theta: theta)
        if save is not None and t + 1 < rounds:
            save(t + 1, lambda w=w, theta=theta: {"w": w, "theta": theta})
    return w, theta


def fedavg(rng, X, Y, n, mu, *, eta, tau, rounds, S=None, B=None, record=None, start=None, save=None):
    """FedAvg: the sampled clients take τ mini-batch gradient steps from w_t; uniform average.
    ``record(t, w_t, personal)`` as in :func:`pfedme` (``personal()`` is None: one global model),
    ``start`` and ``save`` too."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w = np.zeros(DC) if start is None else start[1]["w"]
    if record is not None and start is None:
        record(0, w, lambda: None)
    for t in range(0 if start is None else start[0], rounds):
        mask = _pick(rng, m, S)
        W = np.broadcast_to(w, (m, DC)).copy()
        for _ in range(tau):
            W -= eta * grad(*batch(rng, X, Y, n, B), mu, W)
        w = W[mask].mean(axis=0)
        if record is not None:
            record(t + 1, w, lambda: None)
        if save is not None and t + 1 < rounds:
            save(t + 1, lambda w=w: {"w": w})
    return w


def per_fedavg(
    rng,
    X,
    Y,
    n,
    mu,
    *,
    alpha,
    beta,
    tau,
    rounds,
    S=None,
    B=None,
    record=None,
    eval_rng=None,
    start=None,
    save=None,
):
    r"""Per-FedAvg, first-order variant: per local step
    :math:`\tilde w = w - \alpha\tilde\nabla f_i(w, \mathcal D)`,
    :math:`w \leftarrow w - \beta\tilde\nabla f_i(\tilde w, \mathcal D')`; uniform average of the sampled
    clients.  Returns ``(w_K, personalised (m, D*C))``, the personalised model one α-step from
    :math:`w_K` on a fresh mini-batch (pFedMe §5: "the local model after taking an SGD step").
    ``record(t, w_t, personal)`` as in :func:`pfedme`: ``personal()`` takes that α-step on a
    mini-batch drawn from ``eval_rng`` before the last round (so that evaluating leaves the
    training stream alone), from ``rng`` after it (the returned model).  ``start`` and ``save`` as in
    :func:`pfedme` (``eval_rng`` must then hold its state of that round too)."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w = np.zeros(DC) if start is None else start[1]["w"]

    def personal(g, w):
        W = np.broadcast_to(w, (m, DC))
        return W - alpha * grad(*batch(g, X, Y, n, B), mu, W)

    if record is not None and start is None:
        record(0, w, lambda: personal(eval_rng, w))
    for t in range(0 if start is None else start[0], rounds):
        mask = _pick(rng, m, S)
        W = np.broadcast_to(w, (m, DC)).copy()
        for _ in range(tau):
            Wt = W - alpha * grad(*batch(rng, X, Y, n, B), mu, W)
            W -= beta * grad(*batch(rng, X, Y, n, B), mu, Wt)
        w = W[mask].mean(axis=0)
        if record is not None and t + 1 < rounds:
            record(t + 1, w, lambda w=w: personal(eval_rng, w))
        if save is not None and t + 1 < rounds:
            save(t + 1, lambda w=w: {"w": w})
    final = personal(rng, w)
    if record is not None:
        record(rounds, w, lambda: final)
    return w, final


def local_only(rng, X, Y, n, mu, *, eta, tau, rounds, B=None, record=None, start=None, save=None):
    """The local-only baseline: each client trains alone from 0, τ mini-batch gradient steps of size
    η per round on its own rows, no server and no communication.  Returns the models ``(m, D*C)``.
    ``record(t, None, personal)`` as in :func:`pfedme` (``personal()``: every client's own model),
    ``start`` and ``save`` too."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    W = np.zeros((m, DC)) if start is None else start[1]["W"]
    if record is not None and start is None:
        record(0, None, lambda: W)
    for t in range(0 if start is None else start[0], rounds):
        for _ in range(tau):
            W = W - eta * grad(*batch(rng, X, Y, n, B), mu, W)
        if record is not None:
            record(t + 1, None, lambda W=W: W)
        if save is not None and t + 1 < rounds:
            save(t + 1, lambda W=W: {"W": W})
    return W


def accuracy(X, y, weights, theta):
    """Test accuracy over all clients' test samples together (correct / total), the models
    ``theta`` ``(m, D*C)`` or one global ``(D*C,)``; ``X`` ``(m, n, D)``, ``weights`` 0/1 padding."""
    m, _, D = X.shape
    theta = np.broadcast_to(theta, (m, theta.shape[-1]))
    pred = np.argmax(X @ theta.reshape(m, D, -1), axis=-1)
    return float(np.sum((pred == y) * weights) / np.sum(weights))
