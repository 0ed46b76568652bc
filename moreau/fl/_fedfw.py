r"""FedFW: the Federated Frank–Wolfe algorithm (Dadras thesis §4.3, eqs. (4.4)–(4.6); Paper III).

Problem (4.4) (the paper's eq. (1), arXiv 2408.10090 §1, where every f_i is L-smooth with one L):
:math:`\min_{x\in\mathcal D} F(x) = \frac1n\sum_{i=1}^n f_i(x)` over a compact convex
:math:`\mathcal D` (a :mod:`moreau.fl._lmo` set).  FedFW runs Frank–Wolfe on the penalised surrogate
of the consensus formulation :math:`X = (x_1, \dots, x_n) \in \mathcal D^n`,

.. math:: \Phi_\lambda(X) = \frac1n\sum_i f_i(x_i) + \frac\lambda2\sum_i\|x_i - \bar x\|^2,
          \qquad \nabla_{x_i}\Phi_\lambda(X) = \tfrac1n\nabla f_i(x_i) + \lambda(x_i - \bar x),

(the terms through :math:`\bar x = \frac1n\sum_j x_j` cancel since :math:`\sum_j(x_j - \bar x) = 0`),
with a penalty :math:`\lambda_t` that grows: the block gradient is the argument of (4.5).

Reconstructions (beyond its abstract and §1's problem statement the paper's text could not be read;
see ``analysis/fedfw``): the round index starts at t = 1 (so η_1 = 1: the authors' code,
``eta_t = 2/(step + 1)`` with step = 1 first; read from t = 0 the printed η_0 = 2 would leave the
set); the server keeps x̄ from the directions alone,
:math:`\bar x^{t+1} = (1-\eta_t)\bar x^t + \eta_t\frac1n\sum_i s_i^t`, which
equals the mean of the clients' models because every client starts at :math:`x_i^1 = \bar x^1`;
the stochastic variant's parameters (η_t = 9/(t+8), λ_t = λ0√(t+8), ρ_t = 4/(t+7)^{2/3}, a
momentum average of the stochastic gradients) are the authors' code's (``FedFW_sto``), the
schedule of the stochastic homotopy CGM (Locatello et al. 2019) that FedFW's smoothing follows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import to_numpy
from .._objective import Objective
from .._typing import Array
from ._common import (
    History,
    batched_objective,
    check_diverged,
    check_objective,
    count,
    expand,
    generator,
    lead_shape,
    minibatch_size,
    participation,
    point,
    positive,
    sample_size,
)
from ._fedfw_optimum import FedFWTarget, fedfw_optimum  # the exact target, re-exported
from ._lmo import ConvexSet, check_set
from ._minibatches import sample_counts

__all__ = ["fedfw", "fedfw_optimum", "FedFWHistory", "FedFWTarget", "SCHEDULES", "VARIANTS", "schedules"]

#: named penalty schedules: λ_t for round t = 1..T (λ0 ``lam0``, T ``rounds``)
SCHEDULES = ("sqrt", "constant", "horizon")
#: ``variant``: FedFW (4.5)-(4.6), or FedFW+ (a dual variable per client, transcribed from the authors' code)
VARIANTS = ("fedfw", "plus")


@dataclass(frozen=True)
class FedFWHistory(History):
    r""":class:`History` of :func:`fedfw` with what the clients send.

    ``directions`` ``(rounds K, *lead, m, d)``: :math:`s_i^{t,k}` (index (t − 1)K + k for local step k
    = 0..K−1 of round t; with K = 1, index t − 1), the only thing a client sends (zero for a client not
    sampled in that round); ``nnz`` ``(rounds K, *lead, m)`` (host int): the non-zeros of each
    :math:`s_i^{t,k}` (a vertex of an ℓ1 ball or of a simplex has one: the client sends one index and
    one value, against d numbers for a gradient; 0 for a client not sampled).  ``w_global`` is
    :math:`\bar x^t`, ``w_local`` the :math:`x_i^t`.
    """

    directions: Array | None = None
    nnz: np.ndarray | None = None


def _sequence(v: Any, rounds: int, name: str, *, upper: float | None = None) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (rounds,):
        raise ValueError(
            f"{name} as a sequence must have one value per round, shape ({rounds},) (got shape {a.shape})"
        )
    if not np.all(np.isfinite(a)) or np.any(a <= 0) or (upper is not None and np.any(a > upper)):
        bad = a[~(np.isfinite(a) & (a > 0) & (a <= (upper if upper is not None else np.inf)))][0]
        raise ValueError(
            f"{name} values must be in (0, {upper if upper is not None else 'inf'}] (got {bad:g})"
        )
    return a


def schedules(
    rounds: int,
    *,
    stochastic: bool = False,
    lam_schedule: str | Sequence[float] | np.ndarray = "sqrt",
    eta: Sequence[float] | np.ndarray | None = None,
    rho: Sequence[float] | np.ndarray | None = None,
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    r"""Host arrays ``(rounds,)`` for t = 1..T: the factor :math:`c_t` of :math:`\lambda_t = \lambda_0 c_t`
    (None for ``"constant"``), η_t and ρ_t.

    * ``"sqrt"``: :math:`c_t = \sqrt{t+1}`, η_t = 2/(t+1) (thesis (4.5)–(4.6)); stochastic:
      :math:`c_t = \sqrt{t+8}`, η_t = 9/(t+8), ρ_t = 4/(t+7)^{2/3} (the authors' code);
    * ``"horizon"``: :math:`c_t = T^{1/3}`, η_t = T^{-2/3} (the fixed-horizon choice of the authors'
      code, ``constant_lambda``/``constant_eta``; reconstructed for the nonconvex rate);
    * ``"constant"``: λ_t = ``lam`` (personalised FedFW), η_t as for ``"sqrt"``;
    * a sequence of T positive factors :math:`c_t` (λ_t = λ0 c_t), η_t as for ``"sqrt"``.
    """
    t = np.arange(1, rounds + 1, dtype=float)
    c: np.ndarray | None
    if isinstance(lam_schedule, str):
        if lam_schedule not in SCHEDULES:
            raise ValueError(
                f"lam_schedule must be one of {SCHEDULES} or a sequence of {rounds} values "
                f"(got {lam_schedule!r})"
            )
        if lam_schedule == "horizon":
            c, e = np.full(rounds, rounds ** (1 / 3)), np.full(rounds, rounds ** (-2 / 3))
        elif stochastic:
            c, e = np.sqrt(t + 8), 9 / (t + 8)
        else:
            c, e = np.sqrt(t + 1), 2 / (t + 1)
        c = None if lam_schedule == "constant" else c
    else:
        c = _sequence(lam_schedule, rounds, "lam_schedule")
        e = 9 / (t + 8) if stochastic else 2 / (t + 1)
    e = e if eta is None else _sequence(eta, rounds, "eta", upper=1.0)
    r = (
        (4 / np.cbrt((t + 7) ** 2) if rho is None else _sequence(rho, rounds, "rho", upper=1.0))
        if stochastic
        else None
    )
    return c, e, r


def fedfw(
    objective: Objective,
    constraint: ConvexSet,
    *,
    rounds: int,
    lam_schedule: str | Sequence[float] | np.ndarray = "sqrt",
    lam0: float | Array | None = None,
    lam: float | Array | None = None,
    eta: Sequence[float] | np.ndarray | None = None,
    stochastic: bool = False,
    rho: Sequence[float] | np.ndarray | None = None,
    sigma: float | Array | None = None,
    batch_size: int | None = None,
    K: int = 1,
    S: int | None = None,
    restart: bool = False,
    x0: Array | None = None,
    rng: np.random.Generator | int | None = None,
    record: str = "all",
    variant: str = "fedfw",
) -> FedFWHistory:
    r"""FedFW (thesis §4.3, eqs. (4.5)–(4.6)) on the clients of ``objective`` over ``constraint``.

    Round t = 1..T (``rounds``), every client i in parallel, then the server:

    .. math::
        s_i^t &\in \arg\min_{x\in\mathcal D}\Big\langle \tfrac1n g_i^t + \lambda_t(x_i^t - \bar x^t),\ x\Big\rangle
            \quad\text{(4.5)}, \qquad x_i^{t+1} = (1-\eta_t)x_i^t + \eta_t s_i^t \quad\text{(4.6)},\\
        \bar x^{t+1} &= (1-\eta_t)\bar x^t + \eta_t\,\tfrac1n\textstyle\sum_i s_i^t
            \quad(= \tfrac1n\textstyle\sum_i x_i^{t+1}),

    with :math:`g_i^t = \nabla f_i(x_i^t)` (FedFW), or, with ``stochastic=True`` (stochastic FedFW),
    the momentum average :math:`g_i^t = (1-\rho_t)g_i^{t-1} + \rho_t\tilde\nabla f_i(x_i^t)` of
    stochastic gradients.  n = m is the number of clients (the objective's last batch axis), λ_t
    the penalty (``lam_schedule``: ``"sqrt"`` λ0√(t+1) as printed, the default; ``"constant"``:
    λ_t = ``lam``, personalised FedFW whose fixed point is the penalised optimum; ``"horizon"``:
    λ0 T^{1/3} with η = T^{-2/3}; or a sequence of T factors c_t, λ_t = λ0 c_t; see
    :func:`schedules`), λ0 is ``lam0`` (default 1), η_t the step (``eta``: a sequence of T values in
    (0, 1] overrides the schedule's), ρ_t the momentum weight (``rho``, stochastic only).  Stochastic gradients
    :math:`\tilde\nabla f_i` (with or without the momentum): the gradient on a mini-batch of
    ``batch_size`` samples drawn without replacement (objectives with samples), plus
    :math:`\sigma\,\xi/\sqrt d`, ξ standard normal (``sigma``: :math:`E\|\cdot\|^2 = \sigma^2`).

    Several local steps and partial participation (extensions; the thesis prints (4.5)–(4.6) with one
    step and every client): ``S`` of the n clients are sampled per round uniformly without replacement
    (default all), and each sampled client takes ``K`` steps (4.5)–(4.6) in a row, k = 0..K−1, from
    :math:`x_i^{t,0} = x_i^t` to :math:`x_i^{t+1} = x_i^{t,K}`, every step with the round's λ_t, η_t
    (the clock counts rounds), the round's :math:`\bar x^t` and the same 1/n (n all clients); the
    others keep :math:`x_i^{t+1} = x_i^t` (and their momentum).  The server keeps
    :math:`\bar x^{t+1} = \frac1n\sum_i x_i^{t+1}` (the formula above when K = 1 and S = n; otherwise
    the mean of the models, which the server can also track from the directions and step sizes).
    ``restart=True`` is the authors' code's behaviour, not the thesis's: every client is reset to
    the server model, :math:`x_i^{t,0} = \bar x^t`, at the start of every round (so the penalty is 0
    at the first local step, and with K = 1 a round is a distributed Frank–Wolfe step from
    :math:`\bar x^t`), and the server takes the mean of the sampled clients' models,
    :math:`\bar x^{t+1} = \frac1S\sum_{i\in S_t} x_i^{t+1}`.  The authors' code also advances λ_t,
    η_t per local step and divides by the number of sampled clients instead of n (see
    ``analysis/fedfw``); neither is done here.

    ``x0`` is :math:`\bar x^1 = x_i^1` ``(*trials, d)`` (default the set's centre; a point outside the
    set is a ValueError saying how far outside).  λ0, ``lam`` and
    ``sigma`` are numbers or arrays broadcasting against the trial shape.  Randomness (``rng``: a
    Generator or int seed, required with ``sigma``, ``batch_size`` or S < n), per round: the client
    sampling ``rng.random((*lead, m))`` (if S < n; :func:`fedavg`'s draw), then per local step the
    mini-batch draw ``rng.random((*lead, m, n))`` (as :func:`fedavg`), then
    ``rng.standard_normal((*lead, m, d))``, both drawn for every client (an unsampled client's are
    discarded), so a batched run equals a loop over trials that slices the same draws.

    Returns a :class:`FedFWHistory`: ``w_global`` ``(T+1, *lead, d)`` (index k: :math:`\bar x^{k+1}`,
    after k rounds), ``w_local`` ``(T+1, *lead, m, d)`` (after each round; with ``restart`` an
    unsampled client holds :math:`\bar x^t`), ``directions``, ``nnz``, ``local_steps`` = K,
    ``grad_evals`` (rounds K, or a host array ``(*lead, m)`` of K per round sampled when S < n),
    ``sampled`` ``(rounds, *lead, S)`` (host, when S < n); ``params`` holds the host arrays ``lam``
    ``(T, *lead)``, ``eta`` and ``rho`` ``(T,)``, and ``K``, ``S``, ``restart``.  ``record="server"``
    keeps only the server's models: ``w_global`` as above, ``w_local``, ``directions`` and ``nnz``
    None (the same iterates, without storing and stacking ``T`` copies of every client's model and
    direction: what a long run that reads only :math:`\bar x^t` needs).

    ``variant="plus"``: FedFW+, "an empirically faster version of FedFW by incorporating an augmented
    Lagrangian dual update" (thesis §4.3, no formula printed).  The update is transcribed from the
    authors' code (``src/Optimizer.py``, branch ``FedFW_plus``): every client keeps a dual variable
    :math:`y_i^0 = 0` and, at each step, before (4.5),
    :math:`y_i \leftarrow y_i + \lambda_0(x_i - \bar x^t)` (the dual ascent step of the consensus
    constraint :math:`x_i = \bar x`, with λ0 — ``lam`` for ``"constant"`` — as its step), then takes
    (4.5) with :math:`\frac1n g_i + \lambda_t(x_i - \bar x^t) + y_i`, the gradient of the augmented
    Lagrangian in :math:`x_i`.  Deterministic only (the code's branch excludes the stochastic variant).
    The authors' code never runs it: its command line spells the option ``FedFW_Plus`` and the
    optimiser tests ``FedFW_plus``, so their "FedFW+" runs are plain FedFW (``analysis/fedfw``,
    item 17).

    References: Dadras thesis §4.3, eqs. (4.4)–(4.6) (Paper III: Dadras, Banerjee, Prakhya,
    Yurtsever, "Federated Frank-Wolfe Algorithm", ECML PKDD 2024, arXiv 2408.10090).
    """
    f, m = check_objective(objective)
    xp = f.xp
    rounds = count(rounds, "rounds")
    C = check_set(constraint, f.dim, f.batch_shape[:-1])
    if not isinstance(stochastic, bool):
        raise TypeError(f"stochastic must be True or False (got {stochastic!r})")
    if rho is not None and not stochastic:
        raise ValueError("rho (the momentum weight) is used only by stochastic FedFW: pass stochastic=True")
    c, e, r = schedules(rounds, stochastic=stochastic, lam_schedule=lam_schedule, eta=eta, rho=rho)
    constant = isinstance(lam_schedule, str) and lam_schedule == "constant"
    if constant and lam is None:
        raise ValueError("lam_schedule='constant' (personalised FedFW) needs lam, the fixed penalty")
    if lam is not None and not constant:
        raise ValueError(
            f"lam is the fixed penalty of lam_schedule='constant' (got lam_schedule={lam_schedule!r}); "
            "a growing schedule takes lam0"
        )
    if lam0 is not None and constant:
        raise ValueError("lam0 scales a growing schedule; lam_schedule='constant' takes lam")
    base = positive(lam if constant else (1.0 if lam0 is None else lam0), "lam" if constant else "lam0", f)
    sig = None if sigma is None else positive(sigma, "sigma", f, allow_zero=True)
    size = minibatch_size(batch_size, f, replace=False)
    K, S = count(K, "K"), sample_size(S, m)
    if not isinstance(restart, bool):
        raise TypeError(f"restart must be True or False (got {restart!r})")
    if record not in ("all", "server"):
        raise ValueError(f"record must be 'all' or 'server' (got {record!r})")
    keep = record == "all"
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS} (got {variant!r})")
    if variant == "plus" and stochastic:
        raise ValueError(
            "variant='plus' (FedFW+) is deterministic in the authors' code: pass stochastic=False"
        )
    partial = S < m
    rng = generator(
        rng, sig is not None or size is not None or partial, "sigma or batch_size is set, or S < n"
    )
    lead = lead_shape(f, base, *(() if sig is None else (sig,)))
    xbar = _start(x0, C, f, lead)
    X = xp.broadcast_to(xbar[..., None, :], lead + (m, f.dim))
    lam2 = expand(base, 2)
    lmo = C.oracle(xp, f.dtype, clients=True)
    momentum: Array | None = None
    dual = xp.zeros(lead + (m, f.dim), dtype=f.dtype) if variant == "plus" else None  # FedFW+'s y_i
    seen: Array | None = None  # partial participation: the clients whose momentum holds a gradient
    gs, ls, ds, nnz, picks = [xbar], [X], [], [], []
    evals = np.zeros(lead + (m,), dtype=int)
    for k in range(rounds):
        lam_t = lam2 if c is None else lam2 * float(c[k])  # c is None: lam_schedule='constant'
        eta_t = float(e[k])
        mask, idx = participation(rng, lead, m, S)
        if idx is not None:
            picks.append(idx)
        on = xp.asarray(mask)[..., None] if partial else None
        if restart:  # the authors' code: every client starts the round at the server's model
            X = xp.broadcast_to(xbar[..., None, :], lead + (m, f.dim))
        for j in range(K):
            fk = f if size is None else batched_objective(f, sample_counts(rng, f, lead, size, replace=False))
            G = fk.grad(X)
            if sig is not None:
                assert rng is not None  # required with sigma (generator above)
                noise = xp.asarray(rng.standard_normal(lead + (m, f.dim)), dtype=f.dtype)
                G = G + expand(sig, 2) * noise / math.sqrt(f.dim)
            if r is not None:  # stochastic
                avg = G if momentum is None else (1 - float(r[k])) * momentum + float(r[k]) * G
                if on is None:
                    momentum = avg
                else:  # a client's first round starts its momentum at G; an unsampled one keeps its own
                    if momentum is not None:
                        avg = xp.where(seen, avg, G)
                        momentum = xp.where(on, avg, momentum)
                    else:
                        momentum = avg
                    seen = on if seen is None else (seen | on)
                G = momentum
            V = G / m + lam_t * (X - xbar[..., None, :])
            if dual is not None:  # FedFW+: y_i += λ0 (x_i − x̄^t) before the step, then enters (4.5)
                inc = lam2 * (X - xbar[..., None, :])
                dual = dual + (inc if on is None else xp.where(on, inc, xp.zeros_like(inc)))
                V = V + dual
            D = lmo(V)
            Xn = (1 - eta_t) * X + eta_t * D
            if on is not None:
                Xn, D = xp.where(on, Xn, X), xp.where(on, D, xp.zeros_like(D))
            X = Xn
            where = f"round {k + 1}" + (f", local step {j + 1}" if K > 1 else "")
            check_diverged(xp, f, X, "fedfw", where, "lam (the penalty) or the gradients")
            if keep:
                ds.append(D)
                nnz.append(xp.sum(xp.astype(D != 0, xp.int64), axis=-1))  # on the device: no sync per round
        if restart:
            w = xp.asarray(mask, dtype=f.dtype)[..., None]
            xbar = xp.sum(w * X, axis=-2) / S
        elif K == 1 and not partial:  # from the directions (4.6): what the thesis's server computes
            xbar = (1 - eta_t) * xbar + eta_t * xp.mean(D, axis=-2)
        else:
            xbar = xp.mean(X, axis=-2)
        evals += K * mask
        gs.append(xbar)
        if keep:
            ls.append(X)
    lam_host = np.broadcast_to(np.asarray(to_numpy(base), dtype=float), lead)
    lams = (
        np.broadcast_to(lam_host, (rounds,) + lead)
        if c is None
        else c.reshape((-1,) + (1,) * len(lead)) * lam_host
    )
    params = {
        "lam": lams,
        "eta": e,
        "rho": r,
        "lam_schedule": lam_schedule if isinstance(lam_schedule, str) else "sequence",
        "stochastic": stochastic,
        "sigma": sig,
        "batch_size": size,
        "K": K,
        "S": S,
        "restart": restart,
        "record": record,
        "variant": variant,
    }
    return FedFWHistory(
        w_global=xp.stack(gs),
        w_local=xp.stack(ls) if keep else None,
        rounds=rounds,
        local_steps=K,
        grad_evals=evals if partial else rounds * K,
        params=params,
        directions=xp.stack(ds) if keep else None,
        nnz=np.asarray(to_numpy(xp.stack(nnz))) if keep else None,
        sampled=np.stack(picks) if picks else None,
    )


def _start(x0: Array | None, C: ConvexSet, f: Objective, lead: tuple[int, ...]) -> Array:
    r""":math:`\bar x^1` ``(*lead, d)``: ``x0`` or the set's centre; ``x0`` outside the set is a
    ``ValueError`` (FedFW's iterates are convex combinations of the start and LMO outputs: they stay
    in the set only if the start is in it), to the set's tolerance at the objective's dtype."""
    x = f.xp.asarray(point(C.center(f.dim) if x0 is None else x0, f, lead, "x0"), dtype=f.dtype)
    if x0 is not None:
        rtol = max(1e-12, 16 * float(f.xp.finfo(f.dtype).eps))
        inside = np.asarray(to_numpy(C.contains(x, rtol=rtol)), dtype=bool)
        if not np.all(inside):
            xh = np.asarray(to_numpy(x), dtype=float)
            far = np.broadcast_to(C.excess(xh), inside.shape)
            k = np.unravel_index(int(np.argmax(np.where(inside, -np.inf, far))), inside.shape)
            where = f" at trial index {tuple(int(i) for i in k)}" if inside.ndim else ""
            raise ValueError(
                f"x0 must lie in the constraint set {C.describe()}: it is outside by "
                f"{float(far[k]):.3g} ({C.measure}){where}"
            )
    return x
