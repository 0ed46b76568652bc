"""Bad arguments: one table of (call, expected exception, message fragment).

Every message must say what was expected and what arrived (STYLE.md, Errors),
so each fragment names the argument and, where there is one, the bad value.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import moreau as mo
import moreau._backend as backend
from moreau import strategies as ms

try:
    import array_api_strict as xs
except ImportError:  # only the mixed-backend rows need it
    xs = None

I3, B3 = np.eye(3), np.ones(3)
X, Y = np.arange(12.0).reshape(4, 3) / 10, np.array([1.0, -1.0, 1.0, -1.0])
Q = mo.Quadratic(I3, B3)
Q_NONCONVEX = mo.Quadratic(np.diag([-2.0, 1.0, 3.0]), B3)
Q_BATCH = mo.Quadratic(np.broadcast_to(I3, (2, 3, 3)), np.ones((2, 3)))
LOG = mo.Logistic(X, Y)
GPU_OK, GPU_WHY = backend.gpu_status()


def _with(arr, index, value):
    arr = np.array(arr, dtype=float)
    arr[index] = value
    return arr


def _set_backend_keep_state(name):
    """set_backend(name), restoring the previous backend whatever happens."""
    previous = backend._backend
    try:
        mo.set_backend(name)
    finally:
        backend._backend = previous


def _env_backend(value):
    """get_backend() with MOREAU_BACKEND=value and no backend chosen yet; state restored."""
    previous_env, previous = os.environ.get("MOREAU_BACKEND"), backend._backend
    os.environ["MOREAU_BACKEND"] = value
    backend._backend = None
    try:
        mo.get_backend()
    finally:
        backend._backend = previous
        if previous_env is None:
            del os.environ["MOREAU_BACKEND"]
        else:
            os.environ["MOREAU_BACKEND"] = previous_env


needs_strict = pytest.mark.skipif(xs is None, reason="array_api_strict is not installed")
no_gpu = pytest.mark.skipif(GPU_OK, reason="cupy is usable on this machine: set_backend('cupy') succeeds")

CASES = [
    # -- Quadratic construction
    (
        "A-not-square",
        lambda: mo.Quadratic(np.ones((2, 3)), B3),
        ValueError,
        r"A must have shape \(\.\.\., d, d\).*\(2, 3\)",
    ),
    (
        "A-not-symmetric",
        lambda: mo.Quadratic(np.array([[1.0, 2.0], [0.0, 1.0]]), np.ones(2)),
        ValueError,
        r"A must be symmetric.*= 2\b",
    ),
    ("A-nan", lambda: mo.Quadratic(_with(I3, (1, 1), np.nan), B3), ValueError, r"A must be finite.*\(1, 1\)"),
    ("A-inf", lambda: mo.Quadratic(_with(I3, (0, 2), np.inf), B3), ValueError, r"A must be finite.*\(0, 2\)"),
    ("b-nan", lambda: mo.Quadratic(I3, _with(B3, 1, np.nan)), ValueError, r"b must be finite.*\(1,\)"),
    ("b-inf", lambda: mo.Quadratic(I3, _with(B3, 2, -np.inf)), ValueError, r"b must be finite.*\(2,\)"),
    ("b-wrong-length", lambda: mo.Quadratic(I3, np.ones(2)), ValueError, r"b must have shape.*d=3.*\(2,\)"),
    (
        "quadratic-batch-mismatch",
        lambda: mo.Quadratic(np.broadcast_to(I3, (2, 3, 3)), np.ones((3, 3))),
        ValueError,
        r"do not broadcast.*A \(2,\), b \(3,\)",
    ),
    ("A-complex", lambda: mo.Quadratic(I3 + 0j, B3), TypeError, r"A must be real.*complex"),
    ("A-strings", lambda: mo.Quadratic([["a"]], [1.0]), TypeError, r"A must be a real numeric array"),
    (
        "eigenvectors-not-orthonormal",
        lambda: mo.Quadratic.from_spectrum(B3, 2 * I3, B3),
        ValueError,
        r"eigenvectors must be orthonormal",
    ),
    # -- Logistic construction
    ("X-nan", lambda: mo.Logistic(_with(X, (2, 0), np.nan), Y), ValueError, r"X must be finite.*\(2, 0\)"),
    ("X-inf", lambda: mo.Logistic(_with(X, (0, 1), np.inf), Y), ValueError, r"X must be finite.*\(0, 1\)"),
    ("y-nan", lambda: mo.Logistic(X, _with(Y, 3, np.nan)), ValueError, r"y must be finite.*\(3,\)"),
    ("X-1d", lambda: mo.Logistic(np.ones(3), np.ones(3)), ValueError, r"X must have shape \(\.\.\., n, d\)"),
    (
        "y-label-2",
        lambda: mo.Logistic(X, _with(Y, 1, 2.0)),
        ValueError,
        r"labels in \{-1, \+1\} or \{0, 1\} \(got 2\)",
    ),
    ("y-label-half", lambda: mo.Logistic(X, _with(Y, 1, 0.5)), ValueError, r"labels.*0\.5"),
    (
        "y-minus-one-mixed-with-zero",
        lambda: mo.Logistic(X, np.array([1.0, 0.0, -1.0, 1.0])),
        ValueError,
        r"labels.*-1 mixed with 0",
    ),
    ("y-wrong-length", lambda: mo.Logistic(X, np.ones(3)), ValueError, r"y must have shape.*n=4.*\(3,\)"),
    (
        "logistic-batch-mismatch",
        lambda: mo.Logistic(np.ones((2, 4, 3)), np.ones((3, 4))),
        ValueError,
        r"do not broadcast.*X \(2,\), y \(3,\)",
    ),
    (
        "weights-wrong-shape",
        lambda: mo.Logistic(X, Y, weights=np.ones(5)),
        ValueError,
        r"weights must have shape.*n=4.*\(5,\)",
    ),
    (
        "weights-negative",
        lambda: mo.Logistic(X, Y, weights=np.array([1.0, -0.5, 1.0, 1.0])),
        ValueError,
        r"weights must be >= 0.*-0\.5",
    ),
    (
        "weights-all-zero",
        lambda: mo.Logistic(np.ones((2, 4, 3)), np.ones((2, 4)), weights=np.array([[1.0] * 4, [0.0] * 4])),
        ValueError,
        r"positive sum for every client",
    ),
    (
        "weights-nan",
        lambda: mo.Logistic(X, Y, weights=_with(np.ones(4), 0, np.nan)),
        ValueError,
        r"weights must be finite",
    ),
    ("mu-negative", lambda: mo.Logistic(X, Y, mu=-0.1), ValueError, r"mu must be >= 0.*-0\.1"),
    # -- prox arguments
    ("w-nan", lambda: mo.prox(Q, _with(B3, 0, np.nan), 1.0), ValueError, r"w must be finite"),
    ("w-inf-logistic", lambda: mo.prox(LOG, _with(B3, 2, np.inf), 1.0), ValueError, r"w must be finite"),
    (
        "w-wrong-length",
        lambda: mo.prox(Q, np.ones(2), 1.0),
        ValueError,
        r"w must have shape \(\.\.\., d\) with d=3.*\(2,\)",
    ),
    ("w-scalar", lambda: mo.prox(Q, 1.0, 1.0), ValueError, r"w must have shape.*d=3.*\(\)"),
    (
        "w-batch-mismatch",
        lambda: mo.prox(Q_BATCH, np.ones((3, 3)), 1.0),
        ValueError,
        r"w batch shape \(3,\) does not broadcast.*\(2,\)",
    ),
    (
        "lam-batch-mismatch",
        lambda: mo.prox(Q_BATCH, np.ones((2, 3)), np.ones(3)),
        ValueError,
        r"lam batch shape \(3,\) does not broadcast",
    ),
    ("lam-zero", lambda: mo.prox(Q, B3, 0.0), ValueError, r"lam must be > 0 \(got 0\)"),
    ("lam-negative", lambda: mo.prox(Q, B3, -0.5), ValueError, r"lam must be > 0.*-0\.5"),
    (
        "lam-negative-in-array",
        lambda: mo.prox(Q, B3, np.array([1.0, -0.5])[:, None]),
        ValueError,
        r"lam must be > 0.*-0\.5",
    ),
    ("lam-nan", lambda: mo.prox(Q, B3, float("nan")), ValueError, r"lam must be a finite number.*nan"),
    ("lam-inf", lambda: mo.prox(LOG, B3, float("inf")), ValueError, r"lam must be a finite number.*inf"),
    ("lam-nan-array", lambda: mo.prox(Q, B3, np.array([np.nan])), ValueError, r"lam must be finite"),
    ("lam-bool", lambda: mo.prox(Q, B3, True), ValueError, r"lam must be a number, not a bool \(got True\)"),
    (
        "lam-below-nonconvexity-bound",
        lambda: mo.prox(Q_NONCONVEX, B3, 1.5),
        ValueError,
        r"needs lam > 2 .*nonconvex.*got lam=1\.5",
    ),
    (
        "envelope-lam-below-bound",
        lambda: mo.envelope(Q_NONCONVEX, 2.0),
        ValueError,
        r"needs lam > 2 .*got lam=2\b",
    ),
    (
        "tol-negative",
        lambda: mo.prox(LOG, B3, 1.0, tol=-1.0),
        ValueError,
        r"tol must be finite and > 0.*-1\.0",
    ),
    ("max-iter-negative", lambda: mo.prox(LOG, B3, 1.0, max_iter=-1), ValueError, r"max_iter.*-1"),
    (
        "prox-of-non-objective",
        lambda: mo.prox(object(), B3, 1.0),
        TypeError,
        r"f must be a moreau Objective.*object",
    ),
    (
        "envelope-of-non-objective",
        lambda: mo.envelope([1.0], 1.0),
        TypeError,
        r"f must be a moreau Objective.*list",
    ),
    (
        "meta-of-non-objective",
        lambda: mo.meta_objective("f", 0.1),
        TypeError,
        r"f must be a moreau Objective.*str",
    ),
    (
        "meta-alpha-negative",
        lambda: mo.meta_objective(Q, -0.1),
        ValueError,
        r"alpha must be finite and >= 0.*-0\.1",
    ),
    ("meta-alpha-nan", lambda: mo.meta_objective(Q, float("nan")), ValueError, r"alpha must be finite.*nan"),
    (
        "meta-logistic-curvature-bounds",
        lambda: mo.meta_objective(LOG, 0.1).curvature_bounds(),
        TypeError,
        r"only for quadratics.*Logistic",
    ),
    (
        "minimizer-not-positive-definite",
        lambda: Q_NONCONVEX.minimizer(),
        ValueError,
        r"positive definite.*-2",
    ),
    ("gradient-bound-with-mu", lambda: mo.Logistic(X, Y, mu=0.1).gradient_bound(), ValueError, r"mu = 0"),
    (
        "envelope-third",
        lambda: mo.envelope(Q, 1.0).third(B3, B3),
        TypeError,
        r"Envelope does not provide third",
    ),
    # -- inputs that used to give a wrong answer or fail deep inside numpy (issue 8)
    ("b-complex", lambda: mo.Quadratic(I3, B3 + 1j), TypeError, r"b must be real \(got complex128\)"),
    (
        "w-complex-quadratic",
        lambda: mo.prox(Q, B3 + 1j, 1.0),
        TypeError,
        r"w must be real \(got complex128\)",
    ),
    (
        "w-complex-logistic",
        lambda: mo.prox(LOG, B3 + 1j, 1.0),
        TypeError,
        r"w must be real \(got complex128\)",
    ),
    (
        "X-float16",
        lambda: mo.Logistic(X.astype(np.float16), Y),
        TypeError,
        r"X must be float32 or float64 \(got float16\)",
    ),
    (
        "A-float16",
        lambda: mo.Quadratic(I3.astype(np.float16), B3),
        TypeError,
        r"A must be float32 or float64 \(got float16\)",
    ),
    (
        "A-d-0",
        lambda: mo.Quadratic(np.zeros((0, 0)), np.zeros(0)),
        ValueError,
        r"A must have d >= 1.*\(0, 0\)",
    ),
    (
        "X-d-0",
        lambda: mo.Logistic(np.zeros((4, 0)), Y),
        ValueError,
        r"X must have n >= 1 samples and d >= 1.*\(4, 0\)",
    ),
    (
        "X-n-0",
        lambda: mo.Logistic(np.zeros((0, 3)), np.zeros(0)),
        ValueError,
        r"X must have n >= 1 samples.*\(0, 3\)",
    ),
    (
        "multinomial-n-0",
        lambda: mo.Multinomial(np.zeros((0, 3)), np.zeros(0), n_classes=2),
        ValueError,
        r"X must have n >= 1 samples.*\(0, 3\)",
    ),
    (
        "lam-subnormal",
        lambda: mo.prox(LOG, B3, 1e-310),
        ValueError,
        r"lam must lie in \[2\.23e-308.*got min 1e-310",
    ),
    ("lam-subnormal-quadratic", lambda: mo.prox(Q, B3, 1e-310), ValueError, r"lam must lie in.*1e-310"),
    (
        "lam-float32-overflow",
        lambda: mo.prox(
            mo.Quadratic(np.eye(2, dtype=np.float32), np.ones(2, np.float32)), np.ones(2, np.float32), 1e300
        ),
        ValueError,
        r"lam must lie in.*max inf",
    ),
    (
        "lam-huge-int",
        lambda: mo.prox(LOG, B3, 10**400),
        ValueError,
        r"lam must be a finite number.*401 digits",
    ),
    (
        "max-iter-str",
        lambda: mo.prox(LOG, B3, 1.0, max_iter="5"),
        TypeError,
        r"max_iter must be a non-negative integer.*'5'",
    ),
    (
        "max-iter-float",
        lambda: mo.prox(LOG, B3, 1.0, max_iter=2.7),
        TypeError,
        r"max_iter must be a non-negative integer.*2\.7",
    ),
    ("max-iter-float-quadratic", lambda: mo.prox(Q, B3, 1.0, max_iter=2.7), TypeError, r"max_iter.*2\.7"),
    (
        "tol-string",
        lambda: mo.prox(LOG, B3, 1.0, tol="small"),
        TypeError,
        r"tol must be a real number.*'small'",
    ),
    (
        "w-overflow-logistic",
        lambda: mo.prox(mo.Logistic(np.array([[1.0, 2.0]]), [1.0]), np.array([1e308, -1e308]), 1e10),
        ValueError,
        r"overflows float64 at w.*1e\+308",
    ),
    (
        "w-overflow-quadratic",
        lambda: mo.prox(mo.Quadratic(np.eye(2), np.ones(2)), np.array([1e308, -1e308]), 1e10),
        ValueError,
        r"prox of Quadratic overflows float64.*1e\+308",
    ),
    (
        "lam-within-eigenvalue-error",
        lambda: mo.prox(mo.Quadratic(np.diag([1e6, 1.0, -1e-3]), B3), B3, 1e-3 * (1 + 1e-8)),
        ValueError,
        r"lam=0\.00100000001.*too close to the nonconvex threshold.*exact only to",
    ),
    # -- mixed backends
    pytest.param(
        "mixed-quadratic",
        lambda: mo.Quadratic(xs.asarray(I3), B3),
        TypeError,
        r"different backends: A is on array_api_strict.*b is on numpy",
        marks=needs_strict,
    ),
    pytest.param(
        "mixed-logistic",
        lambda: mo.Logistic(X, xs.asarray(Y)),
        TypeError,
        r"different backends: y is on array_api_strict.*X is on numpy",
        marks=needs_strict,
    ),
    pytest.param(
        "mixed-prox-point",
        lambda: mo.prox(Q, xs.asarray(B3), 1.0),
        TypeError,
        r"w is on array_api_strict.*numpy",
        marks=needs_strict,
    ),
    pytest.param(
        "mixed-prox-lam",
        lambda: mo.prox(mo.Quadratic(xs.asarray(I3), xs.asarray(B3)), xs.asarray(B3), np.ones(1)),
        TypeError,
        r"lam is on numpy.*array_api_strict",
        marks=needs_strict,
    ),
    # -- backends
    pytest.param(
        "set-backend-cupy-unusable",
        lambda: _set_backend_keep_state("cupy"),
        mo.BackendError,
        r"backend 'cupy' requested but",
        marks=no_gpu,
    ),
    (
        "set-backend-unknown",
        lambda: _set_backend_keep_state("tensorflow"),
        ValueError,
        r"backend must be one of \('numpy', 'cupy'\).*'tensorflow'",
    ),
    (
        "env-backend-unknown",
        lambda: _env_backend("tensorflow"),
        ValueError,
        r"MOREAU_BACKEND must be one of.*'tensorflow'",
    ),
    pytest.param(
        "env-backend-cupy-unusable",
        lambda: _env_backend("cupy"),
        mo.BackendError,
        r"backend 'cupy' requested but",
        marks=no_gpu,
    ),
    # -- strategies: validated when built, errors name the argument and value
    ("strategy-dim-0", lambda: ms.quadratics(dim=0), ValueError, r"dim must be an integer >= 1 \(got 0\)"),
    (
        "strategy-spectrum-reversed",
        lambda: ms.quadratics(spectrum=(2, 1)),
        ValueError,
        r"spectrum.*lo <= hi.*\(2, 1\)",
    ),
    ("strategy-kind", lambda: ms.quadratics(kind="concave"), ValueError, r"kind must be one of.*'concave'"),
    (
        "strategy-dtype",
        lambda: ms.quadratics(dtype=np.int32),
        ValueError,
        r"dtype must be float32 or float64",
    ),
    (
        "strategy-label-balance",
        lambda: ms.logistic_problems(label_balance=1.5),
        ValueError,
        r"label_balance must be in \[0, 1\] \(got 1\.5\)",
    ),
    (
        "strategy-mu",
        lambda: ms.logistic_problems(mu=-1.0),
        ValueError,
        r"mu must be finite and >= 0 \(got -1\.0\)",
    ),
    ("strategy-n-0", lambda: ms.logistic_problems(n=0), ValueError, r"n must be an integer >= 1 \(got 0\)"),
    ("strategy-lams", lambda: ms.lams(min_value=0.0), ValueError, r"min_value.*0 < lo <= hi.*0\.0"),
    (
        "strategy-batch-dims",
        lambda: ms.batch_shapes(max_dims=5),
        ValueError,
        r"max_dims must be an integer in \[0, 3\] \(got 5\)",
    ),
    ("strategy-batch", lambda: ms.quadratics(batch=3), ValueError, r"batch must be a shape tuple.*3"),
]


def _id(case):
    return case.values[0] if hasattr(case, "values") else case[0]


@pytest.mark.parametrize("name, call, exc, fragment", CASES, ids=[_id(c) for c in CASES])
def test_bad_input(name, call, exc, fragment):
    with pytest.raises(exc, match=fragment):
        call()


@pytest.mark.skipif(GPU_OK, reason="cupy is usable on this machine")
def test_failed_set_backend_leaves_numpy(fresh_backend):
    assert mo.get_backend() == "numpy"
    with pytest.raises(mo.BackendError):
        mo.set_backend("cupy")
    assert mo.get_backend() == "numpy"
    assert isinstance(mo.Quadratic(I3, B3).A, np.ndarray)


@pytest.mark.skipif(GPU_OK, reason="cupy is usable on this machine")
def test_unusable_env_backend_keeps_failing(fresh_backend, monkeypatch):
    """MOREAU_BACKEND=cupy without a GPU fails every time; never silently reports 'cupy'."""
    monkeypatch.setenv("MOREAU_BACKEND", "cupy")
    for _ in range(2):
        with pytest.raises(mo.BackendError):
            mo.get_backend()
    with pytest.raises(mo.BackendError):
        mo.Quadratic(I3, B3)


def test_inputs_are_copied_at_construction():
    """A later change to the caller's arrays reaches neither values nor cached constants."""
    Xc, Yc, bc = X.copy(), Y.copy(), B3.copy()
    f, q = mo.Logistic(Xc, Yc), mo.Quadratic(I3, bc)
    m = mo.Multinomial(Xc, np.array([0.0, 1.0, 0.0, 1.0]))
    before = [
        float(f.smoothness()),
        float(f.value(B3)),
        float(m.smoothness()),
        float(m.value(np.ones(6))),
        float(q.value(B3)),
    ]
    Xc *= 100
    Yc *= -1
    bc *= 5
    after = [
        float(f.smoothness()),
        float(f.value(B3)),
        float(m.smoothness()),
        float(m.value(np.ones(6))),
        float(q.value(B3)),
    ]
    assert before == after


def test_huge_quadratic_is_a_correct_answer():
    """A = 1e308 I used to raise IndexError (the symmetrisation overflowed)."""
    theta, info = mo.prox(mo.Quadratic(1e308 * I3, B3), B3, 1.0, return_info=True)
    assert np.all(np.abs(theta - 2.0 / (1e308 + 1.0)) <= info.error_bound)
