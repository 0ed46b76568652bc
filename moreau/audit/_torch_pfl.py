r"""The PyTorch adapter's protocols for PerMFL and pFL^MF (docs/audit.md): their rounds have more
than a client update and a server step, so they get round functions of their own, built on
:class:`moreau.audit._torch._TorchRound`'s conversions (Per-FedAvg's round is FedAvg's shape and
runs through that class itself).

- **PerMFL**: the devices' ``train(model, loader, *, team_model, global_model, **hyper)``
  (L device steps towards the team model), the team step ``team(team_model, device_models, *,
  global_model, **hyper)`` after each of the K team rounds, and the global step
  ``aggregate(team_models, weights, *, global_model, num_samples, **hyper)``.
- **pFL^MF**: a model with two parameters, the shared factor (``nn.Linear(d, r).weight``, i.e.
  :math:`U^\top` ``(r, d)``, or U ``(d, r)``) then the client's personal factor :math:`v_i`
  (r numbers); ``train(model, loader, *, global_model, **hyper)`` updates the client's copy
  (loaded with :math:`U_t` and the client's :math:`v_i^t` before the call); the new
  :math:`v_i` is read from it, and ``aggregate(models, weights, *, global_model, num_samples,
  **hyper)`` returns the new shared factor (a model or state_dict of the same shape)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ._audit import AuditError
from ._instance import Client
from ._torch import Aggregate, Train, _TorchRound

__all__ = ["pfl_torch_round"]


class _PerMFLRound(_TorchRound):
    """PerMFL's round through torch: devices, teams, the global model."""

    algorithms = ("permfl",)

    def __init__(self, *args: Any, team: Train) -> None:
        super().__init__(*args)
        self.team = team

    def _as_model(self, obj: Any, what: str) -> Any:
        m = copy.deepcopy(self.template)
        self._load(m, self._vector(obj, what))
        return m

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        torch, x, devices = self.torch, w, clients
        m, d = len(devices), x.shape[0]
        if self.size != d:
            raise AuditError(f"model has {self.size} parameters, the instance {d} features")
        glob = copy.deepcopy(self.template)
        self._load(glob, x)
        glob.requires_grad_(False)
        theta = np.broadcast_to(x, (m, d)).copy()
        teams = sorted({c.team for c in devices})
        team_models: list[Any] = []
        old = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)
        try:
            for i in teams:
                members = [c for c in devices if c.team == i]
                tm = copy.deepcopy(glob)  # the team model starts the round at the global model
                for _ in range(int(hyper["K"])):
                    for c in members:
                        model = self._client_model(c, d)
                        out = self.train(
                            model,
                            self._loader(c),
                            team_model=copy.deepcopy(tm),
                            global_model=copy.deepcopy(glob),
                            **hyper,
                        )
                        if out is not None and out is not model:
                            if isinstance(out, torch.nn.Module):
                                model = self.models[c.index] = out
                            else:
                                self._load(
                                    model, self._vector(out, f"train's return value (device {c.index})")
                                )
                        theta[c.index] = self._vector(model, f"device {c.index}'s model")
                    new = self.team(
                        copy.deepcopy(tm),
                        [self.models[c.index] for c in members],
                        global_model=copy.deepcopy(glob),
                        **hyper,
                    )
                    tm = self._as_model(new, f"team's return value (team {i})")
                    tm.requires_grad_(False)
                team_models.append(tm)
            sizes = [sum(c.n for c in devices if c.team == i) for i in teams]
            weights = [1.0 / len(teams)] * len(teams)
            out = self.aggregate(team_models, weights, global_model=glob, num_samples=sizes, **hyper)
        finally:
            torch.set_default_dtype(old)
        return self._vector(out, "aggregate's return value"), theta


class _PFLMFRound(_TorchRound):
    """pFL^MF's round through torch: the shared factor at the server, the personal ones at the
    clients, the audit's state ``concat(U.ravel(), V.ravel())``."""

    algorithms = ("pflmf",)

    def _shapes(self, d: int, r: int) -> tuple[Any, Any]:
        params = list(self.template.parameters())
        shapes = [tuple(p.shape) for p in params]
        if len(params) != 2 or params[0].numel() != d * r or params[1].numel() != r:
            raise AuditError(
                f"model: pFL^MF's model has two parameters, the shared factor ({r}, {d}) or ({d}, {r}) "
                f"then the personal one ({r} numbers), e.g. nn.Sequential(nn.Linear({d}, {r}, bias=False), "
                f"nn.Linear({r}, 1, bias=False)) (got shapes {shapes})"
            )
        return shapes[0], shapes[1]

    def _factors(self, flat: np.ndarray, d: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        """``(U (d, r), v (r,))`` from the model's flattened parameters."""
        s0, _ = self._shapes(d, r)
        shared = flat[: d * r].reshape(s0)
        U = shared.T if s0 == (r, d) else shared.reshape(d, r)
        return U, flat[d * r :]

    def _flat(self, U: np.ndarray, v: np.ndarray, d: int, r: int) -> np.ndarray:
        s0, _ = self._shapes(d, r)
        shared = U.T if s0 == (r, d) else U
        return np.concatenate([np.ravel(shared), np.ravel(v)])

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        torch = self.torch
        m, d, r = len(clients), clients[0].X.shape[1], int(hyper["rank"])
        self._shapes(d, r)
        U, V = w[: d * r].reshape(d, r), w[d * r :].reshape(m, r)
        glob = copy.deepcopy(self.template)
        self._load(glob, self._flat(U, np.zeros(r), d, r))
        glob.requires_grad_(False)
        V_new = np.zeros((m, r), dtype=self._np_dtype())
        old = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)
        try:
            for c in clients:
                model = self._client_model(c, d)
                self._load(model, self._flat(U, V[c.index], d, r))  # U_t and the client's v_i^t
                start = copy.deepcopy(model).requires_grad_(False)
                out = self.train(model, self._loader(c), global_model=start, **hyper)
                if out is not None and out is not model:
                    if isinstance(out, torch.nn.Module):
                        model = self.models[c.index] = out
                    else:
                        self._load(model, self._vector(out, f"train's return value (client {c.index})"))
                V_new[c.index] = self._factors(self._vector(model, f"client {c.index}'s model"), d, r)[1]
            models = [self.models[c.index] for c in clients]
            weights = [c.weight for c in clients]
            sizes = [c.n for c in clients]
            out = self.aggregate(models, weights, global_model=glob, num_samples=sizes, **hyper)
        finally:
            torch.set_default_dtype(old)
        U_new = self._factors(self._vector(out, "aggregate's return value"), d, r)[0]
        return np.concatenate([U_new.ravel(), V_new.ravel()]), V_new @ U_new.T

    def _client_model(self, c: Client, d: int) -> Any:
        if c.index not in self.models:  # loaded with (U_t, v_i^t) before each call of train
            self.models[c.index] = copy.deepcopy(self.template)
        return self.models[c.index]

    def _np_dtype(self) -> Any:
        return np.float32 if self.dtype == self.torch.float32 else np.float64


def pfl_torch_round(
    model: Any,
    train: Train,
    aggregate: Aggregate,
    algorithm: str,
    dtype: Any,
    batch_size: int | None,
    team: Train | None,
) -> _TorchRound:
    """The torch round function of PerMFL (``team`` required: its team step) or pFL^MF."""
    if algorithm == "permfl":
        if not callable(team):
            raise AuditError(
                "team must be callable for PerMFL through the PyTorch adapter: its team step "
                f"team(team_model, device_models, *, global_model, **hyper) (got {type(team).__name__})"
            )
        return _PerMFLRound(model, train, aggregate, algorithm, dtype, batch_size, team=team)
    if team is not None:
        raise ValueError(f"team: only PerMFL has a team step (algorithm {algorithm!r})")
    return _PFLMFRound(model, train, aggregate, algorithm, dtype, batch_size)
