"""moreau.fl: bad arguments raise a clear ValueError / TypeError naming the argument and value."""

import numpy as np
import pytest
from _fl_helpers import least_squares

import moreau as mo
from moreau import fl

_, F = least_squares(0)  # batch (2, 4), d = 3
Q = mo.Quadratic(F.A, F.b)  # no samples: no mini-batches
OK = {
    "fedprox": dict(lam=1.0, gamma=0.5, eta=0.1, K=2, rounds=2),
    "pfedme": dict(lam=1.0, eta=0.1, beta=1.0, R=2, rounds=2),
    "fedavg": dict(eta=0.1, tau=2, rounds=2),
    "per_fedavg": dict(alpha=0.1, beta=0.1, tau=2, rounds=2),
    "gd": dict(eta=0.1, steps=2),
}


def _case(name, algo, exc, match, objective=F, **bad):
    return pytest.param(algo, objective, {**OK[algo], **bad}, exc, match, id=f"{algo}: {name}")


CASES = [
    _case("lam = 0", "fedprox", ValueError, r"lam must be finite and > 0 \(got 0\)", lam=0.0),
    _case("lam < 0", "pfedme", ValueError, r"lam must be finite and > 0 \(got -1\)", lam=-1.0),
    _case("lam array <= 0", "fedprox", ValueError, r"lam must be > 0 \(got -2\)", lam=np.array([1.0, -2.0])),
    _case("lam shape", "fedprox", ValueError, "must broadcast against the trial shape", lam=np.ones(3)),
    _case("gamma = 0", "fedprox", ValueError, "gamma must be finite and > 0", gamma=0.0),
    _case("eta < 0", "fedprox", ValueError, "eta must be finite and > 0", eta=-0.1),
    _case("eta nan", "fedavg", ValueError, "eta must be finite", eta=float("nan")),
    _case("eta = 0", "gd", ValueError, "eta must be finite and > 0", eta=0.0),
    _case("beta = 0", "pfedme", ValueError, "beta must be finite and > 0", beta=0.0),
    _case("beta < 0", "per_fedavg", ValueError, "beta must be finite and > 0", beta=-1.0),
    _case("alpha < 0", "per_fedavg", ValueError, "alpha must be finite and >= 0", alpha=-0.1),
    _case("K = 0", "fedprox", ValueError, r"K must be >= 1 \(got 0\)", K=0),
    _case("K float", "fedprox", TypeError, "K must be an integer", K=2.0),
    _case("K bool", "fedprox", TypeError, "K must be an integer", K=True),
    _case("R = 0", "pfedme", ValueError, "R must be >= 1", R=0),
    _case("tau = 0", "fedavg", ValueError, "tau must be >= 1", tau=0),
    _case("rounds = 0", "per_fedavg", ValueError, "rounds must be >= 1", rounds=0),
    _case("steps = 0", "gd", ValueError, "steps must be >= 1", steps=0),
    _case("S > N", "fedavg", ValueError, r"S must be <= N = 4 clients \(got 5\)", S=5, rng=0),
    _case("S > N", "pfedme", ValueError, r"S must be <= N = 4 clients \(got 9\)", S=9, rng=0),
    _case("S > N", "per_fedavg", ValueError, r"S must be <= N = 4 clients \(got 5\)", S=5, rng=0),
    _case("S = 0", "fedavg", ValueError, "S must be >= 1", S=0, rng=0),
    _case(
        "weights wrong m",
        "fedprox",
        ValueError,
        r"weights must have shape \(..., m\) with m=4",
        weights=np.ones(3),
    ),
    _case("weights wrong m", "fedavg", ValueError, "with m=4 clients", weights=np.ones(5)),
    _case("weights negative", "fedavg", ValueError, "weights must be >= 0", weights=-np.ones(4)),
    _case("w0 wrong d", "fedprox", ValueError, r"w0 must have shape \(..., d\) with d=3", w0=np.zeros(4)),
    _case(
        "local0 wrong m",
        "fedprox",
        ValueError,
        r"local0 must broadcast to \(\*trials, m, d\)",
        local0=np.zeros((2, 5, 3)),
    ),
    _case(
        "w0 wrong trials", "pfedme", ValueError, r"w0 must broadcast to \(\*trials, d\)", w0=np.zeros((3, 3))
    ),
    _case("no rng with S < N", "fedavg", ValueError, "rng is required", S=2),
    _case("no rng with mini-batches", "pfedme", ValueError, "rng is required", batch_size=2),
    _case(
        "rng of a wrong type", "fedavg", TypeError, "rng must be a numpy.random.Generator", S=2, rng="seed"
    ),
    _case("batch_size = 0", "fedavg", ValueError, "batch_size must be >= 1", batch_size=0, rng=0),
    _case(
        "batch_size > samples", "fedavg", ValueError, "exceeds the number of samples", batch_size=50, rng=0
    ),
    _case(
        "mini-batches without samples", "fedavg", TypeError, "with_weights", objective=Q, batch_size=2, rng=0
    ),
    _case("inner bad string", "pfedme", ValueError, "inner must be 'exact' or an int", inner="newton"),
    _case("inner = 0", "pfedme", ValueError, "inner must be >= 1", inner=0),
    _case("nu with exact inner", "pfedme", TypeError, "nu applies only", nu=1e-6),
    _case("inner_eta with exact inner", "pfedme", TypeError, "inner_eta applies only", inner_eta=0.1),
    _case("nu <= 0", "pfedme", ValueError, "nu must be finite and > 0", inner=3, nu=0.0),
    _case("variant", "per_fedavg", ValueError, "variant must be one of", variant="second_order"),
    _case("HF without delta", "per_fedavg", ValueError, "needs delta > 0", variant="hessian_free"),
    _case("delta with the Hessian", "per_fedavg", TypeError, "delta applies only", delta=0.1),
    _case(
        "D'' with FO",
        "per_fedavg",
        TypeError,
        "D_second applies only",
        variant="first_order",
        D_second=2,
        rng=0,
    ),
    _case("D = 0", "per_fedavg", ValueError, "D must be >= 1", D=0, rng=0),
    _case("not an objective", "fedprox", TypeError, "moreau Objective", objective=np.eye(3)),
    _case(
        "no client axis", "pfedme", ValueError, "client axis", objective=mo.Quadratic(np.eye(3), np.ones(3))
    ),
]


@pytest.mark.parametrize("algo, objective, kwargs, exc, match", CASES)
def test_bad_arguments(algo, objective, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        getattr(fl, algo)(objective, **kwargs)


def test_good_arguments_of_the_table_run():
    """The table's base arguments are valid: each error comes from the one bad argument."""
    for algo, kw in OK.items():
        getattr(fl, algo)(F, **kw)
