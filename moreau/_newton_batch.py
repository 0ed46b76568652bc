"""Batch bookkeeping of the certified Newton (``moreau._newton``): the objective seen on a
flat batch, the records of entries that leave it, and the gather with which objectives
hand Newton a compacted batch (``take_batch``, ``take_object``); the checks of its input."""

from __future__ import annotations

import copy
import inspect
import math
from functools import cached_property

import numpy as np
from array_api_compat import is_array_api_obj

from ._backend import to_numpy

__all__ = [
    "_View",
    "_h_and_grad",
    "_finished",
    "_assemble",
    "_check_finite",
    "_tolerance",
    "take_batch",
    "take_object",
    "takes_rows",
    "bare_copy",
]


class _View:
    """``f``'s evaluation hooks on a flat batch ``(k,)``: ``f`` itself with points reshaped to
    the batch ``shape`` it broadcasts against, or a compacted copy (``f._take``, ``shape=None``)."""

    def __init__(self, f, shape):
        self.f, self.shape, self.xp = f, shape, f.xp

    def _in(self, v):
        return v if self.shape is None or v is None else self.xp.reshape(v, self.shape + tuple(v.shape[1:]))

    def _out(self, v, tail=()):
        if self.shape is None or v is None:
            return v
        if tuple(v.shape) != self.shape + tail:  # a full-shape v stays writable (_plus_lam)
            v = self.xp.broadcast_to(v, self.shape + tail)
        return self.xp.reshape(v, (math.prod(self.shape),) + tail)

    def eval(self, theta):
        v, g, E, state = self.f._eval(self._in(theta))
        if self.shape is not None and state is not None:  # leading axes: the batch
            state = self.xp.reshape(state, (math.prod(self.shape),) + tuple(state.shape[len(self.shape) :]))
        return self._out(v), self._out(g, tuple(theta.shape[1:])), self._out(E), state

    def hess(self, theta, state, low=False, rows=None, out=None):
        d = theta.shape[-1]
        if rows is not None:  # the entries rows (flat indices) into out[rows] (f._hess_rows)
            return self.f._hess_at(self._in(theta), self._in(state), low, rows=rows, out=out)
        args = (self._in(theta), self._in(state)) + ((True,) if low else ())
        return self._out(self.f._hess_at(*args), (d, d))

    def low_ok(self, modulus, hi):
        """Where the objective's float32 direction Hessian may be used (``_low_hessian_ok``)."""
        if not hasattr(self.f, "_low_hessian_ok"):
            return self.xp.zeros(modulus.shape, dtype=self.xp.bool)
        return self._out(self.f._low_hessian_ok(self._in(modulus), self._in(hi)))

    def local(self, theta, state):
        got = self.f._local_curvature(self._in(theta), self._in(state))
        return None if got is None else tuple(self._out(g) for g in got)


def takes_rows(f):
    """Whether ``f._hess_at`` forms part of the batch into Newton's array (``rows=``, ``out=``:
    Multinomial; not where a test replaces it by a plain method)."""
    return "rows" in inspect.signature(type(f)._hess_at).parameters


def _h_and_grad(view, S, x):
    """(h, grad h, rounding bound of grad f, objective state for the Hessian) at a + x."""
    xp = view.xp
    theta, u = S["a"] + x, S["c"] + x
    fv, fg, E, state = view.eval(theta)
    return fv + S["lam"] / 2 * xp.vecdot(u, u), fg + S["lam"][:, None] * u, E, state


def _finished(S, fields, mask):
    """The record of the entries ``mask`` (all when None) leaving the working set."""
    bound, level, tol_k, ok, tn = fields
    out = (S["J"], S["x"], bound, level, tol_k, ok, S["frozen"], S["iterations"], tn)
    return out if mask is None else tuple(v[mask] for v in out)


def _assemble(xp, blocks):
    """The finished records in the order of the batch."""
    if len(blocks) == 1:
        return blocks[0]
    cols = [xp.concat([b[i] for b in blocks], axis=0) for i in range(len(blocks[0]))]
    order = xp.argsort(cols[0])
    return tuple(xp.take(v, order, axis=0) for v in cols)


def take_batch(xp, arr, tail, idx, shape):
    """The entries ``idx`` (flat indices into the batch ``shape``) of ``arr``, whose
    leading axes are a batch broadcasting against ``shape`` (right-aligned) and whose
    last ``tail`` axes are per-entry data: shape ``(len(idx),) + tail shape``.  Data
    shared by the whole batch (a batch of size 1) is returned without its batch axes
    and never copied."""
    nb = arr.ndim - tail
    bshape, tshape = tuple(arr.shape[:nb]), tuple(arr.shape[nb:])
    if math.prod(bshape) == 1:
        return xp.reshape(arr, tshape)
    j, rem, stride, off = xp.zeros_like(idx), idx, 1, len(shape) - nb
    for ax in reversed(range(len(shape))):
        i_ax, rem = rem % shape[ax], rem // shape[ax]
        if ax >= off and bshape[ax - off] > 1:
            j, stride = j + i_ax * stride, stride * bshape[ax - off]
    return xp.take(xp.reshape(arr, (-1,) + tshape), j, axis=0)


def take_object(obj, idx, shape, arrays):
    """A shallow copy of ``obj`` with batch shape ``(len(idx),)`` whose per-entry arrays
    (``arrays``: attribute name -> number of trailing per-entry axes) hold the entries
    ``idx`` of the batch ``shape``; other arrays and cached properties are dropped (the
    copy recomputes a cache for its own entries if it needs it), plain attributes shared."""
    new = bare_copy(obj)
    for k, tail in arrays.items():
        if k in vars(obj):
            new.__dict__[k] = take_batch(obj.xp, vars(obj)[k], tail, idx, shape)
    new.batch_shape = (int(idx.shape[0]),)
    return new


def bare_copy(obj):
    """A shallow copy of ``obj`` holding its plain attributes only: every array and cached property
    left out, for the caller to set the batch's own (a read of anything else fails loudly instead of
    seeing another batch)."""
    cached = {k for cls in type(obj).__mro__ for k, v in vars(cls).items() if isinstance(v, cached_property)}
    new = copy.copy(obj)
    new.__dict__ = {k: v for k, v in vars(obj).items() if not is_array_api_obj(v) and k not in cached}
    return new


def _check_finite(xp, f, h, g, w, shape):
    """The subproblem must be representable at its start: an overflow there is bad input."""
    ok = xp.isfinite(h) & xp.all(xp.isfinite(g), axis=-1)
    if not bool(xp.all(ok)):
        i = tuple(int(k) for k in np.unravel_index(int(np.argwhere(~to_numpy(ok))[0, 0]), shape))
        raise ValueError(
            f"prox of {type(f).__name__}: the subproblem overflows {f.dtype} at w (batch index "
            f"{i}, max |w| {float(xp.max(xp.abs(w))):.3g}): the value or gradient of f + lam/2 "
            f"||theta - w||^2 is not finite there; rescale w or the data"
        )


def _tolerance(tol, xp, dtype, shape):
    t = np.asarray(to_numpy(tol))
    if t.dtype.kind not in "fiu" or t.dtype == bool:
        raise TypeError(f"tol must be a real number or array (got {tol!r})")
    t = t.astype(float)
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"tol must be finite and > 0 (got {tol!r})")
    try:
        np.broadcast_to(t, shape)
    except ValueError:
        raise ValueError(f"tol of shape {t.shape} does not broadcast with the batch shape {shape}") from None
    return xp.asarray(t, dtype=dtype)
