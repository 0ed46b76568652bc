r"""The Flower adapter of ``moreau audit``: a ``flwr`` strategy of the legacy
``flwr.server.strategy`` interface and a client per audit client, driven in-process through the
strategy's own ``configure_fit`` / ``aggregate_fit`` (no simulation engine, no network), turned
into the numpy round function :func:`moreau.audit.audit` runs (docs/audit.md).  Written against
flwr 1.42.0.

flwr is imported when an adapter is built, not when :mod:`moreau.audit` is: it is an optional
dependency (the ``audit`` extra)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._audit import AuditError
from ._engine import ALGORITHMS
from ._flower_pfl import LEGACY_ALGORITHMS, flower_algorithm_check
from ._instance import Client, sample_clients

__all__ = ["ClientFn"]

ClientFn = Callable[[Client], Any]


def _flwr() -> Any:
    try:
        import flwr
        import flwr.server.strategy  # noqa: F401  (the legacy interface this adapter drives)
    except ImportError as exc:  # pragma: no cover - exercised only without flwr
        raise ImportError(
            "the Flower adapter needs flwr with its legacy flwr.server.strategy interface: "
            "pip install 'moreau-pfl[audit]' (flwr==1.42.0)"
        ) from exc
    return flwr


def _first_line(exc: BaseException) -> str:
    s = str(exc)
    return f"{type(exc).__name__}: {s.splitlines()[0]}" if s else type(exc).__name__


class _FlowerRound:
    """The round function of a Flower strategy and clients (see :func:`flower_round_fn`)."""

    def __init__(self, strategy: Any, client_fn: ClientFn, algorithm: str) -> None:
        flwr = _flwr()
        from flwr.common import FitIns, FitRes, Parameters, ndarrays_to_parameters, parameters_to_ndarrays
        from flwr.server.client_manager import SimpleClientManager
        from flwr.server.client_proxy import ClientProxy
        from flwr.server.strategy import Strategy

        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS} (got {algorithm!r})")
        flower_algorithm_check(
            algorithm, "the Flower adapter (legacy flwr.server.strategy)", LEGACY_ALGORITHMS
        )
        if not isinstance(strategy, Strategy):
            raise AuditError(
                f"strategy must be a flwr.server.strategy.Strategy (got {type(strategy).__name__})"
            )
        if not callable(client_fn):
            raise AuditError(f"client_fn must be callable (got {type(client_fn).__name__})")
        self.flwr, self.strategy, self.client_fn, self.algorithm = flwr, strategy, client_fn, algorithm
        self.to_params, self.to_arrays = ndarrays_to_parameters, parameters_to_ndarrays
        self.FitIns, self.FitRes, self.Parameters = FitIns, FitRes, Parameters
        self.rng: np.random.Generator | None = None
        self.round = 0
        self.proxies: list[Any] = []
        outer = self

        class Proxy(ClientProxy):  # an in-process client: fit() calls the client's own fit()
            def __init__(self, cid: str, client: Any) -> None:
                super().__init__(cid)
                self.client = client

            def fit(self, ins: Any, timeout: float | None, group_id: int | None) -> Any:
                return self.client.fit(ins)

            def get_properties(self, ins: Any, timeout: float | None, group_id: int | None) -> Any:
                return self.client.get_properties(ins)

            def get_parameters(self, ins: Any, timeout: float | None, group_id: int | None) -> Any:
                return self.client.get_parameters(ins)

            def evaluate(self, ins: Any, timeout: float | None, group_id: int | None) -> Any:
                return self.client.evaluate(ins)

            def reconnect(self, ins: Any, timeout: float | None, group_id: int | None) -> Any:
                raise NotImplementedError("in-process clients do not reconnect")

        class Manager(SimpleClientManager):  # samples with the audit's rng, as moreau.fl draws
            def sample(
                self, num_clients: int, min_num_clients: int | None = None, criterion: Any = None
            ) -> Any:
                m = len(outer.proxies)
                if criterion is not None:
                    raise AuditError("the strategy samples clients with a criterion: not supported")
                if not 1 <= num_clients <= m:
                    raise AuditError(f"the strategy asks for {num_clients} clients of {m}")
                if num_clients == m:
                    return list(outer.proxies)
                assert outer.rng is not None
                return [outer.proxies[int(i)] for i in sample_clients(outer.rng, m, num_clients)]

        self.Proxy, self.manager = Proxy, Manager()

    def _make_client(self, c: Client) -> Any:
        return self.client_fn(c)

    def _setup(self, clients: list[Client]) -> None:
        for c in clients:
            try:
                client = self._make_client(c)
            except Exception as exc:  # noqa: BLE001  (the user's code: one line)
                raise AuditError(f"client_fn raised {_first_line(exc)} for client {c.index}") from exc
            if hasattr(client, "to_client"):  # a NumPyClient
                client = client.to_client()
            if not hasattr(client, "fit"):
                raise AuditError(
                    f"client_fn must return a flwr NumPyClient or Client (got {type(client).__name__})"
                )
            proxy = self.Proxy(str(c.index), client)
            self.proxies.append(proxy)
            self.manager.register(proxy)

    def _vector(self, arrays: list[np.ndarray], d: int, what: str) -> np.ndarray:
        flat = [np.asarray(a).reshape(-1) for a in arrays]
        v = np.concatenate(flat) if flat else np.zeros(0)
        if v.shape != (d,):
            raise AuditError(f"{what} has {v.size} parameters, the instance {d} features")
        return v

    def _fit_round(
        self, send: list[np.ndarray], size: int | None, hyper: dict[str, Any]
    ) -> tuple[dict[int, np.ndarray], np.ndarray]:
        """One round (``self.round``): ``configure_fit`` with the parameters ``send``, each returned
        client's ``fit``, ``aggregate_fit``; the fit results by client index, flattened (``size``
        parameters each; None: not checked), and the aggregated parameters, flattened."""
        t = self.round
        st: Any = self.strategy
        has_cfg = hasattr(st, "on_fit_config_fn")  # Flower's built-in strategies: the config's source
        user_cfg = getattr(st, "on_fit_config_fn", None)
        sent = {k: v for k, v in hyper.items() if v is not None}

        def config(server_round: int) -> dict[str, Any]:  # the hyperparameters travel in the config
            return {**sent, **(user_cfg(server_round) if user_cfg is not None else {})}

        if has_cfg:
            st.on_fit_config_fn = config
        try:
            ins = st.configure_fit(t, self.to_params([a.copy() for a in send]), self.manager)
        finally:
            if has_cfg:
                st.on_fit_config_fn = user_cfg
        results, got = [], {}
        for proxy, fit_ins in ins:
            try:
                res = proxy.fit(fit_ins, None, t)
            except Exception as exc:  # noqa: BLE001  (the user's client: one line)
                raise AuditError(f"client {proxy.cid}'s fit raised {_first_line(exc)} at round {t}") from exc
            arrays = self.to_arrays(res.parameters)
            what = f"client {proxy.cid}'s fit result"
            flat = [np.asarray(a).reshape(-1) for a in arrays]
            got[int(proxy.cid)] = (
                (np.concatenate(flat) if flat else np.zeros(0))
                if size is None
                else self._vector(arrays, size, what)
            )
            results.append((proxy, res))
        params, _ = st.aggregate_fit(t, results, [])
        if params is None:
            raise AuditError(f"the strategy's aggregate_fit returned no parameters at round {t}")
        total = sum(int(np.asarray(a).size) for a in send)
        return got, self._vector(self.to_arrays(params), total, "aggregate_fit's parameters")

    def _locals(self, w: np.ndarray, got: dict[int, np.ndarray], m: int, hyper: dict[str, Any]) -> Any:
        """The clients' local models ``(m, d)`` after the round: the fit results, the server model
        for the clients not sampled (FedAvg's and Per-FedAvg's convention)."""
        local = np.broadcast_to(w, (m, w.shape[0])).copy()
        for i, v in got.items():
            local[i] = v
        return local

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        if not self.proxies:
            self._setup(clients)
        self.rng = rng
        self.round += 1
        got, new = self._fit_round([w], w.shape[0], hyper)
        return new, self._locals(w, got, len(clients), hyper)
