"""Independent per-client-loop numpy implementations of FedAvg, FedProx and pFedMe for
tests/test_audit.py: faithful by default, each keyword a deliberate deviation (the way research
code gets them wrong), written from the papers' pseudocode without moreau's code."""

from __future__ import annotations

import numpy as np

from moreau.audit import sample_clients


def grad(c, w, l2=0.0, total=False):
    """The client's loss gradient from its samples (mean; ``total``: summed), plus ``l2 w``."""
    z = c.X @ w
    if c.kind == "least_squares":
        r = z - c.y
    else:
        r = -c.y * np.exp(-np.logaddexp(0.0, c.y * z))
    g = c.X.T @ r / c.n + c.mu * w
    return (c.n * g if total else g) + l2 * w


def _server_weights(clients, by_samples=False, uniform=False):
    if uniform:
        return [1.0 for _ in clients]
    return [c.n if by_samples else c.weight for c in clients]


def fedavg(*, l2=0.0, total=False, eta_times_s=False, by_samples=False, uniform=False, beta=0.0):
    def round_fn(w, clients, rng, *, eta, tau, S):
        m = len(clients)
        S = m if S is None else S
        picked = sample_clients(rng, m, S) if S < m else range(m)
        step = eta * S if eta_times_s else eta
        p = _server_weights(clients, by_samples, uniform)
        num, den, local = np.zeros_like(w), 0.0, []
        for i, c in enumerate(clients):
            v, x = np.zeros_like(w), w.copy()
            if i in picked:
                for _ in range(tau):
                    v = beta * v + grad(c, x, l2, total)
                    x = x - step * v
                num, den = num + p[i] * x, den + p[i]
            local.append(x)
        return num / den, np.array(local)

    return round_fn


def fedprox(
    *,
    l2=0.0,
    total=False,
    eta_times_s=False,
    by_samples=False,
    uniform=False,
    beta=0.0,
    reset=False,
    sign=1.0,
    dtype=np.float64,
    lam_is_K=False,
):
    state = {}

    def client_update(w, c, rng, *, lam, gamma, eta, K):
        lam = K if lam_is_K else lam  # an argument shift: the penalty gets the local step count
        x = w.copy() if reset or c.index not in state else state[c.index]
        x, wg, v = x.astype(dtype), w.astype(dtype), np.zeros(w.shape, dtype)
        step = eta * len(state or [0]) if False else eta
        step = eta * 5 if eta_times_s else step  # S = m = 5 clients in the tests
        for _ in range(K):
            g = grad(c, x, l2, total).astype(dtype) + dtype(sign * lam) * (x - wg)
            v = dtype(beta) * v + g
            x = x - dtype(step) * v
        state[c.index] = x
        return x

    def aggregate(w, local, clients, rng, *, lam, gamma, eta, K):
        lam = K if lam_is_K else lam
        p = np.array(_server_weights(clients, by_samples, uniform), dtype=float)
        p = p / p.sum()
        g = sum(p[i] * lam * (w - local[i]) for i in range(len(clients)))
        return (w - gamma * g).astype(dtype)

    return client_update, aggregate


def pfedme(*, l2=0.0, warm=False, warm_round=False, aliased=False, by_samples=False, total=False, beta_m=0.0):
    personal = {}

    def round_fn(w, clients, rng, *, lam, eta, beta, R, inner, inner_eta, S):
        m = len(clients)
        S = m if S is None else S
        local = []
        for c in clients:
            x = w.copy()
            if warm_round:  # the personalised model starts the round at the server model
                personal[c.index] = w.copy()
            for _ in range(R):
                th = personal.get(c.index, w.copy()) if warm or warm_round else x.copy()
                v = np.zeros_like(th)
                for _ in range(inner):
                    g = grad(c, th, l2, total) + (0.0 if aliased else lam * (th - x))
                    v = beta_m * v + g
                    th = th - inner_eta * v
                personal[c.index] = th
                x = th.copy() if aliased else x - eta * lam * (x - th)
            local.append(x)
        picked = sample_clients(rng, m, S) if S < m else range(m)
        q = np.array([clients[i].n if by_samples else 1.0 for i in picked])
        avg = sum(q[j] * local[i] for j, i in enumerate(picked)) / q.sum()
        return (1 - beta) * w + beta * avg, np.array(local)

    return round_fn


def fedfw(*, reset=False, eta_plus=1.0, over_sampled=False, l2=0.0):
    """FedFW (thesis (4.5)-(4.6)) over the L2 ball of radius ``radius`` at 0, client by client:
    ``reset`` every client restarts from the server model (the authors' code), ``eta_plus`` the
    step 2/(t + eta_plus), ``over_sampled`` the gradient divided by S instead of n."""
    state = {"t": 0, "x": None}

    def round_fn(w, clients, rng, *, lam0, K, S, radius):
        m = len(clients)
        S = m if S is None else S
        state["t"] += 1
        t = state["t"]
        lam, eta = lam0 * np.sqrt(t + 1.0), 2.0 / (t + eta_plus)
        picked = set(int(i) for i in (sample_clients(rng, m, S) if S < m else range(m)))
        if state["x"] is None or reset:
            state["x"] = [w.copy() for _ in clients]
        xs = state["x"]
        for i, c in enumerate(clients):
            if i not in picked:
                continue
            for _ in range(K):
                v = grad(c, xs[i], l2) / (S if over_sampled else m) + lam * (xs[i] - w)
                s = -radius * v / np.linalg.norm(v)
                xs[i] = (1 - eta) * xs[i] + eta * s
        if reset:
            new = sum(xs[i] for i in picked) / S
        else:
            new = sum(xs) / m
        return new, np.array(xs)

    return round_fn
