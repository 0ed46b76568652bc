"""The one fast gradient (and Hessian-vector product) of every sample objective, and the algorithms
of ``moreau.fl`` that use it, give the results of the implementation before issue 19 to rounding.

Three voices for each quantity, on random batches with sample weights and zero-weight padding,
mu > 0 (per client), float32, shared data, a trials axis and ragged clients:

* the implementation before issue 19, kept or re-enabled here: ``Multinomial._grad_plain`` (the old
  ``grad``, samples-by-classes), ``Logistic._value_grad`` (the old ``grad``), ``Objective.hvp``
  (``hess @ v``: the old ``hvp`` of the softmax loss; the same product as the old logistic one),
  ``with_weights(counts)`` for a mini-batch (the old ``batched_objective``);
* a plain per-client numpy formula written here (a loop over clients, dense per-client Hessians);
* where they are meant to be the same operations, bit for bit: the fast gradient against Newton's
  evaluation (``_eval``), numpy against the array-API path (array-api-strict).

Then every algorithm (FedAvg with and without mini-batches, FedProx, pFedMe exact and with K inner
steps on gathered mini-batches, Per-FedAvg with Hessian-vector products on mini-batches) against the
same run with the old code paths patched back in, and FedAvg / Per-FedAvg against a per-client loop.
No timing here: the speed is measured by ``benchmarks/bench_fl.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from _tol import assert_close, host

import moreau as mo
import moreau.fl._common as fc
import moreau.fl._minibatches as fmb
import moreau.fl._pfedme as fpm
from moreau import fl
from moreau._objective import Objective

MODELS = ["multinomial", "logistic", "least_squares"]


def _sigmoid(z):
    return 0.5 * (1 + np.tanh(z / 2))


def _data(model, seed, *, m=5, n=11, d=3, C=4, dtype=np.float64, ragged=False, shared=False, big=1.0):
    """(objective, raw per-client list of (X_i, y_i, p_i, mu_i)) with scattered zero weights."""
    rng = np.random.default_rng(seed)
    mu = rng.random(m) * 0.5  # mu > 0 per client
    if ragged:
        sizes = rng.integers(4, 3 * n, m)
        X = (rng.standard_normal((int(sizes.sum()), d)) * big).astype(dtype)
        y = _labels(model, rng, X.shape[0], C)
        w = np.where(rng.random(X.shape[0]) < 0.3, 0.0, rng.random(X.shape[0]) + 0.5)
        off = np.concatenate([[0], np.cumsum(sizes)])
        for k in range(3):
            w[off[:-1] + k] = 1.0  # three rows of positive weight in every client
        opts = {"n_classes": C} if model == "multinomial" else {}
        f = mo.ragged(_cls(model), X, y, sizes, mu=mu, weights=w, **opts)
        raw = [
            (X[off[i] : off[i + 1]], y[off[i] : off[i + 1]], w[off[i] : off[i + 1]], mu[i]) for i in range(m)
        ]
        return f, [(Xi, yi, wi / wi.sum(), mi) for Xi, yi, wi, mi in raw]
    X = (rng.standard_normal((n, d) if shared else (m, n, d)) * big).astype(dtype)
    y = _labels(model, rng, (m, n), C)
    w = np.where(rng.random((m, n)) < 0.3, 0.0, rng.random((m, n)) + 0.5)
    w[:, :3] = 1.0
    opts = {"n_classes": C} if model == "multinomial" else {}
    f = _cls(model)(X, y, mu=mu, weights=w, **opts)
    Xs = np.broadcast_to(X, (m, n, d))
    return f, [(Xs[i], y[i], w[i] / w[i].sum(), mu[i]) for i in range(m)]


def _cls(model):
    return {"multinomial": mo.Multinomial, "logistic": mo.Logistic, "least_squares": mo.LeastSquares}[model]


def _labels(model, rng, shape, C):
    if model == "multinomial":
        return rng.integers(0, C, shape).astype(float)
    if model == "logistic":
        return rng.choice([-1.0, 1.0], shape)
    return rng.standard_normal(shape)


def _client_grad(model, C, Xi, yi, pi, mui, th):
    """The plain per-client gradient (float64)."""
    Xi, th = Xi.astype(float), th.astype(float)
    if model == "multinomial":
        d = Xi.shape[-1]
        Z = Xi @ th.reshape(d, C)
        P = np.exp(Z - Z.max(-1, keepdims=True))
        P /= P.sum(-1, keepdims=True)
        return (Xi.T @ (pi[:, None] * (P - np.eye(C)[yi.astype(int)]))).reshape(-1) + mui * th
    if model == "logistic":
        return -Xi.T @ (pi * yi * _sigmoid(-yi * (Xi @ th))) + mui * th
    return Xi.T @ (pi * (Xi @ th - yi)) + mui * th


def _client_hess(model, C, Xi, yi, pi, mui, th):
    """The plain per-client Hessian (dense)."""
    Xi, th = Xi.astype(float), th.astype(float)
    d = Xi.shape[-1]
    if model == "multinomial":
        Z = Xi @ th.reshape(d, C)
        P = np.exp(Z - Z.max(-1, keepdims=True))
        P /= P.sum(-1, keepdims=True)
        H = sum(
            pj * np.kron(np.outer(x, x), np.diag(q) - np.outer(q, q))
            for x, q, pj in zip(Xi, P, pi, strict=True)
        )
        return H + mui * np.eye(d * C)
    c = pi * _sigmoid(Xi @ th) * _sigmoid(-(Xi @ th)) if model == "logistic" else pi
    return Xi.T @ (c[:, None] * Xi) + mui * np.eye(d)


def _old_grad(f, th):
    """The gradient before issue 19."""
    if isinstance(f, mo.Multinomial) and not hasattr(f, "layout"):
        return f._grad_plain(th)
    if isinstance(f, mo.Logistic) and not hasattr(f, "layout"):
        return f._value_grad(th)[1]
    if hasattr(f, "layout"):
        return f.layout.merge(
            [_old_grad(p, s) for p, s in zip(f.parts, f.layout.split(th, 1, f._outer), strict=True)], 1
        )
    return f.grad(th)


CASES = [
    pytest.param({}, id="weights"),
    pytest.param({"shared": True}, id="shared-X"),
    pytest.param({"dtype": np.float32}, id="float32"),
    pytest.param({"ragged": True}, id="ragged"),
    pytest.param({"big": 30.0}, id="large-logits"),
    pytest.param({"C": 2}, id="two-classes"),
]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("case", CASES)
def test_gradient_against_the_old_one_and_a_per_client_formula(model, case):
    f, raw = _data(model, 1, **case)
    C = case.get("C", 4)
    rng = np.random.default_rng(2)
    th = (
        rng.standard_normal((2,) + tuple(f.batch_shape) + (f.dim,)) * (0.1 if case.get("big") else 1)
    ).astype(f.dtype)  # a trials axis in front
    g = host(f.grad(th))
    assert g.dtype == np.dtype(f.dtype) and g.shape == th.shape
    assert_close(g, _old_grad(f, th))
    ref = np.stack([[_client_grad(model, C, *raw[i], th[t, i]) for i in range(len(raw))] for t in range(2)])
    # float32 data: the formula runs in float64, so the float32 rounding is the difference
    assert_close(g, ref, dtype=f.dtype, factor=10 if f.dtype == np.float32 else 1)


@pytest.mark.parametrize("model", ["multinomial", "logistic"])
@pytest.mark.parametrize("case", CASES[:4])
def test_the_gradient_is_newtons_evaluation_bit_for_bit(model, case):
    f, _ = _data(model, 3, **case)
    th = np.random.default_rng(4).standard_normal(tuple(f.batch_shape) + (f.dim,)).astype(f.dtype)
    parts = f.parts if hasattr(f, "layout") else [f]
    for p, t in zip(parts, f.layout.split(th, 1, ()) if hasattr(f, "layout") else [th], strict=True):
        assert np.array_equal(host(p.grad(t)), host(p._eval(t)[1]))
    if model == "logistic" and not hasattr(f, "layout"):  # the old gradient's operations, too
        assert np.array_equal(host(f.grad(th)), host(f._value_grad(th)[1]))


@pytest.mark.parametrize(
    "n, d", [(1, 3), (5, 1), (1, 1), (11, 3)], ids=["one-sample", "one-feature", "both", "plain"]
)
@pytest.mark.parametrize("C", [2, 4, 12])
def test_class_sums_in_one_call_are_the_unrolled_sums(n, d, C):
    """The softmax gradient's class sums (``_class_sum``: one numpy reduction over the class axis
    where the rows have more than one entry) are the unrolled sums of Newton's evaluation, bit for
    bit, also at the sizes where numpy would sum pairwise (one sample or one feature: the unrolled
    sum is taken there), with C above numpy's 8-way unrolling."""
    import moreau._multinomial_fast as mf

    rng = np.random.default_rng(C)
    for k in (1, 2, 7, mf._SHORT_ROWS, mf._SHORT_ROWS + 1, 300):
        E = rng.standard_normal((3, C, k)) * 10.0 ** rng.integers(-8, 8, (3, C, k))
        assert np.array_equal(mf._class_sum(E), mf._sum([E[:, c] for c in range(C)]))
        if k > 1:  # both forms _class_sum picks between (by row length) are these sums
            assert np.array_equal(E.sum(axis=1), mf._sum([E[:, c] for c in range(C)]))
    X = rng.standard_normal((6, n, d))
    y = rng.integers(0, C, (6, n))
    f = mo.Multinomial(X, y, n_classes=C)
    th = rng.standard_normal((6, d * C)) * 3
    assert np.array_equal(f.grad(th), f._eval(th)[1])


@pytest.mark.parametrize("ragged", [False, True], ids=["padded", "ragged"])
def test_least_squares_gradient_is_the_quadratic_one_bit_for_bit(ragged):
    f, _ = _data("least_squares", 25, ragged=ragged)
    th = np.random.default_rng(26).standard_normal((3,) + tuple(f.batch_shape) + (f.dim,))
    for t in (th, th[0]):  # a sweep axis in front (matvec's matrix product) and none
        assert np.array_equal(host(f.grad(t)), host(mo.Quadratic.grad(f, t)))


@pytest.mark.parametrize("model", ["multinomial", "logistic"])
def test_numpy_and_array_api_paths_give_the_same_bits(model):
    xs = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    f, _ = _data(model, 5, m=7, n=13, C=5)
    fx = _cls(model)(
        xs.asarray(host(f.X)),
        xs.asarray(host(f.y)),
        mu=xs.asarray(host(f.mu)),
        weights=xs.asarray(host(f.weights)),
        **({"n_classes": 5} if model == "multinomial" else {}),
    )
    th = np.random.default_rng(6).standard_normal((7, f.dim))
    v = np.random.default_rng(7).standard_normal((7, f.dim))
    assert np.array_equal(np.asarray(fx.grad(xs.asarray(th))), host(f.grad(th)))
    assert_close(np.asarray(fx.hvp(xs.asarray(th), xs.asarray(v))), host(f.hvp(th, v)))


@pytest.mark.parametrize("model", ["multinomial", "logistic"])
@pytest.mark.parametrize("case", CASES[:5])
def test_hessian_vector_product_against_hess_and_a_per_client_matrix(model, case):
    f, raw = _data(model, 8, **case)
    rng = np.random.default_rng(9)
    th = (rng.standard_normal(tuple(f.batch_shape) + (f.dim,)) * (0.1 if case.get("big") else 1)).astype(
        f.dtype
    )
    v = rng.standard_normal(tuple(f.batch_shape) + (f.dim,)).astype(f.dtype)
    h = host(f.hvp(th, v))
    assert h.dtype == np.dtype(f.dtype)
    assert_close(h, Objective.hvp(f, th, v), factor=2)  # two summation orders of the same product
    ref = np.stack([_client_hess(model, 4, *raw[i], th[i]) @ v[i].astype(float) for i in range(len(raw))])
    assert_close(h, ref, dtype=f.dtype, factor=10 if f.dtype == np.float32 else 2)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("ragged", [False, True], ids=["padded", "ragged"])
def test_the_algorithms_gradient_is_grad_without_the_checks(model, ragged):
    f, _ = _data(model, 27, ragged=ragged)
    grad, fresh = fc.gradient(f)
    th = np.random.default_rng(28).standard_normal((2,) + tuple(f.batch_shape) + (f.dim,))
    assert fresh and np.array_equal(host(grad(th)), host(f.grad(th)))


def test_points_are_checked_as_before():
    f, _ = _data("multinomial", 10)
    bad = np.zeros((5, f.dim))
    bad[1, 2] = np.nan
    for call in (
        lambda t: f.grad(t),
        lambda t: f.hvp(t, np.zeros((5, f.dim))),
        lambda t: f.hvp(np.zeros((5, f.dim)), t),
    ):
        with pytest.raises(ValueError, match="must be finite"):
            call(bad)
        with pytest.raises(ValueError, match=r"shape \(\.\.\., d\)"):
            call(np.zeros((5, f.dim + 1)))
    theta = np.ones((5, f.dim))
    f.grad(theta)
    assert np.all(theta == 1)  # read, never written


# --------------------------------------------------------------------------- mini-batches
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("ragged", [False, True], ids=["padded", "ragged"])
@pytest.mark.parametrize("replace", [False, True], ids=["without", "with-replacement"])
def test_gathered_minibatch_is_the_weighted_objective(model, ragged, replace):
    f, _ = _data(model, 11, ragged=ragged, n=9)
    counts = fmb.sample_counts(np.random.default_rng(12), f, (2,), 2, replace=replace)
    fb, fw = fc.batched_objective(f, counts), f.with_weights(counts)  # new, old
    assert isinstance(fb, _cls(model)) and fb.batch_shape == fw.batch_shape == (2, 5)
    assert fb.X.shape[-2] <= 2 < (f.X.shape[-2])
    th = np.random.default_rng(13).standard_normal((2, 5, f.dim))
    v = np.random.default_rng(14).standard_normal((2, 5, f.dim))
    assert_close(fb.grad(th), _old_grad(fw, th))
    assert_close(fb.value(th), fw.value(th))
    assert_close(fb.hvp(th, v), Objective.hvp(fw, th, v), factor=2)
    assert_close(fb.smoothness(), fw.smoothness())
    assert_close(fb.prox(th, 2.0), fw.prox(th, 2.0))


def test_gathered_objective_shares_no_cache_with_its_source():
    f, _ = _data("multinomial", 15)
    f.smoothness(), f._rownorm, f._Yt  # caches of all the samples
    fb = fc.gathered(f, np.zeros((5, 3), dtype=int))  # three copies of each client's first row
    ref = mo.Multinomial(
        host(f.X)[:, :1].repeat(3, axis=1), host(f.y)[:, :1].repeat(3, axis=1), n_classes=4, mu=host(f.mu)
    )
    assert_close(fb.smoothness(), ref.smoothness())
    assert_close(fb._rownorm, ref._rownorm)
    th = np.random.default_rng(16).standard_normal((5, f.dim))
    assert_close(fb.grad(th), ref.grad(th))


def test_in_place_steps_never_write_an_objectives_own_array():
    class Cached(mo.Quadratic):  # a user objective whose gradient is an array it keeps
        def grad(self, theta):
            return self._g

    A = np.broadcast_to(np.eye(2), (3, 2, 2))
    q = Cached(A, np.zeros((3, 2)))
    q._g = np.ones((3, 2))
    fl.fedavg(q, eta=0.1, tau=2, rounds=2)
    fl.gd(q, eta=0.1, steps=2)
    fl.fedprox(q, lam=1.0, gamma=0.5, eta=0.1, K=2, rounds=1)
    fl.pfedme(q, lam=1.0, eta=0.1, beta=1.0, R=1, rounds=1, inner=2, personal="none")
    assert np.all(q._g == 1)


# --------------------------------------------------------------------------- the algorithms
def _runs(f, seed):
    kw = {"rounds": 2}
    return {
        "fedavg": fl.fedavg(f, eta=0.3, tau=2, **kw).w_local[-1],
        "fedavg-B": fl.fedavg(f, eta=0.3, tau=2, S=3, batch_size=2, rng=seed, **kw).w_local[-1],
        "fedprox": fl.fedprox(f, lam=1.0, gamma=0.5, eta=0.2, K=2, **kw).w_local[-1],
        "pfedme-exact": fl.pfedme(f, lam=2.0, eta=0.1, beta=1.0, R=2, personal="none", **kw).w_local[-1],
        "pfedme-K": fl.pfedme(
            f, lam=2.0, eta=0.1, beta=1.0, R=2, batch_size=3, inner=3, rng=seed, personal="inner", **kw
        ).theta[-1],
        "per-fedavg": fl.per_fedavg(
            f, alpha=0.1, beta=0.2, tau=2, D=3, D_prime=3, D_second=2, rng=seed, **kw
        ).w_local[-1],
    }


def _old_paths(monkeypatch):
    """The code paths before issue 19: the plain gradients, hess @ v, with_weights mini-batches."""
    monkeypatch.setattr(mo.Multinomial, "grad", lambda self, t: self._grad_plain(t))
    monkeypatch.setattr(mo.Multinomial, "hvp", Objective.hvp)
    monkeypatch.setattr(mo.Logistic, "grad", lambda self, t: self._value_grad(t)[1])
    monkeypatch.setattr(mo.Logistic, "hvp", Objective.hvp)

    def weighted(f, counts):
        return f.with_weights(f.xp.asarray(counts, dtype=f.dtype))

    def rows(f, idx, weights=None):  # the drawn rows as counts (the same function)
        n = f.weights.shape[-1]
        full = np.broadcast_shapes(idx.shape[:-1], f.batch_shape)
        flat = np.broadcast_to(idx, full + idx.shape[-1:]).reshape(-1, idx.shape[-1])
        counts = np.stack([np.bincount(r, minlength=n) for r in flat]).reshape(full + (n,)).astype(float)
        return weighted(f, counts)

    monkeypatch.setattr(
        fmb.MiniBatches,
        "objective",
        lambda self, rng, size, *, replace: weighted(
            self.f, self.counts(self.rows(rng, size, replace=replace))
        ),
    )
    monkeypatch.setattr(fpm, "batched_objective", weighted)
    monkeypatch.setattr(fpm, "gathered", rows)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("ragged", [False, True], ids=["padded", "ragged"])
def test_every_algorithm_gives_the_old_results(model, ragged, monkeypatch):
    f, _ = _data(model, 17, ragged=ragged, m=4, n=8, d=2, C=3)
    new = _runs(f, 18)
    with monkeypatch.context() as mp:
        _old_paths(mp)
        old = _runs(f, 18)
    for key in new:
        assert_close(new[key], old[key], factor=10, err_msg=key)  # iterates: rounding carried through steps


def _loop_fedavg(raw, C, model, w0, rng, *, eta, tau, rounds, B, n):
    """FedAvg per client: tau steps on B rows drawn without replacement (the documented draw:
    ``rng.random((m, n))`` keys, the B smallest among the rows of positive weight)."""
    m, w = len(raw), w0
    for _ in range(rounds):
        keys = [rng.random((m, n)) for _ in range(tau)]
        W = []
        for i, (Xi, yi, pi, mui) in enumerate(raw):
            th = w.copy()
            for k in range(tau):
                valid = np.zeros(n, bool)
                valid[: len(pi)] = pi > 0
                pick = np.argsort(np.where(valid, keys[k][i], np.inf))[:B]
                th = th - eta * _client_grad(model, C, Xi[pick], yi[pick], np.full(B, 1.0 / B), mui, th)
            W.append(th)
        w = np.mean(W, axis=0)
    return w


@pytest.mark.parametrize("model", MODELS)
def test_fedavg_minibatches_equal_a_per_client_loop(model):
    f, raw = _data(model, 19, m=4, n=10, d=3, C=3)
    h = fl.fedavg(f, eta=0.3, tau=3, rounds=2, batch_size=4, rng=20)
    ref = _loop_fedavg(
        raw, 3, model, np.zeros(f.dim), np.random.default_rng(20), eta=0.3, tau=3, rounds=2, B=4, n=10
    )
    assert_close(h.w_global[-1], ref, factor=10)


@pytest.mark.parametrize("model", MODELS)
def test_per_fedavg_equals_a_per_client_loop(model):
    """Hessian variant, D = D' = D'' = 3 rows drawn with replacement (``rng.random((m, 3))``, the
    k-th row of positive weight), Hessian-vector products from the dense per-client Hessian."""
    f, raw = _data(model, 21, m=4, n=10, d=3, C=3)
    a, b, tau = 0.2, 0.3, 2
    h = fl.per_fedavg(f, alpha=a, beta=b, tau=tau, rounds=2, D=3, D_prime=3, D_second=3, rng=22)
    rng, w, m = np.random.default_rng(22), np.zeros(f.dim), len(raw)
    for _ in range(2):
        draws = [rng.random((m, 3)) for _ in range(3 * tau)]
        W = []
        for i, (Xi, yi, pi, mui) in enumerate(raw):
            rows = np.flatnonzero(pi > 0)
            batch = [rows[np.minimum((u[i] * rows.size).astype(int), rows.size - 1)] for u in draws]
            th = w.copy()
            for k in range(tau):
                r1, r2, r3 = batch[3 * k : 3 * k + 3]
                g1 = _client_grad(model, 3, Xi[r1], yi[r1], np.full(3, 1 / 3), mui, th)
                g = _client_grad(model, 3, Xi[r2], yi[r2], np.full(3, 1 / 3), mui, th - a * g1)
                g = g - a * _client_hess(model, 3, Xi[r3], yi[r3], np.full(3, 1 / 3), mui, th) @ g
                th = th - b * g
            W.append(th)
        w = np.mean(W, axis=0)
    assert_close(h.w_global[-1], w, factor=10)


def test_minibatch_fedavg_on_array_api_strict():
    xs = pytest.importorskip("array_api_strict", reason="array-api-strict is not installed")
    f, _ = _data("multinomial", 23, m=4, n=8, C=3)
    fx = mo.Multinomial(
        xs.asarray(host(f.X)),
        xs.asarray(host(f.y)),
        n_classes=3,
        mu=xs.asarray(host(f.mu)),
        weights=xs.asarray(host(f.weights)),
    )
    kw = {"eta": 0.3, "tau": 2, "rounds": 2, "batch_size": 3, "rng": 24}
    got = fl.fedavg(fx, **kw).w_global[-1, ...]
    assert type(got) is type(xs.asarray(0.0))
    assert_close(np.asarray(got), fl.fedavg(f, **kw).w_global[-1])
