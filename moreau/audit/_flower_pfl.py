r"""Which algorithms the Flower adapters audit, and why PerMFL and pFL^MF are not among them
(docs/audit.md, "What each adapter supports").

Per-FedAvg's round is FedAvg's shape (the sampled clients take τ local steps from the server
model, the server averages), so a Flower strategy and client run it as they run FedAvg.  PerMFL's
team tier (K team rounds, each a device round and a team step, between two global steps) and
pFL^MF's per-client personal factors (each client's own v_i in the server state the audit
compares; a strategy sends one parameter set to every client) have no place in a strategy's
``configure_fit`` / ``aggregate_fit`` (or ``configure_train`` / ``aggregate_train``) round."""

from __future__ import annotations

from ._engine import ALGORITHMS

__all__ = ["FLOWER_ALGORITHMS", "flower_algorithm_check"]

#: The algorithms both Flower adapters audit.
FLOWER_ALGORITHMS = ("fedavg", "fedprox", "perfedavg")

_WHY = {
    "permfl": "PerMFL's team tier (K team rounds of device training and a team step between two "
    "global steps) has no place in a strategy's configure/aggregate round",
    "pflmf": "pFL^MF's server state holds each client's own personal factor v_i, and a strategy "
    "sends one parameter set to every client",
    "pfedme": "pFedMe samples its clients after the local rounds, a strategy before them",
    "fedfw": "FedFW's server step (a Frank-Wolfe step over the L2 ball) is not a strategy's average",
}


def flower_algorithm_check(algorithm: str, adapter: str) -> None:
    """A one-line ``ValueError`` naming the algorithm and ``adapter`` when the Flower adapters do not
    audit ``algorithm`` (and why, for the ones with a reason)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS} (got {algorithm!r})")
    if algorithm not in FLOWER_ALGORITHMS:
        why = _WHY.get(algorithm, "")
        raise ValueError(
            f"algorithm {algorithm!r} is not audited by {adapter}"
            + (f": {why}" if why else "")
            + f" (it audits {', '.join(FLOWER_ALGORITHMS)})"
        )
