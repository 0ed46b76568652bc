"""Independent Flower clients (NumPyClient, local full-batch gradient descent in numpy) for
tests/test_audit_flower.py, written from the papers' pseudocode: faithful by default, each keyword
a deliberate deviation."""

from __future__ import annotations

import numpy as np
from flwr.client import NumPyClient


def _grad(c, w):
    z = c.X @ w
    r = z - c.y if c.kind == "least_squares" else -c.y * np.exp(-np.logaddexp(0.0, c.y * z))
    return c.X.T @ r / c.n + c.mu * w


class GDClient(NumPyClient):
    """FedAvg's client (local steps ``tau``, step ``eta`` from the fit config) or, when the config
    carries ``proximal_mu`` (Flower's FedProx strategy sends it), FedProx's: ``K`` steps on
    f_i + mu/2 |x - w|^2.  ``warm``: the local model starts from its last round's (the FedProx
    analysis's Algorithm 1); otherwise from the parameters received.  ``l2``: a hidden L2 term;
    ``reported``: the num_examples sent back (default the true sample count)."""

    def __init__(self, client, *, warm=False, l2=0.0, reported=None):
        self.c, self.warm, self.l2, self.reported = client, warm, l2, reported
        self.x = None

    def fit(self, parameters, config):
        w = np.asarray(parameters[0], dtype=float)
        x = self.x if self.warm and self.x is not None else w.copy()
        mu = float(config.get("proximal_mu", 0.0))
        steps = int(config["K"] if "proximal_mu" in config else config["tau"])
        for _ in range(steps):
            x = x - float(config["eta"]) * (_grad(self.c, x) + self.l2 * x + mu * (x - w))
        self.x = x
        n = self.c.n if self.reported is None else self.reported(self.c)
        return [x], n, {}
