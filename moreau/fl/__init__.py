r"""Federated learning algorithms and the exact points they target.

Every function takes the clients as ONE batched objective whose last batch axis is the
client axis (batch shape ``(..., m)``; leading axes are independent trials), runs in the
objective's array namespace (numpy, cupy, array-api-strict) without a Python loop over
clients or trials, and takes a ``numpy.random.Generator`` or an int seed for its randomness.

- exact targets: :func:`fedprox_optimum` (FedProx / pFedMe optimum), :func:`local_train`,
  :func:`global_train`;
- algorithms returning a :class:`History`: :func:`gd` (LocalTrain by GD), :func:`fedavg`,
  :func:`fedprox` (Algorithm 1 of the FedProx analysis), :func:`pfedme` (Algorithm 1 of
  pFedMe), :func:`per_fedavg` (Algorithm 1 of Per-FedAvg, with its FO and HF variants),
  :func:`pflmf` (pFL^MF, thesis §4.1, Algorithm 1 as reconstructed), :func:`permfl` (PerMFL,
  thesis Paper II: devices in teams, returns a :class:`PerMFLHistory`);
- :func:`fedfw` (FedFW, thesis §4.3, eqs. (4.5)–(4.6)) over a :class:`Box` / :class:`L1Ball` /
  :class:`L2Ball` / :class:`Simplex`; :func:`fedfw_optimum` its exact target;
- :func:`low_rank_optimum` (the certified rank-r optimum of pFL^MF's problem (4.1)),
  :func:`permfl_optimum` (the optimum of PerMFL's objective (4.3) by nested envelopes).
"""

from ._common import History
from ._fedfw import FedFWHistory, FedFWTarget, fedfw, fedfw_optimum
from ._fedprox import fedavg, fedprox, gd
from ._lmo import Box, ConvexSet, L1Ball, L2Ball, Simplex
from ._optimum import FedProxInfo, fedprox_optimum, global_train, local_train
from ._perfedavg import per_fedavg
from ._permfl import PerMFLHistory, permfl, permfl_optimum
from ._pfedme import pfedme
from ._pflmf import LowRankOptimum, low_rank_optimum, pflmf

__all__ = [
    "fedprox_optimum",
    "local_train",
    "global_train",
    "FedProxInfo",
    "History",
    "gd",
    "fedprox",
    "fedavg",
    "pfedme",
    "per_fedavg",
    "pflmf",
    "low_rank_optimum",
    "LowRankOptimum",
    "permfl",
    "permfl_optimum",
    "PerMFLHistory",
    "fedfw",
    "fedfw_optimum",
    "FedFWHistory",
    "FedFWTarget",
    "Box",
    "ConvexSet",
    "L1Ball",
    "L2Ball",
    "Simplex",
]
