r"""Per-FedAvg, Algorithm 1 of the Per-FedAvg paper (Fallah, Mokhtari, Ozdaglar, NeurIPS 2020)."""

from __future__ import annotations

import numpy as np

from .._objective import Objective
from .._typing import Array
from ._common import (
    History,
    check_diverged,
    check_objective,
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

__all__ = ["per_fedavg"]

_VARIANTS = ("hessian", "first_order", "hessian_free")


def per_fedavg(
    objective: Objective,
    *,
    alpha: float | Array,
    beta: float | Array,
    tau: int,
    rounds: int,
    S: int | None = None,
    D: int | None = None,
    D_prime: int | None = None,
    D_second: int | None = None,
    variant: str = "hessian",
    delta: float | Array | None = None,
    w0: Array | None = None,
    rng: np.random.Generator | int | None = None,
) -> History:
    r"""Per-FedAvg, Algorithm 1: τ local stochastic steps on the meta-functions, then averaging.

    Per round k the server samples S of the n = m clients uniformly without replacement
    (:math:`\mathcal A_k`, S = rn; all when ``S`` is None); each sampled client starts from
    :math:`w_{k+1,0}^i = w_k` and for t = 1..τ takes the step of eq. (7) with the estimate (8):

    .. math::
        \tilde w_{k+1,t}^i &= w_{k+1,t-1}^i - \alpha\,\tilde\nabla f_i(w_{k+1,t-1}^i, \mathcal D_t^i),\\
        w_{k+1,t}^i &= w_{k+1,t-1}^i - \beta\big(I - \alpha\tilde\nabla^2 f_i(w_{k+1,t-1}^i, \mathcal D_t''^i)\big)
            \tilde\nabla f_i(\tilde w_{k+1,t}^i, \mathcal D_t'^i),

    and the server sets :math:`w_{k+1} = \frac{1}{S}\sum_{i\in\mathcal A_k} w_{k+1,\tau}^i`.  The
    Hessian term is an exact Hessian-vector product of the mini-batch Hessian (``variant=
    "hessian"``).  §5 / Appendix H variants: ``"first_order"`` drops it (eq. (112), FO-MAML);
    ``"hessian_free"`` replaces the Hessian-vector product by the gradient difference
    :math:`\tilde d_i = (\tilde\nabla f_i(w + \delta g, \mathcal D'') - \tilde\nabla f_i(w - \delta g,
    \mathcal D''))/(2\delta)`, g the outer gradient (eqs. (119)-(120); the §5 text divides by δ,
    not 2δ, which would double the Hessian term).  α ``alpha`` (>= 0), β ``beta`` (> 0),
    τ ``tau``, K ``rounds``, δ ``delta`` (HF only, > 0).

    ``D``, ``D_prime``, ``D_second`` are the batch sizes D, D', D'' (None: the exact gradient or
    Hessian of f_i); batches are independent, drawn i.i.d. (with replacement, as the
    expectations of Lemma 4.3 assume) from the client's samples of positive weight.  Eq. (8)
    takes the Hessian on D'' (Algorithm 1 as printed writes D' there; eq. (8) and Lemma 4.3,
    which need it independent of D', are followed).

    Randomness (``rng``: a Generator or int seed, required when S < n or a batch size is set),
    per round in this order: ``rng.random((*lead, m))`` for the client sampling (if S < n); then
    per local step one draw ``rng.random((*lead, m, size))`` for each of D, D', D'' that is set,
    in that order, for every client (unsampled clients' draws are discarded).

    Returns a :class:`History`: ``w_global`` ``(rounds+1, *lead, d)``, ``w_local``
    ``(rounds+1, *lead, m, d)`` (:math:`w_{k+1,\tau}^i`; :math:`w_k` for unsampled clients),
    ``theta`` ``(rounds+1, *lead, m, d)``, the personalised models after one exact gradient step
    :math:`w_k - \alpha\nabla f_i(w_k)` (eq. (3)/(4)); ``w_bar`` ``(rounds, tau, *lead, d)``,
    Theorem 4.5's :math:`\bar w_{k+1,t}` (the average over :math:`\mathcal A_k` of the local
    iterates, t = 0..τ-1); counters per client ``(*lead, m)``: ``grad_evals`` (2 per step, 4
    for HF), ``hvp_evals`` (1 per step for ``"hessian"``); ``sampled``.

    References: Per-FedAvg (Fallah et al., 2020), §3, eqs. (3)-(8), Algorithm 1, Theorem 4.5;
    §5 and Appendix H (FO and HF variants).
    """
    f, m = check_objective(objective)
    xp = f.xp
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be one of {_VARIANTS} (got {variant!r})")
    alpha = positive(alpha, "alpha", f, allow_zero=True)
    beta = positive(beta, "beta", f)
    tau, rounds = count(tau, "tau"), count(rounds, "rounds")
    S = sample_size(S, m)
    if variant == "hessian_free":
        if delta is None:
            raise ValueError("variant='hessian_free' needs delta > 0 (the finite-difference step)")
        delta = positive(delta, "delta", f)
    elif delta is not None:
        raise TypeError(f"delta applies only to variant='hessian_free' (got variant={variant!r})")
    if variant == "first_order" and D_second is not None:
        raise TypeError("D_second applies only to the 'hessian' and 'hessian_free' variants")
    sizes = [
        minibatch_size(s, f, name, replace=True)
        for s, name in ((D, "D"), (D_prime, "D_prime"), (D_second, "D_second"))
    ]
    rng = generator(rng, S < m or any(s is not None for s in sizes), "S < n or a batch size is set")
    lead = lead_shape(f, alpha, beta, *(() if delta is None else (delta,)))
    w = point(w0, f, lead, "w0")
    a2, b2 = expand(alpha, 2), expand(beta, 2)
    d2 = None if delta is None else expand(delta, 2)
    gs, ls, picks, bars = [w], [xp.broadcast_to(w[..., None, :], lead + (m, f.dim))], [], []
    thetas = [_personalised(f, w, a2, lead)]
    count_g = np.zeros(lead + (m,), dtype=int)
    per_step = 4 if variant == "hessian_free" else 2
    batches = MiniBatches(f, lead) if any(s is not None for s in sizes) else None
    for t in range(rounds):
        mask, idx = participation(rng, lead, m, S)
        if idx is not None:
            picks.append(idx)
        on = xp.asarray(mask.astype(float), dtype=f.dtype)
        W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        step_bars = []
        for k in range(tau):
            step_bars.append(xp.sum(on[..., None] * W, axis=-2) / S)
            fD, fD1, fD2 = (
                f if s is None or batches is None else batches.objective(rng, s, replace=True) for s in sizes
            )
            (grad, own), (grad1, own1) = gradient(fD), gradient(fD1)
            w_tilde = W - scaled(a2, grad(W), own)
            g, own = grad1(w_tilde), own1
            if variant == "hessian":
                g, own = g - scaled(a2, fD2.hvp(W, g), False), True
            elif variant == "hessian_free":
                assert d2 is not None  # the variant requires delta (checked above)
                g, own = g - a2 * (fD2.grad(W + d2 * g) - fD2.grad(W - d2 * g)) / (2 * d2), True
            W = W - scaled(b2, g, own)
            check_diverged(xp, f, W, "per_fedavg", f"round {t + 1}, local step {k + 1}", "beta (or alpha)")
        W = xp.where(xp.asarray(mask)[..., None], W, w[..., None, :])
        w = xp.sum(on[..., None] * W, axis=-2) / S
        count_g += tau * mask
        gs.append(w)
        ls.append(W)
        thetas.append(_personalised(f, w, a2, lead))
        bars.append(xp.stack(step_bars))
    return History(
        w_global=xp.stack(gs),
        w_local=xp.stack(ls),
        theta=xp.stack(thetas),
        w_bar=xp.stack(bars),
        rounds=rounds,
        local_steps=tau,
        grad_evals=per_step * count_g,
        hvp_evals=count_g if variant == "hessian" else 0,
        params={
            "alpha": alpha,
            "beta": beta,
            "tau": tau,
            "S": S,
            "D": sizes[0],
            "D_prime": sizes[1],
            "D_second": sizes[2],
            "variant": variant,
            "delta": delta,
        },
        sampled=np.stack(picks) if picks else None,
    )


def _personalised(f: Objective, w: Array, a2: Array, lead: tuple[int, ...]) -> Array:
    """One exact gradient step from the global model, per client: ``w - alpha grad f_i(w)``."""
    xp = f.xp
    W = xp.broadcast_to(w[..., None, :], lead + (f.batch_shape[-1], f.dim))
    return W - a2 * f.grad(W)
