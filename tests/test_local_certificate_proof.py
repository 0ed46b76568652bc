"""The logistic local certificate proves its eigenvalue instead of trusting LAPACK.

Newton's local radius uses ``lambda_min`` of the computed Hessian at the iterate.  That value
is now a proven lower bound from one certified Cholesky (``moreau._newton_cert._proven_min_eig``),
so a wrong eigensolver only weakens the bound: checked against 50-digit eigenvalues and,
end to end, against 50-digit prox references with ``eigvalsh`` deliberately corrupted.
"""

from __future__ import annotations

import array_api_compat.numpy as anp
import mpmath as mp
import numpy as np
import pytest
from _mpref import _mat, error, logistic_prox
from _tol import host

import moreau as mo
from moreau._newton_cert import _proven_min_eig


def _min_eig(H):
    ev = mp.eigsy(_mat(H), eigvals_only=True)
    return min(ev[i] for i in range(len(ev)))


def _hessians(seed, k=6, n=30, d=4, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(k, n, d))
    c = rng.uniform(0.0, 0.25, size=(k, n)) / n  # sigma'(z) weights
    return (np.swapaxes(X, -1, -2) @ (c[..., None] * X)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("offset", [0.0, 1e-6, 0.3])
def test_proven_min_eig_below_the_true_eigenvalue(dtype, offset):
    H = _hessians(3, dtype=dtype)
    ev = np.linalg.eigvalsh(H.astype(np.float64))[:, 0].astype(dtype) + dtype(offset)  # maybe wrong
    eig = np.full(H.shape[0], 4 * 4 * np.finfo(dtype).eps, dtype=dtype) * np.trace(H, axis1=1, axis2=2)
    p = _proven_min_eig(anp, H, ev, eig)
    assert p.dtype == dtype
    for Hk, pk in zip(H, p, strict=True):
        assert mp.mpf(float(pk)) <= _min_eig(Hk)
    if offset == 0.0:  # an honest estimate: the proof costs little
        true = np.array([float(_min_eig(Hk)) for Hk in H])
        assert np.all(true - p <= 1e-4 * np.trace(H, axis1=1, axis2=2) + 1e-12)


@pytest.mark.parametrize("factor", [1.5, 10.0])
def test_logistic_bound_holds_with_a_wrong_eigensolver(monkeypatch, factor):
    """mu = 0, lam = 1e-6: the local curvature, not lam + mu, settles the certificate (honest
    bound ~3e-13 against ~5e-8 from lam alone).  With eigvalsh returning factor x the truth the
    bound still holds and cannot get tighter than the honest one: the proof falls back to a
    weaker, valid eigenvalue bound (trusting the corrupted value would shrink it factor-fold)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 5)), rng.choice([-1.0, 1.0], 200)
    f = mo.Logistic(X, y)
    w = rng.normal(size=5)
    _, honest = mo.prox(f, w, 1e-6, return_info=True)
    assert honest.error_bound < 1e-11  # the local certificate is what settled it
    true_eigvalsh = anp.linalg.eigvalsh
    monkeypatch.setattr(anp.linalg, "eigvalsh", lambda H: true_eigvalsh(H) * factor)
    theta, info = mo.prox(f, w, 1e-6, return_info=True)
    ref = logistic_prox(host(f.X), host(f.y), host(f.weights), 0.0, w, 1e-6, theta)
    assert error(theta, ref) <= info.error_bound
    assert info.error_bound >= honest.error_bound * (1 - 1e-9)


def test_null_lift_bounds_the_eigenvalue_past_the_shift_directions():
    """Multinomial: lambda_min(fl(H + M)) - extra <= lambda_{d+1}(H) (interlacing, M PSD of
    rank d) and it is that eigenvalue to rounding (the shift directions are H's mu-eigenspace)."""
    rng = np.random.default_rng(2)
    f = mo.Multinomial(rng.normal(size=(30, 3)), rng.integers(0, 4, 30), n_classes=4, mu=0.01)
    H = np.stack([f.hess(rng.normal(size=f.dim)) for _ in range(3)])
    ev = np.linalg.eigvalsh(H)[:, f._null_dim]
    Hl, extra = f._null_lift(H, ev)
    for Hk, Hlk, xk in zip(H, Hl, extra, strict=True):
        ref = mp.eigsy(_mat(Hk), eigvals_only=True)
        target = sorted(ref[i] for i in range(len(ref)))[f._null_dim]
        low = _min_eig(Hlk) - mp.mpf(float(xk))
        assert low <= target and float(target - low) <= 1e-12 * np.linalg.norm(Hk)


@pytest.mark.parametrize("factor", [1.5, 10.0])
def test_multinomial_bound_holds_with_a_wrong_eigensolver(monkeypatch, factor):
    """As for logistic: mu = 0, lam = 1e-4, the local certificate settles (~8e-14 against
    ~1.5e-10 from lam alone); a corrupted eigvalsh only weakens it."""
    from _mpref import multinomial_prox

    rng = np.random.default_rng(0)
    f = mo.Multinomial(rng.normal(size=(40, 3)), rng.integers(0, 3, 40), n_classes=3)
    w = rng.normal(size=f.dim)
    _, honest = mo.prox(f, w, 1e-4, return_info=True)
    assert honest.error_bound < 1e-12
    true_eigvalsh = anp.linalg.eigvalsh
    monkeypatch.setattr(anp.linalg, "eigvalsh", lambda H: true_eigvalsh(H) * factor)
    theta, info = mo.prox(f, w, 1e-4, return_info=True)
    ref = multinomial_prox(host(f.X), host(f.y), host(f.weights), 3, 0.0, w, 1e-4, theta)
    assert error(theta, ref) <= info.error_bound
    assert info.error_bound >= honest.error_bound * (1 - 1e-9)
