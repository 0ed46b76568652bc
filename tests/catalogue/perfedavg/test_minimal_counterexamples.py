"""The recorded minimal counterexamples of perfedavg.tv and perfedavg.w1 (perfedavg/minimal_counterexamples.py).

Each is run as every ``moreau check`` runs it (``reading=None``: the printed claim, f = sum_i f_i): the
printed claim fails there with finite sides and a positive right side, by the exact numbers its
comment derives, on an instance of the size the comment says (d = 1, n = 2 clients, K = 2 atoms);
the repair f = (1/n) sum_i f_i holds there.
"""

from __future__ import annotations

import numpy as np
import pytest

from moreau.analysis.perfedavg import tv_w1 as mod
from moreau.analysis.perfedavg.divergences.instances import (
    logistic_atoms_batch,
    tv_closed_form_batch,
    w1_closed_form_batch,
)

STATEMENTS = {st.id: st for st in mod.STATEMENTS}
#: (statement, family) -> (failing part, lhs, rhs) as the comments derive them
EXPECTED = {
    ("perfedavg.tv", "quadratic"): (mod.TV_PARTS[0], 1.0, 1 / 4),
    ("perfedavg.tv", "logistic"): (mod.TV_PARTS[1], 1 / 16, 1 / 64),
    ("perfedavg.w1", "quadratic"): (mod.W1_PARTS[0], 1 / 2, 1 / 4),
    ("perfedavg.w1", "logistic"): (mod.W1_PARTS[1], 1 / 16, 1 / 64),
}
REPAIR = {"perfedavg.tv": mod.MEAN, "perfedavg.w1": mod.W1_REPAIR}


def _one(sid, fam):
    return STATEMENTS[sid].counterexample(fam)


def test_every_family_where_the_printed_claim_fails_has_one():
    for sid in REPAIR:
        assert (
            set(STATEMENTS[sid].counterexamples) == set(STATEMENTS[sid].families) == {"quadratic", "logistic"}
        )


@pytest.mark.parametrize("sid, fam", sorted(EXPECTED))
def test_the_printed_claim_fails_on_the_recorded_instance(sid, fam):
    st, one = STATEMENTS[sid], _one(sid, fam)
    res = st.run(fam, None, None, batch=one, reading=None)
    assert res.instances == 1 and not res.holds
    failing = [p for p in res.parts if p.failures.size and p.sides.role == "theorem"]
    name, lhs, rhs = EXPECTED[(sid, fam)]
    assert [p.name for p in failing] == [name]  # the one part the comment derives (the report's line)
    s = failing[0].sides
    assert np.isfinite(s.lhs[0]) and np.isfinite(s.rhs[0]) and s.rhs[0] > 0 and s.lhs[0] > s.rhs[0]
    np.testing.assert_allclose([s.lhs[0], s.rhs[0]], [lhs, rhs], rtol=1e-12, atol=0)


@pytest.mark.parametrize("sid, fam", sorted(EXPECTED))
def test_the_recorded_instance_has_the_size_its_comment_says(sid, fam):
    """d = 1, n = 2 clients, K = 2 atoms; the fields of the generator's batch (w1: but the rate sweep's
    rate_dim, rate_seed, not part of the instance); dyadic weights that sum to 1."""
    one = _one(sid, fam)
    rng = np.random.default_rng(0)
    closed = tv_closed_form_batch if sid == "perfedavg.tv" else w1_closed_form_batch
    gen = closed(rng, 1) if fam == "quadratic" else logistic_atoms_batch(rng, 1)
    assert set(one) == set(gen) - {"rate_dim", "rate_seed"}
    assert all(np.shape(v)[0] == 1 and np.ndim(v) == np.ndim(gen[k]) for k, v in one.items())
    P = one["P"][0]
    assert (
        P.shape == (2, 2)
        and np.all(P >= 0)
        and np.all(P.sum(axis=1) == 1)
        and np.all(P * 2 == np.round(P * 2))
    )
    d = one["g"].shape[-1] if fam == "quadratic" else one["X"].shape[-1]
    assert d == 1
    if fam == "logistic":
        assert set(one["y"][0]) == {-1.0, 1.0} and one["W"].shape == (1, 1, 1) and one["W"][0, 0, 0] == 0
        D = np.linalg.norm(one["X"][0][:, None] - one["X"][0][None], axis=-1) + np.abs(
            one["y"][0][:, None] - one["y"][0][None]
        )
        np.testing.assert_array_equal(one["D"][0], D)  # the generator's metric on the atoms
    else:
        assert not one["A"].any() and not one["h"].any() and not one["u"].any()  # linear losses
        assert one["D"][0, 0, 1] == 1  # atoms z = 0, 1


@pytest.mark.parametrize("sid, fam", sorted(EXPECTED))
def test_the_repair_holds_on_the_recorded_instance(sid, fam):
    st = STATEMENTS[sid]
    res = st.run(fam, None, None, batch=_one(sid, fam), reading=REPAIR[sid])
    assert res.holds
    for r in st.readings:  # every reading does what the catalogue expects of it here (the rate is not swept)
        held = st.run(fam, None, None, batch=_one(sid, fam), reading=r).holds
        assert held == (r.name != mod.W1_PRINTED_F), r.name
