"""Backends: the core runs on every installed array namespace and keeps dtype.

The ``xp`` fixture (conftest) yields numpy, array-api-strict and, where a GPU
is usable, cupy.  Results must be arrays of the input's namespace and dtype,
and agree with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from _tol import assert_close, host
from array_api_compat import array_namespace

import moreau as mo

rng = np.random.default_rng(20)
M, N, D = 3, 8, 3
A_NP = (lambda G: G @ np.swapaxes(G, -1, -2) + np.eye(D))(rng.normal(size=(M, D, D)))
B_NP, W_NP = rng.normal(size=(M, D)), rng.normal(size=(M, D))
X_NP, Y_NP = rng.normal(size=(M, N, D)), rng.choice([-1.0, 1.0], size=(M, N))
L_LOG = np.linalg.eigvalsh(np.swapaxes(X_NP, -1, -2) @ X_NP / (4 * N)).max() + 0.1
COND = max(np.linalg.cond(A_NP + 2 * np.eye(D)).max(), (L_LOG + 2.0) / 2.1)


def _ops(f, w):
    F = mo.envelope(f, 2.0)
    return {
        "prox": mo.prox(f, w, 2.0),
        "env.value": F.value(w),
        "env.grad": F.grad(w),
        "env.hess": F.hess(w),
        "meta.grad": mo.meta_objective(f, 0.05).grad(w),
        "value": f.value(w),
        "grad": f.grad(w),
        "hess": f.hess(w),
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("model", ["quadratic", "logistic"])
def test_core_ops_stay_in_namespace_and_dtype(xp, dtype, model):
    dt = getattr(xp, dtype)
    conv = lambda a: xp.asarray(a.astype(dtype))  # noqa: E731
    if model == "quadratic":
        f, f_np = mo.Quadratic(conv(A_NP), conv(B_NP)), mo.Quadratic(A_NP.astype(dtype), B_NP.astype(dtype))
    else:
        f = mo.Logistic(conv(X_NP), conv(Y_NP), mu=0.1)
        f_np = mo.Logistic(X_NP.astype(dtype), Y_NP.astype(dtype), mu=0.1)
    w = conv(W_NP)
    expected_ns = array_namespace(w)
    reference = _ops(f_np, W_NP.astype(dtype))
    for name, out in _ops(f, w).items():
        assert array_namespace(out) is expected_ns, name
        assert out.dtype == dt, name
        # same algorithm on another namespace: agreement to the dtype tolerance times the
        # condition number of the solves (prox and envelope solve with A + 2I or hess + 2I)
        assert_close(out, reference[name], factor=COND, err_msg=name)


def test_cpu_backend_selection(fresh_backend, monkeypatch):
    assert mo.get_backend() == "numpy"  # default with MOREAU_BACKEND unset
    assert mo.set_backend("numpy") == "numpy"  # returns the previous backend
    monkeypatch.setattr(fresh_backend, "_backend", None)
    monkeypatch.setenv("MOREAU_BACKEND", " NumPy ")  # normalised
    assert mo.get_backend() == "numpy"
    monkeypatch.setattr(fresh_backend, "_backend", None)
    monkeypatch.setenv("MOREAU_BACKEND", "")  # empty means the default
    assert mo.get_backend() == "numpy"
    # constructors put host data (lists, numpy scalars) on numpy
    q = mo.Quadratic([[2.0, 0.0], [0.0, 1.0]], [1.0, 1.0], c=np.float64(0.5))
    assert isinstance(q.A, np.ndarray) and q.A.dtype == np.float64
    assert isinstance(mo.prox(q, [0.0, 0.0], 1.0), np.ndarray)


def test_numpy_scalars_are_host_data():
    """numpy scalars (np.float64 from reductions, rng.choice) count as numpy, not as a foreign backend."""
    f = mo.Logistic(X_NP, Y_NP, mu=np.float64(0.1))
    theta, info = mo.prox(mo.Logistic(X_NP[0], Y_NP[0], mu=np.float64(0.1)), W_NP[0], 1.0, return_info=True)
    assert float(f.mu) == 0.1 and theta.shape == (D,)
    assert info.error_bound.shape == () and info.iterations.shape == ()


@pytest.mark.gpu
def test_cupy_backend_end_to_end(gpu_xp, fresh_backend):
    cp = gpu_xp
    # the numpy reference first: under set_backend("cupy") the constructor moves host data to the GPU
    H_ref = mo.envelope(mo.Logistic(X_NP, Y_NP, mu=0.1), 2.0).hess(W_NP)
    previous = mo.set_backend("cupy")
    try:
        q = mo.Quadratic(A_NP, B_NP)  # host data moved to the GPU by the constructor
        assert isinstance(q.A, cp.ndarray)
        theta = mo.prox(q, cp.asarray(W_NP), 2.0)
        assert isinstance(theta, cp.ndarray)
        ref = np.linalg.solve(A_NP + 2 * np.eye(D), (B_NP + 2 * W_NP)[..., None])[..., 0]
        assert_close(host(theta), ref, factor=COND)
        f = mo.Logistic(cp.asarray(X_NP), cp.asarray(Y_NP), mu=0.1)
        H = mo.envelope(f, 2.0).hess(cp.asarray(W_NP))
        assert isinstance(H, cp.ndarray)
        assert_close(host(H), H_ref, factor=COND)
        with pytest.raises(TypeError, match="w is on numpy"):
            mo.prox(f, W_NP, 1.0)
    finally:
        mo.set_backend(previous)
