"""moreau audit's PyTorch adapter for Per-FedAvg, PerMFL and pFL^MF (issue 30): independent torch
implementations written as research code (tests/_audit_torch_pfl_impls.py) fed moreau's instances
through DataLoaders; faithful ones match (float64 to ~1e-16, float32 to float32 rounding),
deliberately deviant ones are diagnosed as their deviation with the right fitted parameter; where
a protocol does not fit, the error is one line naming the algorithm and the adapter."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch adapter needs torch (the audit extra)")

import _audit_torch_pfl_impls as T  # noqa: E402  (after the importorskip: it imports torch)

from moreau import audit as A  # noqa: E402


def _args(algorithm, impl, rank=1):
    """(model, train, aggregate) and the keywords of audit_torch for ``impl``."""
    if algorithm == "permfl":
        train, aggregate, team = impl
        return (T.model(3), train, aggregate), {"team": team}
    if algorithm == "pflmf":
        return (T.mf_model(3, rank), *impl), {}
    return (T.model(3), *impl), {}


FAITHFUL = [  # (algorithm, impl, audit kwargs)
    ("perfedavg", T.per_fedavg(), {}),
    ("perfedavg", T.per_fedavg(), {"hyper": {"S": 3}}),
    ("perfedavg", T.per_fedavg("logistic"), {"family": "logistic", "hyper": {"S": 2}}),
    ("permfl", T.permfl(), {}),
    ("pflmf", T.pflmf(), {}),
    ("pflmf", T.pflmf(), {"hyper": {"rank": 2}}),
]


@pytest.mark.parametrize(
    ("algorithm", "impl", "kw"), FAITHFUL, ids=[f"{c[0]}-{i}" for i, c in enumerate(FAITHFUL)]
)
def test_faithful_torch_implementations_match_in_float64(algorithm, impl, kw):
    rank = kw.get("hyper", {}).get("rank", 1)
    args, extra = _args(algorithm, impl, rank)
    r = A.audit_torch(*args, algorithm, rounds=8, **extra, **kw)
    assert r.matches and r.exit_code == 0 and r.fits == () and r.dtype == "float64", str(r)
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))


@pytest.mark.parametrize("algorithm", ["perfedavg", "permfl", "pflmf"])
def test_float32_torch_matches_to_float32_rounding_only(algorithm):
    impl = {"perfedavg": T.per_fedavg(), "permfl": T.permfl(), "pflmf": T.pflmf()}[algorithm]
    args, extra = _args(algorithm, impl)
    r = A.audit_torch(*args, algorithm, rounds=6, dtype=torch.float32, **extra)
    assert r.matches and r.dtype == "float32", str(r)
    assert np.max(r.distance) > 1e3 * np.finfo(float).eps  # really float32 arithmetic
    assert np.max(r.distance) <= 1e-5
    assert torch.get_default_dtype() == torch.float32  # the user's default restored


CASES = [  # (algorithm, impl, audit kwargs, deviation, parameters)
    ("perfedavg", T.per_fedavg(first_order=True), {}, "first_order", {}),
    ("perfedavg", T.per_fedavg(hessian_factor=2.0), {}, "hessian_doubled", {}),
    ("perfedavg", T.per_fedavg(alpha_is_beta=True), {}, "alpha_bound_to_beta", {}),
    ("perfedavg", T.per_fedavg(by_samples=True), {}, "weights_by_samples", {}),
    ("permfl", T.permfl(lam_is_L=True), {}, "lam_device_bound_to_L", {}),
    ("permfl", T.permfl(weight_decay=1e-2), {}, "extra_l2", {"mu": 1e-2}),
    ("permfl", T.permfl(sequential=True), {"batch_size": 7}, "sequential_batches", {"B": 7}),
    ("pflmf", T.pflmf(fedper=True), {}, "fedper", {}),
    ("pflmf", T.pflmf(frozen=True), {}, "frozen_personal", {}),
    ("pflmf", T.pflmf(by_samples=True), {}, "weights_by_samples", {}),
]


@pytest.mark.parametrize(
    ("algorithm", "impl", "kw", "name", "params"),
    CASES,
    ids=[f"{c[0]}-{c[3]}" for c in CASES],
)
def test_each_torch_deviation_is_diagnosed_with_its_parameter(algorithm, impl, kw, name, params):
    args, extra = _args(algorithm, impl)
    r = A.audit_torch(*args, algorithm, rounds=8, pairs=False, **extra, **kw)
    assert not r.matches and r.exit_code == 1
    d = r.diagnosis
    assert d is not None and d.names == (name,), str(r)
    for k, v in params.items():
        assert d.params[k] == pytest.approx(v, rel=1e-6)


def test_torch_per_fedavg_with_two_deviations_is_the_pair():
    impl = T.per_fedavg(first_order=True, by_samples=True)
    r = A.audit_torch(T.model(3), *impl, "perfedavg", rounds=8)
    d = r.diagnosis
    assert d is not None and set(d.names) == {"first_order", "weights_by_samples"}, str(r)


@pytest.mark.parametrize(
    ("algorithm", "args", "kw", "match"),
    [
        ("permfl", (T.model(3), *T.permfl()[:2]), {}, "team must be callable for PerMFL"),
        ("fedavg", (T.model(3), *T.per_fedavg()), {"team": T.permfl()[2]}, "team: only PerMFL"),
        ("pflmf", (T.model(3), *T.pflmf()), {}, "pFL\\^MF's model has two parameters"),
        ("fedfw", (T.model(3), *T.per_fedavg()), {}, "'fedfw' is not audited by the PyTorch adapter"),
    ],
    ids=["permfl-no-team", "team-not-permfl", "pflmf-model", "fedfw"],
)
def test_bad_torch_input_is_one_line(algorithm, args, kw, match):
    with pytest.raises((A.AuditError, ValueError), match=match) as e:
        A.audit_torch(*args, algorithm, rounds=2, **kw)
    assert "\n" not in str(e.value)


def test_cli_torch_module_with_a_team_step(tmp_path, capsys):
    from moreau._cli import main

    bad = tmp_path / "bad.py"  # (the faithful one matches: above)
    bad.write_text(
        "from _audit_torch_pfl_impls import model, permfl\ntrain, aggregate, team = permfl(lam_is_L=True)\n"
    )
    args = ["audit", "--algorithm", "permfl", "--rounds", "5", "--torch"]
    assert main([*args, str(bad)]) == 1
    assert "WHY: lam_device_bound_to_L" in capsys.readouterr().out
    noteam = tmp_path / "noteam.py"
    noteam.write_text("from _audit_torch_pfl_impls import model, permfl\ntrain, aggregate, _ = permfl()\n")
    assert main([*args, str(noteam)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "team must be callable for PerMFL" in err
