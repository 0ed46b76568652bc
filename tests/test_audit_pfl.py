"""moreau audit of PerMFL, pFL^MF and Per-FedAvg (issue 30): each engine's reference with default
knobs is moreau.fl's algorithm; independent faithful loops (tests/_audit_pfl_impls.py) match;
deliberately deviant ones are diagnosed as their deviation (the authors' code's among them) with
the right parameter; the exact targets are checked against independent computations."""

from __future__ import annotations

import _audit_pfl_impls as impls
import numpy as np
import pytest
from scipy.optimize import minimize

from moreau import audit as A
from moreau import fl
from moreau.audit._permfl import teams_of, value_G


def test_permfl_reference_with_default_knobs_is_moreau_fl():
    inst = A.team_instance(seed=3, teams=(0, 1, 0, 2, 1, 0))
    h = A.DEFAULT_HYPER["permfl"]
    g, theta = A.run_variant("permfl", inst, h, 6, 0)
    ref = fl.permfl(inst.objective, [0, 1, 0, 2, 1, 0], rounds=6, **h)
    np.testing.assert_allclose(g, np.asarray(ref.w_global), rtol=0, atol=1e-14)
    np.testing.assert_allclose(theta, np.asarray(ref.theta), rtol=0, atol=1e-14)


def test_pflmf_reference_with_default_knobs_is_moreau_fl():
    inst = A.lowrank_instance(seed=2, weights="samples")
    h = {**A.DEFAULT_HYPER["pflmf"], "rank": 2}
    g, X = A.run_variant("pflmf", inst, h, 6, 4)
    U0, V0 = A.pflmf_unpack(g[0], inst, 2)
    rng = np.random.default_rng(4)  # the start as moreau.fl.pflmf draws it from the seed
    np.testing.assert_array_equal(U0, rng.standard_normal((3, 2)) / np.sqrt(3))
    ref = fl.pflmf(inst.objective, 2, rounds=6, eta_u=0.3, eta_v=0.1, tau=5, weights=inst.weights, rng=4)
    U, V = A.pflmf_unpack(g[-1], inst, 2)
    np.testing.assert_allclose(U, np.asarray(ref.w_global[-1]), rtol=0, atol=1e-14)
    np.testing.assert_allclose(V, np.asarray(ref.w_local[-1]), rtol=0, atol=1e-14)
    np.testing.assert_allclose(X, np.asarray(ref.theta), rtol=0, atol=1e-14)


@pytest.mark.parametrize(("family", "S"), [("quadratic", None), ("quadratic", 3), ("logistic", 2)])
def test_perfedavg_reference_with_default_knobs_is_moreau_fl(family, S):
    inst = A.instance(family, seed=4)
    h = {**A.DEFAULT_HYPER["perfedavg"], "S": S}
    g, loc = A.run_variant("perfedavg", inst, h, 6, 7)
    ref = fl.per_fedavg(
        inst.objective, alpha=0.05, beta=0.1, tau=5, rounds=6, S=S, rng=np.random.default_rng(7)
    )
    np.testing.assert_allclose(g, np.asarray(ref.w_global), rtol=0, atol=1e-14)
    np.testing.assert_allclose(loc, np.asarray(ref.w_local), rtol=0, atol=1e-14)


@pytest.mark.parametrize(
    ("algorithm", "impl", "kw"),
    [
        ("permfl", impls.permfl, {}),
        ("pflmf", impls.pflmf, {}),
        ("perfedavg", impls.per_fedavg, {}),
        ("perfedavg", impls.per_fedavg, {"hyper": {"S": 3}}),
        ("perfedavg", impls.per_fedavg, {"family": "logistic"}),
    ],
    ids=["permfl", "pflmf", "perfedavg", "perfedavg-S3", "perfedavg-logistic"],
)
def test_faithful_independent_loops_match(algorithm, impl, kw):
    r = A.audit(impl(), algorithm, rounds=15, **kw)
    assert r.matches and r.exit_code == 0 and r.fits == ()
    assert np.max(r.distance) <= 1e-12 * (1 + np.max(np.abs(r.w_ref)))
    assert "MATCHES" in str(r)
    assert r.bias == pytest.approx(r.reference_bias, rel=1e-9, abs=1e-13)


CASES = [  # (algorithm, deviant, audit kwargs, expected deviations, expected parameters)
    ("permfl", impls.permfl(lam_is_L=True), {}, ("lam_device_bound_to_L",), {}),
    ("permfl", impls.permfl(batch=7), {}, ("sequential_batches",), {"B": 7}),
    ("permfl", impls.permfl(l2=1e-3), {}, ("extra_l2",), {"mu": 1e-3}),
    (
        "permfl",
        impls.permfl(lam_is_L=True, batch=7),
        {"rounds": 5},  # (every pair is fitted: fewer rounds keep the test short)
        ("lam_device_bound_to_L", "sequential_batches"),
        {"B": 7},
    ),
    ("pflmf", impls.pflmf(fedper=True), {}, ("fedper",), {}),
    ("pflmf", impls.pflmf(frozen=True), {}, ("frozen_personal",), {}),
    ("pflmf", impls.pflmf(by_samples=True), {}, ("weights_by_samples",), {}),
    ("pflmf", impls.pflmf(fedper=True, by_samples=True), {}, ("weights_by_samples", "fedper"), {}),
    (
        "pflmf",
        impls.pflmf(fedper=True, by_samples=True, f32=True),
        {},
        ("weights_by_samples_float32", "fedper"),
        {},
    ),
]


@pytest.mark.parametrize(
    ("algorithm", "impl", "kw", "names", "params"), CASES, ids=[f"{c[0]}-{'+'.join(c[3])}" for c in CASES]
)
def test_each_deviation_is_diagnosed_with_its_parameter(algorithm, impl, kw, names, params):
    r = A.audit(impl, algorithm, **{"rounds": 12, **kw})
    assert not r.matches and r.exit_code == 1
    d = r.diagnosis
    assert d is not None and set(d.names) == set(names), str(r)
    for k, v in params.items():
        assert d.params[k] == pytest.approx(v, rel=1e-6)  # B (an integer) exactly: rounded
    assert all(set(f.names) == set(names) for f in r.fits if f.explained), "ambiguous diagnosis"
    assert "WHY: " + " + ".join(d.names) in str(r)


def test_permfl_G_is_the_minimum_of_eq_4_3_over_team_and_device_models():
    inst = A.team_instance(seed=1)
    lam, gamma = 1.5, 0.7
    teams = teams_of(inst)
    M, m, d = 3, inst.m, inst.dim
    N = np.bincount(teams)

    def phi(z, x):  # eq. (4.3) at (x, w, theta), independently from the samples
        w, th = z[: M * d].reshape(M, d), z[M * d :].reshape(m, d)
        out = 0.0
        for j, c in enumerate(inst.clients):
            i = teams[j]
            fj = np.mean((c.X @ th[j] - c.y) ** 2) / 2
            out += (fj + lam / 2 * np.sum((th[j] - w[i]) ** 2) + gamma / 2 * np.sum((w[i] - x) ** 2)) / (
                M * N[i]
            )
        return out

    for x in np.random.default_rng(0).normal(size=(3, d)):
        res = minimize(phi, np.zeros((M + m) * d), args=(x,), method="BFGS", options={"gtol": 1e-11})
        assert value_G(inst, lam, gamma, x) == pytest.approx(res.fun, rel=1e-9)
    x_star = np.asarray(fl.permfl_optimum(inst.objective, teams, lam, gamma)[0])
    g = np.array(
        [
            (value_G(inst, lam, gamma, x_star + h) - value_G(inst, lam, gamma, x_star - h)) / 2e-6
            for h in 1e-6 * np.eye(d)
        ]
    )
    assert np.linalg.norm(g) < 1e-8  # x* from moreau.fl is stationary for the independent G


def test_pflmf_target_is_eckart_young_and_measured_on_the_personalised_models():
    r = A.audit(impls.pflmf(), "pflmf", rounds=3)
    inst, eng = A.lowrank_instance(), A.ENGINES["pflmf"]
    _, F, far = eng.optimum(inst, A.DEFAULT_HYPER["pflmf"])
    # independent: the best rank-1 X under sum_i p_i f_i with equal Hessians A is the truncated SVD of
    # A^{1/2} C W^{1/2}, C the clients' least-squares solutions, W = diag(p_i)
    C = np.stack([np.linalg.lstsq(c.X, c.y, rcond=None)[0] for c in inst.clients])  # (m, d)
    A0 = inst.clients[0].X.T @ inst.clients[0].X / inst.clients[0].n
    a, Q = np.linalg.eigh(A0)
    half, inv_half = Q @ np.diag(np.sqrt(a)) @ Q.T, Q @ np.diag(1 / np.sqrt(a)) @ Q.T
    P, s, Rt = np.linalg.svd(half @ C.T * np.sqrt(inst.weights), full_matrices=False)
    X1 = (inv_half @ (s[0] * np.outer(P[:, 0], Rt[0])) / np.sqrt(inst.weights)).T
    U, V = A.pflmf_unpack(r.optimum, inst, 1)
    np.testing.assert_allclose(V @ U.T, X1, rtol=0, atol=1e-12)
    Ut, Vt = A.pflmf_unpack(r.w_impl[-1], inst, 1)
    assert r.bias == far(r.w_impl[-1], None) == pytest.approx(np.linalg.norm(Vt @ Ut.T - X1), rel=1e-12)
    assert r.gap > 0 and F(r.optimum) < F(r.w_impl[-1])


@pytest.mark.parametrize("family", A.FAMILIES)
def test_perfedavg_optimum_minimises_the_meta_objective(family):
    r = A.audit(impls.per_fedavg(), "perfedavg", family=family, rounds=2)
    inst, a = A.instance(family), A.DEFAULT_HYPER["perfedavg"]["alpha"]

    def F(w):  # (1/m) sum_i f_i(w - alpha grad f_i(w)), independently from the samples
        out = 0.0
        for c in inst.clients:
            v = w - a * impls.grad(c, w)
            z = c.X @ v
            loss = (
                np.mean((z - c.y) ** 2) / 2
                if c.kind == "least_squares"
                else np.mean(np.logaddexp(0, -c.y * z))
            )
            out += (loss + c.mu / 2 * v @ v) / inst.m
        return out

    ref = minimize(F, np.zeros(inst.dim), method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(r.optimum, ref.x, rtol=0, atol=1e-7)  # BFGS's own accuracy
    assert F(r.optimum) <= ref.fun + 1e-15


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: A.audit(impls.permfl(), "permfl", weights="samples"), "weights='uniform'"),
        (lambda: A.audit(impls.permfl(), "permfl", family="logistic"), "quadratic devices"),
        (lambda: A.audit(impls.pflmf(), "pflmf", family="logistic"), "quadratic clients"),
        (lambda: A.audit(impls.pflmf(), "pflmf", hyper={"rank": 0}), "rank must be an int >= 1"),
        (lambda: A.team_instance(teams=(0, 2)), "team 1 has none"),
        (lambda: A.audit((impls.permfl(), impls.permfl()), "permfl"), "round function"),
        (lambda: A.audit(impls.per_fedavg(), "perfedavg", weights="samples"), "weights='uniform'"),
    ],
    ids=[
        "permfl-weights",
        "permfl-logistic",
        "pflmf-logistic",
        "pflmf-rank",
        "teams",
        "pair",
        "perfedavg-weights",
    ],
)
def test_bad_arguments_are_one_line_errors(call, match):
    with pytest.raises(ValueError, match=match) as e:
        call()
    assert "\n" not in str(e.value)


def test_cli_permfl_module(tmp_path, capsys):
    from pathlib import Path

    from moreau._cli import main

    here = Path(__file__).resolve().parent
    mod = tmp_path / "my_permfl.py"
    mod.write_text(
        f"import sys\nsys.path.insert(0, {str(here)!r})\nimport _audit_pfl_impls\n"
        "round_fn = _audit_pfl_impls.permfl(lam_is_L=True)\n"
    )
    assert main(["audit", "--module", str(mod), "--algorithm", "permfl", "--rounds", "4"]) == 1
    assert "WHY: lam_device_bound_to_L" in capsys.readouterr().out
    assert main(["audit", "--module", str(mod), "--algorithm", "permfl", "--weights", "samples"]) == 2
    assert "weights='uniform'" in capsys.readouterr().err
