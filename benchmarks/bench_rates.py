#!/usr/bin/env python
r"""Monte Carlo throughput of the fedprox.thm1 check: trials per second on least squares.

    python benchmarks/bench_rates.py [--quick] [--json PATH] [--seed N] [--blas-threads N] [--backend cupy]

One trial = one data set of m = 10 clients, d = 20, n samples each (``moreau.data.least_squares``,
R = 0.1, mu = 1, L = 4, sigma = 1, the adaptive lambda of Theorem 1) and its FedProx solution
(global and local models) and squared errors.  Three ways, same problem, one process:

1. loop: what a user would write: per trial, draw the noise, build ``moreau.LeastSquares(X, y)``
   and call ``moreau.fl.fedprox_optimum``;
2. vectorised samples: chunks of trials, the full noise (trials, m, n) drawn, ``b = Xᵀy/n`` formed
   by one einsum, the FedProx solution by its precomputed affine map (numpy, no sufficient statistic);
3. sufficient statistic (``moreau.analysis.fedprox.thm1.least_squares_moments.monte_carlo_errors``): ``b_i``
   drawn directly as ``A_i w⋆ + σ/√n A_i^{1/2} ξ_i`` and the errors as ``bias + K ξ`` (cost independent of
   n).

With ``--backend cupy`` the sufficient-statistic path also runs on the GPU (the same function on
cupy arrays with a ``cupy.random.Generator``: another stream, so its estimate differs within its
standard error), at the check's chunk size and at chunks of 65,536 trials, the clock stopped after
the device synchronises.

Each row: best and median of k timed calls after a warm-up (``time.perf_counter``), the estimates
of E‖w̃⁽ᵍ⁾ − w⋆⁽ᵍ⁾‖² next to the exact value, and the ratio to the loop.  Then the peak memory
(``tracemalloc``) of 1e6 trials through the chunked path.  One BLAS thread by default (one core).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from functools import partial

_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _early_blas_threads(argv):
    """--blas-threads N (default 1) must act before numpy loads its BLAS; 0 keeps the defaults."""
    val = next((a.split("=", 1)[1] for a in argv if a.startswith("--blas-threads=")), None)
    if val is None and "--blas-threads" in argv[:-1]:
        val = argv[argv.index("--blas-threads") + 1]
    for var in _BLAS_VARS:
        if val is None:
            os.environ.setdefault(var, "1")
        elif val.strip() != "0":
            os.environ[var] = val.strip()


_early_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402 - numpy must load after the BLAS thread variables are set

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# the moreau imports follow the sys.path line: the checkout's moreau, not an installed one
import moreau  # noqa: E402 - after sys.path (above)
from moreau.analysis.fedprox.thm1 import lam_rule  # noqa: E402 - after sys.path (above)
from moreau.analysis.fedprox.thm1.least_squares_moments import (  # noqa: E402 - after sys.path (above)
    error_maps,
    exact_errors,
    monte_carlo_errors,
)
from moreau.data import least_squares  # noqa: E402 - after sys.path (above)
from moreau.fl import fedprox_optimum  # noqa: E402 - after sys.path (above)

M, D, R, MU, L, SIGMA = 10, 20, 0.1, 1.0, 4.0, 1.0


def _timed(fn, k):
    fn()  # warm-up
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), out


def _problem(n, seed):
    P = least_squares(seed, m=M, n=n, d=D, R=R, mu=MU, L=L, sigma=SIGMA)
    X = np.asarray(P.objective.X)
    A = np.swapaxes(X, -1, -2) @ X / n
    lam = float(lam_rule(np.sqrt(P.constants["rho2"]), R, n))
    return P, X, A, lam


def loop(P, X, lam, trials, rng):
    """Per trial: y = X w⋆ + σ ε, LeastSquares, fedprox_optimum; returns the global squared errors."""
    mean_y = (X @ P.w_star[..., None])[..., 0]
    out = np.empty(trials)
    for t in range(trials):
        y = mean_y + SIGMA * rng.standard_normal(mean_y.shape)
        w_g, _ = fedprox_optimum(moreau.LeastSquares(X, y), lam)
        out[t] = np.sum((w_g - P.w_star_global) ** 2)
    return out


def vectorised(P, X, A, bias, K, n, trials, rng):
    """Chunks of full samples (about 4e6 noise draws, 32 MB, per chunk); the errors by the affine
    map of b (no sufficient statistic)."""
    chunk = max(16, 4_000_000 // (M * n))
    a, V = np.linalg.eigh(A)
    inv_root = (V / np.sqrt(a)[..., None, :]) @ np.swapaxes(V, -1, -2)  # ξ_i = √n/σ A_i^{-1/2}(b_i − A_i w⋆)
    Kb = (K.reshape(-1, M, D)[:, :, None, :] @ inv_root).reshape(K.shape[0], M * D) * np.sqrt(n) / SIGMA
    out, done = [], 0
    while done < trials:
        c = min(chunk, trials - done)
        eps = rng.standard_normal((c, M, n))
        noise_b = SIGMA * np.einsum("mnd,cmn->cmd", X, eps) / n  # b − A w⋆
        err = noise_b.reshape(c, M * D) @ Kb.T + bias.reshape(-1)
        out.append(np.sum(err[:, :D] ** 2, axis=-1))
        done += c
    return np.concatenate(out)


def _gpu_rows(cupy, bias, K, trials, seed):
    """The sufficient-statistic path on cupy: ``{"gpu": row, "gpu_big_chunks": row}``."""
    from moreau.analysis.fedprox.thm1.least_squares_moments import CHUNK

    bg, Kg = cupy.asarray(bias), cupy.asarray(K)
    rng = cupy.random.default_rng(seed)
    out = {}
    for key, chunk in (("gpu", CHUNK), ("gpu_big_chunks", 65_536)):

        def call(chunk=chunk):
            mean, se = monte_carlo_errors(bg, Kg, trials, rng, chunk=chunk)
            return float(mean[0]), float(se[0])  # the copy to the host synchronises

        best, med, (mean0, se0) = _timed(call, 3)
        out[key] = dict(
            trials=trials, chunk=chunk, best_s=best, median_s=med, per_s=trials / best, estimate=mean0, se=se0
        )
    return out


def run(quick, seed, gpu=None):
    ns = (50, 500) if quick else (50, 500, 5000)
    rows = []
    for j, n in enumerate(ns):
        P, X, A, lam = _problem(n, seed + j)
        bias, K = error_maps(A, P.w_star, lam, SIGMA, n)
        exact = float(exact_errors(bias, K)[0])
        T_fast, T_vec, T_loop = (20_000, 2_000, 20) if quick else (200_000, max(2_000, 200_000 // n), 50)
        rng = np.random.default_rng(seed)
        best_f, med_f, (mean_f, se_f) = _timed(partial(monte_carlo_errors, bias, K, T_fast, rng), 3)
        best_v, med_v, sq_v = _timed(partial(vectorised, P, X, A, bias, K, n, T_vec, rng), 3)
        best_l, med_l, sq_l = _timed(partial(loop, P, X, lam, T_loop, rng), 1 if quick else 2)
        gpu_rows = _gpu_rows(gpu, bias, K, T_fast * 10, seed) if gpu is not None else {}
        rows.append(
            dict(
                n=n,
                lam=lam,
                exact=exact,
                **gpu_rows,
                fast=dict(
                    trials=T_fast,
                    best_s=best_f,
                    median_s=med_f,
                    per_s=T_fast / best_f,
                    estimate=float(mean_f[0]),
                    se=float(se_f[0]),
                ),
                vectorised=dict(
                    trials=T_vec,
                    best_s=best_v,
                    median_s=med_v,
                    per_s=T_vec / best_v,
                    estimate=float(sq_v.mean()),
                    se=float(sq_v.std(ddof=1) / np.sqrt(T_vec)),
                ),
                loop=dict(
                    trials=T_loop,
                    best_s=best_l,
                    median_s=med_l,
                    per_s=T_loop / best_l,
                    estimate=float(sq_l.mean()),
                    se=float(sq_l.std(ddof=1) / np.sqrt(T_loop)),
                ),
            )
        )
    return rows


def peak_memory(seed, trials):
    """Peak traced memory (numpy allocations included) of ``trials`` draws through the chunked path."""
    P, X, A, lam = _problem(50, seed)
    bias, K = error_maps(A, P.w_star, lam, SIGMA, 50)
    tracemalloc.start()
    t0 = time.perf_counter()
    mean, se = monte_carlo_errors(bias, K, trials, np.random.default_rng(seed))
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    unchunked = trials * (K.shape[0] + K.shape[1]) * 8  # ξ and the errors of all trials at once
    return dict(
        trials=trials,
        peak_bytes=peak,
        seconds_traced=seconds,
        unchunked_bytes=unchunked,
        estimate=float(mean[0]),
        exact=float(exact_errors(bias, K)[0]),
    )


def machine():
    info = {
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas_env": {v: os.environ.get(v) for v in _BLAS_VARS},
        "loadavg_start": os.getloadavg(),
    }
    try:
        import threadpoolctl

        info["blas"] = [
            {k: p.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for p in threadpoolctl.threadpool_info()
        ]
    except ImportError:
        info["blas"] = "threadpoolctl not installed"
    return info


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            return next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test of a few seconds")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--blas-threads", type=int, default=1, help="BLAS threads (0: the libraries' default)")
    ap.add_argument(
        "--backend",
        choices=("numpy", "cupy"),
        default="numpy",
        help="cupy: also the sufficient-statistic path on the GPU",
    )
    ap.add_argument(
        "--memory-trials", type=int, default=None, help="trials of the peak-memory run (default 1e6)"
    )
    args = ap.parse_args(argv)
    info = machine()
    print(
        f"# {info['cpu']}, {info['cpus']} cpus, python {info['python']}, numpy {info['numpy']}; BLAS {info['blas']}"
    )
    print(
        f"# m = {M}, d = {D}, R = {R}, mu = {MU}, L = {L}, sigma = {SIGMA}; load average {info['loadavg_start']}"
    )
    gpu = None
    if args.backend == "cupy":
        try:
            import cupy as gpu

            info["gpu"] = gpu.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception as exc:  # noqa: BLE001  (one line: what is missing)
            print(
                f"bench_rates: --backend cupy: cupy is not usable here ({type(exc).__name__}: {exc})",
                file=sys.stderr,
            )
            return 2
        print(f"# GPU: {info['gpu']}, cupy {gpu.__version__}")
    rows = run(args.quick, args.seed, gpu)
    print(
        f"{'n':>5} {'method':>20} {'trials':>8} {'best s':>8} {'median s':>9} {'trials/s':>10} "
        f"{'vs loop':>8}   E|w_g - w*_g|^2 (exact)"
    )
    for r in rows:
        for key, name in (
            ("loop", "per-trial loop"),
            ("vectorised", "vectorised samples"),
            ("fast", "sufficient statistic"),
            ("gpu", "suff. stat. [cupy]"),
            ("gpu_big_chunks", "[cupy] chunks 65536"),
        ):
            if key not in r:
                continue
            x = r[key]
            print(
                f"{r['n']:5d} {name:>20} {x['trials']:8d} {x['best_s']:8.3f} {x['median_s']:9.3f} "
                f"{x['per_s']:10.4g} {x['per_s'] / r['loop']['per_s']:8.4g}   "
                f"{x['estimate']:.4g} ± {x['se']:.2g} ({r['exact']:.4g})"
            )
    mem = peak_memory(args.seed, args.memory_trials or (100_000 if args.quick else 1_000_000))
    print(
        f"peak traced memory for {mem['trials']:.0e} trials (chunks of 4096): {mem['peak_bytes'] / 2**20:.1f} MiB "
        f"(all at once: {mem['unchunked_bytes'] / 2**30:.2f} GiB); {mem['seconds_traced']:.1f} s under tracemalloc; "
        f"estimate {mem['estimate']:.5g} vs exact {mem['exact']:.5g}"
    )
    info["loadavg_end"] = os.getloadavg()
    print(f"# load average at the end {info['loadavg_end']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": info, "rows": rows, "memory": mem}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
