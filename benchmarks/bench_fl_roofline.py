#!/usr/bin/env python
r"""A FedAvg / FedProx round on softmax clients against the machine's floor and against itself before
the softmax groups of ``moreau.fl._blocks`` (issue 32), in one process.

    python benchmarks/bench_fl_roofline.py [--size N,d,C,SIZES[,n] ...] [--alternations 7] [--json PATH]

Data, per-client loop and hand-vectorised round are ``bench_fl``'s (same draws, same iterates).  Per
size and algorithm (tau = K = 5 full-batch local steps, T = 2 rounds per call), five calls alternate
``--alternations`` times in a shuffled order, each timed in CPU seconds of this process
(``process_time``): **moreau** (``moreau.fl``), **moreau-whole** (the same call with the softmax
groups turned off: the whole batch, or the ragged buckets, at once: the code before issue 32),
**loop**, **vec**.  Reported: medians per round and the ratios of the medians.

The floor, measured in the same process (one BLAS thread):

* flops per round ``4 d C n_total tau`` (the logits' product and the gradient's, per sample per
  step; the exponentials and the elementwise work are not counted);
* the GEMM rate on the round's own shapes: the products of a round's tau local steps as ``moreau``
  forms them (``(C, d) x (d, w)`` and ``(C, w) x (w, d)`` per client, batched over a group of clients
  of similar size, padded to the group's largest, the tau steps of one group before the next),
  flops counted on the real samples only; and, for reference, a per-client loop of those products
  on each client's own rows and the rate of a 1000 x 1000 square product;
* the bytes a round must move ``n_total (d + 2) 8`` (the samples, labels and weights, read once per
  round when a group stays in cache across its steps) and the bandwidth of a sum over a 256 MB array;
* the floor ``max(flops / GEMM rate, bytes / bandwidth)`` and moreau's time as a multiple of it.

``floor`` is backend-generic: given ``xp`` (numpy or cupy, the objective built on its arrays) it
measures the same products and the same sum on that backend's arrays, ``sync()`` (cupy:
``cupy.cuda.Device().synchronize``) right before every clock reading and the wall clock on a device
(``timing``); on cupy there are no softmax groups, so the rate is that of the whole batch's (or the
ragged buckets') batched products, as moreau forms them there.  ``bench_fl.py --backend cupy``
reports the device's roofline per row with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fl as bf  # noqa: E402  (bench_prox sets the BLAS threads before numpy loads)
import numpy as np  # noqa: E402

bp = bf.bp
fb = bf.mo.fl._blocks
SIZES = [
    (1000, 60, 10, "lognormal", 50),
    (1000, 60, 10, "balanced", 50),
    (100, 60, 10, "lognormal", 50),
    (100, 60, 10, "balanced", 50),
]


def _nosync():
    """The ``sync`` of a host backend: numpy's calls return when their work is done."""


def timing(xp, sync=None, clock=None):
    """``(sync, clock)`` for timings of work on ``xp``'s arrays: on numpy, no sync and this process's
    CPU time (``process_time``); on cupy (a module named ``cupy``), ``cupy.cuda.Device().synchronize``
    and the wall clock (``perf_counter``: CPU time says nothing of a device's work).  ``sync`` and
    ``clock`` given here are kept (the tests pass spies)."""
    host = getattr(xp, "__name__", "") == "numpy"
    if sync is None:
        sync = _nosync if host else xp.cuda.Device().synchronize
    if clock is None:
        clock = time.process_time if host else time.perf_counter
    return sync, clock


def _rate(fn, amount, k=5, sync=_nosync, clock=time.process_time):
    """``amount`` (flops or bytes) / the median of ``k`` timed calls of ``fn`` after one warm-up,
    ``sync()`` right before each clock reading (the device's queue empty at the start, and ``fn``'s
    work finished at the end)."""
    fn()
    sync()
    ts = []
    for _ in range(k):
        sync()
        t = clock()
        fn()
        sync()
        ts.append(clock() - t)
    return amount / float(np.median(ts))


def _blocks(f, groups, xp):
    """``[(Xt (g, d, w), X (g, w, d))]``: the sample blocks of a round's products as moreau forms them,
    on ``xp``: the softmax groups' (numpy only), else the whole batch's parts (padded, or the ragged
    buckets; what moreau forms on cupy, where there are no groups)."""
    if groups:
        return [(xp.asarray(g._Xt), xp.asarray(g.X)) for _, g in groups]
    parts = getattr(f, "parts", (f,))
    out = []
    for p in parts:
        X = xp.asarray(p.X).reshape(-1, *p.X.shape[-2:])
        out.append((xp.ascontiguousarray(xp.swapaxes(X, -1, -2)), X))
    return out


def floor(f, sizes, d, C, xp=np, sync=None, clock=None, square_n=1000, stream_elems=1 << 25):
    """The roofline numbers of one round (dict), measured on ``xp``'s arrays (numpy or cupy; ``f``
    built on them) with ``timing(xp, sync, clock)``: one implementation for both backends.
    ``square_n`` and ``stream_elems`` (256 MB of float64 by default) are the reference square
    product's size and the bandwidth array's length."""
    sync, clock = timing(xp, sync, clock)
    n_total = int(sizes.sum())
    flops = 4 * d * C * n_total * bf.TAU
    groups = fb._softmax_groups(f) or []  # none where one group would hold every client, or off numpy
    blocks = _blocks(f, groups, xp)
    rng = np.random.default_rng(0)
    work = [
        (xp.asarray(rng.standard_normal((Xt.shape[0], C, d))), Xt, X, xp.empty((Xt.shape[0], C, Xt.shape[2])))
        for Xt, X in blocks
    ]
    work = [(W, Xt, X, Z, xp.empty_like(W)) for W, Xt, X, Z in work]

    def round_products():  # tau steps of one block before the next, as the round runs them
        for W, Xt, X, Z, G in work:
            for _ in range(bf.TAU):
                xp.matmul(W, Xt, out=Z)
                xp.matmul(Z, X, out=G)

    rate = _rate(round_products, flops, sync=sync, clock=clock)
    Xs = [xp.asarray(rng.standard_normal((int(n), d))) for n in sizes]
    Wc = xp.asarray(rng.standard_normal((C, d)))

    def loop_products():
        for X in Xs:
            for _ in range(bf.TAU):
                Z = Wc @ X.T
                Z @ X

    rate_loop = _rate(loop_products, flops, k=3, sync=sync, clock=clock)
    A = xp.asarray(rng.standard_normal((square_n, square_n)))
    square = _rate(lambda: A @ A, 2.0 * square_n**3, k=3, sync=sync, clock=clock)
    big = xp.ones(stream_elems)
    bw = _rate(big.sum, big.nbytes, k=3, sync=sync, clock=clock)
    nbytes = n_total * (d + 2) * 8
    # numpy without groups: the per-client loop's rate (as before); elsewhere the blocks' batched rate
    host_whole = not groups and getattr(xp, "__name__", "") == "numpy"
    return {
        "backend": getattr(xp, "__name__", str(xp)),
        "n_total": n_total,
        "padded_slots": int(sum(g._Xt.shape[0] * g._Xt.shape[2] for _, g in groups)),
        "flops_per_round": flops,
        "gemm_rate_round_shapes": rate,
        "gemm_rate_per_client_loop": rate_loop,
        "gemm_rate_square": square,
        "bytes_per_round": nbytes,
        "bandwidth": bw,
        "floor_s": max(flops / (rate_loop if host_whole else rate), nbytes / bw),
    }


def _calls(algo, f, clients, vec, sizes, seed):
    """The four timed calls of one size and algorithm."""

    def whole():
        real = fb._softmax_groups
        fb._softmax_groups = lambda f: None
        try:
            return bf.run_moreau(algo, f, seed)
        finally:
            fb._softmax_groups = real

    return {
        "moreau": lambda: bf.run_moreau(algo, f, seed),
        "moreau-whole": whole,
        "loop": lambda: bf.run_numpy(algo, clients, sizes, seed, True),
        "vec": lambda: bf.run_numpy(algo, vec, sizes, seed, False),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--size", action="append", metavar="N,d,C,SIZES[,n]")
    p.add_argument("--only", action="append", choices=("fedavg", "fedprox"))
    p.add_argument("--alternations", type=int, default=7)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--blas-threads", type=int, default=1)  # read by bench_prox at import
    a = p.parse_args(argv)
    sizes_list = SIZES
    if a.size:
        sizes_list = [
            tuple(int(v) if v.isdigit() else v for v in s.split(",")) + ((50,) if s.count(",") == 3 else ())
            for s in a.size
        ]
    info, git = bp.machine_info("numpy"), bf.git_info()
    bp.print_machine(info, git)
    rows = []
    for N, d, C, kind, n in sizes_list:
        f, clients, vec, sizes = bf.make_data(np.random.default_rng(a.seed), N, d, C, kind, n)
        fl_ = floor(f, sizes, d, C)
        print(
            f"\nN = {N}, d = {d}, C = {C}, {kind} (n = {n}): {fl_['n_total']} samples, "
            + (
                f"groups hold {fl_['padded_slots']} ({fl_['padded_slots'] / fl_['n_total']:.3f}x)\n"
                if fl_["padded_slots"]
                else "no groups (the whole batch; the floor from the per-client loop's rate)\n"
            )
            + f"  flops/round 4 d C n tau = {fl_['flops_per_round'] / 1e9:.3f} GFLOP; GEMM rate on the round's "
            f"shapes {fl_['gemm_rate_round_shapes'] / 1e9:.1f} GFLOP/s (per-client loop "
            f"{fl_['gemm_rate_per_client_loop'] / 1e9:.1f}, square 1000 {fl_['gemm_rate_square'] / 1e9:.1f})\n"
            f"  bytes/round n (d + 2) 8 = {fl_['bytes_per_round'] / 1e6:.1f} MB; bandwidth "
            f"{fl_['bandwidth'] / 1e9:.1f} GB/s; floor max(flops/rate, bytes/bw) = {fl_['floor_s'] * 1e3:.1f} ms",
            flush=True,
        )
        for algo in a.only or ["fedavg", "fedprox"]:
            fns = _calls(algo, f, clients, vec, sizes, a.seed)
            out = {k: fn() for k, fn in fns.items()}
            times = {k: [] for k in fns}
            order = np.random.default_rng(len(rows))
            load0 = bp._loadavg()
            for _ in range(a.alternations):
                for k in order.permutation(list(fns)):
                    t = time.process_time()
                    fns[k]()
                    times[k].append((time.process_time() - t) / bf.T)
            med = {k: float(np.median(v)) for k, v in times.items()}
            scale = float(np.abs(out["loop"]).max())
            diff = {k: float(np.abs(out[k] - out["loop"]).max()) / scale for k in fns}
            row = {
                "N": N,
                "d": d,
                "C": C,
                "sizes": kind,
                "n": n,
                "algo": algo,
                "floor": fl_,
                "median_s_per_round": med,
                "times": times,
                "rel_diff_to_loop": diff,
                "load": [load0, bp._loadavg()],
            }
            rows.append(row)
            m = med["moreau"]
            print(
                f"  {algo:<8} ms/round (CPU median of {a.alternations}): moreau {m * 1e3:.1f}, moreau-whole "
                f"{med['moreau-whole'] * 1e3:.1f}, loop {med['loop'] * 1e3:.1f}, vec {med['vec'] * 1e3:.1f}; "
                f"x whole {med['moreau-whole'] / m:.2f}, x loop {med['loop'] / m:.2f}, x vec {med['vec'] / m:.2f}; "
                f"moreau / floor {m / fl_['floor_s']:.2f}; rel. diff to the loop "
                + ", ".join(f"{k} {v:.0e}" for k, v in diff.items() if k != "loop")
                + f"; load {row['load'][0][0]:.1f} -> {row['load'][1][0]:.1f}",
                flush=True,
            )
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {"machine": info, "git": git, "rows": rows, "when": time.strftime("%Y-%m-%d %H:%M:%S")},
                indent=1,
                default=bp._json_default,
            )
        )
        print(f"results written to {a.json}")


if __name__ == "__main__":
    sys.exit(main())
