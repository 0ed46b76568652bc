"""Sharp constants derived with sympy (analysis/engine/sharp.py) against independent numerics.

Every derived formula is compared with a dense numeric maximisation over a fine grid of the
eigenvalue a, the per-eigenvalue ratio written here again in numpy (not taken from the
derivation); the instances of the checkers never exceed their derived sup, reach it where the
generator draws the adversarial eigenvector, and equal max_k g(a_k) over their exact spectrum;
wrong derivations (a wrong formula, a wrong eigenvalue range, an unsplit case) are rejected."""

from __future__ import annotations

import dataclasses
import json
from functools import partial

import numpy as np
import pytest

from moreau._cli import main
from moreau.analysis.engine import registry, runner
from moreau.analysis.engine import sharp as _sharp
from moreau.analysis.engine.analyse import analyse
from moreau.analysis.engine.core import RTOL, Statement
from moreau.analysis.fedprox.sharp_constants import fedprox_lemma2
from moreau.analysis.perfedavg.sharp_constants import perfedavg_lemma4_2, perfedavg_lemma4_4
from moreau.analysis.pfedme.sharp_constants import pfedme_prop1
from moreau.analysis.thesis.sharp_constants import gd_strongly_convex


def _logu(rng, lo, hi, n):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n))


def _base(rng, n):
    L = _logu(rng, 0.1, 10.0, n)
    return {"L": L, "lam": L * _logu(rng, 1e-3, 1e3, n), "mu": L * rng.uniform(0.01, 1.0, n)}


def _kappa(a, lam):
    return lam * a / (lam + a)


#: (derivation, case index) -> (parameter sampler, numpy ratio g(a, p), interval (lo, hi) of p,
#: absolute): written from the statements, independently of the sympy derivation
CASES = {
    "pfedme.prop1 convex": (
        partial(pfedme_prop1, "convex"),
        0,
        _base,
        lambda a, p: _kappa(a, p["lam"]) / p["lam"],
        lambda p: (0 * p["L"], p["L"]),
        True,
    ),
    "pfedme.prop1 nonconvex": (
        partial(pfedme_prop1, "nonconvex"),
        0,
        lambda rng, n: {**_base(rng, n), "lam": 0},  # lam set below
        lambda a, p: _kappa(a, p["lam"]) / p["lam"],
        lambda p: (-p["L"], p["L"]),
        True,
    ),
    "pfedme.prop1 mu_F": (
        partial(pfedme_prop1, "mu_F"),
        0,
        _base,
        lambda a, p: _kappa(p["mu"], p["lam"]) / _kappa(a, p["lam"]),
        lambda p: (p["mu"], p["L"]),
        False,
    ),
    "fedprox.lemma2 mu_g": (
        partial(fedprox_lemma2, "mu_g"),
        0,
        _base,
        lambda a, p: _kappa(p["mu"], p["lam"]) / _kappa(a, p["lam"]),
        lambda p: (p["mu"], p["L"]),
        False,
    ),
    "fedprox.lemma2 L_g": (
        partial(fedprox_lemma2, "L_g"),
        0,
        _base,
        lambda a, p: _kappa(a, p["lam"]) / _kappa(p["L"], p["lam"]),
        lambda p: (p["mu"], p["L"]),
        True,
    ),
    "fedprox.lemma2 mu_l": (
        partial(fedprox_lemma2, "mu_l"),
        0,
        _base,
        lambda a, p: (p["mu"] + p["lam"]) / (a + p["lam"]),
        lambda p: (p["mu"], p["L"]),
        False,
    ),
    "fedprox.lemma2 L_l": (
        partial(fedprox_lemma2, "L_l"),
        0,
        _base,
        lambda a, p: (a + p["lam"]) / (p["L"] + p["lam"]),
        lambda p: (p["mu"], p["L"]),
        True,
    ),
    "fedprox.lemma2 L_w": (
        partial(fedprox_lemma2, "L_w"),
        0,
        _base,
        lambda a, p: (p["lam"] / (p["lam"] + a)) / (p["lam"] / (p["lam"] + p["mu"])),
        lambda p: (p["mu"], p["L"]),
        True,
    ),
}


def _alpha(lo, hi):
    def sample(rng, n):
        L = _logu(rng, 0.1, 10.0, n)
        u = rng.uniform(lo, hi, n)
        u[:2] = lo, hi  # the case's ends (alpha = 0 included for the first case)
        return {"L": L, "alpha": u / L, "a1": -L}

    return sample


def _meta(a, p):
    return a * (1 - p["alpha"] * a) ** 2 / (4 * p["L"])


for _part, _lo in (("convex", 0.0), ("nonconvex", -1.0)):
    for _k, (_u0, _u1) in enumerate(((0.0, 1 / 3), (1 / 3, 1.0))):
        CASES[f"perfedavg.lemma4_2 {_part} {_k}"] = (
            partial(perfedavg_lemma4_2, _part),
            _k,
            _alpha(_u0, _u1),
            _meta,
            (lambda lo: lambda p: (lo * p["L"], p["L"]))(_lo),
            True,
        )
CASES["perfedavg.lemma4_4 nonconvex"] = (
    perfedavg_lemma4_4,
    0,
    _alpha(0.0, 1.0),
    lambda a, p: (1 - p["alpha"] * a) ** 4 / 192,
    lambda p: (-p["L"], p["L"]),
    False,
)
CASES["perfedavg.lemma4_4 convex"] = (
    perfedavg_lemma4_4,
    1,
    _alpha(0.0, 1.0),
    lambda a, p: (1 - p["alpha"] * a) ** 4 / 192,
    lambda p: (0 * p["L"], p["L"]),
    False,
)


def _gd(rng, n):
    L = _logu(rng, 0.1, 10.0, n)
    return {"L": L, "mu": L * rng.uniform(0.01, 0.99, n), "eta": rng.uniform(0.01, 1.0, n) / L}


# GD: after t steps the ratio is ((1 - eta a)^2/(1 - mu eta))^t: the grid also runs over t = 1..6
CASES["gd.strongly_convex"] = (
    gd_strongly_convex,
    0,
    _gd,
    lambda a, p: np.max(
        [((1 - p["eta"] * a) ** 2 / (1 - p["mu"] * p["eta"])) ** t for t in range(1, 7)], axis=0
    ),
    lambda p: (p["mu"], p["L"]),
    False,
)


def _params(key, rng, n=40):
    make, k, sample, g, interval, absolute = CASES[key]
    p = sample(rng, n)
    if key == "pfedme.prop1 nonconvex":
        p["lam"] = p["L"] * (2 + _logu(rng, 1e-6, 100.0, n))
    return make(), k, p, g, interval, absolute


def _grid_max(g, interval, p, absolute, m=20001):
    lo, hi = interval(p)
    u = np.linspace(0.0, 1.0, m)[:, None]
    a = lo + (hi - lo) * u  # endpoints exactly on the grid
    v = g(a, p)
    return np.max(np.abs(v) if absolute else v, axis=0)


def _agrees(d, k, p, g, interval, absolute, rtol=1e-6):
    """The derived case formula is >= the grid max (it is a sup) and within the grid's resolution."""
    derived = np.asarray(d.funcs[k](**p), dtype=float) * np.ones_like(p["L"])
    grid = _grid_max(g, interval, p, absolute)
    return bool(np.all(derived >= grid * (1 - 1e-12)) and np.all(derived <= grid * (1 + rtol))), derived, grid


@pytest.mark.parametrize("key", list(CASES))
def test_derived_formula_matches_a_dense_grid_over_a(key):
    d, k, p, g, interval, absolute = _params(key, np.random.default_rng(7))
    assert d.proved, [t for ok, t in d.steps if not ok]
    ok, derived, grid = _agrees(d, k, p, g, interval, absolute)
    assert ok, (key, d.cases[k]["formula"], np.max(np.abs(derived / grid - 1)))


#: wrong formulas (one per derivation kind), which the same grid comparison must reject
WRONG = {
    "pfedme.prop1 convex": lambda lam, L: L / (lam + 2 * L),  # a constant off
    "pfedme.prop1 nonconvex": lambda lam, L: L / (lam + L),  # the wrong end of [-L, L]
    "perfedavg.lemma4_2 convex 1": lambda alpha, L: (
        (1 - alpha * L) ** 2 / 4
    ),  # the endpoint, not the critical point
    "perfedavg.lemma4_2 nonconvex 1": lambda alpha, L: (1 + alpha * L) ** 3 / 4,  # a wrong exponent
    "perfedavg.lemma4_4 nonconvex": lambda alpha, L, a1: (1 + alpha * L) ** 4 / 12,  # the paper's 192 dropped
    "gd.strongly_convex": lambda mu, L, eta: (1 - mu * eta) ** 2,  # the (true) per-step rate, not the ratio
}


@pytest.mark.parametrize("key", list(WRONG))
def test_a_wrong_derived_formula_is_rejected_by_the_grid(key):
    d, k, p, g, interval, absolute = _params(key, np.random.default_rng(7))
    funcs = list(d.funcs)
    funcs[k] = _sharp._kw(WRONG[key], list(d.params))
    wrong = dataclasses.replace(d, funcs=tuple(funcs))
    assert not _agrees(wrong, k, p, g, interval, absolute)[0]


def test_sup_over_parameters_matches_a_grid_over_a_and_the_ratio():
    """The sup over all admissible parameters (a limit or attained) against a grid over (x, a)."""
    rng = np.random.default_rng(0)
    # a linear grid, log-spaced points from 1e-6 to 1e6 and points just above lam/L = 2 (a limit)
    x = np.concatenate([np.linspace(0, 1, 2001), _logu(rng, 1e-6, 1e6, 2000), 2 + np.logspace(-8, 0, 200)])
    checks = {  # key -> (parameters as a function of the dimensionless x, with L = 1; admissible x)
        "pfedme.prop1 convex": (lambda x: {"L": 1.0 + 0 * x, "lam": x}, x > 0),
        "pfedme.prop1 nonconvex": (lambda x: {"L": 1.0 + 0 * x, "lam": x}, x > 2),
        "perfedavg.lemma4_2 convex 0": (lambda x: {"L": 1.0 + 0 * x, "alpha": x}, x <= 1),
        "perfedavg.lemma4_2 nonconvex 1": (lambda x: {"L": 1.0 + 0 * x, "alpha": x}, x <= 1),
        "perfedavg.lemma4_4 nonconvex": (lambda x: {"L": 1.0 + 0 * x, "alpha": x}, x <= 1),
        "gd.strongly_convex": (
            lambda x: {"L": 1.0 + 0 * x, "mu": 0.5 + 0 * x, "eta": 2 * x},
            (x > 0) & (x < 0.5),
        ),
    }
    for key, (params, admissible) in checks.items():
        make, k, _, g, interval, absolute = CASES[key]
        d = make()
        p = params(x[admissible])
        grid = float(np.max(_grid_max(g, interval, p, absolute, m=2001)))
        sup = d.sup_value
        assert grid <= sup * (1 + 1e-12), key
        assert grid >= sup * (1 - 1e-3), (key, grid, sup)  # limits are approached within the grid's reach
    assert perfedavg_lemma4_2("convex").sup_value == pytest.approx(0.25, abs=1e-15)  # at alpha = 0
    assert perfedavg_lemma4_4().sup_value == pytest.approx(1 / 12, abs=1e-15)  # 16/192 at alpha L = 1
    by = {c["name"]: c for c in pfedme_prop1("nonconvex").cases}
    assert not next(iter(by.values()))["attained"]  # lam > 2L is strict: the sup 1 is a limit


def test_an_unsplit_case_is_not_proved():
    """Per-FedAvg's convex ratio without the split at alpha L = 1/3: the critical point 1/(3 alpha)
    is neither certified inside nor outside [0, L], so the derivation must not claim a formula."""
    import sympy as sp

    from moreau.symbolic import quadratic_formulas, symbols

    a, alpha = symbols()["a"], symbols()["alpha"]
    L = sp.Symbol("L", positive=True)
    t = sp.Symbol("t", nonnegative=True)
    case = _sharp.Case(
        "alpha L <= 1",
        (0, L),
        {alpha: 1 / (L * (1 + t))},
        lambda v: v["L"] > 0,
        ("alpha L", {alpha: sp.Symbol("x", nonnegative=True) / L}, 0, 1, False, False),
    )
    d = _sharp.derive(
        quadratic_formulas().meta_curvature / (4 * L),
        a,
        (case,),
        {"alpha": lambda B: B["alpha"], "L": lambda B: B["L"]},
        absolute=True,
    )
    assert not d.proved and d.formula == "NOT PROVED"
    assert any("position unknown" in t for ok, t in d.steps if not ok)


DECLARED = [
    (sid, fam, part)
    for sid, st in registry.catalogue().items()
    for fam, parts in st.sharp.items()
    for part in parts
]


def test_declarations_name_real_parts():
    """A declared part name that the checker does not produce would silently never be used."""
    assert len(DECLARED) >= 12
    for sid, fam in {(s, f) for s, f, _ in DECLARED}:
        (rec,) = runner.run([sid], fam)
        names = {p.name for p in rec.result.parts}
        assert set(registry.catalogue()[sid].sharp[fam]) <= names, (sid, fam)


#: (statement, part) whose instance ratio is max_k g(a_k) over the instance's spectrum (the others
#: mix eigen-directions: a weighted mean over k, or a max over steps of one)
SPECTRAL = {
    ("pfedme.prop1", "smoothness L_F = λ (f convex)"): ("pfedme.prop1 convex", lambda B: B["L"]),
    ("pfedme.prop1", "smoothness L_F = λ (f nonconvex, λ > 2L)"): (
        "pfedme.prop1 nonconvex",
        lambda B: B["L"],
    ),
    ("pfedme.prop1", "strong convexity μ_F = λμ/(λ+μ)"): ("pfedme.prop1 mu_F", lambda B: B["L"]),
    ("fedprox.lemma2", "F_i smooth, L_g = λL/(λ+L)"): ("fedprox.lemma2 L_g", lambda B: B["eig"][:, -1]),
    ("fedprox.lemma2", "prox map Lipschitz, L_w = λ/(λ+μ)"): (
        "fedprox.lemma2 L_w",
        lambda B: B["eig"][:, -1],
    ),
    ("perfedavg.lemma4_2", "smoothness L_F = 4L + αρB (f convex)"): (
        "perfedavg.lemma4_2 convex 0",
        lambda B: B["L"],
    ),
}


@pytest.mark.parametrize("seed", [None, 1, 2])
@pytest.mark.parametrize("sid", sorted({s for s, _, _ in DECLARED}))
def test_instances_never_exceed_the_derived_sup_and_reach_it(sid, seed):
    (rec,) = runner.run([sid], "quadratic", seed=seed) if seed is not None else runner.run([sid], "quadratic")
    a = analyse(rec)
    declared = registry.catalogue()[sid].sharp["quadratic"]
    entries = {e["part"]: e for e in a["sharpest"]}
    for part in declared:
        e = entries[part]
        d = e["derived"]
        assert d["proved"] and d["exceeded"] == 0, (sid, part, d.get("exceeded_instance"))
        assert d["instances_reach"] <= d["value"] * (1 + RTOL)
        assert e["sample_max"] == d["instances_reach"]
        assert d["attained_on"] >= 1, (sid, part)  # the adversarial eigenvector is drawn
        assert d["uncovered"] == 0
        # independent: the instance's ratio is max_k g(a_k) over its exact spectrum
        if (sid, part) in SPECTRAL:
            key, top = SPECTRAL[(sid, part)]
            _, _, _, g, _, absolute = CASES[key]
            p = next(q for q in rec.result.parts if q.name == part)
            B = rec.batch
            params = {"L": top(B), "lam": B.get("lam"), "mu": B["eig"][:, 0], "alpha": B.get("alpha")}
            with np.errstate(divide="ignore", invalid="ignore"):  # a = 0 of convex instances (not applicable)
                v = g(B["eig"].T, params)
            expect = np.max(np.abs(v) if absolute else v, axis=0)
            app = p.sides.applicable
            np.testing.assert_allclose(p.ratio[app], expect[app], rtol=1e-9)


def test_a_derivation_over_the_wrong_range_is_caught_by_the_instances(monkeypatch):
    """pFedMe's nonconvex L_F derived (wrongly) over a in [0, L]: L/(L + lam) < the ratio the
    instances with a_1 = -L reach, so --analyse reports them as exceeding it."""
    import sympy as sp

    from moreau.symbolic import quadratic_formulas, symbols

    S = symbols()
    L, s = sp.Symbol("L", positive=True), sp.Symbol("s", nonnegative=True)
    x = sp.Symbol("x", nonnegative=True)
    case = _sharp.Case(
        "wrong range a in [0, L]",
        (0, L),
        {S["lam"]: L * (2 + s)},
        lambda v: v["L"] > 0,
        ("lam/L", {S["lam"]: x * L}, 2, sp.oo, True, True),
    )
    wrong = _sharp.derive(
        quadratic_formulas().envelope_curvature / S["lam"],
        S["a"],
        (case,),
        {"lam": lambda B: B["lam"], "L": lambda B: B["L"]},
        absolute=True,
    )
    assert wrong.proved and wrong.formula == "L/(L + lam)"
    st = registry.catalogue()["pfedme.prop1"]
    part = "smoothness L_F = λ (f nonconvex, λ > 2L)"
    bad = Statement(**{**st.__dict__, "sharp": {"quadratic": {part: lambda: wrong}}})
    monkeypatch.setattr(runner, "catalogue", lambda: {"pfedme.prop1": bad})
    (rec,) = runner.run(["pfedme.prop1"], "quadratic")
    d = {e["part"]: e for e in analyse(rec)["sharpest"]}[part]["derived"]
    assert d["exceeded"] > 0
    i = d["exceeded_instance"]
    assert rec.batch["eig"][i, 0] < 0  # the counterexample has a negative eigenvalue


def test_analyse_prints_and_writes_the_derivation(tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["check", "perfedavg.lemma4_4", "--analyse", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sup LHS/RHS = (L*alpha + 1)^4/192" in out and "1/12 at alpha L = 1" in out
    assert "derived: no one-eigenvalue derivation" not in out  # the logistic family has none: nothing printed
    by = {j["family"]: j for j in json.loads(path.read_text())}
    (q,) = by["quadratic"]["analyse"]["sharpest"]
    assert set(q["derived"]) >= {"formula", "value", "instances_reach", "exceeded", "sup_over_parameters"}
    assert q["derived"]["value"] == pytest.approx(1 / 12) and q["derived"][
        "instances_reach"
    ] == pytest.approx(1 / 12)
    assert all(e["derived"] is None for e in by["logistic"]["analyse"]["sharpest"])
