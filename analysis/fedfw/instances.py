r"""Federated quadratic clients for the FedFW checkers, and what the checks compute from a run.

A batch (numpy, leading axis = instance):

* ``A`` ``(T, m, d, d)``, ``b`` ``(T, m, d)``: client i's :math:`f_i(x) = \tfrac12 x^\top A_i x - b_i^\top x`;
  ``L`` ``(T,)`` = :math:`\max_i \max_k |a_{ik}|` (every f_i is L-smooth, exact from the spectra);
* ``set`` ``(T,)``: the constraint, 0 the box :math:`[-h, h]`, 1 the ℓ1 ball, 2 the Euclidean ball,
  3 the simplex :math:`\{x \ge 0, \sum x = r\}`, ``h`` ``(T, d)`` the box's half-widths (r = h_1
  for the others, stored as h = r(1, ..., 1));
* ``x0`` ``(T, d)``: :math:`\bar x^1` (the set's centre, or with ``start="inside"`` a point drawn
  inside the set off its centre: :func:`inside_points`), ``lam0`` ``(T,)``: λ0.

Clients are heterogeneous: client i's unconstrained stationary point :math:`z_i` is spread around a
common centre, so the clients disagree and the consensus constraint binds (the penalty's bias
:math:`\|y^*\|/\lambda_t` is what makes the printed rates tight).  λ0 is set to the problem's own
scale, :math:`\lambda_0 = u\,(L + G/D)/m` with u log-uniform in [1/2, 2] and G a bound on
:math:`\max_i\|\nabla f_i\|` over the set: a λ0 far below that scale leaves the run in a
pre-asymptotic regime for thousands of rounds (the consensus is not reached), far above it the
Frank–Wolfe error dominates longer; both are O(·)-constants, not rates.
"""

from __future__ import annotations

import itertools

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import scale_fields
from moreau.analysis.engine.instances import log_uniform, orthogonal
from moreau.fl._fedfw import fedfw, fedfw_optimum
from moreau.fl._lmo import Box, L1Ball, L2Ball, Simplex

__all__ = [
    "SCALING",
    "SETS",
    "constraint",
    "diameter",
    "client_batch",
    "inside_points",
    "concat_groups",
    "objective",
    "optimum",
    "F_value",
    "run",
    "surrogate_gaps",
    "box_min",
    "set_lower_bound",
    "envelope_fit",
    "GRID_POINTS",
]

SETS = ("box", "l1", "l2", "simplex")
#: the batches under θ -> sθ, f -> cf (``Statement.scaling``): curvatures and λ0 by c/s², linear terms and the
#: gradient noise σ by c/s, the sets' half-widths and the start by s; codes and seeds are dimensionless
SCALING = scale_fields(
    {"A": (-2, 1), "b": (-1, 1), "L": (-2, 1), "h": (1, 0), "x0": (1, 0), "lam0": (-2, 1), "sigma": (-1, 1)}
)
#: grid points of a fitted exponent (log-spaced over the fitted window)
GRID_POINTS = 12


def constraint(batch, idx=None):
    """The moreau.fl set of the instances ``idx`` (all of one kind)."""
    kind = int(batch["set"][0] if idx is None else batch["set"][idx][0])
    h = batch["h"] if idx is None else batch["h"][idx]
    return (Box(-h, h), L1Ball(h[:, 0]), L2Ball(h[:, 0]), Simplex(h[:, 0]))[kind]


def diameter(h, kind):
    """Exact diameter ``(T,)`` of each instance's set."""
    r = h[:, 0]
    return np.choose(kind.astype(int), [2 * np.linalg.norm(h, axis=-1), 2 * r, 2 * r, np.sqrt(2) * r])


def centre(h, kind):
    d = h.shape[1]
    return np.where((kind == 3)[:, None], h / d, 0.0)


def inside_points(rng, h, kind):
    r"""A point ``(T, d)`` drawn inside each instance's set, off its centre: uniform in the box
    :math:`[-h, h]`, the Euclidean ball (a uniform direction, radius :math:`rU^{1/d}`), the ℓ1 ball
    (a flat Dirichlet over d + 1 weights, random signs) and the simplex (a flat Dirichlet, times r)."""
    T, d = h.shape
    r = h[:, :1]
    u = rng.standard_normal((T, d))
    ball = r * u / np.linalg.norm(u, axis=-1, keepdims=True) * rng.uniform(0, 1, (T, 1)) ** (1 / d)
    w = rng.dirichlet(np.ones(d + 1), T)[:, :d]
    l1 = r * w * rng.choice((-1.0, 1.0), (T, d))
    simplex = r * rng.dirichlet(np.ones(d), T)
    box = h * rng.uniform(-1, 1, (T, d))
    return np.choose(kind.astype(int)[:, None], [box, l1, ball, simplex])


def _spectra(rng, T, m, d, kind):
    """Eigenvalues ``(T, m, d)`` of the clients' Hessians."""
    L = log_uniform(rng, 0.2, 5.0, T)[:, None, None]
    if kind in ("convex", "convex_singular"):  # PSD, a zero eigenvalue on every other client
        a = L * rng.uniform(0.05, 1.0, (T, m, d))
        a[:, ::2, 0] = 0.0
    elif kind == "convex_mean":  # every client indefinite (a_1 = -L/2), the average F made convex below
        a = L * rng.uniform(0.2, 1.0, (T, m, d))
        a[..., 0] = -0.5 * L[..., 0]
    elif kind == "indefinite":
        a = L * rng.uniform(-1.0, 1.0, (T, m, d))
        a[..., 0] = -L[..., 0]
    elif kind == "concave":
        a = -L * rng.uniform(0.2, 1.0, (T, m, d))
    else:
        raise ValueError(f"unknown client kind {kind!r}")
    if kind != "concave":
        a[..., -1] = L[..., 0]
    return a


def client_batch(rng, T, m, d, kind, sets, *, spread=1.5, adversarial=0, start="centre"):
    r"""``T`` instances of ``m`` clients of the given Hessian ``kind`` on the sets ``sets`` (codes, cycled).

    ``kind``: ``"convex"`` (PSD, a zero eigenvalue on every other client, random eigenvectors: the
    average is positive definite), ``"convex_singular"`` (the same, then every client's Hessian
    projected off one random direction v common to all: :math:`A_i \leftarrow PA_iP`,
    :math:`P = I - vv^\top`, so the average is PSD with the eigenvalue 0 along v and F is convex, not
    strongly convex; b_i = A_i z_i, so F is constant along v and its minimisers over D form a segment),
    ``"convex_mean"``, ``"indefinite"``, ``"concave"``.  ``start``: ``"centre"`` (x̄¹ the set's centre)
    or ``"inside"`` (:func:`inside_points`).

    ``adversarial``: the first that many instances are the rate-tight construction on boxes: isotropic
    clients :math:`A_i = aI`, half of them pulling coordinate 1 up (:math:`z_{i1} = +3h_1`), half down
    (:math:`z_{i1} = -9h_1`): the optimum of F sits on the face :math:`x_1 = -h_1` with a positive
    multiplier while the up-clients' penalised models leave that face by :math:`O(1/\lambda_t)`, so
    :math:`F(\bar x^t) - F^*` decays like :math:`\lambda_t^{-1} \propto t^{-1/2}` (the printed rate).
    """
    a = _spectra(rng, T, m, d, kind)
    V = orthogonal(rng, T * m, d).reshape(T, m, d, d)
    A = np.einsum("tmij,tmj,tmkj->tmik", V, a, V)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    if kind == "convex_singular":
        v = rng.standard_normal((T, d))
        v /= np.linalg.norm(v, axis=-1, keepdims=True)
        P = np.eye(d) - v[:, :, None] * v[:, None, :]
        A = np.einsum("tij,tmjk,tkl->tmil", P, A, P)
        A = (A + np.swapaxes(A, -1, -2)) / 2
    if kind == "convex_mean":
        low = np.linalg.eigvalsh(A.mean(axis=1))[:, 0]
        A = A + np.maximum(0.1 * np.abs(a).max(axis=(1, 2)) - low, 0.0)[:, None, None, None] * np.eye(d)
    kinds = np.asarray(sets)[np.arange(T) % len(sets)].astype(float)
    h = np.repeat(rng.uniform(0.5, 2.0, (T, 1)), d, axis=1)
    box = kinds == 0
    h[box] = rng.uniform(0.5, 2.0, (box.sum(), d))
    z = h[:, None, :] * (rng.uniform(-1, 1, (T, 1, d)) + spread * rng.standard_normal((T, m, d)))
    if adversarial:
        j = np.arange(adversarial)
        kinds[j] = 0.0
        A[j] = log_uniform(rng, 0.2, 5.0, adversarial)[:, None, None, None] * np.eye(d)
        up = np.arange(m) % 2 == 0
        z[j] = h[j, None, :] * rng.uniform(-0.5, 0.5, (adversarial, m, d))
        z[j, :, 0] = h[j, None, 0] * np.where(up, 3.0, -9.0)
    b = np.einsum("tmij,tmj->tmi", A, z)
    L = np.max(np.abs(np.linalg.eigvalsh(A)), axis=(1, 2))
    D = diameter(h, kinds)
    G = np.max(
        np.linalg.norm(A, ord=2, axis=(2, 3)) * np.linalg.norm(h, axis=-1)[:, None]
        + np.linalg.norm(b, axis=-1),
        axis=1,
    )
    lam0 = log_uniform(rng, 0.5, 2.0, T) * (L + G / D) / m
    if start not in ("centre", "inside"):
        raise ValueError(f"start must be 'centre' or 'inside' (got {start!r})")
    x0 = centre(h, kinds) if start == "centre" else inside_points(rng, h, kinds)
    return {"A": A, "b": b, "L": L, "h": h, "set": kinds, "x0": x0, "lam0": lam0}


def concat_groups(rng, T, m, d, specs):
    """``T`` instances in ``len(specs)`` nearly equal groups, group k drawn by
    ``client_batch(rng, size, m, d, **specs[k])`` (an ``adversarial=True`` makes the whole group
    adversarial), concatenated in order; empty groups are skipped."""
    sizes = [len(a) for a in np.array_split(np.arange(T), len(specs))]
    parts = []
    for k, spec in zip(sizes, specs, strict=True):
        if k:
            spec = dict(spec)
            if spec.pop("adversarial", False):
                spec["adversarial"] = k
            parts.append(client_batch(rng, k, m, d, **spec))
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def objective(batch, idx=None):
    A, b = (batch["A"], batch["b"]) if idx is None else (batch["A"][idx], batch["b"][idx])
    return mo.Quadratic(A, b)


def optimum(batch, lam=None):
    """``moreau.fl.fedfw_optimum`` on every instance, one call per constraint kind (boxes, ℓ1 and
    Euclidean balls; ``lam`` None, or one value per instance): ``{"value", "gap"}`` ``(T,)``, ``"x"``
    ``(T, d)``, ``"X"`` ``(T, m, d)`` in instance order, each certified by its Frank–Wolfe gap (singular
    Hessians included, on boxes as on balls)."""
    T, m, d = batch["b"].shape
    out = {"value": np.zeros(T), "gap": np.zeros(T), "x": np.zeros((T, d)), "X": np.zeros((T, m, d))}
    for kind in np.unique(batch["set"]):
        idx = np.flatnonzero(batch["set"] == kind)
        args = {} if lam is None else {"lam": np.asarray(lam)[idx]}
        tg = fedfw_optimum(objective(batch, idx), constraint(batch, idx), **args)
        for key in out:
            out[key][idx] = np.asarray(getattr(tg, key))
    return out


def F_value(A, b, x):
    r""":math:`F(x) = \frac1m\sum_i \tfrac12 x^\top A_i x - b_i^\top x` for ``x`` ``(..., T, d)``."""
    Abar, bbar = A.mean(axis=1), b.mean(axis=1)
    return 0.5 * np.einsum("...ti,tij,...tj->...t", x, Abar, x) - np.einsum("...ti,ti->...t", x, bbar)


def run(batch, rounds, *, per_instance=(), keep=None, **kw):
    """``moreau.fl.fedfw`` on every instance, one call per constraint kind (λ0 and x̄^1 from the batch;
    ``per_instance``: names of ``kw`` entries that hold one value per instance, e.g. ``lam``, ``sigma``);
    the history's arrays (host numpy) ``w_global`` ``(R+1, T, d)``, ``w_local`` ``(R+1, T, m, d)``,
    ``directions`` ``(R, T, m, d)``, ``nnz`` ``(R, T, m)`` and ``lam`` ``(R, T)`` in instance order.
    ``keep``: the names to return (default all); without a client-side name the runs record only the
    server's models (``fedfw(record="server")``: no per-round copies of the clients' models), and
    ``w_global`` may be read at the rounds ``keep_rounds`` only (``kw`` entry, indices into 0..R)."""
    T = batch["b"].shape[0]
    keep = ("w_global", "w_local", "directions", "nnz", "lam") if keep is None else tuple(keep)
    at = kw.pop("keep_rounds", None)
    record = "all" if {"w_local", "directions", "nnz"} & set(keep) else "server"
    out = {}
    for kind in np.unique(batch["set"]):
        idx = np.flatnonzero(batch["set"] == kind)
        args = {k: (np.asarray(v)[idx] if k in per_instance else v) for k, v in kw.items()}
        if "lam" not in kw:
            args["lam0"] = batch["lam0"][idx]
        h = fedfw(
            objective(batch, idx),
            constraint(batch, idx),
            rounds=rounds,
            x0=batch["x0"][idx],
            record=record,
            **args,
        )
        get = {
            "w_global": lambda h=h: np.asarray(h.w_global if at is None else h.w_global[at]),
            "w_local": lambda h=h: np.asarray(h.w_local),
            "directions": lambda h=h: np.asarray(h.directions),
            "nnz": lambda h=h: h.nnz,
            "lam": lambda h=h, n=idx.size: np.broadcast_to(h.params["lam"], (rounds, n)),
        }
        for key in keep:
            arr = get[key]()
            if key not in out:
                out[key] = np.zeros(arr.shape[:1] + (T,) + arr.shape[2:], arr.dtype)
            out[key][:, idx] = arr
    return out


def surrogate_gaps(batch, hist):
    r"""The Frank–Wolfe gap of the penalised objective at each round's iterate, ``(R, T)``:
    :math:`\sum_i\langle \frac1m\nabla f_i(x_i^t) + \lambda_t(x_i^t - \bar x^t),\ x_i^t - s_i^t\rangle`
    (what the authors' code logs as ``fw_gap``, up to its 1/m); exact for deterministic runs."""
    X, xb, S = hist["w_local"][:-1], hist["w_global"][:-1], hist["directions"]
    m = X.shape[2]
    G = np.einsum("tmij,rtmj->rtmi", batch["A"], X) - batch["b"][None]
    V = G / m + hist["lam"][..., None, None] * (X - xb[:, :, None, :])
    return np.sum(V * (X - S), axis=(-1, -2))


def box_min(A, b, h):
    """Exact ``min_{[-h, h]} ½xᵀAx − bᵀx`` for any symmetric A (3^d faces; d small): ``(...,)``.

    Each face (every coordinate at −h_k, free, or at +h_k) contributes the stationary point of the
    quadratic on its affine hull where the free block is nonsingular and the point lies in the box;
    the global minimiser lies in the relative interior of a face on which F is stationary (a
    singular face holds the same value on a smaller one)."""
    d = b.shape[-1]
    best = np.full(b.shape[:-1], np.inf)
    for pat in itertools.product((-1, 0, 1), repeat=d):
        pat = np.array(pat)
        free = pat == 0
        fixed = pat * h
        M = np.where(free[:, None] & free[None, :], A, np.eye(d))
        r = np.where(free, b - np.einsum("...ij,...j->...i", A * (~free)[None, :], fixed), fixed)
        with np.errstate(all="ignore"):
            s = np.linalg.svd(M, compute_uv=False)
            ok = s[..., -1] > 1e-10 * s[..., 0]
            x = np.linalg.solve(np.where(ok[..., None, None], M, np.eye(d)), r[..., None])[..., 0]
        ok &= np.all(np.abs(x) <= h * (1 + 1e-12), axis=-1)
        x = np.clip(x, -h, h)
        F = 0.5 * np.einsum("...i,...ij,...j->...", x, A, x) - np.sum(b * x, axis=-1)
        best = np.where(ok & (F < best), F, best)
    return best


def set_lower_bound(A, b, h, kind):
    r"""A lower bound ``(T, m)`` on each client's :math:`\min_{\mathcal D} f_i`: exact on boxes
    (:func:`box_min`), else :math:`f_i(0) - \|b_i\|\rho - \tfrac12\max(0, -a_{i1})\rho^2` with ρ the
    set's radius about 0 (the simplex lies in the ball of radius r)."""
    hb = np.broadcast_to(h[:, None, :], b.shape)
    exact = box_min(A, b, hb)
    rho = h[:, :1]
    neg = np.maximum(0.0, -np.linalg.eigvalsh(A)[..., 0])
    loose = -np.linalg.norm(b, axis=-1) * rho - 0.5 * neg * rho**2
    return np.where((kind == 0)[:, None], exact, loose)


def envelope_fit(t, y, window, floor):
    r"""Fitted exponent of ``y`` ``(R, T)`` (rounds t = 1..R on the first axis, ``t`` the grid) over
    ``window``: the log-log slope of the upper envelope :math:`\max_{s \ge t} y_s` at
    ``GRID_POINTS`` log-spaced rounds (a bound :math:`Ct^{a}` on y is one on its envelope), with the
    regression interval; applicable where the envelope at the last round is above ``floor``."""
    from moreau.analysis.engine.rates import fit_exponent

    env = np.maximum.accumulate(y[::-1], axis=0)[::-1]
    grid = np.unique(np.geomspace(window[0], window[1], GRID_POINTS).round().astype(int))
    vals = env[grid - t[0]]
    ok = np.all(vals > floor, axis=0)
    slope, (lo, hi) = fit_exponent(grid.astype(float), np.where(ok, vals, 1.0).T)
    return slope, (lo, hi), ok
