"""moreau audit's PyTorch adapter (issue 30): independent torch FedAvg / FedProx written as research
code (tests/_audit_torch_impls.py) fed moreau's instances through DataLoaders; faithful ones match
(float64 to ~1e-16, float32 to float32 rounding), deliberately deviant ones are diagnosed as their
deviation with the right fitted parameter, two at once as the pair; bad input is one line."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch adapter needs torch (the audit extra)")

import _audit_torch_impls as T  # noqa: E402  (after the importorskip: it imports torch)

from moreau import audit as A  # noqa: E402


@pytest.mark.parametrize("family", A.FAMILIES)
@pytest.mark.parametrize(("algorithm", "hyper"), [("fedavg", {}), ("fedavg", {"S": 3}), ("fedprox", {})])
def test_faithful_torch_implementations_match(family, algorithm, hyper):
    train, aggregate = getattr(T, algorithm)(family)
    r = A.audit_torch(T.model(3), train, aggregate, algorithm, family=family, rounds=15, hyper=hyper)
    assert r.matches and r.exit_code == 0 and r.fits == () and r.dtype == "float64", str(r)
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))
    assert r.bias == pytest.approx(r.reference_bias, rel=1e-9, abs=1e-13)


def test_float32_torch_matches_to_float32_rounding_only():
    train, aggregate = T.fedprox()
    r = A.audit_torch(T.model(3), train, aggregate, "fedprox", dtype=torch.float32)
    assert r.matches and r.dtype == "float32", str(r)
    assert np.max(r.distance) > 1e3 * np.finfo(float).eps  # really float32 arithmetic
    assert np.max(r.distance) <= 1e-5


def test_the_float64_default_is_not_torch_default_float32():
    assert torch.get_default_dtype() == torch.float32  # the user's default is untouched afterwards
    train, aggregate = T.fedavg()
    A.audit_torch(T.model(3), train, aggregate, "fedavg", rounds=2)
    assert torch.get_default_dtype() == torch.float32


CASES = [  # (algorithm, impl, audit kwargs, deviation, parameters)
    ("fedprox", T.fedprox(weight_decay=1e-3), {}, "extra_l2", {"mu": 1e-3}),
    ("fedprox", T.fedprox("logistic", weight_decay=3e-2), {"family": "logistic"}, "extra_l2", {"mu": 3e-2}),
    ("fedprox", T.fedprox(reset=True), {}, "reset_clients", {}),
    ("fedprox", T.fedprox(by_samples=True), {}, "weights_by_samples", {}),
    ("fedavg", T.fedavg(by_samples=True), {}, "weights_by_samples", {}),
    ("fedavg", T.fedavg(weight_decay=1e-2), {}, "extra_l2", {"mu": 1e-2}),
    ("fedavg", T.fedavg("logistic", momentum=0.3), {"family": "logistic"}, "momentum", {"beta": 0.3}),
    ("fedavg", T.fedavg(total=True), {"hyper": {"eta": 0.004}}, "gradient_sum", {}),
]


@pytest.mark.parametrize(
    ("algorithm", "impl", "kw", "name", "params"),
    CASES,
    ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)],
)
def test_each_torch_deviation_is_diagnosed_with_its_parameter(algorithm, impl, kw, name, params):
    r = A.audit_torch(T.model(3), *impl, algorithm, **{"rounds": 12, **kw})
    assert not r.matches and r.exit_code == 1
    d = r.diagnosis
    assert d is not None and d.names == (name,), str(r)
    for k, v in params.items():
        assert d.params[k] == pytest.approx(v, rel=1e-6)
    assert all(f.names == (name,) for f in r.fits if f.explained), "ambiguous diagnosis"


def test_torch_fedprox_with_hidden_l2_and_reset_clients_is_the_pair():
    r = A.audit_torch(T.model(3), *T.fedprox(weight_decay=1e-3, reset=True), "fedprox", rounds=10)
    d = r.diagnosis
    assert d is not None and set(d.names) == {"reset_clients", "extra_l2"}, str(r)
    assert d.params["mu"] == pytest.approx(1e-3, rel=1e-6)
    assert r.parted_clients == (0, 1, 2, 3, 4)


def test_mini_batches_part_from_the_full_batch_reference():
    r = A.audit_torch(T.model(3), *T.fedavg(), "fedavg", batch_size=7, rounds=5, pairs=False)
    assert not r.matches and r.parted_round == 1


def test_train_may_return_a_state_dict_and_aggregate_a_flat_tensor():
    train, aggregate = T.fedavg()

    def train2(net, loader, **kw):
        train(net, loader, **kw)
        return {k: v.clone() for k, v in net.state_dict().items()}

    def aggregate2(models, weights, **kw):
        return torch.cat([v.reshape(-1) for v in aggregate(models, weights, **kw).values()])

    assert A.audit_torch(T.model(3), train2, aggregate2, "fedavg", rounds=4).matches


def _raise(*a, **k):
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("args", "kw", "err", "match"),
    [
        ((torch.nn.Linear(3, 1), *T.fedavg()), {}, A.AuditError, "model has 4 parameters, the instance 3"),
        (("not a model", *T.fedavg()), {}, A.AuditError, "model must be a torch.nn.Module"),
        ((T.model(3), _raise, T.fedavg()[1]), {}, A.AuditError, "RuntimeError at round 1"),
        (
            (T.model(3), T.fedavg()[0], lambda *a, **k: 3),
            {},
            A.AuditError,
            "aggregate's return value must be",
        ),
        ((T.model(3), *T.fedavg()), {"dtype": torch.int32}, ValueError, "dtype must be"),
        ((T.model(3), *T.fedavg()), {"batch_size": 0}, ValueError, "batch_size must be"),
    ],
    ids=["bias", "not-module", "raises", "bad-return", "dtype", "batch"],
)
def test_bad_torch_input_is_one_line(args, kw, err, match):
    with pytest.raises(err, match=match) as e:
        A.audit_torch(*args, "fedavg", rounds=2, **kw)
    assert "\n" not in str(e.value)


def _docs_block(heading):
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)[0]


def test_docs_torch_example_runs(tmp_path, monkeypatch, capsys):
    code = _docs_block("## The PyTorch adapter")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/audit.md", "exec"), {})
    out = capsys.readouterr().out
    assert "WHY: extra_l2 (mu = 0.001" in out
