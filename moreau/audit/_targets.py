r"""The targets of the four algorithms run in :func:`moreau.audit.run_variant` itself: their
:mod:`moreau.fl` reference run, the exact optimum of the paper's problem with its objective, and
the instances each can be audited on.  (The engines of :data:`moreau.audit.ENGINES` carry their
own.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import fl
from ._instance import Instance

__all__ = ["check_builtin"]


def check_builtin(algorithm: str, inst: Instance) -> None:
    """A ``ValueError`` when ``inst`` cannot be audited for ``algorithm``."""
    if algorithm in ("pfedme", "fedfw") and not np.allclose(inst.weights, 1.0 / inst.m, rtol=0, atol=1e-15):
        raise ValueError(f"{algorithm} averages its clients uniformly: audit it with weights='uniform'")
    if algorithm == "fedfw" and inst.family != "quadratic":
        raise ValueError(
            f"fedfw is audited on quadratic clients (fedfw_optimum's exact target; got family {inst.family!r})"
        )


def _euclid(a: Any, b: Any) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))


def _reference(
    algorithm: str, inst: Instance, hyper: Mapping[str, Any], rounds: int, seed: int
) -> fl.History:
    f, rng, h = inst.objective, np.random.default_rng(seed), dict(hyper)
    if algorithm == "fedavg":
        return fl.fedavg(f, rounds=rounds, weights=inst.weights, rng=rng, **h)
    if algorithm == "fedprox":
        return fl.fedprox(f, rounds=rounds, weights=inst.weights, **h)
    if algorithm == "fedfw":
        C = fl.L2Ball(float(h["radius"]))
        return fl.fedfw(f, C, rounds=rounds, lam0=h["lam0"], K=h["K"], S=h["S"], rng=rng)
    return fl.pfedme(f, rounds=rounds, rng=rng, personal="none", **h)


def _optimum(
    algorithm: str, inst: Instance, hyper: Mapping[str, Any]
) -> tuple[np.ndarray, Callable[[Any], float]]:
    """The exact optimum of the paper's problem and its objective."""
    f, p = inst.objective, inst.weights
    m = inst.m
    if algorithm == "fedavg":
        w_star = np.asarray(fl.global_train(f, p))

        def F(w: Any) -> float:
            return float(np.sum(p * np.asarray(f.value(np.broadcast_to(w, (m, inst.dim))))))

        return w_star, F
    if algorithm == "fedfw":  # min over the ball of (1/n) sum_i f_i
        w_fw = np.asarray(fl.fedfw_optimum(f, fl.L2Ball(float(hyper["radius"]))).x)

        def Ffw(w: Any) -> float:
            return float(np.mean(np.asarray(f.value(np.broadcast_to(w, (m, inst.dim))))))

        return w_fw, Ffw
    lam = float(hyper["lam"])
    q = p if algorithm == "fedprox" else np.full(m, 1.0 / m)
    w_star = np.asarray(fl.fedprox_optimum(f, lam, q)[0])

    def Fl(w: Any) -> float:  # sum_i q_i (f_i(theta_i) + lam/2 |theta_i - w|^2), theta_i the prox
        W = np.broadcast_to(np.asarray(w, dtype=float), (m, inst.dim))
        th = np.asarray(f.prox(W, lam))
        return float(np.sum(q * (np.asarray(f.value(th)) + lam / 2 * np.sum((th - W) ** 2, axis=-1))))

    return w_star, Fl
