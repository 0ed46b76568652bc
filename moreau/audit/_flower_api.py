"""The Flower adapters' entry points: :func:`flower_round_fn` / :func:`audit_flower` (the legacy
``flwr.server.strategy`` API) and :func:`flower_message_round_fn` / :func:`audit_flower_messages`
(the message-based ``flwr.serverapp.strategy`` API), dispatching to the round of each algorithm
(:mod:`._flower`, :mod:`._flower_messages`, :mod:`._flower_more`).  Kept apart from those modules
so that none of them imports another in a circle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._audit import AuditReport, audit
from ._flower import ClientFn, _FlowerRound
from ._flower_messages import AppFn, _MessageRound
from ._flower_more import more_message_round, more_round

__all__ = ["flower_round_fn", "audit_flower", "flower_message_round_fn", "audit_flower_messages"]


def flower_round_fn(strategy: Any, client_fn: ClientFn, algorithm: str) -> Callable[..., Any]:
    r"""A Flower strategy and clients as the round function :func:`moreau.audit.audit` runs.

    ``strategy``: a ``flwr.server.strategy.Strategy`` (Flower's ``FedAvg``, ``FedProx``, ... or
    your own); ``client_fn(client) -> NumPyClient`` (or a ``flwr.client.Client``) is called once
    per audit client (a :class:`moreau.audit.Client`) before the first round; the client object
    lives across rounds.  Each round runs ``strategy.configure_fit(t, parameters, manager)``, each
    returned client's ``fit(parameters, config)``, and ``strategy.aggregate_fit(t, results, [])``,
    in process.  The parameters are one array, the model ``w`` ``(d,)`` (a client may return
    several arrays: they are concatenated, flattened).  The audit's hyperparameters travel in
    the fit config (``{**hyper, **on_fit_config_fn(t)}``, ``None`` values left out); the client
    manager samples ``num_clients < m`` clients with :func:`moreau.audit.sample_clients` on the
    audit's rng, so a strategy sampling S clients shares the reference's draws.  ``fedavg``,
    ``fedprox`` and ``perfedavg`` here; ``pfedme``, ``fedfw`` and ``pflmf`` (pFL^MF: the personal
    factors stay on the clients, read through ``get_properties``) through
    :mod:`moreau.audit._flower_more` (docs/audit.md), and ``permfl`` (K Flower rounds per global
    round, each a team round, the team models kept by your strategy) there too."""
    if algorithm in ("pfedme", "fedfw", "pflmf", "permfl"):
        return more_round(strategy, client_fn, algorithm)
    return _FlowerRound(strategy, client_fn, algorithm)


def audit_flower(strategy: Any, client_fn: ClientFn, algorithm: str, **kwargs: Any) -> AuditReport:
    """:func:`moreau.audit.audit` of a Flower strategy and clients (:func:`flower_round_fn`);
    ``kwargs`` are :func:`~moreau.audit.audit`'s (``rounds``, ``family``, ``hyper``, ``weights``, ...)."""
    return audit(flower_round_fn(strategy, client_fn, algorithm), algorithm, **kwargs)


def flower_message_round_fn(strategy: Any, app_fn: AppFn, algorithm: str) -> Callable[..., Any]:
    r"""A message-based Flower strategy and ClientApps as the round function :func:`moreau.audit.audit`
    runs.

    ``strategy``: a ``flwr.serverapp.strategy.Strategy``; ``app_fn(client) -> ClientApp`` is called
    once per audit client (a :class:`moreau.audit.Client`) before the first round; its node has
    id ``1001 + client.index``, a ``Context`` kept across rounds (``node_config``:
    ``partition-id`` = the client's index, ``num-partitions`` = m; ``state`` a ``RecordDict`` for
    client state).  Each round: ``strategy.configure_train(t, ArrayRecord([w]), ConfigRecord(hyper),
    grid)`` (the audit's hyperparameters, ``None`` values left out, are the train config; a
    strategy adds its own keys, FedProx ``proximal-mu``), each message handed to its node's
    ClientApp, ``strategy.aggregate_train(t, replies)``.  The model is one array ``w`` ``(d,)``
    (a reply may hold several arrays: concatenated, flattened).  Full participation only:
    Flower samples nodes with Python's ``random`` module, which the audit cannot share with the
    reference's draws (an ``AuditError`` otherwise).  ``fedavg``, ``fedprox``, ``perfedavg``,
    ``pfedme`` and ``fedfw`` (your strategy's ``aggregate_train`` takes their server step), and
    ``pflmf`` (the personal factors in the nodes' ``context.state["personal"]``), and ``permfl``
    (K Flower rounds per global round, each a team round: :mod:`moreau.audit._flower_more`,
    docs/audit.md)."""
    if algorithm in ("pflmf", "permfl"):
        return more_message_round(strategy, app_fn, algorithm)
    return _MessageRound(strategy, app_fn, algorithm)


def audit_flower_messages(strategy: Any, app_fn: AppFn, algorithm: str, **kwargs: Any) -> AuditReport:
    """:func:`moreau.audit.audit` of a message-based Flower strategy and ClientApps
    (:func:`flower_message_round_fn`); ``kwargs`` are :func:`~moreau.audit.audit`'s."""
    return audit(flower_message_round_fn(strategy, app_fn, algorithm), algorithm, **kwargs)
