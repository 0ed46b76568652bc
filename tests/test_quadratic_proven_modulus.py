"""The quadratic certificate's modulus is proven, not modelled.

``Quadratic``'s ``error_bound`` divides the residual by a lower bound on
``lambda_min(A + lam I)``.  That lower bound comes from one certified Cholesky per
matrix (``moreau._chol.chol_lower_bound``), so it holds whatever the accuracy of
the computed eigenvalues: these tests check it against 50-digit eigenvalues (mpmath),
across scales and dtypes, and feed it deliberately wrong eigenvalue estimates.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from _mpref import _mat, error, quadratic_prox

import moreau as mo
from moreau._chol import chol_lower_bound


def _with_spectrum(a, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(len(a), len(a))))[0]
    A = (Q * np.asarray(a, dtype=np.float64)) @ Q.T
    return ((A + A.T) / 2).astype(dtype)


def _mp_min_eig(A):
    """Smallest eigenvalue of the stored matrix (its floats converted exactly), 50 digits."""
    ev = mp.eigsy(_mat(A), eigvals_only=True)
    return min(ev[i] for i in range(len(ev)))


SPECTRA = {
    "spread": [1e6, 3.0, 1.0, 1e-3],
    "nonconvex": [5.0, 2.0, -0.5, -1.0],
    "tiny-min": [1e6, 3.0, 1.0, 1e-10],
    "cluster": [1.0, 1.0 + 1e-12, 1.0 + 2e-12, 2.0, 3.0],
    "d=8": [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, -1e-3],
}


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1.0, 1e150, 1e300])
@pytest.mark.parametrize("name", list(SPECTRA))
def test_lower_bound_is_below_and_close_to_the_true_smallest_eigenvalue(name, scale):
    A = _with_spectrum(SPECTRA[name]) * scale
    if not np.all(np.isfinite(A)):
        pytest.skip("the spectrum overflows at this scale")
    a1 = _mp_min_eig(A)
    d, fro = len(A), np.linalg.norm(A / scale) * scale  # no overflow in the sum of squares
    t = np.linalg.eigvalsh(A)[0] - 4 * d * np.finfo(float).eps * fro
    p = float(chol_lower_bound(A, np.float64(t), np))
    assert mp.mpf(p) <= a1  # the theorem
    assert float(a1) - p <= 10 * d * d * np.finfo(float).eps * fro + 1e-300  # and it is not vacuous


@pytest.mark.parametrize("name", ["spread", "nonconvex", "d=8"])
def test_lower_bound_float32(name):
    A = _with_spectrum(SPECTRA[name], dtype=np.float32)
    a1 = _mp_min_eig(A)
    t = np.float64(np.linalg.eigvalsh(A.astype(np.float64))[0]) - 1e-3 * np.linalg.norm(A)
    p = float(chol_lower_bound(A, t, np))
    assert mp.mpf(p) <= a1
    assert float(a1) - p <= 1e-3 * np.linalg.norm(A) + 100 * len(A) ** 2 * np.finfo(
        np.float32
    ).eps * np.linalg.norm(A)


@pytest.mark.parametrize("offset", [1e-9, 1e-6, 1.0, 1e3])
def test_estimate_above_the_true_eigenvalue_still_gives_a_proven_bound(offset):
    """An estimate t above lambda_min(A) (LAPACK off by more than its model) makes the
    factorization break down: the allowance widens, finally from -||A||_inf: p stays below."""
    A = _with_spectrum(SPECTRA["spread"], seed=3)
    a1 = _mp_min_eig(A)
    p = float(chol_lower_bound(A, np.float64(float(a1) + offset), np))
    assert np.isfinite(p) and mp.mpf(p) <= a1
    assert p >= -np.abs(A).sum(axis=1).max() * 1.01  # no worse than the infinity-norm fallback


def test_batch_of_matrices_each_its_own_bound():
    As = np.stack(
        [
            _with_spectrum(s, seed=k)
            for k, s in enumerate([[3.0, 2.0, 1.0, 0.5], [1.0, -2.0, 4.0, 0.0], [1e-8, 1.0, 2.0, 3.0]])
        ]
    )
    t = np.linalg.eigvalsh(As)[:, 0] - 1e-12
    p = chol_lower_bound(As, t, np)
    assert p.shape == (3,)
    for A, pk in zip(As, p, strict=True):
        a1 = _mp_min_eig(A)
        assert mp.mpf(float(pk)) <= a1 and float(a1) - pk < 1e-10


@pytest.mark.parametrize("corrupt", [+0.4, -0.4, +5.0])
def test_certificate_survives_a_wrong_computed_eigenvalue(corrupt):
    """The prox's error bound must hold even if the computed smallest eigenvalue is wrong:
    the modulus is what the certified Cholesky proves, not the computed eigenvalue."""
    A = _with_spectrum([1.0, 2.0, 3.0, 4.0], seed=1)
    b = np.array([1.0, -2.0, 0.5, 3.0])
    w = np.array([0.3, 0.1, -0.7, 2.0])
    lam = 10.0
    q = mo.Quadratic(A, b)
    q.__dict__["_tri_a1"] = np.asarray(q._tri_a1 + corrupt)  # as if LAPACK had been that far off
    theta, info = mo.prox(q, w, lam, return_info=True)
    err = error(theta, quadratic_prox(A, b, w, lam))
    assert err <= info.error_bound
    honest = mo.Quadratic(A, b)
    _, info0 = mo.prox(honest, w, lam, return_info=True)
    if corrupt > 0:  # the estimate was too high: the proof falls back to a weaker, still valid modulus
        assert info.error_bound >= info0.error_bound


def test_near_threshold_certified_modulus_is_positive_and_bound_holds():
    a = [1e6, 3.0, 1.0, -1e-3]
    A, b = _with_spectrum(a, seed=0), np.linspace(-1.0, 1.0, 4)
    a1 = float(_mp_min_eig(A))
    for rel in (1e-2, 1e-4):
        lam = -a1 * (1 + rel)
        theta, info = mo.prox(mo.Quadratic(A, b), np.zeros(4), lam, return_info=True)
        assert error(theta, quadratic_prox(A, b, np.zeros(4), lam)) <= info.error_bound


def test_certificate_on_every_route_and_scale():
    """tri (numpy default with a certificate) and eigh (cached) give bounds that hold at every scale."""
    rng = np.random.default_rng(7)
    for scale in (1e-150, 1.0, 1e150):
        M = rng.normal(size=(3, 5, 5))
        A = (M @ np.swapaxes(M, -1, -2) / 5 - 0.2 * np.eye(5)) * scale
        b, w = rng.normal(size=(3, 5)) * scale, rng.normal(size=(3, 5))
        lam = 1.5 * scale
        for cached in (False, True):
            q = mo.Quadratic(A, b)
            if cached:
                _ = q.eigenvalues  # the property computes and caches the eigendecomposition
            theta, info = mo.prox(q, w, lam, return_info=True)
            for k in range(3):
                assert error(theta[k], quadratic_prox(A[k], b[k], w[k], lam)) <= info.error_bound[k]


def test_unprovable_lambda_is_a_clear_error():
    """lam just above the computed threshold but below what the certified factorization can
    prove: a ValueError that says so (never a bound divided by a non-positive modulus)."""
    A = _with_spectrum([1e6, 3.0, 1.0, -1e-3], seed=0)
    q = mo.Quadratic(A, np.ones(4))
    a1_hat = float(q._tri_a1)
    lam = -a1_hat + 1.5 * float(q.eigenvalue_error())  # passes the model check, not the proof
    with pytest.raises(ValueError, match=r"too close to the nonconvex threshold.*prove"):
        mo.prox(q, np.zeros(4), lam, return_info=True)


def test_array_api_path_proves_the_same_bound():
    """The non-LAPACK path (batched linalg.cholesky, matrix by matrix where it raises) on
    array-api-strict: the same proven bounds as numpy's potrf path, also when some fail."""
    xps = pytest.importorskip("array_api_strict")
    As = np.stack(
        [_with_spectrum(s, seed=k) for k, s in enumerate([[3.0, 2.0, 1.0, 0.5], [1.0, -2.0, 4.0, 0.0]])]
    )
    a1 = np.linalg.eigvalsh(As)[:, 0]
    for t in (a1 - 1e-12, a1 + np.array([0.0, 0.5])):  # the second matrix's estimate is too high
        p_np = chol_lower_bound(As, t, np)
        p_x = chol_lower_bound(xps.asarray(As), t, xps)
        np.testing.assert_array_equal(p_np, p_x)
        assert all(mp.mpf(float(p)) <= _mp_min_eig(A) for p, A in zip(p_x, As, strict=True))
