"""Shared test set-up: hypothesis profiles, the ``xp`` backend fixture, ``--runslow``.

Profiles: ``ci`` (default; derandomized, so a run is reproducible) and ``dev``
(random), chosen with ``HYPOTHESIS_PROFILE``.  Tolerances live in ``_tol.py``.
"""

from __future__ import annotations

import importlib
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=40,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    derandomize=False,
    deadline=None,
    max_examples=40,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _gpu():
    from moreau._backend import gpu_status

    return gpu_status()


def _backend_param(name):
    return pytest.param(name, id=name, marks=[pytest.mark.gpu] if name == "cupy" else [])


@pytest.fixture(params=[_backend_param(n) for n in ("numpy", "array_api_strict", "cupy")])
def xp(request):
    """An array namespace the core must run on: numpy, array-api-strict, cupy (GPU only)."""
    name = request.param
    if name == "cupy":
        ok, why = _gpu()
        if not ok:
            pytest.skip(f"cupy backend not usable: {why}")
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name} is not installed ({exc})")


@pytest.fixture
def gpu_xp():
    """cupy, or a skip that says why no GPU is usable."""
    ok, why = _gpu()
    if not ok:
        pytest.skip(f"needs a usable GPU: {why}")
    import cupy

    return cupy


@pytest.fixture
def fresh_backend(monkeypatch):
    """Forget the constructor backend and MOREAU_BACKEND for one test; restored afterwards."""
    import moreau._backend as backend

    monkeypatch.delenv("MOREAU_BACKEND", raising=False)
    monkeypatch.setattr(backend, "_backend", None)
    return backend
