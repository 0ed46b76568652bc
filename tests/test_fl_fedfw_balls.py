"""moreau.fl.fedfw_optimum on the ℓ1 and ℓ2 balls (issue 29) and fedfw's check of its start point.

Independent references: on one ball (problem (4.4)) the exact optimum in 40-digit mpmath, by the KKT
secular equation on the ℓ2 ball (z(ν) = (H + νI)⁻¹c, ‖z(ν)‖ = r, bisection on ν) and by enumerating
the faces of the ℓ1 ball (each sign pattern: the minimiser on the face's affine hull; the best feasible
one is the optimum, as the box test does with its 3^d faces); on a product of balls (the penalised
problem, fixed λ) scipy's SLSQP at ftol 1e-16.  The certificate ``gap`` must bound the exact
suboptimality F(x) − F* (evaluated in mpmath at the returned floats) on every instance, including the
points of a truncated solve (max_iter=1) and of feasible perturbations.
"""

import itertools

import mpmath as mp
import numpy as np
import pytest
from _tol import host
from scipy.optimize import minimize

import moreau as mo
from moreau.fl import Box, L1Ball, L2Ball, Simplex, fedfw, fedfw_optimum
from moreau.fl._ball_qp import certified_gap, project

mp.mp.dps = 40


def _clients(seed, T=4, m=3, d=3, ridge=0.05):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((T, m, d, d))
    A = M @ np.swapaxes(M, -1, -2) / d + ridge * np.eye(d)
    A = (A + np.swapaxes(A, -1, -2)) / 2
    b = rng.standard_normal((T, m, d)) * 3
    return A, b, mo.Quadratic(A, b)


def _mp_value(H, c, x):
    H, c, x = mp.matrix(H.tolist()), mp.matrix(c.tolist()), mp.matrix(x.tolist())
    return (x.T * H * x)[0] / 2 - (c.T * x)[0]


def _l2_exact(H, c, r):
    """min ½xᵀHx − cᵀx over ‖x‖₂ ≤ r in mpmath: ν = 0 if H⁻¹c is inside, else bisection on ν > 0."""
    Hm, cm = mp.matrix(H.tolist()), mp.matrix(c.tolist())
    n = len(c)

    def z(nu):
        return mp.lu_solve(Hm + nu * mp.eye(n), cm)

    if mp.norm(z(0)) <= r:
        return z(0)
    lo, hi = mp.mpf(0), mp.mpf(1)
    while mp.norm(z(hi)) > r:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mp.norm(z(mid)) > r else (lo, mid)
    return z(hi)


def _l1_exact(H, c, r):
    """The same over ‖x‖₁ ≤ r by the faces: every sign pattern σ ∈ {−1, 0, 1}^d, on the face σᵀx = r
    (and the interior), in mpmath; the best feasible candidate."""
    n = len(c)
    best, arg = mp.inf, None
    for pat in itertools.product((-1, 0, 1), repeat=n):
        S = [k for k in range(n) if pat[k] != 0]
        for on_sphere in (True, False):
            if not S and on_sphere:
                continue
            F = S if on_sphere else list(range(n))
            k = len(F)
            K = mp.zeros(k + on_sphere, k + on_sphere)
            rhs = mp.zeros(k + on_sphere, 1)
            for i, a in enumerate(F):
                rhs[i] = c[a]
                for j, bb in enumerate(F):
                    K[i, j] = H[a, bb]
                if on_sphere:
                    K[i, k] = K[k, i] = pat[a]
            if on_sphere:
                rhs[k] = r
            sol = mp.lu_solve(K, rhs)
            x = mp.zeros(n, 1)
            for i, a in enumerate(F):
                x[a] = sol[i]
            ok = sum(abs(v) for v in x) <= r * (1 + mp.mpf(10) ** -30)
            if on_sphere:
                ok = ok and all(x[a] * pat[a] >= 0 for a in F)
            if ok:
                v = (x.T * mp.matrix(H.tolist()) * x)[0] / 2 - (mp.matrix(c.tolist()).T * x)[0]
                if v < best:
                    best, arg = v, x
    return arg


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_the_ball_optimum_matches_an_exact_mpmath_solve_and_its_gap_bounds_the_error(kind):
    A, b, f = _clients(31, T=5, m=3, d=3)
    r = np.array([0.2, 0.6, 1.0, 2.0, 50.0])  # the last contains the unconstrained optimum
    C = (L1Ball if kind == "l1" else L2Ball)(r)
    tg = fedfw_optimum(f, C)
    x = host(tg.x)
    for t in range(5):
        H, c = A[t].mean(0), b[t].mean(0)
        xs = (_l1_exact if kind == "l1" else _l2_exact)(H, c, r[t])
        xs_f = np.array([float(v) for v in xs])
        np.testing.assert_allclose(x[t], xs_f, rtol=0, atol=1e-10)
        err = _mp_value(H, c, x[t]) - (
            (xs.T * mp.matrix(H.tolist()) * xs)[0] / 2 - (mp.matrix(c.tolist()).T * xs)[0]
        )
        assert -1e-25 <= err <= tg.gap[t], (t, err, tg.gap[t])  # the certificate bounds the true error
        norm = np.sum(np.abs(x[t])) if kind == "l1" else mp.norm(mp.matrix(x[t].tolist()))
        assert norm <= r[t]  # feasible in exact arithmetic (mpmath norm of the returned floats)
    assert np.all(tg.gap <= 1e-12) and np.all(tg.kkt <= 1e-12)


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_the_penalised_ball_optimum_matches_slsqp(kind):
    """Φ_λ over a product of balls against scipy's SLSQP (smooth constraints: ‖z_i‖² ≤ r² for ℓ2; for ℓ1
    the split z = u − v, u, v ≥ 0, Σ(u + v) ≤ r), started away from the optimum."""
    A, b, f = _clients(32, T=3, m=3, d=3)
    r, lam = np.array([0.3, 0.8, 1.5]), np.array([0.5, 2.0, 10.0])
    C = (L1Ball if kind == "l1" else L2Ball)(r)
    tg = fedfw_optimum(f, C, lam=lam)
    X = host(tg.X)
    m, d = 3, 3
    n = m * d
    for t in range(3):

        def phi(Z, t=t):
            Z = Z.reshape(m, d)
            val = np.mean(np.einsum("mi,mij,mj->m", Z, A[t], Z) / 2 - np.einsum("mi,mi->m", b[t], Z))
            return val + lam[t] / 2 * np.sum((Z - Z.mean(0)) ** 2)

        if kind == "l2":
            cons = [
                {
                    "type": "ineq",
                    "fun": lambda z, i=i, t=t: r[t] ** 2 - z[i * d : (i + 1) * d] @ z[i * d : (i + 1) * d],
                }
                for i in range(m)
            ]
            res = minimize(
                phi,
                np.full(m * d, 0.01),
                method="SLSQP",
                constraints=cons,
                options={"ftol": 1e-16, "maxiter": 1000},
            )
            Zr = res.x.reshape(m, d)
        else:
            cons = [
                {
                    "type": "ineq",
                    "fun": lambda w, i=i, t=t: (
                        r[t] - np.sum(w[i * d : (i + 1) * d]) - np.sum(w[n + i * d : n + (i + 1) * d])
                    ),
                }
                for i in range(m)
            ]
            res = minimize(
                lambda w: phi(w[:n] - w[n:]),
                np.full(2 * n, 0.01),
                method="SLSQP",
                bounds=[(0, None)] * (2 * n),
                constraints=cons,
                options={"ftol": 1e-16, "maxiter": 1000},
            )
            Zr = (res.x[:n] - res.x[n:]).reshape(m, d)
        norms = np.sum(np.abs(Zr), -1) if kind == "l1" else np.linalg.norm(Zr, axis=-1)
        assert np.all(norms <= r[t] * (1 + 1e-10))  # the reference is feasible (to SLSQP's tolerance)
        assert abs(tg.value[t] - phi(Zr.ravel())) <= 1e-10
        assert tg.value[t] <= phi(Zr.ravel()) + 1e-12  # and no better than the certified optimum
        np.testing.assert_allclose(X[t], Zr, atol=1e-6)  # SLSQP's point: ~sqrt of its value accuracy
    assert np.all(tg.gap <= 1e-12)
    for t in range(3):  # every client's model in the ball
        norms = np.sum(np.abs(X[t]), -1) if kind == "l1" else np.linalg.norm(X[t], axis=-1)
        assert np.all(norms <= r[t])


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_the_certificate_bounds_truncated_solves_and_perturbed_points(kind):
    A, b, f = _clients(33, T=4, m=4, d=4, ridge=0.0)  # singular H: slow projected gradient
    r = np.full(4, 0.7)
    C = (L1Ball if kind == "l1" else L2Ball)(r)
    exact_, rough = fedfw_optimum(f, C), fedfw_optimum(f, C, max_iter=1)
    assert np.all(rough.value - exact_.value <= rough.gap + 1e-13)
    rng = np.random.default_rng(34)
    H, c = A.mean(1), b.mean(1)
    p = 1 if kind == "l1" else 2
    for _ in range(10):  # feasible points y: F(y) - F* <= gap(y), the bound as computed
        y = project(host(exact_.x) + 0.3 * rng.standard_normal((4, 4)), r, p) * (1 - 1e-12)
        gap, computed = certified_gap(H, c, y, r, p, 1)
        sub = np.einsum("ti,tij,tj->t", y, H, y) / 2 - np.einsum("ti,ti->t", c, y) - exact_.value
        assert np.all(sub <= gap) and np.all(gap >= computed)
        assert np.all(sub >= -1e-13)


def test_the_l1_projection_meets_its_optimality_condition():
    """P(z) for ‖·‖₁ ≤ r is characterised by ⟨z − P(z), u − P(z)⟩ ≤ 0 at every vertex u = ±r e_k."""
    rng = np.random.default_rng(35)
    Z = rng.standard_normal((200, 5)) * rng.uniform(0.1, 3, (200, 1))
    r = rng.uniform(0.2, 2.0, 200)
    P = project(Z, r, 1)
    assert np.all(np.sum(np.abs(P), -1) <= r * (1 + 1e-14))
    V = np.concatenate([np.eye(5), -np.eye(5)])[None] * r[:, None, None]
    ineq = np.einsum("ti,tvi->tv", Z - P, V - P[:, None, :])
    assert np.all(ineq <= 1e-12)
    inside = np.sum(np.abs(Z), -1) <= r
    np.testing.assert_array_equal(P[inside], Z[inside])


# --- fedfw's start point ---------------------------------------------------------------------

_A, _B, _F = _clients(36, T=2, m=2, d=3)
OUTSIDE = [
    ("l1", L1Ball(1.0), [0.6, 0.6, 0.0], r"L1Ball\(r=1\): it is outside by 0.2 \(\|\|x\|\|_1 - r\)"),
    ("l2", L2Ball(1.0), [0.0, 0.0, 1.5], r"L2Ball\(r=1\): it is outside by 0.5 \(\|\|x\|\|_2 - r\)"),
    ("box", Box(-np.ones(3), np.ones(3)), [0.0, -1.25, 0.0], r"Box\(lo=.*it is outside by 0.25"),
    ("simplex", Simplex(1.0), [0.5, 0.25, 0.0], r"Simplex\(r=1\): it is outside by 0.25"),
    (
        "one trial",
        L2Ball(np.array([1.0, 2.0])),
        [[0.0, 0.0, 0.5], [0.0, 3.0, 0.0]],
        r"L2Ball\(r of shape \(2,\)\): it is outside by 1 .*trial index \(1,\)",
    ),
]


@pytest.mark.parametrize("C, x0, match", [o[1:] for o in OUTSIDE], ids=[o[0] for o in OUTSIDE])
def test_a_start_outside_the_set_is_a_one_line_error(C, x0, match):
    with pytest.raises(ValueError, match="x0 must lie in the constraint set " + match) as e:
        fedfw(_F, C, rounds=2, x0=np.array(x0))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("C", [L1Ball(1.0), L2Ball(1.0), Box(-np.ones(3), np.ones(3)), Simplex(1.0)])
def test_starts_on_the_boundary_are_accepted(C):
    """A vertex (ℓ1, box, simplex) or a unit vector (ℓ2): inside, to rounding, also in float32."""
    x0 = C.lmo(np.array([0.3, -1.0, 0.2]) / 3)
    for dt in (np.float64, np.float32):
        h = fedfw(mo.Quadratic(_A.astype(dt), _B.astype(dt)), C, rounds=2, x0=x0.astype(dt))
        assert np.all(np.isfinite(host(h.w_global)))
