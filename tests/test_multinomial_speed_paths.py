"""Newton's fast evaluation of the softmax loss gives the plain path's answers, certified.

* ``Multinomial._eval`` (class-major, one pass of the logits) against the plain ``value``,
  ``grad``, ``_grad_rounding`` and against the 50-digit gradient: its rounding bound holds;
* ``_hess_at`` (C(C+1)/2 blocked GEMMs, the transposed fill) from ``_eval``'s state: every
  eigenvalue within ``_hess_error(theta, state=...)`` of the exact one (50 digits), as the
  plain ``hess`` is; a mutant that forms ``pi (1 - pi)`` by cancellation, and one that leaves
  the mirrored blocks out, are caught;
* the float32-formed direction Hessian within its stated bound of the float64 product and
  really float32; the gate ``_low_hessian_ok`` is the stated rate bound, at its boundary;
* the prox through the fast hooks (float32 direction on, off, forced) returns the plain
  path's theta (a few ulps at the default level, within both bounds with ``tol``) and its
  bound holds against the 50-digit reference, on benchmark-like, confident (pi ~ 1),
  small-lam, mu > 0, shared-X and float32 data; the float32 direction is taken;
* the evaluation in blocks of clients and the partial Hessian (``_part_share``) give the bits
  of one block / the whole batch; the fast path runs on array-api-strict.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from _mpref import error, multinomial_prox
from _tol import host

import moreau as mo
import moreau._multinomial as mm
from moreau._multinomial import Multinomial
from moreau._objective import Objective

U32 = 2.0**-24
_ORIG_OK = Multinomial._low_hessian_ok


def _data(name, rng):
    """(objective, w, lam, prox kwargs)."""
    if name in ("bench", "bench-tol", "small-lam"):  # the benchmark's model, fewer clients
        m, n, d, C = 6, 24, 3, 4
        X = rng.normal(size=(m, n, d))
        P = np.exp(X @ rng.normal(size=(m, d, C)))
        y = (np.cumsum(P / P.sum(-1, keepdims=True), -1) < rng.random((m, n, 1))).sum(-1).clip(0, C - 1)
        lam = 1e-4 if name == "small-lam" else 1.0
        return (
            Multinomial(X, y, n_classes=C),
            rng.normal(size=(m, d * C)),
            lam,
            {"tol": 1e-8} if name == "bench-tol" else {},
        )
    if name == "confident":  # logits of size 50-700: pi ~ 1, 1 - pi underflows on some samples
        m, n, d, C = 4, 10, 2, 3
        X = rng.normal(size=(m, n, d)) * 40
        y = rng.integers(0, C, (m, n))
        return Multinomial(X, y, n_classes=C), rng.normal(size=(m, d * C)) * 10, 1e-2, {}
    if name == "mu":
        X = rng.normal(size=(5, 12, 3))
        return (
            Multinomial(X, rng.integers(0, 3, (5, 12)), n_classes=3, mu=0.5),
            rng.normal(size=(5, 9)),
            1e-2,
            {},
        )
    if name == "shared-X":  # one X for every client, labels and weights per client
        X = rng.normal(size=(12, 3))
        return (
            Multinomial(X, rng.integers(0, 3, (5, 12)), n_classes=3, weights=rng.random((5, 12)) + 0.1),
            rng.normal(size=(5, 9)),
            0.5,
            {},
        )
    X = (rng.normal(size=(4, 10, 2)) * 3).astype(np.float32)  # float32: no float32 direction
    return (
        Multinomial(X, rng.integers(0, 3, (4, 10)), n_classes=3),
        rng.normal(size=(4, 6)).astype(np.float32),
        np.float32(1e-2),
        {},
    )


REGIMES = ["bench", "bench-tol", "small-lam", "confident", "mu", "shared-X", "float32"]


def _mp_hess(X, y, p, C, mu, theta):
    """Gradient and Hessian of the weighted softmax loss at theta, 50 digits (theta[k C + c] = W[k, c])."""
    n, d = X.shape
    D = d * C
    t = [mp.mpf(float(v)) for v in theta]
    g = [mp.mpf(float(mu)) * v for v in t]
    H = mp.mpf(float(mu)) * mp.eye(D)
    for j in range(n):
        x = [mp.mpf(float(v)) for v in X[j]]
        z = [mp.fsum(x[k] * t[k * C + c] for k in range(d)) for c in range(C)]
        mz = max(z)
        e = [mp.exp(v - mz) for v in z]
        s = mp.fsum(e)
        pi = [v / s for v in e]
        rest = [mp.fsum(e[c2] for c2 in range(C) if c2 != c) / s for c in range(C)]
        pj = mp.mpf(float(p[j]))
        for k in range(d):
            for c in range(C):
                g[k * C + c] += pj * x[k] * (pi[c] if c != int(y[j]) else -rest[c])
                for k2 in range(d):
                    for c2 in range(C):
                        S = pi[c] * rest[c] if c == c2 else -pi[c] * pi[c2]
                        H[k * C + c, k2 * C + c2] += pj * S * x[k] * x[k2]
    return g, H


def _client(f, i):
    X = np.broadcast_to(host(f.X), f.batch_shape + tuple(f.X.shape[-2:]))[i]
    y = np.broadcast_to(host(f.y), f.batch_shape + (f.X.shape[-2],))[i]
    p = np.broadcast_to(host(f._p), f.batch_shape + (f.X.shape[-2],))[i]
    mu = float(np.broadcast_to(host(f.mu), f.batch_shape)[i])
    return X, y, p, mu


@pytest.mark.parametrize("regime", ["bench", "confident", "mu", "shared-X", "float32"])
def test_eval_is_the_plain_evaluation_and_its_bounds_hold(regime):
    rng = np.random.default_rng(REGIMES.index(regime))
    f, w, _, _ = _data(regime, rng)
    eps = float(np.finfo(f.dtype).eps)
    theta = (w * 0.7 + rng.normal(size=w.shape).astype(w.dtype) * 0.3).astype(f.dtype)
    v, g, E, st = (host(a) for a in f._eval(theta))
    assert g.dtype == f.dtype and st.shape == f.batch_shape + (2 * f.n_classes + 1, f.X.shape[-2])
    v0, E0 = host(f.value(theta)), host(f._grad_rounding(theta))
    # the same formula up to the logits' rounding (each z within gamma_d ||x|| ||theta||)
    R = np.max(np.linalg.norm(np.broadcast_to(host(f.X), f.batch_shape + tuple(f.X.shape[-2:])), axis=-1), -1)
    zs = R * np.linalg.norm(theta.astype(np.float64), axis=-1)
    assert np.all(np.abs(v - v0) <= 8 * (f.n_features + f.n_classes + 4) * eps * (np.abs(v0) + zs + 1))
    # the rounding bounds differ only in the residual norm's own rounding
    np.testing.assert_allclose(E, E0, rtol=16 * eps)
    Hs, herrs, H0 = host(f._hess_at(theta, st)), host(f._hess_error(theta, state=st)), host(f.hess(theta))
    for i in range(f.batch_shape[0]):
        X, y, p, mu = _client(f, i)
        ge, He = _mp_hess(X, y, p, f.n_classes, mu, theta[i])
        err = float(mp.sqrt(mp.fsum((mp.mpf(float(a)) - b) ** 2 for a, b in zip(g[i], ge, strict=True))))
        assert err <= E[i], (i, err, E[i])  # the certified rounding bound of the fast gradient
        assert err > 0 or regime == "float32"  # the gradient is rounded: not a vacuous comparison
        # the Hessian from the state: each eigenvalue within _hess_error(state) of the exact one
        H, herr = Hs[i], float(herrs[i])
        ex = sorted(mp.eigsy(He, eigvals_only=True))
        got = np.linalg.eigvalsh(H.astype(np.float64) if f.dtype == np.float64 else H)
        gap = max(abs(float(a) - float(b)) for a, b in zip(got, ex, strict=True))
        assert gap <= herr, (i, gap, herr)
        assert np.max(np.abs(H - H0[i])) <= 2 * herr  # both within their bound


def _confident_point():
    """A confident client: every sample near its class's centre (three directions 120 degrees
    apart), W = 14 x the centres, so pi_y ~ 1 - 1e-9: the Hessian's entries are ~1e-9 and
    pi (1 - pi) formed as a difference loses ~7 digits of them."""
    rng = np.random.default_rng(3)
    ang = np.array([0.0, 2 * np.pi / 3, 4 * np.pi / 3])
    centres = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    y = np.arange(8) % 3
    f = Multinomial((centres[y] + rng.normal(size=(8, 2)) * 0.05)[None], y[None], n_classes=3)
    return f, (14 * centres.T).reshape(1, -1) + rng.normal(size=(1, 6)) * 1e-3


def _gap(f, theta):
    st = f._eval(theta)[3]
    X, y, p, mu = _client(f, 0)
    _, He = _mp_hess(X, y, p, f.n_classes, mu, theta[0])
    ex = sorted(mp.eigsy(He, eigvals_only=True))
    got = np.linalg.eigvalsh(host(f._hess_at(theta, st))[0])
    return max(abs(float(a) - float(b)) for a, b in zip(got, ex, strict=True)), float(
        host(f._hess_error(theta, state=st))[0]
    )


@pytest.mark.parametrize("mutant", ["cancellation", "no-mirror"])
def test_hessian_mutants_are_caught(monkeypatch, mutant):
    f, theta = _confident_point()
    gap, herr = _gap(f, theta)
    assert gap <= herr
    orig = mm.hessian_blocks
    if mutant == "cancellation":  # 1 - pi as a difference: the analysis no longer covers it
        monkeypatch.setattr(mm, "hessian_blocks", lambda xp, X, P, Q, *a: orig(xp, X, P, 1 - P, *a))
    else:  # block (c, a) not filled from block (a, c)

        def no_mirror(xp, X, P, Q, p, mu, d, C, low=False):
            H = np.reshape(orig(xp, X, P, Q, p, mu, d, C, low), (-1, d, C, d, C)).copy()
            for a in range(C):
                for c in range(a):
                    H[:, :, a, :, c] = 0.0
            return np.reshape(H, (-1, d * C, d * C))

        monkeypatch.setattr(mm, "hessian_blocks", no_mirror)
    gap, herr = _gap(f, theta)
    assert gap > herr, (gap, herr)


@pytest.mark.parametrize("shared", [False, True])
def test_low_hessian_within_its_bound(shared):
    """|H32 - H| <= (n + 4) u32 sum_j p_j || |S_j| || ||x_j||^2 (spectral norm, through
    Frobenius), H the exact product of the same weights (long double); and it is float32."""
    rng = np.random.default_rng(9)
    n, d, C = 30, 3, 4
    X = rng.normal(size=(n, d) if shared else (5, n, d)) * 10.0 ** rng.uniform(
        -2, 2, (1, 1) if shared else (5, 1, 1)
    )
    f = Multinomial(X, rng.integers(0, C, (5, n)), n_classes=C, mu=0.3)
    theta = rng.normal(size=(5, d * C)) * 0.1
    st = host(f._eval(theta)[3])
    H = host(f._hess_at(theta, st, True))
    P, Q = st[:, :C].astype(np.longdouble), st[:, C : 2 * C].astype(np.longdouble)
    S = np.where(
        np.eye(C, dtype=bool)[None, :, :, None], (P * Q)[:, :, None, :], -P[:, :, None, :] * P[:, None, :, :]
    )
    Xb = np.broadcast_to(X, (5, n, d)).astype(np.longdouble)
    pl = host(f._p).astype(np.longdouble)
    ref = np.einsum("mnk,mn,macn,mnl->mkalc", Xb, np.broadcast_to(pl, (5, n)), S, Xb)
    ref = ref.reshape(5, d * C, d * C) + 0.3 * np.eye(d * C)
    Sabs = np.abs(S).sum(axis=2).max(axis=1).astype(np.float64)  # || |S_j| || <= max row sum
    scale = np.einsum(
        "mn,mn,mn->m",
        np.broadcast_to(host(f._p), (5, n)),
        Sabs,
        np.broadcast_to(np.sum(np.asarray(X) ** 2, -1), (5, n)),
    )
    err = np.linalg.norm((H - ref).astype(np.float64), axis=(-2, -1))
    assert H.dtype == np.float64
    assert np.all(err <= (n + 4) * U32 * scale), (err / scale).max()
    assert np.all(err >= 1e-3 * U32 * scale)  # really formed in float32


def test_low_hessian_gate_is_the_rate_bound():
    """Allowed exactly where (n + 4) u32 hi + 2 n C 2^-149 (1 + R)^2 <= 2^-8 (lam + mu), never
    where a row norm exceeds 2^50, never on float32 data."""
    rng = np.random.default_rng(4)
    n, C = 16, 3
    X = rng.normal(size=(3, n, 2)) * np.array([1.0, 30.0, 1e3])[:, None, None]
    f = Multinomial(X, rng.integers(0, C, (3, n)), n_classes=C)
    hi = host(f._smoothness_bound())
    R = np.linalg.norm(X, axis=-1).max(axis=-1)
    edge = 256 * ((n + 4) * U32 * hi + 2 * n * C * 2.0**-149 * (1 + R) ** 2)
    np.testing.assert_array_equal(f._low_hessian_ok(edge), [True] * 3)
    np.testing.assert_array_equal(f._low_hessian_ok(edge * (1 - 1e-12)), [False] * 3)
    big = Multinomial(np.full((1, 2, 2), 2.0**50), [[0, 1]], n_classes=2)
    assert not np.any(big._low_hessian_ok(np.full(1, 2.0**120)))
    g = Multinomial(X.astype(np.float32), rng.integers(0, C, (3, n)), n_classes=C)
    assert not np.any(g._low_hessian_ok(np.full(3, 1e30, np.float32)))


def _plain(monkeypatch):
    """Newton on the plain methods: value/grad/_grad_rounding, hess, _hess_error without state."""
    monkeypatch.setattr(Multinomial, "_eval", Objective._eval)
    monkeypatch.setattr(Multinomial, "_hess_at", lambda self, theta, state, low=False: self.hess(theta))
    orig = mm.Multinomial._local_curvature
    monkeypatch.setattr(Multinomial, "_local_curvature", lambda self, theta, state: orig(self, theta, None))
    monkeypatch.delattr(Multinomial, "_low_hessian_ok")


def _solve(f, w, lam, **kw):
    theta, info = mo.prox(f, w, lam, return_info=True, **kw)
    return host(theta), host(info.error_bound), host(info.iterations)


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("low", ["on", "off", "force"])
def test_fast_prox_gives_the_plain_answer(monkeypatch, regime, low):
    rng = np.random.default_rng(100 + REGIMES.index(regime))
    f, w, lam, kw = _data(regime, rng)
    with monkeypatch.context() as mp_:
        _plain(mp_)
        plain = _solve(f, w, lam, **kw)
    if low != "on":
        monkeypatch.setattr(
            Multinomial,
            "_low_hessian_ok",
            {
                "off": lambda self, m, hi=None: np.zeros(np.shape(m), bool),
                "force": lambda self, m, hi=None: np.ones(np.shape(m), bool) & (self.dtype == np.float64),
            }[low],
        )
    theta, bound, _ = _solve(f, w, lam, **kw)
    diff = np.linalg.norm(theta.astype(np.float64) - plain[0], axis=-1)
    assert np.all(diff <= bound + plain[1]), (diff, bound)  # both within their bound of the prox
    if "tol" not in kw:  # default level: both paths polish to the same point, a few ulps apart
        # (measured: at most 12 ulps of max|theta|, with bounds of 20-35000 ulps)
        ulps = np.finfo(f.dtype).eps * np.abs(plain[0]).max(axis=-1)
        assert np.all(diff <= 8 * np.sqrt(theta.shape[-1]) * ulps), (diff / ulps).max()
    if low == "on":  # the shipped path against the 50-digit prox
        for i in (0, f.batch_shape[0] - 1):
            X, y, p, mu = _client(f, i)
            ref = multinomial_prox(
                X,
                y,
                p,
                f.n_classes,
                mu,
                np.asarray(w[i], f.dtype),
                float(np.asarray(lam, f.dtype)),
                theta[i].astype(np.float64),
            )
            assert error(theta[i], ref) <= bound[i], (i, error(theta[i], ref), bound[i])


def test_float32_direction_is_taken(monkeypatch):
    """On benchmark-like data at lam = 1 every Hessian Newton forms for its direction is the
    float32 one; the iteration counts stay within one polishing step of the float64 path's."""
    rng = np.random.default_rng(11)
    f, w, lam, _ = _data("bench", rng)
    calls = []
    orig = Multinomial._hess_at
    monkeypatch.setattr(
        Multinomial,
        "_hess_at",
        lambda self, t, s, low=False: calls.append(bool(low)) or orig(self, t, s, low),
    )
    fast = _solve(f, w, lam)
    assert calls and all(calls[:2]), calls
    monkeypatch.setattr(Multinomial, "_low_hessian_ok", lambda self, m, hi=None: np.zeros(np.shape(m), bool))
    calls.clear()
    slow = _solve(f, w, lam)
    assert not any(calls)
    assert np.all(fast[2] <= slow[2] + 1)


def test_fast_path_runs_on_the_array_api():
    """The class-major evaluation and the blocked Hessian use only the array API: the prox on
    array-api-strict arrays is the numpy one (the same operations)."""
    xs = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(12)
    X, y, w = rng.normal(size=(3, 12, 2)), rng.integers(0, 3, (3, 12)), rng.normal(size=(3, 6))
    th = mo.prox(Multinomial(xs.asarray(X), xs.asarray(y.astype(float)), n_classes=3), xs.asarray(w), 0.5)
    assert not isinstance(th, np.ndarray)
    np.testing.assert_allclose(
        np.asarray(th), mo.prox(Multinomial(X, y, n_classes=3), w, 0.5), rtol=0, atol=1e-14
    )


def test_partial_hessian_share_changes_nothing(monkeypatch):
    """``_part_share``: Newton forms the Hessian on a copy of the clients that need one when they
    are at most 3/4 of the batch (the default for other losses: 1/2); the answer is the same bits
    whatever the share, and on benchmark-like data at L-BFGS-B's tolerance a partial Hessian is
    formed with the shipped share and not with 1/2."""
    rng = np.random.default_rng(25)  # 25 of the 40 clients need the third Hessian
    m, n, d, C = 40, 60, 5, 4
    X = rng.normal(size=(m, n, d))
    P = np.exp(X @ rng.normal(size=(m, d, C)))
    y = (np.cumsum(P / P.sum(-1, keepdims=True), -1) < rng.random((m, n, 1))).sum(-1).clip(0, C - 1)
    f, w = Multinomial(X, y, n_classes=C), rng.normal(size=(m, d * C))
    sizes = []
    orig = Multinomial._hess_at
    monkeypatch.setattr(
        Multinomial,
        "_hess_at",
        lambda self, t, s, low=False: sizes.append(t.shape[0]) or orig(self, t, s, low),
    )
    got = {}
    for share in (0.75, 0.5, 1.0):
        monkeypatch.setattr(Multinomial, "_part_share", share)
        sizes.clear()
        got[share] = _solve(f, w, 1.0, tol=2.5e-8), list(sizes)
    for share in (0.5, 1.0):
        np.testing.assert_array_equal(got[share][0][0], got[0.75][0][0])
        np.testing.assert_array_equal(got[share][0][1], got[0.75][0][1])
    assert min(got[0.75][1]) < m and m // 2 < min(got[0.75][1]), got[0.75][1]  # a share in (1/2, 3/4]
    assert min(got[0.5][1]) == m, got[0.5][1]


@pytest.mark.parametrize("layout", ["per-client", "shared-X", "2d-batch", "partly-broadcast"])
def test_eval_blocks_change_nothing(monkeypatch, layout):
    """The evaluation in blocks of clients gives the bits of one block, on any batch layout
    (multi-axis batches, data shared or broadcast along some axes), and agrees with the plain
    methods within the rounding bound."""
    import moreau._multinomial_fast as mf

    rng = np.random.default_rng(31)
    n, d, C = 9, 3, 4
    Xs, ys = {
        "per-client": ((7, n, d), (7, n)),
        "shared-X": ((n, d), (7, n)),
        "2d-batch": ((2, 3, n, d), (2, 3, n)),
        "partly-broadcast": ((1, 3, n, d), (2, 3, n)),
    }[layout]
    f = Multinomial(
        rng.normal(size=Xs), rng.integers(0, C, ys), n_classes=C, mu=0.2, weights=rng.random(ys) + 0.1
    )
    theta = rng.normal(size=f.batch_shape + (d * C,))
    one = [host(a) for a in f._eval(theta)]
    monkeypatch.setattr(mf, "_EVAL_BYTES", 2 * C * n * 8)  # blocks of two clients
    many = [host(a) for a in f._eval(theta)]
    for a, b in zip(one, many, strict=True):
        np.testing.assert_array_equal(a, b)
    v, g, E, st = many
    assert st.shape == f.batch_shape + (2 * C + 1, n)
    assert np.all(np.linalg.norm(g - host(f.grad(theta)), axis=-1) <= 2 * E)
    np.testing.assert_allclose(v, host(f.value(theta)), rtol=1e-13)
