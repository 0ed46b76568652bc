"""fedprox_optimum's certificate is a theorem about the returned floats (issue 8).

``FedProxInfo.error_bound >= ||w_g - w~_g||`` and ``local_error_bound >= ||w_i - w~_i||`` for
the returned floating-point models, against 50-digit mpmath references computed from the data
*as represented* (each float converts to mpmath exactly):

* quadratics (and least squares, whose stored ``A``, ``b`` define the problem): the closed form
  :math:`w = [\\sum_i p_i(\\lambda I - \\lambda^2 M_i)]^{-1}\\sum_i p_i\\lambda M_i b_i`,
  :math:`M_i = (A_i + \\lambda I)^{-1}`, :math:`w_i = M_i(b_i + \\lambda w)`, in 50 digits;
* logistic: Newton in 50 digits on the joint stationarity system in
  :math:`z = (w_g, w_1..w_m)`: :math:`w_g = \\sum_i p_i w_i`,
  :math:`\\nabla f_i(w_i) + \\lambda(w_i - w_g) = 0` (the FedProx problem's optimality conditions,
  written from the raw samples, no moreau code).

Regimes: well-conditioned, badly scaled data (eigenvalues 1e-6..1e6, features ~1e3), float32,
singular clients, lam from 1e-4 to 1e4, Phi barely strongly convex (lam near where it stops
being so, through a nonconvex client) and a nonconvex client near its prox-existence threshold.
There the call either returns a bound that holds or raises a clear ValueError; both occur.
Mutants (the check can fail): the previous certificate (the computed modulus of Phi, no
rounding terms) under-states the error on an instance found by a seeded search below; the
bound without the proxes' own errors under-states it as well.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from _mpref import _mat, _newton, _vec

import moreau as mo
from moreau.fl import fedprox_optimum
from moreau.fl._newton import envelope_newton

mp.mp.dps = 50


# --- 50-digit references ---------------------------------------------------------------------


def _p(wts):
    w = [mp.mpf(float(v)) for v in np.asarray(wts).ravel()]
    s = mp.fsum(w)
    return [v / s for v in w]


def mp_quadratic(A, b, wts, lam):
    """(w_g, [w_i], smallest eigenvalue of sum_i p_i H_i) in 50 digits."""
    m, d = np.asarray(b).shape
    p, lam, eye = _p(wts), mp.mpf(float(lam)), mp.eye(d)
    Ms = [mp.inverse(_mat(A[i]) + lam * eye) for i in range(m)]
    H, r = mp.zeros(d, d), mp.zeros(d, 1)
    for i in range(m):  # the reference's own sum over clients
        H += p[i] * (lam * eye - lam**2 * Ms[i])
        r += p[i] * lam * (Ms[i] * _vec(b[i]))
    w = mp.lu_solve(H, r)
    mu = min(mp.eigsy(H, eigvals_only=True))
    return w, [Ms[i] * (_vec(b[i]) + lam * w) for i in range(m)], mu


def mp_logistic(X, y, mask, mu, wts, lam, start):
    """(w_g, [w_i]) in 50 digits: Newton on the joint stationarity system, from the float answer."""
    X = np.asarray(X, dtype=np.float64)
    m, n, d = X.shape
    p, lam, mu = _p(wts), mp.mpf(float(lam)), mp.mpf(float(mu))
    Z = [
        [[mp.mpf(float(y[i, j])) * mp.mpf(float(X[i, j, k])) for k in range(d)] for j in range(n)]
        for i in range(m)
    ]
    q = [_p(mask[i]) for i in range(m)]
    N = (m + 1) * d

    def gh(z):
        g, H = mp.zeros(N, 1), mp.zeros(N, N)
        for k in range(d):  # w_g - sum_i p_i w_i = 0
            g[k] = z[k] - mp.fsum(p[i] * z[(i + 1) * d + k] for i in range(m))
            H[k, k] = 1
            for i in range(m):
                H[k, (i + 1) * d + k] = -p[i]
        for i in range(m):  # grad f_i(w_i) + lam (w_i - w_g) = 0, from the raw samples
            o = (i + 1) * d
            for k in range(d):
                g[o + k] = (mu + lam) * z[o + k] - lam * z[k]
                H[o + k, o + k], H[o + k, k] = mu + lam, -lam
            for j in range(n):
                if q[i][j] == 0:
                    continue
                sn = 1 / (1 + mp.exp(mp.fsum(Z[i][j][k] * z[o + k] for k in range(d))))
                for k in range(d):
                    g[o + k] -= q[i][j] * sn * Z[i][j][k]
                    for k2 in range(d):
                        H[o + k, o + k2] += q[i][j] * sn * (1 - sn) * Z[i][j][k] * Z[i][j][k2]
        return g, H

    z = _newton(gh, np.concatenate([np.ravel(a) for a in start]))
    return z[:d], [z[(i + 1) * d : (i + 2) * d] for i in range(m)]


def dist(x, ref):
    return float(mp.norm(_vec(x) - ref))


def check(wg, wl, info, ref_g, ref_l):
    """bound >= true error for the global and every personal model; returns the global ratio."""
    err = dist(wg, ref_g)
    assert err <= info.error_bound, (err, info.error_bound)
    for i, r in enumerate(ref_l):
        e = dist(wl[i], r)
        assert e <= info.local_error_bound[i], (i, e, info.local_error_bound[i])
    return err / info.error_bound


# --- quadratics ------------------------------------------------------------------------------


def _spectral(rng, m, d, log_lo, log_hi, neg=0.0):
    Q = np.linalg.qr(rng.standard_normal((m, d, d)))[0]
    a = np.exp(rng.uniform(log_lo, log_hi, (m, d)))
    a = np.where(rng.random((m, d)) < neg, -a, a)
    a[:, 0] = np.abs(a[:, 0])
    return Q @ (a[..., None] * np.swapaxes(Q, -1, -2))


QUADRATIC_REGIMES = {
    # (log-eigenvalue range, log10 |b| range, log10 lam range, dtype, fraction of negative eigenvalues)
    "well-conditioned": ((-1, 1), (0, 0), (-1, 1), np.float64, 0.0),
    "badly scaled": ((-14, 14), (-3, 3), (-4, 4), np.float64, 0.0),
    "tiny lam": ((-2, 2), (0, 1), (-4, -4), np.float64, 0.0),
    "huge lam": ((-2, 2), (0, 1), (4, 4), np.float64, 0.0),
    "indefinite clients": ((-3, 3), (0, 1), (1.5, 3), np.float64, 0.3),
    "float32": ((-4, 4), (-1, 1), (-2, 2), np.float32, 0.0),
}


@pytest.mark.parametrize("regime", list(QUADRATIC_REGIMES))
def test_quadratic_bound_covers_the_true_error(regime):
    (lo, hi), (blo, bhi), (llo, lhi), dt, neg = QUADRATIC_REGIMES[regime]
    returned = 0
    for seed in range(8):  # a few seeded instances per regime
        rng = np.random.default_rng(seed)
        m, d = 3, 3
        A = _spectral(rng, m, d, lo, hi, neg).astype(dt)
        b = (rng.standard_normal((m, d)) * 10 ** rng.uniform(blo, bhi)).astype(dt)
        wts = rng.uniform(0.1, 1.0, m).astype(dt)  # unnormalised: p_i = wts_i / sum exactly
        lam = dt(10 ** rng.uniform(llo, lhi))
        f = mo.Quadratic(A, b)
        try:
            wg, wl, info = fedprox_optimum(f, lam, wts, return_info=True)
        except ValueError as exc:  # only the documented refusals
            assert "strongly convex" in str(exc) or "nonconvex" in str(exc), str(exc)
            continue
        returned += 1
        ref_g, ref_l, mu = mp_quadratic(np.asarray(f.A), np.asarray(f.b), wts, lam)
        check(wg, wl, info, ref_g, ref_l)
        assert info.mu <= mu  # the modulus is a rigorous lower bound
    assert returned >= 4  # the regime is exercised, not refused wholesale


def test_quadratic_singular_clients_least_squares():
    """n_i < d: every A_i singular (the per-client modulus is 0), Phi strongly convex."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((4, 2, 3)) * 10 ** rng.uniform(-2, 2)
        f = mo.LeastSquares(X, rng.standard_normal((4, 2)), mu=0.0)
        wg, wl, info = fedprox_optimum(f, 0.7, return_info=True)
        ref_g, ref_l, mu = mp_quadratic(np.asarray(f.A), np.asarray(f.b), np.ones(4), 0.7)
        check(wg, wl, info, ref_g, ref_l)
        assert 0 < info.mu <= mu


def _near_flat(seed, log_target):
    """Two clients sharing eigenvectors: client 1 has a = -0.5 (envelope curvature -1 at lam = 1),
    client 2 the curvature that makes Phi's modulus (1/3)(-1) + (2/3) c = target."""
    rng = np.random.default_rng(seed)
    d = 3
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    target = 10.0 ** rng.uniform(*log_target)
    c2 = (target + 1 / 3) * 1.5
    big = 10 ** rng.uniform(0, 6)
    a = np.array([[-0.5, big, 2.0], [c2 / (1 - c2), 0.7 * big, 3.0]])
    A = Q @ (a[..., None] * Q.T)
    return mo.Quadratic(A, rng.standard_normal((2, d))), np.array([1.0, 2.0])


def test_phi_barely_strongly_convex_is_certified_or_refused():
    """lam = 1 where Phi's modulus is 1e-16..1e-8: a bound that holds, or a clear ValueError."""
    outcomes = set()
    for seed in range(24):
        f, wts = _near_flat(seed, (-16, -8))
        try:
            wg, wl, info = fedprox_optimum(f, 1.0, wts, return_info=True)
        except ValueError as exc:
            assert "strongly convex" in str(exc), str(exc)
            outcomes.add("refused")
            continue
        outcomes.add("certified")
        ref_g, ref_l, mu = mp_quadratic(np.asarray(f.A), np.asarray(f.b), wts, 1.0)
        check(wg, wl, info, ref_g, ref_l)
        assert info.mu <= mu
    assert outcomes == {"certified", "refused"}


def test_nonconvex_client_near_its_prox_threshold():
    """Client 0 has a_1 = -1 and lam = 1 + 10^-k (its envelope curvature -1e k): Phi stays strongly
    convex only because its weight is tiny; the bound holds or the call refuses clearly."""
    outcomes = set()
    for k in (2, 6, 10, 12, 13, 14, 15):
        rng = np.random.default_rng(k)
        A = _spectral(rng, 3, 3, -1, 1)
        a0 = np.array([-1.0, 0.5, 2.0])
        Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        A[0] = Q @ (a0[:, None] * Q.T)
        wts = np.array([10.0 ** -(k + 2), 1.0, 1.0])
        lam = 1 + 10.0**-k
        f = mo.Quadratic(A, rng.standard_normal((3, 3)))
        try:
            wg, wl, info = fedprox_optimum(f, lam, wts, return_info=True)
        except ValueError as exc:
            assert "nonconvex" in str(exc) or "strongly convex" in str(exc), str(exc)
            outcomes.add("refused")
            continue
        outcomes.add("certified")
        ref_g, ref_l, mu = mp_quadratic(np.asarray(f.A), np.asarray(f.b), wts, lam)
        check(wg, wl, info, ref_g, ref_l)
    assert outcomes == {"certified", "refused"}


# --- logistic ----------------------------------------------------------------------------------

LOGISTIC = [  # (seed, feature scale, ridge mu, lam, dtype)
    (0, 1.0, 0.1, 1.0, np.float64),
    (1, 1e3, 1e-4, 1e-3, np.float64),  # large features, small ridge and lam
    (2, 30.0, 1e-6, 70.0, np.float64),
    (3, 0.3, 2e-4, 1e3, np.float64),
    (4, 1.0, 0.1, 1e-4, np.float64),
    (5, 1.0, 0.05, 0.5, np.float32),
    (6, 300.0, 1e-3, 2.0, np.float32),  # float32, large features
    (7, 0.2, 1e-5, 900.0, np.float32),
]


@pytest.mark.parametrize("seed, scale, mu, lam, dt", LOGISTIC, ids=[f"case{c[0]}" for c in LOGISTIC])
def test_logistic_bound_covers_the_true_error(seed, scale, mu, lam, dt):
    rng = np.random.default_rng(seed)
    m, n, d = 3, 6, 2
    X = (rng.standard_normal((m, n, d)) * scale).astype(dt)
    y = rng.choice([-1.0, 1.0], (m, n)).astype(dt)
    mask = (np.arange(n) < rng.integers(2, n + 1, m)[:, None]).astype(dt)
    wts = rng.uniform(0.1, 1.0, m).astype(dt)
    f = mo.Logistic(X, y, mu=dt(mu), weights=mask)
    wg, wl, info = fedprox_optimum(f, lam, wts, return_info=True)
    ref_g, ref_l = mp_logistic(X, y, mask, dt(mu), wts, dt(lam), (wg, wl))
    check(wg, wl, info, ref_g, ref_l)
    assert np.isfinite(info.error_bound)


# --- mutants and errors ------------------------------------------------------------------------


def _old_bound(f, wg, wl, wts, lam):
    """The previous certificate: (||fl(grad Phi)|| + lam sum p e) / (computed modulus)."""
    p = wts / wts.sum()
    _, pinfo = f.prox(np.broadcast_to(wg, wl.shape), lam, return_info=True)
    a, V = (np.asarray(x) for x in f._eigh)
    H = np.einsum("m,mij,mj,mkj->ik", p, V, lam * a / (lam + a), V)
    mu_hat = np.linalg.eigvalsh((H + H.T) / 2)[0]
    g = lam * np.sum(p[:, None] * (wg - wl), axis=0)
    return (np.linalg.norm(g) + lam * np.sum(p * pinfo.error_bound)) / mu_hat


def test_mutants_are_rejected():
    """The previous certificate under-states the error on a barely strongly convex Phi (the new
    one refuses there); dropping the proxes' errors under-states it on an ordinary instance.

    Neither search hinges on one instance's last bits (issue 19: the earlier 30-seed search found
    one instance under OpenBLAS's Haswell kernel and none under SkylakeX or Sandybridge).  Both
    mutants fail on a *fraction* of a family, the same on every kernel: the old bound divides by
    the computed modulus of Phi, which is rounding noise of order eps when the true modulus is
    1e-17..1e-15, and overstates it on roughly one instance in ten; the bound without e_i
    under-states wherever the computed residual happens to be small, about one in fifteen.  Each
    search asks for at least one rejection among 100+ instances (measured under SkylakeX, Haswell
    and Sandybridge: 9-11 and 8-9), and .ci/run repeats this file under every kernel the CPU has.
    """
    caught = []
    for seed in range(100):
        f, wts = _near_flat(seed, (-17, -15))
        try:
            wg = fedprox_optimum(f, 1.0, wts)[0]  # no certificate asked: the old code path still solves
        except ValueError:  # the computed modulus itself is <= 0
            continue
        wl = np.asarray(f.prox(np.broadcast_to(wg, (2, 3)), 1.0))
        ref_g, _, _ = mp_quadratic(np.asarray(f.A), np.asarray(f.b), wts, 1.0)
        if dist(wg, ref_g) > _old_bound(f, wg, wl, wts, 1.0):
            caught.append(seed)
            with pytest.raises(ValueError, match="cannot certify"):
                fedprox_optimum(f, 1.0, wts, return_info=True)
    assert caught
    # dropping e_i and the rounding terms: the computed residual alone is tiny (or 0.0) at some
    # converged points though the true error is not; the full bound holds on every instance
    under = 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        X, y = rng.standard_normal((3, 6, 2)), rng.choice([-1.0, 1.0], (3, 6))
        f = mo.Logistic(X, y, mu=0.01)
        wg, wl, info = fedprox_optimum(f, 1.0, return_info=True)
        ref_g, _ = mp_logistic(X, y, np.ones((3, 6)), 0.01, np.ones(3), 1.0, (wg, wl))
        assert dist(wg, ref_g) <= info.error_bound
        under += dist(wg, ref_g) > np.linalg.norm(np.mean(wg - wl, axis=0)) / info.mu
    assert under >= 1


def test_uncertifiable_tolerance_stays_a_clear_error():
    X = np.random.default_rng(3).standard_normal((1, 3, 6, 2))
    f = mo.Logistic(X, np.sign(X[..., 0]) + (X[..., 0] == 0), mu=1e-3)
    lam = np.array([1.0])
    mu_g = lam * 1e-3 / (lam + 1e-3) * (1 - 1e-12)
    with pytest.raises(RuntimeError, match="did not certify its tolerance in 1 iterations"):
        envelope_newton(f, np.full((1, 3), 1 / 3), lam, mu_g, rtol=1e-30, max_iter=1)


@pytest.mark.parametrize("factor", [1.5, 10.0])
def test_quadratic_modulus_survives_a_wrong_eigensolver(monkeypatch, factor):
    """The modulus of Phi no longer trusts eigvalsh's accuracy: with eigvalsh of the aggregated
    Hessian returning factor x the truth, info.mu stays below the true modulus (the Cholesky proof
    falls back) and the bounds still hold."""
    import array_api_compat.numpy as anp

    rng = np.random.default_rng(3)
    A = _spectral(rng, 3, 3, -1, 1)
    b, wts, lam = rng.standard_normal((3, 3)), np.array([0.2, 0.3, 0.5]), 0.7
    f = mo.Quadratic(A, b)
    # the property computes and caches the clients' own decomposition, honestly (checked a posteriori anyway)
    _ = f.eigenvalues
    true_eigvalsh = anp.linalg.eigvalsh
    monkeypatch.setattr(anp.linalg, "eigvalsh", lambda H: true_eigvalsh(H) * factor)
    wg, wl, info = fedprox_optimum(f, lam, wts, return_info=True)
    ref_g, ref_l, mu = mp_quadratic(np.asarray(f.A), np.asarray(f.b), wts, lam)
    assert info.mu <= mu
    check(wg, wl, info, ref_g, ref_l)
