r"""Which algorithms the Flower adapters audit (docs/audit.md, "What each adapter supports"):
all of them.

Per-FedAvg's round is FedAvg's shape (the sampled clients take τ local steps from the server
model, the server averages), so a Flower strategy and client run it as they run FedAvg.  pFedMe
and FedFW run through the user's own strategy (its ``aggregate_fit`` / ``aggregate_train`` takes
the server step: pFedMe's :math:`(1-\beta) w + \beta\,\overline{w_i}`, FedFW's average of the
clients' Frank-Wolfe iterates) and stateful clients; pFL^MF's personal factors stay on the
clients, read by the audit through a small accessor protocol; PerMFL's global round is K Flower
rounds, each a team round, the team models kept by the user's strategy
(:mod:`moreau.audit._flower_more`)."""

from __future__ import annotations

from ._engine import ALGORITHMS

__all__ = ["FLOWER_ALGORITHMS", "LEGACY_ALGORITHMS", "flower_algorithm_check"]

#: The algorithms the message-API adapter audits (PerMFL: K Flower rounds per global round, the
#: team models kept by the strategy).
FLOWER_ALGORITHMS = ("fedavg", "fedprox", "perfedavg", "pfedme", "fedfw", "pflmf", "permfl")
#: The algorithms the legacy adapter audits.
LEGACY_ALGORITHMS = FLOWER_ALGORITHMS

#: Why an algorithm is not audited through Flower, for the ones with a reason (none at present).
_WHY: dict[str, str] = {}


def flower_algorithm_check(
    algorithm: str, adapter: str, audited: tuple[str, ...] = FLOWER_ALGORITHMS
) -> None:
    """A one-line ``ValueError`` naming the algorithm and ``adapter`` when ``adapter`` (auditing
    ``audited``) does not audit ``algorithm`` (and why, for the ones with a reason)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS} (got {algorithm!r})")
    if algorithm not in audited:
        why = _WHY.get(algorithm, "")
        raise ValueError(
            f"algorithm {algorithm!r} is not audited by {adapter}"
            + (f": {why}" if why else "")
            + f" (it audits {', '.join(audited)})"
        )
