"""``moreau reproduce`` under a hostile environment: too many workers, signals, a killed parent,
a full disk, two runs into one directory, the umask, damaged checkpoints, logs without a terminal.

Runs that must be signalled or must see their own umask, affinity or file-size limit run in a
subprocess (``python -m moreau._cli``); the rest in this process.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
import moreau._cli as cli  # noqa: E402
from moreau import _files  # noqa: E402
from moreau.experiments import _sweep  # noqa: E402

FAST = "pfedme-prop1"  # 50 cheap points with --quick
SLOW = ("fedprox-fig1a", "--quick", "--trials", "3")  # 24 points of ~0.3 s: time to signal it
LINUX = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="/proc, affinity and rlimits are Linux's"
)


def reproduce(*args):
    return cli.main(["reproduce", *map(str, args)])


def messages(err):
    """The CLI's own lines on stderr (progress lines left out)."""
    return [line for line in err.splitlines() if line.startswith("moreau reproduce:")]


def spawn(*args, preexec_fn=None):
    return subprocess.Popen(
        [sys.executable, "-m", "moreau._cli", "reproduce", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )


def checkpoints(out):
    return sorted((out / "points").glob("*.json")) if (out / "points").exists() else []


def start_slow_run(out):
    """A 2-worker run in a subprocess, once it has saved a point: ``(process, its descendants)``."""
    psutil = pytest.importorskip("psutil")
    if _sweep.usable_cpus() < 2:
        pytest.skip("one usable CPU: --workers 2 runs in-process, there is no worker to end")
    proc = spawn(*SLOW, "--workers", 2, "--out", out)
    deadline = time.monotonic() + 120
    while not checkpoints(out):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the run saved no point (rc {proc.returncode}): {proc.communicate()[1]}")
        time.sleep(0.05)
    kids = psutil.Process(proc.pid).children(recursive=True)
    assert len(kids) >= 2, kids  # two workers (and multiprocessing's resource tracker)
    return proc, kids


def survivors(procs, wait=10.0):
    """The processes still running (zombies count as ended) after up to ``wait`` seconds."""
    import psutil

    deadline = time.monotonic() + wait
    while True:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


# --- 1. workers: capped, ended on SIGTERM and with the parent ---


@LINUX
def test_workers_are_capped_at_the_cpus_this_process_may_use(tmp_path):
    one = min(os.sched_getaffinity(0))
    proc = spawn(
        "demo-envelope",
        "--workers",
        10000,
        "--out",
        tmp_path,
        preexec_fn=lambda: os.sched_setaffinity(0, {one}),
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert messages(err) == [
        "moreau reproduce: --workers 10000 is more than the 1 CPU(s) this process may use: using 1"
    ]
    assert json.loads((tmp_path / "manifest.json").read_text())["executor"] == "serial (this process)"


def test_sigterm_ends_the_workers_a_second_run_is_refused_and_a_rerun_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    proc, kids = start_slow_run(out)
    try:  # while it runs, a second run into the same directory is refused (fault 3, two processes)
        assert reproduce(*SLOW, "--workers", 2, "--out", out) == 2
        err = capsys.readouterr().err
        assert len(messages(err)) == 1 and "another run" in err and f"pid {proc.pid}" in err
    finally:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert messages(err) == [
        f"moreau reproduce: stopped by SIGTERM; finished points are saved in {out}: "
        "rerun the same command to resume"
    ]
    assert survivors(kids) == []
    saved = len(checkpoints(out))
    assert 0 < saved < 24 and not (out / "manifest.json").exists()
    assert reproduce(*SLOW, "--workers", 2, "--out", out) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["resumed_points"] == saved
    # the manifest's time is the run's over both sessions, and every point says how long it took and where
    assert m["sessions"] == 2 and m["cumulative_wall_seconds"] > m["wall_seconds"] > 0
    assert [t["index"] for t in m["point_timings"]] == list(range(24))
    assert all(
        t["seconds"] > 0 and ":" in t["worker"] and t["started"].endswith("Z") for t in m["point_timings"]
    )
    assert len({t["worker"] for t in m["point_timings"]}) >= 2  # two workers, two sessions
    log = (out / "run.log").read_text().splitlines()
    assert sum(" point " in x for x in log) == 24 and sum("session:" in x for x in log) == 2
    assert any("session interrupted" in x for x in log) and log[-1].split(" ", 1)[1].startswith(
        "session finished"
    )


@LINUX
def test_workers_die_with_a_killed_parent(tmp_path):
    proc, kids = start_slow_run(tmp_path / "run")
    proc.kill()  # SIGKILL: no handler runs in the parent; PR_SET_PDEATHSIG ends the workers
    proc.communicate(timeout=60)
    assert survivors(kids) == []


# --- 2. a full disk is the environment's error, and leaves the saved points intact ---


def _fsync_fails_from(n, code):
    real, count = os.fsync, [0]

    def fsync(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):
            count[0] += 1
            if count[0] >= n:
                raise OSError(code, os.strerror(code))
        return real(fd)

    return fsync


def test_a_full_disk_is_exit_2_naming_the_file_and_the_rerun_resumes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "fsync", _fsync_fails_from(4, errno.ENOSPC))  # run.json, 2 points, then full
    assert reproduce(FAST, "--quick", "--workers", 1, "--out", tmp_path) == 2
    (line,) = messages(capsys.readouterr().err)
    assert "No space left on device (ENOSPC)" in line and str(tmp_path / "points" / "0002-") in line
    assert "internal error" not in line
    assert len(checkpoints(tmp_path)) == 2 and not list((tmp_path / "points").glob(".*.tmp"))
    monkeypatch.undo()
    assert reproduce(FAST, "--quick", "--workers", 1, "--out", tmp_path) == 0
    assert json.loads((tmp_path / "manifest.json").read_text())["resumed_points"] == 2


@LINUX
def test_a_real_write_error_from_the_kernel_is_exit_2(tmp_path):
    import resource

    # files over 4 KiB fail with EFBIG (python ignores SIGXFSZ): the run's log (a line per point) is the first
    proc = spawn(
        FAST,
        "--quick",
        "--workers",
        1,
        "--out",
        tmp_path,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)),
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    (line,) = messages(err)
    assert f"{tmp_path / 'run.log'}: File too large (EFBIG)" in line and "Traceback" not in err
    assert not list(tmp_path.glob(".*.tmp"))


def test_atomic_write_leaves_the_old_file_and_no_temporary_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "f.json"
    _files.atomic_write(path, "old")
    monkeypatch.setattr(os, "fsync", _fsync_fails_from(1, errno.ENOSPC))
    with pytest.raises(OSError) as exc:
        _files.atomic_write(path, b"new, longer")
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(path)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]
    monkeypatch.undo()
    _files.atomic_write(path, b"new \xc3\xa9")
    assert path.read_text(encoding="utf-8") == "new é"
    assert _sweep.atomic_write is _files.atomic_write  # the old import path still works


# --- 3. one run at a time in a directory ---


def test_a_locked_directory_is_refused_with_one_line(tmp_path, capsys):
    fcntl = pytest.importorskip("fcntl", reason="flock is POSIX")
    with open(tmp_path / _files.LOCK_NAME, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert reproduce(FAST, "--quick", "--workers", 1, "--out", tmp_path) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "another run" in err and "choose another --out" in err
    assert not (tmp_path / "run.json").exists()
    assert reproduce(FAST, "--quick", "--workers", 1, "--out", tmp_path) == 0  # lock released: it runs


# --- 4. files follow the umask ---


@LINUX
def test_every_file_follows_the_umask(tmp_path):
    proc = spawn("demo-envelope", "--workers", 1, "--out", tmp_path, preexec_fn=lambda: os.umask(0o027))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"manifest.json", "run.json", "demo-envelope.csv"}
    assert any(p.parent.name == "points" for p in files)
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {p.name: "0o640" for p in files}


def test_atomic_write_gives_the_mode_open_gives(tmp_path):
    plain, atomic = tmp_path / "plain", tmp_path / "atomic"
    plain.write_text("x")
    _files.atomic_write(atomic, "x")
    # mkstemp alone gives 0o600 whatever the umask (the fault): the umask test above tells them apart
    assert stat.S_IMODE(atomic.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


# --- 5. a damaged checkpoint is named and recomputed ---


def test_damaged_checkpoints_are_named_and_recomputed(tmp_path, capsys):
    assert reproduce(FAST, "--quick", "--workers", 1, "--out", tmp_path) == 0
    csv_before = (tmp_path / f"{FAST}.csv").read_text()
    saved = checkpoints(tmp_path)
    truncated, other_point, other_run = saved[3], saved[7], saved[11]
    truncated.write_text(truncated.read_text()[:40])
    other_point.write_text(saved[0].read_text())
    other_run.write_text(json.dumps({**json.loads(other_run.read_text()), "fingerprint": "0" * 64}))
    capsys.readouterr()
    assert reproduce(FAST, "--quick", "--workers", 1, "--out", tmp_path) == 0
    err = capsys.readouterr().err
    warned = messages(err)
    assert len(warned) == 3
    for f, why in [
        (truncated, "not valid JSON"),
        (other_point, "another grid point"),
        (other_run, "other arguments"),
    ]:
        assert any(str(f) in w and why in w and "recomputing" in w for w in warned), (f, warned)
    assert json.loads((tmp_path / "manifest.json").read_text())["resumed_points"] == len(saved) - 3
    assert (tmp_path / f"{FAST}.csv").read_text() == csv_before
    assert err.splitlines()[-1].startswith(f"reproduce {FAST}: {len(saved)}/{len(saved)} points done")


# --- 6. progress without a terminal ---


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_without_a_terminal_is_a_line_at_most_every_ten_seconds():
    stream, clock = io.StringIO(), _Clock()
    progress = _sweep._Progress("x", 9, 2, stream=stream, clock=clock, heartbeat=False)
    for t in (3, 9.9, 10, 12, 19.9, 25, 31):
        clock.t = t
        progress.update()
    clock.t = 40.4
    progress.close()
    assert stream.getvalue().splitlines() == [
        "reproduce x: 5/9 points done, 10 s elapsed",
        "reproduce x: 8/9 points done, 25 s elapsed",
        "reproduce x: 9/9 points done, 40 s elapsed",
    ]


def test_progress_lines_come_on_time_without_a_point_finishing():
    """Issue 29: a seed that runs for minutes no longer means minutes of silence in a log."""
    stream, clock = io.StringIO(), _Clock()
    progress = _sweep._Progress("x", 2, 0, stream=stream, clock=clock, heartbeat=False)
    for t in (4, 9.9, 10, 15, 20.5):
        clock.t = t
        progress.tick()  # what the heartbeat thread calls; no point finished
    assert stream.getvalue().splitlines() == [
        "reproduce x: 0/2 points done, 10 s elapsed",
        "reproduce x: 0/2 points done, 20 s elapsed",
    ]
    progress.close()


def test_progress_heartbeat_thread_runs_and_stops():
    stream = io.StringIO()
    progress = _sweep._Progress("x", 1, 0, stream=stream, every=0.0)
    assert progress.thread is not None and progress.thread.is_alive()
    progress.close()
    assert not progress.thread.is_alive()
    assert stream.getvalue().splitlines()[-1].startswith("reproduce x: 0/1 points done")


def test_progress_on_a_terminal_is_a_bar():
    pytest.importorskip("tqdm")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    progress = _sweep._Progress("x", 3, 0, stream=stream)
    for _ in range(3):
        progress.update()
    progress.close()
    assert "points done" not in stream.getvalue() and "3/3" in stream.getvalue()
