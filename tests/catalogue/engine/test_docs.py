"""The catalogue documentation is generated from the registry and kept in sync."""

from __future__ import annotations

from moreau.analysis.engine import coverage as gaps
from moreau.analysis.engine.describe import DOC_PATH, catalogue_markdown, describe
from moreau.analysis.engine.findings import NOTES_LABEL
from moreau.analysis.engine.registry import catalogue


def test_committed_catalogue_doc_matches_the_registry():
    assert DOC_PATH.exists(), f"{DOC_PATH} is missing: run `python -m moreau.analysis.engine.describe`"
    assert DOC_PATH.read_text(encoding="utf-8") == catalogue_markdown(), (
        "docs/catalogue.md is out of date with the registry: regenerate it with "
        "`python -m moreau.analysis.engine.describe`"
    )


def test_every_statement_is_described_with_its_mutants_and_findings():
    doc = catalogue_markdown()
    for sid, st in catalogue().items():
        entry = describe(st)
        assert f"`{sid}`" in entry and entry in doc
        for m in st.mutants:
            assert m.name in entry
        if st.findings:  # the authors' prose, under its label (never a run's findings: docs/findings.md)
            after = entry.split(NOTES_LABEL, 1)[1]
            assert all(f in after for f in st.findings)
        assert gaps.paper_citation(st.paper) != st.paper, f"{sid}: paper {st.paper!r} has no citation"


def test_known_gaps_are_exactly_the_listed_statements_not_in_the_registry():
    cat = catalogue()
    listed = {sid for sid, *_ in gaps.formal_statements()}
    assert set(cat) <= listed, (
        f"registered ids missing from their paper package's FORMAL_STATEMENTS: {sorted(set(cat) - listed)}"
    )
    gap_ids = [sid for sid, *_ in gaps.known_gaps()]
    assert set(gap_ids) == listed - set(cat)
    assert all(g not in cat for g in gap_ids)
    # a statement not in the registry is a gap; one in it is not
    assert "pfedme.prop1" not in gap_ids
    assert [sid for sid, *_ in gaps.known_gaps(set())] == [sid for sid, *_ in gaps.formal_statements()]


def test_the_catalogue_doc_never_sends_the_reader_outside_the_repository():
    assert "../shared" not in catalogue_markdown()
