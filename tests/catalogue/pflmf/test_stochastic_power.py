"""pflmf.stochastic's power (issue 27, item 6).  The default run's grid T = 64..256 is inside the transient
(slopes -0.5 to -0.8 against the asymptotic -1/2), so its rate part cannot detect a change of the exponent of
0.05; its powered version (``Statement.powered``: T = 1024..4096, 24 runs, atol 0.02), which ``moreau check
pflmf.stochastic --analyse`` runs, can, and rejects both mutants and the exponent lowered by 0.05 (slow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from moreau.analysis.engine import power
from moreau.analysis.engine.registry import get
from moreau.analysis.pflmf import stochastic


def test_powered_version_is_the_statement_with_other_horizons():
    st = get("pflmf.stochastic")
    (long,) = st.powered
    assert long is stochastic.LONG_HORIZONS and long.id not in {s.id for s in stochastic.STATEMENTS}
    assert long.claim == st.claim and long.instances is st.instances and long.evaluate is st.evaluate
    assert long.mutants == (*st.mutants, stochastic.POWER_MUTANT)
    assert stochastic.POWER_MUTANT.changes["exponent"] == pytest.approx(st.claim["exponent"] - 0.05)
    assert long.prepare.keywords == {"grid": stochastic.LONG_GRID, "runs": 24, "rungs": (), "atol": 0.02}


def test_powered_wiring_on_small_horizons(monkeypatch):
    """The powered run's record on a cut-down version (T = 64..128, 2 runs): what --analyse reports."""
    small = dataclasses.replace(
        stochastic.LONG_HORIZONS,
        prepare=lambda b: stochastic.prepare(b, grid=np.array([64, 128]), runs=2, rungs=(), atol=0.02),
    )
    st = dataclasses.replace(get("pflmf.stochastic"), powered=(small,))
    rec = type("Rec", (), {"statement": st, "result": type("Res", (), {"family": "quadratic"})()})()
    (r,) = power.powered(rec, seed=0)
    (p,) = r["parts"]
    assert r["id"] == "pflmf.stochastic_long" and "T = 64..128" in p["name"] and p["atol"] == 0.02
    assert [m["name"] for m in r["mutants"]] == [m.name for m in small.mutants]
    assert p["powered"] == (0 <= p["detectable_change"] <= 0.05)


@pytest.mark.slow
def test_long_horizons_detect_a_change_of_0_05_and_reject_the_mutants():
    st = get("pflmf.stochastic")
    rec = type("Rec", (), {"statement": st, "result": type("Res", (), {"family": "quadratic"})()})()
    (r,) = power.powered(rec, seed=0)
    (p,) = r["parts"]
    assert "T = 1024..4096" in p["name"] and r["holds"]
    assert 0 < p["detectable_change"] <= 0.05 and r["powered"]
    assert all(m["rejected"] for m in r["mutants"]), r["mutants"]
