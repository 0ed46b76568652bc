"""Independent Flower implementations of pFedMe, FedFW, pFL^MF and PerMFL for tests/test_audit_flower_more.py:
the user's own strategies (subclasses of Flower's FedAvg whose aggregate step is the algorithm's
server step) and stateful clients (legacy NumPyClient and message-API ClientApp, sharing one numpy
local update each), written from the papers' pseudocode without moreau's code: faithful by default,
each keyword a deliberate deviation."""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MessageType, MetricRecord, RecordDict
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp
from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.strategy import FedAvg
from flwr.serverapp import strategy as msg_strategy


def grad(c, x, l2=0.0, total=False, rows=slice(None)):
    """The client's loss gradient (mean over its samples ``rows``; ``total``: summed) plus ``l2 x``."""
    X, y = c.X[rows], c.y[rows]
    z = X @ x
    r = z - y if c.kind == "least_squares" else -y * np.exp(-np.logaddexp(0.0, y * z))
    g = X.T @ r / X.shape[0] + c.mu * x
    return (c.n * g if total else g) + l2 * x


# --- the clients' local work (numpy), ``state`` a dict the client keeps across rounds


def pfedme_local(
    c, w, cfg, state, *, l2=0.0, warm=False, warm_round=False, aliased=False, beta_m=0.0, eta_times_s=False
):
    """pFedMe's R local rounds, each an ``inner``-step solve of f_i(θ) + λ/2 |θ - x|^2 (from x;
    ``warm`` from the last θ; ``warm_round`` from the last θ within the round) then
    x <- x - η λ (x - θ); ``aliased`` θ is x itself (no prox); ``beta_m`` momentum on the inner
    steps; ``eta_times_s`` η multiplied by the config's S."""
    lam, eta = float(cfg["lam"]), float(cfg["eta"]) * (int(cfg["S"]) if eta_times_s else 1)
    R, inner, step = int(cfg["R"]), int(cfg["inner"]), float(cfg["inner_eta"])
    x = w.copy()
    if warm_round:
        state["theta"] = w.copy()
    for _ in range(R):
        th = state.get("theta", w).copy() if warm or warm_round else x.copy()
        v = np.zeros_like(th)
        for _ in range(inner):
            v = beta_m * v + grad(c, th, l2) + (0.0 if aliased else lam * (th - x))
            th = th - step * v
        state["theta"] = th
        x = th.copy() if aliased else x - eta * lam * (x - th)
    return x


def fedfw_local(c, w, cfg, state, *, reset=False, eta_plus=1.0, over_sampled=False, l2=0.0):
    """FedFW's client: K Frank-Wolfe steps over the ball of radius ``radius`` from its last x_i
    (x_i^0 = 0; ``reset``: from the server model) on grad f_i(x)/n + λ_t (x - w), λ_t = λ0 sqrt(t + 1),
    η_t = 2/(t + ``eta_plus``); ``over_sampled`` divides by S instead of n."""
    t, n = int(cfg["server-round"]), int(cfg["num-clients"])
    lam, eta = float(cfg["lam0"]) * np.sqrt(t + 1.0), 2.0 / (t + eta_plus)
    div = int(cfg["S"]) if over_sampled else n
    if "x" not in state:  # x_i^0 = w^0 = 0: the model's initialisation, as the server's (a client
        state["x"] = np.zeros_like(w)  # first sampled at round t does not start from w^{t-1})
    x = w.copy() if reset else state["x"]
    for _ in range(int(cfg["K"])):
        v = grad(c, x, l2) / div + lam * (x - w)
        x = (1 - eta) * x + eta * (-float(cfg["radius"]) * v / np.linalg.norm(v))
    state["x"] = x
    return x


def permfl_local(c, w, cfg, state, *, lam_is_L=False, batch=None, l2=0.0):
    """PerMFL's device: L steps of size α on f_i(θ) + λ/2 |θ - w|^2 from its team's model w
    (``lam_is_L``: λ is the local step count L, the authors' argument shift; ``batch``: each step on
    the next ``batch`` samples in stored order, the cursor kept across rounds)."""
    lam = float(cfg["L"]) if lam_is_L else float(cfg["lam"])
    th = w.copy()
    for _ in range(int(cfg["L"])):
        rows = slice(None)
        if batch is not None:
            s = state.get("cursor", 0)
            s = 0 if s >= c.n else s
            rows = slice(s, min(s + batch, c.n))
            state["cursor"] = rows.stop
        th = th - float(cfg["alpha"]) * (grad(c, th, l2, rows=rows) + lam * (th - w))
    return th


def mf_local(c, U_flat, cfg, v, *, fedper=False, frozen=False):
    """pFL^MF's client: τ steps on its personal factor v (``frozen``: none), then the gradient of
    f_i(U v) in U, (grad f_i(U v)) v^T, flattened; ``fedper``: τ simultaneous steps on a copy of U
    and on v, the copy returned (FedPer).  Returns ``(sent (d r,), new v)``."""
    r = int(cfg["rank"])
    U = U_flat.reshape(-1, r)
    eu, ev, tau = float(cfg["eta_u"]), float(cfg["eta_v"]), int(cfg["tau"])
    if fedper:
        for _ in range(tau):
            g = grad(c, U @ v)
            U, v_new = U - eu * np.outer(g, v), v - ev * (U.T @ g)
            v = v if frozen else v_new
        return U.ravel(), v
    for _ in range(tau):
        if not frozen:
            v = v - ev * (U.T @ grad(c, U @ v))
    return np.outer(grad(c, U @ v), v).ravel(), v


# --- the server steps (numpy): ``xs`` the received vectors, ``ns`` their sample counts


def _avg(xs, ns, by_samples):
    q = np.asarray(ns if by_samples else [1.0] * len(xs), dtype=float)
    return sum(qi * x for qi, x in zip(q, xs, strict=True)) / q.sum()


def pfedme_server(w, xs, ns, cfg, *, beta, by_samples=False):
    return (1 - beta) * w + beta * _avg(xs, ns, by_samples)


def mf_server(U, gs, ns, cfg, *, eta_u, by_samples=False):
    return U - eta_u * _avg(gs, ns, by_samples)


class FedFWServer:
    """FedFW's server: the average of every client's last iterate x_i (x_i^0 = w^0); ``reset``:
    of the sampled clients' only."""

    def __init__(self, reset=False):
        self.reset, self.x = reset, None

    def __call__(self, w, got, ids):
        if self.x is None:
            self.x = {i: w.copy() for i in ids}
        self.x.update(got)
        return sum(got.values()) / len(got) if self.reset else sum(self.x.values()) / len(ids)


# --- legacy API (flwr.server.strategy, NumPyClient)


class Client(NumPyClient):
    """A stateful NumPyClient running ``local(c, w, config, state, **opts)``."""

    def __init__(self, c, local, reported=None, **opts):
        self.c, self.local, self.opts, self.state, self.reported = c, local, opts, {}, reported

    def fit(self, parameters, config):
        x = self.local(self.c, np.asarray(parameters[0], dtype=float), config, self.state, **self.opts)
        return [x], self.c.n if self.reported is None else self.reported, {}


class MFClient(NumPyClient):
    """pFL^MF's NumPyClient: its personal factor v kept here, answered by get_properties."""

    def __init__(self, c, v0, reported=None, **opts):
        self.c, self.v, self.opts, self.reported = c, np.asarray(v0, dtype=float), opts, reported

    def fit(self, parameters, config):
        sent, self.v = mf_local(self.c, np.asarray(parameters[0], dtype=float), config, self.v, **self.opts)
        return [sent], self.c.n if self.reported is None else self.reported, {}

    def get_properties(self, config):
        return {f"v_{k}": float(x) for k, x in enumerate(self.v)}


class Strategy(FedAvg):
    """Flower's FedAvg (its client sampling and fit config) with the algorithm's server step:
    ``server(w, results (cid, vector, num_examples), config, ids) -> new w`` (ids: every client's)."""

    def __init__(self, server, **kw):
        super().__init__(min_fit_clients=2, min_available_clients=2, **kw)
        self.server, self.w, self.ids, self.cfg = server, None, [], {}

    def configure_fit(self, server_round, parameters, client_manager):
        self.w = parameters_to_ndarrays(parameters)[0]
        self.ids = sorted(int(cid) for cid in client_manager.all())
        ins = super().configure_fit(server_round, parameters, client_manager)
        for _, fit_ins in ins:  # what FedFW's clients need: the round and the number of clients
            fit_ins.config.update({"server-round": server_round, "num-clients": len(self.ids)})
        self.cfg = ins[0][1].config
        return ins

    def aggregate_fit(self, server_round, results, failures):
        got = [(int(p.cid), parameters_to_ndarrays(r.parameters)[0], r.num_examples) for p, r in results]
        return ndarrays_to_parameters([self.server(self.w, got, self.cfg, self.ids)]), {}


class PerMFLStrategy(FedAvg):
    """PerMFL's team and global servers in one strategy: each Flower round is a team round (its
    devices get their team's model; the team step w_j <- w_j - η(λ(w_j - mean θ) + γ(w_j - x))),
    every K-th round also the global step x <- x - βγ(x - mean_j w_j); ``teams[cid]`` a device's team."""

    def __init__(self, teams, **kw):
        super().__init__(min_fit_clients=2, min_available_clients=2, **kw)
        self.teams, self.k, self.x, self.W, self.cfg = list(teams), 0, None, {}, {}

    def configure_fit(self, server_round, parameters, client_manager):
        self.cfg = dict(self.on_fit_config_fn(server_round)) if self.on_fit_config_fn else {}
        if self.k == 0:  # a global round begins: every team starts at the global model
            self.x = parameters_to_ndarrays(parameters)[0]
            self.W = {j: self.x.copy() for j in set(self.teams)}
        devices = client_manager.sample(num_clients=client_manager.num_available())
        return [
            (p, FitIns(ndarrays_to_parameters([self.W[self.teams[int(p.cid)]]]), dict(self.cfg)))
            for p in devices
        ]

    def aggregate_fit(self, server_round, results, failures):
        cfg, x = self.cfg, self.x
        lam, gamma, eta = float(cfg["lam"]), float(cfg["gamma"]), float(cfg["eta"])
        thetas = {}
        for p, r in results:
            thetas.setdefault(self.teams[int(p.cid)], []).append(parameters_to_ndarrays(r.parameters)[0])
        for j, W in self.W.items():
            self.W[j] = W - eta * (lam * (W - np.mean(thetas[j], axis=0)) + gamma * (W - x))
        self.k += 1
        if self.k == int(cfg["K"]):
            self.k = 0
            self.x = x - float(cfg["beta"]) * gamma * (x - np.mean(list(self.W.values()), axis=0))
        return ndarrays_to_parameters([self.x]), {}


def pfedme_strategy(beta=1.0, by_samples=False, **kw):
    return Strategy(
        lambda w, got, cfg, ids: pfedme_server(
            w, [x for _, x, _ in got], [n for _, _, n in got], cfg, beta=beta, by_samples=by_samples
        ),
        **kw,
    )


def fedfw_strategy(reset=False, **kw):
    server = FedFWServer(reset)
    return Strategy(lambda w, got, cfg, ids: server(w, {i: x for i, x, _ in got}, ids), **kw)


def mf_strategy(eta_u=0.3, by_samples=False, **kw):
    return Strategy(
        lambda U, got, cfg, ids: mf_server(
            U, [g for _, g, _ in got], [n for _, _, n in got], cfg, eta_u=eta_u, by_samples=by_samples
        ),
        **kw,
    )


# --- message API (flwr.serverapp.strategy, ClientApp)


def app(c, local, **opts):
    """A ClientApp running ``local`` with its state in the node's ``context.state`` (one
    ArrayRecord per state entry); the number of clients from ``num-partitions``."""
    ca = ClientApp()

    @ca.train()
    def train(msg: Message, context: Context) -> Message:
        w = msg.content["arrays"].to_numpy_ndarrays()[0].astype(float)
        cfg = dict(msg.content["config"])
        cfg["num-clients"] = int(context.node_config["num-partitions"])
        state = {k: rec.to_numpy_ndarrays()[0] for k, rec in context.state.array_records.items()}
        x = local(c, w, cfg, state, **opts)
        for k, v in state.items():
            context.state[k] = ArrayRecord([v])
        content = RecordDict({"arrays": ArrayRecord([x]), "metrics": MetricRecord({"num-examples": c.n})})
        return Message(content=content, reply_to=msg)

    return ca


def mf_app(c, **opts):
    """pFL^MF's ClientApp: the personal factor in ``context.state["personal"]``."""
    ca = ClientApp()

    @ca.train()
    def train(msg: Message, context: Context) -> Message:
        U = msg.content["arrays"].to_numpy_ndarrays()[0].astype(float)
        v = context.state["personal"].to_numpy_ndarrays()[0]
        sent, v = mf_local(c, U, msg.content["config"], v, **opts)
        context.state["personal"] = ArrayRecord([v])
        content = RecordDict({"arrays": ArrayRecord([sent]), "metrics": MetricRecord({"num-examples": c.n})})
        return Message(content=content, reply_to=msg)

    return ca


class MsgStrategy(msg_strategy.FedAvg):
    """Flower's message-API FedAvg with the algorithm's server step (as :class:`Strategy`)."""

    def __init__(self, server, **kw):
        super().__init__(**kw)
        self.server, self.w, self.cfg = server, None, {}

    def configure_train(self, server_round, arrays, config, grid):
        self.w, self.ids = arrays.to_numpy_ndarrays()[0], list(grid.get_node_ids())
        msgs = list(super().configure_train(server_round, arrays, config, grid))
        self.cfg = dict(config)
        return msgs

    def aggregate_train(self, server_round, replies):
        got = [
            (
                r.metadata.src_node_id,
                r.content["arrays"].to_numpy_ndarrays()[0],
                r.content["metrics"]["num-examples"],
            )
            for r in replies
        ]
        return ArrayRecord([self.server(self.w, got, self.cfg, self.ids)]), None


class MsgPerMFLStrategy(msg_strategy.FedAvg):
    """:class:`PerMFLStrategy` in the message API: ``teams[node_id]`` a device's team; each node gets
    its team's model in its own message."""

    def __init__(self, teams, **kw):
        super().__init__(**kw)
        self.teams, self.k, self.x, self.W, self.cfg = dict(teams), 0, None, {}, {}

    def configure_train(self, server_round, arrays, config, grid):
        self.cfg = dict(config)
        if self.k == 0:
            self.x = arrays.to_numpy_ndarrays()[0]
            self.W = {j: self.x.copy() for j in set(self.teams.values())}
        return [
            Message(
                content=RecordDict({"arrays": ArrayRecord([self.W[self.teams[node]]]), "config": config}),
                message_type=MessageType.TRAIN,
                dst_node_id=node,
            )
            for node in grid.get_node_ids()
        ]

    def aggregate_train(self, server_round, replies):
        cfg, x = self.cfg, self.x
        lam, gamma, eta = float(cfg["lam"]), float(cfg["gamma"]), float(cfg["eta"])
        thetas = {}
        for r in replies:
            team = self.teams[r.metadata.src_node_id]
            thetas.setdefault(team, []).append(r.content["arrays"].to_numpy_ndarrays()[0])
        for j, W in self.W.items():
            self.W[j] = W - eta * (lam * (W - np.mean(thetas[j], axis=0)) + gamma * (W - x))
        self.k += 1
        if self.k == int(cfg["K"]):
            self.k = 0
            self.x = x - float(cfg["beta"]) * gamma * (x - np.mean(list(self.W.values()), axis=0))
        return ArrayRecord([self.x]), None


def msg_pfedme_strategy(beta=1.0, by_samples=False):
    return MsgStrategy(pfedme_strategy(beta, by_samples).server)


def msg_fedfw_strategy(reset=False):
    server = FedFWServer(reset)
    return MsgStrategy(lambda w, got, cfg, ids: server(w, {i: x for i, x, _ in got}, ids))


def msg_mf_strategy(eta_u=0.3, by_samples=False):
    return MsgStrategy(mf_strategy(eta_u, by_samples).server)
