r"""The instances an audit runs on: per-client data as plain numpy (:class:`Client`) beside the
batched moreau objective the reference algorithms and the exact optima use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._least_squares import LeastSquares
from .._logistic import Logistic
from .._objective import Objective
from ..data import least_squares, logistic
from ..fl._common import sample_clients as _sample

__all__ = ["Client", "Instance", "instance", "sample_clients", "FAMILIES"]

#: The loss families of an audit instance (:func:`instance`'s ``family``)
FAMILIES = ("quadratic", "logistic")


@dataclass(frozen=True, eq=False)
class Client:
    r"""One client's data, as an implementation under audit receives it (host numpy, float64).

    ``X`` ``(n, d)`` the features, ``y`` ``(n,)`` the targets (``kind="least_squares"``: real;
    ``kind="logistic"``: labels in {-1, +1}), ``weight`` the client's :math:`p_i` in the paper's
    problem :math:`\sum_i p_i f_i` (the server's weight; the weights of a run sum to 1),
    ``mu`` the ridge :math:`\mu` of the loss, ``index`` the client's position (0..m-1), ``team``
    its team (PerMFL's devices; 0 elsewhere), ``kind`` the loss:

    - ``"least_squares"``: :math:`f_i(w) = \frac1n\sum_j \tfrac12(y_j - x_j^\top w)^2 + \tfrac{\mu}{2}\|w\|^2`;
    - ``"logistic"``: :math:`f_i(w) = \frac1n\sum_j \log(1 + e^{-y_j x_j^\top w}) + \tfrac{\mu}{2}\|w\|^2`.
    """

    X: np.ndarray
    y: np.ndarray
    weight: float
    kind: str
    mu: float = 0.0
    index: int = 0
    team: int = 0

    @property
    def n(self) -> int:
        """The number of samples."""
        return int(self.X.shape[0])

    def grad(self, w: np.ndarray) -> np.ndarray:
        r""":math:`\nabla f_i(w)` ``(d,)``, computed here from ``X`` and ``y`` in numpy (a
        convenience for implementations; the reference algorithms use moreau's objectives)."""
        z = self.X @ w
        if self.kind == "least_squares":
            r = z - self.y
        else:
            r = -self.y / (1.0 + np.exp(self.y * z))
        return self.X.T @ r / self.n + self.mu * w


@dataclass(frozen=True, eq=False)
class Instance:
    """An audit instance: ``clients`` (a tuple of :class:`Client`), ``objective`` the same data
    as one moreau objective with batch ``(m,)`` (zero-weight rows pad the smaller clients),
    ``weights`` ``(m,)`` the :math:`p_i`, ``family`` and a one-line ``description``."""

    clients: tuple[Client, ...]
    objective: Objective
    weights: np.ndarray
    family: str
    description: str

    @property
    def m(self) -> int:
        return len(self.clients)

    @property
    def dim(self) -> int:
        return int(self.clients[0].X.shape[1])

    @property
    def sizes(self) -> np.ndarray:
        """``(m,)`` the clients' sample counts."""
        return np.array([c.n for c in self.clients])


def instance(
    family: str = "quadratic",
    *,
    seed: int = 0,
    m: int = 5,
    n: int = 30,
    d: int = 3,
    heterogeneous: bool = True,
    weights: str = "uniform",
) -> Instance:
    r"""An exact instance: ``m`` clients of ``d`` features from :func:`moreau.data.least_squares`
    (``family="quadratic"``: μ = 1, L = 4, σ = 1) or :func:`moreau.data.logistic` (ridge μ = 0.1),
    with client heterogeneity R = 1 (quadratic) / 0.3 (logistic), or R = 0 when ``heterogeneous``
    is False; client i keeps its first ``n - 4 i`` samples (at least ``d``), so that the clients'
    sizes differ (weighting by sample counts is then visible).  ``weights``: the :math:`p_i`,
    ``"uniform"`` (1/m) or ``"samples"`` (:math:`n_i/\sum_j n_j`).  Seeded by ``seed``."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES} (got {family!r})")
    if weights not in ("uniform", "samples"):
        raise ValueError(f"weights must be 'uniform' or 'samples' (got {weights!r})")
    for name, v, lo in (("m", m, 2), ("n", n, 1), ("d", d, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo} (got {v!r})")
    sizes = np.maximum(n - 4 * np.arange(m), d)
    if family == "quadratic":
        prob = least_squares(seed, m=m, n=n, d=d, R=1.0 if heterogeneous else 0.0, mu=1.0, L=4.0)
        mu = 0.0
    else:
        mu = 0.1
        prob = logistic(seed, m=m, n=n, d=d, R=0.3 if heterogeneous else 0.0, mu=mu)
    obj: Any = prob.objective  # LeastSquares or Logistic: their samples X, y
    X, y = np.asarray(obj.X), np.asarray(obj.y)
    rows = (np.arange(n)[None, :] < sizes[:, None]).astype(float)  # zero weight: a dropped row
    objective: Objective = (
        LeastSquares(X, y, weights=rows) if family == "quadratic" else Logistic(X, y, mu=mu, weights=rows)
    )
    p = np.full(m, 1.0 / m) if weights == "uniform" else sizes / np.sum(sizes)
    kind = "least_squares" if family == "quadratic" else "logistic"
    clients = tuple(
        Client(
            X=X[i, : sizes[i]].copy(),
            y=y[i, : sizes[i]].copy(),
            weight=float(p[i]),
            kind=kind,
            mu=mu,
            index=i,
        )
        for i in range(m)
    )
    desc = (
        f"{family}: m={m} clients, d={d}, sizes {sizes.tolist()}, "
        f"{'heterogeneous' if heterogeneous else 'homogeneous'}, {weights} weights, seed {seed}"
    )
    return Instance(clients, objective, p, family, desc)


def sample_clients(rng: np.random.Generator, m: int, S: int) -> np.ndarray:
    """The indices ``(S,)`` of the clients taking part in a round, drawn as :mod:`moreau.fl` draws
    them (one ``rng.random(m)``, the S smallest keys, ascending): an implementation that samples
    clients through this function shares the reference's draws."""
    return _sample(rng, (), m, S)
