"""pFedMe / Per-FedAvg experiments of ``moreau reproduce`` in --quick mode."""
from __future__ import annotations

import csv

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="moreau reproduce draws with matplotlib (extra 'plots')")

from experiments import _sweep  # noqa: E402
from experiments.perfedavg_vs_pfedme import _maml_quadratic  # noqa: E402
from experiments.registry import get  # noqa: E402
from moreau import data, fl  # noqa: E402

pytestmark = pytest.mark.reproduce


def test_maml_objective_of_quadratics_is_the_composition():
    """f_i(w - alpha grad f_i(w)) evaluated directly equals the quadratic the experiment builds (up to a
    constant), and Per-FedAvg (exact Hessian, tau = 1) converges to its minimiser."""
    P = data.least_squares(3, m=4, n=20, d=3, R=0.5, mu=1.0, L=4.0)
    f, alpha = P.objective, 0.125
    q = _maml_quadratic(f, alpha)
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((2, 4, 3))
    direct = lambda w: np.asarray(f.value(w - alpha * np.asarray(f.grad(w))))  # noqa: E731
    np.testing.assert_allclose(direct(w1) - direct(w2), np.asarray(q.value(w1)) - np.asarray(q.value(w2)),
                               rtol=1e-12, atol=1e-12)
    w_star = np.asarray(fl.global_train(q))
    h = fl.per_fedavg(f, alpha=alpha, beta=0.1, tau=1, rounds=3000)
    np.testing.assert_allclose(np.asarray(h.w_global[-1]), w_star, rtol=0, atol=1e-9)


def test_perfedavg_vs_pfedme_quick(tmp_path):
    manifest = _sweep.run(get("perfedavg-vs-pfedme"), tmp_path, quick=True, workers=1)
    with open(tmp_path / "perfedavg-vs-pfedme.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    R = sorted({float(r["R"]) for r in rows})

    def gap(method):
        return np.array([np.mean([float(r["gap_to_client_optimum"]) for r in rows
                                  if r["method"] == method and float(r["R"]) == x]) for x in R])

    g = gap("GlobalTrain")
    assert np.all(np.diff(g) > 0)
    for method in ("pFedMe λ=15", "pFedMe λ=1", "Per-FedAvg α=1/(2L)"):
        assert np.all(gap(method) < g), method  # every personalised method is closer than one global model
    assert np.all(gap("pFedMe λ=1") < gap("pFedMe λ=15"))  # smaller lambda, more personalisation
    assert all(float(r["gap_to_client_optimum"]) == 0 for r in rows if r["method"] == "LocalTrain")
    claims = manifest["claims"]
    assert claims["pFedMe (lambda = 15) and Per-FedAvg personalise: gap below GlobalTrain's at every R"]["holds"]

