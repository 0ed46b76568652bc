r"""The PerMFL engine of ``moreau audit``: devices in teams, the reference :func:`moreau.fl.permfl`
(full batches, every team and device in every round), the exact optimum
:func:`moreau.fl.permfl_optimum` of thesis eq. (4.3), and PerMFL's deviations: the device
penalty bound to the local step count (the authors' argument shift) and sequential unshuffled
mini-batches.

The implementation's round function receives the global model :math:`x^t` ``(d,)`` and the
devices as :class:`~moreau.audit.Client` records whose ``team`` names their team, and returns
:math:`x^{t+1}`, or ``(x^{t+1}, theta)`` with ``theta`` ``(m, d)`` the devices' personalised
models of the round's last team round (docs/audit.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import fl
from ._audit import DEFAULT_HYPER
from ._deviations import Param, deviation
from ._engine import ENGINES, Engine, Knobs
from ._instance import Client, Instance, instance

__all__ = ["team_instance", "TEAMS"]

#: The default teams of the devices: three teams of sizes 3, 2, 1 (eq. (4.3)'s 1/(M N_i) visible).
TEAMS = (0, 0, 0, 1, 1, 2)
#: λ (device-team), γ (team-global), α device step, η team step, β global step, K team rounds, L
#: device steps: within the reconstructed bounds α ≤ 1/(L_f + λ), η ≤ 1/(λ + γ), β ≤ 1/γ.
DEFAULTS: dict[str, Any] = {"lam": 1.0, "gamma": 2.0, "alpha": 0.1, "eta": 0.3, "beta": 0.5, "K": 3, "L": 4}


def team_instance(
    family: str = "quadratic",
    *,
    teams: Sequence[int] = TEAMS,
    seed: int = 0,
    heterogeneous: bool = True,
    n: int = 30,
    d: int = 3,
) -> Instance:
    """:func:`moreau.audit.instance` with ``len(teams)`` devices, device j in team ``teams[j]``
    (teams numbered 0..M-1, each with a device); the clients' ``team`` fields say which."""
    t = [int(v) for v in teams]
    fl._permfl.team_matrix(np.array(t), len(t))  # teams 0..M-1, each with a device (one-line errors)
    base = instance(family, seed=seed, m=len(t), n=n, d=d, heterogeneous=heterogeneous)
    clients = tuple(replace(c, team=k) for c, k in zip(base.clients, t, strict=True))
    return Instance(clients, base.objective, base.weights, base.family, f"{base.description}, teams {t}")


def teams_of(inst: Instance) -> np.ndarray:
    """``(m,)`` the devices' teams."""
    return np.array([c.team for c in inst.clients])


def _instance(family: str, seed: int, heterogeneous: bool, weights: str) -> Instance:
    if weights != "uniform":
        raise ValueError(
            "permfl weights its devices 1/(M N_i) (eq. (4.3)): audit it with weights='uniform' (the default)"
        )
    return team_instance(family, seed=seed, heterogeneous=heterogeneous)


def _check(inst: Instance, hyper: Mapping[str, Any]) -> None:
    fl._permfl.team_matrix(teams_of(inst), inst.m)
    if inst.family != "quadratic":
        raise ValueError(
            f"permfl is audited on quadratic devices (G's exact value; got family {inst.family!r})"
        )


def _batch_grad(c: Client, rows: slice, theta: np.ndarray) -> np.ndarray:
    """The mean loss gradient of ``c``'s samples ``rows`` at ``theta`` ``(d,)``."""
    X, y = c.X[rows], c.y[rows]
    z = X @ theta
    r = z - y if c.kind == "least_squares" else -y * np.exp(-np.logaddexp(0.0, y * z))
    return X.T @ r / X.shape[0] + c.mu * theta


def _run(
    inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int, knobs: Knobs
) -> tuple[np.ndarray, np.ndarray]:
    """PerMFL with ``knobs`` (``extra``: ``lam_device`` the hyperparameter whose value the device
    penalty takes, ``sequential_batch`` B: each device step on the next B of the device's samples
    in stored order, wrapping to the start after the last, short, batch; the cursor kept across
    steps and rounds), full participation."""
    f, m, d = inst.objective, inst.m, inst.dim
    teams = teams_of(inst)
    E, N = fl._permfl.team_matrix(teams, m)
    to_team = (E / N).T
    lam, gamma, alpha = float(hyper["lam"]), float(hyper["gamma"]), float(hyper["alpha"])
    eta, beta, K, L = float(hyper["eta"]), float(hyper["beta"]), int(hyper["K"]), int(hyper["L"])
    src = knobs.get("lam_device")
    lam_d = lam if src is None else float(hyper[src])
    B = knobs.get("sequential_batch")
    cursor = [0] * m
    sizes = inst.sizes.astype(float)[:, None]

    def grad(T: np.ndarray) -> np.ndarray:
        if B is None:
            g = np.asarray(f.grad(T))
            if knobs.grad_scale == "sum":
                g = sizes * g
        else:
            rows = []
            for i, c in enumerate(inst.clients):
                if cursor[i] >= c.n:
                    cursor[i] = 0
                sl = slice(cursor[i], min(cursor[i] + B, c.n))
                cursor[i] = sl.stop
                gi = _batch_grad(c, sl, T[i])
                rows.append(gi * (sl.stop - sl.start) if knobs.grad_scale == "sum" else gi)
            g = np.stack(rows)
        if knobs.l2:
            g = g + knobs.l2 * T
        return g if knobs.local_grad is None else knobs.local_grad(g, T)

    x = np.zeros(d)
    xs, thetas = [x], [np.zeros((m, d))]
    for _ in range(rounds):
        W = np.broadcast_to(x, (N.size, d))
        for _ in range(K):
            Wd = E @ W
            theta = Wd
            for _ in range(L):
                theta = theta - alpha * (grad(theta) + lam_d * (theta - Wd))
            W = W - eta * (lam * (W - to_team @ theta) + gamma * (W - x[None, :]))
        new = x - beta * gamma * (x - np.mean(W, axis=0))
        x = new if knobs.server is None else knobs.server(new, x)
        xs.append(x)
        thetas.append(theta)
    return np.stack(xs), np.stack(thetas)


def _reference(
    inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    h = {k: hyper[k] for k in ("lam", "gamma", "alpha", "eta", "beta", "K", "L")}
    r = fl.permfl(inst.objective, teams_of(inst), rounds=rounds, **h)
    return np.asarray(r.w_global), np.asarray(r.theta)


def value_G(inst: Instance, lam: float, gamma: float, x: np.ndarray) -> float:
    r"""Eq. (4.3) minimised over the team and device models at the global model ``x`` ``(d,)``,
    :math:`G(x) = \frac1M\sum_i G_i(x)`, computed from the devices' samples (least squares):
    :math:`\theta_j(w) = (A_j + \lambda I)^{-1}(b_j + \lambda w)`, the team model
    :math:`w_i = (B_i + \gamma I)^{-1}(\gamma x - \nabla F_i(0))`, :math:`B_i` the Hessian of
    :math:`F_i = \frac1{N_i}\sum_j \mathrm{env}_\lambda f_j` (:math:`\nabla F_j(w) = \lambda(w - \theta_j(w))`)."""
    teams = teams_of(inst)
    d, out = inst.dim, 0.0
    eye = np.eye(d)
    M = int(teams.max()) + 1
    for i in range(M):
        devs = [c for c in inst.clients if c.team == i]
        A = [c.X.T @ c.X / c.n for c in devs]
        b = [c.X.T @ c.y / c.n for c in devs]
        c0 = [float(c.y @ c.y) / (2 * c.n) for c in devs]
        Bi = sum(lam * (eye - lam * np.linalg.inv(Aj + lam * eye)) for Aj in A) / len(devs)
        g0 = sum(-lam * np.linalg.solve(Aj + lam * eye, bj) for Aj, bj in zip(A, b, strict=True)) / len(devs)
        w = np.linalg.solve(Bi + gamma * eye, gamma * x - g0)
        team = gamma / 2 * float((w - x) @ (w - x))
        for Aj, bj, cj in zip(A, b, c0, strict=True):
            th = np.linalg.solve(Aj + lam * eye, bj + lam * w)
            team += (0.5 * th @ Aj @ th - bj @ th + cj + lam / 2 * (th - w) @ (th - w)) / len(devs)
        out += team / M
    return float(out)


def _optimum(
    inst: Instance, hyper: Mapping[str, Any]
) -> tuple[np.ndarray, Callable[[Any], float], Callable[[Any, Any], float]]:
    lam, gamma = float(hyper["lam"]), float(hyper["gamma"])
    x_star = np.asarray(fl.permfl_optimum(inst.objective, teams_of(inst), lam, gamma)[0])

    def F(x: Any) -> float:
        return value_G(inst, lam, gamma, np.asarray(x, dtype=float))

    def far(a: Any, b: Any) -> float:
        return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))

    return x_star, F, far


ENGINES["permfl"] = Engine(
    name="permfl",
    defaults=DEFAULTS,
    instance=_instance,
    check=_check,
    start=lambda inst, hyper, seed: np.zeros(inst.dim),
    run=_run,
    reference=_reference,
    optimum=_optimum,
    steps=lambda hyper: int(hyper["K"]) * int(hyper["L"]),
)
DEFAULT_HYPER["permfl"] = dict(DEFAULTS)


@deviation(
    "lam_device_bound_to_L",
    "the device penalty lam takes the value of the local step count L (an argument shift; "
    "the team step keeps lam)",
    algorithms=("permfl",),
    group="bound:lam_device",
    applies=lambda hyper, inst: float(hyper["lam"]) != float(hyper["L"]),
)
def _lam_device_is_L(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("lam_device", "L")))


@deviation(
    "sequential_batches",
    "each device step on the next B samples of the device in stored order (no shuffle; the "
    "last batch short; the cursor kept across rounds) instead of the full batch",
    algorithms=("permfl",),
    param=Param("B", 1.0, 29.0, integer=True),
    applies=lambda hyper, inst: max(inst.sizes) > 1,
)
def _sequential(k: Knobs, v: float, hyper: Mapping[str, Any], inst: Instance) -> Knobs:
    return replace(k, extra=(*k.extra, ("sequential_batch", max(1, int(round(v))))))
