"""Issue 29: the lists of how the authors' code differs from the equations (``analysis/fedfw``,
``analysis/permfl``, ``moreau/fl/_pflmf.py``) hold every confirmed item, and each item names its
evidence: a test function (``tests/....py::name``) or a documentation heading (``docs/page.md § heading``)
that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import moreau.analysis.fedfw as fedfw_pkg
import moreau.analysis.permfl as permfl_pkg
from moreau.fl._pflmf import pflmf

ROOT = Path(__file__).resolve().parents[1]

# (name, docstring, where the list starts, where it ends, the items' labels)
LISTS = [
    (
        "fedfw",
        fedfw_pkg.__doc__,
        "Differences between the authors' code",
        '``moreau.fl.fedfw(variant="plus")`` implements',
        [str(k) for k in range(1, 20)],
    ),
    (
        "permfl",
        permfl_pkg.__doc__,
        "Differences between the authors' code",
        "Statements here:",
        [str(k) for k in range(1, 10)],
    ),
    ("pflmf", pflmf.__doc__, "differs from these equations", '``variant="fedper"``:', list("abcdefg")),
]

# what issue 29 and the audits of the authors' code (docs/audits.md) confirmed, as each list words it
CONFIRMED = {
    "fedfw": [
        "overwrites",
        "per parameter tensor",
        "1/|S_t|",
        "without a seed",
        "different step-size clocks",
        "momentum-free mini-batch",
        "the default algorithm is the stochastic variant",
        "never take effect",
        "does not import",
        "FedFW+",
        "λ0 = 0.001",
    ],
    "permfl": [
        "local step count",
        "sequential and unshuffled",
        "β = 0.99 with γ = 5",
        "does NOT make the defaults diverge",
        "spectral radius 0.71",
        "9.07 %",
        "35.05 %",
    ],
    "pflmf": ["at module level", "FedPer", "zeroes the personal", "float32", "n_i/Σn_j"],
}


def _items(doc: str, start: str, end: str, labels: list[str]) -> dict[str, str]:
    text = " ".join(doc[doc.index(start) : doc.index(end, doc.index(start))].split())
    starts = []
    pos = 0
    for label in labels:
        m = re.compile(r"(?:^|[;:.] |\] )\(" + re.escape(label) + r"\) ").search(text, pos)
        assert m is not None, f"item ({label}) not found after position {pos}"
        starts.append(m.end())
        pos = m.end()
    return {lab: text[a:b] for lab, a, b in zip(labels, starts, [*starts[1:], len(text)], strict=True)}


def _heading_exists(page: Path, heading: str) -> bool:
    lines = page.read_text(encoding="utf-8").splitlines()
    return any(ln.startswith("#") and ln.lstrip("#").strip().startswith(heading) for ln in lines)


def _references(item: str) -> list[tuple[str, str]]:
    """(path, test function or docs heading) for every reference in the item's evidence brackets."""
    refs = []
    for ev in re.findall(r"\[evidence: ([^\]]+)\]", item):
        refs += re.findall(r"(tests/[\w/]+\.py)::(\w+)", ev)
        refs += [(p, h.strip()) for p, h in re.findall(r"(docs/[\w/-]+\.md) § ([^;\]()]+)", ev)]
    return refs


@pytest.mark.parametrize(("name", "doc", "start", "end", "labels"), LISTS, ids=[x[0] for x in LISTS])
def test_every_item_names_evidence_that_exists(name, doc, start, end, labels):
    items = _items(doc, start, end, labels)
    for label, item in items.items():
        refs = _references(item)
        assert refs, f"{name} ({label}) names no test or docs section: {item[:80]!r}"
        for path, what in refs:
            file = ROOT / path
            assert file.is_file(), f"{name} ({label}): {path} does not exist"
            if path.startswith("tests/"):
                assert re.search(rf"^def {what}\(", file.read_text(encoding="utf-8"), re.M), (
                    f"{name} ({label}): no test {what} in {path}"
                )
            else:
                assert _heading_exists(file, what), f"{name} ({label}): no heading {what!r} in {path}"


@pytest.mark.parametrize(("name", "doc", "start", "end", "labels"), LISTS, ids=[x[0] for x in LISTS])
def test_every_confirmed_item_is_in_the_list(name, doc, start, end, labels):
    text = " ".join("".join(_items(doc, start, end, labels).values()).split())
    missing = [w for w in CONFIRMED[name] if w not in text]
    assert not missing, f"{name}'s list lacks {missing}"


def test_a_reference_to_a_missing_test_or_heading_is_caught():
    item = "x [evidence: tests/test_deviation_lists.py::test_no_such; docs/audits.md § No such heading]"
    (t_path, t_name), (d_path, d_head) = _references(item)
    assert not re.search(rf"^def {t_name}\(", (ROOT / t_path).read_text(encoding="utf-8"), re.M)
    assert not _heading_exists(ROOT / d_path, d_head)
    assert _heading_exists(ROOT / d_path, "PerMFL")
