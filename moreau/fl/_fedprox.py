r"""LocalTrain by gradient descent, one-stage FedProx (Algorithm 1 of the FedProx analysis) and FedAvg."""

from __future__ import annotations

import numpy as np

from .._objective import Objective
from .._typing import Array
from ._blocks import client_blocks, run_blocks
from ._common import (
    History,
    added,
    check_diverged,
    check_objective,
    client_weights,
    count,
    expand,
    generator,
    gradient,
    lead_shape,
    minibatch_size,
    participation,
    point,
    positive,
    sample_size,
    scaled,
)
from ._minibatches import MiniBatches

__all__ = ["gd", "fedprox", "fedavg"]


def gd(objective: Objective, *, eta: float | Array, steps: int, w0: Array | None = None) -> History:
    r"""LocalTrain by gradient descent: every client runs :math:`w_{k+1}^{(i)} = w_k^{(i)} - \eta\nabla f_i(w_k^{(i)})`.

    η is ``eta`` (> 0), ``steps`` the number of steps (>= 1), ``w0`` the start, broadcasting to
    ``(*trials, m, d)`` (default 0).  No communication: the target is :func:`local_train`.

    Shapes: ``objective`` batch ``(*trials, m)``; returns a :class:`History` with
    ``w_local`` ``(steps+1, *lead, m, d)``, ``w_global`` ``None``, ``rounds = 0``,
    ``local_steps = grad_evals = steps``.

    References: FedProx analysis, eq. (2) and §6.1 (LocalTrain implemented by local GD).
    """
    f, m = check_objective(objective)
    xp = f.xp
    eta = positive(eta, "eta", f)
    steps = count(steps, "steps")
    lead = lead_shape(f, eta)
    W = point(w0, f, lead, "w0", clients=True)
    e = expand(eta, 2)

    def step(fb: Objective, Wb: Array, k: int) -> Array:
        grad, own = gradient(fb)
        Wb = Wb - scaled(e, grad(Wb), own)
        check_diverged(xp, f, Wb, "gd", f"step {k + 1} of {steps}")
        return Wb

    blocks = client_blocks(f)
    if len(blocks) == 1:  # any namespace: the iterates stacked
        out = [W]
        run_blocks(blocks, W, steps, step, record=lambda k, sl, Wb: out.append(Wb))
        w_local = xp.stack(out)
    else:  # numpy: every step's iterates written block by block
        w_local = np.empty((steps + 1,) + tuple(W.shape), dtype=W.dtype)
        w_local[0] = W

        def put(k: int, sl: slice, Wb: Array) -> None:
            w_local[k + 1, ..., sl, :] = Wb

        run_blocks(blocks, W, steps, step, record=put)
    return History(
        w_global=None,
        w_local=w_local,
        rounds=0,
        local_steps=steps,
        grad_evals=steps,
        params={"eta": eta, "steps": steps},
    )


def fedprox(
    objective: Objective,
    *,
    lam: float | Array,
    gamma: float | Array,
    eta: float | Array,
    K: int,
    rounds: int,
    w0: Array | None = None,
    local0: Array | None = None,
    weights: Array | None = None,
) -> History:
    r"""One-stage FedProx, Algorithm 1 of the FedProx analysis (full gradients, all clients).

    Per round t (λ ``lam``, γ ``gamma``, η ``eta``, K local steps, warm start
    :math:`w_{t,0}^{(i)} = w_{t-1,K}^{(i)}`):

    .. math::
        w_{t,k+1}^{(i)} &= w_{t,k}^{(i)} - \eta\big(\nabla f_i(w_{t,k}^{(i)}) + \lambda(w_{t,k}^{(i)} - w_t^{(g)})\big),
            \quad k = 0..K-1 \quad\text{(eq. (11))}\\
        w_{t+1}^{(g)} &= w_t^{(g)} - \gamma\sum_i p_i\,\lambda\big(w_t^{(g)} - w_{t,K}^{(i)}\big),

    the last line the server step of Algorithm 1 with :math:`\widehat\nabla F_i = \lambda(w_t^{(g)} - w_{t,K}^{(i)})`
    and p_i = 1/m (the paper's 1/m Σ; ``weights`` gives other p_i, normalised).  Its fixed point is
    :func:`fedprox_optimum` (Theorem 2: linear convergence for γ < 1/L_g, η <= 1/L_ℓ and K as in (12)).

    ``w0`` is :math:`w_1^{(g)}` ``(*trials, d)`` (default 0); ``local0`` the initial local models
    :math:`w_{0,K}^{(i)}` ``(*trials, m, d)`` (default: ``w0`` for every client).  λ, γ, η are
    numbers or arrays broadcasting against the trial shape (sweeps); K >= 1 and ``rounds`` >= 1
    integers.  Returns a :class:`History`: ``w_global`` ``(rounds+1, *lead, d)`` (index t: after t
    rounds), ``w_local`` ``(rounds+1, *lead, m, d)`` (index t: :math:`w_{t,K}^{(i)} = w_{t+1,0}^{(i)}`),
    ``local_steps = K``, ``grad_evals = rounds K``.

    References: FedProx analysis (Yu et al.), §5, eqs. (7)-(11), Algorithm 1, Theorem 2.
    """
    f, m = check_objective(objective)
    xp = f.xp
    lam, gamma, eta = positive(lam, "lam", f), positive(gamma, "gamma", f), positive(eta, "eta", f)
    K, rounds = count(K, "K"), count(rounds, "rounds")
    p = client_weights(weights, f, m)
    lead = lead_shape(f, lam, gamma, eta, p[..., 0])
    w = point(w0, f, lead, "w0")
    W = (
        xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        if local0 is None
        else point(local0, f, lead, "local0", clients=True)
    )
    lam2, eta2, gam1 = expand(lam, 2), expand(eta, 2), expand(gamma, 1)
    pc = p[..., None]
    gs, ls = [w], [W]
    blocks = client_blocks(f)
    mine = isinstance(w, np.ndarray)  # numpy: the local steps update their own iterates in place
    for t in range(rounds):
        wg = w[..., None, :]

        def step(fb: Objective, Wb: Array, k: int, t: int = t, wg: Array = wg) -> Array:
            grad, own = gradient(fb)
            g = added(grad(Wb), scaled(lam2, Wb - wg, True), own)
            s = scaled(eta2, g, True)
            # after the first step Wb is this round's own array (the round's start W is kept in the
            # history): updated in place, the same numbers
            Wb = np.subtract(Wb, s, out=Wb) if mine and k > 0 and _same(s, Wb) else Wb - s
            check_diverged(xp, f, Wb, "fedprox", f"round {t + 1}, local step {k + 1}", "eta (with lam)")
            return Wb

        W = run_blocks(blocks, W, K, step)
        w = w - gam1 * xp.sum(pc * (lam2 * (wg - W)), axis=-2)
        check_diverged(xp, f, w, "fedprox", f"round {t + 1} (server step)", "gamma")
        gs.append(w)
        ls.append(W)
    return History(
        w_global=xp.stack(gs),
        w_local=xp.stack(ls),
        rounds=rounds,
        local_steps=K,
        grad_evals=rounds * K,
        params={"lam": lam, "gamma": gamma, "eta": eta, "K": K, "p": p},
    )


def fedavg(
    objective: Objective,
    *,
    eta: float | Array,
    tau: int,
    rounds: int,
    S: int | None = None,
    batch_size: int | None = None,
    weights: Array | None = None,
    w0: Array | None = None,
    rng: np.random.Generator | int | None = None,
) -> History:
    r"""FedAvg: τ local (mini-batch) gradient steps on the sampled clients, then server averaging.

    Per round t: S of the N = m clients are sampled uniformly without replacement (all when
    ``S`` is None); each sampled client runs, from :math:`w_{t,0}^{(i)} = w_t`,

    .. math:: w_{t,k+1}^{(i)} = w_{t,k}^{(i)} - \eta\,\tilde\nabla f_i(w_{t,k}^{(i)}, \mathcal B_{t,k}^i),
              \quad k = 0..\tau-1,
              \qquad w_{t+1} = \sum_{i\in S_t} p_i w_{t,\tau}^{(i)} \Big/ \sum_{i\in S_t} p_i,

    with :math:`\tilde\nabla f_i(\cdot, \mathcal B)` the gradient on a fresh mini-batch of
    ``batch_size`` samples drawn uniformly without replacement from the client's samples of
    positive weight (the full gradient when ``batch_size`` is None).  η is ``eta``, τ ``tau``;
    ``weights`` the p_i (default uniform).  With S = N, full batches and τ = 1 this is gradient
    descent on :math:`\sum_i p_i f_i` (GlobalTrain); τ > 1 drifts away from its minimiser
    (client drift).

    Randomness (``rng``: a Generator or int seed, required when S < N or ``batch_size`` is set),
    per round in this order: ``rng.random((*lead, m))`` for the client sampling (if S < N);
    then per local step ``rng.random((*lead, m, n))`` for the mini-batches (if ``batch_size``),
    drawn for every client (unsampled clients' draws are discarded), so a batched run equals a
    loop over trials that slices the same draws.

    Returns a :class:`History`: ``w_global`` ``(rounds+1, *lead, d)``, ``w_local``
    ``(rounds+1, *lead, m, d)`` (:math:`w_{t,\tau}^{(i)}`; :math:`w_t` for unsampled clients),
    ``grad_evals`` ``(*lead, m)`` (τ per round in which the client was sampled), ``sampled``.

    References: McMahan et al. (2017), FederatedAveraging; FedProx analysis §6.1 (GlobalTrain by FedAvg).
    """
    f, m = check_objective(objective)
    xp = f.xp
    eta = positive(eta, "eta", f)
    tau, rounds = count(tau, "tau"), count(rounds, "rounds")
    S = sample_size(S, m)
    size = minibatch_size(batch_size, f, replace=False)
    rng = generator(rng, S < m or size is not None, "S < N or batch_size is set")
    p = client_weights(weights, f, m)
    lead = lead_shape(f, eta, p[..., 0])
    w = point(w0, f, lead, "w0")
    eta2 = expand(eta, 2)
    gs, ls, picks = [w], [xp.broadcast_to(w[..., None, :], lead + (m, f.dim))], []
    evals = np.zeros(lead + (m,), dtype=int)
    batches = None if size is None else MiniBatches(f, lead)
    mine = isinstance(w, np.ndarray)  # numpy: the local steps update their own iterates in place
    blocks = (
        client_blocks(f) if size is None else [(slice(None), None)]
    )  # mini-batches: drawn for all clients
    for t in range(rounds):
        mask, idx = participation(rng, lead, m, S)
        if idx is not None:
            picks.append(idx)

        def step(fb: Objective | None, Wb: Array, k: int, t: int = t) -> Array:
            if fb is None:  # a fresh mini-batch of every client (size is set, so batches is)
                assert batches is not None
                fb = batches.objective(rng, size, replace=False)
            grad, own = gradient(fb)
            s = scaled(eta2, grad(Wb), own)
            # after the first step Wb is this round's own array (nothing else holds it): updated in
            # place (the same numbers, no fresh (m, D) array per step)
            Wb = np.subtract(Wb, s, out=Wb) if mine and k > 0 and _same(s, Wb) else Wb - s
            check_diverged(xp, f, Wb, "fedavg", f"round {t + 1}, local step {k + 1}")
            return Wb

        W = run_blocks(blocks, xp.broadcast_to(w[..., None, :], lead + (m, f.dim)), tau, step)
        if idx is None:  # every client took part: p * 1 = p and the selection keeps W (skipped)
            wts = p
        else:
            wts = p * xp.asarray(mask, dtype=f.dtype)
            W = xp.where(xp.asarray(mask)[..., None], W, w[..., None, :])
        w = xp.sum(wts[..., None] * W, axis=-2) / xp.sum(wts, axis=-1)[..., None]
        evals += tau * mask
        gs.append(w)
        ls.append(W)
    return History(
        w_global=xp.stack(gs),
        w_local=xp.stack(ls),
        rounds=rounds,
        local_steps=tau,
        grad_evals=evals,
        params={"eta": eta, "tau": tau, "S": S, "batch_size": size, "p": p},
        sampled=np.stack(picks) if picks else None,
    )


def _same(s: Array, W: Array) -> bool:
    """``W - s`` has ``W``'s shape and dtype (so ``W`` can hold it: the in-place local step)."""
    return tuple(s.shape) == tuple(W.shape) and s.dtype == W.dtype
