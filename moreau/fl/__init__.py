r"""Federated learning algorithms and the exact points they target.

Every function takes the clients as ONE batched objective whose last batch axis is the
client axis (batch shape ``(..., m)``; leading axes are independent trials), runs in the
objective's array namespace (numpy, cupy, array-api-strict) without a Python loop over
clients or trials, and takes a ``numpy.random.Generator`` or an int seed for its randomness.
"""
from ._common import History
from ._optimum import FedProxInfo, fedprox_optimum, global_train, local_train

__all__ = ["fedprox_optimum", "local_train", "global_train", "FedProxInfo", "History"]
