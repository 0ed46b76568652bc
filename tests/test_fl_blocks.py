"""Full-batch local steps block of clients by block of clients (``moreau.fl._blocks``) give the
iterates of the whole batch at once, bit for bit: FedAvg, FedProx and local gradient descent on
least squares and logistic models, with a trials axis, data shared by the clients, sample
weights, per-client mu, float32 and client sampling; a block's gradient is the rows of the batch's
gradient; the block size follows the data; divergence is still reported with its round and step.
No timing here: the speed is measured by ``benchmarks/bench_fl.py`` (RESULTS.md section 10)."""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
import moreau.fl._blocks as fb
from moreau import fl

MODELS = {"least_squares": mo.LeastSquares, "logistic": mo.Logistic, "multinomial": mo.Multinomial}
BLOCKED = ["least_squares", "logistic"]  # the softmax model runs as one block (compute-bound: no gain)


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
