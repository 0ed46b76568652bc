"""``moreau check --analyse``: condition necessity, scale consistency and sharpest constants can
each find something (toy statements whose answer is known), and run on the real catalogue."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from moreau._cli import main
from moreau.analysis.engine import registry, runner
from moreau.analysis.engine.analyse import SCALES, analyse
from moreau.analysis.engine.core import Sides, Statement, scale_fields


def _instances(family, trials, rng):
    T = trials or 40
    # |w| <= 2: "|w| <= 3" holds on every draw (with w ~ N(0, 1) it failed on one in 370, which the
    # default run's short search finds)
    return {"L": rng.uniform(0.5, 4.0, T), "lam": rng.uniform(0.1, 10.0, T), "w": rng.uniform(-2.0, 2.0, T)}


def _evaluate(batch, claim):
    L, lam, w = batch["L"], batch["lam"], batch["w"]
    env = lam * L / (lam + L)  # the true smoothness of the envelope of L w^2/2
    return {
        # the envelope is lam-smooth: true for every lam > 0; the claim's condition lam > 2L is not needed
        "env <= lam (lam > 2L)": Sides(env, lam, "upper", applicable=claim["condition"](lam, L)),
        # a bound that holds only where lam >= L: its applicability mask carries a necessary assumption
        "lam L/(lam + L) <= L/2 (lam <= L)": Sides(env, L / 2, "upper", applicable=lam <= L),
        # not scale-consistent: |w| (a length) against 3 (a number)
        "|w| <= 3": Sides(np.abs(w), 3.0 + 0 * w, "upper"),
    }


TOY = Statement(
    id="toy.analyse",
    source="toy",
    paper="none.md",
    latex="",
    text="toy",
    assumptions=(),
    families={"quadratic": ("toy",)},
    claimed="upper",
    instances=_instances,
    evaluate=_evaluate,
    claim={"condition": lambda lam, L: lam > 2 * L},
    scaling={"quadratic": scale_fields({"L": (-2, 1), "lam": (-2, 1), "w": (1, 0)})},
)


@pytest.fixture
def toy(monkeypatch):
    cat = {"toy.analyse": TOY}
    monkeypatch.setattr(registry, "catalogue", lambda: cat)
    monkeypatch.setattr(runner, "catalogue", lambda: cat)
    return cat


def test_analyses_find_what_the_toy_hides(toy):
    (rec,) = runner.run(seed=3)
    a = analyse(rec)
    by = {c["condition"]: c for c in a["conditions"]}
    assert by["condition"]["verdict"] == "appears unnecessary" and by["condition"]["admitted"] > 0
    part = by["assumptions of part 'lam L/(lam + L) <= L/2 (lam <= L)'"]
    assert part["verdict"] == "necessary"
    i = part["instance"]
    assert rec.batch["lam"][i] > rec.batch["L"][i]  # the counterexample lies outside the assumption
    # scale: only the |w| <= 3 part changes (by the factor s), under every (s, c) with s != 1
    assert a["scale_declared"] and {e["part"] for e in a["scale"]} == {"|w| <= 3"}
    e = a["scale"][0]
    assert e["after"] == pytest.approx(e["before"] * e["s"])
    # sharpest constants: the first part is attained as lam -> inf (ratio < 1), the worst instance is
    # the one with the largest L/(lam + L)... i.e. the largest ratio; reported with its parameters
    sh = {x["part"]: x for x in a["sharpest"]}
    first = sh["env <= lam (lam > 2L)"]
    app = rec.batch["lam"] > 2 * rec.batch["L"]
    L, lam = rec.batch["L"][app], rec.batch["lam"][app]
    assert first["sample_max"] == pytest.approx(np.max(L / (lam + L)))  # the batch's own maximum
    # the sharpest constant comes from the optimiser: sup L/(lam + L) over lam > 2L is 1/3 (lam -> 2L)
    assert first["sample_max"] <= first["sharpest_factor"] == pytest.approx(1 / 3, rel=1e-6)
    assert set(first["worst_parameters"]) == {"L", "lam", "w", "L/lam"}  # L/lam: both curvatures
    wp = first["worst_parameters"]
    assert wp["L/lam"] == pytest.approx(wp["L"] / wp["lam"])
    assert first["dependence"]["L/lam"]["upper half"] == pytest.approx(
        first["sample_max"]
    )  # grows with L/lam
    assert first["dependence"]["L"]["upper half"] >= first["dependence"]["L"]["lower half"]


def test_analyse_flag_reports_and_writes_json(toy, tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(["check", "--analyse", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "condition condition: appears unnecessary" in out
    assert "NOT SCALE-CONSISTENT: |w| <= 3" in out and "NECESSARY" in out
    (j,) = json.loads(path.read_text())
    assert set(j["analyse"]) == {
        "claim",
        "conditions",
        "scale",
        "scale_declared",
        "scales_tried",
        "scale_not_declared_because",
        "sharpest",
        "conditions_found",
        "nested",
    }
    # the toy holds, and without its condition too: no condition to find (engine.conditions)
    assert j["analyse"]["conditions_found"] == []
    assert j["analyse"]["claim"] == "printed"
    assert j["analyse"]["scales_tried"] == [list(p) for p in SCALES]


def test_statement_without_a_scaling_is_reported_as_not_analysed(monkeypatch, capsys):
    bare = Statement(**{**TOY.__dict__, "id": "toy.bare", "scaling": {}})
    monkeypatch.setattr(registry, "catalogue", lambda: {"toy.bare": bare})
    monkeypatch.setattr(runner, "catalogue", lambda: {"toy.bare": bare})
    assert main(["check", "--analyse"]) == 0
    assert "scale consistency: not analysed" in capsys.readouterr().out


#: statements the scale analysis finds inconsistent (docs/findings-catalogue.md): id -> the only kind of change
SCALE_FINDINGS = {
    "pfedme.thm2": "applicability",  # lam >= sqrt(8L^2 + 1): a number added to L^2
    "perfedavg.thm4_5": "slope",
}  # Corollary 4.6: beta = eps, a step set to an accuracy
DECLARED = [
    (sid, fam)
    for sid, st in registry.catalogue().items()
    for fam, v in st.scaling.items()
    if not isinstance(v, str)
]


def test_every_statement_declares_its_scaling_or_says_why_not():
    """--analyse covers the whole catalogue: each (statement, family) has a scaling or a reason."""
    missing = [
        (sid, fam) for sid, st in registry.catalogue().items() for fam in st.families if fam not in st.scaling
    ]
    assert not missing
    for st in registry.catalogue().values():
        for v in st.scaling.values():
            assert callable(v) or (isinstance(v, str) and len(v) > 20)


@pytest.mark.parametrize("case", DECLARED, ids=lambda c: f"{c[0]}-{c[1]}")
def test_declared_scalings_of_the_catalogue_are_consistent(case):
    """Every statement whose checker declares its scaling is scale-consistent on its default batch,
    except the findings (a new failure here is either a finding or a wrong declaration: read it)."""
    sid, fam = case
    (rec,) = runner.run([sid], fam)
    a = analyse(rec)
    assert a["scale_declared"] and a["scales_tried"]
    if sid in SCALE_FINDINGS and fam == "quadratic":
        assert a["scale"] and {e["what"] for e in a["scale"]} == {SCALE_FINDINGS[sid]}
    else:
        assert a["scale"] == [], a["scale"][:3]


def test_pfedme_thm2_condition_is_not_scale_consistent_by_hand():
    """The finding without the checker: lam^2 >= 8 L^2 + 1 at L = 1, lam = 3 (equality), and for the
    same functions after theta -> 8 theta (curvatures / 64)."""
    from fractions import Fraction as Fr

    L, lam = Fr(1), Fr(3)
    assert lam**2 >= 8 * L**2 + 1
    L8, lam8 = L / 64, lam / 64
    assert not lam8**2 >= 8 * L8**2 + 1
    # eta_hat_2 = 1/(75 L_F lam^2), L_F = lam: changes by 64^3, a step size by 64
    eta = 1 / (75 * lam * lam**2)
    assert (1 / (75 * lam8 * lam8**2)) / eta == 64**3


def test_a_wrong_scaling_of_a_real_checker_is_caught(monkeypatch):
    """L declared dimensionless (it is a curvature, c/s^2): the condition lam > 2L of pfedme.prop1's
    nonconvex part then admits other instances after rescaling."""
    from moreau.analysis.engine.core import QUADRATIC_SCALING

    st = registry.catalogue()["pfedme.prop1"]
    wrong = Statement(
        **{
            **st.__dict__,
            "scaling": {"quadratic": scale_fields({k: v for k, v in QUADRATIC_SCALING.items() if k != "L"})},
        }
    )
    monkeypatch.setattr(runner, "catalogue", lambda: {"pfedme.prop1": wrong})
    (rec,) = runner.run(["pfedme.prop1"], "quadratic")
    issues = analyse(rec)["scale"]
    assert issues and {e["what"] for e in issues} == {"applicability"}


def test_a_bound_that_turns_negative_without_its_condition_is_vacuous_not_necessary():
    """Regression: NECESSARY came from a negative right side (pfedme.prop1, lemma2 (b), thm2, ...)."""
    from moreau.analysis.engine.analyse import VACUOUS, _conditions
    from moreau.analysis.engine.core import Sides, Statement

    def evaluate(batch, claim):
        ok = claim["condition"](batch["x"])
        return {"x <= 1/(2 - x)": Sides(batch["x"], 1 / (2 - batch["x"]), "upper", applicable=ok)}

    st = Statement(
        id="toy.vac",
        source="toy",
        paper="none.md",
        latex="",
        text="",
        assumptions=(),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=lambda f, t, r: {},
        evaluate=evaluate,
        claim={"condition": lambda x: x < 1},
    )
    batch = {"x": np.array([0.5, 3.0])}  # x = 3: rhs = -1 < 0 < lhs, the bound is vacuous there
    base = st.run("quadratic", None, None, batch=batch)
    (c,) = [c for c in _conditions(st, "quadratic", batch, batch, base) if c["kind"] == "claim"]
    assert c["verdict"] == VACUOUS and c["instance"] == 1


def test_a_ratio_that_grows_without_bound_is_reported_not_a_finite_sharpest_constant():
    """(lam + L)/(lam + mu) reaches L/mu as lam -> 0: unbounded over the condition number (issue 18)."""
    from moreau.analysis.engine.analyse import _sharpest
    from moreau.analysis.engine.core import Sides, Statement

    def instances(family, trials, rng):
        T = trials or 200
        return {"mu": 10 ** rng.uniform(-3, 0, T), "L": np.ones(T), "lam": 10 ** rng.uniform(-3, 1, T)}

    def evaluate(b, claim):
        lhs = (b["lam"] + b["L"]) / (b["lam"] + b["mu"])
        return {"ratio": Sides(lhs, np.full(lhs.shape, claim["C"]), "upper")}

    st = Statement(
        id="toy.unb",
        source="toy",
        paper="none.md",
        latex="",
        text="",
        assumptions=(),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim={"C": 1e9},
    )
    batch = instances("quadratic", 300, np.random.default_rng(0))
    # "unbounded" comes from the worst-case search (a growth law fitted along the path it finds)
    (sh,) = _sharpest(st, "quadratic", batch, st.run("quadratic", None, None, batch=batch), 2.0)
    # the growth law is fitted along one parameter's ray, the others fixed at the best point: L -> infinity
    # (slope 1: (lam + L)/(lam + mu) ~ L) or mu -> 0 (where lam is already small)
    grows = {(u["parameter"], u["towards"]) for u in sh["unbounded"]}
    assert grows & {("mu", "0"), ("L", "∞")}
    if ("L", "∞") in grows:  # along L alone the ratio is (lam + L)/(lam + mu): slope 1 once L >> lam
        assert abs(sh["optimised"]["growth"]["slope"] - 1) < 0.05
    # with the condition number bounded by a hypothesis (mu >= L/2, L = 1 fixed) the ratio is bounded by 2:
    # the search reports no growth, and its best stays below the supremum 2

    def evaluate_bounded(b, claim):
        lhs = (b["lam"] + 1.0) / (b["lam"] + b["mu"])
        return {"ratio": Sides(lhs, np.full(lhs.shape, claim["C"]), "upper", applicable=b["mu"] >= 0.5)}

    st_b = dataclasses.replace(st, evaluate=evaluate_bounded)
    bounded = {"mu": 0.5 + 0.5 * np.random.default_rng(1).uniform(size=300), "lam": batch["lam"]}
    (sh,) = _sharpest(st_b, "quadratic", bounded, st_b.run("quadratic", None, None, batch=bounded), 2.0)
    assert not sh["unbounded"] and sh["sharpest_factor"] <= 2e-9 * (1 + 1e-9)


def test_a_condition_necessary_on_one_family_only_is_explained_once(capsys):
    """pFedMe Prop. 1's lam > 2L binds on quadratics (a_1 = -L); logistic losses are convex, so their
    instances never reach it: the report says so instead of contradicting itself."""
    assert main(["check", "pfedme.prop1", "--analyse"]) == 0
    out = capsys.readouterr().out
    assert "pfedme.prop1: condition condition is necessary on quadratic but not shown so on logistic" in out
