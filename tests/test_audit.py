"""moreau audit (issue 30): the reference with default knobs is moreau.fl; independent faithful
per-client loops match; deliberately deviant implementations (tests/_audit_impls.py) are diagnosed
as their deviation with the right parameter; two deviations as the pair; bad input; the CLI."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import _audit_impls as impls
import numpy as np
import pytest

from moreau import audit as A
from moreau import fl
from moreau._cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("family", A.FAMILIES)
@pytest.mark.parametrize(
    ("algorithm", "extra"),
    [("fedavg", {}), ("fedavg", {"S": 3}), ("fedprox", {}), ("pfedme", {}), ("pfedme", {"S": 2})],
)
def test_reference_with_default_knobs_is_moreau_fl(family, algorithm, extra):
    inst = A.instance(family, seed=3)
    h = {**A.DEFAULT_HYPER[algorithm], **extra}
    g, loc = A.run_variant(algorithm, inst, h, 8, 5)
    ref = A._audit._reference(algorithm, inst, h, 8, 5)
    np.testing.assert_allclose(g, np.asarray(ref.w_global), rtol=0, atol=1e-14)
    np.testing.assert_allclose(loc, np.asarray(ref.w_local), rtol=0, atol=1e-14)


@pytest.mark.parametrize("family", A.FAMILIES)
@pytest.mark.parametrize(
    ("algorithm", "impl", "hyper"),
    [
        ("fedavg", impls.fedavg, {}),
        ("fedavg", impls.fedavg, {"S": 3}),
        ("fedprox", impls.fedprox, {}),
        ("pfedme", impls.pfedme, {}),
        ("pfedme", impls.pfedme, {"S": 2}),
    ],
)
def test_faithful_independent_loops_match(family, algorithm, impl, hyper):
    r = A.audit(impl(), algorithm, family=family, rounds=15, hyper=hyper)
    assert r.matches and r.exit_code == 0 and r.fits == ()
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))
    assert "MATCHES" in str(r)
    assert r.bias == pytest.approx(r.reference_bias, rel=1e-9, abs=1e-13)


def test_float32_faithful_matches_to_float32_rounding_and_float64_allowance_would_fail():
    r = A.audit(impls.fedprox(dtype=np.float32), "fedprox")
    assert r.matches and r.dtype == "float32"
    assert np.max(r.distance) > 1e3 * np.finfo(float).eps  # really float32: a float64 allowance would fail


def test_fedavg_optimum_is_the_global_least_squares_solution():
    inst = A.instance("quadratic", seed=0, weights="samples")
    r = A.audit(impls.fedavg(), "fedavg", inst=inst, hyper={"tau": 1}, rounds=400)
    # independent: the normal equations of sum_i p_i/(2 n_i) |X_i w - y_i|^2
    G = sum(c.weight * c.X.T @ c.X / c.n for c in inst.clients)
    b = sum(c.weight * c.X.T @ c.y / c.n for c in inst.clients)
    np.testing.assert_allclose(r.optimum, np.linalg.solve(G, b), rtol=1e-12, atol=1e-13)
    assert r.bias < 1e-10 and r.gap < 1e-15  # tau = 1 is gradient descent on sum p_i f_i: no bias


def test_pfedme_optimum_is_stationary_for_the_envelope():
    r = A.audit(impls.pfedme(), "pfedme", rounds=2)
    inst, lam = A.instance("quadratic", seed=0), A.DEFAULT_HYPER["pfedme"]["lam"]
    # independent: theta_i = (A_i + lam I)^{-1}(b_i + lam w); grad = lam mean_i (w - theta_i) = 0
    w, g = r.optimum, 0.0
    for c in inst.clients:
        Ai, bi = c.X.T @ c.X / c.n, c.X.T @ c.y / c.n
        g = g + lam * (w - np.linalg.solve(Ai + lam * np.eye(len(w)), bi + lam * w)) / inst.m
    assert np.linalg.norm(g) < 1e-13


CASES = [  # (algorithm, deviant, audit kwargs, expected deviation, expected parameters)
    ("fedavg", impls.fedavg(l2=1e-3), {}, "extra_l2", {"mu": 1e-3}),
    ("fedavg", impls.fedavg(total=True), {"hyper": {"eta": 0.004}}, "gradient_sum", {}),
    ("fedavg", impls.fedavg(eta_times_s=True), {"hyper": {"eta": 0.03, "S": 3}}, "eta_times_sampled", {}),
    ("fedavg", impls.fedavg(by_samples=True), {}, "weights_by_samples", {}),
    ("fedavg", impls.fedavg(uniform=True), {"weights": "samples"}, "uniform_weights", {}),
    ("fedavg", impls.fedavg(beta=0.3), {"family": "logistic"}, "momentum", {"beta": 0.3}),
    ("fedprox", impls.fedprox(reset=True), {}, "reset_clients", {}),
    ("fedprox", impls.fedprox(sign=-1.0), {}, "prox_sign", {}),
    ("fedprox", impls.fedprox(l2=1e-3), {"family": "logistic"}, "extra_l2", {"mu": 1e-3}),
    ("fedprox", impls.fedprox(total=True), {"hyper": {"eta": 0.004, "lam": 0.05}}, "gradient_sum", {}),
    ("pfedme", impls.pfedme(l2=1e-3), {}, "extra_l2", {"mu": 1e-3}),
    ("pfedme", impls.pfedme(warm=True), {}, "warm_inner", {}),
    ("pfedme", impls.pfedme(warm_round=True), {}, "warm_inner_round", {}),
    ("pfedme", impls.pfedme(aliased=True), {}, "aliased_personal", {}),
    ("pfedme", impls.pfedme(by_samples=True), {"rounds": 8}, "weights_by_samples", {}),
    ("fedprox", impls.fedprox(lam_is_K=True), {"hyper": {"K": 3}}, "lam_bound_to_K", {}),
    ("fedfw", impls.fedfw(reset=True), {}, "reset_clients", {}),
    ("fedfw", impls.fedfw(reset=True), {"hyper": {"K": 3, "S": 2}}, "reset_clients", {}),
    ("fedfw", impls.fedfw(eta_plus=2.0), {}, "fw_eta_2_over_t_plus_2", {}),
    ("fedfw", impls.fedfw(over_sampled=True), {"hyper": {"S": 3}}, "fw_grad_over_sampled", {}),
    ("fedfw", impls.fedfw(l2=1e-3), {"hyper": {"K": 2}}, "extra_l2", {"mu": 1e-3}),
]


@pytest.mark.parametrize(
    ("algorithm", "impl", "kw", "name", "params"), CASES, ids=[f"{c[0]}-{c[3]}" for c in CASES]
)
def test_each_deviation_is_diagnosed_with_its_parameter(algorithm, impl, kw, name, params):
    r = A.audit(impl, algorithm, **{"rounds": 12, **kw})
    assert not r.matches and r.exit_code == 1
    d = r.diagnosis
    assert d is not None and d.names == (name,), str(r)
    for k, v in params.items():
        assert d.params[k] == pytest.approx(v, rel=1e-6)
    assert all(f.names == (name,) for f in r.fits if f.explained), "ambiguous diagnosis"  # the only one
    assert f"WHY: {name}" in str(r)


@pytest.mark.parametrize("hyper", [{}, {"S": 3}, {"K": 3}, {"K": 2, "S": 2}, {"radius": 5.0}])
def test_fedfw_reference_is_moreau_fl_and_a_faithful_loop_matches(hyper):
    inst = A.instance("quadratic", seed=3)
    h = {**A.DEFAULT_HYPER["fedfw"], **hyper}
    for knobs, restart in ((A.Knobs(), False), (A.Knobs(reset_clients=True), True)):
        g, loc = A.run_variant("fedfw", inst, h, 8, 5, knobs)
        ref = fl.fedfw(
            inst.objective, fl.L2Ball(h["radius"]), rounds=8, K=h["K"], S=h["S"], rng=5, restart=restart
        )
        np.testing.assert_allclose(g, np.asarray(ref.w_global), rtol=0, atol=1e-14)
        np.testing.assert_allclose(loc, np.asarray(ref.w_local), rtol=0, atol=1e-14)
    r = A.audit(impls.fedfw(), "fedfw", rounds=15, hyper=hyper)
    assert r.matches and r.fits == (), str(r)


@pytest.mark.parametrize("radius", [0.5, 5.0])
def test_fedfw_optimum_is_the_constrained_least_squares_solution(radius):
    inst = A.instance("quadratic", seed=0)
    r = A.audit(impls.fedfw(), "fedfw", inst=inst, rounds=2, hyper={"radius": radius})
    # independent: the minimiser of mean_i f_i over |w| <= radius: the unconstrained one when inside
    # (here 0.79 from 0), else (G + nu I)^{-1} b with nu > 0 the multiplier making |w| = radius
    G = sum(c.X.T @ c.X / c.n for c in inst.clients) / inst.m
    b = sum(c.X.T @ c.y / c.n for c in inst.clients) / inst.m
    from scipy.optimize import brentq

    def w(nu):
        return np.linalg.solve(G + nu * np.eye(3), b)

    nu = 0.0 if np.linalg.norm(w(0.0)) <= radius else brentq(lambda v: np.linalg.norm(w(v)) - radius, 0, 1e3)
    np.testing.assert_allclose(r.optimum, w(nu), rtol=0, atol=1e-9)


def test_fedfw_reset_with_gradients_over_s_is_the_pair_and_indistinguishable_with_one_step():
    r = A.audit(impls.fedfw(reset=True, over_sampled=True), "fedfw", rounds=12, hyper={"S": 3, "K": 2})
    d = r.diagnosis
    assert d is not None and set(d.names) == {"reset_clients", "fw_grad_over_sampled"}, str(r)
    # K = 1 with the reset: the penalty is 0 at the only step, and the L2 ball's oracle ignores the
    # gradient's scale, so 1/S and 1/n give the same iterates: reset_clients alone explains them
    r = A.audit(impls.fedfw(reset=True, over_sampled=True), "fedfw", rounds=12, hyper={"S": 3})
    assert r.diagnosis is not None and r.diagnosis.names == ("reset_clients",), str(r)


def test_fedfw_needs_uniform_weights_and_quadratic_clients():
    with pytest.raises(ValueError, match="averages its clients uniformly"):
        A.audit(impls.fedfw(), "fedfw", weights="samples", rounds=2)
    with pytest.raises(ValueError, match="quadratic clients"):
        A.audit(impls.fedfw(), "fedfw", family="logistic", rounds=2)


def test_a_user_bound_deviation_pfedme_lam_bound_to_inner():
    inner = impls.pfedme()

    def shifted(w, clients, rng, **h):  # the penalty lam receives the inner step count
        return inner(w, clients, rng, **{**h, "lam": h["inner"]})

    lib = dict(A.DEVIATIONS)
    name = A.bound_deviation("lam", "inner", ("pfedme",), registry=lib)
    r = A.audit(shifted, "pfedme", rounds=10, hyper={"inner": 3}, deviations=lib)
    assert r.diagnosis is not None and r.diagnosis.names == (name,) == ("lam_bound_to_inner",), str(r)
    assert name not in A.DEVIATIONS
    with pytest.raises(ValueError, match="fedprox has no hyperparameter 'lam' or 'tau'"):
        A.run_variant(
            "fedprox", A.instance(), A.DEFAULT_HYPER["fedprox"], 2, 0, A.Knobs(bind=(("lam", "tau"),))
        )


def test_per_client_parting_is_reported_where_exposed():
    r = A.audit(impls.fedprox(reset=True), "fedprox", rounds=5)
    assert r.parted_round == 2 and r.parted_clients == (0, 1, 2, 3, 4)  # round 1 starts from w_0 anyway


def test_two_deviations_at_once_are_diagnosed_as_the_pair():
    r = A.audit(impls.fedprox(reset=True, l2=1e-3), "fedprox", rounds=10)
    d = r.diagnosis
    assert d is not None and set(d.names) == {"reset_clients", "extra_l2"}, str(r)
    assert d.params["mu"] == pytest.approx(1e-3, rel=1e-6)
    assert not any(f.explained for f in r.fits if len(f.names) == 1)


def test_three_deviations_at_once_are_diagnosed_as_the_triple():
    # the pFedMe authors' code: a hidden L2 term, the inner solve warm within a round, and the
    # server weighting by sample counts (docs/audits.md)
    r = A.audit(impls.pfedme(l2=1e-3, warm_round=True, by_samples=True), "pfedme", rounds=12)
    d = r.diagnosis
    assert d is not None and set(d.names) == {"extra_l2", "warm_inner_round", "weights_by_samples"}, str(r)
    assert d.params["mu"] == pytest.approx(1e-3, rel=1e-6)
    assert not any(f.explained for f in r.fits if len(f.names) < 3)
    n_triples = sum(len(f.names) == 3 for f in r.fits)
    assert 1 <= n_triples <= 56  # pruned: C(MAX_TRIPLE_CANDIDATES, 3) at most
    off = A.audit(impls.pfedme(l2=1e-3, warm_round=True, by_samples=True), "pfedme", rounds=12, triples=False)
    assert off.diagnosis is None and "unexplained" in str(off)


def _server_mixing(w, clients, rng, *, eta, tau, S):  # FedAvg with a server step 0.5: not in the library
    avg = impls.fedavg()(w, clients, rng, eta=eta, tau=tau, S=S)[0]
    return 0.5 * w + 0.5 * avg


def test_a_departure_outside_the_library_is_unexplained_then_explained_by_a_user_deviation():
    r = A.audit(_server_mixing, "fedavg", rounds=10, pairs=False)
    assert not r.matches and r.diagnosis is None and "unexplained" in str(r)
    lib = dict(A.DEVIATIONS)

    @A.deviation("server_lr", "server step w + a (avg - w)", param=A.Param("a", 0.01, 2.0), registry=lib)
    def _(knobs, a, hyper, inst):
        from dataclasses import replace

        return replace(knobs, server=lambda new, old: old + a * (new - old))

    r = A.audit(_server_mixing, "fedavg", rounds=10, pairs=False, deviations=lib)
    assert r.diagnosis is not None and r.diagnosis.names == ("server_lr",)
    assert r.diagnosis.params["a"] == pytest.approx(0.5, rel=1e-6)
    assert "server_lr" not in A.DEVIATIONS


def _bad_sig(w, clients):
    return w


def _bad_shape(w, clients, rng, **hyper):
    return np.zeros(7)


def _raises(w, clients, rng, **hyper):
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("impl", "match"),
    [
        (_bad_sig, "must accept 3 positional"),
        (_bad_shape, r"shape \(3,\)"),
        (_raises, "RuntimeError at round 1"),
        ((_bad_shape,), "is \\(client_update, aggregate\\)"),
        (42, "must be callable"),
    ],
    ids=["signature", "shape", "raises", "pair", "not-callable"],
)
def test_bad_implementations_are_one_line_errors(impl, match):
    with pytest.raises(A.AuditError, match=match) as e:
        A.audit(impl, "fedavg", rounds=2)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"algorithm": "scaffold"}, "algorithm must be one of"),
        ({"rounds": 0}, "rounds must be"),
        ({"hyper": {"mu": 1}}, "hyper has no"),
        ({"family": "softmax"}, "family must be one of"),
    ],
)
def test_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        A.audit(impls.fedavg(), **{"algorithm": "fedavg", "rounds": 2, **kw})


def test_cli_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.py"
    good.write_text(
        "import sys\nsys.path.insert(0, {!r})\nfrom _audit_impls import fedprox\n"
        "client_update, aggregate = fedprox()\n".format(str(ROOT / "tests"))
    )
    bad = tmp_path / "bad.py"
    bad.write_text("from _audit_impls import fedprox\nclient_update, aggregate = fedprox(reset=True)\n")
    assert main(["audit", "--module", str(good), "--algorithm", "fedprox", "--rounds", "5"]) == 0
    assert "MATCHES" in capsys.readouterr().out
    assert main(["audit", "--module", str(bad), "--algorithm", "fedprox", "--rounds", "5"]) == 1
    assert "WHY: reset_clients" in capsys.readouterr().out
    none = tmp_path / "none.py"
    none.write_text("x = 1\n")
    for args in (
        ["--module", str(none)],
        ["--module", str(tmp_path / "missing.py")],
        ["--module", str(good), "--hyper", "[1]"],
    ):
        assert main(["audit", *args, "--algorithm", "fedprox", "--rounds", "2"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("moreau audit: ") and err.count("\n") == 1


def test_docs_example_runs(tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / "audit.md").read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/audit.md", "exec"), {})
    out = capsys.readouterr().out
    assert "WHY: reset_clients" in out


def test_warm_inner_round_is_not_tried_where_it_cannot_change_anything():
    r = A.audit(impls.pfedme(l2=1e-3), "pfedme", rounds=4, hyper={"R": 1}, pairs=False)
    tried = {f.names[0] for f in r.fits}
    assert "warm_inner" in tried and "warm_inner_round" not in tried  # R = 1: one inner solve per round


def _module(tmp_path, name, body):
    f = tmp_path / f"{name}.py"
    f.write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n{body}")
    return str(f)


@pytest.mark.parametrize(("option", "package"), [("--torch", "torch"), ("--flower", "flwr.server.strategy")])
def test_cli_adapters_without_their_package_are_one_line_errors(
    tmp_path, monkeypatch, capsys, option, package
):
    monkeypatch.setitem(sys.modules, package, None)  # import raises ImportError, as when not installed
    mod = _module(tmp_path, "impl", "x = 1\n")
    assert main(["audit", option, mod, "--algorithm", "fedavg", "--rounds", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"moreau audit: {option} needs {package.split('.')[0]}")
    assert "pip install 'moreau-pfl[audit]'" in err


def test_cli_torch_module(tmp_path, capsys):
    pytest.importorskip("torch", reason="the PyTorch adapter needs torch (the audit extra)")
    good = _module(
        tmp_path, "good", "from _audit_torch_impls import model, fedprox\ntrain, aggregate = fedprox()\n"
    )
    bad = _module(
        tmp_path,
        "bad",
        "import torch\nfrom _audit_torch_impls import model, fedprox\nmodel = model(3)\n"
        "train, aggregate = fedprox(reset=True)\ndtype = 'float64'\n",
    )
    assert main(["audit", "--torch", good, "--algorithm", "fedprox", "--rounds", "5"]) == 0
    assert "MATCHES" in capsys.readouterr().out
    assert main(["audit", "--torch", bad, "--algorithm", "fedprox", "--rounds", "5"]) == 1
    assert "WHY: reset_clients" in capsys.readouterr().out
    none = _module(tmp_path, "none", "from _audit_torch_impls import model\n")
    assert main(["audit", "--torch", none, "--algorithm", "fedprox", "--rounds", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "defines no train" in err


def test_cli_flower_module(tmp_path, capsys):
    pytest.importorskip("flwr", reason="the Flower adapter needs flwr (the audit extra)")
    mod = _module(
        tmp_path,
        "fl",
        "from flwr.server.strategy import FedAvg\nfrom _audit_flower_impls import GDClient\n"
        "strategy = FedAvg()\nclient_fn = GDClient\n",
    )
    args = ["audit", "--flower", mod, "--algorithm", "fedavg", "--rounds", "8"]
    assert main(args) == 1  # Flower's FedAvg weights by num_examples: the paper's p_i are uniform here
    assert "WHY: weights_by_samples" in capsys.readouterr().out
    assert main([*args, "--weights", "samples"]) == 0
    assert "MATCHES" in capsys.readouterr().out
    nostrat = _module(tmp_path, "ns", "client_fn = None\n")
    assert main(["audit", "--flower", nostrat, "--algorithm", "fedavg", "--rounds", "2"]) == 2
    assert "defines no strategy" in capsys.readouterr().err
