"""The roofline of ``benchmarks/bench_fl.py`` (``bench_fl_roofline.floor``, ``bench_fl_ragged.pfedme_floor``):
one implementation for numpy and cupy.  Runs here on numpy with small shapes and a fake ``sync``; with
a fake array module named ``cupy`` (numpy underneath) every clock reading must come right after a
``sync()``, and the device's defaults (its synchronize, the wall clock) must be the ones chosen.  No
timed assertion: the rates are only required to be positive and finite."""

from __future__ import annotations

import math
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def mods():
    env = dict(os.environ)
    sys.path.insert(0, str(BENCH))
    try:
        import bench_fl as bf
        import bench_fl_ragged as rg
        import bench_fl_roofline as br
    finally:
        sys.path.remove(str(BENCH))
        os.environ.clear()  # bench_prox sets the BLAS thread variables at import
        os.environ.update(env)
    return bf, br, rg


def fake_cupy(device_sync=None):
    """A module named ``cupy`` whose functions are numpy's (and ``cuda.Device().synchronize``)."""
    mod = types.ModuleType("cupy")
    mod.__getattr__ = lambda name: getattr(np, name)  # PEP 562: the rest from numpy
    if device_sync is not None:
        mod.cuda = types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=device_sync))
    return mod


class Spy:
    """Records ``sync`` and ``clock`` calls in order (the clock: a counter, not real time)."""

    def __init__(self):
        self.log = []

    def sync(self):
        self.log.append("sync")

    def clock(self):
        self.log.append("clock")
        return float(len(self.log))

    def check_synced(self):
        clocks = [i for i, e in enumerate(self.log) if e == "clock"]
        assert clocks, "nothing was timed"
        assert len(clocks) % 2 == 0  # start and stop of every timing
        assert all(i > 0 and self.log[i - 1] == "sync" for i in clocks), self.log
        return len(clocks) // 2


def small(bf, kind):
    f, _, _, sizes = bf.make_data(np.random.default_rng(3), 12, 6, 4, kind, 25)
    return f, sizes


@pytest.mark.parametrize("kind", ["balanced", "lognormal"])
def test_floor_runs_on_numpy_with_a_fake_sync(mods, kind):
    bf, br, _ = mods
    f, sizes = small(bf, kind)
    calls = []
    out = br.floor(f, sizes, 6, 4, np, sync=lambda: calls.append(1), square_n=8, stream_elems=1000)
    assert calls  # the given sync is used, not replaced by numpy's no-op
    assert out["backend"] == "numpy"
    assert out["flops_per_round"] == 4 * 6 * 4 * int(sizes.sum()) * bf.TAU
    assert out["bytes_per_round"] == int(sizes.sum()) * (6 + 2) * 8
    for k in ("gemm_rate_round_shapes", "gemm_rate_per_client_loop", "gemm_rate_square", "bandwidth"):
        assert math.isfinite(out[k]) and out[k] > 0, k
    rate = out["gemm_rate_per_client_loop"] if not out["padded_slots"] else out["gemm_rate_round_shapes"]
    assert out["floor_s"] == max(out["flops_per_round"] / rate, out["bytes_per_round"] / out["bandwidth"])


def test_floor_and_pfedme_floor_sync_around_every_timing_on_cupy(mods):
    bf, br, rg = mods
    f, sizes = small(bf, "lognormal")
    xp = fake_cupy()
    spy = Spy()
    out = br.floor(f, sizes, 6, 4, xp, sync=spy.sync, clock=spy.clock, square_n=8, stream_elems=1000)
    # 5 timings of the round's products, 3 each of the loop, the square product and the sum
    assert spy.check_synced() == 5 + 3 + 3 + 3
    assert out["backend"] == "cupy"
    spy2 = Spy()
    out2 = rg.pfedme_floor(5, 6, 4, xp, sync=spy2.sync, clock=spy2.clock, stream_elems=1000)
    assert spy2.check_synced() == 5 + 3
    assert out2["flops_per_round"] == 4 * 6 * 4 * bf.B * 5 * bf.TAU * bf.TAU


def test_timing_defaults(mods):
    _, br, _ = mods
    assert br.timing(np) == (br._nosync, time.process_time)
    hits = []
    sync, clock = br.timing(fake_cupy(lambda: hits.append(1)))
    assert clock is time.perf_counter  # wall clock on a device
    sync()
    assert hits == [1]  # cupy.cuda.Device().synchronize


def test_unsynced_timing_is_caught(mods):
    """The spy's check can fail: a rate timed without the sync before its second clock reading."""
    _, br, _ = mods
    spy = Spy()

    def bad_rate(fn, amount, k=5, sync=None, clock=None):
        fn()
        t = clock()
        sync()
        fn()
        return amount / (clock() - t)

    bad_rate(lambda: None, 1.0, sync=spy.sync, clock=spy.clock)
    with pytest.raises(AssertionError):
        spy.check_synced()
    spy = Spy()
    br._rate(lambda: None, 1.0, k=2, sync=spy.sync, clock=spy.clock)
    assert spy.check_synced() == 2


def test_roofline_fractions(mods):
    bf, _, _ = mods
    rf = {"flops_per_round": 6e9, "gemm_rate": 3e12, "bytes_per_round": 2e8, "bandwidth": 4e12}
    fr = bf.roofline_fractions(rf, 0.01)
    # at 10 ms per round: 6e11 flop/s of 3e12 (1/5) and 2e10 B/s of 4e12 (1/200)
    assert fr["flop_rate"] == pytest.approx(1 / 5)
    assert fr["bandwidth"] == pytest.approx(1 / 200)


def test_gpu_first_without_a_gpu_stops_in_one_line(tmp_path):
    """``benchmarks/gpu_first.sh`` without cupy (or a device): one line with the reason, exit 0, nothing
    written."""
    import shutil
    import subprocess

    import moreau

    if moreau._backend.gpu_status()[0]:
        pytest.skip("cupy and a device are usable here: the script would run its five lines")
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    out = tmp_path / "out"
    r = subprocess.run(
        ["bash", str(BENCH / "gpu_first.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHON": sys.executable},
        check=False,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_first.sh: nothing run: "), r.stdout
    assert moreau._backend.gpu_status()[1].splitlines()[-1] in lines[0]
    assert not out.exists()
