r"""The library of named deviations: each a variant of the reference algorithm (a change of its
:class:`~moreau.audit.Knobs`), with at most one parameter to fit.  Extensible: :func:`deviation`
registers a user's own, as the built-ins below are registered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ._engine import ALGORITHMS, Knobs
from ._instance import Instance

__all__ = ["Deviation", "Param", "DEVIATIONS", "deviation", "bound_deviation"]

Apply = Callable[[Knobs, float, Mapping[str, Any], Instance], Knobs]


@dataclass(frozen=True)
class Param:
    """A deviation's fitted parameter: its ``name``, search interval ``[lo, hi]``, whether the
    first search grid is geometric (``log``: a positive scale such as an L2 weight) or linear, and
    whether it is an ``integer`` (a batch size: the fitted value is rounded; the deviation's
    ``apply`` rounds too, so the search sees a step function)."""

    name: str
    lo: float
    hi: float
    log: bool = False
    integer: bool = False


@dataclass(frozen=True)
class Deviation:
    """A named way an implementation departs from the paper's algorithm.

    ``apply(knobs, value, hyper, instance) -> knobs`` turns the reference's knobs (``value``: the
    fitted parameter, ``nan`` when ``param`` is None; ``hyper``: the run's hyperparameters);
    ``algorithms``: the reference algorithms it applies to; ``applies(hyper, instance)`` whether it
    can change anything on this run (e.g. weighting by sample counts needs unequal weights);
    ``group``: deviations of one group are alternatives of each other and never combined;
    ``description``: one line for the report and docs."""

    name: str
    description: str
    apply: Apply
    algorithms: tuple[str, ...] = ALGORITHMS
    param: Param | None = None
    group: str = ""
    applies: Callable[[Mapping[str, Any], Instance], bool] = lambda hyper, inst: True


#: The library, by name: the built-in deviations below and those :func:`deviation` registers
DEVIATIONS: dict[str, Deviation] = {}


def deviation(
    name: str,
    description: str,
    *,
    algorithms: tuple[str, ...] = ALGORITHMS,
    param: Param | None = None,
    group: str = "",
    applies: Callable[[Mapping[str, Any], Instance], bool] | None = None,
    registry: dict[str, Deviation] | None = None,
) -> Callable[[Apply], Apply]:
    """Decorator registering ``apply(knobs, value, hyper, instance) -> Knobs`` as the deviation
    ``name`` in ``registry`` (default :data:`DEVIATIONS`, the library every audit searches)."""
    bad = set(algorithms) - set(ALGORITHMS)
    if bad:
        raise ValueError(f"algorithms must be among {ALGORITHMS} (got {sorted(bad)})")
    if param is not None and not param.lo < param.hi:
        raise ValueError(f"param {param.name}: needs lo < hi (got [{param.lo}, {param.hi}])")
    if param is not None and param.log and param.lo <= 0:
        raise ValueError(f"param {param.name}: a log grid needs lo > 0 (got {param.lo})")

    def register(fn: Apply) -> Apply:
        target = DEVIATIONS if registry is None else registry
        target[name] = Deviation(
            name, description, fn, tuple(algorithms), param, group or name, applies or (lambda h, i: True)
        )
        return fn

    return register


def _uniform(inst: Instance) -> bool:
    return bool(abs(max(inst.weights) - min(inst.weights)) <= 1e-15)


@deviation(
    "extra_l2", "an extra L2 term mu/2 |w|^2 in each local loss", param=Param("mu", 1e-8, 10.0, log=True)
)
def _extra_l2(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, l2=v)


@deviation(
    "reset_clients",
    "local models start each round from the server model (the warm start w_{t-1,K} dropped; "
    "FedFW: restart=True, the server averaging the sampled clients)",
    algorithms=("fedprox", "fedfw"),
)
def _reset(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, reset_clients=True)


@deviation(
    "weights_by_samples",
    "server weights p_i proportional to the sample counts n_i instead of the paper's uniform p_i",
    algorithms=("fedavg", "fedprox", "pfedme", "pflmf", "perfedavg"),
    group="weights",
    applies=lambda hyper, inst: _uniform(inst) and len(set(inst.sizes.tolist())) > 1,
)
def _by_samples(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, weighting="samples")


@deviation(
    "uniform_weights",
    "uniform server weights 1/m instead of the paper's p_i",
    algorithms=("fedavg", "fedprox"),
    group="weights",
    applies=lambda hyper, inst: not _uniform(inst),
)
def _uniform_w(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, weighting="uniform")


@deviation(
    "eta_times_sampled",
    "the local step size eta multiplied by S, the number of sampled clients",
    algorithms=("fedavg", "fedprox", "pfedme"),
)
def _eta_s(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, eta_factor=k.eta_factor * float(hyper.get("S") or inst.m))


@deviation("gradient_sum", "the local loss summed over the samples, not averaged (a missing 1/n_i)")
def _grad_sum(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, grad_scale="sum")


@deviation(
    "warm_inner",
    "the inner solve starts from the previous personalised model instead of the local model w_{i,r}",
    algorithms=("pfedme",),
)
def _warm(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, warm_inner=True)


@deviation(
    "warm_inner_round",
    "the inner solve starts from the previous personalised model within a round (from the server "
    "model at the round's first local step) instead of the local model w_{i,r}",
    algorithms=("pfedme",),
    group="warm_inner",
    applies=lambda hyper, inst: int(hyper["R"]) > 1,  # with R = 1 the first inner solve is the only one
)
def _warm_round(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, warm_inner_round=True)


@deviation(
    "aliased_personal",
    "the personalised model is the local model itself: the proximal term vanishes and the local "
    "model takes the inner solution",
    algorithms=("pfedme",),
)
def _aliased(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, aliased=True)


@deviation(
    "prox_sign", "the proximal term's gradient with the wrong sign, -lam (w - w_g)", algorithms=("fedprox",)
)
def _sign(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, prox_sign=-k.prox_sign)


@deviation(
    "momentum",
    "heavy-ball momentum beta on the local steps (buffer reset at each local solve)",
    algorithms=("fedavg", "fedprox", "pfedme"),
    param=Param("beta", 0.0, 0.99),
)
def _momentum(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, momentum=v)


@deviation(
    "fw_eta_2_over_t_plus_2",
    "the Frank-Wolfe step eta_t = 2/(t+2) instead of the thesis's 2/(t+1) (t = 1, 2, ...)",
    algorithms=("fedfw",),
)
def _fw_eta(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, fw_eta_offset=2.0)


@deviation(
    "fw_grad_over_sampled",
    "the client gradient divided by S, the number of sampled clients, instead of n (the thesis's 1/n)",
    algorithms=("fedfw",),
    applies=lambda hyper, inst: int(hyper.get("S") or inst.m) < inst.m,
)
def _fw_over_s(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, fw_grad_div="sampled")


def bound_deviation(
    target: str,
    source: str,
    algorithms: tuple[str, ...],
    *,
    registry: dict[str, Deviation] | None = None,
) -> str:
    """Register the deviation ``"{target}_bound_to_{source}"``: the hyperparameter ``target``
    takes ``source``'s value (an argument shift, a wrong keyword, a copy-paste: PerMFL's authors'
    code sets its device penalty λ to the local step count), tried where the two differ.
    Returns the name."""
    name = f"{target}_bound_to_{source}"

    def applies(hyper: Mapping[str, Any], inst: Instance) -> bool:
        return target in hyper and source in hyper and hyper[target] != hyper[source]

    @deviation(
        name,
        f"the hyperparameter {target} takes the value of {source}",
        algorithms=algorithms,
        group=f"bound:{target}",
        applies=applies,
        registry=registry,
    )
    def _bind(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
        return replace(k, bind=(*k.bind, (target, source)))

    return name


bound_deviation("lam", "K", ("fedprox",))
