"""moreau audit's Flower adapter (issue 30): Flower's own FedAvg and FedProx strategies (flwr's legacy
flwr.server.strategy interface) driven in-process with independent NumPyClients doing local gradient
descent (tests/_audit_flower_impls.py).  What is audited: the strategy's server code as Flower ships
it, and our client; Flower's FedProx only sends mu, so its proximal term is the client's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower adapter needs flwr (the audit extra)")

from _audit_flower_impls import GDClient  # noqa: E402  (after the importorskip: it imports flwr)
from flwr.server.strategy import FedAvg, FedProx  # noqa: E402

from moreau import audit as A  # noqa: E402


@pytest.mark.parametrize("family", A.FAMILIES)
@pytest.mark.parametrize(("fraction", "hyper"), [(1.0, {}), (0.6, {"S": 3})])
def test_flower_fedavg_is_fedavg_with_weights_by_sample_counts(family, fraction, hyper):
    # Flower's FedAvg averages by num_examples: the paper's FedAvg when p_i = n_i / sum n_j
    st = FedAvg(fraction_fit=fraction, min_fit_clients=2, min_available_clients=2)
    r = A.audit_flower(st, GDClient, "fedavg", family=family, weights="samples", rounds=12, hyper=hyper)
    assert r.matches and r.fits == (), str(r)
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))


def test_flower_fedavg_on_uniform_p_is_diagnosed_as_weights_by_samples():
    r = A.audit_flower(FedAvg(), GDClient, "fedavg", rounds=12)
    d = r.diagnosis
    assert d is not None and d.names == ("weights_by_samples",), str(r)


def test_flower_fedavg_with_clients_reporting_one_example_is_uniform():
    # what a user does to get the paper's uniform p_i out of Flower's FedAvg
    r = A.audit_flower(FedAvg(), lambda c: GDClient(c, reported=lambda c: 1), "fedavg", rounds=12)
    assert r.matches, str(r)


def test_a_hidden_l2_term_in_the_flower_client_is_fitted():
    r = A.audit_flower(FedAvg(), lambda c: GDClient(c, l2=1e-3), "fedavg", weights="samples", rounds=12)
    d = r.diagnosis
    assert d is not None and d.names == ("extra_l2",), str(r)
    assert d.params["mu"] == pytest.approx(1e-3, rel=1e-6)


FEDPROX = {"gamma": 1.0}  # Flower's server averages: moreau.fl.fedprox's step with gamma = 1/lam


def test_flower_fedprox_with_a_warm_started_client_matches():
    st = FedProx(proximal_mu=1.0)
    r = A.audit_flower(
        st, lambda c: GDClient(c, warm=True), "fedprox", weights="samples", rounds=12, hyper=FEDPROX
    )
    assert r.matches, str(r)


def test_flower_fedprox_with_the_usual_client_is_diagnosed_as_reset_clients():
    # the usual Flower client starts from the parameters it receives (Li et al.'s FedProx), not from
    # its last local model (the analysis's Algorithm 1 that moreau.fl.fedprox prints)
    r = A.audit_flower(
        FedProx(proximal_mu=1.0), GDClient, "fedprox", weights="samples", rounds=12, hyper=FEDPROX
    )
    d = r.diagnosis
    assert d is not None and d.names == ("reset_clients",), str(r)
    assert r.parted_round == 2


def test_flower_fedprox_mu_is_the_strategys():
    # the client reads mu from the config the strategy sends: a strategy mu != the audit's lam parts
    r = A.audit_flower(
        FedProx(proximal_mu=0.5),
        lambda c: GDClient(c, warm=True),
        "fedprox",
        weights="samples",
        rounds=6,
        hyper=FEDPROX,
        pairs=False,
    )
    assert not r.matches and r.parted_round == 1


@pytest.mark.parametrize(
    ("args", "err", "match"),
    [
        (("not a strategy", GDClient, "fedavg"), A.AuditError, "strategy must be a flwr"),
        ((FedAvg(), 3, "fedavg"), A.AuditError, "client_fn must be callable"),
        ((FedAvg(), lambda c: object(), "fedavg"), A.AuditError, "client_fn must return a flwr"),
        ((FedAvg(), GDClient, "fedsgd"), ValueError, "algorithm must be one of"),
    ],
    ids=["strategy", "client_fn", "client", "algorithm"],
)
def test_bad_flower_input_is_one_line(args, err, match):
    with pytest.raises(err, match=match) as e:
        A.audit_flower(*args, rounds=2)
    assert "\n" not in str(e.value)


def test_docs_flower_example_runs(tmp_path, monkeypatch, capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    section = text.split("## The Flower adapter", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/audit.md", "exec"), {})
    assert "WHY: reset_clients" in capsys.readouterr().out


def test_flower_fedavgm_runs_through_the_adapter_and_server_momentum_is_a_user_deviation():
    from dataclasses import replace

    from flwr.common import ndarrays_to_parameters
    from flwr.server.strategy import FedAvgM

    def strategy():
        return FedAvgM(
            server_learning_rate=1.0,
            server_momentum=0.5,
            initial_parameters=ndarrays_to_parameters([np.zeros(3)]),
        )

    kw = {"weights": "samples", "rounds": 10, "pairs": False}
    r = A.audit_flower(strategy(), GDClient, "fedavg", **kw)
    assert not r.matches and r.diagnosis is None  # server momentum: not in the library
    lib = dict(A.DEVIATIONS)

    @A.deviation(
        "server_momentum", "FedAvgM: v = b v + (w - avg), w - v", param=A.Param("b", 0.0, 0.99), registry=lib
    )
    def _(knobs, b, hyper, inst):
        state = {"v": 0.0}

        def server(new, old):
            state["v"] = b * state["v"] + (old - new)
            return old - state["v"]

        return replace(knobs, server=server)

    r = A.audit_flower(strategy(), GDClient, "fedavg", deviations=lib, **kw)
    assert r.diagnosis is not None and r.diagnosis.names == ("server_momentum",), str(r)
    assert r.diagnosis.params["b"] == pytest.approx(0.5, rel=1e-6)
