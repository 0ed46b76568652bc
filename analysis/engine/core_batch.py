"""Operations on a batch (a dict of arrays, instances along the first axis): a sub-batch of some
instances, and a ``Statement.scaling`` entry that rescales a batch's fields (θ → sθ, f → cf)."""

from __future__ import annotations

import numpy as np

__all__ = ["scale_fields", "QUADRATIC_SCALING", "LOGISTIC_SCALING", "take"]


def scale_fields(powers, c_free=True):
    """A ``Statement.scaling`` entry from ``{field: (power of s, power of c)}``: under θ → sθ,
    f → cf each listed batch field is multiplied by ``s**ps * c**pc`` (a curvature, λ or μ by
    ``c/s²``: (-2, 1); a point by s: (1, 0); a linear term by c/s: (-1, 1); a step size by ``s²/c``:
    (2, -1)); unlisted fields are dimensionless.  ``c_free=False``: the family cannot express
    ``c f`` (a logistic loss times c is not a logistic loss): only ``c = 1`` is analysed (the
    entry returns None otherwise)."""

    def scale(batch, s, c):
        if not c_free and c != 1:
            return None
        return {
            k: (np.asarray(v) * (s ** powers[k][0]) * (c ** powers[k][1]) if k in powers else v)
            for k, v in batch.items()
        }

    scale.powers = dict(powers)
    return scale


#: the scaling of the quadratic batches most checkers draw (A, b, eigenvalues, L, lam, points)
QUADRATIC_SCALING = {
    "A": (-2, 1),
    "b": (-1, 1),
    "eig": (-2, 1),
    "L": (-2, 1),
    "mu": (-2, 1),
    "lam": (-2, 1),
    "w": (1, 0),
    "w2": (1, 0),
}


#: logistic batches (features X, ridge mu, lam, points): theta -> s theta only (c = 1)
LOGISTIC_SCALING = {"X": (-1, 0), "mu": (-2, 0), "lam": (-2, 0), "w": (1, 0), "w2": (1, 0)}


def take(batch, idx):
    """The sub-batch of the given instance indices (keeps the leading axis)."""
    idx = np.atleast_1d(idx)
    return {k: (v[idx] if np.ndim(v) > 0 else v) for k, v in batch.items()}
