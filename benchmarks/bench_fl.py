#!/usr/bin/env python
r"""Rounds per second of ``moreau.fl`` against a per-client numpy loop and a hand-vectorised numpy round.

    python benchmarks/bench_fl.py [--quick] [--big] [--repeat 3] [--json PATH] [--only ALGO ...]
    python benchmarks/bench_fl.py --issue-setup [--json PATH]   # the issue's data, before/after a change
    python benchmarks/bench_fl.py --backend cupy [--quick]      # also moreau on cupy arrays (GPU), wall clock

Every algorithm runs T rounds three ways on the same data, with the same draws of one
``numpy.random.default_rng(seed)`` (the randomness layout of ``moreau.fl``), in one process, timed
in interleaved rounds (``bench_prox.measure_interleaved``: one call of each per round, shuffled):

* **moreau**: ``moreau.fl.<algorithm>(f, ...)``, ``f`` built before the clock starts (a padded
  batch for balanced sizes, ``moreau.ragged`` for lognormal sizes);
* **loop**: a per-client numpy loop, each client on its own ``(n_i, d)`` rows (the local steps of
  one client, then the next; the server step after all);
* **vec**: the same round hand-vectorised: all clients at once on arrays padded to the largest
  client, ``(N, n_max, d)`` with weights ``1/n_i`` on real rows and 0 on padding.

loop and vec run the *same* functions below (numpy broadcasting: a client is ``(n, d)``, the batch
``(N, n, d)``); their formulas are the plain ones (least squares ``A theta - b`` with ``A``, ``b``
formed before the clock, as ``moreau.LeastSquares`` does; logistic with ``scipy.special.expit``;
softmax with a row max; mini-batches gathered by index).  The three results of every run are compared
(largest difference of the final global models relative to their size) and printed beside the rates.
On numpy, every softmax row (C > 2) of FedAvg, FedProx and pFedMe K-step also prints **the
roofline** of one round, measured in this process after the row's timings by ``bench_fl_roofline.floor``
and ``bench_fl_ragged.pfedme_floor`` (see ``roofline``): max(flops / the GEMM rate on the round's own
product shapes, bytes that must move per round / the measured memory bandwidth), with the flop and
byte counts, moreau's CPU median as a multiple of it, and the square-GEMM rate for reference; every
row and table prints ``os.getloadavg()``.
With ``--backend cupy`` a fourth run, **cupy**, is ``moreau.fl`` on the same objective built from cupy
arrays (the same draws; the final model copied to the host inside the timed call, which synchronises
the device); its rows compare wall-clock medians, since CPU time says nothing of a GPU's work.  Its softmax rows
also print the device's roofline, measured by the same two functions on cupy arrays (the products of
the round's own shapes, the whole batch's as moreau forms them on cupy, and a 256 MB sum, the device
synchronised before every clock reading): the cupy wall median as a multiple of it and the fractions
of the device's measured FLOP rate and memory bandwidth the round attains.

Algorithms (T = 2 rounds, all N clients every round): FedAvg (tau = 5 full-gradient steps, and tau = 5
steps on mini-batches of B = 20 drawn without replacement), FedProx (K = 5), pFedMe with exact inner
solves (R = 5; loop and vec: undamped Newton from w to ``||step|| <= 1e-13 (1 + ||theta||)``; only where
D = d C <= 250) and with K = 5 inner gradient steps on gathered mini-batches of B = 20 (R = 5),
Per-FedAvg (tau = 5, Hessian-vector products, D = D' = D'' = 20).  C = 1 is least squares, C = 2
logistic regression (labels +-1), C > 2 softmax regression.  Sizes: balanced n_i = n, or lognormal
``floor(lognormal(log n, 1))`` clipped to [B, 10 n].
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_prox as bp  # noqa: E402  (sets the BLAS threads before numpy loads)
import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

mo = bp.mo
fl = mo.fl
ALGOS = ("fedavg", "fedavg-B", "fedprox", "pfedme-exact", "pfedme-K", "per-fedavg")
T, TAU, B = 2, 5, 20
HP = {
    "eta": 0.5,
    "lam": 15.0,
    "pf_eta": 0.05,
    "beta": 1.0,
    "inner_eta": 1 / 17,
    "fp_lam": 1.0,
    "gamma": 0.5,
    "fp_eta": 0.3,
    "alpha": 0.05,
    "pa_beta": 0.05,
    "mu": 0.01,
}


# --------------------------------------------------------------------------- data
def make_data(rng, N, d, C, kind, n, gpu=None):
    """Client sizes, samples of all clients concatenated, the moreau objective, per-client and
    padded numpy data; with ``gpu`` (the cupy module), ``vec["f_gpu"]``: the objective on its arrays."""
    sizes = (
        np.full(N, n)
        if kind == "balanced"
        else np.clip(np.floor(rng.lognormal(np.log(n), 1.0, N)).astype(int), B, 10 * n)
    )
    X = rng.standard_normal((int(sizes.sum()), d)) / np.sqrt(d)
    owner = np.repeat(np.arange(N), sizes)
    if C == 1:
        y = np.einsum("jd,jd->j", X, rng.standard_normal((N, d))[owner]) + 0.1 * rng.standard_normal(len(X))
        model, opts = mo.LeastSquares, {}
    elif C == 2:
        z = np.einsum("jd,jd->j", X, 2 * rng.standard_normal((N, d))[owner])
        y, model, opts = np.where(rng.random(len(X)) < expit(z), 1.0, -1.0), mo.Logistic, {}
    else:
        Z = np.einsum("jd,jdc->jc", X, 2 * rng.standard_normal((N, d, C))[owner])
        y, model, opts = np.argmax(Z + rng.gumbel(size=Z.shape), axis=-1), mo.Multinomial, {"n_classes": C}
    mu = HP["mu"]

    def build(asarray):
        if kind == "balanced":
            return model(asarray(X.reshape(N, n, d)), asarray(y.reshape(N, n)), mu=mu, **opts)
        return mo.ragged(model, asarray(X), asarray(y), sizes, mu=mu, **opts)

    f = build(np.asarray)
    T_ = np.eye(C)[y] if C > 2 else y  # targets: y, or one-hot rows
    off = np.concatenate([[0], np.cumsum(sizes)])
    clients = [_client(X[off[i] : off[i + 1]], T_[off[i] : off[i + 1]], C, mu) for i in range(N)]
    nm = int(sizes.max())
    valid = np.arange(nm) < sizes[:, None]
    Xp = np.zeros((N, nm, d))
    Xp[valid] = X
    Tp = np.zeros((N, nm) + T_.shape[1:])
    Tp[valid] = T_
    vec = {"X": Xp, "T": Tp, "p": valid / sizes[:, None], "mu": mu, "C": C, "n": sizes}
    if gpu is not None:
        vec["f_gpu"] = build(gpu.asarray)
    if C == 1:
        vec["A"] = np.stack([c["A"] for c in clients])
        vec["b"] = np.stack([c["b"] for c in clients])
    return f, clients, vec, sizes


def _client(X, T_, C, mu):
    n = X.shape[0]
    c = {"X": X, "T": T_, "p": np.full(n, 1.0 / n), "mu": mu, "C": C, "n": n}
    if C == 1:
        c["A"] = X.T @ X / n + mu * np.eye(X.shape[1])
        c["b"] = X.T @ T_ / n
    return c


# --------------------------------------------------------------------------- model formulas
# One client: X (n, d), T (n,) or (n, C), p (n,), theta (D,).  The batch: the same with a leading
# client axis.  The functions broadcast over it.
def _mv(M, v):
    return (M @ v[..., None])[..., 0]


def _tr(X):
    return np.swapaxes(X, -1, -2)


def _softmax(D, theta):
    X = D["X"]
    Z = X @ theta.reshape(theta.shape[:-1] + (X.shape[-1], D["C"]))
    Z -= Z.max(axis=-1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=-1, keepdims=True)
    return P


def grad(D, theta):
    X, T_, p, C = D["X"], D["T"], D["p"], D["C"]
    if C == 1:
        if "A" in D:
            return _mv(D["A"], theta) - D["b"]
        return _mv(_tr(X), p * (_mv(X, theta) - T_)) + D["mu"] * theta
    if C == 2:
        return D["mu"] * theta - _mv(_tr(X), p * T_ * expit(-T_ * _mv(X, theta)))
    G = _tr(X) @ (p[..., None] * (_softmax(D, theta) - T_))
    return G.reshape(theta.shape) + D["mu"] * theta


def hvp(D, theta, v):
    X, p, C = D["X"], D["p"], D["C"]
    if C == 1:
        return _mv(D["A"], v) if "A" in D else _mv(_tr(X), p * _mv(X, v)) + D["mu"] * v
    if C == 2:
        z = _mv(X, theta)
        return _mv(_tr(X), p * expit(z) * expit(-z) * _mv(X, v)) + D["mu"] * v
    P = _softmax(D, theta)
    U = X @ v.reshape(P.shape[:-2] + (X.shape[-1], C))
    R = P * (U - (P * U).sum(axis=-1, keepdims=True))
    return (_tr(X) @ (p[..., None] * R)).reshape(v.shape) + D["mu"] * v


def hess(D, theta):
    X, p, C = D["X"], D["p"], D["C"]
    d = X.shape[-1]
    if C == 2:
        z = _mv(X, theta)
        H = _tr(X) @ ((p * expit(z) * expit(-z))[..., None] * X)
    else:  # the blocks X^T diag(p pi_a (delta_ac - pi_c)) X, block (c, a) the transpose of (a, c)
        P = _softmax(D, theta)
        H = np.empty(P.shape[:-2] + (d, C, d, C))
        for a in range(C):
            for c in range(a, C):
                B_ = _tr(X) @ ((p * P[..., a] * ((a == c) - P[..., c]))[..., None] * X)
                H[..., :, a, :, c] = B_
                H[..., :, c, :, a] = _tr(B_)
        H = H.reshape(P.shape[:-2] + (d * C, d * C))
    return H + D["mu"] * np.eye(H.shape[-1])


def prox(D, w, lam):
    """argmin f + lam/2 ||theta - w||^2: one solve (least squares), else Newton from w."""
    eye = np.eye(w.shape[-1])
    if D["C"] == 1:
        return np.linalg.solve(D["A"] + lam * eye, (D["b"] + lam * w)[..., None])[..., 0]
    theta = w
    for _ in range(50):
        step = np.linalg.solve(hess(D, theta) + lam * eye, (grad(D, theta) + lam * (theta - w))[..., None])[
            ..., 0
        ]
        theta = theta - step
        if np.all(np.linalg.norm(step, axis=-1) <= 1e-13 * (1 + np.linalg.norm(theta, axis=-1))):
            return theta
    raise RuntimeError("Newton did not converge")


def gather(D, idx):
    """The mini-batch of rows ``idx`` (``(B,)`` or ``(N, B)``; repeats allowed), weights 1/B."""
    X, T_ = D["X"], D["T"]
    Tg = (
        np.take_along_axis(T_, idx[..., None], axis=-2)
        if T_.ndim == X.ndim
        else np.take_along_axis(T_, idx, -1)
    )
    return {
        "X": np.take_along_axis(X, idx[..., None], axis=-2),
        "T": Tg,
        "p": np.full(idx.shape, 1.0 / idx.shape[-1]),
        "mu": D["mu"],
        "C": D["C"],
    }


# --------------------------------------------------------------------------- one client's (or all clients') round
def fedavg_local(D, W, draws):
    for k in range(TAU):
        W = W - HP["eta"] * grad(D if draws is None else gather(D, draws[k]), W)
    return W


def fedprox_local(D, W, w):
    for _ in range(TAU):
        W = W - HP["fp_eta"] * (grad(D, W) + HP["fp_lam"] * (W - w))
    return W


def pfedme_local(D, W, draws, exact):
    lam = HP["lam"]
    for r in range(TAU):
        Dr = D if draws is None else gather(D, draws[r])
        if exact:
            theta = prox(Dr, W, lam)
        else:
            theta = W
            for _ in range(TAU):
                theta = theta - HP["inner_eta"] * (grad(Dr, theta) + lam * (theta - W))
        W = W - HP["pf_eta"] * lam * (W - theta)
    return W


def perfedavg_local(D, W, draws):
    a = HP["alpha"]
    for k in range(TAU):
        D1, D2, D3 = (gather(D, draws[3 * k + i]) for i in range(3))
        g = grad(D2, W - a * grad(D1, W))
        W = W - HP["pa_beta"] * (g - a * hvp(D3, W, g))
    return W


def _draws(rng, algo, sizes):
    """One round's draws in moreau.fl's order, as indices ``(steps, N, B)`` into each client's rows."""
    N, nm = sizes.size, int(sizes.max())
    if algo == "fedavg-B":  # per step: keys (N, n_max), the B smallest valid ones, without replacement
        keys = [np.where(np.arange(nm) < sizes[:, None], rng.random((N, nm)), np.inf) for _ in range(TAU)]
        return np.stack([np.argpartition(k, B - 1, axis=-1)[:, :B] for k in keys])
    count = {"pfedme-K": TAU, "per-fedavg": 3 * TAU}.get(algo, 0)
    return (
        np.stack(
            [
                np.minimum((rng.random((N, B)) * sizes[:, None]).astype(np.int64), sizes[:, None] - 1)
                for _ in range(count)
            ]
        )
        if count
        else None
    )


def run_numpy(algo, data, sizes, seed, per_client):
    """T rounds of ``algo``: per client (``per_client``: a list of client dicts) or batched (a dict)."""
    rng = np.random.default_rng(seed)
    N = sizes.size
    one = data[0] if per_client else data
    Dm = one["X"].shape[-1] * (one["C"] if one["C"] > 2 else 1)
    w = np.zeros(Dm)
    Wp = np.zeros((N, Dm))  # FedProx's local models (warm starts)
    for _ in range(T):
        draws = _draws(rng, algo, sizes)

        def local(D, i, W0, draws=draws, w=w):
            dr = None if draws is None else (draws[:, i] if i is not None else draws)
            if algo in ("fedavg", "fedavg-B"):
                return fedavg_local(D, W0, dr)
            if algo == "fedprox":
                return fedprox_local(D, W0, w)
            if algo == "per-fedavg":
                return perfedavg_local(D, W0, dr)
            return pfedme_local(D, W0, dr, algo == "pfedme-exact")

        start = Wp if algo == "fedprox" else np.broadcast_to(w, (N, Dm))
        if per_client:
            W = np.stack([local(data[i], i, start[i]) for i in range(N)])
        else:
            W = local(data, None, start)
        if algo == "fedprox":
            Wp = W
            w = w - HP["gamma"] * HP["fp_lam"] * np.mean(w - W, axis=0)
        elif algo.startswith("pfedme"):
            w = (1 - HP["beta"]) * w + HP["beta"] * W.mean(axis=0)
        else:
            w = W.mean(axis=0)
    return w


def run_moreau(algo, f, seed):
    """T rounds of ``algo`` with ``moreau.fl``: the final global model."""
    h = HP
    if algo in ("fedavg", "fedavg-B"):
        r = fl.fedavg(
            f,
            eta=h["eta"],
            tau=TAU,
            rounds=T,
            **({"batch_size": B, "rng": seed} if algo == "fedavg-B" else {}),
        )
    elif algo == "fedprox":
        r = fl.fedprox(f, lam=h["fp_lam"], gamma=h["gamma"], eta=h["fp_eta"], K=TAU, rounds=T)
    elif algo == "pfedme-exact":
        r = fl.pfedme(f, lam=h["lam"], eta=h["pf_eta"], beta=h["beta"], R=TAU, rounds=T, personal="none")
    elif algo == "pfedme-K":
        r = fl.pfedme(
            f,
            lam=h["lam"],
            eta=h["pf_eta"],
            beta=h["beta"],
            R=TAU,
            rounds=T,
            batch_size=B,
            inner=TAU,
            inner_eta=h["inner_eta"],
            rng=seed,
            personal="none",
        )
    else:
        r = fl.per_fedavg(
            f, alpha=h["alpha"], beta=h["pa_beta"], tau=TAU, rounds=T, D=B, D_prime=B, D_second=B, rng=seed
        )
    w = r.w_global[-1, ...]
    return w.get() if hasattr(w, "get") else np.asarray(w)  # cupy: the copy to the host synchronises


# --------------------------------------------------------------------------- driver
CONFIGS = {  # (N, d, C, sizes, n)
    "default": [
        (10, 60, 10, "balanced", 50),
        (100, 60, 10, "balanced", 50),
        (1000, 60, 10, "balanced", 50),
        (10, 60, 10, "lognormal", 50),
        (100, 60, 10, "lognormal", 50),
        (1000, 60, 10, "lognormal", 50),
        (100, 20, 10, "balanced", 50),
        (100, 200, 10, "balanced", 50),
        (100, 20, 4, "lognormal", 50),
        (100, 60, 1, "balanced", 50),
        (100, 60, 1, "lognormal", 50),
        (1000, 60, 1, "balanced", 50),
        (100, 60, 2, "balanced", 50),
        (100, 60, 2, "lognormal", 50),
        (1000, 60, 2, "balanced", 50),
    ],
    "quick": [(10, 20, 4, "balanced", 20), (100, 20, 1, "lognormal", 20), (100, 20, 2, "balanced", 20)],
    "big": [(10000, 20, 10, "balanced", 50), (10000, 20, 2, "balanced", 50)],
}


def measure(fns, k, budget):
    """Interleaved rounds as ``bench_prox.measure_interleaved`` (one warm-up each, then k rounds of
    one call each in a shuffled order; fewer rounds, not below 2, past ``budget`` seconds), timing
    each call twice: wall clock (``perf_counter``) and this process's CPU time (``process_time``:
    what the call itself used, without the time other processes held the cpus)."""
    outs, t_round = {}, 0.0
    for key, fn in fns.items():
        t0 = time.perf_counter()
        outs[key] = fn()
        t_round += time.perf_counter() - t0
    k = max(2, min(k, int(budget / max(t_round, 1e-9))))
    times = {key: {"wall": [], "cpu": []} for key in fns}
    order = np.random.default_rng(len(fns))
    for _ in range(k):
        for key in order.permutation(list(fns)):
            w0, c0 = time.perf_counter(), time.process_time()
            outs[key] = fns[key]()
            times[key]["cpu"].append(time.process_time() - c0)
            times[key]["wall"].append(time.perf_counter() - w0)
    return (
        {
            key: {
                clock: {"best": min(v), "median": float(np.median(v)), "times": v} for clock, v in t.items()
            }
            for key, t in times.items()
        },
        outs,
        k,
    )


def git_info():
    """The commit and whether the tree differs from it (read-only: no index refresh)."""

    def run(*args):
        try:
            return subprocess.run(
                ["git", "--no-optional-locks", *args],
                cwd=bp.REPO,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.strip()
        except Exception:  # noqa: BLE001
            return ""

    return {"commit": run("rev-parse", "HEAD") or "unknown", "dirty": bool(run("status", "--porcelain"))}


ROOFLINE_ALGOS = ("fedavg", "fedprox", "pfedme-K")


def roofline(algo, f, sizes, d, C, cache, xp=np, sync=None):
    """The roofline of one round of ``algo`` on softmax clients (C > 2), measured in this process by the
    one implementation there is: ``bench_fl_roofline.floor`` (FedAvg / FedProx: ``4 d C n_total tau``
    flops at the GEMM rate of the round's own products as moreau forms them, ``n_total (d + 2) 8``
    bytes at the bandwidth of a 256 MB sum) and ``bench_fl_ragged.pfedme_floor`` (pFedMe K-step:
    ``4 d C B N R K`` flops at the rate of its batched mini-batch products, ``2 R N B (d + 2) 8`` bytes);
    the square-GEMM rate (1000 x 1000) for reference.  None for other algorithms or C <= 2 (no roofline
    written for them).  ``cache`` holds the measurements of one data set on one backend.  ``xp`` (numpy,
    or cupy with ``f`` built on its arrays) and ``sync`` are passed to the same two functions: on cupy
    they time the products and the sum on the device (``bench_fl_roofline.timing``)."""
    if C <= 2 or algo not in ROOFLINE_ALGOS:
        return None
    import bench_fl_ragged as rg  # imported here: both import this module
    import bench_fl_roofline as br

    if "full" not in cache:
        cache["full"] = br.floor(f, sizes, d, C, xp, sync)
    full = cache["full"]
    if algo != "pfedme-K":
        out = dict(
            full,
            gemm_rate=full["gemm_rate_per_client_loop"]
            if not full["padded_slots"] and xp is np
            else full["gemm_rate_round_shapes"],
        )
        out["formula"] = "max(4 d C n_total tau / GEMM rate, n_total (d + 2) 8 / bandwidth)"
        out["rate_of"] = (
            "the groups' batched products"
            if full["padded_slots"]
            else "per-client products (no groups)"
            if xp is np
            else "the whole batch's batched products"
        )
        return out
    if "pfedme-K" not in cache:
        cache["pfedme-K"] = dict(
            rg.pfedme_floor(sizes.size, d, C, xp, sync),
            gemm_rate_square=full["gemm_rate_square"],
            formula="max(4 d C B N R K / GEMM rate, 2 R N B (d + 2) 8 / bandwidth)",
            rate_of="the (N, C, d) x (N, d, B) mini-batch products",
        )
    return cache["pfedme-K"]


def _roofline_line(rf, moreau_s, who="moreau", clock="CPU median"):
    """One printed line: the flop and byte counts, the rates, the roofline, ``who``'s time (seconds per
    round) as a multiple of it, and the fractions of the measured FLOP rate and bandwidth it attains."""
    t_f, t_b = rf["flops_per_round"] / rf["gemm_rate"], rf["bytes_per_round"] / rf["bandwidth"]
    frac = roofline_fractions(rf, moreau_s)
    return (
        f"      roofline ({rf.get('backend', 'numpy')}) {rf['formula']}: {rf['flops_per_round'] / 1e9:.3f} GFLOP / "
        f"{rf['gemm_rate'] / 1e9:.1f} GFLOP/s ({rf['rate_of']}) = {t_f * 1e3:.3f} ms, "
        f"{rf['bytes_per_round'] / 1e6:.1f} MB / "
        f"{rf['bandwidth'] / 1e9:.1f} GB/s = {t_b * 1e3:.3f} ms -> {rf['floor_s'] * 1e3:.3f} ms per round; "
        f"{who} {moreau_s * 1e3:.3f} ms ({clock}) = {moreau_s / rf['floor_s']:.2f}x the roofline "
        f"(roofline / {who} {rf['floor_s'] / moreau_s:.3f}: {frac['flop_rate']:.3f} of the FLOP rate, "
        f"{frac['bandwidth']:.3f} of the bandwidth); square GEMM {rf['gemm_rate_square'] / 1e9:.1f} GFLOP/s"
    )


def roofline_fractions(rf, s):
    """The fractions of the measured GEMM rate and bandwidth a round of ``s`` seconds attains:
    ``(flops / s) / rate`` and ``(bytes / s) / bandwidth``."""
    return {
        "flop_rate": rf["flops_per_round"] / s / rf["gemm_rate"],
        "bandwidth": rf["bytes_per_round"] / s / rf["bandwidth"],
    }


def bench_config(cfg, algos, repeat, seed, budget, gpu=None, profile=0):
    N, d, C, kind, n = cfg
    f, clients, vec, sizes = make_data(np.random.default_rng(seed), N, d, C, kind, n, gpu)
    Dm = d * (C if C > 2 else 1)
    rows, cache, cache_dev = [], {}, {}
    for algo in algos:
        if algo == "pfedme-exact" and Dm > 250:
            continue
        fns = {
            "moreau": lambda a=algo: run_moreau(a, f, seed),
            "loop": lambda a=algo: run_numpy(a, clients, sizes, seed, True),
            "vec": lambda a=algo: run_numpy(a, vec, sizes, seed, False),
        }
        if gpu is not None:
            fns["cupy"] = lambda a=algo: run_moreau(a, vec["f_gpu"], seed)
        load0 = os.getloadavg()
        tm, out, k = measure(fns, repeat, budget)
        load1 = os.getloadavg()
        rf = roofline(algo, f, sizes, d, C, cache)
        rf_dev = None if gpu is None else roofline(algo, vec["f_gpu"], sizes, d, C, cache_dev, xp=gpu)
        scale = max(float(np.abs(out["loop"]).max()), 1e-300)
        ratio = {
            f"x_{b}": {
                clock: {q: tm[b][clock][q] / tm["moreau"][clock][q] for q in ("best", "median")}
                for clock in ("cpu", "wall")
            }
            for b in ("loop", "vec")
        }
        row = {
            "N": N,
            "d": d,
            "C": C,
            "sizes": kind,
            "n": n,
            "n_total": int(sizes.sum()),
            "n_max": int(sizes.max()),
            "algo": algo,
            "rounds": T,
            "k": k,
            "seconds": tm,
            "rounds_per_s_cpu_best": {key: T / t["cpu"]["best"] for key, t in tm.items()},
            **ratio,
            "rel_diff": {
                "loop": float(np.abs(out["moreau"] - out["loop"]).max()) / scale,
                "vec": float(np.abs(out["moreau"] - out["vec"]).max()) / scale,
                "loop_vec": float(np.abs(out["vec"] - out["loop"]).max()) / scale,
            },
            "load": [load0, load1],
            "roofline": rf,
            "moreau_over_roofline": None if rf is None else tm["moreau"]["cpu"]["median"] / T / rf["floor_s"],
        }
        if gpu is not None:
            row["rel_diff"]["cupy"] = float(np.abs(out["cupy"] - out["loop"]).max()) / scale
            if rf_dev is not None:
                s_dev = tm["cupy"]["wall"]["median"] / T
                row["roofline_device"] = rf_dev
                row["cupy_over_roofline_device"] = s_dev / rf_dev["floor_s"]
                row["cupy_fraction_of_device"] = roofline_fractions(rf_dev, s_dev)
            row["x_cupy_wall_median"] = {
                b: tm[b]["wall"]["median"] / tm["cupy"]["wall"]["median"] for b in ("moreau", "loop", "vec")
            }
        rows.append(row)
        r, xl, xv = row["rounds_per_s_cpu_best"], ratio["x_loop"], ratio["x_vec"]
        print(
            f"  {N:>6} {d:>4} {C:>3} {kind:<9} {algo:<13} {r['moreau']:>8.1f} {r['loop']:>8.1f} {r['vec']:>8.1f}  "
            f"{xl['cpu']['best']:>5.1f} {xl['cpu']['median']:>5.1f} {xl['wall']['median']:>5.1f}   "
            f"{xv['cpu']['best']:>5.2f} {xv['cpu']['median']:>5.2f} {xv['wall']['median']:>5.2f}   "
            f"{row['rel_diff']['loop']:.0e} {row['rel_diff']['vec']:.0e}   k {k}, "
            f"load {load0[0]:.1f} -> {load1[0]:.1f}"
            + (
                ""
                if gpu is None
                else "   cupy: {:.1f}/s wall; x moreau {:.2f}, x loop {:.1f}, x vec {:.2f}; "
                "diff {:.0e}".format(
                    T / tm["cupy"]["wall"]["median"],
                    *row["x_cupy_wall_median"].values(),
                    row["rel_diff"]["cupy"],
                )
            ),
            flush=True,
        )
        if rf is not None:
            print(_roofline_line(rf, tm["moreau"]["cpu"]["median"] / T), flush=True)
        if gpu is not None and rf_dev is not None:
            print(_roofline_line(rf_dev, tm["cupy"]["wall"]["median"] / T, "cupy", "wall median"), flush=True)
        if profile:
            import bench_fl_ragged as rg

            prof, total, text = rg.profile(lambda a=algo: run_moreau(a, f, seed), top=profile)
            row["profile"] = {"cpu_s_per_call": total, "top": prof}
            print(
                f"      profile of one moreau call (cProfile, CPU clock, {total * 1e3:.1f} ms):\n{text}",
                end="",
            )
    return rows


def issue_setup(repeat):
    """The issue's setup: ``moreau.data.synthetic(0.5, 0.5, 0, n_clients=100)`` (ragged, D = 610), five
    calls of 2 rounds; CPU seconds per round (best of ``repeat`` after a warm-up) and the final global
    model.  Run it with an older ``moreau`` first on ``PYTHONPATH`` for the times before a change."""
    from moreau.data import synthetic

    f = synthetic(0.5, 0.5, 0, n_clients=100).objective
    calls = {
        "fedavg tau=5": lambda: fl.fedavg(f, eta=0.05, tau=5, rounds=2),
        "fedavg tau=5 B=20": lambda: fl.fedavg(f, eta=0.05, tau=5, rounds=2, batch_size=20, rng=1),
        "fedprox K=5": lambda: fl.fedprox(f, lam=1.0, gamma=0.5, eta=0.05, K=5, rounds=2),
        "pfedme R=5 K=5 B=20": lambda: fl.pfedme(
            f,
            lam=15,
            eta=0.005,
            beta=1,
            R=5,
            rounds=2,
            batch_size=20,
            inner=5,
            inner_eta="client",
            rng=1,
            personal="inner",
        ),
        "per-fedavg FO tau=5 D=20": lambda: fl.per_fedavg(
            f, alpha=0.005, beta=0.005, tau=5, rounds=2, D=20, D_prime=20, variant="first_order", rng=1
        ),
    }
    out = {}
    print(f"  os.getloadavg(): {os.getloadavg()}", flush=True)
    for name, call in calls.items():
        call()
        ts = []
        for _ in range(repeat):
            c0 = time.process_time()
            w = np.asarray(call().w_global[-1])
            ts.append((time.process_time() - c0) / 2)
        out[name] = {"cpu_s_per_round": ts, "w": w.tolist()}
        print(f"  {name:<26} {min(ts) * 1e3:8.1f} ms per round (CPU, best of {repeat})", flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--quick", action="store_true", help="three small sizes: a smoke test")
    p.add_argument("--big", action="store_true", help="also N = 10,000 clients")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--only", action="append", choices=ALGOS)
    p.add_argument(
        "--size",
        action="append",
        metavar="N,d,C,SIZES[,n]",
        help="run this size instead of the default list (SIZES: balanced or lognormal; n default 50)",
    )
    p.add_argument(
        "--budget", type=float, default=20.0, help="seconds per (size, algorithm) before fewer rounds"
    )
    p.add_argument("--issue-setup", action="store_true", help="only the issue's setup (see issue_setup)")
    p.add_argument("--json", metavar="PATH")
    p.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="K",
        help="also cProfile one moreau call per row: its K largest",
    )
    p.add_argument("--blas-threads", type=int, default=1)  # read by bench_prox at import
    p.add_argument(
        "--backend",
        choices=("numpy", "cupy"),
        default="numpy",
        help="cupy: also moreau.fl on cupy arrays (wall-clock medians against the numpy runs)",
    )
    a = p.parse_args(argv)
    gpu = None
    if a.backend == "cupy":
        ok, why = mo._backend.gpu_status()
        if not ok:
            print(f"--backend cupy: {why}", file=sys.stderr)
            return 2
        import cupy as gpu
    info, git = bp.machine_info(a.backend), git_info()
    bp.print_machine(info, git)
    if a.issue_setup:
        out = issue_setup(a.repeat)
        if a.json:
            Path(a.json).write_text(
                json.dumps(
                    {"machine": info, "git": git, "moreau_file": mo.__file__, "calls": out},
                    default=bp._json_default,
                )
            )
        return
    configs = CONFIGS["quick" if a.quick else "default"] + (CONFIGS["big"] if a.big else [])
    if a.size:
        configs = [
            tuple(int(v) if v.isdigit() else v for v in spec.split(","))
            + ((50,) if spec.count(",") == 3 else ())
            for spec in a.size
        ]
    algos = a.only or list(ALGOS)
    print(
        f"\n=== rounds per second of CPU time (best of {a.repeat} interleaved calls of T = {T} rounds; tau = K = R = "
        f"{TAU}, B = {B}) ===\n  x loop, x vec: the other's time / moreau's: CPU best, CPU median, wall median"
    )
    print(
        f"  {'N':>6} {'d':>4} {'C':>3} {'sizes':<9} {'algorithm':<13} {'moreau':>8} {'loop':>8} {'vec':>8}  "
        f"{'x loop (cpu b/m, wall m)':<19}  {'x vec (cpu b/m, wall m)':<20} rel. diff (loop, vec)"
    )
    print(f"  os.getloadavg() at the start of the table: {os.getloadavg()}", flush=True)
    rows = []
    for cfg in configs:
        rows += bench_config(cfg, algos, a.repeat, a.seed, a.budget, gpu, a.profile)
    load_end = os.getloadavg()
    print(f"  os.getloadavg() at the end of the table: {load_end}")
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {
                    "params": {
                        "T": T,
                        "tau": TAU,
                        "B": B,
                        "hyper": HP,
                        "seed": a.seed,
                        "repeat": a.repeat,
                        "backend": a.backend,
                    },
                    "machine": info,
                    "git": git,
                    "load_average_at_end": load_end,
                    "rows": rows,
                    "when": time.strftime("%Y-%m-%d %H:%M:%S"),
                },
                indent=1,
                default=bp._json_default,
            )
        )
        print(f"results written to {a.json}")


if __name__ == "__main__":
    sys.exit(main())
