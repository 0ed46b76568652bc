r"""pFedMe, Algorithm 1 of the pFedMe paper (T Dinh, Tran, Nguyen, NeurIPS 2020)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import to_numpy
from .._least_squares import LeastSquares
from .._logistic import Logistic
from .._multinomial import Multinomial
from .._objective import Objective
from .._quadratic import Quadratic
from .._ragged_samples import RaggedSamples
from .._typing import Array
from ._common import (
    History,
    added,
    batched_objective,
    check_diverged,
    check_objective,
    count,
    expand,
    gathered,
    generator,
    gradient,
    lead_shape,
    minibatch_size,
    point,
    positive,
    sample_clients,
    sample_size,
    scaled,
)
from ._minibatches import sample_counts, valid_rows

PERSONAL = ("certified", "inner", "none")

__all__ = ["pfedme"]


def pfedme(
    objective: Objective,
    *,
    lam: float | Array,
    eta: float | Array,
    beta: float | Array,
    R: int,
    rounds: int,
    S: int | None = None,
    batch_size: int | None = None,
    inner: int | str = "exact",
    inner_eta: float | Array | str | None = None,
    nu: float | Array | None = None,
    w0: Array | None = None,
    rng: np.random.Generator | int | None = None,
    personal: str = "certified",
) -> History:
    r"""pFedMe, Algorithm 1: R local rounds on the Moreau envelopes, then a β-step of the server.

    Per global round t, every client i = 1..N (N = m) starts from :math:`w_{i,0}^t = w_t` and for
    r = 0..R-1 (line 7-8):

    .. math::
        \tilde\theta_i(w_{i,r}^t) &\approx \arg\min_\theta \tilde h_i(\theta; w_{i,r}^t, \mathcal D_i)
            = \tilde f_i(\theta; \mathcal D_i) + \tfrac{\lambda}{2}\|\theta - w_{i,r}^t\|^2
            \quad\text{(eq. (7))}\\
        w_{i,r+1}^t &= w_{i,r}^t - \eta\lambda\big(w_{i,r}^t - \tilde\theta_i(w_{i,r}^t)\big);

    then the server samples S of the N clients uniformly without replacement (line 9) and sets
    :math:`w_{t+1} = (1-\beta)w_t + \beta\sum_{i\in S^t} w_{i,R}^t/S` (line 10).  λ is ``lam``,
    η ``eta``, β ``beta``, R ``R``, T ``rounds``, S ``S`` (default N), :math:`|\mathcal D|` ``batch_size``.

    :math:`\mathcal D_i` is a fresh mini-batch of ``batch_size`` samples drawn i.i.d. (with
    replacement: an unbiased gradient estimate, as the paper's Lemma 1 assumes) from the client's
    samples of positive weight; with ``batch_size`` None, :math:`\tilde f_i = f_i`.  For
    :class:`~moreau.LeastSquares`, :class:`~moreau.Logistic` and :class:`~moreau.Multinomial`
    (and their ragged forms, :func:`moreau.ragged`) the mini-batch objective is built from the
    ``batch_size`` drawn rows (gathered: its cost does not grow with the client's sample count);
    other objectives take the draw as sample weights (``with_weights``): the same function.  The
    personalised problem (7) is solved by ``inner``: ``"exact"``, a certified prox (``moreau.prox``:
    to rounding for quadratics, certified Newton otherwise; a fresh least-squares mini-batch by one
    linear solve
    :math:`(A_{\mathcal D} + \lambda I)^{-1}(b_{\mathcal D} + \lambda w)`); or an int K: K gradient
    steps of size ``inner_eta`` (default :math:`1/(L_{\mathcal D} + \lambda)`, :math:`L_{\mathcal D}`
    the smoothness of :math:`\tilde f_i`) from :math:`\theta = w_{i,r}^t`;
    with ``nu`` also given, each client stops as soon as (8) holds,
    :math:`\|\nabla\tilde h_i(\tilde\theta_i)\|^2 \le \nu`, and a client that has not reached it
    after K steps raises ``RuntimeError``.  ``inner_eta="client"``: the fixed step
    :math:`1/(L_i + \lambda)`, :math:`L_i` the smoothness of client i on all its samples
    (``objective.smoothness()``; one step per client for the whole run, as pFedMe's experiments).

    ``personal`` chooses what ``History.theta`` records (the personalised models):
    ``"certified"`` (default) :math:`\hat\theta_i(w_t) = \mathrm{prox}_{f_i/\lambda}(w_t)`, eq. (3),
    one certified prox per client and round on all the client's samples (on multinomial data
    with D = 610 one such prox takes ~90 s: the cost of the whole run can be there);
    ``"inner"``: the last inner solution of each round, :math:`\tilde\theta_i(w_{i,R-1}^t)` of
    eq. (7) (the δ-approximate personalised model that pFedMe's experiments evaluate), no extra
    work; ``"none"``: ``theta`` is None.

    With S = N, R = 1, exact inner solves and full batches this is gradient descent with step βη
    on :math:`F = \frac1N\sum_i F_i` (its minimiser is :func:`fedprox_optimum` with uniform
    weights); R > 1 moves the fixed point away from it (client drift; β does not move it).

    Randomness (``rng``: a Generator or int seed, required when S < N or ``batch_size`` is set),
    per global round in this order: for each local round r one draw ``rng.random((*lead, m,
    batch_size))`` (if ``batch_size``); then ``rng.random((*lead, m))`` for the client sampling
    (if S < N).  A batched run equals a loop over trials that slices the same draws.

    Returns a :class:`History`: ``w_global`` ``(rounds+1, *lead, d)`` (:math:`w_t`),
    ``w_local`` ``(rounds+1, *lead, m, d)`` (:math:`w_{i,R}^t` at index t+1, :math:`w_0` at 0),
    ``theta`` ``(rounds+1, *lead, m, d)``, the personalised models (``personal="certified"``:
    :math:`\hat\theta_i(w_t) = \mathrm{prox}_{f_i/\lambda}(w_t)`, eq. (3), certified; Theorem 1(b)
    evaluates their δ-approximations :math:`\tilde\theta_i(w_T)`; ``"inner"``: round t's last
    inner solution at index t+1, :math:`w_0` at 0; ``"none"``: None), ``w_bar`` ``(*lead, d)``, Theorem 1's
    :math:`\bar w_T = \sum_{t=0}^{T-1}\alpha_t w_t/A_T`, :math:`\alpha_t = (1-\eta\mu_F/2)^{-(t+1)}`,
    :math:`\mu_F = \lambda\mu/(\lambda+\mu)`, μ the smallest strong convexity of the clients (NaN
    where μ <= 0 or :math:`\eta\mu_F \ge 2`); ``local_steps = R``; ``prox_evals`` (exact inner:
    ``rounds R`` per client) or ``grad_evals`` (K inner steps: ``rounds R K``; with ``nu`` an
    array ``(*lead, m)`` of the evaluations of :math:`\nabla\tilde h_i`, including the one that
    verifies (8)); ``sampled``.

    References: pFedMe (T Dinh et al., 2020), §3.2, Algorithm 1, eqs. (3), (6)-(8), Theorem 1.
    """
    f, m = check_objective(objective)
    xp = f.xp
    lam, eta, beta = positive(lam, "lam", f), positive(eta, "eta", f), positive(beta, "beta", f)
    R, rounds = count(R, "R"), count(rounds, "rounds")
    S = sample_size(S, m)
    size = minibatch_size(batch_size, f, replace=True)
    exact, K, inner_eta, nu = _inner(inner, inner_eta, nu, f)
    if personal not in PERSONAL:
        raise ValueError(f"personal must be one of {PERSONAL} (got {personal!r})")
    rng = generator(rng, S < m or size is not None, "S < N or batch_size is set")
    lead = lead_shape(
        f, lam, eta, beta, *(x for x in (inner_eta, nu) if x is not None and not isinstance(x, str))
    )
    f._lam(expand(lam, 1))  # nonconvex clients need lam > -mu_i
    w = point(w0, f, lead, "w0")
    lam1, lam2, eta2, beta1 = expand(lam, 1), expand(lam, 2), expand(eta, 2), expand(beta, 1)
    fixed = (
        (1 / (f.smoothness() + lam1))[..., None]
        if isinstance(inner_eta, str)
        else None
        if inner_eta is None
        else expand(inner_eta, 2)
    )
    W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
    gs, ls, thetas, picks = [w], [W], ([W] if personal == "inner" else []), []
    evals = xp.zeros(lead + (m,), dtype=xp.int64)
    rows = None if size is None else _valid_rows(f, lead)
    for t in range(rounds):
        W = xp.broadcast_to(w[..., None, :], lead + (m, f.dim))
        if personal == "certified":
            thetas.append(f.prox(W, lam1))
        for k in range(R):
            fk = f if size is None else _minibatch(f, rng, lead, size, rows)
            if exact and fk is not f and isinstance(fk, Quadratic):
                # a fresh mini-batch least squares: one linear solve, cheaper than its eigendecomposition
                eye = xp.eye(f.dim, dtype=f.dtype)
                theta = xp.linalg.solve(fk.A + lam2[..., None] * eye, (fk.b + lam2 * W)[..., None])[..., 0]
            elif exact:
                theta = fk.prox(W, lam1)
            else:
                step = fixed if fixed is not None else (1 / (fk.smoothness() + lam1))[..., None]
                theta, used = _inner_gd(fk, W, lam2, K, step, nu, lead)
                evals = evals + used
            W = W - eta2 * lam2 * (W - theta)
            check_diverged(xp, f, W, "pfedme", f"round {t + 1}, local step {k + 1}", "eta (times lam)")
        if personal == "inner":
            thetas.append(xp.broadcast_to(theta, lead + (m, f.dim)))
        if S < m:
            assert rng is not None  # required when S < N (generator above)
            idx = sample_clients(rng, lead, m, S)
            picks.append(idx)
            pick = xp.asarray(np.broadcast_to(idx[..., None], idx.shape + (f.dim,)))
            avg = xp.mean(xp.take_along_axis(W, pick, axis=-2), axis=-2)
        else:
            avg = xp.mean(W, axis=-2)
        w = (1 - beta1) * w + beta1 * avg
        check_diverged(xp, f, w, "pfedme", f"round {t + 1} (server step)", "beta")
        gs.append(w)
        ls.append(W)
    if personal == "certified":
        thetas.append(f.prox(xp.broadcast_to(w[..., None, :], lead + (m, f.dim)), lam1))
    w_hist = xp.stack(gs)
    grad_evals = 0 if exact else (rounds * R * K if nu is None else np.asarray(to_numpy(evals)))
    return History(
        w_global=w_hist,
        w_local=xp.stack(ls),
        theta=xp.stack(thetas) if thetas else None,
        rounds=rounds,
        local_steps=R,
        grad_evals=grad_evals,
        prox_evals=rounds * R if exact else 0,
        w_bar=_theorem1_average(f, w_hist[:-1, ...], lam, eta, lead),
        params={
            "lam": lam,
            "eta": eta,
            "beta": beta,
            "R": R,
            "S": S,
            "batch_size": size,
            "inner": inner,
            "inner_eta": inner_eta,
            "nu": nu,
            "personal": personal,
        },
        sampled=np.stack(picks) if picks else None,
    )


def _inner(
    inner: int | str, inner_eta: float | Array | str | None, nu: float | Array | None, f: Objective
) -> tuple[bool, int, Array | str | None, Array | None]:
    """``(exact, K, inner_eta, nu)`` from the ``inner`` options."""
    if isinstance(inner, str):
        if inner != "exact":
            raise ValueError(f"inner must be 'exact' or an int K >= 1 (got {inner!r})")
        for name, v in (("inner_eta", inner_eta), ("nu", nu)):
            if v is not None:
                raise TypeError(
                    f"{name} applies only to an inner gradient solve (inner=K); got inner='exact'"
                )
        return True, 0, None, None
    K = count(inner, "inner")
    if isinstance(inner_eta, str) and inner_eta != "client":
        raise ValueError(f"inner_eta must be a positive number or array, or 'client' (got {inner_eta!r})")
    return (
        False,
        K,
        inner_eta if inner_eta is None or isinstance(inner_eta, str) else positive(inner_eta, "inner_eta", f),
        None if nu is None else positive(nu, "nu", f),
    )


def _valid_rows(f: Objective, lead: tuple[int, ...]) -> Any:
    """``(nvalid (*lead, m), order (*lead, m, n) or None)``: each client's count of rows of positive
    weight and their indices first (None when they already are the first rows: padding after); for a
    ragged objective a list of those per size bucket (read one by one: no padded layout formed);
    None for objectives without samples."""
    if isinstance(f, RaggedSamples):
        parts, outer = f.parts, f._outer
    elif type(f) in (LeastSquares, Logistic, Multinomial):
        parts, outer = (f,), tuple(lead)
    else:
        return None
    out = [
        valid_rows(p.weights, tuple(outer) + tuple(p.batch_shape[-1:]) + (p.weights.shape[-1],))[1:]
        for p in parts
    ]
    return out if isinstance(f, RaggedSamples) else out[0]


def _minibatch(
    f: Objective, rng: np.random.Generator | None, lead: tuple[int, ...], size: int, rows: Any
) -> Objective:
    r"""The mini-batch objective ``(*lead, m)``: ``size`` rows drawn i.i.d. uniformly from each
    client's rows of positive weight with one draw ``rng.random((*lead, m, size))`` (the draw and
    its map to the k-th valid row are :func:`~moreau.fl._minibatches.sample_counts`'s, so the counts of
    the gathered rows are its counts), the drawn rows gathered into a new objective of the model
    class with unit weights (:func:`~moreau.fl._common.gathered`: LeastSquares, Logistic,
    Multinomial, and from the size buckets of their ragged forms; ``rows`` from :func:`_valid_rows`);
    any other objective gets the counts as sample weights."""
    assert rng is not None  # a mini-batch draw: rng is required with batch_size
    if rows is None:
        return batched_objective(f, sample_counts(rng, f, lead, size, replace=True))
    u = rng.random(tuple(lead) + (f.batch_shape[-1], size))
    if isinstance(f, RaggedSamples):
        lay = f.layout
        parts = lay.split(u, 1, f._outer)
    else:
        lay, parts, rows = None, [u], [rows]
    idx = []
    for ub, (nvalid, order) in zip(parts, rows, strict=True):
        k = np.minimum((ub * nvalid[..., None]).astype(np.int64), nvalid[..., None] - 1)  # k-th valid sample
        idx.append(
            k
            if order is None
            else np.take_along_axis(np.broadcast_to(order, k.shape[:-1] + order.shape[-1:]), k, axis=-1)
        )
    return gathered(f, idx[0] if lay is None else lay.merge(idx, 1))  # validated rows: no checks repeated


def _inner_gd(
    fk: Objective, W: Array, lam2: Array, K: int, step: Array, nu: Array | None, lead: tuple[int, ...]
) -> tuple[Array, Array]:
    r"""K gradient steps of size ``step`` on :math:`\tilde h_i` from θ = W (stopping per client on
    (8) with ``nu``)."""
    xp = fk.xp
    theta = W
    used = xp.zeros(lead + (fk.batch_shape[-1],), dtype=xp.int64)
    active = xp.ones(lead + (fk.batch_shape[-1],), dtype=xp.bool)
    grad, own = gradient(fk)
    # numpy, built-in model, every client stepping: theta - W formed in one buffer of this call and
    # theta updated in place after the first step (the same operations on the same numbers: the
    # same bits, two arrays of (m, D) fewer per step)
    mine = nu is None and own and isinstance(W, np.ndarray)
    diff = None
    for _ in range(K):
        diff = theta - W if diff is None else np.subtract(theta, W, out=diff)
        g = added(grad(theta), scaled(lam2, diff, True), own)
        diff = diff if mine and diff.shape == g.shape else None
        if nu is None:  # every client steps (the products formed in g: the same numbers)
            if mine and theta is not W and theta.shape == g.shape:
                theta -= scaled(step, g, True)
            else:
                theta = theta - scaled(step, g, True)
            continue
        used = used + xp.astype(active, xp.int64)
        active = active & (xp.vecdot(g, g) > expand(nu, 1))
        if not bool(xp.any(active)):
            return theta, used
        theta = theta - xp.where(active[..., None], step * g, xp.zeros_like(g))
    if nu is None:  # every client took the K steps: counted once, not per step
        return theta, used + K
    if nu is not None:
        g = fk.grad(theta) + lam2 * (theta - W)
        used = used + xp.astype(active, xp.int64)
        active = active & (xp.vecdot(g, g) > expand(nu, 1))
        if bool(xp.any(active)):
            worst = float(xp.max(xp.vecdot(g, g)))
            raise RuntimeError(
                f"pfedme: inner=K={K} gradient steps do not reach accuracy (8) "
                f"||grad h||^2 <= nu for every client (worst {worst:.3g}); increase inner or nu"
            )
    return theta, used


def _theorem1_average(f: Objective, ws: Array, lam: Array, eta: Array, lead: tuple[int, ...]) -> Array:
    r"""Theorem 1's :math:`\bar w_T`: weights :math:`q^{T-1-t}`, q = 1 - ημ_F/2 (normalised α_t)."""
    xp = f.xp
    T = ws.shape[0]
    mu = xp.min(xp.broadcast_to(f.strong_convexity(), f.batch_shape), axis=-1)
    mu_F = lam * mu / (lam + mu)
    q = xp.broadcast_to(1 - eta * mu_F / 2, lead)
    ok = (mu > 0) & (q > 0)
    qs = xp.where(ok, q, xp.ones_like(q))
    wts = xp.stack([qs ** (T - 1 - t) for t in range(T)])  # (T, *lead): a loop over rounds
    avg = xp.sum(wts[..., None] * ws, axis=0) / xp.sum(wts, axis=0)[..., None]
    nan = xp.full(avg.shape, float("nan"), dtype=f.dtype)
    return xp.where(xp.broadcast_to(ok, lead)[..., None], avg, nan)
