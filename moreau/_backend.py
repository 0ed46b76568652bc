r"""One array namespace for every computation (numpy, cupy, array-api-strict).

Every public function starts by asking :func:`namespace` for the namespace
of its array arguments and then only calls ``xp.*``.  numpy is the default;
cupy is used when the inputs are cupy arrays, or when the *constructor*
backend is set to ``"cupy"`` (``MOREAU_BACKEND=cupy`` or
:func:`set_backend`), in which case constructors move host data to the GPU.

Mixing arrays of two libraries (numpy with cupy, numpy with
array-api-strict) is a ``TypeError`` that names each argument and where it
lives; there is never a silent copy between host and device.
"""

from __future__ import annotations

import math
import os
import warnings
from functools import lru_cache
from typing import Any

import numpy as np
from array_api_compat import array_namespace, is_array_api_obj

from ._typing import Array, DType, Namespace

__all__ = [
    "set_backend",
    "get_backend",
    "namespace",
    "constructor_namespace",
    "as_array",
    "to_numpy",
    "safe_norm",
    "gpu_status",
    "BackendError",
]

_BACKENDS = ("numpy", "cupy")
_backend: str | None = None  # None: read MOREAU_BACKEND on first use


class BackendError(RuntimeError):
    """The requested array backend cannot be used on this machine."""


def _check_name(name: str, source: str) -> str:
    name = str(name).strip().lower()
    if name not in _BACKENDS:
        raise ValueError(f"{source} must be one of {_BACKENDS} (got {name!r})")
    return name


def get_backend() -> str:
    """Name of the backend constructors put new arrays on: 'numpy' or 'cupy'."""
    global _backend
    if _backend is None:
        name = _check_name(os.environ.get("MOREAU_BACKEND", "numpy") or "numpy", "MOREAU_BACKEND")
        if name == "cupy":
            _cupy()  # raises BackendError before the unusable name is stored
        _backend = name
    return _backend


def set_backend(name: str) -> str:
    """Set the constructor backend ('numpy' or 'cupy'); return the previous one.

    Asking for cupy where it is not installed, or where no GPU is usable,
    raises :class:`BackendError` (no fallback to numpy).
    """
    global _backend
    previous = get_backend()
    name = _check_name(name, "backend")
    if name == "cupy":
        _cupy()
    _backend = name
    return previous


@lru_cache(maxsize=1)
def _cupy_status() -> tuple[object | None, str]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"cupy is not importable ({type(exc).__name__}: {exc}); install moreau[gpu]"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
        if n < 1:
            return None, "cupy is installed but no CUDA device is visible"
        float((cupy.arange(3.0) ** 2).sum())  # a kernel actually runs
    except Exception as exc:
        return None, f"cupy is installed but no GPU is usable ({type(exc).__name__}: {exc})"
    return cupy, "ok"


def _cupy() -> Namespace:
    mod, why = _cupy_status()
    if mod is None:
        raise BackendError(f"backend 'cupy' requested but {why}")
    return mod


def gpu_status() -> tuple[bool, str]:
    """(usable, reason) for the cupy backend, without raising."""
    mod, why = _cupy_status()
    return mod is not None, why


def _where(x: Array) -> str:
    xp = array_namespace(x)
    name = getattr(xp, "__name__", str(xp)).split(".")[-1]
    return f"{name} ({getattr(x, 'device', 'cpu')})"


def namespace(**arrays: Any) -> Namespace:
    """The array namespace shared by the named array arguments.

    Python scalars, lists and ``None`` are ignored.  Arrays from two
    different libraries raise ``TypeError`` naming every argument and its
    library/device.  With no array argument, the constructor backend.
    """
    found = {k: v for k, v in arrays.items() if v is not None and is_array_api_obj(v)}
    if not found:
        return array_namespace(_cupy().zeros(0)) if get_backend() == "cupy" else array_namespace(np.zeros(0))
    spaces: dict[Namespace, list[str]] = {}
    for k, v in found.items():
        spaces.setdefault(array_namespace(v), []).append(k)
    if len(spaces) > 1:
        where = ", ".join(f"{k} is on {_where(v)}" for k, v in found.items())
        raise TypeError(f"arguments live on different backends: {where}; move them to one backend first")
    return next(iter(spaces))


def constructor_namespace(**arrays: Any) -> Namespace:
    """Namespace for an objective built from the named arguments.

    Arrays of a non-numpy library (cupy, array-api-strict) decide; numpy
    arrays and Python data count as host data and go to the constructor
    backend (numpy, or cupy under ``MOREAU_BACKEND=cupy``).  Host data mixed
    with arrays of another library is a ``TypeError``.
    """
    found = {k: v for k, v in arrays.items() if v is not None and is_array_api_obj(v)}
    foreign = {k: v for k, v in found.items() if not isinstance(v, (np.ndarray, np.generic))}
    if not foreign:
        return namespace()
    xp = namespace(**foreign)
    host = [k for k, v in found.items() if isinstance(v, (np.ndarray, np.generic))]
    if host:
        k0 = next(iter(foreign))
        raise TypeError(
            f"arguments live on different backends: {k0} is on "
            f"{_where(foreign[k0])}, "
            + ", ".join(f"{k} is on numpy (cpu)" for k in host)
            + "; move them to one backend first"
        )
    return xp


def as_array(
    x: Any,
    xp: Namespace,
    name: str,
    *,
    dtype: DType = None,
    host_ok: bool = False,
    copy: bool = True,
    check_finite: bool = True,
) -> Array:
    """Convert ``x`` to a new array of ``xp`` with a float32 or float64 dtype.

    Integers and bools become the default float (float64); float32 stays
    float32; complex input is a ``TypeError`` (never a silent drop of the
    imaginary part), and so is float16 (too few digits for any certificate)
    or any other non-real dtype.  numpy arrays are accepted for a cupy
    ``xp`` only with ``host_ok=True`` (constructors under
    ``MOREAU_BACKEND=cupy``).  The result never aliases ``x`` (a later
    change to the caller's array cannot reach an objective's caches) unless
    ``copy=False``, for callers that make their own new array from it.  NaN
    or inf anywhere is a ``ValueError`` naming the argument (``check_finite=False``:
    the caller checks, e.g. fused with its own copy).  float32 on cupy warns
    (:func:`flushes_subnormals`).
    """
    if not is_array_api_obj(x):
        x = np.asarray(x)
        if x.dtype == object or x.dtype.kind not in "biufc":
            raise TypeError(f"{name} must be a real numeric array (got dtype {x.dtype})")
    elif isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind not in "biufc":
        raise TypeError(f"{name} must be a real numeric array (got dtype {x.dtype})")
    elif array_namespace(x) is not xp and not (host_ok and isinstance(x, (np.ndarray, np.generic))):
        raise TypeError(
            f"{name} is on {_where(x)} but the computation runs on "
            f"{getattr(xp, '__name__', xp)}; move it there first"
        )
    x = xp.asarray(x)
    if xp.isdtype(x.dtype, "complex floating"):
        raise TypeError(f"{name} must be real (got {x.dtype})")
    if dtype is None:
        if not xp.isdtype(x.dtype, ("bool", "integral", "real floating")):
            raise TypeError(f"{name} must be a real numeric array (got dtype {x.dtype})")
        dtype = x.dtype if xp.isdtype(x.dtype, "real floating") else xp.float64
    if dtype not in (xp.float32, xp.float64):
        raise TypeError(f"{name} must be float32 or float64 (got {dtype}); cast it first")
    x = xp.astype(x, dtype) if copy or x.dtype != dtype else x  # astype copies
    if flushes_subnormals(xp, dtype):
        warnings.warn(
            f"float32 on cupy, which flushes subnormal numbers to zero: moreau's "
            f"float32 error bounds assume gradual underflow and are not proven where values below "
            f"{float(np.finfo(np.float32).smallest_normal):.3g} occur (float64 is unaffected)",
            RuntimeWarning,
            stacklevel=3,
        )
    if check_finite and not _all_finite(x, xp):
        raise ValueError(f"{name} must be finite (got NaN or inf at {_first_bad(x, xp)})")
    return x


def _all_finite(x: Array, xp: Namespace) -> bool:
    """Every entry finite, in one pass and without a boolean mask the size of ``x`` (a 3 GB
    input would take another 0.4 GB).  A finite sum proves every entry finite (IEEE: a NaN
    or an infinity makes the sum NaN or infinite); a sum that is not finite may be an
    overflow of finite entries, so the min and the max decide (NaN propagates through both in
    numpy, cupy and array-api-strict; other namespaces get the mask)."""
    if x.size == 0:
        return True
    if type(x) is np.ndarray and x.size <= 1 << 16:  # small (an iterate): the mask is cheaper than the calls
        return bool(np.isfinite(x).all())
    name = getattr(xp, "__name__", "")
    if name.startswith(
        ("numpy", "cupy", "array_api_strict", "array_api_compat.numpy", "array_api_compat.cupy")
    ):
        with np.errstate(over="ignore", invalid="ignore"):
            if math.isfinite(float(xp.sum(x))):
                return True
        return math.isfinite(float(xp.min(x))) and math.isfinite(float(xp.max(x)))
    return bool(xp.all(xp.isfinite(x)))


def _first_bad(x: Array, xp: Namespace) -> str:
    bad = np.argwhere(~np.isfinite(np.asarray(to_numpy(x))))
    return f"index {tuple(int(i) for i in bad[0])}" if bad.size else "?"


def safe_norm(v: Array, xp: Namespace, axis: int = -1) -> Array:
    """Euclidean norm over ``axis``, within ``(k/2 + 2) eps`` relative of the exact one
    (``k`` the length of ``axis``) for every finite ``v``: no overflow or underflow
    spoils it (data of size 1e-30 in float32 has a nonzero norm).

    Fast path: the plain ``sqrt(sum v_i^2)``, kept wherever the computed sum ``s``
    proves it safe.  The squares are nonnegative, so the partial sums never
    decrease: ``s`` finite means no square and no partial sum overflowed.
    Underflow changes each square by at most half the smallest subnormal,
    ``tiny eps / 2`` (sums of subnormals are exact), so ``s >= tiny / eps``
    bounds its relative effect by ``k eps^2 / 2``: the usual
    ``gamma_k`` bound then holds with room to spare.  Entries failing the test
    (``s`` infinite, zero or below ``tiny / eps``) are recomputed scaled by
    their largest entry, and only those.  All of this assumes gradual underflow:
    on cupy in float32 (:func:`flushes_subnormals`) subnormal entries are read as
    zero, and the bound holds only for ``v`` without them.
    """
    with np.errstate(over="ignore"):  # an overflow is detected below (s = inf)
        s = xp.vecdot(v, v, axis=axis)
    fi = xp.finfo(v.dtype)
    fast = xp.isfinite(s) & (s >= float(fi.smallest_normal) / float(fi.eps))
    r = xp.sqrt(s)
    if bool(xp.all(fast)):
        return r
    if v.ndim > 1 and axis in (-1, v.ndim - 1):  # only the entries that need it
        r[~fast] = _scaled_norm(v[~fast], xp, -1)
        return r
    return xp.where(fast, r, _scaled_norm(v, xp, axis))


def _scaled_norm(v: Array, xp: Namespace, axis: int) -> Array:
    """The norm scaled by the largest entry (the squares cannot overflow or underflow)."""
    m = xp.max(xp.abs(v), axis=axis)
    safe = xp.where(m > 0, m, xp.ones_like(m))
    return m * xp.linalg.vector_norm(v / xp.expand_dims(safe, axis=axis), axis=axis)


def to_numpy(x: Any) -> np.ndarray:
    """Host numpy copy of any supported array (for reports and tests)."""
    if hasattr(x, "get") and not isinstance(x, np.ndarray):  # cupy
        return x.get()
    if isinstance(x, (np.ndarray, np.generic)) or not is_array_api_obj(x):
        return np.asarray(x)
    return np.from_dlpack(x)


def is_numpy(xp: Namespace) -> bool:
    """True for numpy itself or array-api-compat's numpy namespace (the LAPACK routes)."""
    return getattr(xp, "__name__", "") in ("numpy", "array_api_compat.numpy")


def is_gpu(xp: Namespace) -> bool:
    """True for cupy (raw or array-api-compat's namespace): kernels on a GPU."""
    return getattr(xp, "__name__", "").split(".")[-1] == "cupy"


def flushes_subnormals(xp: Namespace, dtype: DType) -> bool:
    """True where ``xp``'s arithmetic in ``dtype`` flushes subnormal operands and results to
    zero: cupy in float32 (CuPy compiles every kernel with ``-ftz=true``; seen on an H200,
    ``benchmarks/RESULTS.md`` section 9).  moreau's error bounds assume gradual underflow: in
    that case they are not proven where values below ``finfo(dtype).smallest_normal`` occur."""
    return is_gpu(xp) and np.dtype(dtype) == np.float32


def host_numpy(x: Any) -> np.ndarray:
    """:func:`to_numpy` as an ``ndarray`` (also for numpy scalars)."""
    return np.asarray(to_numpy(x))


def numpy_dtype(dtype: DType) -> np.dtype:
    """The numpy dtype of the same name as a backend's float dtype."""
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(str(dtype).rsplit(".", 1)[-1])
