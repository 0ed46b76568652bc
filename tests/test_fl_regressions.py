"""Regressions found by running the papers' own settings."""

from __future__ import annotations

import numpy as np

from moreau import data, fl


def test_fedprox_optimum_on_the_fedprox_papers_synthetic_data():
    """Separable labels with the ridge 0.01 and lam = 0.02 (mu_g ~ 7e-3): the Newton tolerance must
    include what the certified proxes allow, or the solve raises instead of answering."""
    P = data.fedprox_synthetic(0, R=1.0)
    f = P.objective
    wg, wl, info = fl.fedprox_optimum(f, 0.02, return_info=True)
    # independent check of stationarity from the definition: grad f_i(w_i) = lam (w_g - w_i), w_g = mean w_i
    g = np.asarray(f.grad(wl))
    resid = np.linalg.norm(g - 0.02 * (wg[None, :] - wl), axis=-1).max()
    assert resid <= 1e-9 * (1 + np.abs(g).max())
    assert np.allclose(wg, wl.mean(axis=0), rtol=0, atol=1e-9)
    assert np.isfinite(info.error_bound) and info.error_bound < 1e-9
