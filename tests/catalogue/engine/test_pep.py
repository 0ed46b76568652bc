"""Class worst cases (analysis.pep): PEP solves against closed forms known for these classes.

The closed forms are the literature's, not this code's: GD on L-smooth μ-strongly convex
functions contracts F − F* by exactly max((1 − μη)², (1 − Lη)²) per step (de Klerk, Glineur
& Taylor, Optim. Lett. 11 (2017), Thm 1.2; attained by quadratics, so exact after t steps too);
the Moreau envelope with parameter λ of an L-smooth μ-strongly convex f is λL/(λ+L)-smooth and
λμ/(λ+μ)-strongly convex, and its prox is λ/(λ+μ)-Lipschitz (Bauschke & Combettes, Convex
Analysis and Monotone Operator Theory, Prop. 12.30 and the conjugate form of the envelope);
the envelope of any convex f is λ-smooth, attained by f = |x|; for L-smooth f with curvature
down to −L, ∇F = λ(I − prox) has slope λa/(λ + a) along a curvature a, so λL/(λ − L) at
a = −L; Frank–Wolfe's PEP for n = 10, L = D = 1 is 0.0782895 (PEPit's own example,
``wc_frank_wolfe``, solved there with MOSEK); the descent lemma telescoped gives GD on L-smooth
F (1/T)Σ‖∇F(x^t)‖² ≤ 2(F(x^0) − F(x^T))/(ηT(2 − Lη)), attained at η = 1/L by (L/2)x².
"""

import importlib.util
import json

import numpy as np
import pytest

from moreau.analysis.engine.core import Mutant
from moreau.analysis.engine.registry import get
from moreau.analysis.pep import report as pep
from moreau.analysis.pep.instances import fw_replay, quadratic_through, snap
from moreau.analysis.thesis.fw.pep_boxes import search_boxes

# the solves stop at a relative duality gap of ~1e-8 (Clarabel defaults); 1e-6 leaves room
RTOL = 1e-6


def _pep_modules():
    pytest.importorskip("PEPit", reason="needs the pep extra (pip install -e '.[pep]')")
    pytest.importorskip("cvxpy", reason="needs the pep extra (pip install -e '.[pep]')")
    pytest.importorskip("clarabel", reason="needs the pep extra (pip install -e '.[pep]')")
    from moreau.analysis.pep import classes as _pep_classes
    from moreau.analysis.pep import solve as _pep_solve

    return _pep_classes, _pep_solve


# -- no extra needed -----------------------------------------------------------------------------
def test_missing_extra_names_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "PEPit" else real(name, *a)
    )
    with pytest.raises(ImportError, match=r'extra "pep".*pip install -e "\.\[pep\]".*missing: PEPit'):
        pep.run_pep(["gd.strongly_convex"])


def test_quadratic_through_recovers_a_quadratic():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((3, 3))
    Q, b = M @ M.T, rng.standard_normal(3)
    X = rng.standard_normal((5, 3))
    Q2, b2, res, eig = quadratic_through(X, X @ Q - b)
    np.testing.assert_allclose(Q2, Q, atol=1e-10)
    np.testing.assert_allclose(b2, b, atol=1e-10)
    assert res < 1e-12
    np.testing.assert_allclose(eig, np.linalg.eigvalsh(Q), atol=1e-10)
    assert quadratic_through(X[:2], -(X[:2] @ Q)) is None  # gradients of a concave quadratic: not convex


def test_snap_moves_eigenvalues_to_the_levels_only():
    Q = np.diag([0.0501, 0.5, 0.999])
    Q2, moved = snap(Q, (0.0, 0.05, 1.0))
    np.testing.assert_allclose(np.linalg.eigvalsh(Q2), [0.05, 0.5, 1.0], atol=1e-15)
    assert moved == pytest.approx(1e-3)


def test_fw_replay_on_a_segment():
    # f = x^2/2 on [-1, 1] (x* = 0 listed last), x0 = 1: s0 = -1, x1 = -1, s1 = 1, x2 = -1 + (2/3)... by hand
    V = np.array([[1.0], [-1.0], [0.0]])
    gap, excess, opt = fw_replay(np.eye(1), np.zeros(1), V, V[0], 2, [1, 0])
    x1 = -1.0
    x2 = x1 + 2 / 3 * (1.0 - x1)  # gradient at x1 = -1 < 0: the LMO takes +1
    assert gap == pytest.approx(x2**2 / 2, abs=1e-15)
    assert excess == 0.0 and opt == 0.0


def _record(**kw):
    base = dict(
        id="x.y",
        part="p",
        parameters={"t": 1.0},
        pep_value=1.0,
        pep_ratio=1.0,
        solver="CLARABEL",
        status="optimal",
        instances_max_ratio=1.0,
        paper_constant=1.0,
        verdict="tight over the class",
        note="",
        required=True,
        outside_conditions=False,
        **{"class": "c"},
    )
    base.update(kw)
    return base


@pytest.mark.parametrize(
    "kw, ok",
    [
        ({}, True),
        ({"status": "failed: boom", "pep_value": None, "pep_ratio": None}, False),
        ({"status": "failed: boom", "pep_value": None, "pep_ratio": None, "required": False}, True),
        ({"verdict": "fails over the class (worst case 3 > paper's 1.5)"}, False),
        ({"verdict": "fails over the class (worst case 3 > paper's 1.5)", "outside_conditions": True}, True),
    ],
    ids=[
        "tight",
        "failed solve",
        "failed supplementary solve",
        "fails inside",
        "fails outside the conditions",
    ],
)
def test_print_pep_exit_status(kw, ok, capsys):
    assert pep.print_pep([_record(**kw)]) is ok
    assert "x.y" in capsys.readouterr().out


def test_cli_pep_without_the_extra(monkeypatch, capsys):
    from moreau import _cli

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "cvxpy" else real(name, *a)
    )
    assert _cli.main(["check", "gd.strongly_convex", "--family", "quadratic", "--pep"]) == 2
    assert 'extra "pep"' in capsys.readouterr().err


def _checker_ratio_at(st, batch, t0):
    bound = lambda L, R, t: np.where(t == t0, 2 * L * R**2 / (t + 2), np.inf)  # noqa: E731
    return (
        st.run("quadratic", None, None, mutant=Mutant("t0", {"bound": bound}), batch=batch).parts[0].ratio[0]
    )


def test_box_search_is_seeded_and_scored_by_the_checker():
    st = get("fw.convex")
    r1, b1 = search_boxes(st, 2, 7, rounds=3, population=120, keep=12)
    r2, b2 = search_boxes(st, 2, np.random.default_rng(7), rounds=3, population=120, keep=12)
    assert r1 == r2 and all(np.array_equal(b1[k], b2[k]) for k in b1)
    assert _checker_ratio_at(st, b1, 2) == pytest.approx(r1, rel=1e-12)
    R = 2 * np.linalg.norm(b1["h"], axis=-1)
    assert R == pytest.approx(1.0) and np.linalg.eigvalsh(b1["A"])[0, -1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"t0 must be an int >= 1 \(got 0\)"):
        search_boxes(st, 0, 1)


# -- PEP solves ----------------------------------------------------------------------------------
@pytest.mark.pep
@pytest.mark.parametrize(
    "mu, L, eta, t", [(0.1, 1.0, 0.7, 1), (0.1, 1.0, 0.7, 3), (0.5, 2.0, 0.95, 2), (0.05, 1.0, 1.0, 4)]
)
def test_gd_strongly_convex_rate(mu, L, eta, t):
    C, S = _pep_modules()
    value, s = C.gd_strongly_convex(mu, L, eta, t)
    assert (s.status, s.solver) == ("optimal", "CLARABEL")
    exact = max((1 - mu * eta) ** 2, (1 - L * eta) ** 2) ** t
    assert value == pytest.approx(exact, rel=RTOL)


@pytest.mark.pep
def test_envelope_constants():
    C, _ = _pep_modules()
    lam, mu, L = 3.0, 0.5, 2.0
    assert C.envelope_smoothness(lam, L)[0] == pytest.approx(lam * L / (lam + L), rel=RTOL)
    assert C.envelope_smoothness(lam, cls="convex")[0] == pytest.approx(lam, rel=RTOL)
    assert C.envelope_smoothness(5.0, 2.0, cls="weakly_convex")[0] == pytest.approx(5 * 2 / 3, rel=RTOL)
    assert C.envelope_strong_convexity(lam, mu, L)[0] == pytest.approx(lam * mu / (lam + mu), rel=RTOL)
    assert C.prox_lipschitz(lam, mu, L)[0] == pytest.approx(lam / (lam + mu), rel=RTOL)
    assert C.h_smoothness(lam, L, mu)[0] == pytest.approx(L + lam, rel=RTOL)
    assert C.h_strong_convexity(lam, mu, L)[0] == pytest.approx(mu + lam, rel=RTOL)


@pytest.mark.pep
def test_frank_wolfe_values():
    C, _ = _pep_modules()
    assert C.frank_wolfe(2.0, 3.0, 1)[0] == pytest.approx(2.0 * 9.0 / 2, rel=RTOL)  # L R^2 / 2 at t = 1
    # PEPit's documented value (MOSEK); Clarabel agrees to its own tolerance
    assert C.frank_wolfe(1.0, 1.0, 10)[0] == pytest.approx(0.0782895, abs=1e-6)
    # any box instance found is below the class worst case (a lower bound under an upper bound)
    r, _ = search_boxes(get("fw.convex"), 2, 0, rounds=5, population=200, keep=20)
    assert r <= C.frank_wolfe(1.0, 1.0, 2)[0] / (2 / 4) * (1 + RTOL)


@pytest.mark.pep
@pytest.mark.parametrize("eta", [1.0, 0.5, 0.2])
def test_gd_nonconvex(eta):
    C, _ = _pep_modules()
    L, T = 1.0, 3
    value, s = C.gd_nonconvex(L, eta, T)
    assert s.status == "optimal"
    bound = 2 / (eta * T * (2 - L * eta))  # descent lemma telescoped
    assert value <= bound * (1 + RTOL)
    if eta == 1.0:
        assert value == pytest.approx(bound, rel=RTOL)  # attained by (L/2) x^2


@pytest.mark.pep
def test_fedprox_round_above_every_quadratic():
    # a quadratic client f = (a/2)||x||^2 (optimum 0) makes one round linear on (w, theta):
    # theta_K = q^K theta + (1 - q^K) lam/(a + lam) w, q = 1 - eta (a + lam); w' = w - gamma lam (w - theta_K).
    # The class worst case (one client) is at least its squared spectral norm, for every a in [mu, L].
    C, _ = _pep_modules()
    lam, mu, L, gamma, eta, K = 0.5, 0.2, 1.0, 1.5, 0.6, 3
    value, s = C.fedprox_rounds(lam, mu, L, gamma, eta, K, 1, m=1)
    assert s.status == "optimal"
    worst = 0.0
    for a in np.linspace(mu, L, 9):
        qK = (1 - eta * (a + lam)) ** K
        c = (1 - qK) * lam / (a + lam)
        M = np.array([[1 - gamma * lam + gamma * lam * c, gamma * lam * qK], [c, qK]])
        worst = max(worst, np.linalg.norm(M, 2) ** 2)
    assert value >= worst * (1 - RTOL)


@pytest.mark.pep
def test_status_is_checked():
    _, S = _pep_modules()
    from PEPit import PEP
    from PEPit.functions import SmoothStronglyConvexFunction

    problem = PEP()
    f = problem.declare_function(SmoothStronglyConvexFunction, mu=0.1, L=1.0)
    xs = f.stationary_point()
    x0 = problem.set_initial_point()
    problem.set_performance_metric(f(x0 - 0.5 * f.gradient(x0)) - f(xs))  # no initial condition: unbounded
    with pytest.raises(S.PEPSolveError, match="status"):
        S.solve(problem)


@pytest.mark.pep
def test_bad_class_arguments():
    C, _ = _pep_modules()
    with pytest.raises(ValueError, match=r"lam > L .*lam=1\.5"):
        C.envelope_smoothness(1.5, 2.0, cls="weakly_convex")
    with pytest.raises(ValueError, match=r"lam must be a number > 0 \(got -1\)"):
        C.envelope_smoothness(-1, 1.0)
    with pytest.raises(TypeError, match=r"t must be an int \(got 2\.5\)"):
        C.gd_strongly_convex(0.1, 1.0, 0.5, 2.5)
    with pytest.raises(ValueError, match=r"K must be >= 1 \(got 0\)"):
        C.fedprox_rounds(1.0, 0.1, 1.0, 0.5, 0.5, 0, 1)
    with pytest.raises(TypeError, match=r"eta must be a real number \(got '1'\)"):
        C.gd_nonconvex(1.0, "1", 2)
    with pytest.raises(ValueError, match="cls must be one of"):
        C.envelope_smoothness(1.0, 1.0, cls="nonsmooth")
    with pytest.raises(TypeError, match="seed must be an int"):
        pep.run_pep(["gd.strongly_convex"], seed=0.5)
    with pytest.raises(KeyError, match="unknown statement id"):
        pep.run_pep(["no.such.id"])


@pytest.mark.pep
def test_run_pep_gd_and_feedback():
    _pep_modules()
    recs = pep.run_pep(["gd.strongly_convex"])
    assert recs and all(r["status"] == "optimal" and r["solver"] == "CLARABEL" for r in recs)
    (out,) = [r for r in recs if r["outside_conditions"]]  # eta = 1.95/L > 1/L
    assert out["pep_value"] == pytest.approx(max((1 - 0.2 * 1.95) ** 2, (1 - 1.95) ** 2), rel=RTOL)
    assert out["verdict"].startswith("fails over the class")
    for r in [r for r in recs if not r["outside_conditions"]]:
        p = r["parameters"]
        rate = (1 - p["mu"] * p["eta"]) ** p["t"]
        assert r["paper_constant"] == pytest.approx(rate, rel=1e-12)
        assert r["pep_ratio"] == pytest.approx(rate, rel=RTOL)  # (1 - mu eta)^(2t) / (1 - mu eta)^t
        assert r["verdict"].startswith("bound loose over the class")
        # the PEP worst case turned into a quadratic instance, run through the checker
        assert r["instance"]["checker_ratio"] == pytest.approx(r["pep_ratio"], rel=1e-5)


@pytest.mark.pep
def test_run_pep_envelope_verdicts(capsys):
    _pep_modules()
    recs = pep.run_pep(["pfedme.prop1", "pfedme.lemma1"])
    by = {(r["part"], r["class"], r["parameters"].get("lam")): r for r in recs if r["part"]}
    sweep = {r["parameters"]["lam"]: r for r in recs if r["part"] and r["parameters"].get("L") == 1.0}
    assert sweep[1.5]["pep_ratio"] == pytest.approx(2.0, rel=RTOL)  # L/(lam - L) at lam = 1.5 L
    assert sweep[2.0]["pep_ratio"] == pytest.approx(1.0, rel=RTOL)  # the threshold
    assert sweep[1.5]["verdict"].startswith("fails over the class") and sweep[1.5]["outside_conditions"]
    convex = [r for (part, cls, _), r in by.items() if cls == "convex (nonsmooth allowed)"][0]
    assert convex["pep_ratio"] == pytest.approx(1.0, rel=RTOL)
    assert recs[-1]["id"] == "pfedme.lemma1" and recs[-1]["verdict"] == "not applicable"
    assert pep.print_pep(recs) is True
    assert "tight over the class" in capsys.readouterr().out


@pytest.mark.pep
def test_cli_pep_json(tmp_path, capsys):
    _pep_modules()
    from moreau import _cli

    path = tmp_path / "report.json"
    assert (
        _cli.main(
            [
                "check",
                "gd.strongly_convex",
                "fedprox.lemma3",
                "--family",
                "quadratic",
                "--pep",
                "--json",
                str(path),
            ]
        )
        == 0
    )
    data = {r["id"]: r for r in json.loads(path.read_text())}
    assert data["gd.strongly_convex"]["pep"][0]["solver"] == "CLARABEL"
    assert [r["verdict"] for r in data["fedprox.lemma3"]["pep"]] == ["not applicable"]
    assert "class worst case (PEP, solver CLARABEL)" in capsys.readouterr().out
    assert _cli.main(["check", "gd.strongly_convex", "--family", "quadratic", "--json", str(path)]) == 0
    assert "pep" not in json.loads(path.read_text())[0]  # the default run stays without it


@pytest.mark.pep
@pytest.mark.slow
def test_run_pep_everything():
    _pep_modules()
    recs = pep.run_pep()
    json.dumps(recs)  # JSON as is
    assert {r["id"] for r in recs} == set(pep.pep_ids())
    fw = [r for r in recs if r["id"] == "fw.convex" and r["class"].startswith("L-smooth")]
    assert [r["parameters"]["t"] for r in fw] == [1, 2, 3, 5, 9, 10]
    assert fw[-1]["pep_value"] == pytest.approx(0.0782895, abs=1e-6)
