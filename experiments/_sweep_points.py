"""One grid point of a sweep: its generator, a function of the run seed, the experiment's name and
the point's parameters only (never of the execution order, so that a resumed, parallel or Dask run
gives the numbers of a serial one), and the worker entry point that computes the point's rows and
times it.  The runner is ``moreau.experiments._sweep``.
"""

from __future__ import annotations

import json
import os
import socket
import time
import zlib

import numpy as np

from ._artifact import canonical, jsonable
from ._partial import PointState, active
from ._rundir import _utc

__all__ = ["point_rng"]


def point_rng(seed: int, name: str, point: dict) -> np.random.Generator:
    """The generator of one grid point: a function of the run seed, the experiment and the point."""
    return np.random.default_rng(
        [int(seed), zlib.crc32(name.encode()), zlib.crc32(canonical(point).encode())]
    )


def _timed_point(name: str, params: dict, point: dict, seed: int, backend: str, state=None):
    """Worker entry point (picklable by reference): ``(rows, timing)`` of one point, ``timing`` when it
    started (UTC), its seconds and the worker (host:pid) that computed it.  ``state``: ``(checkpoint
    path, key, seconds between saves)`` of the point's state within it (``moreau.experiments._partial``),
    or None to save none."""
    started, t0 = _utc(), time.perf_counter()
    store = None if state is None else PointState(*state)
    with active(store):
        rows = _compute_point(name, params, point, seed, backend)
    return rows, {
        "started": started,
        "seconds": round(time.perf_counter() - t0, 3),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


def _compute_point(name: str, params: dict, point: dict, seed: int, backend: str):
    """The rows of one point."""
    from .registry import get

    if backend != "numpy":
        import moreau

        moreau.set_backend(backend)
    exp = get(name)
    rows = exp.compute(params, point, point_rng(seed, name, point))
    return json.loads(json.dumps(rows, default=jsonable))  # plain JSON types, column order kept
