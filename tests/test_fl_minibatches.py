"""Mini-batch draws in bounded memory: the keys of a draw without replacement formed a chunk of
clients at a time give the rows of one draw of ``(*lead, m, n_max)`` (the same stream), and a
ragged objective's padded weights (``m x n_max``) are never formed."""

from __future__ import annotations

import numpy as np
import pytest

import moreau as mo
import moreau.fl._minibatches as fmb
from moreau import fl
from moreau._ragged_samples import RaggedSamples


def _ragged(seed=0, m=9, d=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 40, m)
    X = rng.standard_normal((int(sizes.sum()), d))
    return mo.ragged(mo.Logistic, X, rng.choice([-1.0, 1.0], len(X)), sizes)


def _padded(seed=0, zeros_inside=False, trials=(2,)):
    rng = np.random.default_rng(seed)
    w = np.ones(trials + (7, 12))
    w[..., 9:] = 0.0  # padding after the samples
    if zeros_inside:
        w[..., 1, 3] = 0.0  # a zero weight inside a client
    return mo.Logistic(
        rng.standard_normal(trials + (7, 12, 3)), rng.choice([-1.0, 1.0], trials + (7, 12)), weights=w
    )


@pytest.mark.parametrize(
    "make",
    [_ragged, _padded, lambda: _padded(zeros_inside=True)],
    ids=["ragged", "padded", "zero-weight-inside"],
)
@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
def test_chunked_keys_give_the_rows_of_one_draw(make, replace, monkeypatch):
    f = make()
    lead = tuple(f.batch_shape[:-1])
    one = fmb.MiniBatches(f, lead).rows(np.random.default_rng(5), 4, replace=replace)
    monkeypatch.setattr(fmb, "CHUNK_BYTES", 1)  # one client per chunk
    b = fmb.MiniBatches(f, lead)
    chunked = b.rows(np.random.default_rng(5), 4, replace=replace)
    assert np.array_equal(one, chunked)
    # and the rows are samples of positive weight (read from the weights themselves), distinct without replacement
    valid = np.broadcast_to(np.asarray(f.weights) > 0, lead + tuple(f.batch_shape[-1:]) + (b.shape[-1],))
    assert np.take_along_axis(valid, chunked, axis=-1).all()
    if not replace:
        assert all(len(set(r)) == 4 for r in chunked.reshape(-1, 4))


def test_the_one_draw_is_the_documented_one():
    """Without replacement: the 4 smallest of one draw rng.random((*lead, m, n)) among valid samples."""
    f = _padded(zeros_inside=True)
    lead = tuple(f.batch_shape[:-1])
    got = fmb.MiniBatches(f, lead).rows(np.random.default_rng(3), 4, replace=False)
    keys = np.random.default_rng(3).random(lead + (7, 12))
    keys[np.asarray(f.weights) <= 0] = np.inf
    assert np.array_equal(got, np.sort(np.argsort(keys, axis=-1, kind="stable")[..., :4], axis=-1))


def test_a_ragged_objectives_padded_weights_are_never_formed(monkeypatch):
    f = _ragged()
    ref = fl.fedavg(f, eta=0.1, tau=2, rounds=2, batch_size=3, rng=1).w_global

    def refuse(self):
        raise AssertionError("the padded weights (m x n_max) were formed")

    monkeypatch.setattr(RaggedSamples, "weights", property(refuse))
    monkeypatch.setattr(fmb, "CHUNK_BYTES", 64)
    got = fl.fedavg(f, eta=0.1, tau=2, rounds=2, batch_size=3, rng=1).w_global
    assert np.array_equal(np.asarray(got), np.asarray(ref))
