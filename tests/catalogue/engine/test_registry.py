"""Registry-driven tests of ``analysis``: every catalogue statement on every
family it covers, its mutants, the framework (judge, runner, CLI) and the
symbolic proofs.  No checker module is imported by hand: the catalogue is
the list (STYLE.md, "cross-cutting tests come from registries").
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from moreau._cli import main
from moreau.analysis.engine import registry, runner
from moreau.analysis.engine.core import RTOL, TIGHT_RTOL, Mutant, Sides, Statement, judge
from moreau.analysis.engine.report import mutant_verdicts
from moreau.analysis.engine.symbolic import certify_nonneg, mutant_proofs, proofs, run_proofs

REPO = Path(__file__).resolve().parents[3]
PAPER_DIRS = [
    p
    for p in (REPO / "shared" / "papers", REPO.parent / "shared" / "papers", Path("/work/shared/papers"))
    if p.is_dir()
]

try:
    CAT = registry.catalogue()
    CATALOGUE_ERROR = None
except Exception as exc:  # reported by test_catalogue_loads, not as a collection error
    CAT, CATALOGUE_ERROR = {}, exc

IDS = list(CAT)
CASES = [(sid, fam) for sid, st in CAT.items() for fam in st.families]
RECORD_KEYS = {
    "id",
    "source",
    "family",
    "instances",
    "holds",
    "max_ratio",
    "tight",
    "claimed",
    "seconds",
    "statement_seconds",
    "mutant_seconds",
    "step_seconds",
    "mutants",
    "findings",
    "finding_values",
    "notes",
    "class_worst",
    "parts",
    "schema_version",
    "expected",
    "readings",
    "mutants_against",
    "shared_properties",
    "waived_properties",
}
PART_KEYS = {
    "name",
    "claimed",
    "role",
    "loose",
    "holds",
    "applicable",
    "max_ratio",
    "tight",
    "min_slack",
    "constants",
    "note",
    "tested",
}
# keys a rate part or a Monte Carlo part adds (analysis/engine/records.py schema)
OPTIONAL_PART_KEYS = {
    "slope",
    "slope_ci",
    "exponent",
    "kind",
    "atol",
    "level",
    "level_jointly_over",
    "worst_instance",
    "lhs",
    "lhs_ci",
    "rhs",
    "detectable_change",
    "identically_zero",
}


_RECORDS = {}


def records(sid, seed):
    """``{family: Record}`` for one statement with default trials, mutants on seed 0 only.

    Cached per session, errors included (a broken checker is run once, reported by every test of it).
    """
    if (sid, seed) not in _RECORDS:
        try:
            out = {rec.result.family: rec for rec in runner.run(ids=[sid], seed=seed, mutants=seed == 0)}
        except Exception as exc:
            out = exc
        _RECORDS[sid, seed] = out
    out = _RECORDS[sid, seed]
    if isinstance(out, Exception):
        raise out
    return out


def _case_id(case):
    return "-".join(case) if isinstance(case, tuple) else str(case)


# --- the catalogue ----------------------------------------------------------------


def test_catalogue_loads():
    if CATALOGUE_ERROR is not None:
        raise CATALOGUE_ERROR
    assert CAT, "the catalogue is empty"


@pytest.mark.parametrize("sid", registry.REQUIRED_IDS)
def test_required_id_in_catalogue(sid):
    assert sid in IDS, f"{sid} (THEOREMS.md) is not in the catalogue; it has {IDS}"


def _bad(result):
    return "; ".join(
        f"{p.name}: {p.failures.size} failing instances, max ratio {p.max_ratio:.6g}, "
        f"tight {p.tight} (claimed {p.claimed})"
        for p in result.parts
        if not p.holds
    )


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_claims_expected_to_hold_hold(case, seed):
    """On every family: the printed statement where the catalogue expects it to hold, and every
    reading expected to hold."""
    sid, fam = case
    rec = records(sid, seed)[fam]
    st = rec.statement
    if st.expect == "holds":
        assert rec.result.holds, f"{sid} [{fam}] seed {seed}, as printed: " + _bad(rec.result)
    for r in st.readings:
        if r.expect == "holds":
            rr = rec.readings[r.name][0]
            assert rr.holds, f"{sid} [{fam}] seed {seed}, reading {r.name!r}: " + _bad(rr)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sid", IDS)
def test_statement_verdicts_are_as_the_catalogue_expects(sid, seed):
    """Over its families, each statement's printed verdict and each reading's is the expected one
    (a printed statement expected to fail does fail, on the run's own instances)."""
    from moreau.analysis.engine.report import verdict_of

    st = CAT[sid]
    sv = verdict_of(st, list(records(sid, seed).values()))
    wrong = [
        (v["claim"], v["verdict"], v["expected"])
        for v in [sv["printed"], *sv["readings"]]
        if not v["as_expected"]
    ]
    assert not wrong, f"{sid} seed {seed}: (claim, verdict, expected) {wrong}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_record_sane(case):
    sid, fam = case
    rec = records(sid, 0)[fam]
    r, st = rec.result, rec.statement
    assert r.instances > 0 and r.seconds >= 0 and r.parts
    for p in r.parts:
        assert p.claimed in ("upper", "tight", "exact", "rate")
        assert 0 <= p.applicable <= p.instances == r.instances
        assert p.sides.lhs.shape == p.sides.rhs.shape == (r.instances,)
    j = runner.record_json(rec)
    assert set(j) - {"minimal_counterexample", "worst_instances"} == RECORD_KEYS
    assert ("minimal_counterexample" in j) == (fam in st.counterexamples)
    assert all(PART_KEYS <= set(pj) <= PART_KEYS | OPTIONAL_PART_KEYS for pj in j["parts"])
    json.dumps(j)  # JSON-serialisable (constants and notes included)
    assert j["id"] == sid and j["family"] == fam


@pytest.mark.parametrize("sid", IDS)
def test_statement_metadata(sid):
    st = CAT[sid]
    assert st.id == sid
    for name in ("source", "paper", "latex", "text"):
        assert isinstance(getattr(st, name), str) and getattr(st, name).strip(), f"{sid}: empty {name}"
    assert st.assumptions and all(isinstance(a, str) and a for a in st.assumptions)
    assert st.families and set(st.families) <= set(runner.FAMILIES)
    assert st.claimed in ("upper", "tight", "rate")
    assert st.claim and st.mutants, f"{sid}: a statement needs a claim and at least one mutant"
    names = [m.name for m in st.mutants]
    assert len(names) == len(set(names)), f"{sid}: duplicate mutant names"
    assert not set(names) & set(st.equivalent_mutants), f"{sid}: a mutant is also listed as equivalent"


@pytest.mark.parametrize("sid", IDS)
def test_paper_file_exists(sid):
    if not PAPER_DIRS:
        pytest.skip("shared/papers is not present next to this checkout")
    paper = CAT[sid].paper
    assert any((d / paper).is_file() for d in PAPER_DIRS), f"{sid}: {paper} not under {PAPER_DIRS}"


@pytest.mark.parametrize("sid", IDS)
def test_every_part_is_checked_somewhere(sid):
    """A part with no applicable instance on any family is never checked."""
    applicable = {}
    for rec in records(sid, 0).values():
        for p in rec.result.parts:
            applicable[p.name] = applicable.get(p.name, 0) + p.applicable
    assert all(applicable.values()), (
        f"{sid}: parts never applicable: {[k for k, v in applicable.items() if not v]}"
    )


@pytest.mark.parametrize("sid", IDS)
def test_mutants_rejected(sid):
    verdicts = mutant_verdicts(records(sid, 0).values())
    assert {name for (_, name) in verdicts} == {m.name for m in CAT[sid].mutants}
    survivors = [name for (_, name), fams in verdicts.items() if not fams]
    assert not survivors, f"{sid}: mutants not rejected by any family: {survivors}"


PREPARED = [(sid, fam) for sid, fam in CASES if CAT[sid].prepare is not None]


@pytest.mark.parametrize("case", PREPARED, ids=_case_id)
def test_prepared_mutants_equal_a_fresh_evaluation(case):
    """The prepare step only moves work: a mutant judged on the shared prepared data gives the
    same sides as one whose evaluation prepares its own (fresh) data."""
    sid, fam = case
    st = CAT[sid]
    batch = st.instances(fam, None, runner.rng_for(0, sid, fam))
    shared = st.prepared(batch)
    for m in (None, *st.mutants[:4]):
        a = st.run(fam, None, None, mutant=m, batch=batch, prepared=shared)
        b = st.run(fam, None, None, mutant=m, batch=batch)  # prepares afresh
        assert a.holds == b.holds
        for pa, pb in zip(a.parts, b.parts, strict=True):
            assert pa.name == pb.name
            np.testing.assert_array_equal(pa.sides.lhs, pb.sides.lhs)
            np.testing.assert_array_equal(pa.sides.rhs, pb.sides.rhs)


def test_runner_prepares_each_batch_once_and_times_mutants(monkeypatch):
    calls = []

    def prepare(batch):
        calls.append(1)
        return {"x2": batch["x"] ** 2}

    st = Statement(
        id="toy.prep",
        source="toy",
        paper="none.md",
        latex="x^2 <= c x^2",
        text="x^2 <= c x^2",
        assumptions=(),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=_toy_instances,
        prepare=prepare,
        evaluate=lambda d, claim: {"p": Sides(d["x2"], claim["c"] * d["x2"], "upper")},
        claim={"c": 1.0},
        mutants=(
            Mutant("c = 1/2", {"c": 0.5}),
            Mutant("c = 0.9", {"c": 0.9}),
            Mutant("c = 2 (survives)", {"c": 2.0}),
        ),
    )
    monkeypatch.setattr(runner, "catalogue", lambda: {"toy.prep": st})
    (rec,) = runner.run(mutants=True)
    assert len(calls) == 1 and rec.result.holds
    j = runner.record_json(rec)
    assert j["seconds"] == pytest.approx(j["statement_seconds"] + j["mutant_seconds"], abs=2e-4)
    # the mutants' time is measured (a float, >= 0); not > 0: rounded to 1e-4 s, three toy mutants can take 0
    assert isinstance(rec.mutant_seconds, float) and rec.mutant_seconds >= 0
    assert isinstance(j["mutant_seconds"], float) and j["mutant_seconds"] >= 0
    m_half, m_09, m_2 = j["mutants"]
    assert m_half["rejected"] and m_half["rejected_by"] == "p" and m_half["margin"] == pytest.approx(0.5)
    assert m_09["margin"] == pytest.approx(0.1)
    assert not m_2["rejected"] and "margin" not in m_2
    (rec,) = runner.run(trials=5, mutants=True)  # --trials: survivors are also tried on the default batch
    assert len(calls) == 3  # this batch, and the default batch once for all survivors


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_tight_parts_attained(case):
    sid, fam = case
    for p in records(sid, 0)[fam].result.parts:
        if p.claimed == "tight" and p.applicable:
            assert p.max_ratio >= 1 - TIGHT_RTOL, f"{sid} [{fam}] {p.name}: max ratio {p.max_ratio!r}"


# --- the framework: judge --------------------------------------------------------


def test_judge_upper_bound():
    ok = judge("p", Sides([0.5, 1.0], [1.0, 1.0]))
    assert ok.holds and ok.tight and ok.max_ratio == 1.0 and ok.failures.size == 0
    bad = judge("p", Sides([0.5, 1.1, 2.0], [1.0, 1.0, 1.0]))
    assert not bad.holds and list(bad.failures) == [1, 2] and bad.max_ratio == 2.0


def test_judge_applicable_mask_excludes_instances():
    r = judge("p", Sides([0.5, 3.0], [1.0, 1.0], applicable=[True, False]))
    assert r.holds and r.applicable == 1 and r.max_ratio == 0.5 and not r.tight


def test_judge_monte_carlo_ci():
    lhs, rhs = np.array([1.2, 1.2]), np.array([1.0, 1.0])
    # point estimate above rhs, lower CI end below it: not a failure
    assert judge("p", Sides(lhs, rhs, lhs_ci=(np.array([0.9, 0.99]), np.array([1.5, 1.5])))).holds
    # lower CI end above rhs on instance 1: a failure there only
    r = judge("p", Sides(lhs, rhs, lhs_ci=(np.array([0.9, 1.01]), np.array([1.5, 1.5]))))
    assert not r.holds and list(r.failures) == [1]


def test_judge_tight_claim():
    assert not judge("p", Sides([0.5, 0.9], [1.0, 1.0], "tight")).holds  # bound never attained
    assert judge("p", Sides([0.5, 1.0], [1.0, 1.0], "tight")).holds
    # no applicable instance: nothing to attain, nothing checked
    assert judge("p", Sides([0.5], [1.0], "tight", applicable=[False])).holds


def test_judge_exact_has_no_slack_and_nan_fails():
    assert judge("p", Sides([1 + 1e-12], [1.0])).holds  # upper: RTOL slack
    assert not judge("p", Sides([1 + 1e-12], [1.0], "exact")).holds  # exact: rhs is the allowed error
    assert not judge("p", Sides([np.nan], [1.0])).holds
    with pytest.raises(ValueError, match="claimed"):
        Sides([1.0], [1.0], "lower")


def test_judge_flip_reverses():
    s = Sides([0.5, 2.0], [1.0, 1.0])
    assert not judge("p", s).holds and list(judge("p", s).failures) == [1]
    assert not judge("p", s, flip=True).holds and list(judge("p", s, flip=True).failures) == [0]
    assert judge("p", Sides([1.5, 2.0], [1.0, 1.0]), flip=True).holds


# --- the framework: a hand-made statement, runner, CLI ---------------------------


def _toy_instances(family, trials, rng):
    return {"x": rng.uniform(0.5, 2.0, trials or 16)}


def _toy_evaluate(batch, claim):
    x = batch["x"]
    return {"x^2 <= c x^2": Sides(x**2, claim["c"] * x**2, "upper", constants={"c": "claimed"})}


def _toy(sid, c):
    return Statement(
        id=sid,
        source="toy",
        paper="none.md",
        latex=r"x^2 \le c x^2",
        text=f"x^2 <= {c} x^2",
        assumptions=("x in [0.5, 2]",),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=_toy_instances,
        evaluate=_toy_evaluate,
        claim={"c": c},
        mutants=(Mutant("c = 1/2", {"c": 0.5}),),
    )


TOY_TRUE, TOY_FALSE = _toy("toy.true", 1.0), _toy("toy.false", 0.9)
TOY_TIGHT = Statement(
    id="toy.tight",
    source="toy",
    paper="none.md",
    latex=r"x \le 2",
    text="x <= 2, attained",
    assumptions=("x in [0.5, 2]",),
    families={"quadratic": ("toy",)},
    claimed="tight",
    instances=lambda family, trials, rng: {"x": np.append(rng.uniform(0.5, 2.0, 7), 2.0)},
    evaluate=lambda batch, claim: {"x <= c": Sides(batch["x"], claim["c"], "tight")},
    claim={"c": 2.0},
    mutants=(Mutant("c = 3 (not attained)", {"c": 3.0}),),
)


@pytest.fixture
def toy_catalogue(monkeypatch):
    """Replace the catalogue by the two toy statements (runner and cli look it up by name)."""
    cat = {"toy.true": TOY_TRUE, "toy.false": TOY_FALSE, "toy.tight": TOY_TIGHT}
    monkeypatch.setattr(registry, "catalogue", lambda: cat)
    monkeypatch.setattr(runner, "catalogue", lambda: cat)
    return cat


def test_runner_reports_failure_and_mutants(toy_catalogue):
    recs = runner.run(mutants=True)
    holds = {r.statement.id: r.result.holds for r in recs}
    assert holds == {"toy.true": True, "toy.false": False, "toy.tight": True}
    assert mutant_verdicts(recs)[("toy.true", "c = 1/2")] == ["quadratic"]
    assert mutant_verdicts(recs)[("toy.tight", "c = 3 (not attained)")] == ["quadratic"]
    with pytest.raises(KeyError, match="unknown"):
        runner.run(ids=["no.such.id"])


def test_statement_run_rejects_bad_mutant_and_family():
    rng = np.random.default_rng(0)
    with pytest.raises(KeyError, match="unknown claim entries"):
        TOY_TRUE.run("quadratic", 4, rng, mutant=Mutant("typo", {"cc": 1.0}))
    with pytest.raises(KeyError, match="unknown parts"):
        TOY_TRUE.run("quadratic", 4, rng, mutant=Mutant("flip typo", {"flip": ("no such part",)}))
    with pytest.raises(ValueError, match="family"):
        TOY_TRUE.run("logistic", 4, rng)
    flipped = TOY_TRUE.run("quadratic", 4, rng, mutant=Mutant("flip", {"flip": ("x^2 <= c x^2",)}))
    assert flipped.holds  # x^2 >= 1 x^2 holds too (equality): a flip alone cannot reject an identity


def test_cli_exit_codes(toy_catalogue, capsys):
    assert main(["check", "toy.true"]) == 0
    assert main(["check", "toy.true", "--mutants"]) == 0
    assert main(["check", "toy.false"]) == 1
    assert main(["check"]) == 1
    assert main(["check", "no.such.id"]) == 2
    assert "unknown id" in capsys.readouterr().err


def test_cli_exit_code_on_real_catalogue():
    if not IDS:
        pytest.skip("empty catalogue (see test_catalogue_loads)")
    assert main(["check", IDS[0]]) == 0
    assert main(["check", "no.such.id"]) == 2


def test_cli_list(capsys):
    assert main(["check", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(sid in out for sid in IDS)


def test_cli_json_schema(tmp_path, capsys):
    if not IDS:
        pytest.skip("empty catalogue (see test_catalogue_loads)")
    path = tmp_path / "report.json"
    sid = IDS[0]
    assert main(["check", sid, "--mutants", "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    assert [(d["id"], d["family"]) for d in data] == [
        (sid, f) for f in runner.FAMILIES if f in CAT[sid].families
    ]
    for d in data:
        assert set(d) - {"minimal_counterexample", "search", "worst_instances"} == RECORD_KEYS | {
            "run",
            "verdict",
        }
        for rep in d.get("search", []):  # the default run's short search (statements expected to hold)
            # at least one batch, unless one instance cost more than the budget (measured on the run's batch,
            # so under load a statement can be skipped): then the report says so
            searched = rep["examples"] >= 1 or rep.get("skipped", "").startswith("one instance costs")
            assert rep["short"] is True and rep["mutant"] == "" and searched and rep["seconds"] >= 0
        assert ("search" in d) == (CAT[sid].expect == "holds") and d["run"]["search_seconds"] == 0.03
        assert (
            d["verdict"]["printed"]["verdict"] in ("holds", "fails", "undecided") and d["schema_version"] == 3
        )
        assert all(PART_KEYS <= set(p) <= PART_KEYS | OPTIONAL_PART_KEYS for p in d["parts"])
        run = d["run"]  # provenance of the CLI run
        assert (
            run["seed"] == 0 and run["trials"] is None and run["family"] == "all" and run["mutants"] is True
        )
        assert run["tolerances"] == {"rtol": RTOL, "tight_rtol": TIGHT_RTOL}
        # timings: only their keys and signs are checked (docs/check.md)
        assert set(d["step_seconds"]) == set(runner.STEPS) and min(d["step_seconds"].values()) >= 0
        assert set(run["step_seconds"]) == {*runner.STEPS, "analyse", "symbolic", "pep", "report", "total"}
        assert min(run["step_seconds"].values()) >= 0
        assert run["versions"]["numpy"] == np.__version__ and run["git_commit"]
        assert [m["name"] for m in d["mutants"]] == [m.name for m in CAT[sid].mutants]
        for m in d["mutants"]:  # a rejection says by which part, on which batch and instance, by how much
            assert set(m) == (
                {"name", "rejected", "rejected_by", "found_on", "instance", "margin", "o_equivalent"}
                if m["rejected"]
                else {"name", "rejected", "o_equivalent"}
            )
        assert d["holds"] is (CAT[sid].expect == "holds") and d["instances"] > 0 and d["seconds"] >= 0


def test_cli_json_records_failure(toy_catalogue, tmp_path, capsys):
    path = tmp_path / "report.json"
    assert main(["check", "toy.false", "--json", str(path)]) == 1
    (d,) = json.loads(path.read_text())
    assert d["id"] == "toy.false" and d["holds"] is False and d["max_ratio"] > 1


def test_save_and_replay_counterexample(toy_catalogue, tmp_path, capsys):
    assert main(["check", "toy.false", "--save-counterexamples", str(tmp_path)]) == 1
    files = sorted(tmp_path.glob("*.npz"))
    # toy.false fails on all 16 instances of the run's batch; the first 5 failing instances are saved
    assert [f.name for f in files] == [f"toy.false-quadratic-{i}.npz" for i in range(5)]
    xs = runner.rng_for(0, "toy.false", "quadratic").uniform(0.5, 2.0, 16)  # the run's batch, drawn again
    for i, f in enumerate(files):
        with np.load(f, allow_pickle=False) as z:  # no pickle needed
            assert z["x"].shape == (1,) and 0.5 <= z["x"][0] <= 2.0
            assert z["x"][0] == xs[i]  # instance i of the run's batch, not some other number
    capsys.readouterr()
    assert main(["check", "--replay", str(files[0])]) == 1
    assert "holds=False" in capsys.readouterr().out
    assert main(["check", "--replay", str(tmp_path / "missing.npz")]) == 2


def test_replay_judges_inequality_not_tightness(toy_catalogue, tmp_path, capsys):
    """One instance of a claimed-tight part that does not attain the bound still holds on replay."""
    batch = {"x": np.array([1.0])}
    rec = runner.Record(TOY_TIGHT, TOY_TIGHT.run("quadratic", None, None, batch=batch), batch=batch)
    path, _ = runner.save_counterexample(rec, 0, tmp_path)
    assert main(["check", "--replay", str(path)]) == 0
    path, _ = runner.save_counterexample(rec, 0, tmp_path, mutant="no such mutant")
    assert main(["check", "--replay", str(path)]) == 2


def test_replay_assumption_not_met(tmp_path, capsys):
    """A weakly convex quadratic with a_1 = -L and lam in (L, 2L]: prop1's condition lam > 2L fails."""
    if "pfedme.prop1" not in CAT:
        pytest.skip("pfedme.prop1 not in the catalogue")
    st = CAT["pfedme.prop1"]
    eig = np.array([[-1.0, 0.2, 0.5, 0.8]])
    batch = {
        "A": np.diag(eig[0])[None],
        "b": np.array([[1.0, -2.0, 0.5, 0.3]]),
        "eig": eig,
        "L": np.array([1.0]),
        "lam": np.array([1.5]),
        "w": np.array([[0.3, 1.0, -1.0, 2.0]]),
    }
    rec = runner.Record(st, st.run("quadratic", None, None, batch=batch), batch=batch)
    path, cmd = runner.save_counterexample(rec, 0, tmp_path)
    assert cmd.startswith("moreau check pfedme.prop1") and path.suffix == ".npz"
    capsys.readouterr()
    assert main(["check", "--replay", str(path)]) == 0
    assert "assumption not met" in capsys.readouterr().out


# --- symbolic proofs -------------------------------------------------------------

PROOFS, MUTANT_PROOFS = proofs(), mutant_proofs()


@cache
def _proof_results(mutants):
    return run_proofs(MUTANT_PROOFS if mutants else PROOFS)


@pytest.mark.parametrize("i", range(len(PROOFS)), ids=[p.key for p in PROOFS])
def test_symbolic_proof_proved(i):
    r = _proof_results(False)[i]
    assert r["proved"], f"{r['name']}:\n{r['detail']}"


@pytest.mark.parametrize(
    "i", range(len(MUTANT_PROOFS)), ids=[f"{p.key}-{i}" for i, p in enumerate(MUTANT_PROOFS)]
)
def test_symbolic_mutant_not_proved(i):
    r = _proof_results(True)[i]
    assert not r["proved"], f"mutant {r['name']} came out proved:\n{r['detail']}"


def test_every_proof_has_a_mutant():
    assert {p.key for p in PROOFS} <= {m.key for m in MUTANT_PROOFS}
    assert len({p.key for p in PROOFS}) == len(PROOFS)


def test_certificate_can_fail():
    import sympy as sp

    s, t = sp.symbols("s t", positive=True)
    r = sp.Symbol("r", real=True)
    assert certify_nonneg(s**2 + 2 * s * t + 1, strict=True)[0]
    assert not certify_nonneg((s - 1) ** 2)[0]  # true, but no certificate: NOT PROVED, never assumed
    assert not certify_nonneg(s - t)[0]
    assert not certify_nonneg(r**2 + 1)[0]  # sign of a real symbol unknown
    assert certify_nonneg(s * t, strict=True)[0]


def test_cli_symbolic(toy_catalogue, capsys):
    """``moreau check --symbolic`` (catalogue replaced by a true toy: this tests the proofs' exit code)."""
    assert main(["check", "toy.true", "--symbolic"]) == 0
    out = capsys.readouterr().out
    assert f"{len(PROOFS)}/{len(PROOFS)} proved" in out and "NOT PROVED" not in out


# --- chunked runs: --trials beyond one chunk, in bounded memory --------------------------------


def _toy_chunk_statement():
    """x ~ U(0.5, 2); the part 'x <= c' fails where x > c: failures known independently."""
    return Statement(
        id="toy.chunks",
        source="toy",
        paper="none.md",
        latex="x <= c",
        text="x <= c",
        assumptions=(),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=lambda family, trials, rng: {"x": rng.uniform(0.5, 2.0, trials or 16)},
        evaluate=lambda b, claim: {
            "x <= c": Sides(b["x"], claim["c"], "upper"),
            "x^2 <= 4": Sides(b["x"] ** 2, 4.0, "upper"),
        },
        claim={"c": 1.9},
        mutants=(Mutant("c = 1.99", {"c": 1.99}), Mutant("c = 3", {"c": 3.0})),
    )


def test_chunked_run_equals_the_chunks_judged_by_hand(monkeypatch, tmp_path, capsys):
    st = _toy_chunk_statement()
    monkeypatch.setattr(runner, "catalogue", lambda: {"toy.chunks": st})
    monkeypatch.setattr(registry, "catalogue", lambda: {"toy.chunks": st})
    trials, chunk = 1000, 64
    (rec,) = runner.run(trials=trials, chunk=chunk, mutants=True)
    # the same instances drawn independently: chunk 0 from the run's stream, chunk k from "chunk k"
    xs = [runner.rng_for(0, "toy.chunks", "quadratic").uniform(0.5, 2.0, chunk)]
    for k in range(1, -(-trials // chunk)):
        xs.append(
            runner.rng_for(0, "toy.chunks", "quadratic", f"chunk {k}").uniform(
                0.5, 2.0, min(chunk, trials - k * chunk)
            )
        )
    x = np.concatenate(xs)
    r = rec.result
    assert r.instances == trials and not r.holds
    p = r.parts[0]
    np.testing.assert_array_equal(p.failures, np.flatnonzero(x > 1.9 * (1 + RTOL)))
    assert p.max_ratio == pytest.approx(np.max(x) / 1.9, rel=1e-15)
    assert runner.record_json(rec)["parts"][0]["min_slack"] == pytest.approx(1.9 - np.max(x), rel=1e-12)
    assert r.parts[1].holds and r.parts[1].failures.size == 0
    # bounded: the kept rows do not grow with the number of chunks
    assert rec.batch["x"].size <= 2 * (3 + 5)
    i = int(p.failures[0])
    assert rec.batch["x"][rec.local(i)] == x[i]
    # mutants: c = 1.99 is rejected (some x > 1.99), c = 3 survives every chunk
    verdict = {m.name: rej for m, rej, _ in rec.mutants}
    assert verdict == {"c = 1.99": bool(np.any(x > 1.99 * (1 + RTOL))), "c = 3": False}
    # counterexamples of a chunked run replay (the statement's and the mutant's)
    monkeypatch.setattr(runner, "CHUNK", chunk)
    assert (
        main(
            [
                "check",
                "toy.chunks",
                "--trials",
                str(trials),
                "--mutants",
                "-v",
                "--save-counterexamples",
                str(tmp_path),
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    files = sorted(tmp_path.glob("*.npz"))
    assert len(files) == 5 + 2 and "rejects mutant 'c = 1.99'" in out
    assert "the instance closest to rejecting the surviving mutant 'c = 3'" in out
    mutant_file = next(f for f in files if "mutant" in f.name and "-run" in f.name)
    closest_file = next(f for f in files if "-closest" in f.name)
    plain = next(f for f in files if "mutant" not in f.name)
    assert main(["check", "--replay", str(plain)]) == 1
    assert main(["check", "--replay", str(mutant_file)]) == 0
    assert "replaying mutant of toy.chunks: c = 1.99" in capsys.readouterr().out
    assert main(["check", "--replay", str(closest_file)]) == 1  # the survivor is not rejected there
    out = capsys.readouterr().out
    assert "mutant 'c = 3': NOT rejected on this instance" in out
    # it is the largest x of the run (closest to x <= 3)
    assert f"lhs={np.max(x):.17g}" in out


def test_checker_whose_trials_is_not_a_count_runs_in_one_call(monkeypatch):
    st = _toy_chunk_statement()
    fixed = Statement(
        **{
            **st.__dict__,
            "id": "toy.fixed",
            "instances": lambda family, trials, rng: {"x": rng.uniform(0.5, 1.5, 7)},
        }
    )
    monkeypatch.setattr(runner, "catalogue", lambda: {"toy.fixed": fixed})
    (rec,) = runner.run(trials=500, chunk=10)
    assert rec.result.instances == 7 and rec.index is None


def test_loose_bounds_are_flagged_and_auxiliary_parts_do_not_set_max_ratio(monkeypatch, tmp_path, capsys):
    st = Statement(
        id="toy.loose",
        source="toy",
        paper="none.md",
        latex="x <= 100",
        text="x <= 100",
        assumptions=(),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=lambda family, trials, rng: {"x": rng.uniform(0.5, 2.0, trials or 16)},
        evaluate=lambda b, claim: {
            "x <= c": Sides(b["x"], claim["c"], "upper"),
            "estimate <= x": Sides(b["x"] / 2, b["x"], "upper", role="auxiliary"),
        },
        claim={"c": 100.0},
    )
    monkeypatch.setattr(runner, "catalogue", lambda: {"toy.loose": st})
    monkeypatch.setattr(registry, "catalogue", lambda: {"toy.loose": st})
    (rec,) = runner.run()
    assert rec.result.max_ratio == pytest.approx(np.max(rec.batch["x"]) / 100)  # not the auxiliary 0.5
    path = tmp_path / "r.json"
    assert main(["check", "--json", str(path), "-v"]) == 0
    assert "LOOSE (max L/R < 0.1" in capsys.readouterr().out
    (j,) = json.loads(path.read_text())
    assert [(p["role"], p["loose"]) for p in j["parts"]] == [("theorem", True), ("auxiliary", False)]
    assert j["run"]["slack_threshold"] == runner.SLACK_THRESHOLD
    assert main(["check", "--json", str(path), "--slack-threshold", "0.01"]) == 0
    (j,) = json.loads(path.read_text())
    assert j["parts"][0]["loose"] is False and j["run"]["slack_threshold"] == 0.01
    with pytest.raises(SystemExit) as exc:
        main(["check", "--slack-threshold", "0"])
    assert exc.value.code == 2
    with pytest.raises(ValueError, match="role"):
        Sides([1.0], [2.0], role="side")


def test_search_reports_what_it_searched(toy_catalogue, tmp_path, capsys):
    recs = {r.statement.id: r for r in runner.run(search_examples=15, mutants=True)}
    ((name, rep),) = recs[
        "toy.false"
    ].searches  # the statement's search (its mutant is rejected by the batch)
    assert name == "" and rep["found"] and rep["failing"] >= 1
    assert rep["examples"] == rep["before_failure"] + rep["shrinks"] and 1 <= rep["batch_size"] <= 8
    (x,) = rep["instance"]["x"]
    assert x > 0.9 * (1 + RTOL)  # the returned instance does fail x^2 <= 0.9 x^2
    ((name, rep),) = recs["toy.true"].searches
    assert not rep["found"] and rep["examples"] == 15 and rep["shrinks"] == 0
    path = tmp_path / "r.json"
    assert main(["check", "--search", "15", "--json", str(path)]) == 1
    out = capsys.readouterr().out
    assert (
        "toy.false [quadratic]: FAILURE after" in out
        and "toy.true [quadratic]: no failure in 15 batches" in out
    )
    by_id = {j["id"]: j for j in json.loads(path.read_text())}
    assert (
        by_id["toy.false"]["search"][0]["found"] is True and by_id["toy.true"]["search"][0]["found"] is False
    )
