#!/usr/bin/env bash
# What a session with a lent GPU runs first (issue 32; benchmarks/README.md "On a GPU, first thing"):
# five lines in order, each under its own timeout (580 s in all, under ten minutes), outputs to
# DIR/<line>.txt (and .json) for RESULTS.md, a summary of every line's exit status and seconds in
# DIR/summary.txt.
#
#     bash benchmarks/gpu_first.sh [DIR]      # DIR default: $OUT, else benchmarks/gpu-first-out
#
# Without cupy or a usable device it runs nothing and exits 0 after one line saying why (the reason
# of moreau._backend.gpu_status()).  PYTHON picks the interpreter (default: .venv/bin/python where it
# exists, else python3).  Expected seconds per line below are ESTIMATES, from RESULTS.md §9 (the first
# H200 session) and the CPU runs, not measurements of this script.
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
DIR=${1:-${OUT:-benchmarks/gpu-first-out}}

why=$("$PY" -c 'import moreau._backend as b; ok, why = b.gpu_status(); print(why); raise SystemExit(0 if ok else 1)' 2>&1)
ok=$?
why=$(printf '%s\n' "$why" | tail -n 1)
if [ "$ok" != 0 ]; then
    echo "gpu_first.sh: nothing run: ${why:-moreau does not import with $PY}"
    exit 0
fi
mkdir -p "$DIR"
SUMMARY="$DIR/summary.txt"
{
    echo "gpu_first.sh at $(git rev-parse --short HEAD 2>/dev/null) ($(date -u '+%Y-%m-%d %H:%M:%S UTC')); $PY; $why"
    command -v nvidia-smi >/dev/null && nvidia-smi -L
} | tee "$SUMMARY"

# line NAME TIMEOUT_S ESTIMATE_S COMMAND...: run COMMAND under TIMEOUT_S (SIGINT, then SIGKILL 10 s
# later), its stdout and stderr to DIR/NAME.txt, one summary line.
line() {
    local name=$1 limit=$2 est=$3
    shift 3
    echo "== $name (timeout ${limit} s, estimate ~${est} s): $*" | tee -a "$SUMMARY"
    local t0=$SECONDS
    timeout -s INT -k 10 "$limit" "$@" >"$DIR/$name.txt" 2>&1
    local rc=$?
    local why="ok"
    [ $rc = 124 ] && why="cut by its timeout"
    [ $rc != 0 ] && [ $rc != 124 ] && why="failed: $(tail -n 1 "$DIR/$name.txt")"
    echo "   $name: rc $rc, $((SECONDS - t0)) s, $why" | tee -a "$SUMMARY"
}

# 1. the cupy tests (pytest -m gpu; the float32 flush-to-zero test an expected failure on cupy)
line pytest-gpu 100 60 "$PY" -m pytest -m gpu -q -p no:cacheprovider
# 2. Monte Carlo trials per second on the device
line rates-cupy 80 45 "$PY" benchmarks/bench_rates.py --backend cupy --json "$DIR/rates-cupy.json"
# 3. the quadratic lambda-sweep at the default size (10x the clients on cupy; eigh route)
line prox-quadratic-cupy 150 90 "$PY" benchmarks/bench_prox.py --backend cupy --only quadratic \
    --json "$DIR/prox-quadratic-cupy.json"
# 4. pFedMe with exact inner solves on cupy (loop ~3 s per call on one core, at N = 1000, C = 2)
line fl-pfedme-exact-cupy 100 45 "$PY" benchmarks/bench_fl.py --backend cupy --only pfedme-exact \
    --size 1000,60,2,balanced --repeat 3 --budget 10 --json "$DIR/fl-pfedme-exact-cupy.json"
# 5. softmax rounds on cupy with the device roofline (fractions of its FLOP rate and bandwidth)
line fl-roofline-cupy 150 90 "$PY" benchmarks/bench_fl.py --backend cupy --only fedavg --only fedprox \
    --only pfedme-K --size 1000,60,10,balanced --size 1000,60,10,lognormal --repeat 3 --budget 8 \
    --json "$DIR/fl-roofline-cupy.json"
echo "gpu_first.sh: done; outputs in $DIR" | tee -a "$SUMMARY"
