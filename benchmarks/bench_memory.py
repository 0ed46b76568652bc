#!/usr/bin/env python
r"""Peak memory of the quadratic core at large sizes (``tracemalloc``: numpy allocations).

    python benchmarks/bench_memory.py [--m 10000] [--d 200] [--json PATH]

Measures, for a batch of ``m`` symmetric ``d x d`` matrices (float64; ``A`` alone is
``8 m d^2`` bytes), the peak and the retained memory of

1. ``Quadratic(A, b)`` — its one checked copy of ``A`` (the input stays the caller's);
2. ``prox`` at one ``lam`` per client (the certified Cholesky route);
3. ``prox`` at one ``lam`` with ``return_info=True`` (Cholesky route, T alone for the smallest
   eigenvalue, its proof, the certificate);

each above what was allocated before it, in MB, with the size of the output for comparison.
Timing is reported too (one call each, ``time.perf_counter``), for orientation only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
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


def spd_batch(rng, m, d):
    """``M M^T / d + 0.01 I`` per client, built block by block (no temporary of A's size)."""
    A = np.empty((m, d, d))
    for i in range(0, m, 256):
        M = rng.standard_normal((min(256, m - i), d, d))
        np.matmul(M, np.swapaxes(M, -1, -2), out=A[i : i + 256])
        A[i : i + 256] /= d
        A[i : i + 256] += 0.01 * np.eye(d)
    return A


def measured(fn):
    """``(result, peak MB above the start, retained MB above the start, seconds)``."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, (peak - base) / MB, (now - base) / MB, dt


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--m", type=int, default=10_000)
    p.add_argument("--d", type=int, default=200)
    p.add_argument("--seed", type=int, default=20240607)
    p.add_argument("--json", metavar="PATH")
    a = p.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    A = spd_batch(rng, a.m, a.d)
    b, w = rng.standard_normal((a.m, a.d)), rng.standard_normal((a.m, a.d))
    size_A, size_out = A.nbytes / MB, w.nbytes / MB
    print(f"m = {a.m}, d = {a.d}: A = {size_A:.0f} MB, one output = {size_out:.1f} MB (seed {a.seed})")
    rows = {}
    q, pk, kept, dt = measured(lambda: mo.Quadratic(A, b))
    rows["Quadratic()"] = dict(peak_mb=pk, retained_mb=kept, seconds=dt)
    _, pk, kept, dt = measured(lambda: mo.prox(q, w, 1.0))
    rows["prox, 1 lam (chol)"] = dict(peak_mb=pk, retained_mb=kept, seconds=dt)
    _, pk, kept, dt = measured(lambda: mo.prox(q, w, 1.0, return_info=True))
    rows["prox, 1 lam, return_info (chol + T + proof)"] = dict(peak_mb=pk, retained_mb=kept, seconds=dt)
    for k, r in rows.items():
        print(
            f"  {k:<42} peak {r['peak_mb']:9.1f} MB  retained {r['retained_mb']:9.1f} MB  {r['seconds']:7.2f} s"
        )
    if a.json:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        Path(a.json).write_text(
            json.dumps(
                {
                    "params": vars(a),
                    "A_mb": size_A,
                    "output_mb": size_out,
                    "rows": rows,
                    "versions": {
                        "python": platform.python_version(),
                        "numpy": np.__version__,
                        "moreau": getattr(mo, "__version__", "?"),
                    },
                    "machine": platform.machine(),
                    "commit": commit,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
