"""Ragged objectives (issue 19): size buckets against the padded layout and a loop over clients.

The padded objectives are built here from the same samples with every entry padded to the
largest (zero features, weight 0): the code path moreau had before buckets.  A loop over the
entries, each its own unpadded objective, is the second voice.  Proxes are compared through
their certificates (two certified answers lie within the sum of their bounds) and to 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _tol import host

import moreau as mo
from moreau._ragged_layout import Layout

RTOL = 1e-12  # the level: ragged and padded differ only in the order of the sums over samples
MODELS = {"logistic": mo.Logistic, "multinomial": mo.Multinomial, "least_squares": mo.LeastSquares}


def samples(model, shape=(2, 5), d=3, seed=0, lo=1, hi=40, weighted=False):
    """``(sizes, X (N, d), y (N,), weights (N,) or None, options)`` with random sizes."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(lo, hi, size=shape)
    N = int(sizes.sum())
    X = rng.standard_normal((N, d))
    y = {
        "logistic": np.where(rng.random(N) < 0.5, 1.0, -1.0),
        "multinomial": rng.integers(0, 3, N).astype(float),
        "least_squares": X @ rng.standard_normal(d) + rng.standard_normal(N),
    }[model]
    w = rng.integers(0, 3, N).astype(float) if weighted else None
    if w is not None:  # a positive sum per entry
        w[np.concatenate([[0], np.cumsum(sizes.reshape(-1))[:-1]])] = 1.0
    return sizes, X, y, w, ({"n_classes": 3} if model == "multinomial" else {})


def pad(sizes, a, fill):
    """Every entry's rows of ``a`` (concatenated in C order of sizes) padded to max(sizes)."""
    n = int(sizes.max())
    out = np.full((sizes.size, n) + a.shape[1:], fill, dtype=float)
    start = 0
    for k, s in enumerate(sizes.reshape(-1)):
        out[k, :s] = a[start : start + s]
        start += s
    return out.reshape(sizes.shape + (n,) + a.shape[1:])


def both(name, mu=0.1, ratio=2.0, **kw):
    """``(ragged, padded, data)`` over the same samples."""
    sizes, X, y, w, opts = samples(name, **kw)
    model = MODELS[name]
    f = mo.ragged(model, X, y, sizes, mu=mu, weights=w, ratio=ratio, **opts)
    wp = pad(sizes, np.ones(len(y)) if w is None else w, 0.0)
    g = model(
        pad(sizes, X, 0.0), pad(sizes, y, 1.0 if name == "logistic" else 0.0), mu=mu, weights=wp, **opts
    )
    return f, g, (sizes, X, y, w, opts)


def close(a, b, rtol=RTOL):
    a, b = host(a), host(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.max(np.abs(b), initial=0.0)))


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_protocol_equals_padded(name, weighted):
    f, g, _ = both(name, weighted=weighted)
    assert (
        isinstance(f, MODELS[name]) and f.batch_shape == g.batch_shape == (2, 5) and len(f.layout.buckets) > 1
    )
    rng = np.random.default_rng(1)
    th, v = rng.standard_normal((2, 2, 5, f.dim)), rng.standard_normal((2, 5, f.dim))  # a leading axis
    for fn in ("value", "grad", "hess"):
        close(getattr(f, fn)(th), getattr(g, fn)(th))
    close(f.hvp(th, v), g.hvp(th, v))
    for a, b in zip(f.curvature_bounds(), g.curvature_bounds(), strict=True):
        close(a, b)
    for fn in ("smoothness", "strong_convexity", "_smoothness_bound"):
        close(
            getattr(f, fn)(), getattr(g, fn)(), rtol=1e-11
        )  # the trace bound carries (1 + 2 n eps), n differs
    if name != "least_squares":
        close(f.hessian_lipschitz(), g.hessian_lipschitz())
        close(f._grad_error_scale(th[0]), g._grad_error_scale(th[0]))
    if name == "logistic":
        close(f.third(th, v), g.third(th, v))
        f0, g0, _ = both(name, mu=0.0, weighted=weighted)
        close(f0.gradient_bound(), g0.gradient_bound())
    # the padded view is the padded layout, formed on demand
    for k in ("X", "y", "weights"):
        assert np.array_equal(host(getattr(f, k)), host(getattr(g, k))), k
    assert type(f.padded()) is MODELS[name]
    sizes, X, y, w, opts = samples(name, weighted=weighted)  # the class called directly: the same objective
    h = type(f)(X, y, sizes, mu=0.1, weights=w, **opts)
    assert np.array_equal(host(h.value(th)), host(f.value(th)))


@pytest.mark.parametrize("name", MODELS)
def test_prox_equals_padded_and_loop(name):
    f, g, (sizes, X, y, _, opts) = both(name)
    rng = np.random.default_rng(2)
    W = rng.standard_normal((2, 5, f.dim))
    lam = np.array([[0.5], [4.0]])  # one lam per trial row
    tr, ir = f.prox(W, lam, return_info=True)
    tp, ip = g.prox(W, lam, return_info=True)
    close(tr, tp)
    er, ep = ir.error_bound, ip.error_bound
    assert er.shape == ep.shape == (2, 5) and np.all(np.isfinite(er))
    # two certified answers: within the sum of their bounds; the buckets' bounds use the bucket's n
    # in their rounding terms (gamma_n), so they are never looser than the padded ones
    assert np.all(host(np.linalg.norm(host(tr) - host(tp), axis=-1)) <= er + ep)
    assert np.all(er <= ep * (1 + RTOL))
    # a loop over the entries, each unpadded: the third voice
    start = 0
    for k, s in enumerate(sizes.reshape(-1)):
        i = np.unravel_index(k, sizes.shape)
        sl = slice(start, start + s)
        one = MODELS[name](X[sl], y[sl], mu=0.1, **opts)
        t1, i1 = one.prox(W[i], float(lam[i[0], 0]), return_info=True)
        assert np.linalg.norm(host(t1) - host(tr)[i]) <= float(i1.error_bound) + er[i]
        close(tr[i], t1)
        close(f.value(W)[i], one.value(W[i]))
        start += s


@pytest.mark.parametrize("name", MODELS)
def test_sweep_envelope_meta(name):
    f, g, _ = both(name, shape=(6,), seed=3)
    rng = np.random.default_rng(4)
    w = rng.standard_normal(f.dim)  # one point for every client
    lam = np.array([[0.3], [1.0], [30.0]])  # a lam-sweep: (3, 1) against (6,)
    close(f.prox(w, lam), g.prox(w, lam))
    assert f.prox(w, lam).shape == (3, 6, f.dim)
    W = rng.standard_normal((6, f.dim))
    for fn in ("value", "grad", "hess"):
        close(getattr(mo.envelope(f, 2.0), fn)(W), getattr(mo.envelope(g, 2.0), fn)(W))
    close(mo.envelope(f, 2.0).prox(W, 0.7), mo.envelope(g, 2.0).prox(W, 0.7))
    close(mo.meta_objective(f, 0.05).grad(W), mo.meta_objective(g, 0.05).grad(W))


@pytest.mark.parametrize("name", MODELS)
def test_with_weights_padded_layout(name):
    f, g, (sizes, *_) = both(name, seed=5)
    rng = np.random.default_rng(6)
    counts = rng.integers(0, 3, size=(4,) + sizes.shape + (int(sizes.max()),)).astype(float)  # 4 draws
    counts[..., 0] = 1.0
    counts *= np.arange(sizes.max()) < sizes[..., None]  # nothing past n_i
    fw, gw = f.with_weights(counts), g.with_weights(counts)
    assert fw.batch_shape == gw.batch_shape == (4, 2, 5) and type(fw) is type(f)
    th = rng.standard_normal((4, 2, 5, f.dim))
    close(fw.value(th), gw.value(th))
    close(fw.grad(th), gw.grad(th))
    close(fw.prox(th, 1.5), gw.prox(th, 1.5))
    assert np.array_equal(host(fw.weights), counts)
    close(f.value(th), g.value(th))  # f itself unchanged


def test_buckets_bound_the_padding():
    rng = np.random.default_rng(7)
    for ratio in (1.3, 2.0, 4.0):
        sizes = rng.integers(1, 5000, size=(3, 40))
        lay = Layout(sizes, ratio)
        flat = sizes.reshape(-1)
        seen = np.concatenate([idx for idx, _ in lay.buckets])
        assert np.array_equal(np.sort(seen), np.arange(flat.size))  # every entry in one bucket
        for idx, width in lay.buckets:
            assert width == flat[idx].max() and width <= ratio * flat[idx].min()
        assert lay.slots <= ratio * flat.sum()
        assert len(lay.buckets) <= 1 + math.log(flat.max() / flat.min()) / math.log(ratio) + 1e-9


def test_computations_never_form_the_padded_layout(monkeypatch):
    f, _, _ = both("multinomial", seed=8)

    def refuse(*a, **k):
        raise AssertionError("the padded layout was formed")

    monkeypatch.setattr(Layout, "merge_padded", refuse)
    W = np.random.default_rng(9).standard_normal((2, 5, f.dim))
    f.value(W), f.grad(W), f.hess(W), f.prox(W, 1.0, return_info=True), f.curvature_bounds()
    mo.fl.fedavg(f, eta=0.1, tau=2, rounds=2)
    mo.fl.fedprox(f, lam=1.0, gamma=0.5, eta=0.1, K=2, rounds=2)
    mo.fl.pfedme(f, lam=2.0, eta=0.1, beta=1.0, R=2, rounds=1, batch_size=4, inner=2, rng=0, personal="inner")
    with pytest.raises(AssertionError, match="padded layout"):
        f.X  # noqa: B018


def test_uncertified_entries_are_named_in_the_ragged_batch():
    f, _, _ = both("logistic", seed=10)
    W = np.random.default_rng(11).standard_normal((2, 5, f.dim))
    with pytest.raises(mo.ProxConvergenceError) as err:
        f.prox(W, 1.0, tol=1e-300)
    e = err.value
    assert e.failed.shape == e.error_bound.shape == (2, 5) and e.failed.all()
    assert e.theta.shape == (2, 5, f.dim) and "batch index (0, 0)" in str(e)


def test_backend_array_api_strict():
    xs = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    sizes, X, y, _, opts = samples("multinomial", shape=(4,), seed=12)
    f = mo.ragged(mo.Multinomial, X, y, sizes, mu=0.1, **opts)
    fx = mo.ragged(mo.Multinomial, xs.asarray(X), xs.asarray(y), sizes, mu=0.1, **opts)
    W = np.random.default_rng(13).standard_normal((4, f.dim))
    out = fx.prox(xs.asarray(W), 1.0)
    assert type(out) is type(xs.asarray(W))
    close(out, f.prox(W, 1.0))
    close(fx.grad(xs.asarray(W)), f.grad(W))


def _data(model="logistic"):
    sizes, X, y, _, opts = samples(model, shape=(3,), seed=14)
    return {"model": MODELS[model], "X": X, "y": y, "sizes": sizes, **opts}


BAD = [
    (dict(_data(), model=np.ndarray), TypeError, "model must be"),
    (dict(_data(), sizes=np.array([3, 0, 2])), ValueError, "sizes must be >= 1"),
    (dict(_data(), sizes=np.array([1.5, 2.0])), ValueError, "sizes must be an array of integer"),
    (dict(_data(), sizes=np.array(4)), ValueError, "sizes must have at least one entry"),
    (dict(_data(), sizes=np.array([1, 1, 1])), ValueError, "X must have shape \\(N, d\\)"),
    (dict(_data(), X=np.ones((2, 3, 4))), ValueError, "X must have shape \\(N, d\\)"),
    (dict(_data(), y=np.ones(3)), ValueError, "y must have shape \\(N,\\)"),
    (dict(_data(), weights=np.ones(2)), ValueError, "weights must have shape \\(N,\\)"),
    (dict(_data(), weights=-np.ones(int(_data()["sizes"].sum()))), ValueError, "weights must be >= 0"),
    (
        dict(_data(), weights=np.zeros(int(_data()["sizes"].sum()))),
        ValueError,
        "weights must have a positive sum",
    ),
    (dict(_data(), mu=np.ones(5)), ValueError, "mu must be a scalar or broadcast"),
    (dict(_data(), ratio=1.0), ValueError, "ratio must be a finite number > 1"),
    (dict(_data(), y=np.full(int(_data()["sizes"].sum()), 2.0)), ValueError, "y must hold labels in"),
    (
        dict(_data("multinomial"), y=np.full(int(_data()["sizes"].sum()), 0.5)),
        ValueError,
        "y must hold integer class",
    ),
    (
        dict(_data("multinomial"), y=np.full(int(_data()["sizes"].sum()), 7.0)),
        ValueError,
        "y must hold labels < n_classes",
    ),
]


@pytest.mark.parametrize("kw, err, match", BAD, ids=[b[2][:24] for b in BAD])
def test_bad_input(kw, err, match):
    kw = dict(kw)
    with pytest.raises(err, match=match) as e:
        mo.ragged(kw.pop("model"), kw.pop("X"), kw.pop("y"), kw.pop("sizes"), **kw)
    assert "\n" not in str(e.value)


def test_bad_weights_and_synthetic_flag():
    f, _, (sizes, *_) = both("logistic", seed=15)
    n = int(sizes.max())
    for w, match in (
        (np.ones((2, 5, n + 1)), "weights must have shape"),
        (np.ones((2, 5, n)), "weights must be 0 past each entry"),
        (-1.0 * (np.arange(n) < sizes[..., None]), "weights must be >= 0"),
        (np.zeros((2, 5, n)), "weights must have a positive sum"),
    ):
        with pytest.raises(ValueError, match=match) as e:
            f.with_weights(w)
        assert "\n" not in str(e.value)
    with pytest.raises(TypeError, match="ragged must be True or False"):
        mo.data.synthetic(0.5, 0.5, 0, n_clients=3, max_size=60, ragged="yes")


@pytest.mark.parametrize("tail", [0, 1, 2])
def test_merge_inverts_split_with_leading_axes(tail):
    """``merge`` (numpy: each bucket written to its entries) undoes ``split`` (a take per bucket),
    with sweep axes in front and a batch of two axes, for int and float parts."""
    rng = np.random.default_rng(12)
    lay = Layout(rng.integers(1, 300, size=(3, 7)), 2.0)
    assert len(lay.buckets) > 1 and not lay._identity
    for dtype in (np.float64, np.int64):
        a = (rng.standard_normal((2, 3, 7) + (4,) * tail) * 100).astype(dtype)
        parts = lay.split(a, tail)
        assert len(parts) == len(lay.buckets)
        back = lay.merge(parts, tail)
        assert back.dtype == a.dtype and np.array_equal(back, a)
