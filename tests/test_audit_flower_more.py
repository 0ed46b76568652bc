"""moreau audit's Flower adapters for pFedMe, FedFW, pFL^MF and PerMFL (issue 30): the user's own strategy
(a subclass of Flower's FedAvg whose aggregate step is the algorithm's server step) and stateful
clients, legacy (NumPyClient, flwr.server.strategy) and message API (ClientApp,
flwr.serverapp.strategy), from tests/_audit_flower_more_impls.py.  Faithful ones match to 1e-12;
each deviation a Flower client or strategy can make is diagnosed with its fitted parameter;
pFL^MF's personal factors stay on the clients (get_properties / context.state)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr.serverapp.strategy", reason="the Flower adapters need flwr (the audit extra)")

import _audit_flower_more_impls as M  # noqa: E402  (after the importorskip: it imports flwr)
from flwr.client import NumPyClient  # noqa: E402
from flwr.server.strategy import FedAvg  # noqa: E402
from flwr.serverapp import strategy as msg  # noqa: E402

from moreau import audit as A  # noqa: E402


def pfedme(**opts):
    return lambda c: M.Client(c, M.pfedme_local, **opts)


def fedfw(**opts):
    return lambda c: M.Client(c, M.fedfw_local, **opts)


def permfl(**opts):
    return lambda c: M.Client(c, M.permfl_local, **opts)


def mf(**opts):
    return lambda c, v0: M.MFClient(c, v0, **opts)


def _matches(r):
    assert r.matches and r.fits == () and r.dtype == "float64", str(r)
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))


FAITHFUL = [  # (algorithm, strategy factory, client_fn, hyper)
    ("pfedme", M.pfedme_strategy, pfedme(), {}),
    ("pfedme", lambda: M.pfedme_strategy(fraction_fit=0.4), pfedme(), {"S": 2}),
    ("pfedme", lambda: M.pfedme_strategy(beta=0.5), pfedme(), {"beta": 0.5}),
    ("fedfw", M.fedfw_strategy, fedfw(), {}),
    ("fedfw", M.fedfw_strategy, fedfw(), {"K": 3}),
    ("fedfw", lambda: M.fedfw_strategy(fraction_fit=0.6), fedfw(), {"S": 3, "K": 2}),
    ("pflmf", M.mf_strategy, mf(), {}),
    ("pflmf", M.mf_strategy, mf(), {"rank": 2}),
    ("permfl", lambda: M.PerMFLStrategy(A.TEAMS), permfl(), {}),
    ("permfl", lambda: M.PerMFLStrategy(A.TEAMS), permfl(), {"K": 1, "L": 2}),
]


@pytest.mark.parametrize(
    ("algorithm", "strategy", "client_fn", "hyper"),
    FAITHFUL,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(FAITHFUL)],
)
def test_faithful_flower_implementations_match(algorithm, strategy, client_fn, hyper):
    r = A.audit_flower(strategy(), client_fn, algorithm, rounds=12, hyper=hyper)
    _matches(r)
    assert r.bias == pytest.approx(r.reference_bias, rel=1e-9, abs=1e-13)


def test_pfedme_partial_participation_shares_the_draw_and_compares_server_models_only():
    # a strategy that samples its own way (here: every client, S = 5) is not pFedMe with S = 2
    r = A.audit_flower(M.pfedme_strategy(fraction_fit=0.4), pfedme(), "pfedme", rounds=8, hyper={"S": 2})
    assert r.matches and r.parted_clients is None, str(r)
    with pytest.raises(A.AuditError, match="the strategy trained 5 clients at round 1, the audit's S = 2"):
        A.audit_flower(M.pfedme_strategy(), pfedme(), "pfedme", rounds=2, hyper={"S": 2})


CASES = [  # (algorithm, strategy, client_fn, audit kwargs, deviation names, parameters)
    ("pfedme", M.pfedme_strategy, pfedme(l2=1e-3), {}, ("extra_l2",), {"mu": 1e-3}),
    ("pfedme", M.pfedme_strategy, pfedme(warm=True), {}, ("warm_inner",), {}),
    ("pfedme", M.pfedme_strategy, pfedme(warm_round=True), {}, ("warm_inner_round",), {}),
    ("pfedme", M.pfedme_strategy, pfedme(aliased=True), {}, ("aliased_personal",), {}),
    (
        "pfedme",
        lambda: M.pfedme_strategy(by_samples=True),
        pfedme(),
        {"rounds": 8},
        ("weights_by_samples",),
        {},
    ),
    ("pfedme", M.pfedme_strategy, pfedme(beta_m=0.3), {}, ("momentum",), {"beta": 0.3}),
    (
        "pfedme",
        lambda: M.pfedme_strategy(fraction_fit=0.4),
        pfedme(eta_times_s=True),
        {"hyper": {"S": 2}},
        ("eta_times_sampled",),
        {},
    ),
    ("fedfw", lambda: M.fedfw_strategy(reset=True), fedfw(reset=True), {}, ("reset_clients",), {}),
    (
        "fedfw",
        lambda: M.fedfw_strategy(reset=True, fraction_fit=0.4),
        fedfw(reset=True),
        {"hyper": {"K": 3, "S": 2}},
        ("reset_clients",),
        {},
    ),
    ("fedfw", M.fedfw_strategy, fedfw(eta_plus=2.0), {}, ("fw_eta_2_over_t_plus_2",), {}),
    (
        "fedfw",
        lambda: M.fedfw_strategy(fraction_fit=0.6),
        fedfw(over_sampled=True),
        {"hyper": {"S": 3}},
        ("fw_grad_over_sampled",),
        {},
    ),
    ("fedfw", M.fedfw_strategy, fedfw(l2=1e-3), {"hyper": {"K": 2}}, ("extra_l2",), {"mu": 1e-3}),
    ("permfl", lambda: M.PerMFLStrategy(A.TEAMS), permfl(lam_is_L=True), {}, ("lam_device_bound_to_L",), {}),
    ("permfl", lambda: M.PerMFLStrategy(A.TEAMS), permfl(batch=7), {}, ("sequential_batches",), {"B": 7}),
    ("permfl", lambda: M.PerMFLStrategy(A.TEAMS), permfl(l2=1e-3), {}, ("extra_l2",), {"mu": 1e-3}),
    ("pflmf", M.mf_strategy, mf(frozen=True), {}, ("frozen_personal",), {}),
    ("pflmf", lambda: M.mf_strategy(by_samples=True), mf(), {}, ("weights_by_samples",), {}),
    # FedPer is Flower's own FedAvg with a client training its copy of U and v_i: uniform when the
    # clients report one example each, by sample counts otherwise (two deviations at once)
    ("pflmf", FedAvg, mf(fedper=True, reported=1), {}, ("fedper",), {}),
    ("pflmf", FedAvg, mf(fedper=True), {}, ("weights_by_samples", "fedper"), {}),
]


@pytest.mark.parametrize(
    ("algorithm", "strategy", "client_fn", "kw", "names", "params"),
    CASES,
    ids=[f"{c[0]}-{'+'.join(c[4])}-{i}" for i, c in enumerate(CASES)],
)
def test_each_flower_deviation_is_diagnosed_with_its_parameter(
    algorithm, strategy, client_fn, kw, names, params
):
    r = A.audit_flower(strategy(), client_fn, algorithm, **{"rounds": 12, **kw})
    assert not r.matches and r.exit_code == 1
    d = r.diagnosis
    assert d is not None and set(d.names) == set(names), str(r)
    for k, v in params.items():
        assert d.params[k] == pytest.approx(v, rel=1e-6)
    assert all(set(f.names) == set(names) for f in r.fits if f.explained), "ambiguous diagnosis"


NODE_TEAMS = {1001 + i: t for i, t in enumerate(A.TEAMS)}  # the audit's node ids: 1001 + client index
MESSAGE = [  # (algorithm, strategy, app_fn, deviation names: () faithful)
    ("pfedme", M.msg_pfedme_strategy, lambda c: M.app(c, M.pfedme_local), ()),
    ("fedfw", M.msg_fedfw_strategy, lambda c: M.app(c, M.fedfw_local), ()),
    ("pflmf", M.msg_mf_strategy, M.mf_app, ()),
    ("pfedme", M.msg_pfedme_strategy, lambda c: M.app(c, M.pfedme_local, warm=True), ("warm_inner",)),
    (
        "pfedme",
        M.msg_pfedme_strategy,
        lambda c: M.app(c, M.pfedme_local, aliased=True),
        ("aliased_personal",),
    ),
    (
        "fedfw",
        lambda: M.msg_fedfw_strategy(reset=True),
        lambda c: M.app(c, M.fedfw_local, reset=True),
        ("reset_clients",),
    ),
    (
        "fedfw",
        M.msg_fedfw_strategy,
        lambda c: M.app(c, M.fedfw_local, eta_plus=2.0),
        ("fw_eta_2_over_t_plus_2",),
    ),
    ("pflmf", M.msg_mf_strategy, lambda c: M.mf_app(c, frozen=True), ("frozen_personal",)),
    ("permfl", lambda: M.MsgPerMFLStrategy(NODE_TEAMS), lambda c: M.app(c, M.permfl_local), ()),
    (
        "permfl",
        lambda: M.MsgPerMFLStrategy(NODE_TEAMS),
        lambda c: M.app(c, M.permfl_local, lam_is_L=True),
        ("lam_device_bound_to_L",),
    ),
    ("pflmf", msg.FedAvg, lambda c: M.mf_app(c, fedper=True), ("weights_by_samples", "fedper")),
]


@pytest.mark.parametrize(
    ("algorithm", "strategy", "app_fn", "names"),
    MESSAGE,
    ids=[f"{c[0]}-{'+'.join(c[3]) or 'faithful'}-{i}" for i, c in enumerate(MESSAGE)],
)
def test_message_api_pfedme_fedfw_pflmf(algorithm, strategy, app_fn, names):
    r = A.audit_flower_messages(strategy(), app_fn, algorithm, rounds=12)
    if not names:
        _matches(r)
        return
    d = r.diagnosis
    assert not r.matches and d is not None and set(d.names) == set(names), str(r)


def test_extra_l2_in_a_message_fedfw_client_is_fitted():
    app = lambda c: M.app(c, M.fedfw_local, l2=1e-3)  # noqa: E731
    r = A.audit_flower_messages(M.msg_fedfw_strategy(), app, "fedfw", rounds=12, hyper={"K": 2})
    d = r.diagnosis
    assert d is not None and d.names == ("extra_l2",) and d.params["mu"] == pytest.approx(1e-3, rel=1e-6)


class NoFactor(NumPyClient):
    def __init__(self, c, v0):
        self.inner = M.MFClient(c, v0)

    def fit(self, parameters, config):
        return self.inner.fit(parameters, config)


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (
            lambda: A.audit_flower(M.mf_strategy(), NoFactor, "pflmf", rounds=2),
            A.AuditError,
            r"client 0's get_properties must return its personal factor as the floats \['v_0'\]",
        ),
        (
            lambda: A.audit_flower(M.mf_strategy(fraction_fit=0.4), mf(), "pflmf", rounds=2),
            A.AuditError,
            "the strategy trained 2 of 5 clients at round 1: pflmf is audited",
        ),
        (
            lambda: A.audit_flower(FedAvg(fraction_fit=0.5), permfl(), "permfl", rounds=2),
            A.AuditError,
            "the strategy trained 3 of 6 clients at round 1: permfl is audited",
        ),
        (
            lambda: A.audit_flower_messages(msg.FedAvg(), M.mf_app, "fedsgd", rounds=2),
            ValueError,
            "algorithm must be one of",
        ),
        (
            lambda: A.audit_flower_messages(
                msg.FedAvg(fraction_train=0.4), lambda c: M.app(c, M.pfedme_local), "pfedme", hyper={"S": 2}
            ),
            A.AuditError,
            "the strategy sent 2 of 5 clients a train message at round 1",
        ),
        (
            lambda: A.audit_flower_messages(
                M.msg_mf_strategy(), lambda c: M.app(c, M.pfedme_local), "pflmf", rounds=2
            ),
            A.AuditError,
            r"the ClientApp of client \d raised KeyError: .lam.",
        ),
    ],
    ids=[
        "no-get-properties",
        "pflmf-partial",
        "permfl-partial",
        "permfl-messages",
        "messages-partial",
        "wrong-app",
    ],
)
def test_bad_flower_input_for_the_new_algorithms_is_one_line(call, err, match):
    with pytest.raises(err, match=match) as e:
        call()
    assert "\n" not in str(e.value)


def test_pflmf_message_app_that_drops_its_factor_is_one_line():
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    def app_fn(c):
        app = ClientApp()

        @app.train()
        def train(m, context):
            del context.state["personal"]
            content = RecordDict(
                {"arrays": ArrayRecord([np.zeros(3)]), "metrics": MetricRecord({"num-examples": 1})}
            )
            return Message(content=content, reply_to=m)

        return app

    with pytest.raises(A.AuditError, match=r"client 0's context.state\['personal'\] must hold") as e:
        A.audit_flower_messages(M.msg_mf_strategy(), app_fn, "pflmf", rounds=2)
    assert "\n" not in str(e.value)


def test_docs_flower_pflmf_example_runs(tmp_path, monkeypatch, capsys):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    section = text.split("## pFedMe, FedFW, pFL^MF and PerMFL through Flower", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/audit.md", "exec"), {})
    assert "MATCHES the paper's algorithm" in capsys.readouterr().out


def test_cli_flower_module_pflmf_and_fedfw(tmp_path, capsys):
    from pathlib import Path

    from moreau._cli import main

    here = Path(__file__).resolve().parent
    for alg, body, code, out in [
        ("pflmf", "strategy = M.mf_strategy()\nclient_fn = lambda c, v0: M.MFClient(c, v0)\n", 0, "MATCHES"),
        (
            "fedfw",
            "strategy = M.fedfw_strategy()\nclient_fn = lambda c: M.Client(c, M.fedfw_local, eta_plus=2.0)\n",
            1,
            "WHY: fw_eta_2_over_t_plus_2",
        ),
    ]:
        mod = tmp_path / f"my_{alg}.py"
        mod.write_text(
            f"import sys\nsys.path.insert(0, {str(here)!r})\nimport _audit_flower_more_impls as M\n{body}"
        )
        assert main(["audit", "--flower", str(mod), "--algorithm", alg, "--rounds", "6"]) == code
        assert out in capsys.readouterr().out
