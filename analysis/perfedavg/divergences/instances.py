r"""Instance generators of perfedavg.tv and perfedavg.w1 (see analysis/perfedavg/tv_w1.py).

Every batch: n = 4 clients over K = 6 shared atoms, weights ``P (T, n, K)``
(dyadic, :func:`dyadic_weights`), atom distances ``D (T, K, K)``, and the loss:
``A, g, h, u`` (closed forms in w, :func:`closed_form_sups`) or ``X, y``
(logistic).  Client layouts, cycled over the instances: ``two groups``
(clients 1, 2 hold q1 and 3, 4 hold q2: every p_i − p = ±(q1 − q2)/2, the
case where the triangle inequalities of the proofs are equalities for aligned
losses), ``random`` (own Dirichlet weights), ``identical`` (TV = W₁ = 0),
``disjoint`` (disjoint supports: the largest distances), ``sparse``.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.perfedavg.divergences.finite_support import dyadic_weights

__all__ = [
    "LAYOUTS",
    "client_weights",
    "tv_closed_form_batch",
    "w1_closed_form_batch",
    "logistic_atoms_batch",
    "logistic_points",
]

N, K = 4, 6
LAYOUTS = ("two groups", "random", "identical", "disjoint", "sparse")


def client_weights(rng, layout):
    """``(N, K)`` dyadic client weights of one instance in the given layout."""
    if layout == "two groups":
        q = dyadic_weights(rng, rng.dirichlet(np.ones(K), 2))
        return q[[0, 0, 1, 1]]
    if layout == "random":
        return dyadic_weights(rng, rng.dirichlet(np.full(K, 0.7), N))
    if layout == "identical":
        return np.repeat(dyadic_weights(rng, rng.dirichlet(np.ones(K), 1)), N, axis=0)
    if layout == "disjoint":
        blocks = np.array_split(rng.permutation(K), N)
        probs = np.zeros((N, K))
        for i, b in enumerate(blocks):
            probs[i, b] = rng.dirichlet(np.ones(b.size))
        return dyadic_weights(rng, probs)
    if layout == "sparse":
        probs = rng.dirichlet(np.ones(K), N) * (rng.random((N, K)) < 0.5)
        probs[np.arange(N), rng.integers(0, K, N)] += 0.1
        return dyadic_weights(rng, probs)
    raise ValueError(f"layout must be one of {LAYOUTS} (got {layout!r})")


def _sym(rng, d, scale):
    M = rng.standard_normal((d, d)) * scale
    return (M + M.T) / 2


def _log_uniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _unit(rng, d):
    v = rng.standard_normal(d)
    return v / np.linalg.norm(v)


def tv_closed_form_batch(rng, T, d=3):
    """perfedavg.tv, closed forms: kinds linear / quadratic in w / trigonometric cycled, layouts cycled
    (T >= 18 covers every kind in every layout and both regimes of the aligned instances).

    Two-groups instances are aligned: g_k = B σ_k e, A_k = L σ_k S (‖S‖₂ = 1, indefinite), h_k = R σ_k e^{iφ}
    with σ_k = sign(q1_k − q2_k) (then (14a) holds with equality).  Atoms on a line at 0 <= z < 0.9 on
    aligned instances (W₁ < TV there) and in [0, 3] otherwise."""
    P = np.zeros((T, N, K))
    A, g = np.zeros((T, K, d, d)), np.zeros((T, K, d))
    h, u, z = np.zeros((T, K, 2)), np.zeros((T, d)), np.zeros((T, K))
    for t in range(T):
        kind, layout = t % 3, LAYOUTS[(t // 3) % len(LAYOUTS)]
        P[t] = client_weights(rng, layout)
        aligned = layout == "two groups"
        sig = np.sign(P[t, 0] - P[t, 2])
        big = not aligned or (t // 15) % 2 == 0  # aligned: B, L, omega > 1 and < 1 alternately
        scale = _log_uniform(rng, 1.2 if aligned else 0.2, 5.0) if big else _log_uniform(rng, 0.2, 0.9)
        omega = _log_uniform(rng, 1.5 if aligned else 0.3, 3.0) if big else _log_uniform(rng, 0.3, 0.9)
        z[t] = np.sort(rng.uniform(0, 0.9 if aligned else 3.0, K))
        if kind == 0:  # linear: l = g_k^T w
            g[t] = scale * (sig[:, None] * _unit(rng, d) if aligned else rng.standard_normal((K, d)))
        elif kind == 1:  # quadratic in w (B = inf)
            if aligned:
                Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
                s = np.concatenate([[1.0], rng.uniform(-1, 1, d - 1)]) * rng.choice([-1, 1], d)
                A[t] = scale * sig[:, None, None] * (Q * s) @ Q.T
            else:
                A[t] = np.stack([_sym(rng, d, scale) for _ in range(K)])
            g[t] = rng.standard_normal((K, d))
        else:  # trigonometric, omega = ||u||
            phi = rng.uniform(0, 2 * np.pi)
            h[t] = scale * (
                sig[:, None] * [np.cos(phi), np.sin(phi)] if aligned else rng.standard_normal((K, 2))
            )
            u[t] = _unit(rng, d) * omega
    D = np.abs(z[:, :, None] - z[:, None, :])
    return {"P": P, "A": A, "g": g, "h": h, "u": u, "D": D}


def w1_closed_form_batch(rng, T, d=3):
    """perfedavg.w1, closed forms: shared-A quadratics (g_k = G z_k + c‖z_k − a‖) and trigonometric losses
    (h_k = M z_k + c‖z_k − a‖), atoms z_k ∈ ℝ², layouts cycled (T >= 12: both regimes).  Two-groups instances
    put q1's atoms on a line and q2 = q1 shifted along it by s ∈ (0.2, 3), with c = 0 (then p_1 dominates p
    stochastically, W₁(p_i, p) = s/2 = |E_{p_i} z − E_p z| along the line, and (16) holds with equality)."""
    P = np.zeros((T, N, K))
    A, g = np.zeros((T, K, d, d)), np.zeros((T, K, d))
    h, u, Z = np.zeros((T, K, 2)), np.zeros((T, d)), np.zeros((T, K, 2))
    for t in range(T):
        kind, layout = t % 2, LAYOUTS[(t // 2) % len(LAYOUTS)]
        aligned = layout == "two groups"
        if aligned:
            q = dyadic_weights(rng, rng.dirichlet(np.ones(K // 2), 1))[0]
            P[t] = np.concatenate([np.outer([1, 1, 0, 0], q), np.outer([0, 0, 1, 1], q)], axis=1)
            big = (t // 10) % 2 == 0  # alternately W1 > 1, L_Z, rho_Z/L_Z > 1 and W1, L_Z, omega < 1
            s = _log_uniform(rng, 2.5, 6.0) if big else _log_uniform(rng, 0.2, 0.9)
            base = rng.uniform(0, 1, K // 2)
            e = _unit(rng, 2)
            Z[t] = np.concatenate([base, base + s])[:, None] * e + rng.standard_normal(2)
        else:
            P[t] = client_weights(rng, layout)
            Z[t] = rng.standard_normal((K, 2)) * rng.uniform(0.3, 2.0)
        big = not aligned or (t // 10) % 2 == 0
        scale = _log_uniform(rng, 1.0, 3.0) if big else _log_uniform(rng, 0.05, 0.3)
        omega = _log_uniform(rng, 1.5 if aligned else 0.3, 3.0) if big else _log_uniform(rng, 0.3, 0.9)
        c = 0.0 if aligned else rng.uniform(0, 1)
        a = rng.standard_normal(2)
        dist = np.linalg.norm(Z[t] - a, axis=-1)[:, None]
        if kind == 0:
            A[t] = _sym(rng, d, 1.0)  # shared Hessian, any sign
            g[t] = scale * (Z[t] @ rng.standard_normal((2, d)) + c * dist * rng.standard_normal(d))
        else:
            h[t] = scale * (Z[t] @ rng.standard_normal((2, 2)) + c * dist * rng.standard_normal(2))
            u[t] = _unit(rng, d) * omega
    D = np.linalg.norm(Z[:, :, None] - Z[:, None, :], axis=-1)
    # the O(1/sqrt m) remark after (16): one sweep in each data dimension 1, 3, 4 (0: no sweep)
    rate_dim = np.zeros(T, dtype=int)
    rate_dim[:3] = [1, 3, 4][:T]
    return {
        "P": P,
        "A": A,
        "g": g,
        "h": h,
        "u": u,
        "D": D,
        "rate_dim": rate_dim,
        "rate_seed": rng.integers(0, 2**31, T),
    }


def logistic_atoms_batch(rng, T, d=2):
    """Logistic atoms z_k = (x_k, y_k), y_k = ±1, layouts but ``identical`` cycled (0 <= 0 would read as
    attained); D_kl = ‖x_k − x_l‖ + |y_k − y_l|."""
    layouts = [lay for lay in LAYOUTS if lay != "identical"]  # TV = W1 = 0: covered by the closed forms
    P = np.stack([client_weights(rng, layouts[t % len(layouts)]) for t in range(T)])
    X = rng.standard_normal((T, K, d)) * rng.uniform(0.3, 3.0, (T, 1, 1))
    y = rng.choice([-1.0, 1.0], (T, K))
    D = np.linalg.norm(X[:, :, None] - X[:, None, :], axis=-1) + np.abs(y[:, :, None] - y[:, None, :])
    return {"P": P, "X": X, "y": y, "D": D, "W": logistic_points(rng, T, d)}


def logistic_points(rng, T, d=2):
    """``(T, 41, d)`` points w where the logistic diversities are evaluated: 0, normals at scales 0.5 to 10,
    and far points (scale 100: the limits of the sigmoids, where sup_w ‖∇l‖ = ‖x‖ is approached)."""
    scales = np.repeat([0.5, 1.0, 3.0, 10.0, 100.0], 8)
    W = rng.standard_normal((T, scales.size, d)) * scales[:, None]
    return np.concatenate([np.zeros((T, 1, d)), W], axis=1)
