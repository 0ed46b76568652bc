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

from ._audit import AuditError
from ._engine import ALGORITHMS
from ._instance import Client, sample_clients

__all__ = ["Aggregate", "Train"]

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
