"""The FedFW checkers (analysis/fedfw): their instances, the exact quantities they compute, and the steps of the
derivations behind their readings, one round at a time (a per-round inequality is sharper than the summed
bound the checker judges, so these tests can fail where a loose bound would not).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from moreau.analysis.engine.registry import get
from moreau.analysis.engine.runner import rng_for
from moreau.analysis.fedfw import convex, personalized, stochastic
from moreau.analysis.fedfw.instances import (
    F_value,
    box_min,
    client_batch,
    constraint,
    diameter,
    inside_points,
    objective,
    run,
    set_lower_bound,
    surrogate_gaps,
)
from moreau.fl._fedfw import fedfw_optimum
from moreau.fl._lmo import Box


def _batch(seed, kind="convex", sets=(0,), T=8, adversarial=0, spread=1.5):
    return client_batch(
        np.random.default_rng(seed), T, 4, 3, kind, sets, adversarial=adversarial, spread=spread
    )


def test_the_rate_tight_instances_sit_on_an_active_face_with_clients_on_both_sides():
    b = _batch(0, adversarial=4, T=4)
    tg = fedfw_optimum(objective(b), Box(-b["h"], b["h"]))
    x = np.asarray(tg.x)
    assert np.allclose(x[:, 0], -b["h"][:, 0])  # x*_1 = -h_1
    g = np.einsum("tmij,tj->tmi", b["A"], x) - b["b"]
    assert np.all(g.mean(axis=1)[:, 0] > 0)  # a positive multiplier: F pushes down on the face
    assert np.all((g[:, :, 0] < 0).any(axis=1))  # some client pulls up


def test_box_min_is_the_global_minimum_of_an_indefinite_quadratic():
    b = _batch(1, kind="indefinite", T=4)
    lo = box_min(b["A"][:, 0], b["b"][:, 0], b["h"])
    rng = np.random.default_rng(2)
    for t in range(4):
        A, c, h = b["A"][t, 0], b["b"][t, 0], b["h"][t]

        def F(x, A=A, c=c):
            return 0.5 * x @ A @ x - c @ x

        def F_grad(x, A=A, c=c):
            return A @ x - c

        starts = [np.array(v) * h for v in itertools.product((-1, 0, 1), repeat=3)] + list(
            rng.uniform(-h, h, (20, 3))
        )
        best = min(
            minimize(F, s, jac=F_grad, bounds=list(zip(-h, h, strict=True)), method="L-BFGS-B").fun
            for s in starts
        )
        assert lo[t] <= best + 1e-12 and lo[t] == pytest.approx(
            best, rel=1e-7, abs=1e-9
        )  # L-BFGS-B's tolerance


def test_the_lower_bound_of_f_low_is_below_every_feasible_value():
    b = _batch(3, kind="indefinite", sets=(0, 1, 2, 3), T=8)
    lb = set_lower_bound(b["A"], b["b"], b["h"], b["set"])
    rng = np.random.default_rng(4)
    for kind in range(4):
        idx = np.flatnonzero(b["set"] == kind)
        C = constraint(b, idx)
        for _ in range(30):  # random extreme points, shrunk towards the centre: points of the set
            s = C.lmo(rng.standard_normal((idx.size, 3)))
            y = b["x0"][idx] + rng.uniform(0, 1, (idx.size, 1)) * (s - b["x0"][idx])
            fy = 0.5 * np.einsum("ti,tmij,tj->tm", y, b["A"][idx], y) - np.einsum(
                "tmi,ti->tm", b["b"][idx], y
            )
            assert np.all(fy >= lb[idx] - 1e-12)


def test_the_surrogate_gap_is_the_gap_of_the_penalised_objective():
    b = _batch(5, sets=(1,))
    h = run(b, 20)
    gaps = surrogate_gaps(b, h)
    k = 7  # the direction the server received is the LMO at the penalised gradient: recompute both
    X, xb = h["w_local"][k], h["w_global"][k]
    V = (np.einsum("tmij,tmj->tmi", b["A"], X) - b["b"]) / 4 + h["lam"][k][:, None, None] * (X - xb[:, None])
    S = constraint(b).lmo(V, clients=True)
    assert np.allclose(S, h["directions"][k]) and np.allclose(gaps[k], np.sum(V * (X - S), axis=(-1, -2)))
    assert np.all(gaps >= -1e-12)


def test_the_convex_recursion_holds_round_by_round():
    """S_t(X^{t+1}) <= (1 - η_t) S_{t-1}(X^t) + η_t² (L + n λ_t) D²/2 (the step of the reading's induction)."""
    b = _batch(6, adversarial=2)
    p = convex.prepare(b)
    h = run(p, 300)
    X, lam = h["w_local"], h["lam"]
    f = np.mean(
        0.5 * np.einsum("rtmi,tmij,rtmj->rtm", X, b["A"], X) - np.einsum("rtmi,tmi->rtm", X, b["b"]), -1
    )
    dist2 = np.sum((X - X.mean(axis=2, keepdims=True)) ** 2, axis=(-1, -2))
    D = diameter(b["h"], b["set"])
    t = np.arange(1, 301)[:, None]
    eta = 2 / (t + 1)
    S_new = f[1:] - p["Fstar"] + lam / 2 * dist2[1:]  # S_t(X^{t+1}), t = 1..300
    S_old = np.vstack([np.zeros((1, 8)), S_new[:-1]])  # S_{t-1}(X^t); the t = 1 term has weight 1 - η_1 = 0
    rhs = (1 - eta) * S_old + eta**2 * (b["L"] + 4 * lam) * D**2 / 2
    assert np.all(S_new <= rhs + 1e-12 * np.abs(rhs))


def test_the_fixed_step_descent_holds_round_by_round():
    """Φ(X^{t+1}) <= Φ(X^t) - η gap_t + η² (L + n λ) D²/2 (the step summed by the nonconvex reading)."""
    b = _batch(7, kind="indefinite", sets=(0, 1, 2, 3))
    T, lam_f, eta = 64, 64 ** (1 / 3), 64 ** (-2 / 3)
    h = run(b, T, lam_schedule=np.full(T, lam_f), eta=np.full(T, eta))
    X = h["w_local"]
    lam = b["lam0"] * lam_f
    phi = np.mean(
        0.5 * np.einsum("rtmi,tmij,rtmj->rtm", X, b["A"], X) - np.einsum("rtmi,tmi->rtm", X, b["b"]), -1
    ) + lam / 2 * np.sum((X - X.mean(axis=2, keepdims=True)) ** 2, axis=(-1, -2))
    gaps = surrogate_gaps(b, h)
    D = diameter(b["h"], b["set"])
    rhs = phi[:-1] - eta * gaps + eta**2 * (b["L"] + 4 * lam) * D**2 / 2
    assert np.all(phi[1:] <= rhs + 1e-12 * np.abs(rhs))
    assert np.allclose(
        phi[0], F_value(b["A"], b["b"], b["x0"])
    )  # the clients start at consensus: Φ(X^1) = F(x̄^1)


def test_the_consensus_bound_holds_round_by_round_and_is_attained_in_rate():
    """dist(X^t, C) <= G/(√n λ) + sqrt(gap_Φ(X^t)/λ) at every round (the nonconvex consensus part's step), G
    the clients' largest gradient norm at their own models (a sharper G than the checker's bound over D)."""
    b = _batch(7, kind="indefinite", sets=(0, 1, 2, 3))
    T, lam_f, eta = 128, 128 ** (1 / 3), 128 ** (-2 / 3)
    h = run(b, T, lam_schedule=np.full(T, lam_f), eta=np.full(T, eta))
    X = h["w_local"][:-1]
    lam = b["lam0"] * lam_f
    grads = np.einsum("tmij,rtmj->rtmi", b["A"], X) - b["b"]
    G = np.max(np.linalg.norm(grads, axis=-1), axis=-1)  # (R, T): max_i ||∇f_i(x_i^t)||
    dist = np.sqrt(np.sum((X - X.mean(axis=2, keepdims=True)) ** 2, axis=(-1, -2)))
    rhs = G / (2 * lam) + np.sqrt(np.maximum(surrogate_gaps(b, h), 0) / lam)  # √n = 2
    assert np.all(dist <= rhs * (1 + 1e-10) + 1e-14)
    assert np.max(dist[1:] / rhs[1:]) > 0.1  # not a vacuous bound on these clients


def test_the_penalised_closeness_bound_is_sharp_for_identical_hessians():
    """dist(X_λ, C) = ||y*||/(λ + a/n) with A_i = a I and no active constraint: the reading's ||y*||/λ is sharp."""
    rng = np.random.default_rng(8)
    m, d, a = 4, 3, 0.5
    z = 0.1 * rng.standard_normal((1, m, d))
    A, bb = np.broadcast_to(a * np.eye(d), (1, m, d, d)).copy(), a * z
    from moreau import Quadratic

    for lam in (0.1, 1.0, 10.0):
        tg = fedfw_optimum(Quadratic(A, bb), Box(-np.ones((1, d)), np.ones((1, d))), lam=lam)
        X = np.asarray(tg.X)
        dist = np.sqrt(np.sum((X - X.mean(1, keepdims=True)) ** 2))
        ystar = np.sqrt(np.sum((a * (z - z.mean(1, keepdims=True))) ** 2)) / m
        assert dist == pytest.approx(ystar / (lam + a / m), rel=1e-10)


def test_stochastic_runs_replay_from_the_batch_seed():
    st = get("fedfw.stochastic")
    b = st.instances("quadratic", 4, rng_for(0, st.id, "quadratic"))
    p = stochastic.prepare(b)
    one, two = (stochastic.evaluate(p, stochastic.CLAIM)[stochastic.PART] for _ in range(2))
    assert np.array_equal(one.lhs, two.lhs)


@pytest.mark.parametrize(
    "sid", ["fedfw.convex", "fedfw.nonconvex", "fedfw.stochastic", "fedfw.sparse", "fedfw.personalized"]
)
def test_every_statement_is_registered_with_the_thesis_as_its_printed_source(sid):
    st = get(sid)
    assert st.paper == "dadras-thesis-personalized-fl.md" and "§4.3" in st.source


def test_nonconvex_family_mixes_every_set_and_kind():
    st = get("fedfw.nonconvex")
    b = st.instances("nonconvex", None, rng_for(0, st.id, "nonconvex"))
    assert set(np.unique(b["set"])) == {0.0, 1.0, 2.0, 3.0}
    low = np.linalg.eigvalsh(b["A"])[..., 0]
    assert np.any(low < 0, axis=1).mean() >= 0.75  # indefinite or concave clients in three quarters
    pers = personalized.instances("quadratic", None, rng_for(0, "fedfw.personalized", "quadratic"))
    assert np.all(pers["x0"][:4] == -pers["h"][:4])  # Theorem 5's worst case starts at a vertex


def test_inside_points_lie_in_their_set_off_its_centre():
    rng = np.random.default_rng(5)
    kinds = np.repeat(np.arange(4.0), 50)
    h = np.repeat(rng.uniform(0.5, 2.0, (200, 1)), 3, axis=1)
    h[kinds == 0] = rng.uniform(0.5, 2.0, (50, 3))
    x = inside_points(rng, h, kinds)
    for k in range(4):
        j = kinds == k
        C = constraint({"set": kinds[j], "h": h[j]})
        assert np.all(np.asarray(C.contains(x[j]))), k  # the set's own membership test (moreau.fl)
    centre = np.where((kinds == 3)[:, None], h / 3, 0.0)
    assert np.all(np.linalg.norm(x - centre, axis=-1) > 1e-6 * h[:, 0])


def test_singular_clients_are_psd_with_a_common_null_direction_and_the_batches_mix_both():
    b = _batch(2, kind="convex_singular", sets=(1, 2), T=6)
    eig = np.linalg.eigvalsh(b["A"])
    assert np.all(eig >= -1e-12 * b["L"][:, None, None])  # every client PSD
    null = np.linalg.eigh(b["A"].mean(axis=1))[1][..., 0]  # the average's null direction
    assert np.allclose(np.einsum("tmij,tj->tmi", b["A"], null), 0.0, atol=1e-12)  # shared by all clients
    assert np.allclose(np.einsum("tmi,ti->tm", b["b"], null), 0.0, atol=1e-12)  # F constant along it
    tg = fedfw_optimum(objective(b), constraint(b))  # the ball solver certifies these
    assert np.all(np.asarray(tg.gap) <= 1e-10 * (b["L"] * diameter(b["h"], b["set"]) ** 2))
    for sid, fam in (
        ("fedfw.convex", "quadratic"),
        ("fedfw.personalized", "quadratic"),
        ("fedfw.sparse", "quadratic"),
    ):
        st = get(sid)
        x = st.instances(fam, None, rng_for(0, sid, fam))
        low = np.linalg.eigvalsh(x["A"].mean(axis=1))[:, 0]
        assert np.any(low > 1e-6 * x["L"]) and np.any(np.abs(low) <= 1e-12 * x["L"]), sid
        centre = np.where((x["set"] == 3)[:, None], x["h"] / x["h"].shape[1], 0.0)
        assert np.any(np.all(x["x0"] == centre, axis=1)) and np.any(np.any(x["x0"] != centre, axis=1)), sid
