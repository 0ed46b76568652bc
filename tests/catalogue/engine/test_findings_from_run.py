"""Findings are rendered from the run's records (issue 27, item 5): they change with the seed where the
records do, every number in them is a number of the record (or fitted from its numbers), and the
catalogue's prose (``Statement.findings``, its notes) is never among them."""

from __future__ import annotations

import json
import re
from functools import cache

import numpy as np
import pytest

from moreau.analysis.engine import runner
from moreau.analysis.engine.core import Sides, Statement
from moreau.analysis.engine.describe import describe
from moreau.analysis.engine.findings import NOTES_LABEL, fmt, record_findings
from moreau.analysis.engine.records import record_json
from moreau.analysis.engine.registry import catalogue

#: a Monte Carlo and rate statement (perfedavg.w1), one failing with a recorded minimal counterexample
#: (fw.convex), O(.) statements failing as printed (pfedme.thm1b, pfedme.thm2)
IDS = ["perfedavg.w1", "fw.convex", "pfedme.thm1b", "pfedme.thm2"]
SEEDS = (0, 7)
TRIALS = 8
NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
SHAPE = re.compile(r"\w+:\d+(?:x\d+)*")  # an array's size in the parameters ("A:3x3"), not a value


@cache
def _records(seed):
    return runner.run(IDS, "all", TRIALS, seed)


def _key(rec):
    return rec.statement.id, rec.result.family


def _values(batch):
    """The numbers of a batch as the parameters show them (scalars and the entries of small arrays)."""
    out = set()
    for v in (batch or {}).values():
        a = np.asarray(v)
        if np.issubdtype(a.dtype, np.number):
            out |= {fmt(x) for x in a.reshape(-1)}
    return out


def _part_numbers(p, row=None):
    s = p.sides
    rows = slice(None) if row is None else [row]
    out = {fmt(x) for arr in (s.lhs, s.rhs, p.ratio) for x in np.asarray(arr, float)[rows]}
    if s.lhs_ci is not None:
        out |= {fmt(x) for arr in s.lhs_ci for x in np.asarray(arr, float)[rows]}
    if s.confidence is not None:
        out.add(fmt(100 * s.confidence))
    out |= {fmt(s.atol), fmt(p.max_ratio)}
    counts = (p.instances, p.applicable, p.failures.size)
    index = range(p.instances) if p.index is None else p.index
    return out | {str(int(n)) for n in (*counts, *index)}


def _allowed(rec):
    """Every number of the record, formatted as findings format them."""
    out = _values(rec.batch)
    for p in rec.result.parts:
        out |= _part_numbers(p)
    for one, res in [x[:2] for x in (rec.minimal, rec.shrunk) if x is not None]:
        out |= _values(one) | {fmt(res.max_ratio)}
        for p in res.parts:
            out |= _part_numbers(p)
    for rr, _, _ in rec.readings.values():
        out |= {fmt(rr.max_ratio)} | {fmt(p.max_ratio) for p in rr.parts}
    return out


def _names(rec):
    names = [p.name for p in rec.result.parts] + list(rec.readings)
    for x in (rec.minimal, rec.shrunk):
        if x is not None:
            names += [p.name for p in x[1].parts]
    for rr, _, _ in rec.readings.values():
        names += [p.name for p in rr.parts]
    return sorted(set(names), key=len, reverse=True)


def _unexplained(text, rec):
    """The numbers of ``text`` that are not numbers of the record (names of parts and readings, and
    array sizes, are not numbers of the run: they are left out)."""
    for name in _names(rec):
        text = text.replace(f"'{name}'", "''")
    text = SHAPE.sub("", text)
    allowed = _allowed(rec)
    return [x for x in NUMBER.findall(text) if x not in allowed]


def test_findings_differ_between_seeds_where_the_records_differ():
    a = {_key(r): r for r in _records(0)}
    b = {_key(r): r for r in _records(7)}
    assert a.keys() == b.keys()
    differ = 0
    for key in a:
        ra, rb = a[key], b[key]
        same = all(
            np.array_equal(p.sides.lhs, q.sides.lhs, equal_nan=True)
            and np.array_equal(p.sides.rhs, q.sides.rhs, equal_nan=True)
            for p, q in zip(ra.result.parts, rb.result.parts, strict=True)
        )
        fa, fb = record_json(ra)["findings"], record_json(rb)["findings"]
        if not same:
            differ += 1
            assert fa != fb, f"{key}: the records differ between seeds 0 and 7, the findings do not"
    assert differ >= len(a) - 1  # the random instances change with the seed
    # the rate part of perfedavg.w1 (a Monte Carlo slope): its fitted exponent is the run's
    rate = [
        [f["slope"] for f in record_findings(recs[("perfedavg.w1", "quadratic")]) if f["kind"] == "rate"]
        for recs in (a, b)
    ]
    assert rate[0] and rate[1] and rate[0] != rate[1]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_number_of_a_finding_is_a_number_of_the_record(seed):
    for rec in _records(seed):
        j = record_json(rec)
        assert j["findings"], _key(rec)
        assert len(j["findings"]) == len(j["finding_values"])
        for text in j["findings"]:
            assert not _unexplained(text, rec), (_key(rec), text, _unexplained(text, rec))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_worst_instance_is_the_worst_of_the_record(seed):
    """Independently of the renderer: the failing instance with the largest lhs/rhs, its sides."""
    for rec in _records(seed):
        parts = {p.name: p for p in rec.result.parts}
        for f in record_findings(rec):
            if f["kind"] != "worst" or not f["failing"] or f["ratio"] is None:
                continue
            p = parts[f["part"]]
            r = p.ratio[p.failures]
            assert f["ratio"] == np.max(r[~np.isnan(r)])
            i = f["instance"]
            assert (f["lhs"], f["rhs"]) == (p.sides.lhs[i], p.sides.rhs[i])
            assert f"#{i}: lhs {fmt(p.sides.lhs[i])}, rhs {fmt(p.sides.rhs[i])}" in f["text"]


def test_the_check_rejects_a_number_the_run_did_not_compute():
    """The check above can fail: a finding quoting another run's slope is caught."""
    rec = next(r for r in _records(7) if _key(r) == ("perfedavg.w1", "quadratic"))
    assert _unexplained("fitted exponent -0.57 [-0.68, -0.45]", rec) == ["-0.57", "-0.68", "-0.45"]


@pytest.mark.parametrize("seed", SEEDS)
def test_notes_are_never_in_the_json(seed):
    for rec in _records(seed):
        st = rec.statement
        assert st.findings, f"{st.id}: pick statements with notes"
        j = record_json(rec)
        dumped = json.dumps(j, ensure_ascii=False)
        for note in st.findings:
            assert note not in dumped
            assert all(note not in f and f not in note for f in j["findings"])
        assert j["notes"] == f"moreau check --describe {st.id}"


def test_notes_are_in_describe_under_their_label():
    for sid in IDS:
        st = catalogue()[sid]
        entry = describe(st)
        assert NOTES_LABEL in entry
        after = entry.split(NOTES_LABEL, 1)[1]
        assert all(note in after for note in st.findings)


def _sweep_statement(power, c=1.0):
    """x log-uniform over six decades, one part 'c x^power <= 1': lhs/rhs = c x^power exactly."""

    def instances(family, trials, rng):
        return {"x": 10.0 ** rng.uniform(-3, 3, trials or 40)}

    def evaluate(batch, claim):
        x = batch["x"]
        return {"c x^p <= 1": Sides(claim["c"] * x ** claim["p"], np.ones_like(x), "upper")}

    return Statement(
        id="toy.growth",
        source="toy, Lemma 0",
        paper="toy",
        latex="x^p <= 1",
        text="x^p <= 1",
        assumptions=(),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim={"p": power, "c": c},
        expect="fails",
        findings=("a note with a number, 3.25, the run never computes",),
    )


def test_growth_along_a_parameter_is_fitted_from_the_record():
    """lhs/rhs = x^2 exactly: the renderer's slope is 2 (closed form) and every pair is a row of the
    record; a failing ratio that does not grow (2 x^0 = 2) gives no growth finding."""
    st = _sweep_statement(2.0)
    (rec,) = runner.run(["toy.growth"], "quadratic", 60, 3, cat={"toy.growth": st})
    growth = [f for f in record_findings(rec) if f["kind"] == "growth"]
    assert [(f["parameter"], f["towards"]) for f in growth] == [("x", "large")]
    (g,) = growth
    x = rec.batch["x"]
    assert all(
        x[i] == v and x[i] ** 2 == r for i, v, r in zip(g["instances"], g["values"], g["ratios"], strict=True)
    )
    assert g["loglog_slope"] == pytest.approx(2.0, abs=1e-9)
    assert g["loglog_slope"] == pytest.approx(np.polyfit(np.log(g["values"]), np.log(g["ratios"]), 1)[0])
    text, slope = g["text"].rsplit("log-log slope ", 1)
    assert slope == fmt(g["loglog_slope"]) and not _unexplained(text, rec)
    assert "3.25" not in json.dumps(record_json(rec))
    flat = _sweep_statement(0.0, 2.0)
    (rec,) = runner.run(["toy.growth"], "quadratic", 60, 3, cat={"toy.growth": flat})
    assert not rec.result.holds
    assert not [f for f in record_findings(rec) if f["kind"] == "growth"]
