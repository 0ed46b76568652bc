r"""The PyTorch adapter of ``moreau audit``: a model, the implementation's own client-training
function and server step, fed the audit instance's clients through ordinary ``DataLoader`` s,
turned into the numpy round function :func:`moreau.audit.audit` runs (docs/audit.md).

torch is imported when an adapter is built, not when :mod:`moreau.audit` is: it is an optional
dependency (the ``audit`` extra)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ._audit import AuditError, AuditReport, audit
from ._engine import ALGORITHMS
from ._instance import Client, sample_clients

__all__ = ["torch_round_fn", "audit_torch"]

Train = Callable[..., Any]
Aggregate = Callable[..., Any]


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise ImportError(
            "the PyTorch adapter needs torch: pip install 'moreau-pfl[audit]' (torch==2.13.0)"
        ) from exc
    return torch


#: The algorithms the PyTorch adapter audits (PerMFL and pFL^MF: ``moreau/audit/_torch_pfl.py``).
TORCH_ALGORITHMS = ("fedavg", "fedprox", "pfedme", "perfedavg", "permfl", "pflmf")


class _TorchRound:
    """The round function of a torch implementation (see :func:`torch_round_fn`)."""

    algorithms: tuple[str, ...] = ("fedavg", "fedprox", "pfedme", "perfedavg")

    def __init__(
        self,
        model: Any,
        train: Train,
        aggregate: Aggregate,
        algorithm: str,
        dtype: Any,
        batch_size: int | None,
    ) -> None:
        torch = _torch()
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS} (got {algorithm!r})")
        if algorithm not in self.algorithms:
            raise ValueError(
                f"algorithm {algorithm!r} is not audited by the PyTorch adapter "
                f"(it audits {', '.join(TORCH_ALGORITHMS)}; docs/audit.md)"
            )
        if not isinstance(model, torch.nn.Module):
            raise AuditError(f"model must be a torch.nn.Module (got {type(model).__name__})")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64 (got {dtype!r})")
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ValueError(f"batch_size must be None (full batch) or an int >= 1 (got {batch_size!r})")
        for name, fn in (("train", train), ("aggregate", aggregate)):
            if not callable(fn):
                raise AuditError(f"{name} must be callable (got {type(fn).__name__})")
        self.torch = torch
        self.template = copy.deepcopy(model).to(dtype)
        self.train, self.aggregate = train, aggregate
        self.algorithm, self.dtype, self.batch_size = algorithm, dtype, batch_size
        self.size = sum(int(p.numel()) for p in self.template.parameters())
        self.models: dict[int, Any] = {}
        self.loaders: dict[int, Any] = {}

    # --- conversions between the audit's vector w (d,) and a model's parameters
    def _load(self, model: Any, w: np.ndarray) -> None:
        torch = self.torch
        with torch.no_grad():
            flat = torch.as_tensor(np.asarray(w), dtype=self.dtype)
            k = 0
            for p in model.parameters():
                n = int(p.numel())
                p.copy_(flat[k : k + n].reshape(p.shape))
                k += n

    def _vector(self, obj: Any, what: str) -> np.ndarray:
        """A model, a state_dict or a flat tensor/array as the vector (d,) in the model's dtype."""
        torch = self.torch
        if isinstance(obj, torch.nn.Module):
            params = list(obj.parameters())
        elif isinstance(obj, Mapping):
            m = copy.deepcopy(self.template)
            try:
                m.load_state_dict(obj)
            except (RuntimeError, KeyError, TypeError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else ""
                raise AuditError(f"{what}: a state_dict the model cannot load ({first})") from None
            params = list(m.parameters())
        elif isinstance(obj, torch.Tensor | np.ndarray):
            params = [torch.as_tensor(obj)]
        else:
            raise AuditError(
                f"{what} must be a state_dict, an nn.Module or a flat tensor (got {type(obj).__name__})"
            )
        flat = torch.cat([p.detach().reshape(-1) for p in params]) if params else torch.zeros(0)
        if flat.numel() != self.size:
            raise AuditError(f"{what} has {flat.numel()} parameters, the model {self.size}")
        return np.asarray(flat.detach().cpu().numpy())

    def _loader(self, c: Client) -> Any:
        if c.index not in self.loaders:
            torch = self.torch
            from torch.utils.data import DataLoader, TensorDataset

            ds = TensorDataset(torch.as_tensor(c.X, dtype=self.dtype), torch.as_tensor(c.y, dtype=self.dtype))
            self.loaders[c.index] = DataLoader(ds, batch_size=self.batch_size or c.n, shuffle=False)
        return self.loaders[c.index]

    def _client_model(self, c: Client, d: int) -> Any:
        if c.index not in self.models:
            m = copy.deepcopy(self.template)
            self._load(m, np.zeros(d))  # w_0 = 0, as the reference starts
            self.models[c.index] = m
        return self.models[c.index]

    def __call__(
        self, w: np.ndarray, clients: list[Client], rng: np.random.Generator, **hyper: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        torch = self.torch
        m, d = len(clients), w.shape[0]
        if self.size != d:
            raise AuditError(
                f"model has {self.size} parameters, the instance {d} features: use a model without bias, "
                f"e.g. nn.Linear({d}, 1, bias=False)"
            )
        S = int(hyper.get("S") or m)
        sampled_first = self.algorithm in ("fedavg", "perfedavg") and S < m
        chosen = sample_clients(rng, m, S) if sampled_first else np.arange(m)
        train_on = chosen if sampled_first else np.arange(m)
        glob = copy.deepcopy(self.template)
        self._load(glob, w)
        glob.requires_grad_(False)
        local = np.broadcast_to(w, (m, d)).copy()
        old = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)
        try:
            for i in train_on:
                c = clients[int(i)]
                model = self._client_model(c, d)
                out = self.train(model, self._loader(c), global_model=copy.deepcopy(glob), **hyper)
                if out is not None and out is not model:
                    if isinstance(out, torch.nn.Module):
                        model = self.models[c.index] = out
                    else:
                        self._load(model, self._vector(out, f"train's return value (client {c.index})"))
                local[int(i)] = self._vector(model, f"client {c.index}'s model")
            if self.algorithm == "pfedme" and S < m:
                chosen = sample_clients(rng, m, S)
            models = [self.models[clients[int(i)].index] for i in chosen]
            weights = [clients[int(i)].weight for i in chosen]
            sizes = [clients[int(i)].n for i in chosen]
            new = self.aggregate(models, weights, global_model=glob, num_samples=sizes, **hyper)
        finally:
            torch.set_default_dtype(old)
        return self._vector(new, "aggregate's return value"), local


def torch_round_fn(
    model: Any,
    train: Train,
    aggregate: Aggregate,
    algorithm: str,
    *,
    dtype: Any = None,
    batch_size: int | None = None,
    team: Train | None = None,
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    r"""A torch implementation as the round function :func:`moreau.audit.audit` runs.

    ``model``: an ``nn.Module`` whose parameters, flattened in ``model.parameters()`` order, are
    the audit's ``w`` (``d`` of them: e.g. ``nn.Linear(d, 1, bias=False)``); each client gets its
    own copy, kept across rounds (the client's local model), converted to ``dtype``
    (``torch.float64`` by default; ``torch.float32`` is audited at float32 rounding), starting at
    :math:`w_0 = 0`.  Each round, for every client that trains (FedAvg: the sampled ones),
    ``train(model, loader, *, global_model, **hyper)`` with the client's model, a ``DataLoader``
    of its ``(X, y)`` (``batch_size`` None: one full batch, in order), and a copy of the server
    model; it trains ``model`` in place (or returns a model / state_dict).  Then
    ``aggregate(models, weights, *, global_model, num_samples, **hyper) -> state_dict`` (or a
    model, or a flat tensor) with the sampled clients' models, their paper weights :math:`p_i`
    (not renormalised), their sample counts, and the server model.  ``torch.set_default_dtype``
    is ``dtype`` while the user's functions run.  PerMFL (``team``: its team step) and pFL^MF
    have protocols of their own (:mod:`moreau.audit._torch_pfl`, docs/audit.md)."""
    torch = _torch()
    dt = torch.float64 if dtype is None else dtype
    if algorithm in ("permfl", "pflmf"):
        from ._torch_pfl import pfl_torch_round

        return pfl_torch_round(model, train, aggregate, algorithm, dt, batch_size, team)
    if team is not None:
        raise ValueError(f"team: only PerMFL has a team step (algorithm {algorithm!r})")
    return _TorchRound(model, train, aggregate, algorithm, dt, batch_size)


def audit_torch(
    model: Any,
    train: Train,
    aggregate: Aggregate,
    algorithm: str,
    *,
    dtype: Any = None,
    batch_size: int | None = None,
    team: Train | None = None,
    **kwargs: Any,
) -> AuditReport:
    """:func:`moreau.audit.audit` of a torch implementation (:func:`torch_round_fn`; ``team``:
    PerMFL's team step); ``kwargs`` are :func:`~moreau.audit.audit`'s (``rounds``, ``family``,
    ``hyper``, ``weights``, ...)."""
    fn = torch_round_fn(model, train, aggregate, algorithm, dtype=dtype, batch_size=batch_size, team=team)
    return audit(fn, algorithm, **kwargs)
