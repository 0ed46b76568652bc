"""An independent Flower ClientApp (message API, flwr 1.42) doing local full-batch gradient descent
in numpy, for tests/test_audit_flower_messages.py: faithful by default, each keyword a deliberate
deviation.  Written as Flower's message-API tutorials write a client's ``train`` function."""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp


def _grad(c, w):
    z = c.X @ w
    r = z - c.y if c.kind == "least_squares" else -c.y * np.exp(-np.logaddexp(0.0, c.y * z))
    return c.X.T @ r / c.n + c.mu * w


def gd_app(client, *, warm=False, l2=0.0, reported=None):
    """A ClientApp for one audit ``client``: FedAvg's client (``tau`` steps of ``eta`` from the train
    config) or, when the config carries ``proximal-mu`` (Flower's FedProx strategy puts it there),
    FedProx's (``K`` steps on f_i + mu/2 |x - w|^2).  ``warm``: the local model starts from its
    last round's, kept in the node's ``context.state``; ``l2`` a hidden L2 term; ``reported`` the
    ``num-examples`` sent back (default the sample count)."""
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        w = msg.content["arrays"].to_numpy_ndarrays()[0].astype(float)
        cfg = msg.content["config"]
        prev = context.state.array_records.get("local")
        x = prev.to_numpy_ndarrays()[0] if warm and prev is not None else w.copy()
        mu = float(cfg["proximal-mu"]) if "proximal-mu" in cfg else 0.0
        steps = int(cfg["K"] if "proximal-mu" in cfg else cfg["tau"])
        for _ in range(steps):
            x = x - float(cfg["eta"]) * (_grad(client, x) + l2 * x + mu * (x - w))
        context.state["local"] = ArrayRecord([x])
        n = client.n if reported is None else reported(client)
        content = RecordDict({"arrays": ArrayRecord([x]), "metrics": MetricRecord({"num-examples": n})})
        return Message(content=content, reply_to=msg)

    return app
