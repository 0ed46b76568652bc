"""The instance-property library (moreau.analysis.engine.properties, issue 27 item 1): every property
is False on an instance built by hand and True on another (none is trivially always true), the
catalogue's shared properties are implied or waived with a reason, and the report and the JSON say
which properties every instance of a run has."""

from __future__ import annotations

import numpy as np
import pytest

from moreau.analysis.engine import registry
from moreau.analysis.engine.batches import _draw, rng_for
from moreau.analysis.engine.core import Sides, Statement
from moreau.analysis.engine.properties import (
    PROPERTIES,
    instance_properties,
    observed_ranges,
    shared_properties,
)

I2 = np.eye(2)
R = np.array([[1.0, 2.0], [2.0, 5.0]])  # not a multiple of I, does not commute with diag(1, 3)
D13 = np.diag([1.0, 3.0])
D24 = np.diag([2.0, 4.0])


def _q(A, **more):
    """A quadratic batch of two instances: Hessians ``A`` ``(2, [m,] d, d)`` and a linear term."""
    A = np.asarray(A, float)
    return {"A": A, "b": np.zeros(A.shape[:-1]), **more}


def _knots(slopes, mu):
    """Two 1-D instances of the sample family ℓ_j = f + ψ_j (ψ_j' through V at knots -1, 0, 1)."""
    V = np.array([[[0.0, s, 2 * s], [0.0, -s, -2 * s]] for s in slopes])
    return {"knots": np.tile([-1.0, 0.0, 1.0], (2, 1)), "V": V, "mu": np.asarray(mu, float), "w": np.zeros(2)}


def _logistic(mu, X=None):
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]]) if X is None else X
    return {"X": X, "y": np.ones((2, 2)), "mu": np.asarray(mu, float), "w": np.zeros((2, 2))}


# property -> (family, a batch of two instances: the first has it, the second does not); built by hand
CASES = {
    "one client": ("quadratic", _q([[[1.0]], [[1.0]]], p=np.array([[1.0, 0.0], [0.5, 0.5]]))),
    "d = 1": ("quadratic", {"d": np.array([1, 3])}),
    "isotropic Hessians": ("quadratic", _q([2 * I2, D13])),
    "shared Hessian across clients": ("quadratic", _q([[D13, D13], [D13, R]])),
    "commuting Hessians across clients": ("quadratic", _q([[D13, D24], [D13, R]])),
    "equal client weights": ("quadratic", {"p": np.array([[0.5, 0.5], [0.25, 0.75]])}),
    "strongly convex sample losses": ("nonconvex", _knots([0.5, -2.0], [1.0, 1.0])),
    "convex sample losses": ("nonconvex", _knots([-1.0, -2.0], [1.0, 1.0])),
    "noise independent of θ": ("nonconvex", _knots([0.0, 0.5], [1.0, 1.0])),
    "x⁰ inside the set": ("quadratic", {"x0": np.array([[0.5, -1.0], [0.5, 1.5]]), "h": np.ones((2, 2))}),
    "strongly convex objective (μ > 0)": ("quadratic", _q([[D13, -D13 + 2 * I2], [D13, -D13]])),
    "bounded gradients": ("logistic", _logistic([0.0, 0.1])),
    "λ ≤ L": ("quadratic", {"lam": np.array([0.5, 2.0]), "L": np.ones(2)}),
    "λ ≥ L": ("quadratic", {"lam": np.array([2.0, 0.5]), "L": np.ones(2)}),
}


def test_every_property_has_a_case():
    assert set(CASES) == set(PROPERTIES)


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_property_is_true_on_one_instance_and_false_on_another(name):
    family, batch = CASES[name]
    got = instance_properties(None, family, batch)
    assert got[name].tolist() == [True, False]


@pytest.mark.parametrize(
    ("name", "family", "batch", "expected"),
    [
        # the ridge decides: a logistic sample is convex, strongly convex only with μ > 0
        ("strongly convex sample losses", "logistic", _logistic([0.2, 0.0]), [True, False]),
        # identical samples: the same Hessian everywhere; distinct rows: θ-dependent noise
        ("noise independent of θ", "logistic", _logistic([0.1, 0.1]), [False, True]),
        # one shared sample Hessian A: noise B_j - mean(B) is constant in θ; A = diag(1, 0): convex only
        (
            "strongly convex sample losses",
            "quadratic",
            {"A": np.array([D13, np.diag([1.0, 0.0])]), "B": np.zeros((2, 4, 2))},
            [True, False],
        ),
        # the ℓ1 ball of radius 1 (FedFW's code 1): (0.5, -0.5) inside, (0.5, 0.6) outside
        (
            "x⁰ inside the set",
            "quadratic",
            {
                "x0": np.array([[0.5, -0.5], [0.5, 0.6]]),
                "h": np.ones((2, 2)),
                "set": np.ones(2),
                "lam0": np.ones(2),
            },
            [True, False],
        ),
        # an A beside no linear term or spectrum is not read as a Hessian
        ("isotropic Hessians", "quadratic", {"A": np.array([I2, I2])}, None),
        # X, y on a quadratic family are not logistic samples
        ("strongly convex sample losses", "quadratic", _logistic([0.2, 0.0]), None),
    ],
)
def test_property_conventions(name, family, batch, expected):
    got = instance_properties(None, family, batch).get(name)
    assert (None if got is None else got.tolist()) == expected


def test_commuting_is_checked_against_the_products():
    rng = np.random.default_rng(3)
    Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]  # a shared eigenbasis: commuting, not diagonal
    A = np.stack([Q @ np.diag(rng.uniform(1, 2, 3)) @ Q.T for _ in range(4)])
    B = A.copy()
    B[1] = Q @ np.diag([1.0, 2.0, 3.0]) @ Q.T + 0.1 * np.outer(Q[:, 0], Q[:, 1] + Q[:, 1])
    B[1] = (B[1] + B[1].T) / 2
    got = instance_properties(None, "quadratic", _q(np.stack([A, B])))
    direct = [all(np.allclose(M[k] @ M[j], M[j] @ M[k]) for k in range(4) for j in range(4)) for M in (A, B)]
    assert got["commuting Hessians across clients"].tolist() == direct == [True, False]


def test_observed_ranges():
    assert observed_ranges({"lam": np.array([1.0, 4.0]), "L": np.array([2.0, 2.0])}) == {"λ/L": (0.5, 2.0)}


def _toy(**more):
    def instances(family, trials, rng):
        return {"A": np.tile(np.eye(1), (3, 1, 1)), "b": rng.standard_normal((3, 1)), "lam": np.ones(3)}

    def evaluate(batch, claim):
        return {"(1)": Sides(np.zeros(3), np.ones(3), "upper")}

    return Statement(
        id="toy.shared",
        source="toy",
        paper="toy",
        latex="0 <= 1",
        text="0 <= 1",
        assumptions=("A >= 0",),
        families={"quadratic": ("toy",)},
        claimed="upper",
        instances=instances,
        evaluate=evaluate,
        claim={},
        **more,
    )


def test_shared_properties_implied_and_waived():
    every = {"d = 1": True, "isotropic Hessians": True, "one client": False}
    assert shared_properties(_toy(), "quadratic", every) == (["d = 1", "isotropic Hessians"], {})
    st = _toy(implies=("isotropic Hessians",), waived={("quadratic", "d = 1"): "a 1-D family"})
    assert shared_properties(st, "quadratic", every) == ([], {"d = 1": "a 1-D family"})
    assert shared_properties(st, "logistic", every) == (["d = 1"], {})  # waived on quadratic only


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"implies": ("no such property",)}, ValueError, "unknown properties"),
        ({"implies": "d = 1"}, TypeError, "implies must be a tuple"),
        ({"waived": {"d = 1": ""}}, ValueError, "why it is waived"),
        ({"waived": ["d = 1"]}, TypeError, "waived must be a dict"),
    ],
    ids=["unknown", "string", "no-reason", "not-a-dict"],
)
def test_bad_implies_and_waived(kwargs, err, match):
    with pytest.raises(err, match=match):
        _toy(**kwargs)


def test_report_line_and_json(capsys):
    from moreau.analysis.engine.records import record_json
    from moreau.analysis.engine.report import print_verdicts
    from moreau.analysis.engine.runner import run

    names = ["d = 1", "isotropic Hessians", "strongly convex objective (μ > 0)"]  # A = (1) on every instance
    for st, shared in (
        (_toy(), names),
        (_toy(implies=tuple(names[1:])), names[:1]),
        (_toy(implies=tuple(names)), []),
    ):
        recs = run(cat={st.id: st})
        print_verdicts(recs)
        out = " ".join(capsys.readouterr().out.split())  # the report's line, unwrapped
        line = f"every instance [quadratic]: {', '.join(shared)} — not assumed: the verdict does not cover the rest"
        assert (line in out) == bool(shared) and ("every instance" in out) == bool(shared)
        j = record_json(recs[0])
        assert j["shared_properties"] == {"quadratic": shared}
        assert j["waived_properties"] == {"quadratic": {}}


CAT = registry.catalogue()
CASES_CAT = [(sid, fam) for sid, st in CAT.items() for fam in st.families]


@pytest.mark.parametrize(("sid", "fam"), CASES_CAT, ids=[f"{s}-{f}" for s, f in CASES_CAT])
def test_catalogue_shared_properties_are_implied_or_waived(sid, fam):
    """At the default trials, every property all of a family's instances have is implied by the printed
    hypotheses or waived with its reason; an implied property holds on every instance it is computed on."""
    st = CAT[sid]
    props = instance_properties(st, fam, _draw(st, fam, None, rng_for(0, sid, fam)))
    shared, _ = shared_properties(st, fam, {k: bool(v.all()) for k, v in props.items()})
    assert not shared, f"{sid} [{fam}]: every instance has {shared}: widen the generator, or implies=/waived="
    broken = [k for k in st.implies if k in props and not props[k].all()]
    assert not broken, f"{sid} [{fam}]: implies {broken}, but some instance lacks it"
