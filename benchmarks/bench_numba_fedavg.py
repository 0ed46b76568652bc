"""A compiled local-step kernel for softmax FedAvg (issue 32), measured against moreau and the loop.

One round of FedAvg on softmax regression (N = 1000 lognormal clients, d = 60, C = 10, tau = 5 local
full-batch gradient steps, eta and mu as in ``bench_fl.HP``), three ways, in one process, interleaved:

- ``numba``: one ``@njit`` call (cache off, fastmath off, single thread) over the concatenated samples
  with client offsets; per client and step, one pass over its samples fuses the logits ``x_j W``, the
  softmax and the rank-1 update ``x_j (p_j - y_j)`` of the gradient, then ``W -= eta (G / n_i + mu W)``;
  then the weighted average of the clients' models (weights 1/N, as ``moreau.fl.fedavg`` with every
  client taking part);
- ``numba-par``: the same kernel with ``parallel=True`` and ``prange`` over clients (labelled; uses
  ``numba.get_num_threads()`` threads, printed);
- ``moreau``: ``moreau.fl.fedavg(f, eta, tau, rounds=1)``;
- ``loop``: the per-client numpy loop of ``bench_fl.fedavg_local`` (one client at a time).

Data and the loop come from ``bench_fl`` (imported, not copied). The first call of each kernel is
timed separately (compile time). The kernels' iterates after ``bench_fl.T`` rounds are compared with
moreau's (max relative difference printed; the script exits non-zero above 1e-12).

    .venv/bin/python benchmarks/bench_numba_fedavg.py [--repeat 9] [--seed 0]

numba is not a dependency of moreau; this script needs it installed (``pip install numba``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fl as bf  # noqa: E402  (bench_prox sets the BLAS threads before numpy loads)
import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

fl = bf.fl


def _client_steps(X, lab, a, b, w, W, G, z, tau, eta, mu):
    """tau full-batch gradient steps of one client (rows a:b) from w, in W (d, C); G, z scratch."""
    d, C = W.shape
    n = b - a
    for k in range(d):
        for c in range(C):
            W[k, c] = w[k, c]
    for _ in range(tau):
        for k in range(d):
            for c in range(C):
                G[k, c] = 0.0
        for j in range(a, b):
            for c in range(C):
                z[c] = 0.0
            for k in range(d):
                x = X[j, k]
                for c in range(C):
                    z[c] += x * W[k, c]
            m = z[0]
            for c in range(1, C):
                if z[c] > m:
                    m = z[c]
            s = 0.0
            for c in range(C):
                z[c] = np.exp(z[c] - m)
                s += z[c]
            for c in range(C):
                z[c] /= s
            z[lab[j]] -= 1.0
            for k in range(d):
                x = X[j, k]
                for c in range(C):
                    G[k, c] += x * z[c]
        for k in range(d):
            for c in range(C):
                W[k, c] -= eta * (G[k, c] / n + mu * W[k, c])


_steps = njit(cache=False, fastmath=False)(_client_steps)


def _round_serial(X, lab, off, p, w, tau, eta, mu):
    d, C = w.shape
    W = np.empty((d, C))
    G = np.empty((d, C))
    z = np.empty(C)
    out = np.zeros((d, C))
    for i in range(off.size - 1):
        _steps(X, lab, off[i], off[i + 1], w, W, G, z, tau, eta, mu)
        for k in range(d):
            for c in range(C):
                out[k, c] += p[i] * W[k, c]
    return out


def _round_parallel(X, lab, off, p, w, tau, eta, mu):
    d, C = w.shape
    N = off.size - 1
    Ws = np.empty((N, d, C))
    for i in prange(N):
        G = np.empty((d, C))
        z = np.empty(C)
        _steps(X, lab, off[i], off[i + 1], w, Ws[i], G, z, tau, eta, mu)
    out = np.zeros((d, C))
    for i in range(N):
        for k in range(d):
            for c in range(C):
                out[k, c] += p[i] * Ws[i, k, c]
    return out


round_serial = njit(cache=False, fastmath=False)(_round_serial)
round_parallel = njit(cache=False, fastmath=False, parallel=True)(_round_parallel)


@njit(cache=False, fastmath=False)
def _exp_loop(a, out):
    for i in range(a.size):
        out[i] = np.exp(a[i])


def exp_cost(count, repeat):
    """Median ms of ``count`` scalar exps in a numba loop and of one ``np.exp`` over as many."""
    a = -np.random.default_rng(0).random(count) * 5
    out = np.empty_like(a)
    _exp_loop(a, out)
    ts, tn = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        _exp_loop(a, out)
        ts.append(time.perf_counter() - t)
        t = time.perf_counter()
        np.exp(a, out=out)
        tn.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3, float(np.median(tn)) * 1e3


def loop_round(clients, w):
    """One round of the per-client numpy loop (bench_fl's local steps), averaged as bench_fl does."""
    return np.stack([bf.fedavg_local(c, w, None) for c in clients]).mean(axis=0)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument(
        "--no-parallel", action="store_true", help="leave out the numba-par row (its idle threads)"
    )
    a = ap.parse_args(argv)
    N, d, C, n = a.N, 60, 10, 50
    eta, mu = bf.HP["eta"], bf.HP["mu"]
    rng = np.random.default_rng(a.seed)
    f, clients, vec, sizes = bf.make_data(rng, N, d, C, "lognormal", n)
    X = np.ascontiguousarray(np.concatenate([c["X"] for c in clients]))
    lab = np.ascontiguousarray(np.concatenate([np.argmax(c["T"], axis=1) for c in clients]))
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    p = np.full(N, 1.0 / N)
    print(
        f"# bench_numba_fedavg: python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}"
    )
    print(
        f"# N = {N} lognormal clients, {X.shape[0]} samples, d = {d}, C = {C}, tau = {bf.TAU}, eta = {eta}, mu = {mu}"
    )
    print(f"# numba threads (parallel row): {numba.get_num_threads()}; os.cpu_count() = {os.cpu_count()}")
    print(f"# git: {bf.git_info()}")
    print(f"# load at start: {os.getloadavg()}")
    w0 = np.zeros((d, C))

    # compile (first call) timed separately
    kernels = (("numba", round_serial),) + (() if a.no_parallel else (("numba-par", round_parallel),))
    for name, k in kernels:
        t0 = time.perf_counter()
        k(X, lab, off, p, w0, bf.TAU, eta, mu)
        print(f"compile+first call {name}: {time.perf_counter() - t0:.2f} s wall")

    # iterates after bf.T rounds: kernels against moreau (and the loop)
    wm = bf.run_moreau("fedavg", f, a.seed).reshape(d, C)
    ws, wp, wl = w0, w0, w0.ravel()
    for _ in range(bf.T):
        ws = round_serial(X, lab, off, p, ws, bf.TAU, eta, mu)
        wp = wp if a.no_parallel else round_parallel(X, lab, off, p, wp, bf.TAU, eta, mu)
        wl = loop_round(clients, wl)
    worst = 0.0
    rows = (("numba", ws),) + (() if a.no_parallel else (("numba-par", wp),)) + (("loop", wl.reshape(d, C)),)
    for name, w in rows:
        r = rel(w, wm)
        worst = max(worst, r) if name != "loop" else worst
        print(f"iterates after {bf.T} rounds, {name} vs moreau: max |diff| / max |w| = {r:.3e}")

    # interleaved timing, one round each
    fns = {
        "numba": lambda: round_serial(X, lab, off, p, w0, bf.TAU, eta, mu),
        "numba-par": lambda: round_parallel(X, lab, off, p, w0, bf.TAU, eta, mu),
        "moreau": lambda: fl.fedavg(f, eta=eta, tau=bf.TAU, rounds=1),
        "loop": lambda: loop_round(clients, w0.ravel()),
    }
    if a.no_parallel:
        del fns["numba-par"]
    for fn in fns.values():  # warm-up
        fn()
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(a.repeat):
        for k, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            cpu[k].append(time.process_time() - c0)
            wall[k].append(time.perf_counter() - t0)
    print(f"# load after timing: {os.getloadavg()}")
    print(f"# one round, median of {a.repeat} interleaved calls (ms); min in brackets")
    mw = {k: float(np.median(v)) * 1e3 for k, v in wall.items()}
    mc = {k: float(np.median(v)) * 1e3 for k, v in cpu.items()}
    for k in fns:
        print(
            f"{k:10s} wall {mw[k]:8.2f} [{min(wall[k]) * 1e3:8.2f}]   CPU {mc[k]:8.2f} [{min(cpu[k]) * 1e3:8.2f}]"
            f"   moreau / this (wall) {mw['moreau'] / mw[k]:5.2f}   loop / this (wall) {mw['loop'] / mw[k]:5.2f}"
        )
    flops = 4 * d * C * X.shape[0] * bf.TAU
    for k in [k for k in fns if k != "loop"]:
        print(
            f"{k}: {flops / (mw[k] * 1e-3) / 1e9:.2f} GFLOP/s (4 d C flops per sample and step, {flops:.3e} per round)"
        )
    ms, mn = exp_cost(C * X.shape[0] * bf.TAU, a.repeat)
    print(
        f"profile: the round's {C * X.shape[0] * bf.TAU} exps alone: numba scalar loop {ms:.1f} ms, np.exp {mn:.1f} ms"
    )
    if worst >= 1e-12:
        print(f"FAIL: kernel iterates differ from moreau's by {worst:.3e} >= 1e-12")
        return 1
    print(f"OK: kernel iterates equal moreau's to rounding ({worst:.3e} < 1e-12)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
