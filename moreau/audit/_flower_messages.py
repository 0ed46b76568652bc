r"""The Flower adapter of ``moreau audit`` for Flower's message-based API (flwr 1.42): a
``flwr.serverapp.strategy.Strategy`` (``FedAvg``, ``FedProx``, ``FedAvgM``, ... or your own) and a
``ClientApp`` per audit client, driven in process, round by round, through the strategy's own
``configure_train`` / ``aggregate_train`` and a small in-memory ``Grid`` that hands each
``Message`` to the destination node's ``ClientApp`` (no SuperLink, no simulation engine, no
network) — what ``Strategy.start(grid, ...)`` does, without the evaluation calls.

flwr is imported when an adapter is built, not when :mod:`moreau.audit` is."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from uuid import uuid4

import numpy as np

from ._audit import AuditError
from ._flower_pfl import flower_algorithm_check
from ._instance import Client

__all__ = ["AppFn"]

AppFn = Callable[[Client], Any]
#: node ids of the audit's clients: client i is node NODE0 + i (the server is node 0)
NODE0 = 1001


def _flwr() -> Any:
    try:
        import flwr.serverapp.strategy  # noqa: F401  (the message-based strategies)
        from flwr import app
    except ImportError as exc:  # pragma: no cover - exercised only without flwr
        raise ImportError(
            "the Flower message adapter needs flwr with flwr.serverapp.strategy: "
            "pip install 'moreau-pfl[audit]' (flwr==1.42.0)"
        ) from exc
    return app


def _first_line(exc: BaseException) -> str:
    s = str(exc)
    return f"{type(exc).__name__}: {s.splitlines()[0]}" if s else type(exc).__name__


@contextlib.contextmanager
def _identity() -> Iterator[None]:
    """The process identity a ServerApp has (Flower's ``Message`` reads it when the strategy
    builds its instructions): run 1, node 0, task 1; the previous identity restored after."""
    from flwr.supercore.task_identity import TaskIdentity

    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
    try:
        yield
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def _grid_class() -> Any:
    from flwr.serverapp import Grid

    class InProcessGrid(Grid):
        """A Grid whose nodes are ClientApps in this process: ``send_and_receive`` calls each
        message's destination app with its node's Context (kept across rounds) and returns
        the replies in the order of the messages."""

        def __init__(self, apps: dict[int, Any], contexts: dict[int, Any]) -> None:
            self.apps, self.contexts, self._run_info = apps, contexts, None
            self.replies: dict[str, Any] = {}

        def set_run(self, run: Any) -> None:
            self._run_info = run

        @property
        def run(self) -> Any:
            return self._run_info

        def create_message(
            self, content: Any, message_type: str, dst_node_id: int, group_id: str, ttl: float | None = None
        ) -> Any:
            from flwr.app import Message

            return Message(
                content=content, message_type=message_type, dst_node_id=dst_node_id, group_id=group_id
            )

        def get_node_ids(self) -> Iterable[int]:
            return list(self.apps)

        def push_messages(self, messages: Iterable[Any]) -> Iterable[str]:
            ids = []
            for msg in messages:
                node = int(msg.metadata.dst_node_id)
                if node not in self.apps:
                    raise AuditError(
                        f"the strategy sent a message to node {node}, which is not an audit client"
                    )
                msg.metadata.__dict__["_message_id"] = mid = str(uuid4())  # as the SuperLink assigns it
                try:
                    reply = self.apps[node](msg, self.contexts[node])
                except Exception as exc:  # noqa: BLE001  (the user's ClientApp: one line)
                    raise AuditError(
                        f"the ClientApp of client {node - NODE0} raised {_first_line(exc)}"
                    ) from exc
                self.replies[mid] = reply
                ids.append(mid)
            return ids

        def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Any]:
            return [self.replies.pop(i) for i in message_ids if i in self.replies]

        def send_and_receive(self, messages: Iterable[Any], *, timeout: float | None = None) -> Iterable[Any]:
            return self.pull_messages(self.push_messages(messages))

    return InProcessGrid


class _MessageRound:
    """The round function of a message-based Flower strategy and ClientApps."""

    def __init__(self, strategy: Any, app_fn: AppFn, algorithm: str) -> None:
        self.app = _flwr()
        from flwr.serverapp.strategy import Strategy

        flower_algorithm_check(algorithm, "the Flower message-API adapter")
        if not isinstance(strategy, Strategy):
            raise AuditError(
                f"strategy must be a flwr.serverapp.strategy.Strategy (got {type(strategy).__name__})"
            )
        if not callable(app_fn):
            raise AuditError(f"app_fn must be callable (got {type(app_fn).__name__})")
        self.strategy: Any = strategy
        self.app_fn, self.round, self.grid = app_fn, 0, None

    def _setup(self, clients: list[Client]) -> None:
        from flwr.clientapp import ClientApp

        apps, contexts = {}, {}
        for c in clients:
            try:
                app = self.app_fn(c)
            except Exception as exc:  # noqa: BLE001  (the user's code: one line)
                raise AuditError(f"app_fn raised {_first_line(exc)} for client {c.index}") from exc
            if not isinstance(app, ClientApp):
                raise AuditError(f"app_fn must return a flwr.clientapp.ClientApp (got {type(app).__name__})")
            node = NODE0 + c.index
            apps[node] = app
            contexts[node] = self.app.Context(
                run_id=1,
                node_id=node,
                node_config={"partition-id": c.index, "num-partitions": len(clients)},
                state=self.app.RecordDict(),
                run_config={},
            )
        self.grid = _grid_class()(apps, contexts)

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        if self.grid is None:
            self._setup(clients)
        self.round += 1
        t, m, d = self.round, len(clients), w.shape[0]
        A = self.app
        arrays = A.ArrayRecord([w.copy()])
        config = A.ConfigRecord({k: v for k, v in hyper.items() if v is not None})
        flower_log = logging.getLogger("flwr")
        level = flower_log.level
        flower_log.setLevel(logging.WARNING)  # Flower logs every round at INFO
        try:
            with _identity():
                messages = list(self.strategy.configure_train(t, arrays, config, self.grid))
                if len(messages) != m:
                    raise AuditError(
                        f"the strategy sent {len(messages)} of {m} clients a train message at round {t}: Flower "
                        "samples nodes with Python's random module, which the audit cannot share with the "
                        "paper's algorithm; audit full participation (fraction_train=1.0)"
                    )
                assert self.grid is not None
                replies = list(self.grid.send_and_receive(messages))
                local = np.broadcast_to(w, (m, d)).copy()
                for reply in replies:
                    if reply.has_error():
                        raise AuditError(
                            f"client {reply.metadata.src_node_id - NODE0} replied with an error at round {t}"
                        )
                    local[reply.metadata.src_node_id - NODE0] = self._vector(
                        reply.content.array_records, d, "a reply"
                    )
                new, _ = self.strategy.aggregate_train(t, replies)
        finally:
            flower_log.setLevel(level)
        if new is None:
            raise AuditError(f"the strategy's aggregate_train returned no arrays at round {t}")
        return self._vector({"": new}, d, "aggregate_train's arrays"), local

    @staticmethod
    def _vector(records: Any, d: int, what: str) -> np.ndarray:
        flat = [np.asarray(a).reshape(-1) for rec in records.values() for a in rec.to_numpy_ndarrays()]
        v = np.concatenate(flat) if flat else np.zeros(0)
        if v.shape != (d,):
            raise AuditError(f"{what} holds {v.size} parameters, the instance {d} features")
        return v
