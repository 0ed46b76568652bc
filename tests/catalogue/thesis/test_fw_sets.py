"""Frank-Wolfe checkers (fw.convex, fw.nonconvex) on Euclidean balls, simplices and l1 balls: the exact
LMOs and diameters against brute force, the certified F* brackets against scipy and dense samples, the
mutants rejected on each set, the x^0-outside-B findings on each set."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from moreau.analysis.engine import runner
from moreau.analysis.engine.registry import get
from moreau.analysis.thesis.fw import sets as S

KINDS = (
    1,
    2,
    3,
)  # ball, simplex, l1 ball (0, the box, is covered by tests/catalogue/test_lemmas4_2_4_4_and_thesis_rates.py)


def _vertices(r, kind, d):
    E = np.eye(d)
    if kind == 2:
        return r * E
    if kind == 3:
        return r * np.concatenate([E, -E])
    return r * np.array(list(itertools.product((-1.0, 1.0), repeat=d)))


def _sphere(rng, n, d, r):
    u = rng.standard_normal((n, d))
    return r * u / np.linalg.norm(u, axis=-1, keepdims=True)


@pytest.mark.parametrize("kind", (0,) + KINDS)
def test_lmo_attains_the_minimum_over_brute_force_extreme_points(kind):
    rng = np.random.default_rng(kind)
    d, T = 3, 200
    r = rng.uniform(0.5, 2.0, T)
    h = np.repeat(r[:, None], d, axis=1)
    g = rng.standard_normal((T, d)) * rng.uniform(0.1, 10, (T, 1))
    g[:5] = 0.0  # g = 0: any point of B is a minimiser
    g[5:10, 1:] = 0.0  # ties between vertices
    s = S.lmo(g, h, np.full(T, kind))
    assert np.all(S.contains(s, h, np.full(T, kind)))
    for i in range(T):
        P = _sphere(rng, 20000, d, r[i]) if kind == 1 else _vertices(r[i], kind, d)
        best = np.min(P @ g[i])
        scale = np.linalg.norm(g[i]) * r[i] + 1e-300
        assert g[i] @ s[i] <= best + 1e-12 * scale  # nothing in B does better ...
        if kind == 1:
            assert g[i] @ s[i] == pytest.approx(-r[i] * np.linalg.norm(g[i]), rel=1e-13, abs=1e-300)
            assert best - g[i] @ s[i] <= 2e-2 * scale  # ... and the samples come close
        else:
            assert g[i] @ s[i] == pytest.approx(best, rel=1e-13, abs=1e-300)


@pytest.mark.parametrize("kind", (0,) + KINDS)
def test_diameter_is_the_largest_distance_between_extreme_points(kind):
    rng = np.random.default_rng(10 + kind)
    d = 3
    h = rng.uniform(0.5, 2.0, (6, d)) if kind == 0 else np.repeat(rng.uniform(0.5, 2.0, (6, 1)), d, axis=1)
    R = S.diameter(h, np.full(6, kind))
    for i in range(6):
        if kind == 0:
            P = np.array(list(itertools.product((-1.0, 1.0), repeat=d))) * h[i]
        elif kind == 1:
            P = _sphere(rng, 3000, d, h[i, 0])
        else:
            P = _vertices(h[i, 0], kind, d)
        far = np.max(np.linalg.norm(P[:, None] - P[None], axis=-1))
        assert far <= R[i] * (1 + 1e-14)
        assert far >= R[i] * (1 - (1e-2 if kind == 1 else 1e-14))


def _random_quadratics(rng, T, d, convex):
    Q, _ = np.linalg.qr(rng.standard_normal((T, d, d)))
    a = rng.uniform(0.0 if convex else -1.0, 1.0, (T, d)) * rng.uniform(0.1, 10, (T, 1))
    if convex:
        a[::3, 0] = 0.0  # singular (the convex kind of the checker)
    A = (Q * a[:, None, :]) @ np.swapaxes(Q, 1, 2)
    A = (A + np.swapaxes(A, 1, 2)) / 2
    b = rng.standard_normal((T, d)) * rng.uniform(0.1, 30, (T, 1))
    return A, b


def _scipy_min(A, b, kind, r, starts):
    """Multistart SLSQP over the set; the l1 ball as x = u - v, u, v >= 0, sum(u + v) <= r (smooth);
    only results feasible to 1e-10 r count."""
    d = b.size
    if kind == 3:
        M = np.block([[A, -A], [-A, A]])
        f = lambda y: 0.5 * y @ M @ y - np.concatenate([b, -b]) @ y  # noqa: E731
        jac = lambda y: M @ y - np.concatenate([b, -b])  # noqa: E731
        cons = [{"type": "ineq", "fun": lambda y: r - np.sum(y), "jac": lambda y: -np.ones_like(y)}]
        bounds, starts = (
            [(0, None)] * (2 * d),
            [np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)]) for x in starts],
        )
    else:
        f = lambda x: 0.5 * x @ A @ x - b @ x  # noqa: E731
        jac = lambda x: A @ x - b  # noqa: E731
        if kind == 1:
            cons, bounds = [{"type": "ineq", "fun": lambda x: r**2 - x @ x, "jac": lambda x: -2 * x}], None
        else:
            cons = [{"type": "eq", "fun": lambda x: np.sum(x) - r, "jac": lambda x: np.ones_like(x)}]
            bounds = [(0, None)] * d
    best = np.inf
    for y0 in starts:
        res = minimize(
            f,
            y0,
            jac=jac,
            constraints=cons,
            bounds=bounds,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        y = res.x
        x = y[:d] - y[d:] if kind == 3 else y
        feasible = S.contains(x[None], np.full((1, d), r * (1 + 1e-10)), np.array([kind]))[0]
        if kind == 2:
            feasible = np.min(x) >= -1e-10 * r and abs(np.sum(x) - r) <= 1e-10 * r
        if feasible:
            best = min(best, f(y))
    return best


@pytest.mark.parametrize("convex", (True, False))
@pytest.mark.parametrize("kind", KINDS)
def test_F_star_bracket_against_scipy_and_dense_samples(kind, convex):
    rng = np.random.default_rng(20 + kind + 10 * convex)
    d, T = 3, 12
    A, b = _random_quadratics(rng, T, d, convex)
    h = np.repeat(rng.uniform(0.5, 2.0, (T, 1)), d, axis=1)
    kk = np.full(T, kind)
    lo, hi, x = S.set_min(A, b, h, kk, convex=convex)
    assert np.all(S.contains(x, h, kk))
    F = lambda X, i: 0.5 * np.einsum("...i,ij,...j->...", X, A[i], X) - X @ b[i]  # noqa: E731
    pts = S.sample_in(rng, np.repeat(h, 4000, axis=0), np.repeat(kk, 4000)).reshape(T, 4000, d)
    ext = S.extreme_points(h, kk, rng, n_sphere=4000)
    for i in range(T):
        scale = (
            abs(hi[i])
            + np.max(np.abs(np.linalg.eigvalsh(A[i]))) * h[i, 0] ** 2
            + np.linalg.norm(b[i]) * h[i, 0]
        )
        assert hi[i] - lo[i] <= 1e-13 * scale and F(x[i], i) == pytest.approx(
            hi[i], rel=1e-12, abs=1e-12 * scale
        )
        sampled = min(np.min(F(pts[i], i)), np.min(F(ext[i], i)))
        assert lo[i] <= sampled + 1e-12 * scale  # no sampled point is below the bracket
        starts = list(S.sample_in(rng, np.repeat(h[i : i + 1], 8, axis=0), np.full(8, kind))) + list(
            ext[i][:6]
        )
        best = _scipy_min(A[i], b[i], kind, h[i, 0], starts)
        assert np.isfinite(best)
        assert lo[i] <= best + 1e-9 * scale  # scipy's feasible points (to its tolerance)
        assert hi[i] <= best + 1e-9 * scale  # and it finds nothing better than F*
        if convex:  # a local solver finds the same minimum
            assert best - hi[i] <= 1e-7 * scale


def test_trust_region_hard_case():
    """c_1 = 0 on the bottom eigenvector, ||x(-a_1)|| < r: the minimiser is x(-a_1) + tau v_1 on the sphere."""
    A = np.diag([-2.0, 1.0, 3.0])[None]
    b = np.array([[0.0, 0.5, 1.5]])  # x(lam = 2) = (0, 1/6, 3/10), norm < r = 1
    lo, hi, x = S.set_min(A, b, np.ones((1, 3)), np.array([1]), convex=False)
    y = np.array([0.0, 0.5 / 3, 1.5 / 5])
    tau = np.sqrt(1 - y @ y)
    exact = 0.5 * (-2 * tau**2 + y[1] ** 2 + 3 * y[2] ** 2) - b[0] @ y
    assert hi[0] == pytest.approx(exact, rel=1e-12) and lo[0] <= exact <= hi[0] + 1e-15
    assert hi[0] - lo[0] <= 1e-12 and np.linalg.norm(x[0]) == pytest.approx(1.0, rel=1e-12)


def _record(sid, seed=0):
    (rec,) = runner.run([sid], "quadratic", None, seed)
    return rec


def _sub(batch, m):
    return {k: v[m] for k, v in batch.items()}


@pytest.mark.parametrize("sid", ["fw.convex", "fw.nonconvex"])
def test_every_set_holds_and_rejects_every_mutant(sid):
    """Each set's sub-batch rejects each mutant on at least one of seeds 0-2 (most on each seed)."""
    st = get(sid)
    ref = st.reference  # printed x^0 in R^d fails: the reading x^0 in B holds and the mutants mutate it
    rejected = {(k, m.name): False for k in (0,) + KINDS for m in st.mutants}
    for seed in range(3):
        rec = _record(sid, seed)
        assert rec.readings[ref.name][0].holds
        kind = rec.batch["set"].astype(int)
        assert set(kind) == {0, 1, 2, 3}
        for k in (0,) + KINDS:
            sub = _sub(rec.batch, kind == k)
            assert st.run("quadratic", None, None, batch=sub, reading=ref).holds
            for m in st.mutants:
                rejected[k, m.name] |= not st.run("quadratic", None, None, mutant=m, batch=sub).holds
    assert all(rejected.values()), [key for key, v in rejected.items() if not v]


@pytest.mark.parametrize("sid", ["fw.convex", "fw.nonconvex"])
def test_starts_outside_each_set_are_drawn_not_applicable_and_fail_the_printed_reading(sid):
    st = get(sid)
    rec = _record(sid)
    b, kind = rec.batch, rec.batch["set"].astype(int)
    res = rec.result  # the printed claim (x^0 in R^d) on the run's own instances
    under = rec.readings[st.reference.name][0]
    for k in KINDS:
        out = (kind == k) & ~S.contains(b["x0"], b["h"], kind)
        assert out.sum() >= 2
        for p in under.parts:
            if p.sides.role == "theorem":
                assert not p.sides.applicable[out].any()
        assert np.max(res.parts[0].ratio[out]) > 1


def test_fw_convex_reaches_three_quarters_at_t1_on_every_set():
    rec = _record("fw.convex")
    part, bracket = rec.readings["x⁰ ∈ B, t ≥ 1"][0].parts
    kind = rec.batch["set"].astype(int)
    for k in (0,) + KINDS:
        m = (kind == k) & part.sides.applicable
        assert 0.749 <= np.max(part.ratio[m]) < 0.75
    assert bracket.holds


def test_fw_nonconvex_bound_attained_at_T1_on_a_diametral_segment():
    """Ball r = 1 (R = 2), F = (L/2)(x_1 + 1)^2, x^0 = e_1: gap(x^0) = 2L * 2 = 4L = L R^2 and
    2(F(x^0) - F*) = 4L: min gap / bound = 1 at T = 1; the halved mutant gives 2."""
    st = get("fw.nonconvex")
    L = 3.0
    A = np.diag([L, 0.0, 0.0])[None]
    batch = {
        "A": A,
        "b": np.array([[-L, 0.0, 0.0]]),
        "L": np.array([L]),
        "h": np.ones((1, 3)),
        "x0": np.array([[1.0, 0.0, 0.0]]),
        "set": np.array([1.0]),
    }
    res = st.run("quadratic", None, None, batch=batch, reading="x⁰ ∈ B")
    assert res.holds and all(p.max_ratio == pytest.approx(1.0, rel=1e-14) for p in res.parts)
    (m,) = [m for m in st.mutants if "halved" in m.name]
    assert st.run("quadratic", None, None, mutant=m, batch=batch).parts[0].max_ratio == pytest.approx(2.0)
    rec = _record("fw.nonconvex")
    kind = rec.batch["set"].astype(int)
    part = rec.readings["x⁰ ∈ B"][0].parts[0]
    for k in KINDS:
        m = (kind == k) & part.sides.applicable
        assert np.max(part.ratio[m]) == pytest.approx(1.0, rel=1e-12)


def test_batches_without_a_set_field_are_boxes():
    """The PEP box search and the older tests build batches without ``set``: they mean boxes."""
    st = get("fw.convex")
    rec = _record("fw.convex")
    box = _sub(rec.batch, rec.batch["set"] == 0)
    bare = {k: v for k, v in box.items() if k != "set"}
    a, b = st.run("quadratic", None, None, batch=box), st.run("quadratic", None, None, batch=bare)
    assert [p.max_ratio for p in a.parts] == [p.max_ratio for p in b.parts]


def test_unknown_set_code_is_rejected():
    batch = {"x0": np.zeros((2, 3)), "set": np.array([1.0, 4.0])}
    with pytest.raises(ValueError, match="set must hold codes 0..3"):
        S.kind_of(batch)
    assert S.kind_of({"x0": np.zeros((2, 3))}).tolist() == [0, 0]


@pytest.mark.parametrize("kind, ratio", [(1, 7.5), (2, 7.5), (3, 7.5)])
def test_fw_convex_finding_outside_start_on_each_set(kind, ratio):
    """d = 3, r = 1, F = ||x - 10 e_1||^2/2 (L = 1), x^0 = 20 e_1 outside B.  Ball (R = 2): x^1 = -e_1,
    F(x^1) - F* = 60.5 - 40.5 = 20 > 2 L R^2/3 = 8/3.  Simplex (R = sqrt 2): x^1 = e_2, 50.5 - 40.5 = 10 >
    4/3.  l1 ball (R = 2): x^1 = -e_1, 20 > 8/3.  Ratio 7.5 each; x^0 in B: not applicable."""
    st = get("fw.convex")
    batch = {
        "A": np.eye(3)[None],
        "b": np.array([[10.0, 0, 0]]),
        "L": np.ones(1),
        "h": np.ones((1, 3)),
        "x0": np.array([[20.0, 0, 0]]),
        "set": np.array([float(kind)]),
    }
    res = st.run("quadratic", None, None, batch=batch, reading="x⁰ ∈ B, t ≥ 1")
    assert res.holds and res.parts[0].applicable == 0
    res = st.run("quadratic", None, None, batch=batch, reading=None)  # as printed: x^0 in R^d
    assert not res.holds and res.parts[0].max_ratio == pytest.approx(ratio, rel=1e-12)
