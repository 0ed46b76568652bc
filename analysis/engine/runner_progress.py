"""Progress over a large run's chunks (``moreau check`` with a ``--trials`` above the chunk size): a tqdm
bar on a terminal, a line on stderr at most every 10 s otherwise (``moreau check --scheduler``'s too)."""

from __future__ import annotations

import time

__all__: list[str] = []


def _bar(total, label):
    """A tqdm bar over chunks on a terminal (stderr), nothing otherwise."""
    import sys

    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=label, unit="chunk", file=sys.stderr, leave=False)


class _Lines:
    """Progress without a terminal (logs, batch jobs): a line on stderr at most every 10 s."""

    def __init__(self, total, label, every=10.0):
        self.total, self.label, self.every, self.done = total, label, every, 0
        self.t0 = self.last = time.perf_counter()

    def update(self, n):
        import sys

        self.done += n
        now = time.perf_counter()
        if now - self.last >= self.every or self.done == self.total:
            self.last = now
            print(
                f"moreau check: {self.label}: {self.done}/{self.total} chunks, {now - self.t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def close(self):
        pass
