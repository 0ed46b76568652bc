r"""The reference algorithms with knobs: FedAvg, FedProx, pFedMe and FedFW as :mod:`moreau.fl` runs
them (full batches; FedFW over an L2 ball centred at 0), each place where implementations are
known to depart made a field of :class:`Knobs`.  With the default knobs a run equals
:func:`moreau.fl.fedavg`, :func:`moreau.fl.fedprox`, :func:`moreau.fl.pfedme` (``inner=K``) and
:func:`moreau.fl.fedfw` (``lam_schedule="sqrt"``) to rounding (``tests/test_audit.py``); a
deviation (:mod:`moreau.audit._deviations`) turns knobs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._instance import Instance, sample_clients

__all__ = ["Knobs", "ALGORITHMS", "Engine", "ENGINES", "run_variant", "steps_per_round"]

#: The audited algorithms: the four run here, and those of :data:`ENGINES` (PerMFL, pFL^MF and
#: Per-FedAvg, each in its own module: ``_permfl.py``, ``_pflmf.py``, ``_perfedavg.py``).
ALGORITHMS = ("fedavg", "fedprox", "pfedme", "fedfw", "permfl", "pflmf", "perfedavg")

GradHook = Callable[[np.ndarray, np.ndarray], np.ndarray]
ServerHook = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Knobs:
    r"""What a variant of the reference algorithm changes (defaults: the algorithm as printed).

    ``l2``: an extra :math:`\tfrac{l_2}{2}\|w\|^2` in every local loss (its gradient
    :math:`l_2 w` added to each local gradient; pFedMe: to the inner gradient); ``grad_scale``:
    ``"mean"`` (the paper's :math:`\nabla f_i`) or ``"sum"`` (:math:`n_i\nabla f_i`, the
    loss summed over the samples: a missing 1/n); ``eta_factor``: the local step η multiplied by
    it (pFedMe: its η; the inner step unchanged); ``weighting``: the server's :math:`p_i`,
    ``None`` (the paper's: the instance's weights; pFedMe: uniform), ``"uniform"`` or
    ``"samples"`` (:math:`\propto n_i`); ``reset_clients``: FedProx's local models start every
    round from the server model instead of the last round's local model (FedFW: ``restart=True``,
    the server then averaging the sampled clients' models); ``fw_eta_offset``: FedFW's step
    :math:`\eta_t = 2/(t + \text{offset})`, t = 1, 2, ... (the thesis's: offset 1); ``fw_grad_div``:
    what FedFW's client gradient is divided by, ``"n"`` (the thesis's :math:`\tfrac1n\nabla f_i`) or
    ``"sampled"`` (the number S of clients sampled in the round); ``bind``: pairs ``(target,
    source)``, the hyperparameter ``target`` taking ``source``'s value (e.g. ``("lam", "K")``:
    FedProx's λ set to its local step count, as an argument shift does); ``prox_sign``: the sign
    of FedProx's proximal gradient :math:`\lambda(w - w^{(g)})`; ``momentum``: heavy-ball β on
    the local (pFedMe: inner) steps, :math:`v \leftarrow \beta v + g`, :math:`w \leftarrow w - \eta v`,
    the buffer zero at the start of each local solve; ``warm_inner``: pFedMe's inner solve starts
    from the client's previous personalised model instead of :math:`w_{i,r}^t`;
    ``warm_inner_round``: the same within a round only (the first inner solve of each round starts
    from the server model :math:`w^t`, as :math:`w_{i,0}^t` does; the later ones from the previous
    personalised model); ``aliased``:
    pFedMe's personalised model is the local model itself (the proximal term vanishes and the
    local model becomes the inner solution); ``local_grad``: ``(g, w) -> g`` applied to each
    local gradient ``(m, d)`` at the points ``w`` ``(m, d)`` (after ``l2`` and ``grad_scale``);
    ``server``: ``(w_new, w_old) -> w`` applied to each round's new server model ``(d,)``;
    ``extra``: pairs ``(name, value)``, the knobs of the engines in their own modules (PerMFL:
    ``lam_device``, ``sequential_batch``; pFL^MF: ``fedper``, ``frozen_personal``; Per-FedAvg:
    ``hessian``, ``hessian_factor``), read with :meth:`get`.
    """

    l2: float = 0.0
    grad_scale: str = "mean"
    eta_factor: float = 1.0
    weighting: str | None = None
    reset_clients: bool = False
    prox_sign: float = 1.0
    momentum: float = 0.0
    warm_inner: bool = False
    warm_inner_round: bool = False
    aliased: bool = False
    fw_eta_offset: float = 1.0
    fw_grad_div: str = "n"
    bind: tuple[tuple[str, str], ...] = ()
    local_grad: GradHook | None = None
    server: ServerHook | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        """The value of the engine knob ``name`` in ``extra`` (the last one set), or ``default``."""
        return dict(self.extra).get(name, default)


Pair = tuple[np.ndarray, "np.ndarray | None"]
Target = tuple[np.ndarray, Callable[[Any], float], Callable[[Any, Any], float]]


@dataclass(frozen=True)
class Engine:
    r"""An audited algorithm defined outside this module (registered in :data:`ENGINES`).

    ``defaults``: its hyperparameters; ``instance(family, seed, heterogeneous, weights) ->
    Instance``: the exact instance it is audited on; ``check(instance, hyper)`` raises a
    ``ValueError`` for an instance or hyperparameters it cannot audit; ``start(instance, hyper,
    seed) -> (D,)`` the server state :math:`w_0` passed to the implementation at round 1 (D its
    size, not necessarily the instance's d); ``run(instance, hyper, rounds, seed, knobs) ->
    (global (rounds+1, D), local (rounds+1, m, d) or None)``: the reference algorithm with
    ``knobs`` (default knobs: :mod:`moreau.fl`'s algorithm, tested); ``reference`` the same from
    :mod:`moreau.fl` itself; ``optimum(instance, hyper) -> (w_star (D,), F, distance)``: the exact
    optimum's state, the objective ``F(state)`` and ``distance(state, w_star)`` (where the state's
    distance is not the problem's: pFL^MF's factors); ``steps(hyper)``: local steps per round."""

    name: str
    defaults: Mapping[str, Any]
    instance: Callable[[str, int, bool, str], Instance]
    check: Callable[[Instance, Mapping[str, Any]], None]
    start: Callable[[Instance, Mapping[str, Any], int], np.ndarray]
    run: Callable[[Instance, Mapping[str, Any], int, int, Knobs], Pair]
    reference: Callable[[Instance, Mapping[str, Any], int, int], Pair]
    optimum: Callable[[Instance, Mapping[str, Any]], Target]
    steps: Callable[[Mapping[str, Any]], int]


#: The engines of the algorithms not run in :func:`run_variant` itself, by name.
ENGINES: dict[str, Engine] = {}


def steps_per_round(algorithm: str, hyper: Mapping[str, Any]) -> int:
    """Local gradient steps per round (the count rounding errors accumulate over)."""
    if algorithm in ENGINES:
        return ENGINES[algorithm].steps(hyper)
    if algorithm == "fedavg":
        return int(hyper["tau"])
    if algorithm in ("fedprox", "fedfw"):
        return int(hyper["K"])
    return int(hyper["R"]) * int(hyper["inner"])


def _weights(inst: Instance, knobs: Knobs, paper: np.ndarray) -> np.ndarray:
    if knobs.weighting is None:
        return paper
    if knobs.weighting == "uniform":
        return np.full(inst.m, 1.0 / inst.m)
    if knobs.weighting == "samples":
        return inst.sizes / np.sum(inst.sizes)
    raise ValueError(f"Knobs.weighting must be None, 'uniform' or 'samples' (got {knobs.weighting!r})")


def run_variant(
    algorithm: str,
    inst: Instance,
    hyper: Mapping[str, Any],
    rounds: int,
    seed: int,
    knobs: Knobs = Knobs(),  # noqa: B008  (a frozen dataclass: an immutable default)
) -> tuple[np.ndarray, np.ndarray]:
    r"""``(w_global (rounds+1, d), w_local (rounds+1, m, d))`` of the reference ``algorithm`` with
    ``knobs`` on ``inst`` from :math:`w_0 = 0` (client sampling from ``default_rng(seed)``,
    drawn as :mod:`moreau.fl` draws it).  ``w_local`` index t+1: the clients' models at the end of
    round t+1's local work (index 0: :math:`w_0`)."""
    f = inst.objective
    m, d = inst.m, inst.dim
    for target, source in knobs.bind:
        if target not in hyper or source not in hyper:
            raise ValueError(f"Knobs.bind: {algorithm} has no hyperparameter {target!r} or {source!r}")
        hyper = {**hyper, target: hyper[source]}
    scale = inst.sizes.astype(float)[:, None] if knobs.grad_scale == "sum" else None
    if knobs.grad_scale not in ("mean", "sum"):
        raise ValueError(f"Knobs.grad_scale must be 'mean' or 'sum' (got {knobs.grad_scale!r})")
    if algorithm in ENGINES:
        g, loc = ENGINES[algorithm].run(inst, hyper, rounds, seed, knobs)
        return g, (np.full((rounds + 1, m, d), np.nan) if loc is None else loc)

    def grad(W: np.ndarray) -> np.ndarray:
        g = np.asarray(f.grad(W))
        if scale is not None:
            g = scale * g
        if knobs.l2:
            g = g + knobs.l2 * W
        return g if knobs.local_grad is None else knobs.local_grad(g, W)

    def descend(W: np.ndarray, n: int, step: float, extra: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        v = np.zeros_like(W)
        for _ in range(n):
            g = extra(W)
            if knobs.momentum:
                v = knobs.momentum * v + g
                g = v
            W = W - step * g
        return W

    rng = np.random.default_rng(seed)
    w = np.zeros(d)
    p0 = inst.weights / np.sum(inst.weights)
    S = int(hyper.get("S") or m)
    W = np.broadcast_to(w, (m, d))
    theta = W
    gs, ls = [w], [W]
    for _ in range(rounds):
        if algorithm == "fedavg":
            mask = np.zeros(m, dtype=bool)
            mask[sample_clients(rng, m, S) if S < m else slice(None)] = True
            eta = float(hyper["eta"]) * knobs.eta_factor
            W = descend(np.broadcast_to(w, (m, d)), int(hyper["tau"]), eta, grad)
            W = np.where(mask[:, None], W, w[None, :])
            wts = _weights(inst, knobs, p0) * mask
            new = np.sum(wts[:, None] * W, axis=0) / np.sum(wts)
        elif algorithm == "fedprox":
            lam, gamma = float(hyper["lam"]), float(hyper["gamma"])
            eta = float(hyper["eta"]) * knobs.eta_factor
            wg = w[None, :]
            start = np.broadcast_to(w, (m, d)) if knobs.reset_clients else W

            def prox_grad(V: np.ndarray, wg: np.ndarray = wg, lam: float = lam) -> np.ndarray:
                return grad(V) + knobs.prox_sign * lam * (V - wg)

            W = descend(start, int(hyper["K"]), eta, prox_grad)
            p = _weights(inst, knobs, p0)
            new = w - gamma * np.sum(p[:, None] * (lam * (wg - W)), axis=0)
        elif algorithm == "pfedme":
            lam, beta = float(hyper["lam"]), float(hyper["beta"])
            eta = float(hyper["eta"]) * knobs.eta_factor
            K, step = int(hyper["inner"]), float(hyper["inner_eta"])
            W = np.broadcast_to(w, (m, d))
            if knobs.warm_inner_round:
                theta = W
            for _ in range(int(hyper["R"])):
                if knobs.aliased:
                    W = theta = descend(W, K, step, grad)
                    continue
                start = theta if knobs.warm_inner or knobs.warm_inner_round else W

                def inner_grad(T: np.ndarray, W: np.ndarray = W, lam: float = lam) -> np.ndarray:
                    return grad(T) + lam * (T - W)

                theta = descend(start, K, step, inner_grad)
                W = W - eta * lam * (W - theta)
            if S < m:
                idx = sample_clients(rng, m, S)
            else:
                idx = np.arange(m)
            if knobs.weighting is None:
                avg = np.mean(W[idx], axis=0)
            else:
                q = _weights(inst, knobs, p0)[idx]
                avg = np.sum(q[:, None] * W[idx], axis=0) / np.sum(q)
            new = (1 - beta) * w + beta * avg
        elif algorithm == "fedfw":
            t = len(gs)  # the round index t = 1, 2, ...
            lam_t = float(hyper["lam0"]) * np.sqrt(t + 1.0)
            eta_t = 2.0 / (t + knobs.fw_eta_offset)
            radius = float(hyper["radius"])
            mask = np.zeros(m, dtype=bool)
            mask[sample_clients(rng, m, S) if S < m else slice(None)] = True
            if knobs.fw_grad_div not in ("n", "sampled"):
                raise ValueError(f"Knobs.fw_grad_div must be 'n' or 'sampled' (got {knobs.fw_grad_div!r})")
            div = float(m if knobs.fw_grad_div == "n" else S)
            if knobs.reset_clients:
                W = np.broadcast_to(w, (m, d))
            for _ in range(int(hyper["K"])):
                V = grad(W) / div + lam_t * (W - w[None, :])
                nv = np.linalg.norm(V, axis=-1, keepdims=True)
                D = -radius * V / np.where(nv > 0, nv, 1.0)
                Xn = (1 - eta_t) * W + eta_t * D
                W = np.where(mask[:, None], Xn, W) if S < m else Xn
            if knobs.reset_clients:
                new = np.sum(mask[:, None] * W, axis=0) / S
            elif int(hyper["K"]) == 1 and S >= m:
                new = (1 - eta_t) * w + eta_t * np.mean(D, axis=0)
            else:
                new = np.mean(W, axis=0)
        else:
            raise ValueError(f"algorithm must be one of {ALGORITHMS} (got {algorithm!r})")
        if knobs.server is not None:
            new = knobs.server(new, w)
        w = new
        gs.append(w)
        ls.append(W)
    return np.stack(gs), np.stack([np.broadcast_to(x, (m, d)) for x in ls])
