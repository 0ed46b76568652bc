"""``moreau reproduce`` checkpoints within a seed (issue 29): a run stopped in the middle of a seed
resumes from the state it saved there and writes the bytes of an uninterrupted run; the progress
lines say how far the seed in progress is."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")
pytest.importorskip("sklearn", reason="pfedme-digits needs scikit-learn's digits (extra 'digits')")
from moreau.experiments import _partial, _sweep  # noqa: E402
from moreau.experiments._progress import _Progress  # noqa: E402
from moreau.experiments.registry import get  # noqa: E402

NAME = "pfedme-digits"
SMALL = {"rounds": 4, "seeds": 1}  # one seed: 2 settings x 4 methods x 4 rounds = 32 units
OUTPUTS = (f"{NAME}.csv", f"{NAME}-table.csv")
#: what differs between any two runs of the same arguments (times, sessions): everything else is equal
VOLATILE = ("wall_seconds", "cumulative_wall_seconds", "sessions", "point_timings", "resumed_points")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    _sweep.run(get(NAME), out, quick=True, workers=1, overrides=SMALL)
    return out


def manifest(out):
    m = json.loads((out / "manifest.json").read_text())
    m["provenance"].pop("git_commit")  # others edit this working tree while the tests run (its "dirty" mark)
    return {k: v for k, v in m.items() if k not in VOLATILE}


def interrupt_after(monkeypatch, saves):
    """Stop the run (as SIGTERM does) right after its ``saves``-th save of a state within the seed."""
    seen = []

    def stop(store):
        seen.append(store)
        if len(seen) == saves:
            raise _sweep.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(_partial, "AFTER_SAVE", stop)


def resumed_at(monkeypatch):
    """The ``done`` units of every state a run loads (None: it started its point over)."""
    got = []
    load = _partial.PointState.load

    def spy(self):
        state = load(self)
        got.append(self.resumed_at if state is not None else None)
        return state

    monkeypatch.setattr(_partial.PointState, "load", spy)
    return got


# saves come after rounds 1..3 of each of the 8 runs (3 per run): the 5th is in Per-FedAvg of the
# "same" setting (its evaluation stream restored), the 11th in Local only (its own stream), the
# 20th in pFedMe of the "tuned" setting (the finished setting's rows restored); ~3 s each
@pytest.mark.parametrize(
    "saves, done",
    [
        pytest.param(5, 6, id="per-fedavg", marks=pytest.mark.reproduce),
        pytest.param(11, 14, id="local", marks=pytest.mark.reproduce),
        pytest.param(20, 26, id="tuned"),
    ],
)
def test_a_run_stopped_mid_seed_resumes_there_with_the_bytes_of_an_uninterrupted_run(
    tmp_path, monkeypatch, uninterrupted, saves, done
):
    out = tmp_path / "run"
    interrupt_after(monkeypatch, saves)
    with pytest.raises(_sweep.Interrupted):
        _sweep.run(get(NAME), out, quick=True, workers=1, overrides=SMALL, state_every=0)
    (ckpt,) = (out / "points").glob("*.state")
    assert not list((out / "points").glob("*.json"))  # the seed was not finished
    assert _partial.progress_of(ckpt) == (done, 32)
    monkeypatch.setattr(_partial, "AFTER_SAVE", None)
    loads = resumed_at(monkeypatch)
    m = _sweep.run(get(NAME), out, quick=True, workers=1, overrides=SMALL, state_every=0)
    assert loads == [done]  # it continued from the round saved, not from the seed's start
    assert m["resumed_points"] == 0 and m["sessions"] == 2
    for file in OUTPUTS:
        assert (out / file).read_bytes() == (uninterrupted / file).read_bytes(), file
    assert manifest(out) == manifest(uninterrupted)
    assert not list((out / "points").glob("*.state")) and not list((out / "points").glob("*.progress"))


TABLE1 = {"rounds": 10, "seeds": 1, "taus": [10], "eval_every": 5}  # 4 runs x 10 rounds = 40 units


# perfedavg-table1 saves after every chunk of eval_every rounds (FedAvg, Per-FedAvg: at round 5) and
# after every round of Local only: the 2nd save is in Per-FedAvg (FO), the 5th in Local only
@pytest.mark.reproduce  # ~3 s each: three quick runs with their figures
@pytest.mark.parametrize("saves, done", [(2, 15), (5, 32)], ids=["per-fedavg-fo", "local"])
def test_perfedavg_table1_stopped_mid_seed_resumes_with_the_bytes_of_an_uninterrupted_run(
    tmp_path, monkeypatch, saves, done
):
    exp, whole, out = get("perfedavg-table1"), tmp_path / "whole", tmp_path / "run"
    _sweep.run(exp, whole, quick=True, workers=1, overrides=TABLE1)
    interrupt_after(monkeypatch, saves)
    with pytest.raises(_sweep.Interrupted):
        _sweep.run(exp, out, quick=True, workers=1, overrides=TABLE1, state_every=0)
    (ckpt,) = (out / "points").glob("*.state")
    assert _partial.progress_of(ckpt) == (done, 40)
    monkeypatch.setattr(_partial, "AFTER_SAVE", None)
    loads = resumed_at(monkeypatch)
    _sweep.run(exp, out, quick=True, workers=1, overrides=TABLE1, state_every=0)
    assert loads == [done]
    for file in ("perfedavg-table1.csv", "perfedavg-table1-table.csv", "perfedavg-table1-summary.csv"):
        assert (out / file).read_bytes() == (whole / file).read_bytes(), file
    assert manifest(out) == manifest(whole)


def test_a_state_of_another_run_or_a_damaged_one_starts_the_seed_over(tmp_path, capsys, monkeypatch):
    store = _partial.PointState(tmp_path / "0000-x.json", "run A", every=0)
    store.offer(3, 10, lambda: {"w": 1})
    assert _partial.PointState(tmp_path / "0000-x.json", "run A").load() == {"w": 1}
    assert _partial.PointState(tmp_path / "0000-x.json", "run B").load() is None
    (tmp_path / "0000-x.state").write_bytes(b"not a pickle")
    assert _partial.PointState(tmp_path / "0000-x.json", "run A").load() is None
    assert "damaged state" in capsys.readouterr().err


def test_states_are_saved_every_so_many_seconds_and_progress_at_most_every_second(tmp_path):
    now = [0.0]
    store = _partial.PointState(tmp_path / "p.json", "k", every=30, clock=lambda: now[0])
    for t in range(1, 61):  # a round every 0.5 s for 30 s
        now[0] = 0.5 * t
        store.offer(t, 100, lambda t=t: {"round": t})
        if t == 30:
            assert _partial.progress_of(tmp_path / "p.json") == (30, 100)  # written within the second
    assert store.saves == 1 and _partial.PointState(tmp_path / "p.json", "k").load() == {"round": 60}
    assert _partial.progress_of(tmp_path / "p.json") == (60, 100)


def test_outside_a_run_the_store_saves_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = _partial.current()
    assert store.load() is None
    store.offer(1, 2, lambda: pytest.fail("a store outside a run built a state"))
    assert list(tmp_path.iterdir()) == []


def test_progress_lines_say_how_far_the_seed_in_progress_is(tmp_path):
    files = [tmp_path / f"{i:04d}-h.json" for i in range(3)]
    _partial.PointState(files[1], "k", every=0).offer(12, 32, lambda: {})
    assert _sweep._in_progress(files, rows={}) == "point 2 at 38 %"
    assert _sweep._in_progress(files, rows={1: []}) == ""  # a finished point is not in progress
    stream, now = io.StringIO(), [0.0]
    p = _Progress(
        NAME,
        3,
        0,
        stream=stream,
        clock=lambda: now[0],
        heartbeat=False,
        detail=lambda: _sweep._in_progress(files, {}),
    )
    now[0] = 10.0
    p.tick()
    assert stream.getvalue().splitlines() == [
        f"reproduce {NAME}: 0/3 points done (in progress: point 2 at 38 %), 10 s elapsed"
    ]


@pytest.mark.reproduce
def test_sigterm_mid_seed_then_the_same_command_resumes_there(tmp_path):
    """The CLI, signalled: SIGTERM while the seed runs leaves its state; the rerun continues it."""
    whole, out = tmp_path / "whole", tmp_path / "run"
    _sweep.run(get(NAME), whole, quick=True, workers=1, overrides={"rounds": 20, "seeds": 1})
    cmd = [sys.executable, "-m", "moreau._cli", "reproduce", NAME, "--quick", "--workers", "1"]
    cmd += ["--set", "rounds=20", "--set", "seeds=1", "--checkpoint-every", "0", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((out / "points").glob("*.state")) if (out / "points").exists() else True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no state was saved (rc {proc.returncode}): {proc.communicate()[1]}")
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert list((out / "points").glob("*.state")) and not list((out / "points").glob("*.json"))
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    for file in OUTPUTS:
        assert (out / file).read_bytes() == (whole / file).read_bytes(), file
    assert manifest(out) == manifest(whole)


def test_on_a_terminal_the_bar_says_how_far_the_seed_in_progress_is():
    pytest.importorskip("tqdm")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream, now = Terminal(), [0.0]
    p = _Progress(
        NAME, 3, 0, stream=stream, clock=lambda: now[0], heartbeat=False, detail=lambda: "point 2 at 38 %"
    )
    p.tick()
    assert "in progress" not in stream.getvalue()  # not before ``every`` seconds
    now[0] = 10.0
    p.tick()
    p.close()
    assert "in progress: point 2 at 38 %" in stream.getvalue() and "points done" not in stream.getvalue()
