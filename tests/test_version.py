"""One version everywhere (issue 26): ``moreau.__version__``, the installed distribution's
metadata, ``moreau --version`` and the newest heading of CHANGELOG.md."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import moreau
from moreau._provenance import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[1]


def _newest_changelog_version():
    for line in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"## (\d+\.\d+\.\d+)\b", line)
        if m:
            return m.group(1)
    raise AssertionError("CHANGELOG.md has no '## X.Y.Z' heading")


def test_version_is_semver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", moreau.__version__), moreau.__version__


def test_distribution_metadata_agrees():
    assert metadata.version(DISTRIBUTION) == moreau.__version__


def test_changelog_newest_heading_agrees():
    assert _newest_changelog_version() == moreau.__version__


def test_cli_version_agrees():
    out = subprocess.run(
        [sys.executable, "-m", "moreau", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"moreau {moreau.__version__}"
