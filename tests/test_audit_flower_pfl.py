"""moreau audit of Per-FedAvg through both Flower adapters (flwr 1.42: the legacy
flwr.server.strategy interface and the message API), Flower's own FedAvg strategy with an
independent Per-FedAvg client (tests/_audit_flower_pfl_impls.py): faithful clients match, each
deviant one is diagnosed as its deviation; PerMFL and pFL^MF, whose rounds do not fit a strategy,
are one-line errors naming the algorithm and the adapter."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr.serverapp.strategy", reason="the Flower adapters need flwr (the audit extra)")

import _audit_flower_pfl_impls as F  # noqa: E402  (after the importorskip: it imports flwr)
from flwr.server.strategy import FedAvg  # noqa: E402
from flwr.serverapp.strategy import FedAvg as MsgFedAvg  # noqa: E402

from moreau import audit as A  # noqa: E402


def _legacy(fraction=1.0, **dev):
    st = FedAvg(fraction_fit=fraction, min_fit_clients=2, min_available_clients=2)
    return lambda **kw: A.audit_flower(st, lambda c: F.PerFedAvgClient(c, **dev), "perfedavg", **kw)


def _messages(**dev):
    return lambda **kw: A.audit_flower_messages(
        MsgFedAvg(), lambda c: F.per_fedavg_app(c, **dev), "perfedavg", **kw
    )


FAITHFUL = [  # (runner, audit kwargs)
    (_legacy(), {}),
    (_legacy(), {"family": "logistic"}),
    (_legacy(0.6), {"hyper": {"S": 3}}),
    (_messages(), {}),
    (_messages(), {"family": "logistic"}),
]


@pytest.mark.parametrize(
    ("run", "kw"), FAITHFUL, ids=["legacy", "legacy-logistic", "legacy-S3", "messages", "messages-logistic"]
)
def test_flower_per_fedavg_with_a_faithful_client_matches(run, kw):
    r = run(rounds=10, **kw)
    assert r.matches and r.exit_code == 0 and r.fits == () and r.dtype == "float64", str(r)
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))


@pytest.mark.parametrize("run", [_legacy(f32=True), _messages(f32=True)], ids=["legacy", "messages"])
def test_a_float32_flower_per_fedavg_client_matches_to_float32_rounding_only(run):
    r = run(rounds=10)
    assert r.matches and r.dtype == "float32", str(r)
    assert 1e3 * np.finfo(float).eps < np.max(r.distance) <= 1e-5  # really float32 arithmetic


def _n(c):
    return c.n


CASES = [  # (adapter, runner, audit kwargs, deviation)
    ("legacy", _legacy(first_order=True), {}, "first_order"),
    ("legacy", _legacy(hessian_factor=2.0), {}, "hessian_doubled"),
    ("legacy", _legacy(alpha_is_beta=True), {}, "alpha_bound_to_beta"),
    ("legacy", _legacy(reported=_n), {}, "weights_by_samples"),  # Flower's FedAvg averages by num_examples
    ("legacy", _legacy(0.6, first_order=True), {"hyper": {"S": 3}}, "first_order"),
    ("messages", _messages(first_order=True), {}, "first_order"),
    ("messages", _messages(hessian_factor=2.0), {}, "hessian_doubled"),
    ("messages", _messages(reported=_n), {}, "weights_by_samples"),
]


@pytest.mark.parametrize(
    ("adapter", "run", "kw", "name"), CASES, ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)]
)
def test_each_flower_per_fedavg_deviation_is_diagnosed(adapter, run, kw, name):
    r = run(rounds=10, pairs=False, **kw)
    assert not r.matches and r.exit_code == 1
    assert r.diagnosis is not None and r.diagnosis.names == (name,), str(r)


def test_an_unknown_algorithm_is_a_one_line_error_through_both():
    # every algorithm moreau audits runs through both Flower adapters (test_audit_flower_more.py)
    with pytest.raises(ValueError, match="algorithm must be one of") as e:
        A.audit_flower(FedAvg(), F.PerFedAvgClient, "fedsgd", rounds=2)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="algorithm must be one of") as e:
        A.audit_flower_messages(MsgFedAvg(), F.per_fedavg_app, "fedsgd", rounds=2)
    assert "\n" not in str(e.value)
