"""Packaging: everything installs under the ``moreau`` namespace, under a free distribution name."""

from __future__ import annotations

import importlib
from importlib import metadata
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _setuptools_config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_installed_package_is_under_the_moreau_namespace():
    cfg = _setuptools_config()
    packages = cfg["tool"]["setuptools"]["packages"]
    outside = [p for p in packages if p != "moreau" and not p.startswith("moreau.")]
    assert not outside, f"top-level packages other than moreau would land in site-packages: {outside}"


def test_every_package_folder_is_listed():
    """A sub-package added to analysis/ or experiments/ without its pyproject entry would be missing
    from a (non-editable) install."""
    cfg = _setuptools_config()["tool"]["setuptools"]
    dirs = cfg["package-dir"]
    listed = set(cfg["packages"])
    for name, folder in dirs.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder)
            dotted = ".".join((name, *rel.parts)) if rel.parts else name
            assert dotted in listed, f"{init.parent} (package {dotted}) is not in [tool.setuptools] packages"


def test_catalogue_and_experiments_import_under_the_namespace():
    for name, folder in (
        ("moreau.analysis.engine.registry", "analysis"),
        ("moreau.experiments.registry", "experiments"),
    ):
        module = importlib.import_module(name)
        assert folder in {p.name for p in Path(module.__file__).resolve().parents}
    from moreau.analysis.engine.registry import declared

    modules = [name for name, _ in declared("STATEMENTS")]
    assert modules and all(m.startswith("moreau.analysis.") for m in modules)


def test_distribution_name_and_provenance_use_it():
    from moreau._provenance import DISTRIBUTION, versions

    assert _setuptools_config()["project"]["name"] == DISTRIBUTION == "moreau-pfl"
    assert versions()[DISTRIBUTION] == metadata.version("moreau-pfl")
