"""Solvers shared by the checkers (thin wrappers over ``moreau.fl``)."""

from __future__ import annotations

import numpy as np

from moreau.fl._newton import NEWTON_RTOL
from moreau.fl._newton import envelope_newton as _envelope_newton

__all__ = ["envelope_newton", "NEWTON_RTOL"]


def envelope_newton(f, p, lam, mu_g, *, rtol=NEWTON_RTOL, max_iter=60):
    r"""Minimise :math:`\Phi(w) = \sum_i p_i F_i(w)`, F_i the Moreau envelope of f_i, by damped Newton.

    ``f`` has batch shape (T, m), ``p`` (T, m), ``lam`` and ``mu_g`` (T,) (mu_g: a strong
    convexity modulus of Φ).  The solver is ``moreau.fl``'s (the one behind
    ``moreau.fl.fedprox_optimum``): it stops on the certified bound
    ``||w - w~_g|| <= (||grad Phi(w)|| + lam sum_i p_i e_i) / mu_g`` (e_i the certified prox
    errors) ``<= max(rtol (1 + ||w||), 64 eps lam sum_i p_i (||w|| + ||theta_i||) / mu_g)`` and
    raises RuntimeError when ``max_iter`` iterations do not certify it.
    Returns ``(w_g (T, d), bound (T,))``.
    """
    xp = f.xp
    w, bound, _ = _envelope_newton(
        f,
        xp.asarray(p, dtype=f.dtype),
        xp.asarray(lam, dtype=f.dtype),
        xp.asarray(mu_g, dtype=f.dtype),
        rtol=rtol,
        max_iter=max_iter,
    )
    return np.asarray(w), np.asarray(bound)
