r"""The Flower adapters' rounds for pFedMe, FedFW, PerMFL and pFL^MF (docs/audit.md, "pFedMe,
FedFW, pFL^MF and PerMFL through Flower").  The strategy is the user's own (a ``flwr`` strategy whose
``aggregate_fit`` / ``aggregate_train`` takes the algorithm's server step) and so are the clients
(which may keep state across rounds); the adapter drives the strategy's own configure/aggregate
calls and the clients, and reads what the reference compares.

- **pFedMe**: the clients' fit results are their local models :math:`w_{i,R}^t`, the aggregated
  parameters the new server model.  Partial participation (``S < m``) through the legacy API:
  the client manager draws the S clients with the audit's rng, the draw pFedMe makes after the
  local rounds (the local rounds draw nothing); the clients not drawn do not train in Flower (they
  do in pFedMe, which makes no difference to the printed algorithm, each round starting from
  :math:`w^t`), so the local models are then not compared, only the server models.
- **FedFW**: the fit results are the clients' Frank-Wolfe iterates :math:`x_i^t` (a client
  keeps its :math:`x_i` across rounds), the aggregated parameters the new server model.  Partial
  participation through the legacy API (the draw is FedFW's, before the local steps); a client
  not drawn keeps its :math:`x_i` (a strategy faithful to the thesis keeps the last iterate of
  every client to average all m).
- **PerMFL**: one audit round, a global round, is K Flower rounds, each a team
  round, each aggregate's parameters passed to the next configure call as Flower's server loop
  does; the devices are the clients (their ``team`` field names their team), a device's fit
  result its personalised model :math:`\theta_i` after L steps towards the model its strategy sent
  it (its team's), and the strategy keeps the team models and returns the global model (unchanged
  until the K-th team round's global step).  Every device in every team round.
- **pFL^MF**: the parameters sent are the shared factor U ``(d, r)`` flattened, ``U.ravel()``
  (``d r`` numbers); the aggregated parameters are the new U.  The personal factors
  :math:`v_i` ``(r,)`` stay on the clients: a legacy client is built as ``client_fn(client, v0)``
  with its starting factor and answers ``get_properties(config)`` with ``{"v_0": ..., ...,
  "v_{r-1}": ...}`` (floats, Flower's way for a server to ask a client for values); a
  ``ClientApp`` finds :math:`v_i^0` in its node's ``context.state["personal"]`` (an
  ``ArrayRecord`` of one array ``(r,)``) before round 1 and keeps its factor there.  After each
  round the audit reads every :math:`v_i` and compares the state ``(U, V)``
  (:func:`moreau.audit.pflmf_pack`) and the personalised models :math:`U v_i`.  Full
  participation (pFL^MF's rounds train every client).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._audit import AuditError
from ._flower import _FlowerRound
from ._flower_messages import NODE0, _MessageRound
from ._instance import Client
from ._pflmf import pflmf_pack

__all__ = ["more_round", "more_message_round", "PERSONAL_STATE"]

#: the key of a ClientApp's personal factor in its node's ``context.state``
PERSONAL_STATE = "personal"


def _split(w: np.ndarray, clients: list[Client], rank: int) -> tuple[np.ndarray, np.ndarray, int]:
    m, d = len(clients), int(clients[0].X.shape[1])
    if w.shape != ((d + m) * rank,):
        raise AuditError(f"pflmf's state must have (d + m) r = {(d + m) * rank} entries (got {w.shape})")
    return w[: d * rank].reshape(d, rank), w[d * rank :].reshape(m, rank), d


def _all_trained(got: Any, m: int, algorithm: str, t: int) -> None:
    if len(got) != m:
        raise AuditError(
            f"the strategy trained {len(got)} of {m} clients at round {t}: {algorithm} is audited "
            "through Flower with every client in every round (its rounds train every client)"
        )


class _PFedMeFWRound(_FlowerRound):
    """pFedMe and FedFW through the legacy strategy interface (the module docstring)."""

    def __init__(self, strategy: Any, client_fn: Callable[..., Any], algorithm: str) -> None:
        super().__init__(strategy, client_fn, algorithm)
        self.last: np.ndarray | None = None

    def _locals(self, w: np.ndarray, got: dict[int, np.ndarray], m: int, hyper: dict[str, Any]) -> Any:
        S = int(hyper.get("S") or m)
        if len(got) != S:
            raise AuditError(
                f"the strategy trained {len(got)} clients at round {self.round}, the audit's S = {S}"
            )
        if self.algorithm == "pfedme":
            return None if S < m else super()._locals(w, got, m, hyper)
        if self.last is None:  # FedFW's x_i^0 = w^0
            self.last = np.broadcast_to(w, (m, w.shape[0])).copy()
        for i, v in got.items():
            self.last[i] = v
        return self.last.copy()


class _PerMFLRound(_FlowerRound):
    """PerMFL through the legacy strategy interface: K Flower rounds per global round, each a team
    round (the module docstring)."""

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        if not self.proxies:
            self._setup(clients)
        self.rng = rng
        m, d = len(clients), w.shape[0]
        x, theta = w, np.zeros((m, d))
        for _ in range(int(hyper["K"])):
            self.round += 1
            got, x = self._fit_round([x], d, hyper)
            _all_trained(got, m, "permfl", self.round)
            for i, v in got.items():
                theta[i] = v
        return x, theta


class _PFLMFRound(_FlowerRound):
    """pFL^MF through the legacy strategy interface: U through the strategy, v_i read from the
    clients with ``get_properties``."""

    v0: np.ndarray  # the starting personal factors (m, r), set before the clients are built

    def _make_client(self, c: Client) -> Any:
        make: Any = self.client_fn  # client_fn(client, v0) for pFL^MF
        return make(c, self.v0[c.index].copy())

    def _personal(self, proxy: Any, rank: int) -> np.ndarray:
        from flwr.common import GetPropertiesIns

        keys = [f"v_{k}" for k in range(rank)]
        try:
            props = proxy.get_properties(
                GetPropertiesIns({"keys": ",".join(keys)}), None, self.round
            ).properties
        except Exception as exc:  # noqa: BLE001  (the user's client: one line)
            raise AuditError(
                f"client {proxy.cid}'s get_properties raised {type(exc).__name__}: {exc}"
            ) from exc
        missing = [k for k in keys if not isinstance(props.get(k), int | float)]
        if missing:
            raise AuditError(
                f"client {proxy.cid}'s get_properties must return its personal factor as the floats "
                f"{keys} (pFL^MF's protocol, docs/audit.md; missing {missing})"
            )
        return np.array([float(props[k]) for k in keys])

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        r = int(hyper["rank"])
        U, V, d = _split(w, clients, r)
        if not self.proxies:
            self.v0 = V.copy()
            self._setup(clients)
        self.rng = rng
        self.round += 1
        got, new = self._fit_round([U.ravel()], None, hyper)
        _all_trained(got, len(clients), "pflmf", self.round)
        U = new.reshape(d, r)
        V = np.stack([self._personal(p, r) for p in self.proxies])
        return pflmf_pack(U, V), V @ U.T


class _PFLMFMessageRound(_MessageRound):
    """pFL^MF through the message API: U through the strategy, v_i in each node's
    ``context.state[PERSONAL_STATE]``."""

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        r = int(hyper["rank"])
        U, V, d = _split(w, clients, r)
        if self.grid is None:
            self._setup(clients)
            assert self.grid is not None
            for c in clients:
                self.grid.contexts[NODE0 + c.index].state[PERSONAL_STATE] = self.app.ArrayRecord(
                    [V[c.index].copy()]
                )
        new, _ = super().__call__(U.ravel(), clients, rng, **hyper)
        assert self.grid is not None
        U, rows = new.reshape(d, r), []
        for c in clients:
            rec = self.grid.contexts[NODE0 + c.index].state.array_records.get(PERSONAL_STATE)
            v = None if rec is None else np.concatenate([np.ravel(a) for a in rec.to_numpy_ndarrays()])
            if v is None or v.shape != (r,):
                raise AuditError(
                    f"client {c.index}'s context.state[{PERSONAL_STATE!r}] must hold its personal factor, "
                    f"one array of {r} numbers (pFL^MF's protocol, docs/audit.md)"
                )
            rows.append(v.astype(float))
        V = np.stack(rows)
        return pflmf_pack(U, V), V @ U.T


class _PerMFLMessageRound(_MessageRound):
    """PerMFL through the message API: K Flower rounds per global round, each a team round."""

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        x, theta = w, np.zeros((len(clients), w.shape[0]))
        for _ in range(int(hyper["K"])):
            x, theta = super().__call__(x, clients, rng, **hyper)
        return x, theta


def more_round(strategy: Any, client_fn: Callable[..., Any], algorithm: str) -> Callable[..., Any]:
    """The legacy adapter's round function for ``pfedme``, ``fedfw``, ``permfl`` or ``pflmf`` (``client_fn``:
    ``client_fn(client, v0)`` for pFL^MF, else ``client_fn(client)``)."""
    if algorithm == "pflmf":
        return _PFLMFRound(strategy, client_fn, algorithm)
    if algorithm == "permfl":
        return _PerMFLRound(strategy, client_fn, algorithm)
    return _PFedMeFWRound(strategy, client_fn, algorithm)


def more_message_round(strategy: Any, app_fn: Callable[..., Any], algorithm: str) -> Callable[..., Any]:
    """The message adapter's round function for ``pflmf`` or ``permfl`` (pFedMe and FedFW run
    through :class:`moreau.audit._flower_messages._MessageRound` itself: full participation, the
    replies the local models)."""
    if algorithm == "permfl":
        return _PerMFLMessageRound(strategy, app_fn, algorithm)
    return _PFLMFMessageRound(strategy, app_fn, algorithm)
