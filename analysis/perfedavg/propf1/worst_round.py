"""The worst round of a drift bound, per instance (Proposition F.1's sides over t, every family)."""

from __future__ import annotations

import numpy as np

__all__ = ["worst_t"]


def worst_t(hi, rhs, mask):
    """``(ratios (t, T), worst t per instance, instance index)``: the upper end of the left side
    over the bound (inf where the bound is 0 and the left side is not), masked t excluded."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(rhs > 0, hi / rhs, np.where(hi > 0, np.inf, 0.0))
    if mask is not None:
        r = np.where(mask, r, -np.inf)
    return r, np.argmax(r, axis=0), np.arange(r.shape[1])
