#!/usr/bin/env python
"""Issue 32, "≥ 1× the hand-vectorised round": moreau before (git ``BASE``) and after (the working
tree) beside ``bench_fl``'s hand-vectorised round, in one process.

    python benchmarks/bench_vec_issue32.py [K] [--big]     # K alternations (default 9)

The functions changed for this comparison (``fedavg``, ``fedprox``, ``_blocks._softmax_groups``,
``_common.gathered``) are read from git at ``BASE`` and swapped in for the "before" calls.  Per row
(softmax, d = 60, C = 10, N = 100 balanced; with ``--big`` also pFedMe K-step at N = 1000 balanced
and lognormal): every call (T = 2 rounds) runs once per alternation in a shuffled order, CPU time of
this process; medians per round, the ratio of the medians and the median of the per-alternation
ratios; before and after compared bit for bit, moreau against vec as a relative difference; the load
average printed per row.  Needs git and the commit in the repository."""

import ast
import os
import random
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fl as bf  # noqa: E402  (sets one BLAS thread before numpy loads)
import numpy as np  # noqa: E402

import moreau.fl as fl  # noqa: E402
import moreau.fl._blocks as BL  # noqa: E402
import moreau.fl._common as CM  # noqa: E402
import moreau.fl._fedprox as FP  # noqa: E402
import moreau.fl._pfedme as PF  # noqa: E402

BASE = "1b8ad6c"
REPO = str(Path(__file__).resolve().parents[1])


def load(mod, path, name):
    """The function ``name`` of ``path`` at ``BASE``, defined in a copy of ``mod``'s namespace."""
    src = subprocess.check_output(["git", "-C", REPO, "show", f"{BASE}:{path}"], text=True)
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == name)
    ns = dict(vars(mod))
    exec(textwrap.dedent(ast.get_source_segment(src, node)), ns)
    return ns[name]


OLD = {
    "fedavg": load(FP, "moreau/fl/_fedprox.py", "fedavg"),
    "fedprox": load(FP, "moreau/fl/_fedprox.py", "fedprox"),
    "groups": load(BL, "moreau/fl/_blocks.py", "_softmax_groups"),
    "gathered": load(CM, "moreau/fl/_common.py", "gathered"),
}
NEW = {"fedavg": FP.fedavg, "fedprox": FP.fedprox, "groups": BL._softmax_groups, "gathered": CM.gathered}


def use(fns):
    fl.fedavg, fl.fedprox = fns["fedavg"], fns["fedprox"]
    BL._softmax_groups = fns["groups"]
    CM.gathered = PF.gathered = fns["gathered"]


def row(N, kind, algo, K):
    f, _, vec, sizes = bf.make_data(np.random.default_rng(0), N, 60, 10, kind, 50)
    calls = {
        "before": lambda: (use(OLD), bf.run_moreau(algo, f, 0))[1],
        "after": lambda: (use(NEW), bf.run_moreau(algo, f, 0))[1],
        "vec": lambda: bf.run_numpy(algo, vec, sizes, 0, False),
    }
    out = {k: c() for k, c in calls.items()}  # warm-up and iterates
    times = {k: [] for k in calls}
    load0 = os.getloadavg()
    for _ in range(K):
        order = list(calls)
        random.shuffle(order)
        for k in order:
            t0 = time.process_time()
            calls[k]()
            times[k].append((time.process_time() - t0) / bf.T)
    use(NEW)
    med = {k: statistics.median(v) for k, v in times.items()}
    paired = {
        k: statistics.median(v / m for v, m in zip(times["vec"], times[k], strict=True))
        for k in ("before", "after")
    }
    scale = float(np.abs(out["vec"]).max())
    same = np.array_equal(out["before"], out["after"])
    rel = float(np.abs(out["after"] - out["vec"]).max()) / scale
    print(
        f"  {N:>5} {kind:<9} {algo:<9} before {1e3 * med['before']:7.2f} ms  after {1e3 * med['after']:7.2f} ms"
        f"  vec {1e3 * med['vec']:7.2f} ms | x vec before {med['vec'] / med['before']:.3f}"
        f" (paired {paired['before']:.3f})  after {med['vec'] / med['after']:.3f}"
        f" (paired {paired['after']:.3f})  after/before {med['before'] / med['after']:.3f}"
        f" | before == after bit for bit: {same}; after vs vec {rel:.0e} | load {load0[0]:.2f} -> "
        f"{os.getloadavg()[0]:.2f}",
        flush=True,
    )


def main():
    K = int(next((a for a in sys.argv[1:] if a.isdigit()), 9))
    rows = [(100, "balanced", a) for a in ("fedavg", "fedprox", "pfedme-K")]
    if "--big" in sys.argv:
        rows += [(1000, "balanced", "pfedme-K"), (1000, "lognormal", "pfedme-K")]
    print(
        f"bench_vec_issue32: before = {BASE}, after = working tree at {bf.git_info()}; K = {K} "
        f"alternations, CPU medians per round (T = {bf.T} rounds per call); load at start "
        f"{os.getloadavg()}"
    )
    for r in rows:
        row(*r, K)


if __name__ == "__main__":
    main()
