r"""Frank–Wolfe on boxes: a seeded search for quadratic box instances with a large ratio at one iterate t.

The PEP says how far any function (or any quadratic, on any convex set) can push
(F(x^t) − F*)/(2LR²/(t+2)); PEP cannot restrict the set to a box (a box is not rotation
invariant, a PEP is).  This search stays inside the checker's own family — convex quadratics
½xᵀAx − bᵀx on boxes [−h, h], R = 2‖h‖, x^0 in the box — and scores every candidate with the
checker itself (``fw.convex``'s ``evaluate``, its certified F* bracket), restricted to iterate t:
an evolution strategy (keep the best ``keep``, perturb each ``children`` times, shrink the step).
It finds lower bounds (instances), never upper bounds.

Parameters of one candidate (d the dimension): A = MMᵀ scaled to λ_max(A) = L = 1, h = |u| scaled
to R = 1, b = Az (z free: the unconstrained minimiser), x^0 = h ⊙ tanh(v).
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant

__all__ = ["box_batch", "search_boxes"]


def box_batch(P, d):
    """The checker's batch ``{A, b, L, h, x0}`` for parameter rows ``P`` of shape ``(n, d² + 3d)``."""
    P = np.asarray(P, float)
    n = P.shape[0]
    M = P[:, : d * d].reshape(n, d, d)
    A = M @ np.swapaxes(M, 1, 2)
    A = A / np.linalg.eigvalsh(A)[:, -1, None, None]
    A = (A + np.swapaxes(A, 1, 2)) / 2
    h = np.abs(P[:, d * d : d * d + d]) + 1e-3
    h = h / (2 * np.linalg.norm(h, axis=1, keepdims=True))
    z = P[:, d * d + d : d * d + 2 * d]
    x0 = h * np.tanh(P[:, d * d + 2 * d :])
    return {"A": A, "b": np.einsum("tij,tj->ti", A, z), "L": np.ones(n), "h": h, "x0": x0}


def _ratios(st, P, d, t0):
    bound = lambda L, R, t: np.where(t == t0, 2 * L * R**2 / (t + 2), np.inf)  # noqa: E731
    res = st.run(
        "quadratic", None, None, mutant=Mutant(f"iterate {t0} only", {"bound": bound}), batch=box_batch(P, d)
    )
    return np.nan_to_num(res.parts[0].ratio, nan=-np.inf)


def search_boxes(st, t0, rng, d=3, population=600, keep=60, rounds=25, step=0.3):
    """Best ``(ratio, batch)`` found for iterate ``t0`` (the batch holds that one instance)."""
    if isinstance(t0, bool) or not isinstance(t0, (int, np.integer)) or t0 < 1:
        raise ValueError(f"t0 must be an int >= 1 (got {t0!r})")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    k = d * d + 3 * d
    P = 2 * rng.standard_normal((population, k))
    r = _ratios(st, P, d, t0)
    children = max(population // keep, 1)
    for it in range(rounds):
        best = np.argsort(r)[-keep:]
        kids = np.repeat(P[best], children, axis=0)
        kids += step * 0.9**it * rng.standard_normal(kids.shape)
        P, r = np.concatenate([P[best], kids]), np.concatenate([r[best], _ratios(st, kids, d, t0)])
    i = int(np.argmax(r))
    return float(r[i]), box_batch(P[i : i + 1], d)
