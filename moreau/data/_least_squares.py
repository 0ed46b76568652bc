r"""Fixed-design linear regression clients with exactly known constants, and their
sufficient-statistic sampler."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._least_squares import LeastSquares
from .._quadratic import Quadratic
from .._typing import Seed
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

__all__ = ["least_squares"]


def least_squares(
    rng: Seed,
    *,
    m: int,
    n: int,
    d: int,
    R: float,
    mu: float = 1.0,
    L: float | None = None,
    sigma: float = 1.0,
    trials: int | tuple[int, ...] = (),
    equal_norms: bool = True,
    p: Any = None,
    w_global: Any = None,
    max_bytes: float = MAX_BYTES,
) -> FederatedProblem:
    r"""Linear-regression clients with controlled heterogeneity, a fixed design and exact constants.

    Model (client ``i``, samples ``j``): :math:`y_{ij} = x_{ij}^\top w_\star^{(i)} + \varepsilon_{ij}`,
    :math:`\varepsilon_{ij} \sim N(0, \sigma^2)` i.i.d., loss
    :math:`\ell(w, z) = \tfrac12 (y - x^\top w)^2`.

    - Heterogeneity: :math:`w_\star^{(i)} = w_\star^{(g)} + R\,u_i` with
      :math:`\sum_i p_i u_i = 0` and :math:`\|u_i\| = 1`: the sides
      :math:`p_i u_i` of a closed polygon inscribed in a circle (its radius a
      scalar root), in random order, at a random angle, in a random 2-plane;
      it exists iff :math:`\max_i p_i \le 1/2` (uniform ``p``: the regular
      m-gon).  ``d = 1`` needs :math:`u_i = \pm 1`, i.e. uniform ``p`` and even
      ``m``.  Where equal norms are impossible a ``ValueError`` says so and
      suggests ``equal_norms=False``: two random groups on opposite sides of a
      random unit vector, :math:`\|u_i\| \le 1` with maximum 1.  So
      :math:`\sum_i p_i w_\star^{(i)} = w_\star^{(g)}` and
      :math:`\|w_\star^{(i)} - w_\star^{(g)}\| = R` (Assumption 1 with equality).
      ``w_global`` :math:`w_\star^{(g)}` ``(d,)`` or ``(*T, d)``; default
      :math:`N(0, I_d)` per trial.
    - Fixed design: :math:`X_i = \sqrt{n}\, Q_i A_i^{1/2}`, :math:`Q_i`
      ``(n, d)`` Haar-random with orthonormal columns, so
      :math:`X_i^\top X_i / n = A_i` exactly (to rounding; needs ``n >= d``).
      :math:`A_i = V_i \mathrm{diag}(a) V_i^\top`, :math:`V_i` Haar-random
      orthogonal, eigenvalues ``a`` equally spaced from ``mu`` to ``L``
      (``L=None``: ``L = mu``, :math:`A_i = \mu I`; ``d = 1`` needs
      ``L = mu``).  Both ends are attained, so every client's sample average
      is exactly :math:`\mu`-strongly convex and :math:`L`-smooth for every
      draw of the noise (Assumption 2 holds for every data set).
    - Population: z uniform over the design rows of client i with fresh noise.
      Its risk is :math:`\tfrac12 (w - w_\star^{(i)})^\top A_i (w - w_\star^{(i)}) + \sigma^2/2`,
      so :math:`w_\star^{(i)}` is the population minimiser.
    - :math:`\rho_i^2 = E\|\nabla\ell(w_\star^{(i)}, z)\|^2 = E[\varepsilon^2\|x\|^2]
      = \sigma^2 \mathrm{tr}(A_i) = \sigma^2 d (\mu + L)/2`, the expectation
      over that population (row uniform, noise fresh).  It is the quantity
      Assumption 3 bounds and the one Theorem 1's bound needs: the
      per-sample gradients at the truth, :math:`-x_{ij}\varepsilon_{ij}`, are
      independent with mean zero and average second moment :math:`\rho_i^2`,
      so the empirical gradient has :math:`E\|\nabla L_i(w_\star^{(i)}, S_i)\|^2
      = \rho_i^2/n` exactly.  Equal for all clients: ``rho2`` is exact for
      Assumption 3.

    Parameters: ``rng`` (Generator, SeedSequence or int; trial seeds as in
    :func:`trial_rngs`), ``m >= 2`` clients, ``n >= d`` samples each,
    ``d >= 1``, ``R >= 0``, ``mu > 0``, ``L >= mu``, ``sigma > 0``, ``trials``
    (``()``, an int or a tuple: leading axes ``T``), ``p`` (``(m,)``, default
    uniform).  Draw order per trial: w_global (if drawn), offsets, V, Q, noise.  Memory: about
    ``8 (4 n d + 4 d^2 + 3 n)`` bytes per client and trial at the peak (the Gaussian draws, their
    QR factors, ``X``); a call whose estimate exceeds ``max_bytes`` (default ``MAX_BYTES`` = 8 GiB)
    is a ``ValueError`` with the estimate, before anything is allocated.

    Returns a :class:`FederatedProblem` with objective
    ``LeastSquares(X, Y)`` (batch ``(*T, m)``), constants ``R``, ``mu``,
    ``L``, ``sigma``, ``rho2`` (floats), ``n``, ``m``, ``d`` (ints), and
    :meth:`~FederatedProblem.resample`: fresh data sets through the sufficient
    statistics :math:`b_i = X_i^\top Y_i/n = A_i w_\star^{(i)} + \sigma A_i^{1/2} g_i/\sqrt n`,
    :math:`g_i = Q_i^\top\varepsilon_i/\sigma \sim N(0, I_d)`, and
    :math:`c_i = \|Y_i\|^2/2n = (\|\sqrt n A_i^{1/2} w_\star^{(i)} + \sigma g_i\|^2 + \sigma^2\chi^2_{n-d})/2n`
    (the part of the noise outside the column space of :math:`X_i`), both exact
    in distribution; no sample is materialised.

    References: the FedProx analysis, Section 4 (Assumptions 1-3, Theorem 1).
    """
    m, n, d = check_int(m, "m", 2), check_int(n, "n", 1), check_int(d, "d", 1)
    if n < d:
        raise ValueError(f"n must be >= d for a fixed design with X^T X / n = A (got n={n}, d={d})")
    R = check_real(R, "R", lo=0.0)
    mu = check_real(mu, "mu", lo=0.0, strict=True)
    L = mu if L is None else check_real(L, "L", lo=mu)
    if d == 1 and L != mu:
        raise ValueError(f"d = 1 has a single eigenvalue: L must equal mu (got L={L:g}, mu={mu:g})")
    sigma = check_real(sigma, "sigma", lo=0.0, strict=True)
    p = client_weights(p, m)
    T = _shape(trials, "trials")
    check_memory(
        max_bytes,
        8 * math.prod(T) * m * (4 * n * d + 4 * d * d + 3 * n),
        f"least_squares(m={m}, n={n}, d={d}, trials={T})",
        "8 (4 n d + 4 d^2 + 3 n) bytes per client and trial",
        "m, n, d or trials",
    )
    st = Streams(rng, trials)
    T = st.trials
    wg = _global(st, w_global, d, T)
    u = unit_offsets(st, p, d, equal_norms)  # (*T, m, d)
    w_star = wg[..., None, :] + R * u
    a = mu + (L - mu) * (np.arange(d) / (d - 1) if d > 1 else np.zeros(1))  # (d,) ascending
    V = _haar(st.normal((m, d, d)))  # (*T, m, d, d)
    Q = _haar(st.normal((m, n, d)))  # (*T, m, n, d)
    root = (V * np.sqrt(a)) @ np.swapaxes(V, -1, -2)  # A^{1/2}
    X = math.sqrt(n) * Q @ root
    eps = sigma * st.normal((m, n))
    Y = (X @ w_star[..., None])[..., 0] + eps
    obj = LeastSquares(X, Y)
    design = _Design(a, V, root, w_star, sigma, n)
    constants = {
        "R": R,
        "mu": mu,
        "L": L,
        "sigma": sigma,
        "rho2": sigma**2 * float(np.sum(a)),
        "n": n,
        "m": m,
        "d": d,
    }
    how = {
        "R": "exact: w_star[i] = w_star_global + R u_i with |u_i| = 1 (or <= 1, max 1, equal_norms=False)",
        "mu": "exact: smallest eigenvalue of every X_i^T X_i / n (prescribed, attained)",
        "L": "exact: largest eigenvalue of every X_i^T X_i / n (prescribed, attained)",
        "sigma": "noise standard deviation (prescribed)",
        "rho2": "exact: sigma^2 tr(A_i) = sigma^2 d (mu + L)/2, the same for every client",
        "w_star": "population minimiser: A_i^{-1} E[x y] over rows uniform with fresh noise",
        "w_star_global": "sum_i p_i w_star[i] (= the drawn or given w_global)",
    }
    params = {
        "generator": "least_squares",
        "rng": seed_record(rng),
        "m": m,
        "n": n,
        "d": d,
        "R": R,
        "mu": mu,
        "L": L,
        "sigma": sigma,
        "trials": T,
        "equal_norms": bool(equal_norms),
        "p": p.tolist(),
        "w_global": None if w_global is None else np.asarray(w_global).tolist(),
    }
    return FederatedProblem(
        obj, w_star, np.einsum("m,...md->...d", p, w_star), p, constants, how, params, None, design.sample
    )


class _Design:
    """What the sufficient-statistic sampler needs of a fixed-design problem."""

    def __init__(
        self, a: np.ndarray, V: np.ndarray, root: np.ndarray, w_star: np.ndarray, sigma: float, n: int
    ) -> None:
        self.a, self.V, self.sigma, self.n = a, V, sigma, n
        self.root = root
        self.A = (V * a) @ np.swapaxes(V, -1, -2)
        self.Aw = (self.A @ w_star[..., None])[..., 0]
        self.mean_y = math.sqrt(n) * (root @ w_star[..., None])[..., 0]  # sqrt(n) A^{1/2} w_star

    def sample(
        self, rng: Seed, size: tuple[int, ...], raw: bool
    ) -> Quadratic | tuple[np.ndarray, np.ndarray, np.ndarray]:
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        n, s, d = self.n, self.sigma, self.a.shape[0]
        shape = tuple(size) + self.Aw.shape[:-1]
        g = gen.standard_normal(shape + (d,))
        b = self.Aw + (s / math.sqrt(n)) * (self.root @ g[..., None])[..., 0]
        chi2 = gen.chisquare(n - d, size=shape) if n > d else np.zeros(shape)
        c = (np.sum((self.mean_y + s * g) ** 2, axis=-1) + s**2 * chi2) / (2 * n)
        if raw:
            return np.broadcast_to(self.A, shape + (d, d)), b, c
        return Quadratic.from_spectrum(np.broadcast_to(self.a, self.V.shape[:-1]), self.V, b, c)


def _global(st: Streams, w_global: Any, d: int, T: tuple[int, ...]) -> np.ndarray:
    if w_global is None:
        return st.normal((d,))
    w = np.asarray(w_global)
    if w.dtype.kind not in "biuf":
        raise TypeError(f"w_global must be a real array (got dtype {w.dtype})")
    w = w.astype(float)
    if w.shape not in ((d,), T + (d,)) or not np.all(np.isfinite(w)):
        raise ValueError(
            f"w_global must be finite with shape (d,) = ({d},) or (*trials, d) = {T + (d,)} "
            f"(got shape {w.shape})"
        )
    return np.broadcast_to(w, T + (d,))


def _haar(G: np.ndarray) -> np.ndarray:
    """Orthonormal columns, Haar-distributed: QR of a Gaussian with the signs of diag(R) fixed."""
    Q, Rf = np.linalg.qr(G)
    return Q * np.sign(np.diagonal(Rf, axis1=-2, axis2=-1))[..., None, :]
