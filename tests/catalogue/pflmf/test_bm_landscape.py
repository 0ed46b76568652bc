"""pflmf.bm's non-proportional group: the certified global value, the end-point test and the spurious
minimum, each against an independent computation (exact Fractions, scipy from many starts, a dense
angle enumeration, finite differences)."""

from fractions import Fraction

import numpy as np
import sympy
from scipy.optimize import minimize

from moreau.analysis.engine import runner
from moreau.analysis.engine.registry import get
from moreau.analysis.pflmf import bm, landscape


def _F(A, C, w):
    """F(u, v) = (1/m) sum_i (1/2)(u v_i - c_i)^T A_i (u v_i - c_i) of one instance, w = (u, v)."""
    m, d = C.shape
    u, v = w[:d], w[d:]
    E = v[:, None] * u[None, :] - C
    return 0.5 * np.mean(np.einsum("mi,mij,mj->m", E, A, E))


def test_the_minimal_instance_has_an_exact_spurious_minimum_in_fractions():
    one = bm._minimal_instance()
    A = [[[Fraction(int(x)) for x in row] for row in Ai] for Ai in one["Ai"][0]]
    C = [[Fraction(int(x)) for x in c] for c in one["C"][0]]
    u, v = sympy.symbols("u1 u2"), sympy.symbols("v1 v2")
    F = (
        sum(
            sympy.Rational(1, 2)
            * sum(
                (u[a] * v[i] - C[i][a]) * A[i][a][b] * (u[b] * v[i] - C[i][b])
                for a in range(2)
                for b in range(2)
            )
            for i in range(2)
        )
        / 2
    )
    z = list(u) + list(v)
    at_spurious = {u[0]: 1, u[1]: 0, v[0]: 1, v[1]: 0}  # x_1 = c_1, x_2 = 0
    at_global = {u[0]: 0, u[1]: 1, v[0]: 0, v[1]: 1}  # x_1 = 0, x_2 = c_2
    for point in (at_spurious, at_global):
        assert all(sympy.diff(F, x).subs(point) == 0 for x in z)
    H = sympy.hessian(F, z).subs(at_spurious)
    assert H.is_positive_semidefinite and H.rank() == 3  # one flat direction: the scaling u -> a u, v -> v/a
    assert F.subs(at_spurious) == sympy.Rational(1, 2) and F.subs(at_global) == sympy.Rational(1, 4)
    theta = np.linspace(0, np.pi, 1_000_001)  # dense enumeration of g over directions: the global is 1/4
    U = np.stack([np.cos(theta), np.sin(theta)], axis=-1)[:, None, :]
    assert abs(landscape.reduced(one["Ai"], one["C"], U).min() - 0.25) < 1e-12


def test_algorithm_1_ends_in_the_minimal_instances_spurious_minimum():
    st = get("pflmf.bm")
    data = st.prepare(bm._minimal_instance())
    np.testing.assert_allclose(data["value"], 0.5, rtol=1e-9)  # F = 1/2 from every start
    np.testing.assert_allclose(data["Fstar"], 0.25, rtol=1e-12)
    assert np.all(data["spurious"])


def test_certified_min_is_the_dense_enumeration_for_d_2():
    A, C = landscape.draw(np.random.default_rng(3), 5, m=4, d=2)
    fstar, _ = landscape.certified_min(A, C)
    theta = np.linspace(0, np.pi, 2_000_001)
    U = np.stack([np.cos(theta), np.sin(theta)], axis=-1)[:, None, :]
    dense = landscape.reduced(A, C, np.broadcast_to(U, (theta.size, 5, 2))).min(axis=0)
    assert np.all(fstar <= dense + 1e-12) and np.all(
        dense - fstar < 1e-9
    )  # refined: at most grid error below


def test_scipy_from_many_starts_finds_the_certified_global_and_a_spurious_minimum():
    """F(u, v) minimised by L-BFGS from 60 starts on a drawn non-proportional instance of the checker's
    group (d = 4, m = 6): no start beats the certified value, the best reaches it, and some end at a
    distinct local minimum above it with a PSD Hessian by finite differences of the gradient."""
    st = get("pflmf.bm")
    batch = st.instances("quadratic", 5, runner.rng_for(0, st.id, "quadratic"))
    rows = np.flatnonzero(~batch["prop"])
    A, C = batch["Ai"][rows], batch["C"][rows]
    fstar, _ = landscape.certified_min(A, C)
    rng = np.random.default_rng(0)
    found_spurious = False
    for j in range(rows.size):
        m, d = C[j].shape
        ends = [
            minimize(
                lambda w, j=j: _F(A[j], C[j], w),
                rng.standard_normal(d + m),
                method="L-BFGS-B",
                options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000},
            )
            for _ in range(60)
        ]
        vals = np.array([e.fun for e in ends])
        assert vals.min() >= fstar[j] - 1e-9 and vals.min() - fstar[j] < 1e-7
        for e in ends:
            if e.fun - fstar[j] > 1e-3 and np.linalg.norm(e.jac) < 1e-6:
                w, h = e.x, 1e-5

                def g(w, j=j, d=d):
                    gU, gV = landscape.gradient(A[j : j + 1], C[j : j + 1], w[None, :d], w[None, d:])
                    return np.concatenate([gU[0], gV[0]])

                H = np.array(
                    [
                        (g(w + h * np.eye(d + m)[k]) - g(w - h * np.eye(d + m)[k])) / (2 * h)
                        for k in range(d + m)
                    ]
                )
                found_spurious |= bool(np.linalg.eigvalsh((H + H.T) / 2)[0] > -1e-6)
    assert found_spurious


def test_gradient_and_hessian_are_the_finite_differences_of_F():
    A, C = landscape.draw(np.random.default_rng(5), 1, m=3, d=3)
    rng = np.random.default_rng(6)
    w = rng.standard_normal(6)
    h, E = 1e-5, np.eye(6)
    num_g = np.array(
        [(_F(A[0], C[0], w + h * E[k]) - _F(A[0], C[0], w - h * E[k])) / (2 * h) for k in range(6)]
    )
    gU, gV = landscape.gradient(A, C, w[None, :3], w[None, 3:])
    np.testing.assert_allclose(np.concatenate([gU[0], gV[0]]), num_g, atol=1e-8)  # central differences
    num_H = np.array(
        [
            [
                (
                    _F(A[0], C[0], w + h * (E[a] + E[b]))
                    - _F(A[0], C[0], w + h * (E[a] - E[b]))
                    - _F(A[0], C[0], w - h * (E[a] - E[b]))
                    + _F(A[0], C[0], w - h * (E[a] + E[b]))
                )
                / (4 * h * h)
                for b in range(6)
            ]
            for a in range(6)
        ]
    )
    np.testing.assert_allclose(landscape.hessian(A, C, w[None, :3], w[None, 3:])[0], num_H, atol=1e-4)


def test_the_run_counts_spurious_ends_only_without_proportional_hessians():
    st = get("pflmf.bm")
    batch = st.instances("quadratic", None, runner.rng_for(0, st.id, "quadratic"))
    data = st.prepare(batch)
    one = batch["r"] == 1
    assert np.all(data["stationary"][one])  # every rank-1 run ends at a stationary point
    assert not np.any(data["spurious"][batch["prop"]])  # proportional: none
    assert np.sum(data["spurious"][~batch["prop"]]) >= 4  # non-proportional: several (14 of 24 at seed 0)
