#!/usr/bin/env python
"""Issue 32, "≥ 1× the hand-vectorised round": moreau before (git ``BASE``) and after (the working
tree) beside ``bench_fl``'s hand-vectorised round, in one process.

    python benchmarks/bench_vec_issue32.py [K] [--big] [--profile]     # K alternations (default 9)

The functions changed for this comparison (``fedavg``, ``fedprox``, ``_blocks._softmax_groups``,
``_common.gathered``, ``softmax_grad``, ``_class_sum``, ``Multinomial._softmax`` and ``_flat``,
pFedMe's ``_inner_gd``) are read from git
at ``BASE`` and swapped in for the "before" calls.  Per row
(softmax, d = 60, C = 10, N = 100 balanced; with ``--big`` also pFedMe K-step at N = 1000 balanced
and lognormal): every call (T = 2 rounds) runs once per alternation in a shuffled order, CPU time of
this process; medians per round, the ratio of the medians and the median of the per-alternation
ratios; before and after compared bit for bit, moreau against vec as a relative difference; the load
average printed per row.  ``--profile``: cProfile (CPU clock) of moreau and of vec, FedAvg and
pFedMe K-step at N = 100.  Needs git and the commit in the repository."""

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

import moreau._multinomial as MM  # noqa: E402
import moreau._multinomial_fast as MF  # noqa: E402
import moreau.fl as fl  # noqa: E402
import moreau.fl._blocks as BL  # noqa: E402
import moreau.fl._common as CM  # noqa: E402
import moreau.fl._fedprox as FP  # noqa: E402
import moreau.fl._pfedme as PF  # noqa: E402

BASE = "1b8ad6c"
REPO = str(Path(__file__).resolve().parents[1])


def load(mod, path, *names, cls=None):
    """The functions ``names`` of ``path`` (of class ``cls``) at ``BASE``, defined in one copy of
    ``mod``'s namespace (so they call each other's old versions)."""
    src = subprocess.check_output(["git", "-C", REPO, "show", f"{BASE}:{path}"], text=True)
    body = ast.parse(src).body
    if cls:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    ns = dict(vars(mod))
    for name in names:
        node = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)
        exec(textwrap.dedent(ast.get_source_segment(src, node)), ns)
    return [ns[name] for name in names]


OLD_GRAD, OLD_SUM = load(MF, "moreau/_multinomial_fast.py", "softmax_grad", "_class_sum")
OLD_SOFTMAX, OLD_FLAT = load(MM, "moreau/_multinomial.py", "_softmax", "_flat", cls="Multinomial")
OLD = {
    "fedavg": load(FP, "moreau/fl/_fedprox.py", "fedavg")[0],
    "fedprox": load(FP, "moreau/fl/_fedprox.py", "fedprox")[0],
    "groups": load(BL, "moreau/fl/_blocks.py", "_softmax_groups")[0],
    "gathered": load(CM, "moreau/fl/_common.py", "gathered")[0],
    "grad": OLD_GRAD,
    "sum": OLD_SUM,
    "softmax": OLD_SOFTMAX,
    "flat": OLD_FLAT,
    "inner": load(PF, "moreau/fl/_pfedme.py", "_inner_gd")[0],
}
NEW = {
    "fedavg": FP.fedavg,
    "fedprox": FP.fedprox,
    "groups": BL._softmax_groups,
    "gathered": CM.gathered,
    "grad": MF.softmax_grad,
    "sum": MF._class_sum,
    "softmax": MM.Multinomial._softmax,
    "flat": MM.Multinomial._flat,
    "inner": PF._inner_gd,
}


def use(fns):
    fl.fedavg, fl.fedprox = fns["fedavg"], fns["fedprox"]
    BL._softmax_groups = fns["groups"]
    CM.gathered = PF.gathered = fns["gathered"]
    MF.softmax_grad = MM.softmax_grad = fns["grad"]
    MF._class_sum = BL._class_sum = fns["sum"]
    MM.Multinomial._softmax, MM.Multinomial._flat = fns["softmax"], fns["flat"]
    PF._inner_gd = fns["inner"]


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


def profile(N, kind, algo, calls=10, top=14):
    """cProfile (CPU clock) of ``calls`` calls of moreau (after) and of vec, own time per function."""
    import cProfile
    import pstats

    f, _, vec, sizes = bf.make_data(np.random.default_rng(0), N, 60, 10, kind, 50)
    for who, fn in (
        ("moreau", lambda: bf.run_moreau(algo, f, 0)),
        ("vec", lambda: bf.run_numpy(algo, vec, sizes, 0, False)),
    ):
        fn()
        pr = cProfile.Profile(time.process_time)
        pr.enable()
        for _ in range(calls):
            fn()
        pr.disable()
        st = pstats.Stats(pr)
        total = sum(v[2] for v in st.stats.values())
        ncalls = sum(v[1] for v in st.stats.values())
        print(
            f"  profile {N} {kind} {algo} {who}: {1e3 * total / calls:.2f} ms CPU per call (cProfile), "
            f"{ncalls // calls} function calls per call; own time:"
        )
        rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
        for (file, line, name), (_, nc, tt, _, _) in rows:
            print(
                f"    {1e3 * tt / calls:7.3f} ms {100 * tt / total:5.1f} %  {nc // calls:5d} calls  "
                f"{Path(file).name}:{line}({name})"
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
    if "--profile" in sys.argv:
        for a in ("fedavg", "pfedme-K"):
            profile(100, "balanced", a)


if __name__ == "__main__":
    main()
