"""Progress of a sweep: a tqdm bar on a terminal, else a line every ~10 s (logs, batch jobs)."""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["_Progress"]


class _Progress:
    """A tqdm bar on a terminal; elsewhere (logs, batch jobs) a line on ``stream`` every ``every``
    seconds while the sweep runs, whether or not a point finished (a background thread calls
    :meth:`tick`), and one at the end.  A point (one grid point, often one seed) is counted when it
    finishes: the lines in between say the sweep is alive and how long it has run, and ``detail()``
    (if given) how far the points in progress are (``point 3 at 40 %``, from the progress the points
    that save their state within them write: ``moreau.experiments._partial``)."""

    def __init__(
        self,
        name: str,
        total: int,
        done: int,
        *,
        stream=None,
        every=10.0,
        clock=time.monotonic,
        heartbeat=True,
        detail=None,
    ):
        self.detail = detail
        self.name, self.total, self.done, self.every, self.clock = name, total, done, every, clock
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = self.last = clock()
        self.bar = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None
        if self.stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, initial=done, desc=name, unit="point", file=self.stream)
        # heartbeat=False: lines only from update/tick (tests); on a terminal, the thread refreshes the
        # bar's "in progress" note (detail) only
        if heartbeat and (self.bar is None or detail is not None):
            self.thread = threading.Thread(target=self._beat, name=f"progress {name}", daemon=True)
            self.thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every, 1.0)):
            self.tick()

    def tick(self) -> None:
        """A line if ``every`` seconds passed since the last one (the clock's seconds)."""
        with self._lock:
            if self.clock() - self.last < self.every:
                return
            if self.bar is None:
                self._line()
            elif self.detail is not None:
                self.last = self.clock()
                more = self.detail()
                self.bar.set_postfix_str(f"in progress: {more}" if more else "", refresh=True)

    def update(self) -> None:
        with self._lock:
            self.done += 1
            if self.bar is not None:
                self.bar.update(1)
            elif self.clock() - self.last >= self.every:
                self._line()

    def close(self) -> None:
        self._stop.set()
        if self.thread is not None:
            self.thread.join()
        if self.bar is not None:
            self.bar.close()
        else:
            with self._lock:
                self._line()

    def _line(self) -> None:
        self.last = self.clock()
        more = ""
        if self.detail is not None and self.done < self.total:
            more = self.detail()
            more = f" (in progress: {more})" if more else ""
        print(
            f"reproduce {self.name}: {self.done}/{self.total} points done{more}, "
            f"{self.last - self.t0:.0f} s elapsed",
            file=self.stream,
            flush=True,
        )
