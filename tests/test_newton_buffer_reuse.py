"""Newton's in-place Hessian updates and Multinomial's block-by-block fill change no bit.

* ``moreau._newton_steps.REUSE`` (True: ``H + lam I`` and the chord rows written into Newton's
  own Hessian, the previous Hessian freed when no chord step reads it, Multinomial's blocks
  written into ``H`` per block of clients, a Hessian on part of the batch formed straight into
  Newton's array from the batch's data, in the previous matrix's memory when only its chord
  rows are read again; False: fresh arrays and copies, as before) gives the
  same theta, error bounds, tolerances, iteration counts and Newton matrices (every row), bit
  for bit, on Multinomial
  (benchmark-like at the default level and with ``tol``, small ``lam``, ``mu > 0`` with weights,
  shared ``X``, float32 data, several blocks of clients, ``compact=False``) and on Logistic; the
  in-place and partial paths are really taken (spies) and never on a Hessian the objective
  may hold (``_fresh_hessian`` unset);
* the claim that lets ``_plus_lam`` skip the off-diagonal ``+ 0.0``: Multinomial's Hessian
  holds no ``-0.0``, also with all-zero feature columns;
* no aliasing: mutating a returned theta or info changes neither the objective's arrays nor a
  later call's result, and two calls share no memory.
"""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
import moreau._multinomial as mm
import moreau._multinomial_fast as mf
import moreau._newton as mn
import moreau._newton_steps as ns
from moreau._multinomial import Multinomial


def _softmax(rng, m, n, d, C, **kw):
    X = rng.normal(size=(m, n, d))
    P = np.exp(X @ rng.normal(size=(m, d, C)))
    y = (np.cumsum(P / P.sum(-1, keepdims=True), -1) < rng.random((m, n, 1))).sum(-1).clip(0, C - 1)
    return Multinomial(X, y, n_classes=C, **kw), rng.normal(size=(m, d * C))


def _case(name, rng):
    """(objective, w, lam, prox kwargs)."""
    if name in ("bench", "bench-tol", "small-lam", "blocks"):
        f, w = _softmax(rng, 24, 30, 3, 4)
        lam = 1e-3 if name == "small-lam" else 1.0
        return f, w, lam, {"tol": 1e-8} if name == "bench-tol" else {}
    if name == "mixed":  # every fifth client nearly flat: done early, left in the batch (no compaction)
        rng = np.random.default_rng(0)
        X = rng.normal(size=(24, 30, 3)) * np.where(np.arange(24) % 5 == 0, 0.05, 1.0)[:, None, None]
        P = np.exp(X @ rng.normal(size=(24, 3, 4)))
        y = (np.cumsum(P / P.sum(-1, keepdims=True), -1) < rng.random((24, 30, 1))).sum(-1).clip(0, 3)
        return Multinomial(X, y, n_classes=4), rng.normal(size=(24, 12)), 1.0, {"tol": 1e-8}
    if name == "mu-weights":
        f, w = _softmax(rng, 9, 15, 3, 3, mu=0.3, weights=rng.random((9, 15)) + 0.1)
        return f, w, 1e-2, {}
    if name == "shared-X":
        X = rng.normal(size=(14, 3))
        return Multinomial(X, rng.integers(0, 3, (7, 14)), n_classes=3), rng.normal(size=(7, 9)), 0.5, {}
    if name == "float32":
        X = (rng.normal(size=(6, 12, 2)) * 3).astype(np.float32)
        return (
            Multinomial(X, rng.integers(0, 3, (6, 12)), n_classes=3),
            rng.normal(size=(6, 6)).astype(np.float32),
            np.float32(1e-2),
            {},
        )
    X = rng.normal(size=(10, 20, 4)) * 3  # logistic, lam below L (anchor 0) and above
    y = rng.choice([-1.0, 1.0], size=(10, 20))
    return mo.Logistic(X, y), rng.normal(size=(10, 4)), np.array([1e-3, 10.0] * 5), {}


def _run(name, reuse, monkeypatch, compact=True):
    """The run's results and the matrices it solved with; what the spies saw (patches undone after)."""
    with monkeypatch.context() as mp:
        mp.setattr(ns, "REUSE", reuse)
        f, w, lam, kw = _case(name, np.random.default_rng(7))
        calls = []
        orig = mn._plus_lam

        def spy(xp, Hf, *a):
            out = orig(xp, Hf, *a)
            calls.append(out is Hf)
            if len(a) > 2 and a[2] is not None:
                calls.append("spare")  # the previous matrix's memory holds the new one
            return out

        mp.setattr(mn, "_plus_lam", spy)
        blocks = mm.hessian_blocks

        def spy_rows(*a, **kw):  # the partial Hessian formed into Newton's array (no copy of the data)
            calls.append("rows")
            return blocks(*a, **kw)

        mp.setattr(
            mm, "hessian_blocks", lambda *a, **kw: spy_rows(*a, **kw) if "rows" in kw else blocks(*a, **kw)
        )
        solve, mats = mn._solve, []

        def spy_solve(xp, H, g, eps):  # Newton's matrices themselves, every row (not only the results)
            mats.append(np.asarray(H).tobytes())
            return solve(xp, H, g, eps)

        mp.setattr(mn, "_solve", spy_solve)
        lam = np.broadcast_to(np.asarray(lam, dtype=f.dtype), w.shape[:-1])
        theta, u, info = mn.newton_prox(f, w, lam, info=True, compact=compact, **kw)
        return (theta, u, info.error_bound, info.tol, info.iterations, mats), calls


NAMES = [
    "bench",
    "bench-tol",
    "mixed",
    "small-lam",
    "mu-weights",
    "shared-X",
    "float32",
    "blocks",
    "logistic",
]


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("name", NAMES)
def test_reuse_is_bit_identical(name, compact, monkeypatch):
    if name == "blocks":  # two clients per block of the Hessian's fill
        monkeypatch.setattr(mf, "_BLOCK_BYTES", 2 * 30 * 10 * 3 * 8)
    new, calls_new = _run(name, True, monkeypatch, compact)
    old, calls_old = _run(name, False, monkeypatch, compact)
    assert new[-1] == old[-1]  # every matrix Newton solved with, bit for bit
    for a, b in zip(new[:-1], old[:-1], strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()  # bit for bit (signs of zeros and NaNs included)
    assert calls_new and not any(calls_old)
    if name != "logistic":  # Multinomial's Hessian is fresh: updated in place at least once
        assert True in calls_new
    if compact and name not in ("mu-weights", "logistic"):  # a Hessian on part of the batch
        assert "rows" in calls_new
    if compact and name in ("bench-tol", "mixed", "shared-X"):  # formed in the previous matrix's memory
        assert "spare" in calls_new


def test_in_place_only_on_newtons_own(monkeypatch):
    """An objective that does not declare ``_fresh_hessian`` keeps its Hessian untouched:
    here one that returns the same cached array every time (it would be corrupted)."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(5, 5))
    A = A @ A.T + np.eye(5)

    class Cached(mo.Quadratic):
        def _hess_at(self, theta, state, low=False):
            return self._H

    f = Cached(A, np.zeros(5))
    f._H = np.broadcast_to(A, (4, 5, 5)).copy()
    keep = f._H.copy()
    w = rng.normal(size=(4, 5))
    mn.newton_prox(f, w, np.full(4, 0.5), info=True)
    assert np.array_equal(f._H, keep)
    assert ns._plus_lam(np, f._H, np.ones(4), False) is not f._H


def test_multinomial_hessian_holds_no_negative_zero():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 10, 4))
    X[..., 1] = 0.0  # all-zero feature: whole rows and columns of H are sums of zeros
    X[:, :5, 2] = -0.0
    f = Multinomial(X, rng.integers(0, 3, (6, 10)), n_classes=3)
    theta = rng.normal(size=(6, 12))
    _, _, _, state = f._eval(theta)
    for low in (False, True):
        H = f._hess_at(theta, state, low)
        assert np.any(H == 0)  # the case exists
        assert not np.any((H == 0) & np.signbit(H))


@pytest.mark.parametrize("tol", [None, 1e-8])
def test_no_aliasing_between_calls(tol):
    rng = np.random.default_rng(11)
    f, w = _softmax(rng, 12, 20, 3, 4)
    arrays = {k: v.copy() for k, v in vars(f).items() if isinstance(v, np.ndarray)}
    t1, i1 = mo.prox(f, w, 1.0, tol=tol, return_info=True)
    ref = (t1.copy(), i1.error_bound.copy(), i1.tol.copy(), i1.iterations.copy())
    for a in (t1, i1.error_bound, i1.tol, i1.iterations):
        a[...] = -7  # a caller reusing the returned arrays
    t2, i2 = mo.prox(f, w, 1.0, tol=tol, return_info=True)
    for a, b in zip((t2, i2.error_bound, i2.tol, i2.iterations), ref, strict=True):
        assert a.tobytes() == b.tobytes()
    for a in (t2, i2.error_bound, i2.tol, i2.iterations):
        assert not any(np.shares_memory(a, b) for b in (t1, i1.error_bound, i1.tol, i1.iterations, w))
        assert not any(np.shares_memory(a, v) for v in vars(f).values() if isinstance(v, np.ndarray))
    for k, v in arrays.items():
        assert getattr(f, k).tobytes() == v.tobytes(), k


@pytest.mark.parametrize("low", [False, True])
def test_block_fill_is_the_hessian(low, monkeypatch):
    """Filled block by block (3 clients per block of 10): the bits of the fill after the whole
    batch's products, the mirrored blocks the transposes, and the plain ``hess`` to rounding;
    on part of the batch (``rows``, ``out``) the bits of those rows, the others untouched."""
    rng = np.random.default_rng(2)
    f, _ = _softmax(rng, 10, 16, 3, 4, mu=0.3)
    theta = rng.normal(size=(10, 12))
    _, _, _, state = f._eval(theta)
    monkeypatch.setattr(mf, "_BLOCK_BYTES", 3 * 16 * 10 * 3 * 8)
    H = f._hess_at(theta, state, low)
    monkeypatch.setattr(ns, "REUSE", False)
    assert H.tobytes() == f._hess_at(theta, state, low).tobytes()
    H5 = H.reshape(10, 3, 4, 3, 4)
    for a in range(4):
        for c in range(a + 1, 4):  # block (c, a) is stored as the transpose of block (a, c)
            assert np.array_equal(H5[:, :, c, :, a], np.swapaxes(H5[:, :, a, :, c], -1, -2))
    rows = np.array([8, 1, 2, 6, 3])
    out = np.full((10, 12, 12), 7.0)
    assert f._hess_at(theta, state, low, rows=rows, out=out) is out
    assert out[rows].tobytes() == H[rows].tobytes()
    assert np.all(np.delete(out, rows, axis=0) == 7.0)
    ref = f.hess(theta)
    rel = 2.0**-20 if low else 1e-13
    assert np.max(np.abs(H - ref)) <= rel * np.max(np.abs(ref))
