r"""Audit a federated-learning implementation against the paper's algorithm (issue 30).

:func:`audit` runs an implementation (a numpy round function, or a client update and an
aggregator: docs/audit.md) beside :mod:`moreau.fl`'s FedAvg, FedProx, pFedMe or FedFW on an exact
instance (:func:`instance`, its clients as :class:`Client` records) and reports where they part,
where the implementation ends up against the exact optimum, and which named deviation of
:data:`DEVIATIONS` (extensible with :func:`deviation`) reproduces its iterates.  The command
line is ``moreau audit``.  :func:`audit_torch` and :func:`audit_flower` adapt a PyTorch
implementation and a Flower strategy with its clients (torch and flwr: the ``audit`` extra,
imported only when an adapter is built).
"""

from ._audit import DEFAULT_HYPER, AuditError, AuditReport, Fit, audit
from ._deviations import DEVIATIONS, Deviation, Param, bound_deviation, deviation
from ._engine import ALGORITHMS, ENGINES, Engine, Knobs, run_variant
from ._flower_api import audit_flower, audit_flower_messages, flower_message_round_fn, flower_round_fn
from ._instance import FAMILIES, Client, Instance, instance, sample_clients
from ._perfedavg import __all__ as _perfedavg  # noqa: F401  (registers the Per-FedAvg engine)
from ._permfl import TEAMS, team_instance
from ._pflmf import lowrank_instance, pflmf_pack, pflmf_unpack
from ._torch_api import audit_torch, torch_round_fn

__all__ = [
    "audit",
    "AuditReport",
    "AuditError",
    "Fit",
    "DEFAULT_HYPER",
    "DEVIATIONS",
    "Deviation",
    "Param",
    "deviation",
    "bound_deviation",
    "Knobs",
    "run_variant",
    "ALGORITHMS",
    "Client",
    "Instance",
    "instance",
    "sample_clients",
    "FAMILIES",
    "audit_torch",
    "torch_round_fn",
    "audit_flower",
    "flower_round_fn",
    "audit_flower_messages",
    "flower_message_round_fn",
    "team_instance",
    "lowrank_instance",
    "pflmf_pack",
    "pflmf_unpack",
    "TEAMS",
    "ENGINES",
    "Engine",
]
