r"""Well-specified logistic clients whose ground truth is the population minimiser."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._backend import to_numpy
from .._logistic import Logistic
from .._typing import Seed
from . import _quadrature as quad
from ._least_squares import _global
from ._offsets import unit_offsets
from ._problem import (
    MAX_BYTES,
    FederatedProblem,
    Streams,
    _shape,
    check_int,
    check_memory,
    check_real,
    client_weights,
    seed_record,
)

__all__ = ["logistic"]


def logistic(
    rng: Seed,
    *,
    m: int,
    n: int,
    d: int,
    R: float,
    mu: float,
    trials: int | tuple[int, ...] = (),
    equal_norms: bool = True,
    p: Any = None,
    w_global: Any = None,
    global_norm: float = 0.5,
    max_bytes: float = MAX_BYTES,
) -> FederatedProblem:
    r"""Well-specified logistic clients with a ridge; the truth is the population minimiser.

    Client ``i``: :math:`x \sim N(0, I_d)`, :math:`y \in \{\pm1\}` with
    :math:`P(y = 1 \mid x) = \sigma(x^\top\beta_i)`, loss
    :math:`\ell(w, z) = \log(1 + e^{-y x^\top w}) + \tfrac{\mu}{2}\|w\|^2`
    (``mu`` is :math:`\mu`; the ridge makes every sample average exactly
    :math:`\mu`-strongly convex: Assumption 2 for every data set).

    Ground truth first: :math:`w_\star^{(i)} = w_\star^{(g)} + R u_i` with
    :math:`\sum_i p_i u_i = 0`, :math:`\|u_i\| = 1` (as in
    :func:`least_squares`; ``w_global`` default: uniform on the sphere of
    radius ``global_norm``).  Then :math:`\beta_i = t_i\,\hat w_\star^{(i)}`,
    with :math:`t_i` chosen so that :math:`w_\star^{(i)}` is the population
    minimiser of the regularised loss: by rotational symmetry the minimiser is
    :math:`r\hat\beta`, and with :math:`s = x^\top\hat\beta \sim N(0, 1)` its
    stationarity condition is :math:`E[y s\,\sigma(-y r s)] = \mu r`, i.e.
    :math:`g(t) = g(r) + \mu r`, :math:`g(t) = E[s\,\sigma(ts)]` increasing
    from 0 to :math:`1/\sqrt{2\pi}` (solved per client, vectorised).  So a
    truth with :math:`g(\|w_\star^{(i)}\|) + \mu\|w_\star^{(i)}\| \ge 1/\sqrt{2\pi}`
    is unreachable: a ``ValueError`` says which client and what to lower.
    With ``mu = 0``, :math:`\beta_i = w_\star^{(i)}`.

    Constants: ``mu`` (the exact global strong-convexity modulus of every
    sample average: an infimum, approached as the margins grow), ``L``
    ``(*T, m)`` = :math:`\lambda_{\max}(X_i^\top X_i)/(4n) + \mu` per data set
    (the exact sup of the empirical Hessian, attained at 0), ``L_population``
    = :math:`1/4 + \mu` (the population Hessian's sup), ``rho2`` ``(*T,)``
    the max over clients of
    :math:`\rho_i^2 = E\|\nabla\ell(w_\star^{(i)}, z)\|^2
    = E[\sigma(-y r s)^2 (s^2 + d - 1)] - 2\mu r E[y s\,\sigma(-y r s)] + \mu^2 r^2`
    (:math:`\|x_\perp\|^2` has mean :math:`d - 1`, independent of ``(s, y)``;
    1-D quadrature, see ``moreau.data._quadrature``), ``rho2_clients``
    ``(*T, m)``, ``R``, ``beta`` ``(*T, m, d)``.

    Parameters: ``rng`` (Generator, SeedSequence or int), ``m >= 2``,
    ``n >= 1``, ``d >= 1``, ``R >= 0``, ``mu >= 0``, ``trials``, ``p``,
    ``equal_norms`` as in :func:`least_squares`.  Draw order per trial:
    w_global (if drawn), offsets, x, label uniforms.  Memory: about ``8 (3 n d + 6 n)``
    bytes per client and trial at the peak (the draws of ``x``, the objective's copy, the
    per-sample arrays); above ``max_bytes`` (default ``MAX_BYTES`` = 8 GiB) a ``ValueError``
    with the estimate, before anything is allocated.

    References: the FedProx analysis, Section 4 (Assumptions 1-3) and
    Section 6.1 (logistic regression experiments).
    """
    m, n, d = check_int(m, "m", 2), check_int(n, "n", 1), check_int(d, "d", 1)
    R = check_real(R, "R", lo=0.0)
    mu = check_real(mu, "mu", lo=0.0)
    global_norm = check_real(global_norm, "global_norm", lo=0.0)
    p = client_weights(p, m)
    T = _shape(trials, "trials")
    check_memory(
        max_bytes,
        8 * math.prod(T) * m * (3 * n * d + 6 * n),
        f"logistic(m={m}, n={n}, d={d}, trials={T})",
        "8 (3 n d + 6 n) bytes per client and trial",
        "m, n, d or trials",
    )
    st = Streams(rng, trials)
    T = st.trials
    if w_global is None:
        v = st.normal((d,))
        wg = global_norm * v / np.linalg.norm(v, axis=-1, keepdims=True)
    else:
        wg = _global(st, w_global, d, T)
    w_star = wg[..., None, :] + R * unit_offsets(st, p, d, equal_norms)  # (*T, m, d)
    r = np.linalg.norm(w_star, axis=-1)
    target = quad.g(r) + mu * r
    t, ok = quad.solve_t(target)
    if not np.all(ok):
        idx = tuple(int(k) for k in np.argwhere(~ok)[0])
        raise ValueError(
            f"no label noise makes w_star[{', '.join(map(str, idx))}] (norm {r[idx]:.6g}) the population "
            f"minimiser with mu={mu:g}: it needs g(r) + mu r < 1/sqrt(2 pi) = {quad.G_MAX:.6f} "
            f"(got {target[idx]:.6f}); "
            "lower mu, R or global_norm"
        )
    unit = np.where(r[..., None] > 0, w_star / np.where(r > 0, r, 1.0)[..., None], 0.0)
    beta = t[..., None] * unit
    X = st.normal((m, n, d))
    z = (X @ beta[..., None])[..., 0]
    y = np.where(st.uniform((m, n)) < quad._sig(z), 1.0, -1.0)
    obj = Logistic(X, y, mu=mu)
    moment = quad.g(t) - quad.g(r)  # E[y s sigma(-y r s)]
    rho2 = quad.score_moment(r, t, d - 1) - 2 * mu * r * moment + mu**2 * r**2
    constants = {
        "R": R,
        "mu": mu,
        "L": to_numpy(obj.curvature_bounds()[1]),
        "L_population": 0.25 + mu,
        "rho2": rho2.max(axis=-1),
        "rho2_clients": rho2,
        "beta": beta,
        "n": n,
        "m": m,
        "d": d,
    }
    how = {
        "R": "exact: w_star[i] = w_star_global + R u_i with |u_i| = 1 (or <= 1, max 1, equal_norms=False)",
        "mu": "exact: ridge; every sample average is mu-strongly convex (infimum of the Hessian)",
        "L": "exact per data set: lambda_max(X_i^T X_i)/(4 n) + mu (sup of the empirical Hessian, at 0)",
        "L_population": "1/4 + mu: sup of the population Hessian (E[x x^T] = I)",
        "rho2": "max_i rho2_clients",
        "rho2_clients": "E||grad l(w_star[i], z)||^2 by 1-D composite Gauss-Legendre quadrature",
        "beta": "label model: beta_i = t_i w_star[i]/|w_star[i]|, t_i solving g(t) = g(r) + mu r",
        "w_star": "population minimiser of the ridge-regularised logistic risk (stationarity solved to rounding)",
        "w_star_global": "sum_i p_i w_star[i]",
    }
    params = {
        "generator": "logistic",
        "rng": seed_record(rng),
        "m": m,
        "n": n,
        "d": d,
        "R": R,
        "mu": mu,
        "trials": T,
        "equal_norms": bool(equal_norms),
        "p": p.tolist(),
        "global_norm": global_norm,
        "w_global": None if w_global is None else np.asarray(w_global).tolist(),
    }
    return FederatedProblem(obj, w_star, np.einsum("m,...md->...d", p, w_star), p, constants, how, params)
