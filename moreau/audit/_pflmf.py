r"""The pFL^MF engine of ``moreau audit``: the reference :func:`moreau.fl.pflmf` (the thesis's
alternating method, full gradients, every client in every round), the certified rank-r optimum
:func:`moreau.fl.low_rank_optimum` of thesis eq. (4.1), and pFL^MF's deviations: FedPer run
instead (what the authors' code runs) and personal factors never updated.

The server state is the pair of factors flattened, ``w = concat(U.ravel(), V.ravel())`` with
U ``(d, r)`` and V ``(m, r)`` (:func:`pflmf_unpack`, :func:`pflmf_pack`): the round function
receives it (round 1: the start :math:`U_0, V_0` the audit draws from its seed) and returns the
next one, or ``(w, X)`` with X ``(m, d)`` the personalised models :math:`x_i = U v_i`.
Where it ends up is measured on the personalised models, :math:`\|X_T - X^\star\|_F` (a
factorisation is not unique), and on the objective :math:`\sum_i p_i f_i(x_i)`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from .. import fl
from .._least_squares import LeastSquares
from ._audit import DEFAULT_HYPER
from ._deviations import deviation
from ._engine import ENGINES, Engine, Knobs
from ._instance import Client, Instance

__all__ = ["lowrank_instance", "pflmf_pack", "pflmf_unpack"]

#: rank r, the server's step η_u, the clients' η_v, τ local steps on v_i per round
DEFAULTS: dict[str, Any] = {"rank": 1, "eta_u": 0.3, "eta_v": 0.1, "tau": 5}
#: client i holds REPLICAS[i] copies of one shared design (so that the client Hessians are equal,
#: as low_rank_optimum's certificate needs, while the sample counts differ)
REPLICAS = (5, 4, 3, 2, 1)


def lowrank_instance(
    *, seed: int = 0, heterogeneous: bool = True, weights: str = "uniform", d: int = 3, rows: int = 6
) -> Instance:
    r"""Least-squares clients sharing one design: a ``(rows, d)`` standard normal design, client i
    holding ``REPLICAS[i]`` copies of it (sizes 30, 24, 18, 12, 6 by default: equal Hessians
    :math:`A_i = A`), targets :math:`y = X c_i + 0.1\,\epsilon` with centres :math:`c_i` standard
    normal (``heterogeneous``; else one centre for all).  ``weights``: the :math:`p_i`,
    ``"uniform"`` or ``"samples"``.  Seeded by ``seed``."""
    if weights not in ("uniform", "samples"):
        raise ValueError(f"weights must be 'uniform' or 'samples' (got {weights!r})")
    if rows < d:
        raise ValueError(f"rows must be >= d = {d} (a positive definite design; got {rows})")
    rng = np.random.default_rng(seed)
    X0 = rng.standard_normal((rows, d))
    m, sizes = len(REPLICAS), np.array(REPLICAS) * rows
    C = rng.standard_normal((m, d)) if heterogeneous else np.broadcast_to(rng.standard_normal(d), (m, d))
    n = int(sizes.max())
    X = np.zeros((m, n, d))
    y = np.zeros((m, n))
    for i, k in enumerate(REPLICAS):
        Xi = np.tile(X0, (k, 1))
        X[i, : Xi.shape[0]] = Xi
        y[i, : Xi.shape[0]] = Xi @ C[i] + 0.1 * rng.standard_normal(Xi.shape[0])
    mask = (np.arange(n)[None, :] < sizes[:, None]).astype(float)
    p = np.full(m, 1.0 / m) if weights == "uniform" else sizes / sizes.sum()
    clients = tuple(
        Client(
            X=X[i, : sizes[i]].copy(),
            y=y[i, : sizes[i]].copy(),
            weight=float(p[i]),
            kind="least_squares",
            index=i,
        )
        for i in range(m)
    )
    desc = (
        f"quadratic, one shared design: m={m} clients, d={d}, sizes {sizes.tolist()}, "
        f"{'heterogeneous' if heterogeneous else 'homogeneous'}, {weights} weights, seed {seed}"
    )
    return Instance(clients, LeastSquares(X, y, weights=mask), p, "quadratic", desc)


def pflmf_unpack(w: Any, inst: Instance, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """``(U (d, r), V (m, r))`` from the state ``w`` ``((d + m) r,)``."""
    w = np.asarray(w, dtype=float)
    d, m = inst.dim, inst.m
    return w[: d * rank].reshape(d, rank), w[d * rank :].reshape(m, rank)


def pflmf_pack(U: Any, V: Any) -> np.ndarray:
    """The state ``concat(U.ravel(), V.ravel())``."""
    return np.concatenate([np.asarray(U, dtype=float).ravel(), np.asarray(V, dtype=float).ravel()])


def _instance(family: str, seed: int, heterogeneous: bool, weights: str) -> Instance:
    if family != "quadratic":
        raise ValueError(
            f"pflmf is audited on quadratic clients (low_rank_optimum's exact target; got {family!r})"
        )
    return lowrank_instance(seed=seed, heterogeneous=heterogeneous, weights=weights)


def _check(inst: Instance, hyper: Mapping[str, Any]) -> None:
    r = hyper["rank"]
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError(f"rank must be an int >= 1 (got {r!r})")
    if inst.family != "quadratic":
        raise ValueError(f"pflmf is audited on quadratic clients (got family {inst.family!r})")


def _start(inst: Instance, hyper: Mapping[str, Any], seed: int) -> np.ndarray:
    """:math:`U_0 = G/\\sqrt d`, :math:`V_0 = G'/\\sqrt r` from ``default_rng(seed)`` (U first), as
    :func:`moreau.fl.pflmf` draws them."""
    rng, r = np.random.default_rng(seed), int(hyper["rank"])
    U = rng.standard_normal((inst.dim, r)) / np.sqrt(inst.dim)
    return pflmf_pack(U, rng.standard_normal((inst.m, r)) / np.sqrt(r))


def _server_weights(inst: Instance, knobs: Knobs) -> np.ndarray:
    """The server's weights ``(m,)``: the paper's p_i, uniform or ∝ n_i (``knobs.weighting``);
    ``extra`` ``weights_float32``: normalised in float32 arithmetic, as FL-bench's
    ``aggregate_client_updates`` does (``torch.tensor(weights, dtype=torch.float32)``)."""
    raw = {None: inst.weights, "uniform": np.ones(inst.m), "samples": inst.sizes.astype(float)}[
        knobs.weighting
    ]
    if knobs.get("weights_float32", False):
        r32 = np.asarray(raw, dtype=np.float32)
        return np.asarray(r32 / np.sum(r32, dtype=np.float32), dtype=float)
    return np.asarray(raw, dtype=float) / float(np.sum(raw))


def _run(
    inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int, knobs: Knobs
) -> tuple[np.ndarray, np.ndarray]:
    """pFL^MF with ``knobs`` (``extra``: ``fedper`` FedPer's rounds, ``frozen_personal`` the v_i
    never updated; ``weighting``, ``l2``, ``grad_scale``, ``local_grad``, ``server``)."""
    f, r = inst.objective, int(hyper["rank"])
    eu, ev, tau = float(hyper["eta_u"]), float(hyper["eta_v"]), int(hyper["tau"])
    p = _server_weights(inst, knobs)
    fedper, frozen = bool(knobs.get("fedper", False)), bool(knobs.get("frozen_personal", False))
    sizes = inst.sizes.astype(float)[:, None]

    def grad(X: np.ndarray) -> np.ndarray:  # (m, d): grad f_i(x_i)
        g = np.asarray(f.grad(X))
        if knobs.grad_scale == "sum":
            g = sizes * g
        if knobs.l2:
            g = g + knobs.l2 * X
        return g if knobs.local_grad is None else knobs.local_grad(g, X)

    w = _start(inst, hyper, seed)
    U, V = pflmf_unpack(w, inst, r)
    ws, xs = [w], [V @ U.T]
    for _ in range(rounds):
        if fedper:
            Ui = np.broadcast_to(U, (inst.m, *U.shape))
            for _ in range(tau):
                G = grad((Ui @ V[:, :, None])[..., 0])
                Ui, Vn = (
                    Ui - eu * G[:, :, None] * V[:, None, :],
                    V - ev * (np.swapaxes(Ui, 1, 2) @ G[:, :, None])[..., 0],
                )
                V = V if frozen else Vn
            total = 1.0 if knobs.get("weights_float32", False) else np.sum(p)  # (FL-bench: no renormalising)
            U = np.sum(p[:, None, None] * Ui, axis=0) / total
        else:
            for _ in range(tau):
                if not frozen:
                    V = V - ev * (grad(V @ U.T) @ U)
            U = U - eu * (grad(V @ U.T).T @ (p[:, None] * V))
        new = pflmf_pack(U, V)
        if knobs.server is not None:
            new = knobs.server(new, ws[-1])
            U, V = pflmf_unpack(new, inst, r)
        ws.append(new)
        xs.append(V @ U.T)
    return np.stack(ws), np.stack(xs)


def _reference(
    inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    r = int(hyper["rank"])
    U0, V0 = pflmf_unpack(_start(inst, hyper, seed), inst, r)
    h = fl.pflmf(
        inst.objective,
        r,
        rounds=rounds,
        eta_u=hyper["eta_u"],
        eta_v=hyper["eta_v"],
        tau=hyper["tau"],
        weights=inst.weights,
        U0=U0,
        V0=V0,
    )
    Us, Vs = np.asarray(h.w_global), np.asarray(h.w_local)
    return np.concatenate([Us.reshape(rounds + 1, -1), Vs.reshape(rounds + 1, -1)], axis=1), np.asarray(
        h.theta
    )


def _optimum(
    inst: Instance, hyper: Mapping[str, Any]
) -> tuple[np.ndarray, Callable[[Any], float], Callable[[Any, Any], float]]:
    r = int(hyper["rank"])
    opt = fl.low_rank_optimum(inst.objective, r, weights=inst.weights)
    X_star = np.asarray(opt.X)

    def F(w: Any) -> float:  # sum_i p_i f_i(U v_i), from the clients' samples
        U, V = pflmf_unpack(w, inst, r)
        return float(
            sum(c.weight * np.mean((c.X @ (U @ V[i]) - c.y) ** 2) / 2 for i, c in enumerate(inst.clients))
        )

    def far(w: Any, _: Any) -> float:  # ||X - X*||_F on the personalised models
        U, V = pflmf_unpack(w, inst, r)
        return float(np.linalg.norm(V @ U.T - X_star))

    return pflmf_pack(opt.U, opt.V), F, far


ENGINES["pflmf"] = Engine(
    name="pflmf",
    defaults=DEFAULTS,
    instance=_instance,
    check=_check,
    start=_start,
    run=_run,
    reference=_reference,
    optimum=_optimum,
    steps=lambda hyper: int(hyper["tau"]) + 1,
)
DEFAULT_HYPER["pflmf"] = dict(DEFAULTS)


@deviation(
    "fedper",
    "FedPer runs instead: each client takes tau simultaneous gradient steps on its copy of U and on "
    "v_i, the server averages the copies (no server gradient step)",
    algorithms=("pflmf",),
)
def _fedper(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("fedper", True)))


@deviation(
    "frozen_personal",
    "the personal factors v_i are never updated (their gradients zeroed)",
    algorithms=("pflmf",),
)
def _frozen(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("frozen_personal", True)))


@deviation(
    "weights_by_samples_float32",
    "server weights proportional to n_i, normalised in float32 (FL-bench's aggregate_client_updates) "
    "instead of the paper's uniform p_i",
    algorithms=("pflmf",),
    group="weights",
)
def _by_samples_f32(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, weighting="samples", extra=(*k.extra, ("weights_float32", True)))
