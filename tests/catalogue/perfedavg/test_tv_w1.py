"""perfedavg.tv and perfedavg.w1 (Per-FedAvg eqs. (14a), (16)): verdicts, mutants, closed forms, finding.

Both fail as printed (Assumption 5's f = sum_i f_i; for w1 also the remark's O(1/sqrt m) in every
dimension); the repairs (readings ``mod.MEAN``, ``mod.W1_REPAIR``) hold and are what the mutants change.

The checker lives in ``analysis/perfedavg/tv_w1.py`` with helpers in
``analysis/_perfedavg_div_*.py``; the closed forms are checked here against
brute force (grids over w, finite differences, scipy's 1-D Wasserstein
distance, exact fractions), not against the checker's own formulas.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import wasserstein_distance

from moreau.analysis.engine.core import TIGHT_RTOL
from moreau.analysis.engine.runner import rng_for
from moreau.analysis.perfedavg import tv_w1 as mod
from moreau.analysis.perfedavg.divergences.finite_support import (
    closed_form_sups,
    dyadic_weights,
    logistic_sups,
    reference,
    trig_sup,
    tv,
    w1_homogeneous_sweep,
    w1_lp,
)
from moreau.analysis.perfedavg.divergences.instances import (
    client_weights,
    tv_closed_form_batch,
    w1_closed_form_batch,
)

STATEMENTS = {st.id: st for st in mod.STATEMENTS}
#: both sides are sums of a few dozen products of doubles: ~1e-15 relative; 1e-12 separates rounding
#: from a wrong constant (the mutants are off by >= 25%)
RATIO_TOL = 1e-12


#: the repair of each statement (the reading expected to hold; the mutants are applied to it)
REPAIR = {"perfedavg.tv": mod.MEAN, "perfedavg.w1": mod.W1_REPAIR}


def _repaired(sid):
    st = STATEMENTS[sid]
    return {**st.claim, **st.reading(REPAIR[sid]).changes}


def _runs(sid, seed, reading="repair"):
    """Per family: (family, batch, prepared, result of the repair, or of ``reading``: None = as printed)."""
    st = STATEMENTS[sid]
    reading = REPAIR[sid] if reading == "repair" else reading
    for fam in st.families:
        batch = st.instances(fam, None, rng_for(seed, sid, fam))
        prepared = st.prepared(batch)
        yield fam, batch, prepared, st.run(fam, None, None, batch=batch, prepared=prepared, reading=reading)


def test_expectations_and_readings():
    for sid, st in STATEMENTS.items():
        assert st.expect == "fails" and st.reference is st.reading(REPAIR[sid])
        assert all(r.kind == "reading" and len(r.name) <= 40 for r in st.readings)
    w1 = STATEMENTS["perfedavg.w1"]
    assert [(r.name, r.expect) for r in w1.readings] == [
        (mod.W1_REPAIR, "holds"),
        (mod.W1_PRINTED_F, "fails"),
        (mod.W1_PRINTED_RATE, "fails"),
    ]
    assert not any(m.changes.get("f") == "sum" for st in STATEMENTS.values() for m in st.mutants)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sid", sorted(STATEMENTS))
def test_printed_statement_fails(sid, seed):
    """As printed (f = sum_i f_i) the gradient part fails on both families; for w1 the remark's
    O(1/sqrt m) fails at k = 3 and 4 (sweep instances 1 and 2) and holds at k = 1."""
    for fam, _, _, res in _runs(sid, seed, reading=None):
        assert not res.parts[0].holds, (sid, fam)
        if sid == "perfedavg.w1" and fam == "quadratic":
            assert list(res.parts[2].failures) == [1, 2]


@pytest.mark.parametrize("seed", [0, 1])
def test_w1_each_printed_element_fails_alone(seed):
    """f = sum_i f_i with the repaired rate fails in the (16) parts only; the printed rate with the
    average f fails in the rate part only."""
    for reading, failing in ((mod.W1_PRINTED_F, {0, 1}), (mod.W1_PRINTED_RATE, {2})):
        for fam, _, _, res in _runs("perfedavg.w1", seed, reading=reading):
            bad = {i for i, p in enumerate(res.parts) if not p.holds}
            assert bad == (failing if fam == "quadratic" else failing - {2}), (reading, fam, bad)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sid", sorted(STATEMENTS))
def test_statement_holds(sid, seed):
    """The repair holds (every part applicable)."""
    for fam, _, _, res in _runs(sid, seed):
        bad = [(p.name, p.failures[:3].tolist()) for p in res.parts if not p.holds]
        assert res.holds, f"{sid} on {fam} (seed {seed}): {bad}"
        assert all(p.applicable for p in res.parts), f"{sid} on {fam}: a part has no applicable instance"


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sid", sorted(STATEMENTS))
def test_every_mutant_rejected_on_the_same_batch(sid, seed):
    st = STATEMENTS[sid]
    assert len(st.mutants) >= 2
    rejected = {m.name: False for m in st.mutants}
    for fam, batch, prepared, _ in _runs(sid, seed):
        for m in st.mutants:
            rejected[m.name] |= not st.run(fam, None, None, mutant=m, batch=batch, prepared=prepared).holds
    assert all(rejected.values()), [k for k, v in rejected.items() if not v]


@pytest.mark.parametrize("sid", sorted(STATEMENTS))
def test_bounds_attained_on_closed_forms_and_loose_on_logistic(sid):
    for fam, _, _, res in _runs(sid, 0):
        for p in res.parts:
            if p.claimed == "rate":
                continue
            if fam == "quadratic":
                assert 1 - TIGHT_RTOL <= p.max_ratio <= 1 + RATIO_TOL, (p.name, p.max_ratio)
            else:
                assert p.max_ratio < 0.9, (p.name, p.max_ratio)


def test_aligned_instances_attain_equality_exactly():
    """Two groups, aligned losses: lhs = rhs on each, gradient and Hessian (not only the max)."""
    batch = tv_closed_form_batch(np.random.default_rng(5), 18)
    parts = mod.evaluate_tv(batch, _repaired("perfedavg.tv"))
    aligned = [t for t in range(18) if (t // 3) % 5 == 0]
    for name in mod.TV_PARTS:
        s = parts[name]
        for t in aligned:
            if not s.applicable[t]:
                continue
            if s.rhs[t] == 0:  # linear losses: L = 0 and the Hessian difference is 0
                assert s.lhs[t] == 0, (name, t)
            else:
                assert abs(s.lhs[t] / s.rhs[t] - 1) <= RATIO_TOL, (name, t)


def test_w1_shifted_instances_attain_equality_exactly():
    """Two groups, q2 = q1 shifted along a line, losses linear in z: lhs = rhs > 0 (gradient; Hessian too
    for the trigonometric ones), not only a max ratio of 1 reached through 0/0."""
    st = STATEMENTS["perfedavg.w1"]
    batch = w1_closed_form_batch(np.random.default_rng(11), 12)
    parts = st.evaluate(st.prepared(batch), _repaired("perfedavg.w1"))
    for t in (0, 1, 10, 11):  # the aligned instances: (t // 2) % 5 == 0
        trig = np.any(batch["h"][t] != 0)
        for name in mod.W1_PARTS[:2] if trig else mod.W1_PARTS[:1]:
            s = parts[name]
            assert s.lhs[t] > 0 and abs(s.lhs[t] / s.rhs[t] - 1) <= 1e-9, (name, t, s.lhs[t], s.rhs[t])


# --- closed forms against brute force ---------------------------------------------------------------


def _trig_direct(Delta, h, u, W):
    """Gradient / Hessian diversities of l = h1 cos(u.w) + h2 sin(u.w) at points W, by central differences."""
    eps = 1e-5
    d = u.size

    def loss(w):  # (K,)
        t = w @ u
        return h[:, 0] * np.cos(t) + h[:, 1] * np.sin(t)

    G, H = [], []
    for w in W:
        E = np.eye(d) * eps
        grad = np.stack([(loss(w + e) - loss(w - e)) / (2 * eps) for e in E], axis=-1)  # (K, d)
        hess = np.stack(
            [
                [
                    (loss(w + a + b) - loss(w + a - b) - loss(w - a + b) + loss(w - a - b)) / (4 * eps**2)
                    for b in E
                ]
                for a in E
            ]
        ).transpose(2, 0, 1)  # (K, d, d)
        dg, dH = Delta @ grad, np.einsum("ik,kde->ide", Delta, hess)
        G.append(np.mean(np.sum(dg**2, axis=-1)))
        H.append(np.mean(np.linalg.norm(dH, ord=2, axis=(-2, -1)) ** 2))
    return np.array(G), np.array(H)


def test_trig_sup_matches_brute_force_over_t():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.standard_normal((2, 1, 4))

        def f(t, a=a, b=b):
            return -np.mean((b[0] * np.cos(t) - a[0] * np.sin(t)) ** 2)

        grid = np.linspace(0, 2 * np.pi, 4001)
        t0 = grid[np.argmin([f(t) for t in grid])]
        step = grid[1] - grid[0]
        best = -minimize_scalar(
            f, bounds=(t0 - step, t0 + step), method="bounded", options={"xatol": 1e-12}
        ).fun
        assert trig_sup(a, b)[0] == pytest.approx(best, rel=1e-9)


def test_closed_form_sups_trig_against_finite_differences():
    rng = np.random.default_rng(1)
    d, K, n = 3, 5, 4
    P = dyadic_weights(rng, rng.dirichlet(np.ones(K), n))[None]
    Delta = P - P.mean(axis=1, keepdims=True)
    h, u = rng.standard_normal((1, K, 2)), rng.standard_normal((1, d)) * 1.7
    G2, H2 = closed_form_sups(Delta, np.zeros((1, K, d, d)), np.zeros((1, K, d)), h, u)
    W = rng.standard_normal((200, d)) * 3
    # points along u at the maximizing phase: t = u.w over a fine grid
    W = np.vstack([W, np.linspace(0, 2 * np.pi, 721)[:, None] * u[0] / (u[0] @ u[0])])
    Gd, Hd = _trig_direct(Delta[0], h[0], u[0], W)
    assert np.all(Gd <= G2[0] * (1 + 1e-6)) and np.all(Hd <= H2[0] * (1 + 1e-6))
    assert Gd.max() == pytest.approx(G2[0], rel=1e-4) and Hd.max() == pytest.approx(H2[0], rel=1e-4)


def test_closed_form_sups_quadratic_against_direct_gradients():
    rng = np.random.default_rng(2)
    d, K, n = 3, 6, 4
    P = dyadic_weights(rng, rng.dirichlet(np.ones(K), n))[None]
    Delta = P - P.mean(axis=1, keepdims=True)
    g = rng.standard_normal((1, K, d))
    A0 = rng.standard_normal((d, d))
    shared = np.broadcast_to((A0 + A0.T)[None, None], (1, K, d, d)).copy()
    for A, finite in (
        (np.zeros((1, K, d, d)), True),
        (shared, True),
        (rng.standard_normal((1, K, d, d)), False),
    ):
        A = (A + np.swapaxes(A, -1, -2)) / 2
        G2, H2 = closed_form_sups(Delta, A, g, np.zeros((1, K, 2)), np.zeros((1, d)))
        W = rng.standard_normal((50, d)) * 10
        grads = np.einsum("kde,pe->pkd", A[0], W) + g[0]  # grad l(z_k; w) = A_k w + g_k
        div = np.mean(np.sum(np.einsum("ik,pkd->pid", Delta[0], grads) ** 2, axis=-1), axis=-1)
        hdiv = np.mean(np.linalg.norm(np.einsum("ik,kde->ide", Delta[0], A[0]), ord=2, axis=(-2, -1)) ** 2)
        assert H2[0] == pytest.approx(hdiv, rel=1e-12, abs=1e-30)
        if finite:
            assert np.allclose(div, G2[0], rtol=1e-10)  # constant in w
        else:
            assert G2[0] == np.inf and div.max() > 10 * div.min()


def test_logistic_sups_against_finite_differences():
    rng = np.random.default_rng(3)
    K, n, d = 5, 3, 2
    P = dyadic_weights(rng, rng.dirichlet(np.ones(K), n))[None]
    Delta = P - P.mean(axis=1, keepdims=True)
    X, y = rng.standard_normal((1, K, d)), rng.choice([-1.0, 1.0], (1, K))
    w = rng.standard_normal(d)
    G2, H2 = logistic_sups(Delta, X, y, w[None, None])
    f = lambda w: Delta[0] @ np.log1p(np.exp(-y[0] * (X[0] @ w)))  # noqa: E731  (n,) diversity of losses
    eps, E = 1e-5, np.eye(d) * 1e-5
    grad = np.stack([(f(w + e) - f(w - e)) / (2 * eps) for e in E], axis=-1)
    hess = np.stack(
        [[(f(w + a + b) - f(w + a - b) - f(w - a + b) + f(w - a - b)) / (4 * eps**2) for b in E] for a in E]
    ).transpose(2, 0, 1)
    assert G2[0] == pytest.approx(np.mean(np.sum(grad**2, axis=-1)), rel=1e-7)
    assert H2[0] == pytest.approx(np.mean(np.linalg.norm(hess, ord=2, axis=(-2, -1)) ** 2), rel=1e-4)


def test_tv_exact_against_fractions():
    rng = np.random.default_rng(4)
    P = np.stack([client_weights(rng, lay) for lay in ("random", "sparse", "disjoint")])
    got = tv(P, P.mean(axis=1))
    for t in range(P.shape[0]):
        counts = [[Fraction(int(round(x * 1024)), 1024) for x in row] for row in P[t]]
        p = [sum(col) / len(counts) for col in zip(*counts, strict=True)]
        for i, row in enumerate(counts):
            assert got[t, i] == float(sum(abs(a - b) for a, b in zip(row, p, strict=True)) / 2)


def test_w1_lp_matches_scipy_in_one_dimension():
    rng = np.random.default_rng(5)
    for _ in range(20):
        K = int(rng.integers(2, 8))
        z = rng.standard_normal(K) * 3
        p, q = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K))
        D = np.abs(z[:, None] - z[None])
        assert w1_lp(p, q, D) == pytest.approx(wasserstein_distance(z, z, p, q), rel=1e-9, abs=1e-12)


def test_w1_to_the_average_is_half_w1_between_clients_and_an_assignment():
    """The identities the O(1/sqrt m) sweep rests on, by linear programs: W1(p_1, (p_1 + p_2)/2) =
    W1(p_1, p_2)/2, and between uniform m-point measures W1 = optimal assignment / m (the sweep's draws
    replayed with the same generator; in 1-D also against scipy's wasserstein_distance)."""
    m = 7
    p1 = np.r_[np.full(m, 1 / m), np.zeros(m)]
    p2 = p1[::-1].copy()
    for k in (1, 3):
        mean, _ = w1_homogeneous_sweep(np.random.default_rng(9), k, [m], 2)
        draws, direct = np.random.default_rng(9), []
        for _ in range(2):
            a, b = draws.random((m, k)), draws.random((m, k))
            Z = np.vstack([a, b])
            D = np.linalg.norm(Z[:, None] - Z[None], axis=-1)
            half = w1_lp(p1, (p1 + p2) / 2, D)
            assert half == pytest.approx(w1_lp(p1, p2, D) / 2, rel=1e-9)
            if k == 1:
                assert half == pytest.approx(wasserstein_distance(a[:, 0], b[:, 0]) / 2, rel=1e-9)
            direct.append(half)
        assert mean[0] == pytest.approx(np.mean(direct), rel=1e-9)


def test_w1_rate_as_printed_fails_in_dimension_three():
    """The second finding's instance by an independent solver (scipy.sparse.csgraph's
    min_weight_full_bipartite_matching) and a plain least-squares slope: n = 2, p_u uniform on [0, 1]^k,
    E W1(p_1, p) = E W1(p_1, p_2)/2 decays like m^(-1/3) for k = 3, not m^(-1/2); like m^(-1/2) for k = 1."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    rng = np.random.default_rng(10)
    ms = np.array([16, 32, 64, 128, 256])
    slopes = {}
    for k in (1, 3):
        means = []
        for m in ms:
            vals = []
            for _ in range(16):
                a, b = rng.random((m, k)), rng.random((m, k))
                C = np.linalg.norm(a[:, None] - b[None], axis=-1) + 1e-300  # no structural zeros
                r, c = min_weight_full_bipartite_matching(csr_matrix(C))
                vals.append(C[r, c].sum() / m / 2)
            means.append(np.mean(vals))
        slopes[k] = np.polyfit(np.log(ms), np.log(means), 1)[0]
    assert abs(slopes[3] + 1 / 3) < 0.05 and slopes[3] > -0.5 + 0.1, slopes
    assert abs(slopes[1] + 1 / 2) < 0.1, slopes


def test_w1_lipschitz_constants_against_brute_force_over_w():
    """L_Z of trigonometric losses: max over atom pairs of sup_w ||grad l(z_k) - grad l(z_l)|| / d (grid in t)."""
    batch = w1_closed_form_batch(np.random.default_rng(6), 4)
    LZ, rhoZ = mod._lipschitz(batch)
    t = np.linspace(0, 2 * np.pi, 20001)
    for i in np.flatnonzero(np.any(batch["h"] != 0, axis=(1, 2))):
        h, om, D = batch["h"][i], np.linalg.norm(batch["u"][i]), batch["D"][i]
        K = D.shape[0]
        best = max(
            np.max(np.abs((h[k, 0] - h[m, 0]) * np.sin(t) - (h[k, 1] - h[m, 1]) * np.cos(t))) / D[k, m]
            for k in range(K)
            for m in range(K)
            if k != m
        )
        assert LZ[i] == pytest.approx(om * best, rel=1e-7)
        assert rhoZ[i] == pytest.approx(om**2 * best, rel=1e-7)


def test_w1_logistic_lipschitz_bounds_are_valid():
    rng = np.random.default_rng(7)
    st = STATEMENTS["perfedavg.w1"]
    batch = st.instances("logistic", 4, rng)
    LZ, rhoZ = mod._lipschitz(batch)
    W = rng.standard_normal((400, 2)) * np.repeat([0.3, 1, 3, 30], 100)[:, None]
    for i in range(4):
        X, y, D = batch["X"][i], batch["y"][i], batch["D"][i]
        s = y[None] * (W @ X.T)  # (P, K)
        sig = 1 / (1 + np.exp(s))
        grad = -(y * sig)[..., None] * X  # (P, K, d)
        hess = (sig * (1 - sig))[..., None, None] * np.einsum("kd,ke->kde", X, X)
        for k in range(X.shape[0]):
            for m in range(k):
                assert np.max(np.linalg.norm(grad[:, k] - grad[:, m], axis=-1)) / D[k, m] <= LZ[i] * (
                    1 + 1e-12
                )
                hd = np.linalg.norm(hess[:, k] - hess[:, m], ord=2, axis=(-2, -1))
                assert np.max(hd) / D[k, m] <= rhoZ[i] * (1 + 1e-12)


# --- the finding -------------------------------------------------------------------------------------


def test_finding_minimal_instance_by_direct_computation():
    """n = 2 identical clients p_1 = p_2 = delta_z, l(z; w) = w: TV = W1 = 0 but with f = sum f_i the
    gradient diversity is 1 (and 0 with f = (1/n) sum f_i)."""
    n, grad_l = 2, 1.0  # d/dw l(z; w) = 1 for the single atom z
    grad_fi = [grad_l, grad_l]  # f_i(w) = l(z; w)
    printed = np.mean([(gi - sum(grad_fi)) ** 2 for gi in grad_fi])
    average = np.mean([(gi - sum(grad_fi) / n) ** 2 for gi in grad_fi])
    assert printed == 1.0 and average == 0.0
    # (14a) and (16) give gamma_G^2 = 0 here; the printed statement fails on this instance, the repair holds
    batch = {
        "P": np.ones((1, 2, 1)),
        "A": np.zeros((1, 1, 1, 1)),
        "g": np.ones((1, 1, 1)),
        "h": np.zeros((1, 1, 2)),
        "u": np.zeros((1, 1)),
        "D": np.zeros((1, 1, 1)),
    }
    st = STATEMENTS["perfedavg.tv"]
    assert st.run("quadratic", None, None, batch=batch, reading=mod.MEAN).holds
    res = st.run("quadratic", None, None, batch=batch, reading=None)
    grad_part = res.parts[0]
    assert not grad_part.holds and grad_part.sides.lhs[0] == 1.0 and grad_part.sides.rhs[0] == 0.0


# --- bad input ---------------------------------------------------------------------------------------


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="equal mass"):
        w1_lp([0.5, 0.5], [0.5, 0.6], np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"\(K,\)"):
        w1_lp([0.5, 0.5], [1.0], np.ones((2, 2)))
    with pytest.raises(ValueError, match="f must be"):
        reference(np.ones((1, 2, 3)), "median")
    with pytest.raises(ValueError, match="layout must be"):
        client_weights(np.random.default_rng(0), "uniform")
    with pytest.raises(ValueError, match="hess_norm"):
        closed_form_sups(
            np.zeros((1, 2, 3)),
            np.zeros((1, 3, 2, 2)),
            np.zeros((1, 3, 2)),
            np.zeros((1, 3, 2)),
            np.zeros((1, 2)),
            hess_norm="nuclear",
        )
    with pytest.raises(ValueError, match="not both"):
        closed_form_sups(
            np.zeros((1, 2, 3)),
            np.zeros((1, 3, 2, 2)),
            np.ones((1, 3, 2)),
            np.ones((1, 3, 2)),
            np.ones((1, 2)),
        )
