"""The PyTorch adapter's entry points, :func:`torch_round_fn` and :func:`audit_torch`, dispatching
to the round of each algorithm (:mod:`._torch`; PerMFL and pFL^MF: :mod:`._torch_pfl`).  Kept apart
from those modules so that neither imports the other in a circle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._audit import AuditReport, audit
from ._torch import Aggregate, Train, _torch, _TorchRound
from ._torch_pfl import pfl_torch_round

__all__ = ["torch_round_fn", "audit_torch"]


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
