#!/usr/bin/env python
r"""``moreau check --mutants``: what the prepare step saves.

    python benchmarks/bench_check.py [--json PATH] [--seed N] [--repeat K] [--blas-threads N]

For every statement and family of the catalogue, on the checker's default batch (seed N), two ways
of judging all its mutants, one process, same batch:

* **prepared** (what ``moreau check`` does): the statement's claim-independent quantities
  (``Statement.prepare``: certified proxes, envelope spectra, round maps, Monte Carlo draws) computed
  once, each mutant applies only its formulas;
* **per mutant** (what ``moreau check`` did before the prepare step, and what a checker without one
  does): each mutant re-runs the whole evaluation, ``prepare`` included.

Both give the same verdicts (checked here: the run stops if any differs).  Times: best of K of the
whole mutant loop (``time.perf_counter``), after a warm-up; the total ratio is the claim of the
issue ("--mutants at least 3x faster").  One BLAS thread by default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _val = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--blas-threads=")), None)
    if _val is None and "--blas-threads" in sys.argv[:-1]:
        _val = sys.argv[sys.argv.index("--blas-threads") + 1]
    if _val is None:
        os.environ.setdefault(_var, "1")
    elif _val.strip() != "0":
        os.environ[_var] = _val.strip()

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# the moreau imports follow the BLAS variables and the sys.path line: the checkout's moreau, its numpy
# loading with the thread counts asked for
from moreau._provenance import provenance  # noqa: E402 - after sys.path and the BLAS variables (above)
from moreau.analysis.engine.registry import catalogue  # noqa: E402 - after sys.path and the BLAS variables
from moreau.analysis.engine.runner import rng_for  # noqa: E402 - after sys.path and the BLAS variables


def _verdicts_prepared(st, fam, batch):
    prepared = st.prepared(batch)
    return [st.run(fam, None, None, mutant=m, batch=batch, prepared=prepared).holds for m in st.mutants]


def _verdicts_per_mutant(st, fam, batch):
    return [st.run(fam, None, None, mutant=m, batch=batch).holds for m in st.mutants]  # prepares each time


def _best(fn, repeat):
    out, best = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions per way (best of)")
    ap.add_argument(
        "--blas-threads", default=None, help="BLAS threads (default 1; 0 keeps the library default)"
    )
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'id':22s} {'family':11s} {'mutants':>7s} {'prepared':>9s} {'per mutant':>10s} {'ratio':>6s}")
    for sid, st in catalogue().items():
        if not st.mutants:
            continue
        for fam in st.families:
            batch = st.instances(fam, None, rng_for(args.seed, sid, fam))
            _verdicts_prepared(st, fam, batch)  # warm-up (imports, caches)
            a, t_prep = _best(partial(_verdicts_prepared, st, fam, batch), args.repeat)
            b, t_each = _best(partial(_verdicts_per_mutant, st, fam, batch), args.repeat)
            if a != b:
                raise SystemExit(f"{sid} [{fam}]: verdicts differ between the two ways: {a} vs {b}")
            rows.append(
                dict(
                    id=sid,
                    family=fam,
                    mutants=len(st.mutants),
                    prepared_s=t_prep,
                    per_mutant_s=t_each,
                    has_prepare=st.prepare is not None,
                )
            )
            print(
                f"{sid:22s} {fam:11s} {len(st.mutants):7d} {t_prep:9.3f} {t_each:10.3f} {t_each / t_prep:6.1f}"
                + ("" if st.prepare is not None else "   (no prepare step)")
            )
    tp, te = sum(r["prepared_s"] for r in rows), sum(r["per_mutant_s"] for r in rows)
    print(f"{'total':22s} {'':11s} {sum(r['mutants'] for r in rows):7d} {tp:9.3f} {te:10.3f} {te / tp:6.1f}")
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    print(f"1-minute load average at the end: {load}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "rows": rows,
                    "total_prepared_s": tp,
                    "total_per_mutant_s": te,
                    "load_1min": load,
                    "provenance": provenance({"seed": args.seed, "repeat": args.repeat}, args.seed),
                },
                fh,
                indent=1,
            )


if __name__ == "__main__":
    main()
