"""moreau.fl on ragged objectives (issue 19): a few rounds of every algorithm and the exact optima,
ragged against the padded layout of the same samples (same draws, same results to 1e-12), and the
ragged ``moreau.data.synthetic`` against ``ragged=False``."""

from __future__ import annotations

import numpy as np
import pytest
from _tol import host
from test_ragged import MODELS, both, close

import moreau as mo
from moreau import fl


def _runs(f, L):
    """A few rounds of each algorithm; every randomness from a fixed seed."""
    eta = 0.5 / L
    return {
        "gd": fl.gd(f, eta=eta, steps=3).w_local,
        "fedavg": fl.fedavg(f, eta=eta, tau=3, rounds=3).w_global,
        "fedavg S, batches, eta sweep": fl.fedavg(
            f, eta=np.array([[eta], [eta / 2]]), tau=2, rounds=2, S=3, batch_size=2, rng=1
        ).w_local,
        "fedprox": fl.fedprox(f, lam=1.0, gamma=0.5, eta=eta, K=3, rounds=3).w_global,
        "pfedme exact": fl.pfedme(f, lam=2.0, eta=0.2, beta=1.0, R=2, rounds=2).theta,
        "pfedme batches, inner K": fl.pfedme(
            f,
            lam=2.0,
            eta=0.2,
            beta=1.5,
            R=2,
            rounds=2,
            S=3,
            batch_size=3,
            inner=3,
            inner_eta="client",
            rng=2,
            personal="inner",
        ).theta,
        "per_fedavg hessian": fl.per_fedavg(
            f, alpha=0.01, beta=eta, tau=2, rounds=2, D=2, D_prime=2, D_second=2, rng=3
        ).w_global,
        "fedprox_optimum": fl.fedprox_optimum(f, 1.5)[1],
        "global_train": fl.global_train(f),
        "local_train": fl.local_train(f),
    }


@pytest.mark.parametrize("name", MODELS)
def test_rounds_equal_padded(name):
    f, g, _ = both(name, seed=20)
    L = float(np.max(host(g.smoothness())))
    got, want = _runs(f, L), _runs(g, L)
    for k in want:
        close(got[k], want[k])


@pytest.mark.parametrize("name", ["logistic", "least_squares"])
def test_fedprox_optimum_certificate(name):
    f, g, _ = both(name, seed=21)
    wr, lr, ir = fl.fedprox_optimum(f, 2.0, return_info=True)
    wp, lp, ip = fl.fedprox_optimum(g, 2.0, return_info=True)
    close(wr, wp)
    close(lr, lp)
    # both certified: the two answers lie within the sum of their bounds
    assert np.all(np.linalg.norm(host(wr) - host(wp), axis=-1) <= ir.error_bound + ip.error_bound)
    assert np.all(ir.error_bound <= ip.error_bound * (1 + 1e-9))  # bucket n in the prox bounds: never looser


def test_synthetic_ragged_equals_padded():
    kw = dict(n_clients=8, d=4, n_classes=3, size_scale=3, trials=2)
    r, p = mo.data.synthetic(0.5, 0.5, 4, **kw), mo.data.synthetic(0.5, 0.5, 4, ragged=False, **kw)
    assert isinstance(r.objective, mo.RaggedMultinomial) and type(p.objective) is mo.Multinomial
    for a, b in ((r.objective, p.objective), (r.test, p.test)):
        assert a.batch_shape == b.batch_shape == (2, 8)
        for k in ("X", "y", "weights"):  # the padded view is the padded data, bit for bit
            assert np.array_equal(host(getattr(a, k)), host(getattr(b, k))), k
        lay = a.layout
        assert lay.slots <= 2 * lay.sizes.sum() < lay.n_max * lay.N  # held: <= ratio x the samples
    close(r.constants["L"], p.constants["L"])
    for k in ("n_train", "n_test"):
        assert np.array_equal(r.constants[k], p.constants[k])
    assert np.array_equal(r.w_star, p.w_star)
    f, g = r.objective, p.objective
    W = np.random.default_rng(0).standard_normal((2, 8, f.dim))
    close(f.value(W), g.value(W))
    close(
        fl.fedavg(f, eta=0.05, tau=3, rounds=2, S=4, batch_size=5, rng=0).w_global,
        fl.fedavg(g, eta=0.05, tau=3, rounds=2, S=4, batch_size=5, rng=0).w_global,
    )
    # one trial alone reproduces its slice of the batched call
    one = mo.data.synthetic(0.5, 0.5, mo.data.trial_rngs(4, 2)[1], **dict(kw, trials=()))
    close(one.objective.value(W[1]), f.value(W)[1])
