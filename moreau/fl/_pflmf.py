r"""pFL^MF: personalised FL as low-rank matrix optimisation, its Burer–Monteiro algorithm and exact target.

Problem (thesis §4.1, eq. (4.1)), with the clients' models as the columns of X ∈ R^{d×n}:

.. math:: \min_{\mathrm{rank}(X)\le r} \sum_i p_i f_i(x_i)
          \;=\; \min_{U\in\mathbb R^{d\times r},\,V\in\mathbb R^{n\times r}} F(U, V) := \sum_i p_i f_i(U v_i)
          \quad\text{(eq. (4.2), } X = UV^\top\text{)},

p_i = 1/n in the thesis (``weights`` gives others, normalised).  U lives on the server, v_i
(row i of V) on client i; x_i = U v_i is client i's personalised model.  r = 1: one shared
direction that each client scales; r ≥ min(d, n): no constraint (LocalTrain).

:func:`pflmf` runs the alternating gradient method the thesis describes (§4.1: "alternating
stochastic gradient descent ... multiple local steps for v_i ... partial client participation
with probability p"); :func:`low_rank_optimum` is the exact rank-r optimum where Eckart–Young
certifies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backend import to_numpy
from .._objective import Objective
from .._quadratic import Quadratic
from .._typing import Array, Namespace
from ._common import (
    History,
    batched_objective,
    check_diverged,
    check_objective,
    client_weights,
    count,
    expand,
    generator,
    lead_shape,
    minibatch_size,
    positive,
)
from ._minibatches import sample_counts

__all__ = ["pflmf", "low_rank_optimum", "LowRankOptimum", "VARIANTS"]

#: the updates :func:`pflmf` runs: the thesis's alternating method, or what the authors' code runs
VARIANTS = ("alternating", "fedper")


def _start(value: Any, f: Objective, shape: tuple[int, ...], name: str, xp: Namespace) -> Array | None:
    """A start factor broadcast to ``shape`` (checked), or None."""
    if value is None:
        return None
    a = xp.asarray(
        np.asarray(value, dtype=float) if isinstance(value, (list, tuple)) else value, dtype=f.dtype
    )
    try:
        ok = np.broadcast_shapes(tuple(a.shape), shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name} must broadcast to {shape} (got shape {tuple(a.shape)})")
    if not bool(xp.all(xp.isfinite(a))):
        raise ValueError(f"{name} must be finite (got NaN or inf)")
    return xp.broadcast_to(a, shape)


def _models(xp: Namespace, f: Objective, U: Array, V: Array, t: int, k: int) -> Array:
    """x_i = U v_i ``(*lead, m, d)``, with divergence reported as such (overflow of the product)."""
    with np.errstate(over="ignore", invalid="ignore"):
        X = V @ xp.matrix_transpose(U)
    check_diverged(xp, f, X, "pflmf", f"round {t + 1}, before step {k + 1} (x_i = U v_i)", "eta_u or eta_v")
    return X


def pflmf(
    objective: Objective,
    rank: int,
    *,
    rounds: int,
    eta_u: float | Array,
    eta_v: float | Array,
    tau: int = 1,
    p: float | Array = 1.0,
    batch_size: int | None = None,
    weights: Array | None = None,
    U0: Array | None = None,
    V0: Array | None = None,
    variant: str = "alternating",
    rng: np.random.Generator | int | None = None,
) -> History:
    r"""pFL^MF (thesis §4.1, Paper I's Algorithm 1 as reconstructed): alternating gradient steps on (4.2).

    Per round t (η_u ``eta_u``, η_v ``eta_v``, τ ``tau`` local steps, participation probability
    p ``p``): each client takes part independently with probability p (set :math:`S_t`); the
    server sends :math:`U_t`; each client i ∈ S_t runs τ gradient steps on its own loss in v_i,

    .. math::
        v_i^{t,k+1} = v_i^{t,k} - \eta_v\, U_t^\top \nabla f_i(U_t v_i^{t,k}),\quad k = 0..\tau-1,
        \qquad v_i^{t+1} = v_i^{t,\tau}

    (clients not in S_t keep v_i), and returns :math:`G_i = \nabla f_i(U_t v_i^{t+1})\,(v_i^{t+1})^\top`;
    the server steps

    .. math:: U_{t+1} = U_t - \eta_u \sum_{i\in S_t} \frac{p_i}{p}\, G_i,

    an unbiased estimate of :math:`\nabla_U F(U_t, V_{t+1}) = \sum_i p_i \nabla f_i(U_t v_i^{t+1}) (v_i^{t+1})^\top`
    (exact when p = 1).  Alternating: the U-step uses the clients' *new* v_i (Gauss–Seidel),
    never a simultaneous step.  The client's step is on f_i itself, i.e. a block step
    :math:`\eta_v/p_i` on F (:math:`\nabla_{v_i}F = p_i U^\top\nabla f_i(Uv_i)`).  Stochastic
    gradients: with ``batch_size`` each gradient above is taken on a fresh mini-batch (drawn
    without replacement from the client's samples), for objectives with samples.

    Reconstruction (the journal text was not available; the thesis states the algorithm in one
    sentence): the order (v first, then U at the new v), the 1/p scaling of the server
    aggregate and the per-client step on f_i are ours, chosen so that p = 1 with full
    gradients is exact alternating (block) gradient descent on F.  The authors' code
    (github DadrasAli/pFLMF at commit 498c705, built on FL-Bench) differs from these equations; each
    item ends with its evidence in brackets, a test (``path::function``) or a documentation section
    (``page § heading``), "read in the code" where no run exercised it: (a) its
    ``src/client/pflmf.py`` defines ``fit`` (a v-phase, then a u-phase) at module level, never
    bound to ``pFLMFClient`` (``pFLMFClient.fit`` is ``FedAvgClient.fit``), so a run uses FedPer's
    client: simultaneous SGD steps on the whole local model (shared body and personal classifier head
    together) for the local epochs; measured: their client and server, driven, equal
    ``variant="fedper"`` with sample weights normalised in float32 (f) to 8.7e-16 [evidence:
    docs/audits.md § pFL^MF; tests/test_audit_pfl.py::test_each_deviation_is_diagnosed_with_its_parameter;
    tests/test_fl_pflmf_fedper.py::test_fedper_equals_a_loop_over_trials_and_clients];
    (b) even that unused ``fit`` zeroes the personal (classifier) gradients in *both* phases,
    so neither phase would update v_i; measured with it bound by hand: max_t ‖v_t − v_0‖ = 0, and the
    run ends 1.69 from X* [evidence: docs/audits.md § pFL^MF;
    tests/test_fl_pflmf_fedper.py::test_fedper_is_not_the_alternating_method_and_updates_the_personal_factors];
    (c) the server averages the clients' locally trained
    copies of the shared part (FedAvg, weights n_i/Σn_j, the sampled clients only) instead of a
    gradient step on U; the weights n_i are not the thesis's p_i = 1/n [evidence: docs/audits.md
    § pFL^MF; tests/test_audit_pfl.py::test_each_deviation_is_diagnosed_with_its_parameter];
    (d) ``lr_u``, ``lr_v``, ``num_steps_u``, ``num_steps_v`` (defaults 0.001,
    0.001, 1, 500 in ``config/defaults.yaml``) are parsed and unused [evidence: read in the code,
    docs/audits.md § pFL^MF]; (e) the shared part is the
    network body and the personal part its last layer, a nonlinear analogue of x_i = U v_i
    [evidence: read in the code, docs/audits.md § pFL^MF]; (f) FL-Bench normalises the server's
    sample weights in float32 (``torch.tensor(client_weights, dtype=torch.float32)``) and does not
    renormalise: in a float64 run the average is off by about 1e-8 relative (harmless in float32)
    [evidence: docs/audits.md § pFL^MF;
    tests/test_audit_pfl.py::test_each_deviation_is_diagnosed_with_its_parameter]; (g) the server
    imports ``ray``, ``hydra``, ``omegaconf``, ``pynvml`` and ``torchvision``: the code does not run
    without them (the audit drove its client and aggregation with stand-ins) [evidence: docs/audits.md
    § pFL^MF].

    ``variant="fedper"``: what the authors' code actually runs (FL-Bench's FedPer client, (a) and
    (c) above), not the thesis's method.  Each client i ∈ S_t copies :math:`U_i^{t,0} = U_t` and takes
    τ simultaneous gradient steps on its own loss in both factors,

    .. math::
        U_i^{t,k+1} = U_i^{t,k} - \eta_u\,\nabla f_i(U_i^{t,k}v_i^{t,k})\,(v_i^{t,k})^\top,\qquad
        v_i^{t,k+1} = v_i^{t,k} - \eta_v\,(U_i^{t,k})^\top\nabla f_i(U_i^{t,k}v_i^{t,k}),

    (FedPer's one learning rate: η_u = η_v), keeps :math:`v_i^{t+1} = v_i^{t,\tau}` (the personal
    layer) and sends its copy of the shared factor; the server averages the sampled copies,
    :math:`U_{t+1} = \sum_{i\in S_t} p_i U_i^{t,\tau} / \sum_{i\in S_t} p_i` (:math:`U_t` kept when
    no client takes part; the code's p_i are the sample counts n_i: pass them as ``weights``).  No
    server gradient step and no 1/p scaling; the personal factors *are* updated (the code's own
    ``fit``, which would freeze them, (b), is never called).  Same draws as the default, without the
    server's extra mini-batch.

    Starts: ``U0`` ``(*trials, d, r)``, ``V0`` ``(*trials, m, r)``; each, when None, is drawn
    (``rng`` required): :math:`U_0 = G/\sqrt d`, :math:`V_0 = G'/\sqrt r` with standard normal G,
    G' (``rng.standard_normal``, U first).  (U, V) = (0, 0) is a saddle with zero gradient, so
    the method needs a nonzero start.  Randomness per round, in this order: participation
    ``rng.random((*lead, m)) < p`` (if p < 1); per local step the mini-batches
    ``rng.random((*lead, m, n))`` (if ``batch_size``); one more for the U-gradient.

    Shapes: ``objective`` batch ``(*trials, m)``, dimension d; returns a :class:`History` with
    ``w_global`` the server's U ``(rounds+1, *lead, d, r)``, ``w_local`` the clients' v_i
    ``(rounds+1, *lead, m, r)``, ``theta`` the personalised models :math:`x_i = U_t v_i^t`
    ``(rounds+1, *lead, m, d)`` (index t: after t rounds), ``local_steps = tau``, ``grad_evals``
    τ + 1 per round taken part in (τ with ``variant="fedper"``; an int when p = 1, else a host array
    ``(*lead, m)``),
    ``sampled`` the participation masks ``(rounds, *lead, m)`` (host bool) when p < 1.

    References: A. Dadras, thesis (Umeå 2025), §4.1, eqs. (4.1)-(4.2); A. Dadras, S. U. Stich,
    A. Yurtsever, "Personalized Federated Learning via Low-Rank Matrix Optimization", TMLR 2025,
    Algorithm 1.
    """
    f, m = check_objective(objective)
    xp = f.xp
    r = count(rank, "rank")
    rounds, tau = count(rounds, "rounds"), count(tau, "tau")
    eta_u, eta_v, p = positive(eta_u, "eta_u", f), positive(eta_v, "eta_v", f), positive(p, "p", f)
    if not isinstance(variant, str) or variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS} (got {variant!r})")
    if bool(xp.any(p > 1)):
        raise ValueError(f"p must be a participation probability in (0, 1] (got {float(xp.max(p)):g})")
    partial = bool(xp.any(p < 1))
    size = minibatch_size(batch_size, f, replace=False)
    pw = client_weights(weights, f, m)
    lead = lead_shape(f, eta_u, eta_v, p, pw[..., 0])
    d = f.dim
    rng = generator(
        rng,
        partial or size is not None or U0 is None or V0 is None,
        "p < 1, batch_size is set or a start (U0, V0) is not given",
    )
    U = _start(U0, f, lead + (d, r), "U0", xp)
    if U is None:
        assert rng is not None  # required without U0 (generator above)
        U = xp.asarray(rng.standard_normal(lead + (d, r)) / np.sqrt(d), dtype=f.dtype)
    V = _start(V0, f, lead + (m, r), "V0", xp)
    if V is None:
        assert rng is not None  # required without V0
        V = xp.asarray(rng.standard_normal(lead + (m, r)) / np.sqrt(r), dtype=f.dtype)
    ev, eu, p2 = expand(eta_v, 2), expand(eta_u, 2), expand(p, 1)
    us, vs, xs, masks = [U], [V], [V @ xp.matrix_transpose(U)], []
    evals = np.zeros(lead + (m,), dtype=int)
    per_round = tau if variant == "fedper" else tau + 1
    for t in range(rounds):
        if partial:
            assert rng is not None  # required when p < 1
            mask_h = rng.random(lead + (m,)) < np.asarray(to_numpy(p2), dtype=float)
            masks.append(mask_h)
            on = xp.asarray(mask_h)[..., None]
        if variant == "fedper":
            U, V = _fedper_round(xp, f, U, V, eu, ev, pw, on if partial else None, tau, size, rng, lead, t)
            evals += per_round * (mask_h if partial else 1)
            us.append(U)
            vs.append(V)
            xs.append(_models(xp, f, U, V, t, tau + 1))
            continue
        for k in range(tau):
            fk = f if size is None else batched_objective(f, sample_counts(rng, f, lead, size, replace=False))
            G = fk.grad(_models(xp, f, U, V, t, k))  # (*lead, m, d): grad f_i(U v_i)
            step = V - ev * (G @ U)  # v_i - eta_v U^T grad f_i
            V = xp.where(on, step, V) if partial else step
            check_diverged(xp, f, V, "pflmf", f"round {t + 1}, local step {k + 1} (v_i)", "eta_v")
        fk = f if size is None else batched_objective(f, sample_counts(rng, f, lead, size, replace=False))
        G = fk.grad(_models(xp, f, U, V, t, tau))
        coef = pw / p2 * (xp.asarray(mask_h, dtype=f.dtype) if partial else 1.0)  # (*lead, m)
        U = U - eu * (xp.matrix_transpose(G) @ (coef[..., None] * V))  # sum_i coef_i grad f_i v_i^T
        check_diverged(xp, f, U, "pflmf", f"round {t + 1} (server step on U)", "eta_u")
        evals += per_round * (mask_h if partial else 1)
        us.append(U)
        vs.append(V)
        xs.append(_models(xp, f, U, V, t, tau + 1))
    return History(
        w_global=xp.stack(us),
        w_local=xp.stack(vs),
        theta=xp.stack(xs),
        rounds=rounds,
        local_steps=tau,
        grad_evals=evals if partial else rounds * per_round,
        params={
            "rank": r,
            "eta_u": eta_u,
            "eta_v": eta_v,
            "tau": tau,
            "p": p,
            "batch_size": size,
            "weights": pw,
            "variant": variant,
        },
        sampled=np.stack(masks) if masks else None,
    )


def _fedper_round(
    xp: Namespace,
    f: Objective,
    U: Array,
    V: Array,
    eu: Array,
    ev: Array,
    pw: Array,
    on: Array | None,
    tau: int,
    size: int | None,
    rng: np.random.Generator | None,
    lead: tuple[int, ...],
    t: int,
) -> tuple[Array, Array]:
    """One round of ``variant="fedper"``: τ simultaneous steps on each client's copy (U_i, v_i), the
    sampled copies of U averaged with the weights ``pw`` (``on`` the participation mask ``(*lead, m, 1)``)."""
    Ui = xp.broadcast_to(U[..., None, :, :], lead + (f.batch_shape[-1],) + tuple(U.shape[-2:]))
    for k in range(tau):
        fk = f if size is None else batched_objective(f, sample_counts(rng, f, lead, size, replace=False))
        with np.errstate(over="ignore", invalid="ignore"):
            X = (Ui @ V[..., None])[..., 0]  # (*lead, m, d): U_i v_i
        check_diverged(
            xp, f, X, "pflmf", f"round {t + 1}, before step {k + 1} (x_i = U_i v_i)", "eta_u or eta_v"
        )
        G = fk.grad(X)
        Ui, V_new = (
            Ui - expand(eu, 1) * (G[..., :, None] * V[..., None, :]),
            V - ev * (xp.matrix_transpose(Ui) @ G[..., None])[..., 0],
        )
        V = V_new if on is None else xp.where(on, V_new, V)
        check_diverged(xp, f, V, "pflmf", f"round {t + 1}, local step {k + 1} (v_i)", "eta_v")
    w = pw if on is None else pw * xp.astype(on[..., 0], pw.dtype)
    total = xp.sum(w, axis=-1)
    avg = (
        xp.sum(w[..., None, None] * Ui, axis=-3)
        / xp.where(total > 0, total, xp.ones_like(total))[..., None, None]
    )
    U = avg if on is None else xp.where((total > 0)[..., None, None], avg, U)
    check_diverged(xp, f, U, "pflmf", f"round {t + 1} (server average of U)", "eta_u")
    return U, V


@dataclass(frozen=True)
class LowRankOptimum:
    r"""The certified rank-r optimum of (4.1) (arrays in the objective's namespace).

    ``X`` ``(*lead, m, d)``: the optimal personalised models :math:`x_i^\star` (unique when
    ``sigma[..., r-1] > sigma[..., r]``); ``U`` ``(*lead, d, r)``, ``V`` ``(*lead, m, r)``: a
    balanced factorisation :math:`X^\star = UV^\top`; ``value`` ``(*lead,)``:
    :math:`\sum_i p_i f_i(x_i^\star)`; ``unconstrained`` ``(*lead,)``: :math:`\sum_i p_i \min f_i`
    (LocalTrain's value); ``sigma`` ``(*lead, min(d, m))``: the singular values of the whitened
    matrix M, so that ``value - unconstrained`` :math:`= \tfrac12\sum_{k>r}\sigma_k^2` (Eckart–Young).
    """

    X: Array
    U: Array
    V: Array
    value: Array
    unconstrained: Array
    sigma: Array


def low_rank_optimum(objective: Objective, rank: int, weights: Array | None = None) -> LowRankOptimum:
    r"""The exact rank-r optimum of (4.1) for quadratic clients with proportional Hessians.

    Clients :math:`f_i(x) = \tfrac12 x^\top A_i x - b_i^\top x + c_i` with :math:`A_i = s_i A`,
    A positive definite and :math:`s_i > 0` (e.g. :math:`f_i = \tfrac{s_i}2\|x - c_i\|^2`, or a
    shared least-squares design): with centres :math:`c_i = A_i^{-1}b_i` and :math:`w_i = p_i s_i`,

    .. math:: \sum_i p_i f_i(x_i) = \tfrac12\big\|A^{1/2}(X - C)W^{1/2}\big\|_F^2 + \sum_i p_i \min f_i,

    so by Eckart–Young :math:`X^\star = A^{-1/2}[M]_r W^{-1/2}` with :math:`M = A^{1/2} C W^{1/2}`
    and :math:`[M]_r` its truncated SVD; the optimal value exceeds LocalTrain's by
    :math:`\tfrac12\sum_{k>r}\sigma_k(M)^2`.  r ≥ min(d, m) gives X* = C (LocalTrain).

    ``objective``: a :class:`moreau.Quadratic` (or LeastSquares) with batch ``(*trials, m)``;
    ``weights`` the p_i (default 1/m; all > 0).  Returns a :class:`LowRankOptimum`.  A
    ``ValueError`` when the Hessians are not proportional to one positive definite matrix
    (there the weighted low-rank problem has no closed form and may have spurious local minima).

    References: thesis §4.1, eq. (4.1); C. Eckart, G. Young, Psychometrika 1 (1936).
    """
    f, m = check_objective(objective)
    if not isinstance(f, Quadratic):
        raise TypeError(f"low_rank_optimum needs a moreau Quadratic objective (got {type(f).__name__})")
    r = count(rank, "rank")
    xp, d = f.xp, f.dim
    pw = client_weights(weights, f, m)
    if not bool(xp.all(pw > 0)):
        raise ValueError(
            "low_rank_optimum needs every client weight > 0 (a zero-weight client's model is free)"
        )
    lead = tuple(np.broadcast_shapes(tuple(f.batch_shape[:-1]), tuple(pw.shape[:-1])))
    A = xp.broadcast_to(f.A, lead + (m, d, d))
    A0 = xp.mean(A, axis=-3)  # (*lead, d, d)
    tr = lambda B: xp.sum(xp.linalg.diagonal(B), axis=-1)  # noqa: E731
    s = tr(A) / tr(A0)[..., None]  # (*lead, m)
    dev = xp.linalg.matrix_norm(A - s[..., None, None] * A0[..., None, :, :])
    scale = xp.linalg.matrix_norm(A)
    tol = 64 * d * float(np.finfo(np.dtype(str(f.dtype).rsplit(".", 1)[-1])).eps)
    if not bool(xp.all(dev <= tol * scale)):
        worst = float(xp.max(dev / scale))
        raise ValueError(
            f"low_rank_optimum needs client Hessians proportional to one matrix (A_i = s_i A); a "
            f"client deviates from that by {worst:.3g} relative (allowed {tol:.3g})"
        )
    a, Q = xp.linalg.eigh(A0)
    if not bool(xp.all(a[..., 0] > 0)) or not bool(xp.all(s > 0)):
        raise ValueError(
            "low_rank_optimum needs positive definite client Hessians (A positive definite, s_i > 0)"
        )
    w = pw * s  # (*lead, m)
    b = xp.broadcast_to(f.b, lead + (m, d))
    Qt = xp.matrix_transpose(Q)
    # columns of M: sqrt(w_i) A^{1/2} c_i = sqrt(w_i)/s_i A^{-1/2} b_i, with A^{-1/2} = Q diag(a^{-1/2}) Q^T
    half_inv = (Q * (a[..., None, :] ** -0.5)) @ Qt
    Mt = (xp.sqrt(w) / s)[..., None] * (b @ half_inv)  # (*lead, m, d): M^T
    P, sig, Rt = xp.linalg.svd(xp.matrix_transpose(Mt), full_matrices=False)  # M = P diag(sig) Rt
    k = min(r, sig.shape[-1])
    root = xp.sqrt(sig[..., :k])
    U = half_inv @ (P[..., :, :k] * root[..., None, :])  # A^{-1/2} P_r Sigma_r^{1/2}
    V = xp.matrix_transpose(Rt[..., :k, :]) * root[..., None, :] / xp.sqrt(w)[..., None]
    if k < r:  # rank above min(d, m): pad with zero columns (any completion is optimal)
        U = xp.concat([U, xp.zeros(lead + (d, r - k), dtype=f.dtype)], axis=-1)
        V = xp.concat([V, xp.zeros(lead + (m, r - k), dtype=f.dtype)], axis=-1)
    X = V @ xp.matrix_transpose(U)
    value = xp.sum(pw * f.value(X), axis=-1)
    centres = (b @ half_inv @ half_inv) / s[..., None]
    unconstrained = xp.sum(pw * f.value(centres), axis=-1)
    return LowRankOptimum(X=X, U=U, V=V, value=value, unconstrained=unconstrained, sigma=sig)
