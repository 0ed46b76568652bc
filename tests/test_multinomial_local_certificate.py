"""The local certificate of the Multinomial prox: its ingredients, and the bound at chosen points.

* ``hessian_lipschitz``: the third derivative of the log-sum-exp is the third cumulant of
  the class distribution (sympy), its ratio to ``||b|| ||a||^2`` never exceeds the shipped
  ``1/sqrt 2`` (random and optimised instances) and reaches ``2 sqrt 2 / (6 sqrt 3)``; the
  Hessian's difference quotient reaches that value on one sample, so a constant a third of
  the shipped one is rejected (a half is still valid: the constant is 2.6x the sharp one);
* ``_hess_error``: every eigenvalue ``eigvalsh`` computes for ``hess(theta)`` lies within
  ``err`` of the exact (50-digit mpmath) eigenvalue of the same index, in float64 and
  float32, on confident, underflowing and cancelling logits; the bound without the logits'
  rounding (a mutant) is exceeded on the cancelling instance;
* with ``mu = 0`` the exact Hessian has ``d`` eigenvalues ``mu`` at every theta (directions
  ``v (x) 1``): a full-space ``lambda_min`` could never beat ``lam + mu``, so Newton reads
  eigenvalue number ``d`` and adds the exact error on those directions (``_null_error``);
* the certificate at points moved from the 50-digit prox along a shift direction, the softest
  curvature and at random: true error <= local bound <= global bound, the local one within
  3x (or the condition number) of the true error, mutants (shift-subspace error dropped,
  eigenvalue index one too far) caught; in Newton the local bound is >= 100x below the
  global one at lam = 1e-4;
* bound >= true error (mpmath prox) for ``mu = 0``, ``lam`` 1e-4..1e2, separable and
  overlapping data, float64 and float32.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from _mpref import error, multinomial_prox
from _tol import host

import moreau as mo
import moreau._multinomial_cert as mc

SHARP = 2 * math.sqrt(2) / (6 * math.sqrt(3))  # sup of the ratio (two classes, numerically)


def _cumulant(z, a, b):
    """``E[(B - EB)(A - EA)^2]`` for K ~ softmax(z), in numpy."""
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    A, B = a - pi @ a, b - pi @ b
    return pi @ (B * A * A)


def test_third_derivative_of_lse_is_the_third_cumulant():
    C = 3
    z, a, b = (sp.symbols(f"{s}0:{C}", real=True) for s in "zab")
    t = sp.Symbol("t", real=True)
    s = sp.Symbol("s", real=True)
    lse = sp.log(sum(sp.exp(z[c] + t * b[c] + s * a[c]) for c in range(C)))
    d3 = sp.diff(lse, t, s, s).subs({t: 0, s: 0})
    e = [sp.exp(v) for v in z]
    pi = [v / sum(e) for v in e]
    Ea, Eb = sum(p * v for p, v in zip(pi, a, strict=True)), sum(p * v for p, v in zip(pi, b, strict=True))
    cum = sum(p * (bv - Eb) * (av - Ea) ** 2 for p, av, bv in zip(pi, a, b, strict=True))
    rng = np.random.default_rng(0)
    for _ in range(5):
        vals = {
            v: sp.Rational(int(k), 7) for v, k in zip(z + a + b, rng.integers(-20, 20, 3 * C), strict=True)
        }
        assert abs(sp.N((d3 - cum).subs(vals), 50)) < 1e-45
        assert abs(sp.N(d3.subs(vals), 50)) > 1e-6  # not a vacuous comparison


def test_lse_third_derivative_constant_holds_and_is_reached():
    from scipy.optimize import minimize

    rng = np.random.default_rng(1)
    best = 0.0
    for C in (2, 3, 5):

        def ratio(p, C=C):
            z, a, b = p[:C], p[C : 2 * C], p[2 * C :]
            return abs(_cumulant(z, a, b)) / (np.linalg.norm(b) * np.linalg.norm(a) ** 2)

        for _ in range(400):  # random instances, and the steps of the proof
            z, a, b = rng.normal(size=(3, C)) * rng.choice([0.3, 3.0, 30.0])
            pi = np.exp(z - z.max())
            pi /= pi.sum()
            M = np.max((a - pi @ a) ** 2)
            lhs = abs(_cumulant(z, a, b))
            assert lhs <= M / 2 * math.sqrt(pi @ (b - pi @ b) ** 2) * (1 + 1e-12)
            assert M <= 2 * (a @ a) * (1 + 1e-12)
            assert lhs <= mc.THIRD * np.linalg.norm(b) * (a @ a) * (1 + 1e-12)
        for _ in range(20):  # optimised: the sup
            r = minimize(
                lambda p: -ratio(p),
                rng.normal(size=3 * C) * 2,
                method="Nelder-Mead",
                options={"maxiter": 4000, "xatol": 1e-10, "fatol": 1e-13},
            )
            best = max(best, -r.fun)
    assert best <= mc.THIRD
    assert best == pytest.approx(SHARP, rel=1e-6)  # looser than the default: an optimiser's tolerance


def test_hessian_lipschitz_valid_and_a_third_of_it_is_rejected():
    rng = np.random.default_rng(2)
    for C in (2, 3, 4):
        X = rng.normal(size=(5, 2)) * 1.5
        f = mo.Multinomial(X, rng.integers(0, C, 5), n_classes=C, weights=rng.uniform(0.1, 1, 5))
        rho = float(f.hessian_lipschitz())
        p = f.weights / f.weights.sum()
        assert rho == pytest.approx(np.sum(p * np.linalg.norm(X, axis=1) ** 3) / math.sqrt(2), rel=1e-14)
        for _ in range(30):
            t1 = rng.normal(size=2 * C) * 2
            t2 = t1 + rng.normal(size=2 * C) * rng.choice([1e-3, 1.0])
            lhs = np.linalg.norm(f.hess(t1) - f.hess(t2), 2)
            assert lhs <= rho * np.linalg.norm(t1 - t2) * (1 + 1e-12)
    # one sample (||x|| = r), two classes, logit gap at the inflection of l'' moved along
    # (1, -1)/sqrt 2: the quotient is SHARP r^3, above a third of rho (the mutant rho / 3)
    r = 1.7
    g = mo.Multinomial([[r]], [0], n_classes=2)
    zs = math.log(2 + math.sqrt(3)) / r
    v = np.array([1.0, -1.0]) / math.sqrt(2)
    h = 1e-4
    t0 = np.array([zs / 2, -zs / 2])
    q = np.linalg.norm(g.hess(t0 + h * v) - g.hess(t0 - h * v), 2) / (2 * h)
    assert q == pytest.approx(SHARP * r**3, rel=1e-6)  # central quotient: O(h^2) truncation
    rho = float(g.hessian_lipschitz())
    assert rho / 3 < q <= rho


def _mp_hess(X, y, weights, C, mu, theta):
    """Exact Hessian of the represented data at the float theta (50 digits)."""
    X = np.asarray(X, np.float64)
    n, d = X.shape
    D = d * C
    x = [[mp.mpf(float(v)) for v in row] for row in X]
    wt = [mp.mpf(float(v)) for v in weights]
    p = [v / mp.fsum(wt) for v in wt]
    t = [mp.mpf(float(v)) for v in np.asarray(theta, np.float64)]
    H = mp.mpf(float(mu)) * mp.eye(D)
    for j in range(n):
        z = [mp.fsum(x[j][k] * t[k * C + c] for k in range(d)) for c in range(C)]
        m = max(z)
        e = [mp.exp(v - m) for v in z]
        tot = mp.fsum(e)
        pi = [v / tot for v in e]
        rest = [mp.fsum(e[:c] + e[c + 1 :]) / tot for c in range(C)]  # 1 - pi_c without cancellation
        for k in range(d):
            for c in range(C):
                for k2 in range(d):
                    for c2 in range(C):
                        S = pi[c] * rest[c] if c == c2 else -pi[c] * pi[c2]
                        H[k * C + c, k2 * C + c2] += p[j] * S * x[j][k] * x[j][k2]
    return H


def _eig_gap(f, theta):
    """(max_k |eigvalsh(fl(H))_k - lambda_k(H)|, ||fl(H) - H||_2 lower estimate, exact eigenvalues)."""
    Hm = _mp_hess(host(f.X), host(f.y), host(f.weights), f.n_classes, host(f.mu), theta)
    # mpmath's eigensolver stops on an absolute tolerance: scale to norm ~1 (exactly, by a power of 2)
    s = mp.mpf(2) ** -mp.floor(mp.log(max(mp.mnorm(Hm, 1), mp.mpf(10) ** -300), 2))
    ex = sorted(e / s for e in mp.eigsy(Hm * s, eigvals_only=True))
    got = np.linalg.eigvalsh(host(f.hess(theta)))
    return max(float(abs(mp.mpf(float(g)) - e)) for g, e in zip(got, ex, strict=True)), ex


CASES = {  # name: (X, y, C, theta scale)
    "random": (lambda rng: rng.normal(size=(4, 2)), 3, 2.0),
    "confident": (lambda rng: rng.normal(size=(4, 2)) * 10, 3, 5.0),
    "underflow": (lambda rng: rng.normal(size=(3, 2)) * 30, 4, 40.0),
    "wide": (lambda rng: rng.normal(size=(6, 3)), 5, 1.0),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_hess_error_bounds_every_eigenvalue(case, dtype, mu):
    make, C, scale = CASES[case]
    rng = np.random.default_rng(len(case) + int(10 * mu))
    X = make(rng).astype(dtype)
    f = mo.Multinomial(
        X, rng.integers(0, C, X.shape[0]), n_classes=C, mu=mu, weights=rng.uniform(0.1, 1, X.shape[0])
    )
    for _ in range(3):
        theta = (rng.normal(size=f.dim) * scale).astype(dtype)
        gap, ex = _eig_gap(f, theta)
        err = float(f._hess_error(theta))
        assert gap <= err, (gap, err)
        # useful (not a vacuous bound): a few hundred eps of the Hessian's size, times the
        # size of the logits (their rounding, ~eps ||x|| ||theta||, moves every pi)
        zmax = float(np.max(np.linalg.norm(X, axis=1))) * float(np.linalg.norm(theta))
        # plus the underflow floor (subnormal units per sum, scaled by the data)
        floor = 1e4 * float(np.finfo(dtype).smallest_normal) * (1 + float(np.sum(X.astype(float) ** 2)))
        assert err <= 300 * float(np.finfo(dtype).eps) * (1 + zmax) * (float(ex[-1]) + mu) + floor


def test_hess_error_without_the_logits_rounding_is_exceeded(monkeypatch):
    """Logits of size 1 from weights of size 1e8 (cancellation): the Hessian's error is set by
    the logits' rounding; the mutant that drops it (||theta|| read as 0) under-states it."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4, 2))
    f = mo.Multinomial(X, [0, 1, 2, 1], n_classes=3)
    x0 = X[0] / np.linalg.norm(X[0])
    W = np.outer([-x0[1], x0[0]], [1e8, -3e8, 2e8]) + rng.normal(size=(2, 3))
    theta = W.reshape(-1)
    gap, _ = _eig_gap(f, theta)
    assert gap <= float(f._hess_error(theta))
    monkeypatch.setattr(mc, "safe_norm", lambda v, xp: np.zeros(v.shape[:-1]))
    assert gap > float(f._hess_error(theta))  # the mutant is caught


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_softmax_hessian_is_mu_on_the_shift_directions(mu):
    """The finding: H (v (x) 1) = mu (v (x) 1) exactly at every theta, so lambda_min(hess f) = mu
    and only the (d+1)-th eigenvalue carries the loss's curvature; certified positive here."""
    rng = np.random.default_rng(6)
    d, C = 2, 3
    f = mo.Multinomial(rng.normal(size=(6, d)), [0, 1, 2, 0, 1, 2], n_classes=C, mu=mu)
    theta = rng.normal(size=d * C)
    Hm = _mp_hess(host(f.X), host(f.y), host(f.weights), C, mu, theta)
    for k in range(d):
        v = mp.matrix([1 if i // C == k else 0 for i in range(d * C)])
        assert mp.norm(Hm * v - mp.mpf(mu) * v) < mp.mpf(10) ** -45
    ex = sorted(mp.eigsy(Hm, eigvals_only=True))  # norm ~1: no scaling needed
    assert all(abs(e - mu) < 1e-40 for e in ex[:d])
    got = np.linalg.eigvalsh(f.hess(theta))
    err = float(f._hess_error(theta))
    assert got[d] - err > mu and got[0] - err <= mu  # the complement's curvature is certified


def _data(kind, dtype, rng):
    if kind == "separable":  # class c lives around the c-th direction: a margin
        y = np.array([0, 1, 2, 0, 1, 2])
        X = np.eye(3)[y][:, :2] * 3 + rng.normal(size=(6, 2)) * 0.1
    else:
        y = rng.integers(0, 3, 6)
        X = rng.normal(size=(6, 2))
    return mo.Multinomial(X.astype(dtype), y, n_classes=3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["separable", "overlapping"])
@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0, 1e2])
def test_global_certificate_mu0_is_an_upper_bound(lam, kind, dtype):
    rng = np.random.default_rng(7)
    f = _data(kind, dtype, rng)
    w = (rng.normal(size=f.dim)).astype(dtype)
    try:
        theta, info = mo.prox(f, w, lam, return_info=True)
        bound = info.error_bound
    except mo.ProxConvergenceError as e:  # the partial result is certified too
        theta, bound = e.theta, e.error_bound
    lam_d = float(np.asarray(lam, dtype=dtype))
    ref = multinomial_prox(
        host(f.X), host(f.y), host(f.weights), 3, 0.0, w, lam_d, np.asarray(theta, np.float64)
    )
    assert error(theta, ref) <= float(bound)


# -- the local certificate (Newton's hooks, evaluated at chosen points) ---------------------------


def _cert_at(f, w, lam, theta, *, ext=True, shift=0):
    """Newton's certificate for the prox of ``f`` at ``theta`` (theta-iterate representation):
    ``(local bound, global bound)``; ``ext=False`` / ``shift=1`` are mutants (the error on the
    shift subspace dropped; the eigenvalue one past the right one)."""
    from moreau._newton import _certificate, _null_error, _pieces
    from moreau._newton_batch import _h_and_grad, _View
    from moreau._newton_cert import _local_min_eig

    dt, d = f.dtype, f.dim
    eps = float(np.finfo(dt).eps)
    lam_a = np.array([lam], dt)
    S = {
        "lam": lam_a,
        "modulus": lam_a + np.asarray(f.strong_convexity(), dt).reshape(1),
        "hi": np.asarray(f._smoothness_bound(), dt).reshape(1),
        "disp": np.array([False]),
        "a": np.zeros((1, d), dt),
        "c": -np.asarray(w, dt)[None],
        "mu": np.asarray(f.strong_convexity(), dt).reshape(1),
    }
    view = _View(f, ())
    x = np.asarray(theta, dt)[None]
    _, g, S["E"], state = _h_and_grad(view, S, x)
    P = _pieces(np, S, x, g, eps, d)
    local = view.local(x, state)
    rho = local[1]
    if shift:  # the mutant reads the wrong eigenvalue (the model: eigvalsh minus both errors)
        lo = np.linalg.eigvalsh(view.hess(x, state))[..., f._null_dim + shift] - local[0] - local[2]
    else:  # what Newton does: the proven bound (moreau._newton_cert._local_min_eig)
        lo = _local_min_eig(np, f, view.hess(x, state), local, f._null_dim, eps)
    e = _null_error(np, f, S, x, eps) if ext else None
    return float(_certificate(np, S, P, (lo, rho), eps, e)[0][0]), float(
        _certificate(np, S, P, None, eps)[0][0]
    )


def _points(f, ref, rng):
    """theta* moved along a shift direction, the softest curvature off it, and at random."""
    d, C = f.n_features, f.n_classes
    star = np.array([float(v) for v in ref])
    par = np.kron(rng.normal(size=d), np.ones(C))
    _, V = np.linalg.eigh(f.hess(star))
    for name, v in (("shift", par), ("soft", V[:, d]), ("random", rng.normal(size=d * C))):
        for t in (1e-9, 1e-5):
            yield name, star + t * v / np.linalg.norm(v)


@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0])
@pytest.mark.parametrize("mu", [0.0, 0.05])
def test_local_certificate_is_an_upper_bound_and_local(lam, mu):
    rng = np.random.default_rng(8)
    f = mo.Multinomial(rng.normal(size=(6, 2)), rng.integers(0, 3, 6), n_classes=3, mu=mu)
    w = rng.normal(size=f.dim)
    ref = multinomial_prox(host(f.X), host(f.y), host(f.weights), 3, mu, w, lam, np.zeros(f.dim))
    ev = np.linalg.eigvalsh(f.hess(np.array([float(v) for v in ref])))
    kappa = (lam + ev[-1]) / (lam + ev[f.n_features])  # off the shift subspace
    for name, theta in _points(f, ref, rng):
        true = error(theta, ref)
        local, glob = _cert_at(f, w, lam, theta)
        assert true <= local <= glob, (name, true, local, glob)
        # local: within a small factor of the true error along the soft and shift directions
        # (within the condition number kappa of hess h off the shifts in general; the global
        # one is within (lam + ev[-1]) / (lam + mu))
        k = 1.0 if name != "random" else kappa
        assert local <= 3 * k * true + 1e3 * np.finfo(float).eps * np.linalg.norm(theta), (name, true, local)
        if name == "shift":  # the error on the shift subspace is the error there: its mutant is caught
            assert _cert_at(f, w, lam, theta, ext=False)[0] < true
        if name == "soft" and lam < 1:  # the curvature one eigenvalue too far: caught
            assert _cert_at(f, w, lam, theta, shift=1)[0] < true


def test_local_certificate_beats_the_global_one_in_newton(monkeypatch):
    """Overlapping data, mu = 0, lam = 1e-4: the returned bound is local (>= 100x below the
    global one Newton returns when the hook is switched off), and still >= the true error."""
    rng = np.random.default_rng(7)
    f = _data("overlapping", np.float64, rng)
    w = rng.normal(size=f.dim)
    theta, info = mo.prox(f, w, 1e-4, return_info=True)
    ref = multinomial_prox(host(f.X), host(f.y), host(f.weights), 3, 0.0, w, 1e-4, theta)
    assert error(theta, ref) <= info.error_bound
    monkeypatch.setattr(mo.Multinomial, "_local_curvature", lambda self, t, s: None)
    _, glob = mo.prox(f, w, 1e-4, return_info=True)
    assert info.error_bound * 100 < glob.error_bound


def test_null_norm_bounds_the_projection():
    rng = np.random.default_rng(9)
    for dt in (np.float64, np.float32):
        f = mo.Multinomial(np.ones((2, 3), dt), [0, 3], n_classes=4)
        for scale in (1e-30, 1.0, 1e20):
            v = (rng.normal(size=(5, 12)) * scale).astype(dt)
            v[0] = np.kron(rng.normal(size=3), np.ones(4)).astype(dt) * scale  # on the subspace
            v[1] = (v[1].reshape(3, 4) - v[1].reshape(3, 4).mean(-1, keepdims=True)).reshape(-1)  # ~off it
            got = f._null_norm(v)
            for k in range(5):
                V = [[mp.mpf(float(a)) for a in row] for row in v[k].reshape(3, 4)]
                exact = mp.sqrt(mp.fsum(mp.fsum(r) ** 2 for r in V) / 4)
                assert (
                    exact <= got[k] <= exact * (1 + 1e-3) + 4 * float(np.abs(v[k]).sum()) * np.finfo(dt).eps
                )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_projected_gradient_within_its_rounding_bound(dtype):
    """grad (projected off the shift directions) vs the 50-digit gradient, within _grad_rounding."""
    rng = np.random.default_rng(10)
    X = (rng.normal(size=(5, 2)) * 5).astype(dtype)
    f = mo.Multinomial(X, rng.integers(0, 3, 5), n_classes=3, weights=rng.uniform(0.1, 1, 5))
    p = [mp.mpf(float(v)) / mp.fsum(mp.mpf(float(u)) for u in f.weights) for v in f.weights]
    for scale in (0.1, 3.0, 30.0):
        theta = (rng.normal(size=6) * scale).astype(dtype)
        g = [mp.mpf(0)] * 6
        for j in range(5):
            z = [
                mp.fsum(mp.mpf(float(X[j, k])) * mp.mpf(float(theta[k * 3 + c])) for k in range(2))
                for c in range(3)
            ]
            e = [mp.exp(v - max(z)) for v in z]
            for c in range(3):
                r = (mp.fsum(e[:c] + e[c + 1 :]) * -1 if c == int(f.y[j]) else e[c]) / mp.fsum(e)
                for k in range(2):
                    g[k * 3 + c] += p[j] * mp.mpf(float(X[j, k])) * r
        dist = float(
            mp.sqrt(mp.fsum((mp.mpf(float(a)) - b) ** 2 for a, b in zip(f.grad(theta), g, strict=True)))
        )
        assert dist <= float(f._grad_rounding(theta))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", range(6))
def test_batched_newton_bound_is_an_upper_bound_where_local(seed, dtype):
    """A batch of 8 clients (compaction and per-entry candidates exercised), mu in {0, 1e-6},
    lam 1e-4..1e-1: every client's bound >= its true error (mpmath), the local route is taken."""
    rng = np.random.default_rng(200 + seed)
    m, n, d, C = 8, 5, 2, 3
    X = (rng.normal(size=(m, n, d)) * 10.0 ** rng.uniform(-0.5, 0.5, (m, 1, 1))).astype(dtype)
    y = rng.integers(0, C, (m, n))
    mu = [0.0, 1e-6][seed % 2]
    f = mo.Multinomial(X, y, n_classes=C, mu=mu)
    w = rng.normal(size=(m, d * C)).astype(dtype)
    lam = (10.0 ** rng.uniform(-4, -1, m)).astype(dtype)
    try:
        theta, info = mo.prox(f, w, lam, return_info=True)
        bound = info.error_bound
    except mo.ProxConvergenceError as e:
        theta, bound = e.theta, e.error_bound
    local = 0
    for i in range(m):
        fi = mo.Multinomial(X[i], y[i], n_classes=C, mu=mu)
        ref = multinomial_prox(
            host(fi.X),
            host(fi.y),
            host(fi.weights),
            C,
            mu,
            w[i],
            float(lam[i]),
            np.asarray(theta[i], np.float64),
        )
        assert error(theta[i], ref) <= bound[i], i
        local += bool(bound[i] < 0.5 * float(_cert_at(fi, w[i], float(lam[i]), theta[i])[1]))
    assert local >= 1  # not a test of the global route only
