r"""PerMFL, personalised multi-tier federated learning (Banerjee, Dadras, Yurtsever, Bhuyan,
ICONIP 2024; Paper II of the Dadras thesis, §4.2), and the exact optimum of its objective.

The objective, thesis eq. (4.3): teams i = 1..M of devices j = 1..N_i,

.. math::
    \min_x \min_{w_i} \min_{\theta_{ij}} \frac1M\sum_{i=1}^M\frac1{N_i}\sum_{j=1}^{N_i}
        \Big(f_{ij}(\theta_{ij}) + \tfrac\lambda2\|\theta_{ij} - w_i\|^2
        + \tfrac\gamma2\|w_i - x\|^2\Big),

equivalently :math:`x^* = \arg\min_x G(x)`, :math:`G = \frac1M\sum_i G_i`, :math:`G_i` the Moreau
envelope (parameter γ) of the team objective :math:`F_i = \frac1{N_i}\sum_j F_{ij}`,
:math:`F_{ij}` the envelope (parameter λ) of :math:`f_{ij}`; :math:`w_i^* = \mathrm{prox}_{F_i/\gamma}(x^*)`,
:math:`\theta_{ij}^* = \mathrm{prox}_{f_{ij}/\lambda}(w_i^*)`.  λ is ``lam`` (device ↔ team), γ
``gamma`` (team ↔ global).  The devices are the clients of ONE batched objective (batch
``(..., m)``); ``teams`` ``(m,)`` gives each device's team (ragged team sizes).

References: Dadras thesis, §4.2, eq. (4.3); Paper II (arXiv 2407.14251), Algorithm 1 as the
authors' code sourasb05/PerMFL_1 implements it (the paper's text was not available here: see
analysis/permfl/__init__.py for what is reconstructed and how the code differs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np

from .._backend import to_numpy
from .._objective import Objective
from .._quadratic import Quadratic
from .._typing import Array
from ._common import (
    History,
    check_diverged,
    check_objective,
    count,
    expand,
    generator,
    lead_shape,
    minibatch_size,
    point,
    positive,
    sample_clients,
    sample_size,
)
from ._newton import NEWTON_RTOL, minimize
from ._pfedme import _minibatch, _valid_rows

__all__ = ["PerMFLHistory", "permfl", "permfl_optimum", "team_matrix"]


@dataclass(frozen=True)
class PerMFLHistory(History):
    r""":class:`History` of :func:`permfl` with the team models ``w_team`` ``(rounds+1, *lead, M, d)``
    and, with device sampling, ``sampled_devices`` ``(rounds, K, *lead, m)`` (host bool: the devices
    that ran in each team round); ``sampled`` holds the sampled teams ``(rounds, *lead, S)``.

    :meth:`curves` gives the per-round losses of the three models the authors' code evaluates."""

    w_team: Array | None = None
    sampled_devices: np.ndarray | None = None

    def curves(self, objective: Objective) -> dict[str, np.ndarray]:
        r"""Per-round losses ``{"PM", "TM", "GM"}``, host arrays ``(rounds+1, *lead)`` (index t: after t
        rounds, 0: the start), each with eq. (4.3)'s weights :math:`1/(M N_i)`:
        :math:`\frac1M\sum_i\frac1{N_i}\sum_j f_{ij}(z_{ij}^t)` at the personalised device models
        (PM, :math:`z_{ij} = \theta_{ij}^t`), at the team models (TM, :math:`z_{ij} = w_i^t`) and at the
        global model (GM, :math:`z_{ij} = x^t`); ``objective`` is the one the run used (batch
        ``(..., m)``)."""
        f, m = check_objective(objective)
        assert self.theta is not None and self.w_team is not None and self.w_global is not None
        teams = np.asarray(self.params["teams"])
        E, N = team_matrix(teams, m)
        wts = f.xp.asarray((E / N).sum(axis=1) / N.size, dtype=f.dtype)  # (m,): 1/(M N_i)
        to_dev = f.xp.asarray(E, dtype=f.dtype)
        out = {}
        for name, Z in (
            ("PM", self.theta),
            ("TM", to_dev @ self.w_team),
            ("GM", self.w_global[..., None, :] + f.xp.zeros_like(self.theta)),
        ):
            out[name] = np.asarray(to_numpy(f.xp.sum(wts * f.value(Z), axis=-1)), dtype=float)
        return out


def team_matrix(teams: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    r"""``(E (m, M), N (M,))`` host arrays: the one-hot membership of each device and the team sizes
    :math:`N_i`; ``teams`` ``(m,)`` non-negative ints naming teams 0..M-1, each with a device."""
    t = np.asarray(teams)
    if t.ndim != 1 or t.shape[0] != m:
        raise ValueError(
            f"teams must have shape (m,) = ({m},), one team index per device (got shape {t.shape})"
        )
    if t.size and not (np.issubdtype(t.dtype, np.integer) or np.all(np.asarray(t, float) == np.round(t))):
        raise TypeError(f"teams must hold integer team indices (got dtype {t.dtype})")
    t = t.astype(np.int64)
    if t.min() < 0:
        raise ValueError(f"teams must be >= 0 (got {int(t.min())})")
    N = np.bincount(t)
    if np.any(N == 0):
        raise ValueError(
            f"every team 0..{N.size - 1} needs a device: team {int(np.argmin(N))} has none "
            "(number the teams 0..M-1)"
        )
    return (t[:, None] == np.arange(N.size)).astype(float), N


def permfl(
    objective: Objective,
    teams: Any,
    *,
    lam: float | Array,
    gamma: float | Array,
    alpha: float | Array | None = None,
    eta: float | Array,
    beta: float | Array,
    K: int,
    L: int | str,
    rounds: int,
    lam_device: float | Array | None = None,
    batch_size: int | None = None,
    S: int | None = None,
    devices: int | None = None,
    x0: Array | None = None,
    rng: np.random.Generator | int | None = None,
) -> PerMFLHistory:
    r"""PerMFL (Algorithm 1 of Paper II): local, team and global updates of objective (4.3).

    Global round t = 0..T-1 (``rounds``): every team starts from :math:`w_i^{t,0} = x^t`; team
    round k = 0..K-1 (``K``): every device starts from :math:`\theta_{ij}^{t,k,0} = w_i^{t,k}` and
    takes L (``L``) steps

    .. math::
        \theta^{t,k,l+1}_{ij} &= \theta^{t,k,l}_{ij} - \alpha\big(\nabla\tilde f_{ij}(\theta^{t,k,l}_{ij})
            + \lambda_d(\theta^{t,k,l}_{ij} - w_i^{t,k})\big),\\
        w_i^{t,k+1} &= w_i^{t,k} - \eta\big(\lambda(w_i^{t,k} - \bar\theta_i^{t,k})
            + \gamma(w_i^{t,k} - x^t)\big),\quad \bar\theta_i^{t,k} = \tfrac1{N_i}\textstyle\sum_j\theta^{t,k,L}_{ij},\\
        x^{t+1} &= x^t - \beta\gamma\big(x^t - \bar w^t\big),\quad \bar w^t = \tfrac1M\textstyle\sum_i w_i^{t,K}:

    gradient steps on the device problem :math:`f_{ij} + \frac{\lambda_d}2\|\cdot - w_i\|^2`, on the
    team problem :math:`F_i + \frac\gamma2\|\cdot - x^t\|^2` (:math:`\nabla F_i(w) \approx
    \lambda(w - \bar\theta_i)`) and on G (:math:`\nabla G_i(x) = \gamma(x - \hat w_i(x))`).  α is
    ``alpha``, η ``eta``, β ``beta``, λ ``lam``, γ ``gamma``; :math:`\lambda_d` is ``lam_device``
    (default λ, as eq. (4.3); the authors' code passes its local step count L here, an
    argument shift: ``lam_device=L`` reproduces it).  ``L="exact"`` replaces the L steps by the
    exact device prox :math:`\theta_{ij} = \mathrm{prox}_{f_{ij}/\lambda_d}(w_i^{t,k})` (then
    ``alpha`` must be None).  ``batch_size``: :math:`\tilde f_{ij}` is a fresh mini-batch per
    local step, drawn i.i.d. with replacement (``moreau.fl.pfedme``'s draw); None: full batches.

    Sampling (default: every team and device takes part in every round): ``S`` teams per global round,
    uniformly without replacement (:math:`\mathcal S_t`); only they run their K team rounds, and the
    global step averages them, :math:`\bar w^t = \frac1S\sum_{i\in\mathcal S_t} w_i^{t,K}` (an
    unbiased estimate of the mean over teams; a team not sampled keeps its last model in ``w_team``);
    ``devices`` per team and team round, uniformly without replacement within the team (a team
    smaller than ``devices`` runs all its devices), and the team step uses their mean,
    :math:`\bar\theta_i^{t,k} = \frac1{|\mathcal D_i^{t,k}|}\sum_{j\in\mathcal D_i^{t,k}}\theta^{t,k,L}_{ij}`
    (a device not sampled keeps its last personalised model in ``theta``).  The authors' code instead
    averages all M team models (stale ones included) with 1/M and divides θ̄ by the number of devices
    selected (see ``analysis/permfl``).

    Shapes: ``objective`` batch ``(..., m)``, ``teams`` ``(m,)``; the parameters are scalars or
    arrays broadcasting against the trial shape ``(...)``; ``x0`` ``(..., d)`` (default 0).
    Randomness (``rng``: a Generator or int seed, required with ``batch_size``, S < M or
    ``devices``), in the order of the loops above: per global round ``rng.random((*lead, M))`` (S < M:
    the S teams of smallest key), per team round ``rng.random((*lead, m))`` (``devices``: in each team
    its devices of smallest key), per local step ``rng.random((*lead, m, batch_size))``; all drawn
    for every team or device (those not sampled are discarded), so a batched run equals a loop over
    trials that slices the same draws.

    Returns a :class:`PerMFLHistory`: ``w_global`` ``(rounds+1, *lead, d)`` (:math:`x^t`),
    ``w_team`` ``(rounds+1, *lead, M, d)`` (:math:`w_i^{t,K}` at index t+1, x0 at 0), ``theta``
    ``(rounds+1, *lead, m, d)`` (the personalised device models of round t's last team round
    at index t+1, x0 at 0), ``w_local`` None, ``local_steps`` = K L device steps per global round
    (0 with ``L="exact"``), ``grad_evals`` = rounds K L per device, ``prox_evals`` = rounds K with
    ``L="exact"`` (each a host array ``(*lead, m)`` of the device's own count when teams or devices
    are sampled), ``sampled`` and ``sampled_devices`` (see :class:`PerMFLHistory`); the per-round
    losses of the personalised, team and global models: :meth:`PerMFLHistory.curves`.

    References: Paper II (arXiv 2407.14251), Algorithm 1 (update rules as the authors' code
    serverPerMFL.py / userPerMFL.py computes them); Dadras thesis eq. (4.3).
    """
    f, m = check_objective(objective)
    xp = f.xp
    E, N = team_matrix(teams, m)
    Mt = N.size
    lam, gamma, eta, beta = (
        positive(v, n, f) for v, n in ((lam, "lam"), (gamma, "gamma"), (eta, "eta"), (beta, "beta"))
    )
    lam_d = lam if lam_device is None else positive(lam_device, "lam_device", f)
    K, rounds = count(K, "K"), count(rounds, "rounds")
    exact = isinstance(L, str)
    steps = 0  # device steps per team round (L; none with L='exact')
    if exact:
        if L != "exact":
            raise ValueError(f"L must be an int >= 1 or 'exact' (got {L!r})")
        if alpha is not None or batch_size is not None:
            raise TypeError(
                "alpha and batch_size apply to the L local gradient steps; L='exact' takes neither"
            )
    else:
        L = steps = count(L, "L")
        if alpha is None:
            raise TypeError("alpha (the device step size) is required with L local steps")
        alpha = positive(alpha, "alpha", f)
    size = minibatch_size(batch_size, f, replace=True)
    S = sample_size(S, Mt, "S")
    D = None if devices is None else count(devices, "devices")
    sub_teams, sub_dev = S < Mt, D is not None and D < int(N.max())
    rng = generator(
        rng, size is not None or sub_teams or sub_dev, "batch_size is set, S < M teams or devices is set"
    )
    lead = lead_shape(f, lam, gamma, eta, beta, lam_d, *(() if exact else (alpha,)))
    f._lam(expand(lam_d, 1), "lam_device" if lam_device is not None else "lam")
    x = point(x0, f, lead, "x0")
    to_dev = xp.asarray(E, dtype=f.dtype)  # (m, M): team model at each device
    to_team = xp.asarray((E / N).T, dtype=f.dtype)  # (M, m): team means
    lamd1, lamd2, lam2, gam1, gam2 = (
        expand(lam_d, 1),
        expand(lam_d, 2),
        expand(lam, 2),
        expand(gamma, 1),
        expand(gamma, 2),
    )
    eta2, beta1 = expand(eta, 2), expand(beta, 1)
    alpha2 = None if exact else expand(alpha, 2)
    rows = None if size is None else _valid_rows(f, lead)
    xs, ws, thetas = (
        [x],
        [xp.broadcast_to(x[..., None, :], lead + (Mt, f.dim))],
        [xp.broadcast_to(x[..., None, :], lead + (m, f.dim))],
    )
    team_of = np.argmax(E, axis=1)
    W_rec, theta_rec = ws[0], thetas[0]
    picks, dev_masks = [], []
    evals = np.zeros(lead + (m,), dtype=int)
    for t in range(rounds):
        if sub_teams:
            assert rng is not None  # required with S < M (generator above)
            tidx = sample_clients(rng, lead, Mt, S)
            picks.append(tidx)
            t_on = np.zeros(lead + (Mt,), dtype=bool)
            np.put_along_axis(t_on, tidx, True, axis=-1)
        else:
            t_on = np.ones(lead + (Mt,), dtype=bool)
        W = xp.broadcast_to(x[..., None, :], lead + (Mt, f.dim))
        round_masks = []
        for k in range(K):
            d_on = t_on[..., team_of]  # (*lead, m): the devices of the sampled teams
            if sub_dev:
                assert rng is not None and D is not None  # required with devices (generator above)
                d_on = d_on & _pick_devices(rng.random(lead + (m,)), team_of, N, D)
            round_masks.append(d_on)
            Wd = to_dev @ W
            if exact:
                theta = f.prox(Wd, lamd1)
            else:
                assert alpha2 is not None  # L steps: alpha is required (checked above)
                theta = Wd
                for _ in range(steps):
                    fk = f if size is None else _minibatch(f, rng, lead, size, rows)
                    theta = theta - alpha2 * (fk.grad(theta) + lamd2 * (theta - Wd))
                check_diverged(
                    xp, f, theta, "permfl", f"round {t + 1}, team round {k + 1} (device steps)", "alpha"
                )
            if sub_dev or sub_teams:
                on = xp.asarray(d_on, dtype=f.dtype)
                num = xp.asarray(E.T, dtype=f.dtype) @ (on[..., None] * theta)
                den = xp.maximum(on @ xp.asarray(E, dtype=f.dtype), xp.asarray(1.0, dtype=f.dtype))
                tbar = num / den[..., None]
                theta_rec = xp.where(xp.asarray(d_on)[..., None], theta, theta_rec)
            else:
                tbar = to_team @ theta
                theta_rec = theta
            W = W - eta2 * (lam2 * (W - tbar) + gam2 * (W - x[..., None, :]))
            check_diverged(xp, f, W, "permfl", f"round {t + 1}, team round {k + 1} (team step)", "eta")
            evals += d_on
        if sub_teams:
            ton = xp.asarray(t_on)[..., None]
            W_rec = xp.where(ton, W, W_rec)
            wbar = xp.sum(xp.asarray(t_on, dtype=f.dtype)[..., None] * W, axis=-2) / S
        else:
            W_rec, wbar = W, xp.mean(W, axis=-2)
        x = x - beta1 * gam1 * (x - wbar)
        check_diverged(xp, f, x, "permfl", f"round {t + 1} (global step)", "beta (times gamma)")
        xs.append(x)
        ws.append(W_rec)
        thetas.append(theta_rec)
        if sub_dev:
            dev_masks.append(np.stack(round_masks))
    sampled = sub_teams or sub_dev
    return PerMFLHistory(
        w_global=xp.stack(xs),
        w_local=None,
        theta=xp.stack(thetas),
        w_team=xp.stack(ws),
        rounds=rounds,
        local_steps=0 if exact else K * steps,
        grad_evals=(0 if exact else evals * steps) if sampled else (0 if exact else rounds * K * steps),
        prox_evals=(evals if exact else 0) if sampled else (rounds * K if exact else 0),
        sampled=np.stack(picks) if picks else None,
        sampled_devices=np.stack(dev_masks) if dev_masks else None,
        params={
            "lam": lam,
            "gamma": gamma,
            "alpha": alpha,
            "eta": eta,
            "beta": beta,
            "K": K,
            "L": L,
            "lam_device": lam_d,
            "batch_size": size,
            "S": S,
            "devices": D,
            "teams": team_of,
        },
    )


def _pick_devices(keys: np.ndarray, team_of: np.ndarray, N: np.ndarray, D: int) -> np.ndarray:
    """Host bool ``(*lead, m)``: in every team the ``min(D, N_i)`` devices of smallest ``keys``."""
    out = np.zeros(keys.shape, dtype=bool)
    for i in range(N.size):  # over teams (host, small): the devices of each team ranked by their keys
        members = np.flatnonzero(team_of == i)
        if N[i] <= D:
            out[..., members] = True
            continue
        chosen = np.argsort(keys[..., members], axis=-1)[..., :D]
        sub = np.zeros(keys.shape[:-1] + (members.size,), dtype=bool)
        np.put_along_axis(sub, chosen, True, axis=-1)
        out[..., members] = sub
    return out


@overload
def permfl_optimum(
    objective: Objective,
    teams: Any,
    lam: float | Array,
    gamma: float | Array,
    *,
    return_info: Literal[False] = ...,
) -> tuple[Array, Array, Array]: ...
@overload
def permfl_optimum(
    objective: Objective, teams: Any, lam: float | Array, gamma: float | Array, *, return_info: Literal[True]
) -> tuple[Array, Array, Array, dict[str, Any]]: ...
@overload
def permfl_optimum(
    objective: Objective, teams: Any, lam: float | Array, gamma: float | Array, *, return_info: bool
) -> tuple[Array, Array, Array] | tuple[Array, Array, Array, dict[str, Any]]: ...
def permfl_optimum(
    objective: Objective, teams: Any, lam: float | Array, gamma: float | Array, *, return_info: bool = False
) -> tuple[Array, Array, Array] | tuple[Array, Array, Array, dict[str, Any]]:
    r"""The exact solution :math:`(x^*, w_i^*, \theta_{ij}^*)` of thesis eq. (4.3).

    Quadratics :math:`f_{ij}(\theta) = \frac12\theta^\top A_{ij}\theta - b_{ij}^\top\theta`, through
    the nested envelopes: :math:`\nabla F_{ij}(w) = H_{ij}w - g_{ij}`, :math:`H_{ij} =
    V\,\mathrm{diag}(\lambda a/(\lambda+a))V^\top`, :math:`g_{ij} = V\,\mathrm{diag}(\lambda/(\lambda+a))V^\top b_{ij}`
    (the devices' cached eigendecompositions: a λ-sweep reuses them); :math:`B_i = \frac1{N_i}\sum_j
    H_{ij} = U\,\mathrm{diag}(\beta)U^\top`, :math:`c_i = \frac1{N_i}\sum_j g_{ij}`;
    :math:`\nabla G_i(x) = \gamma(x - \hat w_i(x))`, :math:`\hat w_i(x) = (B_i + \gamma I)^{-1}(\gamma x + c_i)`,
    so :math:`\nabla^2 G_i = U\,\mathrm{diag}(\gamma\beta/(\gamma+\beta))U^\top` (one eigendecomposition
    of :math:`B_i` per λ: a γ-sweep reuses it) and :math:`x^*` solves one d×d system; then
    :math:`w_i^* = \hat w_i(x^*)`, :math:`\theta_{ij}^* = (A_{ij} + \lambda I)^{-1}(b_{ij} + \lambda w_i^*)`.
    Nonconvex devices are allowed where every level is strongly convex (λ > −a_min, B_i + γI ≻ 0,
    ∇²G ≻ 0; ``ValueError`` otherwise).

    Other objectives (logistic, multinomial): damped Newton (``moreau.fl._newton.minimize``) on the
    stacked variables z = (x, w, θ) of (4.3), dense Hessian (size ((1+M+m)d)², so small problems
    only), stopped when :math:`\|\nabla\Phi(z)\|/\mu_\Phi \le \max(10^{-12}(1+\|z\|), 64\,\epsilon\,
    s/\mu_\Phi)` (s the gradient's rounding scale), :math:`\mu_\Phi` the smallest eigenvalue of the
    coupling matrix with every :math:`\nabla^2 f_{ij}` replaced by its lower curvature bound
    (a lower bound on Φ's modulus: Φ's Hessian dominates it).  ``error_estimate`` =
    :math:`\|\nabla\Phi(z)\|/\mu_\Phi` is an *estimate* of :math:`\|z - z^*\|`, not a
    certificate: the rounding of the evaluated gradient and of that eigenvalue is not bounded (no
    a-priori rounding analysis, unlike :func:`fedprox_optimum`'s ``error_bound``); needs every f_ij
    strongly convex.

    Shapes: ``objective`` batch ``(..., m)``, ``teams`` ``(m,)``, ``lam`` and ``gamma`` scalars or
    arrays broadcasting against ``(...)`` (``(S, 1)`` over trials ``(T,)``: a sweep).  Returns
    ``x`` ``(*lead, d)``, ``w`` ``(*lead, M, d)``, ``theta`` ``(*lead, m, d)``; with
    ``return_info=True`` also ``{"error_estimate", "mu", "iterations"}`` (host arrays; closed form:
    estimate NaN, 0 iterations).

    References: Dadras thesis, eq. (4.3); moreau.envelope (nested envelopes).
    """
    f, m = check_objective(objective)
    E, N = team_matrix(teams, m)
    lam, gamma = positive(lam, "lam", f), positive(gamma, "gamma", f)
    f._lam(expand(lam, 1))
    lead = lead_shape(f, lam, gamma)
    if isinstance(f, Quadratic):
        x, w, theta = _quadratic_optimum(f, E, N, lam, gamma, lead)
        info = {"error_estimate": np.full(lead, np.nan), "mu": None, "iterations": np.zeros(lead, dtype=int)}
    else:
        x, w, theta, info = _newton_optimum(f, E, N, lam, gamma, lead)
    return (x, w, theta, info) if return_info else (x, w, theta)


def _quadratic_optimum(
    f: Quadratic, E: np.ndarray, N: np.ndarray, lam: Array, gamma: Array, lead: tuple[int, ...]
) -> tuple[Array, Array, Array]:
    xp = f.xp
    a, V = f._eigh  # (..., m, d), (..., m, d, d): cached
    Vt = xp.matrix_transpose(V)
    lam3 = expand(lam, 2)
    to_team = xp.asarray((E / N).T, dtype=f.dtype)
    H = (V * (lam3 * a / (lam3 + a))[..., None, :]) @ Vt  # device envelope Hessians (*, m, d, d)
    g = _mv(V, lam3 / (lam3 + a) * f._bt)  # (*, m, d)
    d = f.dim
    B = xp.reshape(
        to_team @ xp.reshape(H, H.shape[:-2] + (d * d,)), H.shape[:-3] + (E.shape[1], d, d)
    )  # teams'
    c = to_team @ g
    beta_i, U = xp.linalg.eigh(
        (B + xp.matrix_transpose(B)) / 2
    )  # before gamma enters: a gamma sweep reuses it
    gam3 = expand(gamma, 2)
    if not bool(xp.all(beta_i + gam3 > 0)):
        raise ValueError(
            "permfl_optimum: a team problem F_i + (gamma/2)||w - x||^2 is not strongly convex "
            f"(smallest eigenvalue of its Hessian {float(xp.min(beta_i + gam3)):.3g}); raise gamma"
        )
    Ut = xp.matrix_transpose(U)
    HG = xp.mean((U * (gam3 * beta_i / (gam3 + beta_i))[..., None, :]) @ Ut, axis=-3)
    r = xp.mean(_mv(U, gam3 / (gam3 + beta_i) * _mv(Ut, c)), axis=-2)
    low = xp.linalg.eigvalsh(HG)[..., 0]
    if not bool(xp.all(low > 0)):
        raise ValueError(
            f"permfl_optimum: G = mean_i G_i is not strongly convex (smallest eigenvalue of its Hessian "
            f"{float(xp.min(low)):.3g}): (4.3) has no unique minimiser"
        )
    x = xp.linalg.solve(HG, r[..., None])[..., 0]
    x = xp.broadcast_to(x, lead + (f.dim,))
    w = _mv(U, _mv(Ut, gam3 * x[..., None, :] + c) / (beta_i + gam3))
    W = xp.asarray(E, dtype=f.dtype) @ w
    theta = _mv(V, (f._bt + lam3 * _mv(Vt, W)) / (a + lam3))
    return x, w, xp.broadcast_to(theta, lead + theta.shape[-2:])


def _mv(M: Array, v: Array) -> Array:
    return (M @ v[..., None])[..., 0]


def _coupling(
    E: np.ndarray, N: np.ndarray, lam: Any, gamma: Any, curv: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""The (1+M+m)-square matrix of Φ's Hessian per coordinate with :math:`\nabla^2 f_{ij}` replaced by
    ``curv`` ``(*, m)``: order (x, w_1..w_M, θ_1..θ_m), weights :math:`\pi_{ij} = 1/(M N_i)` (numpy)."""
    m, M = E.shape
    pi = (E / N).sum(axis=1) / M  # (m,)
    lam, gamma = np.asarray(lam, float)[..., None, None], np.asarray(gamma, float)[..., None, None]
    Cpl = np.zeros(np.broadcast_shapes(lam.shape[:-2], gamma.shape[:-2], curv.shape[:-1]) + (1 + M + m,) * 2)
    Cpl[..., 0, 0] = gamma[..., 0, 0]
    Cpl[..., 0, 1 : 1 + M] = Cpl[..., 1 : 1 + M, 0] = -gamma[..., 0] / M
    Cpl[..., 1 : 1 + M, 1 : 1 + M] = np.eye(M) * (lam + gamma) / M
    Cpl[..., 1 : 1 + M, 1 + M :] = -lam * (E * pi[:, None]).T
    Cpl[..., 1 + M :, 1 : 1 + M] = -lam * (E * pi[:, None])
    Cpl[..., 1 + M :, 1 + M :] = np.eye(m) * pi * lam + np.eye(m) * (pi * curv)[..., None, :]
    return Cpl, pi


def _newton_optimum(
    f: Objective, E: np.ndarray, N: np.ndarray, lam: Array, gamma: Array, lead: tuple[int, ...]
) -> tuple[Array, Array, Array, dict[str, Any]]:
    xp = f.xp
    m, M, d = E.shape[0], N.size, f.dim
    n0 = 1 + M + m
    mu_i = np.broadcast_to(np.asarray(to_numpy(f.strong_convexity()), float), tuple(f.batch_shape))
    if not np.all(mu_i > 0):
        raise ValueError(
            f"permfl_optimum needs every device strongly convex for its Newton solve (smallest "
            f"modulus {float(mu_i.min()):.3g}); add a ridge mu > 0"
        )
    Cpl0, pi = _coupling(E, N, to_numpy(lam), to_numpy(gamma), np.zeros(mu_i.shape))
    low = np.asarray(np.linalg.eigvalsh(_coupling(E, N, to_numpy(lam), to_numpy(gamma), mu_i)[0]))[..., 0]
    mu_phi = np.broadcast_to(low * (1 - 1e-12) - 4 * n0 * np.finfo(float).eps * np.abs(Cpl0).max(), lead)
    if not np.all(mu_phi > 0):
        raise ValueError(
            f"permfl_optimum cannot certify that (4.3) is strongly convex (modulus {mu_phi.min():.3g})"
        )
    mu_x = xp.asarray(mu_phi, dtype=f.dtype)
    kron = np.reshape(
        Cpl0[..., :, None, :, None] * np.eye(d)[None, :, None, :], Cpl0.shape[:-2] + (n0 * d,) * 2
    )
    big = xp.asarray(np.broadcast_to(kron, lead + (n0 * d,) * 2), dtype=f.dtype)
    pix = xp.asarray(pi, dtype=f.dtype)
    eps = float(xp.finfo(f.dtype).eps)
    eye_m = xp.eye(m, dtype=f.dtype)

    def split(z: Array) -> tuple[Array, Array, Array]:
        return (
            z[..., :d],
            xp.reshape(z[..., d : (1 + M) * d], lead + (M, d)),
            xp.reshape(z[..., (1 + M) * d :], lead + (m, d)),
        )

    def state(z: Array) -> tuple[Array, Array, Array, Array, None]:
        _, _, th = split(z)
        quad = big @ z[..., None]
        val = xp.vecdot(z, quad[..., 0]) / 2 + xp.sum(pix * f.value(th), axis=-1)
        gf = xp.reshape(pix[:, None] * f.grad(th), lead + (m * d,))
        g = quad[..., 0] + xp.concat([xp.zeros(lead + ((1 + M) * d,), dtype=f.dtype), gf], axis=-1)
        gn = xp.linalg.vector_norm(g, axis=-1)
        scale = xp.sum(pix * f._grad_error_scale(th), axis=-1) + xp.max(
            xp.abs(big), axis=(-2, -1)
        ) * xp.linalg.vector_norm(z, axis=-1)
        tol = xp.maximum(NEWTON_RTOL * (1 + xp.linalg.vector_norm(z, axis=-1)), 64 * eps * scale / mu_x)
        return val, g, gn / mu_x, tol, None

    def hess(z: Array, aux: Any) -> Array:
        _, _, th = split(z)
        Hd = pix[:, None, None] * f.hess(th)  # (*, m, d, d), block diagonal below
        bd = xp.reshape(Hd[..., :, :, None, :] * eye_m[:, None, :, None], lead + (m * d, m * d))
        pad = xp.zeros(lead + ((1 + M) * d, n0 * d), dtype=f.dtype)
        left = xp.zeros(lead + (m * d, (1 + M) * d), dtype=f.dtype)
        return big + xp.concat([pad, xp.concat([left, bd], axis=-1)], axis=-2)

    z, bound, its = minimize(
        state, hess, xp.zeros(lead + (n0 * d,), dtype=f.dtype), f.dtype, xp=xp, what="permfl_optimum"
    )
    x, w, th = split(z)
    return (
        x,
        w,
        th,
        {
            "error_estimate": np.asarray(to_numpy(bound)),
            "mu": mu_phi,
            "iterations": np.asarray(to_numpy(its)),
        },
    )
