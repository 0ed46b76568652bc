"""moreau.fl.fedfw_optimum on boxes whose Hessian is singular (PSD, not positive definite): the plain problem
(4.4) with clients projected off a common direction, and the penalised problem whose Hessian
blockdiag(A_i)/n + λ(I − 11ᵀ/n) ⊗ I is singular along the consensus direction where the mean Hessian is.

Before the proximal-point pass the box solver's active sets assumed a positive definite Hessian and returned
certified gaps up to 7.7e-3 (plain) and 4.8 (penalised) on such instances.  Independent references, written
here: an enumeration of the box's 3^d faces with least-squares face solves (plain problem, d <= 4), scipy's
L-BFGS-B from several starts at tight tolerance, and cvxpy's Clarabel where cvxpy is installed.

Tolerances: the certified gap at most 1e-10 of the problem's scale (||H|| w² + |c| w, w the box's half-width)
as the brief for these instances asks; values against a reference to 1e-9 of that scale (L-BFGS-B's own
accuracy on a flat valley); a reference value never below value − gap − 1e-12 scale (the certificate).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

import moreau as mo
from moreau.fl import fedfw_optimum
from moreau.fl._lmo import Box


def _clients(seed, T, m, d, tilt):
    """PSD clients projected off a common unit direction v; ``tilt``: the linear terms' component along v
    (0: F constant along v, a segment of minimisers; otherwise F linear along v, the optimum on a face)."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((T, m, d, d))
    A = M @ np.swapaxes(M, -1, -2) / d
    keep = np.array([0.0] + [1.0] * (d - 1))
    A[:, ::2] = A[:, ::2] * keep[:, None] * keep[None, :]  # a zero row and column: singular clients
    A = (A + np.swapaxes(A, -1, -2)) / 2
    v = rng.standard_normal((T, d))
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    P = np.eye(d) - v[:, :, None] * v[:, None, :]
    A = np.einsum("tij,tmjk,tkl->tmil", P, A, P)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    z = 1.5 * rng.standard_normal((T, m, d))
    b = np.einsum("tmij,tmj->tmi", A, z) + tilt * rng.standard_normal((T, m, 1)) * v[:, None, :]
    h = rng.uniform(0.5, 2.0, (T, d))
    return A, b, h


def _problem(A, b, lam):
    """The QP's Hessian and linear term (plain: the mean client; penalised: the stacked clients)."""
    T, m, d = b.shape
    if lam is None:
        return A.mean(axis=1), b.mean(axis=1)
    H = np.zeros((T, m * d, m * d))
    for i in range(m):
        H[:, i * d : (i + 1) * d, i * d : (i + 1) * d] = A[:, i] / m
    H += lam[:, None, None] * np.kron(np.eye(m) - 1.0 / m, np.eye(d))
    return H, b.reshape(T, m * d) / m


def _faces(H, c, h):
    """min over the box by its faces: each coordinate at -h, at +h or free; the free block by least squares,
    a candidate where the stationarity equations are consistent and the point lies in the box."""
    n, best = c.size, np.inf
    for pat in itertools.product((-1, 0, 1), repeat=n):
        pat = np.array(pat)
        free = pat == 0
        x = pat * h
        if free.any():
            r = c[free] - H[np.ix_(free, ~free)] @ x[~free]
            sol = np.linalg.lstsq(H[np.ix_(free, free)], r, rcond=1e-12)[0]
            if np.linalg.norm(H[np.ix_(free, free)] @ sol - r) > 1e-9 * (1 + np.linalg.norm(r)):
                continue  # inconsistent: the face holds no stationary point (F linear and decreasing on it)
            x[free] = sol
        if np.all(np.abs(x) <= h * (1 + 1e-12)):
            best = min(best, 0.5 * x @ H @ x - c @ x)
    return best


def _scipy(H, c, h, starts, rng):
    best = np.inf
    for x0 in [np.zeros_like(c)] + [rng.uniform(-h, h) for _ in range(starts)]:
        r = minimize(
            lambda x: (0.5 * x @ H @ x - c @ x, H @ x - c),
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(-h, h, strict=True)),
            options={"ftol": 1e-15, "gtol": 1e-13, "maxiter": 20000},
        )
        best = min(best, r.fun)
    return best


def _scale(H, c, h):
    return np.einsum("ti,tij,tj->t", h, np.abs(H), h) + np.sum(np.abs(c) * h, axis=-1)


@pytest.mark.parametrize("tilt", [0.0, 0.7])
@pytest.mark.parametrize("d", [3, 4])
def test_plain_singular_box_matches_the_face_enumeration(d, tilt):
    A, b, h = _clients(10 + d, 24, 4, d, tilt)
    H, c = _problem(A, b, None)
    assert np.all(np.linalg.eigvalsh(H)[:, 0] < 1e-12 * np.linalg.norm(H, axis=(1, 2)))  # singular
    tg = fedfw_optimum(mo.Quadratic(A, b), Box(-h, h))
    scale = _scale(H, c, h)
    assert np.all(tg.gap <= 1e-10 * scale)
    x = np.asarray(tg.x)
    assert np.all(np.abs(x) <= h)
    ref = np.array([_faces(H[t], c[t], h[t]) for t in range(len(c))])
    assert np.all(np.abs(tg.value - ref) <= 1e-10 * scale)
    assert np.all(ref >= tg.value - tg.gap - 1e-12 * scale)


@pytest.mark.parametrize("tilt", [0.0, 0.7])
def test_penalised_singular_box_matches_lbfgsb(tilt):
    A, b, h = _clients(21, 6, 3, 3, tilt)
    lam = np.geomspace(0.05, 20.0, 6)
    H, c = _problem(A, b, lam)
    assert np.all(np.linalg.eigvalsh(H)[:, 0] < 1e-12 * np.linalg.norm(H, axis=(1, 2)))  # singular
    tg = fedfw_optimum(mo.Quadratic(A, b), Box(-h, h), lam=lam)
    hh = np.tile(h, (1, 3))
    scale = _scale(H, c, hh)
    assert np.all(tg.gap <= 1e-10 * scale)
    rng = np.random.default_rng(0)
    ref = np.array([_scipy(H[t], c[t], hh[t], 4, rng) for t in range(len(c))])
    assert np.all(tg.value <= ref + 1e-9 * scale)  # never worse than the reference
    assert np.all(ref >= tg.value - tg.gap - 1e-12 * scale)  # the certificate is never violated


def test_singular_boxes_match_clarabel():
    cp = pytest.importorskip("cvxpy")
    A, b, h = _clients(5, 4, 3, 3, 0.7)
    lam = np.array([0.1, 1.0, 3.0, 10.0])
    for lv in (None, lam):
        H, c = _problem(A, b, lv)
        hh = h if lv is None else np.tile(h, (1, 3))
        tg = fedfw_optimum(mo.Quadratic(A, b), Box(-h, h), **({} if lv is None else {"lam": lv}))
        for t in range(len(c)):
            x = cp.Variable(c.shape[1])
            w, V = np.linalg.eigh(H[t])
            R = np.sqrt(np.maximum(w, 0))[:, None] * V.T  # H = RᵀR (PSD)
            prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(R @ x) - c[t] @ x), [cp.abs(x) <= hh[t]])
            prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
            scale = _scale(H[t : t + 1], c[t : t + 1], hh[t : t + 1])[0]
            assert tg.value[t] <= prob.value + 1e-8 * scale
            assert prob.value >= tg.value[t] - tg.gap[t] - 1e-8 * scale
