"""Independent Flower clients of Per-FedAvg (Algorithm 1, exact gradients and Hessian-vector
products, in numpy) for tests/test_audit_flower_pfl.py: a legacy ``NumPyClient`` and a message-API
``ClientApp`` (flwr 1.42), written from the paper's update rule without moreau's code; faithful by
default, each keyword a deliberate deviation."""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp


def _grad(c, w, X, y):
    z = X @ w
    r = z - y if c.kind == "least_squares" else -y * np.exp(-np.logaddexp(0.0, y * z))
    return X.T @ r / X.dtype.type(c.n) + X.dtype.type(c.mu) * w


def _hvp(c, w, v, X, y):
    if c.kind == "least_squares":
        return X.T @ (X @ v) / X.dtype.type(c.n)
    s = 1.0 / (1.0 + np.exp(-y * (X @ w)))
    return X.T @ (s * (1 - s) * (X @ v)) / X.dtype.type(c.n) + X.dtype.type(c.mu) * v


def local_steps(c, w, cfg, *, first_order=False, hessian_factor=1.0, alpha_is_beta=False, f32=False):
    """τ Per-FedAvg steps of client ``c`` from ``w`` with the config's α, β, τ: ``first_order``
    FO-MAML, ``hessian_factor`` the Hessian term times it, ``alpha_is_beta`` the inner step β;
    ``f32`` all in float32 (data, model and steps)."""
    dt = np.float32 if f32 else np.float64
    X, y = c.X.astype(dt), c.y.astype(dt)
    beta = dt(cfg["beta"])
    a = beta if alpha_is_beta else dt(cfg["alpha"])
    x = np.asarray(w, dtype=dt).copy()
    for _ in range(int(cfg["tau"])):
        g = _grad(c, x - a * _grad(c, x, X, y), X, y)
        if not first_order:
            g = g - dt(hessian_factor) * a * _hvp(c, x, g, X, y)
        x = x - beta * g
    return x


class PerFedAvgClient(NumPyClient):
    """A Per-FedAvg ``NumPyClient``; ``reported`` the num_examples sent back (default 1: Flower's
    FedAvg then averages uniformly, as Per-FedAvg's server does), the deviations as
    :func:`local_steps`'s keywords."""

    def __init__(self, client, *, reported=None, **deviations):
        self.c, self.reported, self.dev = client, reported, deviations

    def fit(self, parameters, config):
        x = local_steps(self.c, parameters[0], config, **self.dev)
        return [x], 1 if self.reported is None else self.reported(self.c), {}


def per_fedavg_app(client, *, reported=None, **deviations):
    """A Per-FedAvg ``ClientApp`` for one audit ``client`` (as :class:`PerFedAvgClient`)."""
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        w = msg.content["arrays"].to_numpy_ndarrays()[0]
        x = local_steps(client, w, msg.content["config"], **deviations)
        n = 1 if reported is None else reported(client)
        content = RecordDict({"arrays": ArrayRecord([x]), "metrics": MetricRecord({"num-examples": n})})
        return Message(content=content, reply_to=msg)

    return app
