"""Nested hypotheses under ``--analyse`` (issue 27, item 1; ``moreau.analysis.engine.nested``): the claim judged
on instances that are convex and not strongly convex, to say whether strong convexity is needed.

Two statements written as a new user would (``moreau.analysis.api``, a module run by ``moreau check
--module``), both on strongly convex quadratics ½xᵀAx − bᵀx, b = Az, gradient descent with step 1/L:

* ``u.converges``: ‖x_T − z‖ ≤ 10⁻³ ‖x⁰ − z‖ at T = 2000 (true for κ ≤ 100: (1 − 1/κ)^T ≤ e⁻²⁰); on a convex,
  not strongly convex A the component of x⁰ − z along the null direction never moves: it needs strong
  convexity;
* ``u.sublinear``: F(x_T) − F(z) ≤ L‖x⁰ − z‖²/(2T) at T = 10, the convex rate: not needed.

And one catalogue statement, gd.strongly_convex (Theorem 1, F(x^t) − F* ≤ (1 − μη)^t (F(x⁰) − F*)): with
μ = 0 its bound is F(x⁰) − F*, which GD with η ≤ 1/L never exceeds on a convex quadratic."""

import json
import textwrap

import numpy as np

from moreau._cli import main
from moreau.analysis.engine import nested as N

MODULE = """
import numpy as np
from moreau.analysis.api import Sides, Statement, quadratic_batch

T_CONV, T_SUB = 2000, 10


def instances(family, trials, rng):
    n = trials or 24
    b = quadratic_batch(rng, n, 3, "strongly_convex")
    z = rng.standard_normal((n, 3))
    b["b"] = np.einsum("tij,tj->ti", b["A"], z)
    return {**b, "z": z, "x0": z + rng.standard_normal((n, 3)), "mu": b["eig"][:, 0]}


def _gd(batch, steps):
    A, b, x = batch["A"], batch["b"], batch["x0"].copy()
    eta = 1 / batch["L"][:, None]
    for _ in range(steps):
        x = x - eta * (np.einsum("tij,tj->ti", A, x) - b)
    return x


def converges(batch, claim):
    x, z, x0 = _gd(batch, T_CONV), batch["z"], batch["x0"]
    return {"distance": Sides(np.linalg.norm(x - z, axis=-1), claim["c"] * np.linalg.norm(x0 - z, axis=-1), "upper")}


def sublinear(batch, claim):
    x, z, x0, A = _gd(batch, T_SUB), batch["z"], batch["x0"], batch["A"]
    gap = 0.5 * np.einsum("ti,tij,tj->t", x - z, A, x - z)
    return {"rate": Sides(gap, batch["L"] * np.sum((x0 - z) ** 2, axis=-1) / (2 * T_SUB), "upper")}


def make(sid, evaluate, claim):
    return Statement(id=sid, source="me", paper="me", latex="", text=sid,
        assumptions=("F mu-strongly convex, L-smooth", "eta = 1/L"),
        families={"quadratic": ("strongly convex, kappa <= 100",)}, claimed="upper", instances=instances,
        evaluate=evaluate, claim=claim, implies=("strongly convex objective (μ > 0)",))


STATEMENTS = (make("u.converges", converges, {"c": 1e-3}), make("u.sublinear", sublinear, {}))
"""


def _nested(tmp_path, capsys):
    path = tmp_path / "mine_nested.py"
    path.write_text(textwrap.dedent(MODULE))
    out = tmp_path / "r.json"
    assert (
        main(["check", "--module", str(path), "--analyse", "--optimise-seconds", "0", "--json", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    recs = {r["id"]: r for r in json.loads(out.read_text())}
    return recs, text


def test_user_statements_one_needs_strong_convexity_one_does_not(tmp_path, capsys):
    recs, text = _nested(tmp_path, capsys)
    assert recs["u.converges"]["holds"] and recs["u.sublinear"]["holds"]  # with strong convexity, both hold
    (conv,) = [e for e in recs["u.converges"]["analyse"]["nested"] if e["hypothesis"] == "strong convexity"]
    assert conv["verdict"] == "needed" and conv["instances"] == 24
    assert "A projected off its smallest eigenvector" in conv["source"]
    # independent: GD never moves the null-direction component, so ‖x_T − z‖ ≥ |⟨x⁰ − z, v⟩|
    assert conv["lhs"] > conv["rhs"] > 0 and conv["ratio"] > 1
    (sub,) = [e for e in recs["u.sublinear"]["analyse"]["nested"] if e["hypothesis"] == "strong convexity"]
    assert sub["verdict"] == "not needed on these instances" and sub["instances"] == 24
    assert "nested hypotheses: needs strong convexity: fails on 24 convex, not strongly convex" in text
    assert "nested hypotheses: strong convexity not needed on these instances" in text


def test_made_instances_are_weaker_by_their_own_numbers():
    rng = np.random.default_rng(3)
    from moreau.analysis.engine.instances import quadratic_batch

    b = quadratic_batch(rng, 8, 4, "strongly_convex")
    z = rng.standard_normal((8, 4))
    b = {**b, "b": np.einsum("tij,tj->ti", b["A"], z), "z": z, "mu": b["eig"][:, 0]}
    pair = N.PAIRS[0]
    made, source = N.weaker_instances(None, "quadratic", b, pair)
    assert made is not None and "eigenvector" in source
    lo = np.linalg.eigvalsh(made["A"])
    # independent of the module's predicates: one zero eigenvalue, the others those of the start
    np.testing.assert_allclose(lo[:, 0], 0.0, atol=1e-12 * np.max(b["L"]))
    np.testing.assert_allclose(lo[:, 1:], b["eig"][:, 1:], rtol=1e-10)
    np.testing.assert_allclose(np.einsum("tij,tj->ti", made["A"], z), made["b"])  # z still a minimiser
    assert np.all(made["mu"] == 0)
    np.testing.assert_allclose(made["eig"], lo)  # the derived spectrum recomputed from the new A
    # the weaker predicate is not trivially true: a nonconvex A is neither
    nc = {**b, "A": -b["A"], "mu": -b["mu"]}
    assert not np.any(pair.weak(nc)) and not np.any(pair.strong(nc))


def test_catalogue_gd_strongly_convex_does_not_need_strong_convexity_on_quadratics():
    from moreau.analysis.engine.registry import get

    st = get("gd.strongly_convex")
    batch = st.instances("quadratic", None, np.random.default_rng(0))
    (e,) = N.nested_hypotheses(st, "quadratic", batch)
    assert e["assumed"] == "declared (implies)"
    assert e["verdict"] == "not needed on these instances" and e["instances"] >= 16
    # the check can fail: a claim changed only where mu = 0 (the bound halved per step there) is false on
    # the made instances, where GD on the null direction of A makes no progress
    mut = {**st.claim, "rate": lambda mu, L, eta, t: (1 - mu * eta) ** t * (1 - 0.5 * (mu == 0)) ** t}
    import dataclasses

    (m,) = N.nested_hypotheses(dataclasses.replace(st, claim=mut), "quadratic", batch)
    assert m["verdict"] == "needed" and m["ratio"] > 1


def test_clients_share_a_null_direction_so_their_mean_is_convex_not_strongly_convex():
    rng = np.random.default_rng(5)
    from moreau.analysis.engine.instances import quadratic_batch

    parts = [quadratic_batch(rng, 6, 3, "strongly_convex") for _ in range(3)]
    A = np.stack([p["A"] for p in parts], axis=1)  # (T, m, d, d)
    b = np.stack([p["b"] for p in parts], axis=1)
    made, source = N.weaker_instances(None, "quadratic", {"A": A, "b": b}, N.PAIRS[0])
    assert made is not None and "eigenvector" in source
    mean_lo, V = np.linalg.eigh(made["A"].mean(axis=1))
    assert np.all(np.abs(mean_lo[:, 0]) <= 1e-12 * mean_lo[:, -1])
    v = V[:, :, 0]
    # v is every client's null direction, and every client keeps the rest of its curvature
    np.testing.assert_allclose(np.einsum("tmij,tj->tmi", made["A"], v), 0.0, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(made["A"])[..., 1] > 0)
    np.testing.assert_allclose(np.einsum("tmi,ti->tm", made["b"], v), 0.0, atol=1e-12)  # a minimiser exists
