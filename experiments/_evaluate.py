r"""Evaluating multinomial models on federated splits, round after round; the validation split.

:class:`Split` holds one split (train, validation or test) of every client as its valid rows
packed one client after the other (no padding: memory and time proportional to the samples), and
evaluates a global model ``(D*C,)`` or personalised models ``(m, D*C)`` (flattened row-major as
:class:`moreau.Multinomial`):

* :meth:`Split.accuracy`: correct predictions of all clients together over their samples (%),
  as pFedMe measures it;
* :meth:`Split.loss`: the training objective, sample-weighted over clients,
  :math:`\sum_i n_i f_i(\theta_i)/\sum_i n_i`, :math:`f_i` the mean cross-entropy of client i plus
  :math:`\frac\mu2\|\theta_i\|^2` (the clients' :class:`moreau.Multinomial` value).

Personalised models are evaluated one matrix product per client (a Python loop over the clients:
the rows of different clients meet different models; one product per client keeps the memory at
the rows', where a batched product would pad every client to the largest).

:func:`hold_out` splits each client's rows of a padded split into two, at random (seeded).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Split", "hold_out"]


class Split:
    """One split of every client: ``X`` ``(m, n, D)``, ``y`` ``(m, n)``, ``weights`` ``(m, n)`` 0/1
    (valid rows first or anywhere), or ``Split.from_clients([(X_i, y_i)])``."""

    def __init__(self, X, y, weights):
        X, y, w = np.asarray(X, dtype=float), np.asarray(y), np.asarray(weights) > 0
        self.m = X.shape[0]
        self.sizes = w.sum(axis=1).astype(np.int64)
        self.X, self.y = X[w], y[w].astype(np.int64)  # (N, D), (N,): C order keeps the clients in turn
        self.bounds = np.concatenate([[0], np.cumsum(self.sizes)])

    @classmethod
    def from_clients(cls, parts):
        """From ``[(X_i (n_i, D), y_i (n_i,))]`` (ragged sizes)."""
        obj = cls.__new__(cls)
        obj.m = len(parts)
        obj.sizes = np.array([len(y) for _, y in parts], dtype=np.int64)
        obj.X = np.concatenate([np.asarray(X, dtype=float) for X, _ in parts]) if parts else np.zeros((0, 0))
        obj.y = np.concatenate([np.asarray(y) for _, y in parts]).astype(np.int64)
        obj.bounds = np.concatenate([[0], np.cumsum(obj.sizes)])
        return obj

    @property
    def empty(self) -> bool:
        return self.X.shape[0] == 0

    def logits(self, theta):
        """``(N, C)``: every row's scores under its client's model (``theta`` ``(D*C,)`` or ``(m, D*C)``)."""
        theta = np.asarray(theta, dtype=float)
        D = self.X.shape[1]
        if theta.ndim == 1:
            return self.X @ theta.reshape(D, -1)
        W = theta.reshape(self.m, D, -1)
        Z = np.empty((self.X.shape[0], W.shape[-1]))
        for i, (a, b) in enumerate(zip(self.bounds[:-1], self.bounds[1:], strict=True)):
            Z[a:b] = self.X[a:b] @ W[i]
        return Z

    def accuracy(self, theta) -> float:
        """Correct predictions over all rows, in % (NaN for an empty split)."""
        if self.empty:
            return float("nan")
        return 100.0 * float(np.mean(np.argmax(self.logits(theta), axis=-1) == self.y))

    def loss(self, theta, mu: float) -> float:
        r""":math:`\sum_i n_i f_i(\theta_i)/\sum_i n_i` (cross-entropy plus the ridge, per client)."""
        if self.empty:
            return float("nan")
        Z = self.logits(theta)
        zmax = Z.max(axis=-1)
        ce = np.log(np.exp(Z - zmax[:, None]).sum(axis=-1)) + zmax - Z[np.arange(Z.shape[0]), self.y]
        theta = np.asarray(theta, dtype=float)
        ridge = (
            0.5
            * mu
            * (
                np.sum(theta**2)
                if theta.ndim == 1
                else np.sum(self.sizes * np.sum(theta**2, axis=-1)) / self.sizes.sum()
            )
        )
        return float(ce.mean() + ridge)


def hold_out(rng, X, y, weights, fraction: float):
    r"""Split each client's valid rows of a padded split in two, at random: ``(kept, held)``, each
    ``(X, y, weights)`` padded to its largest client, :math:`\lfloor\text{fraction}\cdot n_i\rfloor`
    rows held out per client (the rest kept, valid rows first); one draw
    ``rng.random((m, n))``.  ``fraction`` in [0, 1)."""
    X, y, w = np.asarray(X), np.asarray(y), np.asarray(weights)
    m, n = w.shape
    n_i = (w > 0).sum(axis=1)
    keys = np.where(w > 0, rng.random((m, n)), np.inf)
    order = np.argsort(keys, axis=1, kind="stable")  # valid rows in random order, padding last
    Xs, ys = np.take_along_axis(X, order[..., None], axis=1), np.take_along_axis(y, order, axis=1)
    n_held = np.floor(fraction * n_i).astype(np.int64)
    col = np.arange(n)[None, :]
    h, k = max(1, int(n_held.max())), max(1, int((n_i - n_held).max()))
    mask = col < n_held[:, None]
    held = ((Xs * mask[..., None])[:, :h], (ys * mask)[:, :h], mask[:, :h].astype(float))
    shift = np.minimum(col + n_held[:, None], n - 1)
    mask = col < (n_i - n_held)[:, None]
    kept = (
        (np.take_along_axis(Xs, shift[..., None], axis=1) * mask[..., None])[:, :k],
        (np.take_along_axis(ys, shift, axis=1) * mask)[:, :k],
        mask[:, :k].astype(float),
    )
    return kept, held
