"""Progress of a sweep: a tqdm bar on a terminal, else a line every ~10 s (logs, batch jobs)."""

from __future__ import annotations

import sys
import time

__all__ = ["_Progress"]


class _Progress:
    """A tqdm bar on a terminal; elsewhere (logs, batch jobs) a line on ``stream`` when a point
    finishes at least ``every`` seconds after the last line, and one at the end."""

    def __init__(self, name: str, total: int, done: int, *, stream=None, every=10.0, clock=time.monotonic):
        self.name, self.total, self.done, self.every, self.clock = name, total, done, every, clock
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = self.last = clock()
        self.bar = None
        if self.stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, initial=done, desc=name, unit="point", file=self.stream)

    def update(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.clock() - self.last >= self.every:
            self._line()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        else:
            self._line()

    def _line(self) -> None:
        self.last = self.clock()
        print(
            f"reproduce {self.name}: {self.done}/{self.total} points done, {self.last - self.t0:.0f} s elapsed",
            file=self.stream,
            flush=True,
        )
