#!/usr/bin/env python
"""Issue 32's changes, before (commit e34b784) against after (the working tree), in one process.

    python benchmarks/bench_before_after_issue32.py [K]      # K alternations (default 9)

The functions this session changed (``Logistic._sigmoids``, ``Layout.merge``, pFedMe's ``_inner_gd``)
are read from git at e34b784 and swapped in for the "before" calls; every call of a comparison runs
once per alternation in a shuffled order, CPU time of this process, medians and the median of the
per-alternation ratios; the load average is printed.  Rows: the logistic prox of benchmark 2 (with
and without ``Logistic()`` in the call) beside the plain batched Newton at moreau's accuracy
(``bench_prox.plain_newton(extra=1)``); pFedMe K-step and FedAvg at N = 1000 lognormal softmax
clients beside the per-client loop (``bench_fl``).  Needs git and the commit in the repository."""

import ast
import random
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_fl as bf  # noqa: E402  (bench_prox sets one BLAS thread before numpy loads)
import numpy as np  # noqa: E402

import moreau as mo  # noqa: E402
import moreau._logistic as L  # noqa: E402
import moreau._ragged_layout as RL  # noqa: E402
import moreau.fl._pfedme as PF  # noqa: E402

bp = bf.bp
BASE = "e34b784"
REPO = str(Path(__file__).resolve().parents[1])


def old_def(path, name, cls=None):
    src = subprocess.check_output(["git", "-C", REPO, "show", f"{BASE}:{path}"], text=True)
    tree = ast.parse(src)
    nodes = tree.body
    if cls:
        nodes = next(n for n in nodes if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next(n for n in nodes if isinstance(n, ast.FunctionDef) and n.name == name)
    code = textwrap.dedent(ast.get_source_segment(src, node))
    return code


def load(mod, path, name, cls=None):
    ns = dict(vars(mod))
    exec(old_def(path, name, cls), ns)
    return ns[name]


old_sig = load(L, "moreau/_logistic.py", "_sigmoids", "Logistic")
old_merge = load(RL, "moreau/_ragged_layout.py", "merge", "Layout")
old_inner = load(PF, "moreau/fl/_pfedme.py", "_inner_gd")
new_sig, new_merge, new_inner = L.Logistic._sigmoids, RL.Layout.merge, PF._inner_gd


def use(old):
    L.Logistic._sigmoids = old_sig if old else new_sig
    RL.Layout.merge = old_merge if old else new_merge
    PF._inner_gd = old_inner if old else new_inner


def alternate(fns, k):
    out = {key: fn() for key, fn in fns.items()}
    T = {key: [] for key in fns}
    for _ in range(k):
        ks = list(fns)
        random.shuffle(ks)
        for key in ks:
            c = time.process_time()
            fns[key]()
            T[key].append(time.process_time() - c)
    return T, out


def paired(T, fast, slow):
    return statistics.median([s / f for f, s in zip(T[fast], T[slow], strict=True)])


random.seed(0)
k = int(sys.argv[1]) if len(sys.argv) > 1 else 9
print(
    "git HEAD",
    subprocess.check_output(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], text=True).strip(),
    "before =",
    BASE,
)
print("load at start", bp._loadavg())
# logistic prox, bench_prox's benchmark 2 sizes
rng = np.random.default_rng(2)
X, y, w = bp.logistic_data(rng, 1000, 200, 20)
Z = y[..., None] * X
f_pre = mo.Logistic(X, y)
mo.prox(f_pre, w, 1.0)


def prox(old, pre=False):
    use(old)
    try:
        return mo.prox(f_pre if pre else mo.Logistic(X, y), w, 1.0, return_info=True)[0]
    finally:
        use(False)


fns = {
    "after": lambda: prox(False),
    "before": lambda: prox(True),
    "after-prebuilt": lambda: prox(False, True),
    "before-prebuilt": lambda: prox(True, True),
    "plain+1": lambda: bp.plain_newton(Z, w, 1.0, 0.0, extra=1),
}
T, out = alternate(fns, k)
print(
    f"\nlogistic prox m = 1000, n = 200, d = 20, lam = 1 (CPU ms per call, median of {k}); load {bp._loadavg()}"
)
print("  bit-identical before/after:", np.array_equal(out["after"], out["before"]))
med = {kk: statistics.median(v) for kk, v in T.items()}
for kk, v in med.items():
    print(f"    {kk:<16} {v * 1e3:7.1f} ms")
for a_, b_ in (
    ("after", "before"),
    ("after", "plain+1"),
    ("before", "plain+1"),
    ("after-prebuilt", "plain+1"),
    ("before-prebuilt", "plain+1"),
):
    print(f"  {b_} / {a_}: ratio of medians {med[b_] / med[a_]:.3f}, paired median {paired(T, a_, b_):.3f}")
# FL rounds
f, clients, vec, sizes = bf.make_data(np.random.default_rng(19), 1000, 60, 10, "lognormal", 50)
for algo in ("pfedme-K", "fedavg"):

    def run(old, algo=algo):
        use(old)
        try:
            return bf.run_moreau(algo, f, 19)
        finally:
            use(False)

    fns = {
        "after": lambda: run(False),
        "before": lambda: run(True),
        "loop": lambda algo=algo: bf.run_numpy(algo, clients, sizes, 19, True),
    }
    kk_ = max(3, k // 2)
    T, out = alternate(fns, kk_)
    med = {kk: statistics.median(v) / bf.T for kk, v in T.items()}
    rel = float(np.abs(out["after"] - out["loop"]).max() / np.abs(out["loop"]).max())
    print(
        f"\n{algo}, N = 1000 lognormal, d = 60, C = 10 (CPU ms per round, median of {kk_}); load {bp._loadavg()}"
    )
    print(
        "  bit-identical before/after:",
        np.array_equal(out["after"], out["before"]),
        f"; rel. diff to the loop {rel:.1e}",
    )
    for kk, v in med.items():
        print(f"    {kk:<8} {v * 1e3:7.1f} ms")
    for a_, b_ in (("after", "before"), ("after", "loop"), ("before", "loop")):
        print(
            f"  {b_} / {a_}: ratio of medians {med[b_] / med[a_]:.3f}, paired median {paired(T, a_, b_):.3f}"
        )
print("\nload at end", bp._loadavg())
