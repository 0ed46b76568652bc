"""How an instance is written in a report line: its parameters as ``k=v`` from the run's batch.

Shared by the report (``report``) and the findings rendered from a run's records (``findings``), so
that neither imports the other.
"""

from __future__ import annotations

import numpy as np

__all__ = ["params"]


def _fmt4(x):
    return "-" if x is None or not np.isfinite(x) else f"{x:.4g}"


def params(batch, row, room=None):
    """The instance's parameters as ``k=v`` (scalars first, then small arrays; sizes of the rest); with
    ``room``, those that fit in it (then ", ..."), else all of them."""
    scal, small, big = [], [], []
    for k, v in batch.items():
        a = np.asarray(v)[row] if np.ndim(v) else np.asarray(v)
        if a.size == 1:
            scal.append(f"{k}={_fmt4(float(a.reshape(-1)[0])) if np.issubdtype(a.dtype, np.number) else a}")
        elif a.size <= 4 and np.issubdtype(a.dtype, np.number):
            small.append(f"{k}=[{', '.join(_fmt4(float(x)) for x in a.reshape(-1))}]")
        else:
            big.append(f"{k}:{'x'.join(map(str, a.shape))}")
    out, skipped = "", False
    for item in scal + small + big:
        if room is not None and len(out) + len(item) + 7 > room:
            skipped = True
            continue
        out += (", " if out else "") + item
    return out + (", ..." if skipped else "")
