"""Independent per-device numpy implementations of PerMFL, pFL^MF and Per-FedAvg for
tests/test_audit_pfl.py, written from the papers' update rules without moreau's code: faithful by
default, each keyword a deliberate deviation (the ones the authors' code has, and others)."""

from __future__ import annotations

import numpy as np


def grad(c, w, rows=slice(None)):
    """The mean loss gradient of client ``c``'s samples ``rows`` at ``w``."""
    X, y = c.X[rows], c.y[rows]
    z = X @ w
    r = z - y if c.kind == "least_squares" else -y * np.exp(-np.logaddexp(0.0, y * z))
    return X.T @ r / X.shape[0] + c.mu * w


def permfl(*, lam_is_L=False, batch=None, l2=0.0, stale_sum=False):
    """PerMFL, device by device: ``lam_is_L`` the device penalty is the local step count (the
    authors' argument shift), ``batch`` sequential unshuffled mini-batches of that size (their
    ``get_next_train_batch``), ``l2`` a hidden L2 term on the devices."""
    cursor = {}

    def round_fn(x, devices, rng, *, lam, gamma, alpha, eta, beta, K, L):
        lam_dev = float(L) if lam_is_L else lam
        teams = sorted({c.team for c in devices})
        thetas = [None] * len(devices)
        w_bar = np.zeros_like(x)
        for i in teams:
            members = [c for c in devices if c.team == i]
            w = x.copy()
            for _ in range(K):
                acc = np.zeros_like(x)
                for c in members:
                    th = w.copy()
                    for _ in range(L):
                        rows = slice(None)
                        if batch is not None:
                            s = cursor.get(c.index, 0)
                            s = 0 if s >= c.n else s
                            rows = slice(s, min(s + batch, c.n))
                            cursor[c.index] = rows.stop
                        g = grad(c, th, rows) + l2 * th
                        th = th - alpha * (g + lam_dev * (th - w))
                    thetas[c.index] = th
                    acc = acc + th
                theta_bar = acc / len(members)
                w = (1 - eta * lam - eta * gamma) * w + eta * gamma * x + eta * lam * theta_bar
            w_bar = w_bar + w / len(teams)
        return (1 - beta * gamma) * x + beta * gamma * w_bar, np.array(thetas)

    return round_fn


def pflmf(*, fedper=False, frozen=False, by_samples=False, f32=False):
    """pFL^MF client by client on the audit's state ``concat(U.ravel(), V.ravel())``: the thesis's
    alternating method (τ steps on v_i at U_t, then one server step on U at the new v_i);
    ``fedper`` FedPer's rounds instead (the authors' code: simultaneous steps on a copy of U and on
    v_i, the copies averaged), ``frozen`` v_i never updated, ``by_samples`` server weights ∝ n_i,
    ``f32`` those weights normalised in float32 and not renormalised (FL-bench's server)."""

    def round_fn(w, clients, rng, *, rank, eta_u, eta_v, tau):
        d, m = clients[0].X.shape[1], len(clients)
        U, V = w[: d * rank].reshape(d, rank), w[d * rank :].reshape(m, rank).copy()
        p = np.array([c.n if by_samples else c.weight for c in clients], dtype=np.float32 if f32 else float)
        p = (p / p.sum()).astype(float)
        if fedper:
            copies = []
            for i, c in enumerate(clients):
                Ui, v = U.copy(), V[i].copy()
                for _ in range(tau):
                    g = grad(c, Ui @ v)
                    Ui, v_new = Ui - eta_u * np.outer(g, v), v - eta_v * Ui.T @ g
                    v = v if frozen else v_new
                copies.append(Ui)
                V[i] = v
            U = sum(p[i] * copies[i] for i in range(m))
        else:
            for i, c in enumerate(clients):
                for _ in range(tau):
                    if not frozen:
                        V[i] = V[i] - eta_v * U.T @ grad(c, U @ V[i])
            U = U - eta_u * sum(p[i] * np.outer(grad(c, U @ V[i]), V[i]) for i, c in enumerate(clients))
        return np.concatenate([U.ravel(), V.ravel()]), V @ U.T

    return round_fn


def hvp(c, w, v):
    """The client's Hessian-vector product at ``w`` (least squares or logistic with ridge)."""
    if c.kind == "least_squares":
        return c.X.T @ (c.X @ v) / c.n
    s = 1.0 / (1.0 + np.exp(-c.y * (c.X @ w)))
    return c.X.T @ (s * (1 - s) * (c.X @ v)) / c.n + c.mu * v


def per_fedavg(*, first_order=False, hf_delta=None, over_delta=False, alpha_is_beta=False, by_samples=False):
    """Per-FedAvg (Algorithm 1, exact gradients), client by client: ``first_order`` FO-MAML,
    ``hf_delta`` the Hessian-free variant with that δ (``over_delta``: the difference divided by δ,
    not 2δ), ``alpha_is_beta`` the inner step takes β's value, ``by_samples`` the server average
    weighted by n_i."""
    from moreau.audit import sample_clients

    def round_fn(w, clients, rng, *, alpha, beta, tau, S):
        m = len(clients)
        S = m if S is None else S
        picked = set(int(i) for i in (sample_clients(rng, m, S) if S < m else range(m)))
        a = beta if alpha_is_beta else alpha
        local, num, den = [], np.zeros_like(w), 0.0
        for i, c in enumerate(clients):
            x = w.copy()
            if i in picked:
                for _ in range(tau):
                    g = grad(c, x - a * grad(c, x))
                    if hf_delta is not None:
                        diff = grad(c, x + hf_delta * g) - grad(c, x - hf_delta * g)
                        g = g - a * diff / (hf_delta if over_delta else 2 * hf_delta)
                    elif not first_order:
                        g = g - a * hvp(c, x, g)
                    x = x - beta * g
                q = c.n if by_samples else 1.0
                num, den = num + q * x, den + q
            local.append(x)
        return num / den, np.array(local)

    return round_fn
