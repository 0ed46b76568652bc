#!/usr/bin/env python
"""Where the default logistic prox spends its time (issue 32): ``moreau.prox(moreau.Logistic(X, y), w,
1.0, return_info=True)`` on benchmark 2's data (m = 1000, n = 200, d = 20), ``--calls`` calls under
cProfile with this process's CPU time as the clock, the functions with the largest own time, and the
number of calls of each evaluation hook with the batch it saw.

    python benchmarks/bench_prox_profile.py [--calls 10] [--top 25]
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_prox as bp  # noqa: E402  (sets one BLAS thread before numpy loads)
import numpy as np  # noqa: E402

mo = bp.mo


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--blas-threads", type=int, default=1)  # read by bench_prox at import
    a = p.parse_args(argv)
    bp.print_machine(bp.machine_info("numpy"), bp.git_info())
    X, y, w = bp.logistic_data(np.random.default_rng(2), 1000, 200, 20)
    call = lambda: mo.prox(mo.Logistic(X, y), w, 1.0, return_info=True)  # noqa: E731
    call()
    # the hooks Newton calls, with the batch each saw (one extra call, not profiled)
    seen = collections.Counter()
    cls = mo.Logistic
    hooks = {name: getattr(cls, name) for name in ("_eval", "_hess_at", "_local_curvature", "_take")}

    def spy(name, fn):
        def wrapped(self, *args, **kw):
            first = args[0]
            seen[
                (name, tuple(first.shape), bool(args[2]) if name == "_hess_at" and len(args) > 2 else None)
            ] += 1
            return fn(self, *args, **kw)

        return wrapped

    for name, fn in hooks.items():
        setattr(cls, name, spy(name, fn))
    try:
        _, info = call()
    finally:
        for name, fn in hooks.items():
            setattr(cls, name, fn)
    print(f"\none call: iterations {np.bincount(info.iterations).tolist()} (count per number), hooks:")
    for (name, shape, low), n in sorted(seen.items()):
        print(f"  {name:<18} first argument {shape}" + ("" if low is None else f" low={low}") + f": {n}x")
    load0 = bp._loadavg()
    pr = cProfile.Profile(time.process_time)
    t0 = time.process_time()
    pr.enable()
    for _ in range(a.calls):
        call()
    pr.disable()
    cpu = (time.process_time() - t0) / a.calls
    print(
        f"\n{a.calls} calls under cProfile, {cpu * 1e3:.1f} ms CPU per call; load {load0} -> {bp._loadavg()}"
    )
    print("own time per call (ms), share, calls per call, function:")
    st = pstats.Stats(pr)
    total = sum(v[2] for v in st.stats.values())
    for k, v in sorted(st.stats.items(), key=lambda kv: -kv[1][2])[: a.top]:
        print(
            f"  {v[2] / a.calls * 1e3:7.2f}  {v[2] / total * 100:5.1f} %  {v[1] / a.calls:7.1f}  "
            f"{Path(k[0]).name}:{k[1]}({k[2]})"
        )


if __name__ == "__main__":
    sys.exit(main())
