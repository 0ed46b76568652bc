#!/usr/bin/env python
r"""pFedMe (K inner steps on mini-batches) and FedAvg at N = 1000 lognormal softmax clients against
the per-client loop, the floor of their products, and where the time goes (issue 32), in one process.

    python benchmarks/bench_fl_ragged.py [--alternations 7] [--seed 19] [--json PATH]

Data, loop and moreau calls are ``bench_fl``'s (N = 1000, d = 60, C = 10, lognormal sizes, T = 2
rounds per call; pFedMe R = 5 local rounds of K = 5 inner gradient steps on mini-batches of B = 20;
FedAvg tau = 5 full-batch steps).  Printed:

* **ratios**: moreau and the loop alternate ``--alternations`` times in a shuffled order, CPU time of
  this process (``process_time``), medians per round, and the median of the per-alternation ratios;
* **floors** measured here: pFedMe's products ``4 d C B N R K`` flops per round at the GEMM rate of
  those shapes batched over the clients as moreau forms them (``(C, d) x (d, B)`` and
  ``(C, B) x (B, d)`` per client), against the bytes a round must move (``R`` gathers of
  ``N B (d + 2)`` numbers, read and written) at the bandwidth of a 256 MB sum; FedAvg's from
  ``bench_fl_roofline.floor`` (its groups' products, data once per round);
* **profile**: one call of each under ``cProfile``, the functions with the largest own time;
* **segment sums** (the formulation the issue proposes for ragged clients): one FedAvg local step on
  all clients' concatenated samples, the logits ``x_j^T W_{i(j)}`` per sample and the gradient
  ``np.add.reduceat`` over each client's samples of ``x_j r_j^T``, timed beside moreau's step; it
  forms ``n_total x d x C`` numbers per step (the products per sample, not in cache-sized GEMMs).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fl as bf  # noqa: E402  (bench_prox sets the BLAS threads before numpy loads)
import bench_fl_roofline as br  # noqa: E402
import numpy as np  # noqa: E402

bp = bf.bp
ALGOS = ("pfedme-K", "fedavg")


def pfedme_floor(N, d, C, xp=np, sync=None, clock=None, stream_elems=1 << 25):
    """The floor of one pFedMe-K round: flops at the rate of its batched products, bytes at the
    bandwidth; measured on ``xp``'s arrays with ``bench_fl_roofline.timing(xp, sync, clock)`` (the one
    implementation for numpy and cupy)."""
    sync, clock = br.timing(xp, sync, clock)
    R = K = bf.TAU
    flops = 4 * d * C * bf.B * N * R * K
    rng = np.random.default_rng(0)
    W, X = xp.asarray(rng.standard_normal((N, C, d))), xp.asarray(rng.standard_normal((N, bf.B, d)))
    Xt = xp.ascontiguousarray(xp.swapaxes(X, 1, 2))
    Z, G = xp.empty((N, C, bf.B)), xp.empty((N, C, d))

    def products():
        for _ in range(R * K):
            xp.matmul(W, Xt, out=Z)
            xp.matmul(Z, X, out=G)

    rate = br._rate(products, flops, sync=sync, clock=clock)
    big = xp.ones(stream_elems)
    bw = br._rate(big.sum, big.nbytes, k=3, sync=sync, clock=clock)
    nbytes = 2 * R * N * bf.B * (d + 2) * 8
    return {
        "backend": getattr(xp, "__name__", str(xp)),
        "flops_per_round": flops,
        "gemm_rate": rate,
        "bytes_per_round": nbytes,
        "bandwidth": bw,
        "floor_s": max(flops / rate, nbytes / bw),
    }


def segment_step(X, Y, owner, offsets, W, eta, mu):
    """One FedAvg step of every client on the concatenated samples: ``X (n, d)``, one-hot ``Y (n, C)``,
    ``W (N, d, C)``; per-sample logits, softmax, and the per-client sums by ``np.add.reduceat``."""
    Wj = W[owner]  # (n, d, C): each sample's model
    Z = np.einsum("jd,jdc->jc", X, Wj)
    Z -= Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    P -= Y
    sizes = np.diff(np.append(offsets, X.shape[0]))
    P /= np.repeat(sizes, sizes)[:, None]
    G = np.add.reduceat(X[:, :, None] * P[:, None, :], offsets, axis=0)  # (N, d, C)
    return W - eta * (G + mu * W)


def profile(fn, top=12):
    pr = cProfile.Profile(time.process_time)  # CPU time of this process
    pr.enable()
    fn()
    pr.disable()
    st = pstats.Stats(pr)
    total = sum(v[2] for v in st.stats.values())
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    out = [
        {"function": f"{Path(k[0]).name}:{k[1]}({k[2]})", "calls": v[1], "own_s": v[2], "share": v[2] / total}
        for k, v in rows
    ]
    s = io.StringIO()
    for r in out:
        s.write(
            f"    {r['own_s'] * 1e3:8.1f} ms {r['share'] * 100:5.1f} %  {r['calls']:6d} calls  {r['function']}\n"
        )
    return out, total, s.getvalue()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--alternations", type=int, default=7)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--blas-threads", type=int, default=1)  # read by bench_prox at import
    a = p.parse_args(argv)
    info, git = bp.machine_info("numpy"), bf.git_info()
    bp.print_machine(info, git)
    N, d, C = 1000, 60, 10
    f, clients, vec, sizes = bf.make_data(np.random.default_rng(a.seed), N, d, C, "lognormal", 50)
    print(
        f"\nN = {N}, d = {d}, C = {C}, lognormal sizes: {int(sizes.sum())} samples; T = {bf.T} rounds per call"
    )
    out = {"N": N, "d": d, "C": C, "n_total": int(sizes.sum()), "rows": {}}
    floors = {"pfedme-K": pfedme_floor(N, d, C), "fedavg": br.floor(f, sizes, d, C)}
    for algo, fl_ in floors.items():
        print(
            f"  floor {algo}: {fl_['flops_per_round'] / 1e9:.3f} GFLOP/round at "
            f"{fl_.get('gemm_rate', fl_.get('gemm_rate_round_shapes')) / 1e9:.1f} GFLOP/s, "
            f"{fl_['bytes_per_round'] / 1e6:.1f} MB/round at {fl_['bandwidth'] / 1e9:.1f} GB/s: "
            f"{fl_['floor_s'] * 1e3:.1f} ms per round"
        )
    for algo in ALGOS:
        fns = {
            "moreau": lambda algo=algo: bf.run_moreau(algo, f, a.seed),
            "loop": lambda algo=algo: bf.run_numpy(algo, clients, sizes, a.seed, True),
        }
        res = {k: fn() for k, fn in fns.items()}
        rel = float(np.abs(res["moreau"] - res["loop"]).max() / np.abs(res["loop"]).max())
        times = {k: [] for k in fns}
        order = np.random.default_rng(7)
        load0 = bp._loadavg()
        for _ in range(a.alternations):
            for k in order.permutation(list(fns)):
                t = time.process_time()
                fns[k]()
                times[k].append((time.process_time() - t) / bf.T)
        load1 = bp._loadavg()
        med = {k: float(np.median(v)) for k, v in times.items()}
        paired = float(np.median([lo / mo for mo, lo in zip(times["moreau"], times["loop"], strict=True)]))
        fl_s = floors[algo]["floor_s"]
        print(
            f"\n  {algo}: ms/round (CPU, median of {a.alternations}): moreau {med['moreau'] * 1e3:.1f}, "
            f"loop {med['loop'] * 1e3:.1f}; x loop {med['loop'] / med['moreau']:.2f} (paired {paired:.2f}); "
            f"moreau / floor {med['moreau'] / fl_s:.2f}, loop / floor {med['loop'] / fl_s:.2f}; "
            f"rel. diff to the loop {rel:.0e}; load {load0[0]:.2f} -> {load1[0]:.2f}"
        )
        prof, total, text = profile(fns["moreau"])
        print(
            f"  profile of one moreau call ({total * 1e3:.0f} ms CPU own time in all, cProfile):\n{text}",
            end="",
        )
        out["rows"][algo] = {
            "median_s_per_round": med,
            "paired_ratio": paired,
            "times": times,
            "floor": floors[algo],
            "rel_diff_to_loop": rel,
            "load": [load0, load1],
            "profile": prof,
        }
    # segment sums against moreau's full-batch step (FedAvg, one local step of every client)
    X = np.concatenate([c["X"] for c in clients])
    Y = np.concatenate([c["T"] for c in clients])
    owner = np.repeat(np.arange(N), sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    W0 = np.random.default_rng(1).standard_normal((N, d, C)) * 0.1
    eta, mu = bf.HP["eta"], bf.HP["mu"]

    def seg():
        return segment_step(X, Y, owner, offsets, W0, eta, mu)

    def ref():  # the loop's one step per client (the same formulas as bench_fl.grad)
        return np.stack(
            [W0[i] - eta * bf.grad(c, W0[i].reshape(-1)).reshape(d, C) for i, c in enumerate(clients)]
        )

    grad_all = bf.mo.fl._common.gradient(f)[0]  # the gradient moreau.fl's steps call

    def moreau_step():  # moreau's gradient of every client at W0 (one local step's products)
        return grad_all(W0.reshape(N, d * C))

    diff = float(np.abs(seg() - ref()).max() / np.abs(ref()).max())
    ts = {"segment": [], "loop": [], "moreau grad": []}
    calls = {"segment": seg, "loop": ref, "moreau grad": moreau_step}
    for _ in range(5):
        for k, fn in calls.items():
            t = time.process_time()
            fn()
            ts[k].append(time.process_time() - t)
    seg_med = {k: float(np.median(v)) for k, v in ts.items()}
    print(
        "\n  one FedAvg local step of all clients (CPU, median of 5): segment sums "
        f"{seg_med['segment'] * 1e3:.1f} ms, per-client loop {seg_med['loop'] * 1e3:.1f} ms, moreau's "
        f"gradient (ragged buckets, no groups) {seg_med['moreau grad'] * 1e3:.1f} ms; segment vs loop rel. "
        f"diff {diff:.0e}; load {bp._loadavg()[0]:.2f}"
    )
    out["segment_step"] = {"median_s": seg_med, "rel_diff_to_loop": diff}
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {"machine": info, "git": git, **out, "when": time.strftime("%Y-%m-%d %H:%M:%S")},
                indent=1,
                default=bp._json_default,
            )
        )
        print(f"results written to {a.json}")


if __name__ == "__main__":
    sys.exit(main())
