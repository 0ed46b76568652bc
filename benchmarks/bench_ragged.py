#!/usr/bin/env python
r"""Ragged clients (size buckets, ``moreau.ragged``) against the padded layout, at pFedMe's sizes.

    python benchmarks/bench_ragged.py [--size-scale 5] [--clients 100] [--repeat 3] [--json PATH]
    python benchmarks/bench_ragged.py --many 100000 [--json PATH]

Data: ``moreau.data.synthetic(0.5, 0.5, 0, n_clients=100, size_scale=5)`` (multinomial, d = 60 + 1,
C = 10, D = 610; client sizes 250 ... 15,225, 133,539 training rows in all).  Prints

1. the peak memory of generating the data set, ragged (the default) and ``ragged=False`` (every
   client padded to the largest), each in a fresh subprocess: ``tracemalloc``'s peak of traced
   allocations (numpy's buffers included) and the maximum resident set (``ru_maxrss``, the whole
   process, the interpreter and the imports included; the baseline after the imports is printed);
2. the time of one FedAvg round (``moreau.fl.fedavg``, all clients, tau = 5 full-batch local steps;
   and pFedMe's setting S = 10, |D| = 20 mini-batches, tau = 5), ragged against the padded
   objective (``.padded()``) on the same data in one process: best and median of ``--repeat``
   calls after a warm-up, and the largest relative difference of the two results.

``--many N``: instead, N ragged clients (logistic, d = 20, sizes ``floor(lognormal(log 20, 1))``
clipped to [2, 2000]) in a fresh process: the traced peak and the resident set after building the
objective, after one FedAvg round (tau = 5 full-batch steps, then mini-batches of 2 without
replacement) and after one pFedMe round (S = N / 10, K = 5 inner steps on mini-batches of 20), against the
bytes of the data and of the padded layout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
try:
    import moreau as mo
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(REPO))
    import moreau as mo

MB = 1 << 20

_CHILD = r"""
import json, resource, sys, time, tracemalloc
sys.path.insert(0, {repo!r})
from moreau import data
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
tracemalloc.start()
t0 = time.perf_counter()
P = data.synthetic(0.5, 0.5, 0, n_clients={m}, size_scale={scale}, ragged={ragged})
dt = time.perf_counter() - t0
peak = tracemalloc.get_traced_memory()[1] / 2**20
tracemalloc.stop()
print(json.dumps({{"traced_peak_mb": peak, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "import_rss_mb": base, "seconds": dt, "type": type(P.objective).__name__}}))
"""


_MANY = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
sys.path.insert(0, {repo!r})
import moreau as mo
N, d = {N}, 20
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
rng = np.random.default_rng(0)
sizes = np.clip(np.floor(rng.lognormal(np.log(20), 1.0, N)).astype(int), 2, 2000)
X = rng.standard_normal((int(sizes.sum()), d)) / np.sqrt(d)
owner = np.repeat(np.arange(N), sizes)
y = np.where(
    rng.random(len(X)) < 1 / (1 + np.exp(-np.einsum("jd,jd->j", X, rng.standard_normal((N, d))[owner]))), 1.0, -1.0
)
del owner
out = {{"clients": N, "rows": int(sizes.sum()), "n_max": int(sizes.max()), "data_mb": (X.nbytes + y.nbytes) / 2**20,
        "padded_mb": N * int(sizes.max()) * (d + 1) * 8 / 2**20, "rss_after_data_mb": rss()}}
tracemalloc.start()
t = time.perf_counter()
f = mo.ragged(mo.Logistic, X, y, sizes)
out["build"] = {{"s": time.perf_counter() - t, "traced_peak_mb": tracemalloc.get_traced_memory()[1] / 2**20,
                 "slots": int(f.layout.slots), "buckets": len(f.layout.buckets), "rss_mb": rss()}}
L = float(np.max(np.asarray(f.smoothness())))
for name, call in (("fedavg", lambda: mo.fl.fedavg(f, eta=1 / L, tau=5, rounds=1)),
                   ("fedavg-B", lambda: mo.fl.fedavg(f, eta=1 / L, tau=5, rounds=1, batch_size=2, rng=2)),
                   ("pfedme", lambda: mo.fl.pfedme(f, lam=15.0, eta=0.005, beta=1.0, R=5, rounds=1, S=N // 10,
                                                   batch_size=20, inner=5, inner_eta=0.005, rng=1,
                                                   personal="none"))):
    tracemalloc.reset_peak()
    t = time.perf_counter()
    h = call()
    out[name] = {{"s": time.perf_counter() - t, "traced_peak_mb": tracemalloc.get_traced_memory()[1] / 2**20,
                  "rss_mb": rss(), "finite": bool(np.isfinite(np.asarray(h.w_global)).all())}}
print(json.dumps(out))
"""


def many(N):
    """Memory and time of N ragged clients (``--many``) in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _MANY.format(repo=str(REPO), N=N)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def generate(m, scale, ragged):
    """Peak memory and time of one ``synthetic`` call in a fresh interpreter."""
    code = _CHILD.format(repo=str(REPO), m=m, scale=scale, ragged=ragged)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed(fn, repeat):
    """``(result, best s, median s)`` of ``repeat`` calls after one warm-up."""
    out = fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return out, min(ts), statistics.median(ts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--clients", type=int, default=100)
    p.add_argument("--size-scale", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--many", type=int, metavar="N", help="N ragged clients: memory and one round (see above)")
    a = p.parse_args(argv)
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}, "
        f"numpy {np.__version__}, moreau {mo.__version__} ({commit}), load {os.getloadavg()[0]:.2f}"
    )
    if a.many:
        r = many(a.many)
        r["commit"] = commit
        print(
            f"{r['clients']} ragged clients, {r['rows']} rows (largest client {r['n_max']}), d = 20: data "
            f"{r['data_mb']:.0f} MB; padded to the largest client it would be {r['padded_mb']:.0f} MB; "
            f"resident {r['rss_after_data_mb']:.0f} MB after drawing it"
        )
        b = r["build"]
        print(
            f"  moreau.ragged(Logistic, ...): {b['s']:.1f} s, traced peak {b['traced_peak_mb']:.0f} MB, "
            f"{b['slots']} sample slots in {b['buckets']} buckets, resident {b['rss_mb']:.0f} MB"
        )
        for name in ("fedavg", "fedavg-B", "pfedme"):
            x = r[name]
            print(
                f"  one {name} round: {x['s']:.1f} s, traced peak {x['traced_peak_mb']:.0f} MB, resident "
                f"{x['rss_mb']:.0f} MB, finite {x['finite']}"
            )
        if a.json:
            Path(a.json).write_text(json.dumps(r, indent=2) + "\n")
        return
    res = {"clients": a.clients, "size_scale": a.size_scale, "commit": commit, "memory": {}, "fedavg": {}}
    print(
        f"\n1. data.synthetic(0.5, 0.5, 0, n_clients={a.clients}, size_scale={a.size_scale}): "
        "generation in a fresh process"
    )
    for ragged in (True, False):
        r = generate(a.clients, a.size_scale, ragged)
        res["memory"]["ragged" if ragged else "padded"] = r
        print(
            f"   {'ragged' if ragged else 'padded (ragged=False)'}: traced peak {r['traced_peak_mb']:.0f} MB, "
            f"max resident {r['maxrss_mb']:.0f} MB (after imports {r['import_rss_mb']:.0f} MB), "
            f"{r['seconds']:.1f} s -> {r['type']}"
        )
    P = mo.data.synthetic(0.5, 0.5, 0, n_clients=a.clients, size_scale=a.size_scale)
    f = P.objective
    g = f.padded()
    lay = f.layout
    n = int(lay.sizes.sum())
    print(
        f"\n   training rows {n}; ragged holds {lay.slots} sample slots in {len(lay.buckets)} buckets "
        f"(widths {[w for _, w in lay.buckets]}), padded {lay.n_max * lay.N} ({lay.n_max} x {lay.N})"
    )
    res["layout"] = {
        "rows": n,
        "ragged_slots": lay.slots,
        "padded_slots": lay.n_max * lay.N,
        "buckets": [[int(i.size), w] for i, w in lay.buckets],
    }
    L = float(np.max(np.asarray(f.smoothness())))
    cases = {
        "full batch, all clients, tau = 5": dict(eta=1 / L, tau=5, rounds=1),
        "S = 10, |D| = 20, tau = 5": dict(eta=1 / L, tau=5, rounds=1, S=10, batch_size=20),
    }
    print(f"\n2. one FedAvg round (moreau.fl.fedavg, eta = 1/L = {1 / L:.3g}); best / median of {a.repeat}")
    for name, kw in cases.items():
        row = {}
        for label, obj in (("ragged", f), ("padded", g)):
            h, best, med = timed(lambda obj=obj, kw=kw: mo.fl.fedavg(obj, rng=7, **kw), a.repeat)
            row[label] = {"best_s": best, "median_s": med, "w": np.asarray(h.w_global[-1])}
        wr, wp = row["ragged"].pop("w"), row["padded"].pop("w")
        row["max_rel_diff"] = float(np.max(np.abs(wr - wp)) / np.max(np.abs(wp)))
        row["speedup"] = row["padded"]["best_s"] / row["ragged"]["best_s"]
        res["fedavg"][name] = row
        print(
            f"   {name}: ragged {row['ragged']['best_s']:.3f} / {row['ragged']['median_s']:.3f} s, "
            f"padded {row['padded']['best_s']:.3f} / {row['padded']['median_s']:.3f} s "
            f"({row['speedup']:.1f}x); results differ by {row['max_rel_diff']:.1e} (relative)"
        )
    print(f"\nload {os.getloadavg()[0]:.2f} at the end")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
