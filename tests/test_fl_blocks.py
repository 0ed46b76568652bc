"""Full-batch local steps block of clients by block of clients (``moreau.fl._blocks``) give the
iterates of the whole batch at once, bit for bit: FedAvg, FedProx and local gradient descent on
least squares and logistic models, with a trials axis, data shared by the clients, sample
weights, per-client mu, float32 and client sampling; a block's gradient is the rows of the batch's
gradient; the block size follows the data; divergence is still reported with its round and step.
Softmax clients (padded and ragged) run in groups of similar size on transposed copies of their
samples: the same iterates as a plain per-client loop written here and as the whole batch, to
rounding (100 eps: the products read the samples in another layout and length).
No timing here: the speed is measured by ``benchmarks/bench_fl.py`` (RESULTS.md sections 10, 11)."""

from __future__ import annotations

import numpy as np
import pytest
from _tol import assert_close

import moreau as mo
import moreau.fl._blocks as fb
from moreau import fl

MODELS = {"least_squares": mo.LeastSquares, "logistic": mo.Logistic, "multinomial": mo.Multinomial}
BLOCKED = ["least_squares", "logistic"]  # bit for bit; the softmax groups are tested at the end


def _objective(model, *, trials=(), m=13, n=9, d=4, C=3, shared=False, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d) if shared else trials + (m, n, d)).astype(dtype)
    shape = trials + (m, n)
    y = {
        "least_squares": lambda: rng.standard_normal(shape),
        "logistic": lambda: rng.choice([-1.0, 1.0], shape),
        "multinomial": lambda: rng.integers(0, C, shape),
    }[model]()
    w = np.where(rng.random(shape) < 0.3, 0.0, rng.random(shape) + 0.5)
    w[..., :2] = 1.0
    opts = {"n_classes": C} if model == "multinomial" else {}
    return MODELS[model](X, y, mu=rng.random(m) * 0.3 + 0.05, weights=w, **opts)


def _runs(f):
    """Every full-batch algorithm that runs its local steps through the blocks."""
    return {
        "fedavg": fl.fedavg(f, eta=0.3, tau=4, rounds=3).w_local,
        "fedavg-S": fl.fedavg(f, eta=0.3, tau=3, rounds=2, S=5, rng=7).w_local,
        "fedprox": fl.fedprox(f, lam=0.7, gamma=0.5, eta=0.25, K=4, rounds=3).w_local,
        "gd": fl.gd(f, eta=0.3, steps=5).w_local,
    }


@pytest.fixture
def blocks_of(monkeypatch):
    """Blocks of ``k`` clients whatever the data size."""

    def set_size(k):
        monkeypatch.setattr(fb, "CACHE_BYTES", 1)
        monkeypatch.setattr(fb, "MIN_CLIENTS", k)

    return set_size


CASES = [
    pytest.param({}, id="plain"),
    pytest.param({"trials": (2,)}, id="trials"),
    pytest.param({"shared": True}, id="shared-X"),
    pytest.param({"dtype": np.float32}, id="float32"),
]


@pytest.mark.parametrize("model", BLOCKED)
@pytest.mark.parametrize("case", CASES)
def test_blocks_give_the_whole_batchs_iterates_bit_for_bit(model, case, blocks_of):
    f = _objective(model, **case)
    whole = _runs(f)
    for k in (1, 4, 6):  # 13 clients: uneven last blocks
        blocks_of(k)
        assert len(fb.client_blocks(f)) == -(-13 // k)
        for name, W in _runs(f).items():
            assert W.dtype == whole[name].dtype and np.array_equal(W, whole[name]), (name, k)


@pytest.mark.parametrize("model", BLOCKED)
def test_a_blocks_gradient_is_the_rows_of_the_batchs(model, blocks_of):
    f = _objective(model, trials=(2,))
    th = np.random.default_rng(3).standard_normal((2, 13, f.dim))
    blocks_of(5)
    got = np.concatenate([g._grad(th[:, sl]) for sl, g in fb.client_blocks(f)], axis=1)
    assert np.array_equal(got, f.grad(th))


def test_the_block_size_follows_the_data(monkeypatch):
    """Blocks of about CACHE_BYTES of the data the gradient reads, at least MIN_CLIENTS clients;
    one block where the batch fits, for objectives whose gradient is not the built-in one, and for
    mini-batch objectives."""
    m, n, d = 200, 50, 20
    rng = np.random.default_rng(1)
    f = mo.Logistic(rng.standard_normal((m, n, d)), rng.choice([-1.0, 1.0], (m, n)))
    per_client = n * d * 8 + 2 * n * 8  # X, y and p*y of one client; mu is shared
    monkeypatch.setattr(fb, "CACHE_BYTES", 40 * per_client)
    blocks = fb.client_blocks(f)
    assert [b.stop - b.start for b, _ in blocks] == [40] * 5
    assert all(g.X.base is not None and np.shares_memory(g.X, f.X) for _, g in blocks)  # views, no copies
    monkeypatch.setattr(fb, "MIN_CLIENTS", 64)
    assert [b.stop - b.start for b, _ in fb.client_blocks(f)] == [64, 64, 64, 8]
    monkeypatch.setattr(fb, "CACHE_BYTES", m * per_client)
    assert len(fb.client_blocks(f)) == 1
    monkeypatch.setattr(fb, "CACHE_BYTES", 1)
    q = mo.Quadratic(np.broadcast_to(np.eye(d), (m, d, d)), np.ones((m, d)))
    s = _objective("multinomial", m=m)
    assert fb.client_blocks(q) == [(slice(None), q)] and fb.client_blocks(s) == [(slice(None), s)]


def test_a_block_holds_only_what_its_gradient_reads(blocks_of):
    """Anything else fails loudly on a block instead of seeing the whole batch."""
    f = _objective("logistic")
    f.smoothness()
    blocks_of(4)
    _, g = fb.client_blocks(f)[0]
    assert g.batch_shape == (4,)
    with pytest.raises(AttributeError):
        g.weights  # noqa: B018


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_divergence_is_reported_with_its_round_and_step(blocks_of):
    f = _objective("least_squares", m=40)
    L = float(np.max(f.smoothness()))
    blocks_of(8)
    with pytest.raises(ValueError, match=r"fedavg diverged: .* at round 1, local step \d+"):
        fl.fedavg(f, eta=1e3 / L, tau=200, rounds=1)
    with pytest.raises(ValueError, match=r"fedprox diverged: .* at round 1, local step \d+"):
        fl.fedprox(f, lam=1.0, gamma=0.5, eta=1e3 / L, K=200, rounds=1)


# --- softmax groups ----------------------------------------------------------------------------


def _softmax_clients(m=23, d=4, C=3, seed=5, weighted=True):
    """Per-client samples of lognormal-ish sizes 1..40: ``[(X_i, y_i, w_i)]``, ``mu`` ``(m,)``."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(np.floor(rng.lognormal(np.log(8), 1.0, m)).astype(int) + 1, 40)
    data = []
    for n in sizes:
        w = np.where(rng.random(n) < 0.3, 0.0, rng.random(n) + 0.5) if weighted else np.ones(n)
        w[0] = 1.0
        data.append((rng.standard_normal((n, d)), rng.integers(0, C, n), w))
    return data, rng.random(m) * 0.3 + 0.05, C


def _padded(data, mu, C):
    n = max(len(y) for _, y, _ in data)
    X = np.zeros((len(data), n, data[0][0].shape[1]))
    y, w = np.zeros((len(data), n)), np.zeros((len(data), n))
    for i, (Xi, yi, wi) in enumerate(data):
        X[i, : len(yi)], y[i, : len(yi)], w[i, : len(yi)] = Xi, yi, wi
    return mo.Multinomial(X, y, n_classes=C, mu=mu, weights=w)


def _ragged(data, mu, C):
    cat = [np.concatenate(a) for a in zip(*data, strict=True)]
    sizes = [len(y) for _, y, _ in data]
    return mo.ragged(mo.Multinomial, cat[0], cat[1], sizes, mu=mu, weights=cat[2], n_classes=C)


def _loop_grad(X, y, w, mu, theta, C):
    """The softmax loss's gradient of one client from its rows (plain formulas)."""
    W = theta.reshape(X.shape[1], C)
    Z = X @ W
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return (X.T @ ((w / w.sum())[:, None] * (P - np.eye(C)[y]))).reshape(-1) + mu * theta


def _loop(data, mu, C, algo, rounds, K, eta, lam=0.7, gamma=0.5):
    """FedAvg (w_global), FedProx (w_local) or gd (w_local) client by client, from 0."""
    D = data[0][0].shape[1] * C
    w, W = np.zeros(D), np.zeros((len(data), D))
    for _ in range(rounds):
        start = W if algo == "fedprox" else np.broadcast_to(w, W.shape)
        W = W.copy()
        for i, (X, y, wi) in enumerate(data):
            v = start[i].copy()
            for _ in range(K):
                g = _loop_grad(X, y, wi, mu[i], v, C)
                v = v - eta * (g + lam * (v - w) if algo == "fedprox" else g)
            W[i] = v
        if algo == "fedprox":
            w = w - gamma * lam * np.mean(w - W, axis=0)
        else:
            w = W.mean(axis=0)
    return w if algo == "fedavg" else W


def _algos(f):
    return {
        "fedavg": fl.fedavg(f, eta=0.4, tau=4, rounds=3).w_global[-1],
        "fedprox": fl.fedprox(f, lam=0.7, gamma=0.5, eta=0.3, K=4, rounds=3).w_local[-1],
        "gd": fl.gd(f, eta=0.4, steps=5).w_local[-1],
    }


def _no_groups(monkeypatch):
    monkeypatch.setattr(fb, "_softmax_groups", lambda f: None)


@pytest.mark.parametrize("layout", ["padded", "ragged"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_softmax_groups_give_the_per_client_loops_iterates(layout, weighted, blocks_of, monkeypatch):
    data, mu, C = _softmax_clients(weighted=weighted)
    f = (_padded if layout == "padded" else _ragged)(data, mu, C)
    monkeypatch.setattr(fb, "SOFTMAX_BYTES", 1)
    for k in (1, 5):
        blocks_of(k)
        groups = fb.client_blocks(f)
        assert len(groups) >= -(-23 // k) and all(type(g).__name__ == "_SoftmaxGroup" for _, g in groups)
        got = _algos(f)
        want = {
            "fedavg": _loop(data, mu, C, "fedavg", 3, 4, 0.4),
            "fedprox": _loop(data, mu, C, "fedprox", 3, 4, 0.3),
            "gd": _loop(data, mu, C, "gd", 1, 5, 0.4),
        }
        for name in want:
            assert_close(got[name], want[name], factor=10, err_msg=f"{name}, groups of {k}")
    with monkeypatch.context() as mp:
        _no_groups(mp)
        whole = _algos(f)
    for name in whole:  # the whole batch's iterates, to rounding
        assert_close(got[name], whole[name], err_msg=name)


def test_softmax_groups_partition_the_clients_by_size(blocks_of, monkeypatch):
    """Every client in exactly one group, of one size bucket, cut to its largest client's last
    weighted sample; the group's samples are the client's rows, transposed; groups of at most
    SOFTMAX_BYTES of samples unless they hold MIN_CLIENTS clients."""
    data, mu, C = _softmax_clients(m=40)
    f = _ragged(data, mu, C)
    monkeypatch.setattr(fb, "SOFTMAX_BYTES", 12 * 4 * 8 * 4)  # about 4 clients of 12 samples
    blocks_of(2)
    groups = fb.client_blocks(f)
    idx = np.concatenate([i for i, _ in groups])
    assert np.array_equal(np.sort(idx), np.arange(40))
    bucket = np.empty(40, dtype=int)
    for b, (members, _) in enumerate(f.layout.buckets):
        bucket[members] = b
    for i, g in groups:
        assert len(set(bucket[i])) == 1
        last = [int(np.flatnonzero(data[j][2] > 0)[-1]) + 1 for j in i]
        n_g = g.X.shape[-2]
        assert n_g == max(last)
        assert len(i) <= 2 or len(i) * n_g * 4 * 8 <= fb.SOFTMAX_BYTES
        for k, j in enumerate(i):
            n = min(n_g, len(data[j][1]))
            assert np.array_equal(g.X[k, :n], data[j][0][:n]) and not np.any(g.X[k, n:])
            assert np.array_equal(g._ypos[k, :n] // n_g, data[j][1][:n])  # label c at c n_g + row
            assert_close(g._p[k, :n], data[j][2][:n] / data[j][2].sum())


def test_softmax_group_gradient_equals_the_models(blocks_of, monkeypatch):
    """At the group's own points (g, D) and at points with a leading sweep axis (the model's
    gradient on the group's samples): the rows of the whole batch's gradient, to rounding."""
    data, mu, C = _softmax_clients()
    f = _padded(data, mu, C)
    monkeypatch.setattr(fb, "SOFTMAX_BYTES", 1)
    blocks_of(4)
    th = np.random.default_rng(2).standard_normal((2, 23, f.dim))
    want = f.grad(th)
    for i, g in fb.client_blocks(f):
        assert_close(g._grad(th[0, i]), want[0, i])
        assert_close(g._grad(th[:, i]), want[:, i])


def test_softmax_groups_with_a_step_size_sweep_equal_separate_runs(blocks_of, monkeypatch):
    data, mu, C = _softmax_clients()
    f = _ragged(data, mu, C)
    monkeypatch.setattr(fb, "SOFTMAX_BYTES", 1)
    blocks_of(4)
    h = fl.fedavg(f, eta=np.array([0.2, 0.4]), tau=3, rounds=2).w_global
    for k, eta in enumerate((0.2, 0.4)):
        assert_close(h[:, k], fl.fedavg(f, eta=eta, tau=3, rounds=2).w_global)


def test_softmax_groups_only_where_they_apply(monkeypatch):
    """One group for the whole batch, a trials axis, data shared by the clients, or a batch in cache
    with less than a tenth of its padded samples to cut: the whole batch."""
    monkeypatch.setattr(fb, "SOFTMAX_BYTES", 1)
    monkeypatch.setattr(fb, "MIN_CLIENTS", 100)
    s = _objective("multinomial", m=30)
    assert fb.client_blocks(s) == [(slice(None), s)]
    monkeypatch.setattr(fb, "MIN_CLIENTS", 1)
    for f in (_objective("multinomial", trials=(2,)), _objective("multinomial", shared=True)):
        assert fb.client_blocks(f) == [(slice(None), f)]
    s = _objective("multinomial", n=9)
    w = np.ones((13, 9))
    w[:, -3:] = 0.0  # a third of every client's rows cut: groups even where the batch fits in cache
    cut = mo.Multinomial(s.X, s.y, n_classes=3, mu=s.mu, weights=w)
    assert len(fb.client_blocks(cut)) == 13 and all(g.X.shape[-2] == 6 for _, g in fb.client_blocks(cut))
    assert fb.client_blocks(s) == [(slice(None), s)]  # little to cut (random zero weights), in cache
    monkeypatch.setattr(fb, "CACHE_BYTES", 1)
    assert len(fb.client_blocks(s)) == 13
