"""moreau audit's adapter for Flower's message-based API (flwr 1.42: flwr.serverapp.strategy,
ClientApp): Flower's own FedAvg and FedProx strategies driven in process through configure_train /
aggregate_train and an in-memory Grid, with an independent ClientApp doing local gradient descent
(tests/_audit_flower_msg_impls.py).  Flower's FedProx only sends proximal-mu: the proximal term
audited is our client's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr.serverapp.strategy", reason="the message adapter needs flwr (the audit extra)")

from _audit_flower_msg_impls import gd_app  # noqa: E402  (after the importorskip: it imports flwr)
from flwr.serverapp.strategy import FedAvg, FedProx  # noqa: E402

from moreau import audit as A  # noqa: E402


@pytest.mark.parametrize("family", A.FAMILIES)
def test_flower_message_fedavg_is_fedavg_with_weights_by_sample_counts(family):
    # Flower's FedAvg averages by the reported num-examples: the paper's FedAvg when p_i = n_i / sum n_j
    r = A.audit_flower_messages(FedAvg(), gd_app, "fedavg", family=family, weights="samples", rounds=12)
    assert r.matches and r.fits == (), str(r)
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))


def test_flower_message_fedavg_on_uniform_p_is_weights_by_samples_and_a_hidden_l2_is_fitted():
    r = A.audit_flower_messages(FedAvg(), gd_app, "fedavg", rounds=12)
    assert r.diagnosis is not None and r.diagnosis.names == ("weights_by_samples",), str(r)
    r = A.audit_flower_messages(
        FedAvg(), lambda c: gd_app(c, l2=1e-3), "fedavg", weights="samples", rounds=12
    )
    d = r.diagnosis
    assert d is not None and d.names == ("extra_l2",) and d.params["mu"] == pytest.approx(1e-3, rel=1e-6)


def test_flower_message_fedprox_audits_the_server_and_our_client():
    # warm-started client state in the node's Context: Algorithm 1 of the FedProx analysis
    warm = lambda c: gd_app(c, warm=True)  # noqa: E731
    st = FedProx(proximal_mu=1.0)
    r = A.audit_flower_messages(st, warm, "fedprox", weights="samples", hyper={"gamma": 1.0}, rounds=12)
    assert r.matches, str(r)
    # the usual client (starts from the received model): Li et al.'s FedProx, reset each round
    r = A.audit_flower_messages(st, gd_app, "fedprox", weights="samples", hyper={"gamma": 1.0}, rounds=12)
    assert r.diagnosis is not None and r.diagnosis.names == ("reset_clients",), str(r)
    # mu is the strategy's: a client reading it from the config with another lam parts
    r = A.audit_flower_messages(
        FedProx(proximal_mu=0.5), warm, "fedprox", weights="samples", hyper={"gamma": 1.0}
    )
    assert not r.matches


@pytest.mark.parametrize(
    ("strategy", "app_fn", "algorithm", "match"),
    [
        (lambda: FedAvg(fraction_train=0.6), gd_app, "fedavg", "full participation"),
        (lambda: object(), gd_app, "fedavg", "flwr.serverapp.strategy.Strategy"),
        (FedAvg, lambda c: object(), "fedavg", "ClientApp"),
        (FedAvg, gd_app, "fedsgd", "algorithm must be one of"),
    ],
    ids=["partial", "not-a-strategy", "not-an-app", "algorithm"],
)
def test_bad_input_is_a_one_line_error(strategy, app_fn, algorithm, match):
    with pytest.raises(ValueError, match=match) as e:
        A.audit_flower_messages(strategy(), app_fn, algorithm, rounds=2)
    assert "\n" not in str(e.value)


def test_cli_flower_message_module(tmp_path, capsys):
    from pathlib import Path

    from moreau._cli import main

    here = Path(__file__).resolve().parent
    mod = tmp_path / "my_flower.py"
    mod.write_text(
        f"import sys\nsys.path.insert(0, {str(here)!r})\n"
        "from _audit_flower_msg_impls import gd_app\nfrom flwr.serverapp.strategy import FedAvg\n"
        "strategy = FedAvg()\napp_fn = gd_app\n"
    )
    args = ["audit", "--flower", str(mod), "--algorithm", "fedavg", "--rounds", "4"]
    assert main([*args, "--weights", "samples"]) == 0
    assert "MATCHES" in capsys.readouterr().out
    assert main(args) == 1  # the paper's uniform p_i: Flower weights by num-examples
    assert "WHY: weights_by_samples" in capsys.readouterr().out
