"""Newton's two cheap directions give the answers of the plain path, certified.

* the float32-formed Hessian (``Logistic._hess_at(..., low=True)``) is within its stated
  bound of ``X^T diag(c) X`` and is really float32 (not the float64 product again);
* the gate ``_low_hessian_ok`` is the stated rate bound, at its boundary;
* the chord step (the previous Hessian where ``_chord_settles`` predicts it settles) and
  the float32 direction, each switched on, off and forced everywhere (a wrong guess, a
  Hessian far off), return the prox within the certified bound (50-digit reference) and the
  same theta as the plain path to a few ulps (or within both tolerances when ``tol`` is
  given), on benchmark-like, badly scaled (X ~ 1e4), separable (mu = 0) and float32 data;
* both paths are taken where they should be (else the comparisons are vacuous);
* the branch-free ``sigma(-z)`` select gives the bits of ``where``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mpref import error, logistic_prox
from _tol import host

import moreau as mo
import moreau._newton as newton
from moreau._logistic import Logistic

EPS = np.finfo(np.float64).eps
U32 = 2.0**-24

_ORIG_OK, _ORIG_CHORD = Logistic._low_hessian_ok, newton._chord_settles


def _modes(monkeypatch, low, chord):
    """Switch the float32 direction and the chord step: 'on' (as shipped), 'off', 'force'."""
    monkeypatch.setattr(
        Logistic,
        "_low_hessian_ok",
        {
            "on": _ORIG_OK,
            "off": lambda self, m, hi=None: np.zeros(np.shape(m), bool),
            "force": lambda self, m, hi=None: np.ones(np.shape(m), bool) & (self.dtype == np.float64),
        }[low],
    )
    monkeypatch.setattr(
        newton,
        "_chord_settles",
        {
            "on": _ORIG_CHORD,
            "off": lambda xp, S, P, tol, eps: np.zeros(S["lam"].shape, bool),
            "force": lambda xp, S, P, tol, eps: S["newton"],
        }[chord],
    )


def _solve(f, w, lam, **kw):
    try:
        theta, info = mo.prox(f, w, lam, return_info=True, **kw)
        return host(theta), host(info.error_bound), host(info.iterations), None
    except mo.ProxConvergenceError as e:
        return e.theta, e.error_bound, e.iterations, e.failed


def _regime(name):
    """(objective, w, lam, prox kwargs, entries checked against the 50-digit reference)."""
    rng = np.random.default_rng(
        {"bench": 0, "bench-tol": 1, "badly-scaled": 2, "separable": 3, "float32": 4, "small-lam": 5}[name]
    )
    if name in ("bench", "bench-tol", "small-lam"):  # the benchmark's data, fewer clients
        X = rng.normal(size=(12, 40, 5))
        th = rng.normal(size=(12, 5))
        y = np.where(rng.random((12, 40)) < 1 / (1 + np.exp(-np.einsum("mnd,md->mn", X, th))), 1.0, -1.0)
        lam = 1e-2 if name == "small-lam" else 1.0
        return Logistic(X, y), rng.normal(size=(12, 5)), lam, {"tol": 1e-8} if name == "bench-tol" else {}
    if name == "badly-scaled":  # X ~ 1e4, w ~ 1e3 (the regime)
        X = rng.normal(size=(6, 12, 4)) * 1e4
        return Logistic(X, rng.choice([-1.0, 1.0], (6, 12))), rng.normal(size=(6, 4)) * 1e3, 1.0, {}
    if name == "separable":  # every margin can grow without bound: mu = 0, lam tiny
        X = np.abs(rng.normal(size=(6, 8, 3))) + 0.1
        return Logistic(X, np.ones((6, 8))), rng.normal(size=(6, 3)), 1e-10, {}
    X = (rng.normal(size=(6, 10, 3)) * 1e2).astype(np.float32)  # float32: no float32 direction
    return (
        Logistic(X, rng.choice([-1.0, 1.0], (6, 10)).astype(np.float32)),
        np.ones((6, 3), np.float32),
        np.float32(1e-2),
        {},
    )


def _check_reference(f, w, lam, theta, bound, idx):
    X, y, p, mu = host(f.X), host(f.y), host(f.weights), float(np.asarray(host(f.mu)).reshape(-1)[0])
    lam_d = float(np.asarray(lam, f.dtype))
    for i in idx:
        ref = logistic_prox(
            X[i],
            y[i],
            np.broadcast_to(p, y.shape)[i],
            mu,
            np.asarray(w[i], f.dtype),
            lam_d,
            np.asarray(theta[i], np.float64),
        )
        assert error(theta[i], ref) <= bound[i], (i, error(theta[i], ref), bound[i])


@pytest.mark.parametrize(
    "regime", ["bench", "bench-tol", "small-lam", "badly-scaled", "separable", "float32"]
)
@pytest.mark.parametrize("mode", [("on", "on"), ("force", "off"), ("off", "force"), ("force", "force")])
def test_cheap_directions_give_the_plain_answer(monkeypatch, regime, mode):
    f, w, lam, kw = _regime(regime)
    _modes(monkeypatch, "off", "off")
    plain = _solve(f, w, lam, **kw)
    _modes(monkeypatch, *mode)
    fast = _solve(f, w, lam, **kw)
    assert plain[3] is None and fast[3] is None  # every entry certified both ways
    theta, bound = fast[0], fast[1]
    _check_reference(f, w, lam, theta, bound, range(0, theta.shape[0], 3))
    diff = np.linalg.norm(theta - plain[0], axis=-1)
    assert np.all(diff <= bound + plain[1]), (diff, bound)  # both within their bound of the prox
    if "tol" not in kw:  # default level: where it is a few ulps, theta agrees to a few ulps
        ulps = np.finfo(f.dtype).eps * np.abs(plain[0]).max(axis=-1)
        sharp = np.maximum(bound, plain[1]) <= 16 * ulps
        assert np.all(diff[sharp] <= 8 * np.sqrt(theta.shape[-1]) * ulps[sharp]), (diff / ulps).max()


def test_paths_are_taken_and_save_hessians(monkeypatch):
    """At lam = 1 and L-BFGS-B's accuracy the float32 direction is used on every entry and the
    last step is a chord step for most: fewer Hessian rows, the same iteration counts."""
    rng = np.random.default_rng(11)  # the benchmark's data (n = 200, d = 20), 50 clients
    X, th = rng.normal(size=(50, 200, 20)), rng.normal(size=(50, 20))
    y = np.where(rng.random((50, 200)) < 1 / (1 + np.exp(-np.einsum("mnd,md->mn", X, th))), 1.0, -1.0)
    f, w, lam, kw = Logistic(X, y), rng.normal(size=(50, 20)), 1.0, {"tol": 1.6e-8}
    rows = {False: 0, True: 0}
    orig = Logistic._hess_at

    def spy(self, theta, c, low=False):
        rows[bool(low)] += int(np.prod(np.shape(theta)[:-1]))
        return orig(self, theta, c, low)

    monkeypatch.setattr(Logistic, "_hess_at", spy)
    fast = _solve(f, w, lam, **kw)
    used = dict(rows)
    rows.update({False: 0, True: 0})
    _modes(monkeypatch, "off", "off")
    plain = _solve(f, w, lam, **kw)
    assert used[True] > 0 and rows[True] == 0
    assert used[True] + used[False] < rows[False] - 40, (used, rows)  # chord steps replaced Hessians
    np.testing.assert_array_equal(fast[2], plain[2])
    # at the default level a chord step would not settle: the predictor says so (the same
    # counts without it), and the float32 direction adds at most a polishing step to a few
    # entries (measured: 1 of 50 here, 7 of 1000 on the benchmark)
    plain_default = _solve(f, w, lam)[2]
    _modes(monkeypatch, "on", "off")
    no_chord = _solve(f, w, lam)[2]
    _modes(monkeypatch, "on", "on")
    fast_default = _solve(f, w, lam)[2]
    np.testing.assert_array_equal(fast_default, no_chord)
    assert np.all(fast_default <= plain_default + 1) and np.sum(fast_default - plain_default) <= 50 / 16


@pytest.mark.parametrize("batch", ["per-client", "shared-X", "partly-broadcast", "blocks-of-two"])
def test_low_hessian_within_its_bound(monkeypatch, batch):
    """|H32 - X^T diag(c) X| <= (n + 4) u32 sum_j c_j ||x_j||^2 (spectral norm, bounded by
    Frobenius), the reference in long double; and it is float32 (off by more than 1e-3 of that)."""
    import moreau._logistic as lg

    rng = np.random.default_rng(9)
    n, d = 30, 4
    Xs = {
        "per-client": (7, n, d),
        "shared-X": (n, d),
        "partly-broadcast": (1, 7, n, d),
        "blocks-of-two": (7, n, d),
    }[batch]
    X = rng.normal(size=Xs) * 10.0 ** rng.uniform(-2, 3, Xs[:-2] + (1, 1))
    ys = (2, 7, n) if batch in ("shared-X", "partly-broadcast") else (7, n)
    f = mo.Logistic(X, rng.choice([-1.0, 1.0], ys), mu=0.3)
    theta = rng.normal(size=ys[:-1] + (d,)) * 1e-2
    c = f._eval(theta)[3]
    if batch == "blocks-of-two":
        monkeypatch.setattr(lg, "_BLOCK_BYTES", 2 * n * d * 8)
    H = host(f._hess_at(theta, c, True))
    Xb = np.broadcast_to(X, ys[:-1] + (n, d)).astype(np.longdouble)
    ref = np.einsum("...ni,...n,...nj->...ij", Xb, host(c).astype(np.longdouble), Xb) + 0.3 * np.eye(d)
    scale = np.einsum("...n,...n->...", host(c), np.einsum("...nd,...nd->...n", Xb, Xb).astype(np.float64))
    err = np.linalg.norm((H - ref).astype(np.float64), axis=(-2, -1))
    assert H.dtype == np.float64 and H.shape == ref.shape
    assert np.all(err <= (n + 4) * U32 * scale), (err / scale).max()
    assert np.all(err >= 1e-3 * U32 * scale)  # really formed in float32 (float64 is 1e9 times closer)


def test_low_hessian_on_float32_data_is_the_plain_one():
    rng = np.random.default_rng(2)
    f = mo.Logistic(
        rng.normal(size=(3, 8, 2)).astype(np.float32), rng.choice([-1.0, 1.0], (3, 8)).astype(np.float32)
    )
    theta = rng.normal(size=(3, 2)).astype(np.float32)
    c = f._eval(theta)[3]
    np.testing.assert_array_equal(f._hess_at(theta, c, True), f._hess_at(theta, c))
    assert not np.any(f._low_hessian_ok(np.ones(3, np.float32)))


def test_low_hessian_gate_is_the_rate_bound():
    """Allowed exactly where (n + 4) u32 hi + 2 n 2^-149 (1 + R)^2 <= 2^-8 (lam + mu), and never
    where a row norm exceeds 2^50 (float32 sums could overflow)."""
    rng = np.random.default_rng(4)
    n = 16
    X = rng.normal(size=(3, n, 3)) * np.array([1.0, 30.0, 1e3])[:, None, None]
    f = mo.Logistic(X, rng.choice([-1.0, 1.0], (3, n)))
    hi = host(f._smoothness_bound())
    R = np.linalg.norm(X, axis=-1).max(axis=-1)
    edge = 256 * ((n + 4) * U32 * hi + 2 * n * 2.0**-149 * (1 + R) ** 2)
    np.testing.assert_array_equal(f._low_hessian_ok(edge), [True] * 3)
    np.testing.assert_array_equal(f._low_hessian_ok(edge * (1 - 1e-12)), [False] * 3)
    # the benchmark's regime (features N(0, 1), n = 200, d = 20) passes at lam = 1, not at 1e-2
    g = mo.Logistic(rng.normal(size=(2, 200, 20)), rng.choice([-1.0, 1.0], (2, 200)))
    assert np.all(g._low_hessian_ok(np.ones(2))) and not np.any(g._low_hessian_ok(np.full(2, 1e-2)))
    big = mo.Logistic(np.full((1, 2, 2), 2.0**50), np.ones((1, 2)))
    assert not np.any(big._low_hessian_ok(np.full(1, 2.0**120)))


def test_branch_free_select_is_where():
    """``pos * small + (1 - pos) * big`` is bit for bit ``where(z >= 0, small, big)``: z of every
    size, both zeros, huge margins (the loss, gradient and Hessian weights of ``_eval`` with it)."""
    z = np.array([-800.0, -40.0, -1.0, -1e-300, -0.0, 0.0, 1e-300, 0.5, 37.0, 745.0, 800.0])
    X = np.eye(len(z))
    f = mo.Logistic(X, np.ones(len(z)))
    v, g, E, c = f._eval(z * len(z))  # margins z_j * n (X = I, p = 1/n)
    e = np.exp(-np.abs(z * len(z)))
    big = 1 / (1 + e)
    small = e * big
    s_neg = np.where(z >= 0, small, big)
    np.testing.assert_array_equal(host(g), -(host(f._py) * s_neg))
    np.testing.assert_array_equal(host(c), host(f._p) * (small * big))
    assert np.isfinite(host(v)) and np.isfinite(host(E))


@pytest.mark.parametrize("case", ["per-client", "shared-X", "weights-batch", "point-batch"])
def test_eval_in_place_is_the_formula(case):
    """``_eval`` (temporaries reused in place) gives the bits of the plain formula
    ``y * (X theta)``, ``exp(-|z|)``, ``1 / (1 + e)``, ... whichever operand carries the batch."""
    rng = np.random.default_rng(12)
    n, d = 9, 3
    X = rng.normal(size={"per-client": (4, n, d)}.get(case, (n, d))) * 3
    y = rng.choice([-1.0, 1.0], (4, n) if case in ("per-client", "shared-X") else n)
    wts = rng.uniform(0.5, 1.0, (4, n)) if case == "weights-batch" else None
    f = mo.Logistic(X, y, mu=0.2, weights=wts)
    theta = rng.normal(size=(4, d) if case in ("per-client", "point-batch") else d) * 4
    v, g, E, c = (host(a) for a in f._eval(theta))
    p, py = host(f._p), host(f._py)
    z = y * (X @ theta[..., None])[..., 0]
    e = np.exp(np.minimum(z, -z))
    big = 1 / (1 + e)
    small = e * big
    s_neg = np.where(z >= 0, small, big)
    loss = np.log1p(e) + np.clip(-z, 0, None)
    np.testing.assert_array_equal(v, np.vecdot(p, loss) + 0.2 / 2 * np.vecdot(theta, theta))
    np.testing.assert_array_equal(g, 0.2 * theta - (np.swapaxes(X, -1, -2) @ (py * s_neg)[..., None])[..., 0])
    np.testing.assert_array_equal(c, p * (small * big))
    np.testing.assert_array_equal(E, host(f._rounding(theta, s_neg, p * (small * big))))
