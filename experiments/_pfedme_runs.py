r"""pFedMe, FedAvg and Per-FedAvg on multinomial logistic regression with gathered mini-batches.

The pFedMe comparison (its §5) runs these algorithms on data sets of up to 25,810 samples
per client.  ``moreau.fl`` draws a mini-batch as a weight vector over all of a client's
samples and, in ``moreau.fl.pfedme``, certifies every round's personalised models
:math:`\mathrm{prox}_{f_i/\lambda}(w_t)` by Newton on the ``(d+1)C``-dimensional softmax
Hessian (88 s for one round on 100 Synthetic clients of at most 200 samples, measured), so
the figures use this module instead: the same updates, each mini-batch gathered as the
``|D|`` rows it holds, and the personalised model evaluated as the paper does (the
δ-approximate :math:`\tilde\theta_i` of pFedMe's last inner solve; Per-FedAvg's one step
from the global model).  With full batches (``B=None``) and ``S = N`` every update equals
``moreau.fl``'s (tested).

Data: ``X`` ``(m, n, D)``, one-hot ``Y`` ``(m, n, C)``, ``n`` ``(m,)`` the number of valid
rows of each client (padding after them), ``mu`` the ridge; models ``(m, D*C)`` flattened
row-major as :class:`moreau.Multinomial`.

References: pFedMe (T Dinh et al., 2020), Algorithm 1 and §5; Per-FedAvg (Fallah et al.,
2020), Algorithm 1 and §5 (first-order variant); FedAvg (McMahan et al., 2017).
"""
from __future__ import annotations

import numpy as np

__all__ = ["grad", "batch", "pfedme", "fedavg", "per_fedavg", "accuracy"]


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
    return (np.take_along_axis(X, idx[..., None], axis=1), np.take_along_axis(Y, idx[..., None], axis=1),
            np.ones(idx.shape))


def _pick(rng, m, S):
    """S of m clients, uniformly without replacement (boolean mask ``(m,)``)."""
    mask = np.zeros(m, dtype=bool)
    if S is None or S >= m:
        mask[:] = True
    else:
        mask[rng.permutation(m)[:S]] = True
    return mask


def pfedme(rng, X, Y, n, mu, *, lam, eta, beta, R, K, inner_eta, rounds, S=None, B=None):
    r"""pFedMe, Algorithm 1 with the inner problem (7) solved by K gradient steps of size
    ``inner_eta`` ``(m,)`` from :math:`\theta = w_{i,r}^t` (as the paper's experiments); every client
    runs its R local rounds, the server averages S sampled ones with the β-step.  Returns
    ``(w_T (D*C,), theta_tilde (m, D*C))``, the last inner solutions."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w = np.zeros(DC)
    theta = np.zeros((m, DC))
    for _ in range(rounds):
        W = np.broadcast_to(w, (m, DC)).copy()
        for _ in range(R):
            Xb, Yb, wb = batch(rng, X, Y, n, B)
            theta = W.copy()
            for _ in range(K):
                theta -= inner_eta[:, None] * (grad(Xb, Yb, wb, mu, theta) + lam * (theta - W))
            W -= eta * lam * (W - theta)
        mask = _pick(rng, m, S)
        w = (1 - beta) * w + beta * W[mask].mean(axis=0)
    return w, theta


def fedavg(rng, X, Y, n, mu, *, eta, tau, rounds, S=None, B=None):
    """FedAvg: the sampled clients take τ mini-batch gradient steps from w_t; uniform average."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w = np.zeros(DC)
    for _ in range(rounds):
        mask = _pick(rng, m, S)
        W = np.broadcast_to(w, (m, DC)).copy()
        for _ in range(tau):
            W -= eta * grad(*batch(rng, X, Y, n, B), mu, W)
        w = W[mask].mean(axis=0)
    return w


def per_fedavg(rng, X, Y, n, mu, *, alpha, beta, tau, rounds, S=None, B=None):
    r"""Per-FedAvg, first-order variant: per local step
    :math:`\tilde w = w - \alpha\tilde\nabla f_i(w, \mathcal D)`,
    :math:`w \leftarrow w - \beta\tilde\nabla f_i(\tilde w, \mathcal D')`; uniform average of the sampled
    clients.  Returns ``(w_K, personalised (m, D*C))``, the personalised model one α-step from
    :math:`w_K` on a fresh mini-batch (pFedMe §5: "the local model after taking an SGD step")."""
    m, DC = X.shape[0], X.shape[-1] * Y.shape[-1]
    w = np.zeros(DC)
    for _ in range(rounds):
        mask = _pick(rng, m, S)
        W = np.broadcast_to(w, (m, DC)).copy()
        for _ in range(tau):
            Wt = W - alpha * grad(*batch(rng, X, Y, n, B), mu, W)
            W -= beta * grad(*batch(rng, X, Y, n, B), mu, Wt)
        w = W[mask].mean(axis=0)
    W = np.broadcast_to(w, (m, DC))
    return w, W - alpha * grad(*batch(rng, X, Y, n, B), mu, W)


def accuracy(X, y, weights, theta):
    """Test accuracy over all clients' test samples together (correct / total), the models
    ``theta`` ``(m, D*C)`` or one global ``(D*C,)``; ``X`` ``(m, n, D)``, ``weights`` 0/1 padding."""
    m, _, D = X.shape
    theta = np.broadcast_to(theta, (m, theta.shape[-1]))
    pred = np.argmax(X @ theta.reshape(m, D, -1), axis=-1)
    return float(np.sum((pred == y) * weights) / np.sum(weights))
