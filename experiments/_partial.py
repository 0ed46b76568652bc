"""Checkpoints within a grid point: a seed that runs for minutes saves its state every ``every``
seconds (at a round's end) and a resumed run continues from there, with the numbers of an
uninterrupted run (the state holds the generators' states, the models and the rows so far).

The runner (``moreau.experiments._sweep``) gives each point it computes a :class:`PointState`
(:func:`active`); an experiment that can resume mid-point asks for it with :func:`current`, calls
:meth:`PointState.load` once at the start and :meth:`PointState.offer` after each round.  Without
one (a Dask cluster, a library call of ``compute``) :func:`current` is a store that saves nothing.

Files, beside the point's checkpoint ``points/NNNN-HASH.json``: ``points/NNNN-HASH.state`` (a pickle
of ``{"key", "done", "total", "state"}``, written atomically; ``key`` names the run and the point, so
another run's file is ignored) and ``points/NNNN-HASH.progress`` (JSON ``{"done", "total"}``, the
progress lines read it).  Both are removed when the point is saved.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from moreau._files import atomic_write

__all__ = ["PointState", "active", "current", "progress_of", "state_paths"]

#: called after every save with the store (tests stop a run there); None in normal runs
AFTER_SAVE: Callable[[PointState], None] | None = None


def state_paths(checkpoint: Path) -> tuple[Path, Path]:
    """``(state file, progress file)`` of the point whose checkpoint is ``checkpoint``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_suffix(".state"), checkpoint.with_suffix(".progress")


class PointState:
    """The saved state of one point in progress: ``path`` its checkpoint's path (None: save
    nothing), ``key`` the run's fingerprint and the point, ``every`` the seconds between saves
    (0: after every round offered)."""

    def __init__(self, path: Path | None, key: str, every: float = 30.0, clock=time.monotonic):
        self.key, self.every, self.clock = key, float(every), clock
        self.paths = state_paths(path) if path is not None else None
        self.last_save = self.last_progress = clock()
        self.saves = 0
        self.resumed_at: int | None = None  # ``done`` of the state loaded, if one was

    def load(self) -> Any:
        """The state saved by an interrupted run of this point, or None (none, another run's, or
        damaged: then one line on stderr and the point starts over)."""
        if self.paths is None or not self.paths[0].exists():
            return None
        try:
            doc = pickle.loads(self.paths[0].read_bytes())
            ok = isinstance(doc, dict) and doc.get("key") == self.key
        except Exception as exc:  # noqa: BLE001 - any damage to the file means: start the point over
            print(
                f"moreau reproduce: warning: damaged state {self.paths[0]} ({type(exc).__name__}); "
                "starting its point over",
                file=sys.stderr,
                flush=True,
            )
            return None
        if not ok:
            return None
        self.resumed_at = int(doc["done"])
        return doc["state"]

    def offer(self, done: int, total: int, state: Callable[[], Any]) -> None:
        """After a round: ``done`` of ``total`` units of the point are computed; save ``state()``
        if ``every`` seconds passed since the last save, and the progress at most every second."""
        if self.paths is None:
            return
        now = self.clock()
        if now - self.last_save >= self.every:
            doc = {"key": self.key, "done": int(done), "total": int(total), "state": state()}
            atomic_write(self.paths[0], pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL))
            self.last_save, self.saves = now, self.saves + 1
            self._progress(done, total, now)
            if AFTER_SAVE is not None:
                AFTER_SAVE(self)
        elif now - self.last_progress >= 1.0:
            self._progress(done, total, now)

    def _progress(self, done: int, total: int, now: float) -> None:
        if self.paths is None:
            return
        atomic_write(self.paths[1], json.dumps({"done": int(done), "total": int(total)}))
        self.last_progress = now


_NONE = PointState(None, "")
_current = _NONE


def current() -> PointState:
    """The store of the point being computed in this process (one that saves nothing outside a run)."""
    return _current


@contextlib.contextmanager
def active(store: PointState | None) -> Iterator[None]:
    """Make ``store`` the one :func:`current` returns while a point is computed."""
    global _current
    held, _current = _current, store if store is not None else _NONE
    try:
        yield
    finally:
        _current = held


def progress_of(checkpoint: Path) -> tuple[int, int] | None:
    """``(done, total)`` last written for the point in progress whose checkpoint is ``checkpoint``."""
    try:
        doc = json.loads(state_paths(checkpoint)[1].read_text(encoding="utf-8"))
        return int(doc["done"]), int(doc["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
