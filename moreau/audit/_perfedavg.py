r"""The Per-FedAvg engine of ``moreau audit``: the reference :func:`moreau.fl.per_fedavg`
(Algorithm 1 with exact gradients and Hessian-vector products, S clients sampled as
:mod:`moreau.fl` samples them), the exact optimum of Per-FedAvg's problem
:math:`\min_w \frac1n\sum_i f_i(w - \alpha\nabla f_i(w))` (closed form for quadratic clients,
a BFGS solve on :func:`moreau.meta_objective` for logistic ones), and Per-FedAvg's deviations:
the first-order variant (FO-MAML), the Hessian term doubled (the Hessian-free variant's
difference divided by δ instead of 2δ, as Per-FedAvg's §5 text writes it), and one step size
bound to the other's value.

The round function receives the server model ``w`` ``(d,)`` and returns the next one, or ``(w,
local)`` with ``local`` ``(m, d)`` the clients' models after their τ local steps (the server
model for clients not sampled); hyperparameters ``alpha`` (the inner, personalisation step),
``beta`` (the outer step), ``tau``, ``S``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.optimize import minimize

from .. import fl
from .._envelope import meta_objective
from ._audit import DEFAULT_HYPER
from ._deviations import Param, bound_deviation, deviation
from ._engine import ENGINES, Engine, Knobs
from ._instance import Instance, instance, sample_clients

__all__: list[str] = []

#: α inner step, β outer step, τ local steps, S sampled clients (None: all)
DEFAULTS: dict[str, Any] = {"alpha": 0.05, "beta": 0.1, "tau": 5, "S": None}


def _instance(family: str, seed: int, heterogeneous: bool, weights: str) -> Instance:
    return instance(family, seed=seed, heterogeneous=heterogeneous, weights=weights)


def _check(inst: Instance, hyper: Mapping[str, Any]) -> None:
    if not np.allclose(inst.weights, 1.0 / inst.m, rtol=0, atol=1e-15):
        raise ValueError("perfedavg averages its clients uniformly: audit it with weights='uniform'")


def _run(
    inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int, knobs: Knobs
) -> tuple[np.ndarray, np.ndarray]:
    """Per-FedAvg with ``knobs`` (``extra``: ``hessian`` False the first-order variant,
    ``hessian_factor`` the factor on the Hessian term; ``weighting``, ``l2``, ``grad_scale``,
    ``local_grad``, ``server``)."""
    f, m, d = inst.objective, inst.m, inst.dim
    a, b, tau = float(hyper["alpha"]), float(hyper["beta"]), int(hyper["tau"])
    S = int(hyper.get("S") or m)
    hess = bool(knobs.get("hessian", True))
    factor = float(knobs.get("hessian_factor", 1.0))
    delta = knobs.get("hf_delta")
    sizes = inst.sizes.astype(float)[:, None]
    p = (
        np.ones(m)
        if knobs.weighting is None
        else {"uniform": np.ones(m), "samples": sizes[:, 0]}[knobs.weighting]
    )

    def grad(W: np.ndarray) -> np.ndarray:
        g = np.asarray(f.grad(W))
        g = sizes * g if knobs.grad_scale == "sum" else g
        g = g + knobs.l2 * W if knobs.l2 else g
        return g if knobs.local_grad is None else knobs.local_grad(g, W)

    def hvp(W: np.ndarray, v: np.ndarray) -> np.ndarray:
        h = np.asarray(f.hvp(W, v))
        h = sizes * h if knobs.grad_scale == "sum" else h
        return h + knobs.l2 * v if knobs.l2 else h

    rng = np.random.default_rng(seed)
    w = np.zeros(d)
    ws, ls = [w], [np.zeros((m, d))]
    for _ in range(rounds):
        mask = np.zeros(m, dtype=bool)
        mask[sample_clients(rng, m, S) if S < m else slice(None)] = True
        W = np.broadcast_to(w, (m, d))
        for _ in range(tau):
            g = grad(W - a * grad(W))
            if hess and delta is not None:  # the Hessian-free variant, eqs. (119)-(120)
                g = g - factor * a * (grad(W + delta * g) - grad(W - delta * g)) / (2 * delta)
            elif hess:
                g = g - factor * a * hvp(W, g)
            W = W - b * g
        W = np.where(mask[:, None], W, w[None, :])
        q = p * mask
        new = np.sum(q[:, None] * W, axis=0) / np.sum(q)
        w = new if knobs.server is None else knobs.server(new, w)
        ws.append(w)
        ls.append(W)
    return np.stack(ws), np.stack(ls)


def _reference(
    inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    h = fl.per_fedavg(
        inst.objective,
        alpha=hyper["alpha"],
        beta=hyper["beta"],
        tau=hyper["tau"],
        rounds=rounds,
        S=hyper["S"],
        rng=np.random.default_rng(seed),
    )
    return np.asarray(h.w_global), np.asarray(h.w_local)


def _optimum(
    inst: Instance, hyper: Mapping[str, Any]
) -> tuple[np.ndarray, Callable[[Any], float], Callable[[Any, Any], float]]:
    r"""The minimiser of :math:`F(w) = \frac1m\sum_i f_i(w - \alpha\nabla f_i(w))`: for least squares
    :math:`\sum_i M_iA_iM_i\,w = \sum_i M_i^2 b_i`, :math:`M_i = I - \alpha A_i` (from the samples);
    otherwise BFGS on :func:`moreau.meta_objective` to a gradient of 1e-13."""
    a, m, d = float(hyper["alpha"]), inst.m, inst.dim
    meta = meta_objective(inst.objective, a)

    def F(w: Any) -> float:
        return float(np.mean(np.asarray(meta.value(np.broadcast_to(np.asarray(w, float), (m, d))))))

    if inst.family == "quadratic":
        H, r = np.zeros((d, d)), np.zeros(d)
        for c in inst.clients:
            A, bb = c.X.T @ c.X / c.n, c.X.T @ c.y / c.n
            M = np.eye(d) - a * A
            H, r = H + M @ A @ M, r + M @ M @ bb
        w_star = np.linalg.solve(H, r)
    else:

        def jac(w: Any) -> np.ndarray:
            return np.mean(np.asarray(meta.grad(np.broadcast_to(w, (m, d)))), axis=0)

        w_star = minimize(F, np.zeros(d), jac=jac, method="BFGS", options={"gtol": 1e-13}).x

    def far(x: Any, y: Any) -> float:
        return float(np.linalg.norm(np.asarray(x) - np.asarray(y)))

    return np.asarray(w_star), F, far


ENGINES["perfedavg"] = Engine(
    name="perfedavg",
    defaults=DEFAULTS,
    instance=_instance,
    check=_check,
    start=lambda inst, hyper, seed: np.zeros(inst.dim),
    run=_run,
    reference=_reference,
    optimum=_optimum,
    steps=lambda hyper: 2 * int(hyper["tau"]),
)
DEFAULT_HYPER["perfedavg"] = dict(DEFAULTS)


@deviation(
    "first_order",
    "the first-order variant (FO-MAML, Per-FedAvg's eq. (112)): the Hessian term dropped",
    algorithms=("perfedavg",),
    group="hessian",
)
def _first_order(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("hessian", False)))


@deviation(
    "hessian_doubled",
    "the Hessian term doubled, 2 alpha H g: the Hessian-free difference divided by delta instead of "
    "2 delta (as Per-FedAvg's Section 5 text writes it)",
    algorithms=("perfedavg",),
    group="hessian",
)
def _doubled(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("hessian_factor", 2.0)))


@deviation(
    "hessian_free",
    "the Hessian-free variant (eqs. (119)-(120)): the Hessian-vector product replaced by the central "
    "difference of gradients at w +- delta g over 2 delta (exact on quadratics: tried on others)",
    algorithms=("perfedavg",),
    param=Param("delta", 1e-6, 1.0, log=True),
    applies=lambda hyper, inst: inst.family != "quadratic",
)
def _hessian_free(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("hf_delta", v)))


bound_deviation("alpha", "beta", ("perfedavg",))
bound_deviation("beta", "alpha", ("perfedavg",))
