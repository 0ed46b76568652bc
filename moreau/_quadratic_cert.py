r"""Existence and the certificate of the quadratic prox (used by :meth:`moreau.Quadratic._solve`).

The prox of ``f(theta) = theta^T A theta / 2 - b^T theta + c`` exists iff ``lam > -a_1``
(``a_1 = lambda_min(A)``).  Everything here is proven with the certified Cholesky of
:mod:`moreau._chol`, never taken from the accuracy of a computed eigenvalue:

* existence: one factorization per matrix at its smallest ``lam``
  (:func:`moreau._chol.chol_proves_exists`), or ``lam + p > 0`` with ``p`` the proven
  lower bound on ``a_1`` (:func:`moreau._chol.chol_lower_bound`, cached per objective);
* the certificate of a returned ``theta`` (``u`` the unit roundoff,
  ``gamma_k = k u/(1 - k u)``)::

      ||theta - prox(w)|| <= ||A theta - b + lam (theta - w)|| / (lam + p)

  with the residual ``r_hat = fl(fl(A theta) - b + lam fl(theta - w))`` evaluated at the
  returned theta and bounded by ``||r_hat|| (1 + (d+4) eps) + (gamma_d + 3u) ||A||_F ||theta||
  + 3u ||b|| + 5u lam ||fl(theta - w)||`` (Higham's bound for the product, one rounding per
  operation after it).  It does not depend on how theta was computed.

A refusal first tries to explain itself with the computed spectrum (:func:`check_exists`:
``lam`` below ``-a_hat_1 - delta``, or within ``delta = 4 d eps ||A||_F`` of the threshold),
then with what the proof reached (:func:`proven_modulus`).
"""

from __future__ import annotations

import numpy as np

from ._backend import safe_norm, to_numpy
from ._errors import ProxConvergenceError
from ._matrices import matvec
from ._proxinfo import ProxInfo

__all__ = ["check_exists", "proven_modulus", "lam_per_matrix", "certificate"]


def lam_per_matrix(lam, a_batch):
    """The smallest ``lam`` of each matrix (host float64, shape ``a_batch``): ``lam`` broadcast
    against the matrices' batch shape, reduced over the axes the matrices are broadcast along."""
    lam = np.asarray(to_numpy(lam), dtype=np.float64)
    shape = tuple(np.broadcast_shapes(a_batch, tuple(lam.shape)))
    pad = (1,) * (len(shape) - len(a_batch)) + a_batch
    axes = tuple(i for i in range(len(shape)) if pad[i] == 1 and shape[i] > 1)
    low = (
        np.min(np.broadcast_to(lam, shape), axis=axes, keepdims=True) if axes else np.broadcast_to(lam, shape)
    )
    return np.reshape(low, tuple(low.shape[len(shape) - len(a_batch) :]))


def check_exists(q, lam, a1, delta):
    """ValueError where the computed spectrum already says no: ``lam`` below ``-a1 - delta``
    (certainly nonconvex), or within ``delta`` of ``-a1`` (the computed eigenvalue cannot tell)."""
    margin = lam + (a1 - delta)
    if bool(q.xp.all(margin > 0)):
        return
    lam_h, a_h, d_h = np.broadcast_arrays(to_numpy(lam), to_numpy(a1), to_numpy(delta))
    below = lam_h + a_h + d_h <= 0  # below the threshold even allowing for the eigenvalue error
    if np.any(below):
        i = tuple(int(k) for k in np.argwhere(below)[0])
        raise ValueError(
            f"prox of this {type(q).__name__} needs lam > {-a_h[i]:.6g} "
            f"(= minus its curvature lower bound: it is nonconvex) at batch "
            f"index {i}; got lam={lam_h[i]:.6g}"
        )
    k = tuple(int(i) for i in np.argwhere(lam_h + a_h - d_h <= 0)[0])
    raise ValueError(
        f"lam={lam_h[k]:.17g} is too close to the nonconvex threshold -a_1 = {-a_h[k]:.17g} "
        f"of this Quadratic (batch index {k}) to certify that the prox exists: the computed "
        f"smallest eigenvalue is exact only to {d_h[k]:.3g} (4 d eps ||A||_F); "
        f"lam must exceed {d_h[k] - a_h[k]:.17g} (the prox needs lam > {-a_h[k]:.6g}; "
        f"got lam={lam_h[k]:.6g})"
    )


def proven_modulus(p, lam, shape):
    """``lam + p`` rounded down (host float64, ``shape``), ``p`` the proven lower bound on
    ``a_1``: a proven lower bound on ``lambda_min(A + lam I)``; ``ValueError`` where it is not
    positive (then the prox may not exist)."""
    lam_h = np.broadcast_to(np.asarray(to_numpy(lam), dtype=np.float64), shape)
    p = np.broadcast_to(p, shape)
    with np.errstate(over="ignore"):
        modulus = (lam_h + p) * (1 - 2 * float(np.finfo(np.float64).eps))
    if not np.all(np.isfinite(modulus)):  # the certificate divides by it: an inf would make it 0
        k = tuple(int(i) for i in np.argwhere(~np.isfinite(modulus))[0])
        raise ValueError(
            f"lam={lam_h[k]:.3g} plus lambda_min(A) >= {p[k]:.3g} overflows float64 (entry {k}): "
            "the prox's modulus and A + lam I are not representable; lower lam or rescale A"
        )
    if np.all(modulus > 0):
        return modulus
    k = tuple(int(i) for i in np.argwhere(~(modulus > 0))[0])
    how = (
        "the certified Cholesky factorization failed even well below the computed smallest eigenvalue"
        if p[k] == -np.inf
        else f"proven: lambda_min(A) >= {p[k]:.17g}"
    )
    raise ValueError(
        f"lam={lam_h[k]:.17g} is too close to the nonconvex threshold of this Quadratic (entry {k}) "
        f"to prove that the prox exists and bound its error ({how}); lam must exceed {-p[k]:.17g}"
    )


def certificate(q, theta, w, lam, shape, tol, modulus):
    """``ProxInfo`` with the certified ``error_bound`` of ``theta`` (module doc), or
    ProxConvergenceError where it exceeds ``tol`` (a tolerance below the closed form's
    rounding level).  Host numpy arrays on every backend (documented in ProxInfo)."""
    xp, d = q.xp, q.dim
    eps = float(xp.finfo(q.dtype).eps)
    ur = eps / 2
    lam_ = lam[..., None]
    diff = theta - w
    n_diff = safe_norm(diff, xp)
    resid = matvec(q.A, theta)
    resid -= q.b  # in place, in the order of the analysis: (fl(A theta) - b) + lam fl(theta - w)
    diff *= lam_
    resid += diff
    rn = safe_norm(resid, xp) * (1 + (d + 4) * eps)
    g_d = d * ur / (1 - d * ur)
    rnd = (g_d + 3 * ur) * q._fro * safe_norm(theta, xp) + 3 * ur * safe_norm(q.b, xp) + 5 * ur * lam * n_diff
    num = np.asarray(to_numpy(xp.broadcast_to(rn + rnd * (1 + 4 * eps), shape)), dtype=np.float64)
    bound = num / modulus * (1 + 8 * eps)
    bound = np.where(
        np.isnan(bound), np.inf, bound
    )  # a NaN (an overflow in theta or the residual) certifies nothing
    its = np.zeros(shape, dtype=int)
    if tol is None:
        return ProxInfo(iterations=its, error_bound=bound, tol=None)
    t = np.asarray(to_numpy(tol))
    if t.dtype.kind not in "fiu" or t.dtype == bool:
        raise TypeError(f"tol must be a real number or array (got {tol!r})")
    t = np.broadcast_to(t.astype(float), shape)
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError(f"tol must be finite and > 0 (got {tol!r})")
    if np.any(bound > t):
        failed = bound > t
        raise ProxConvergenceError(
            f"closed-form prox of Quadratic: certified bound {bound.max():.3g} exceeds tol at "
            f"{int(failed.sum())} of {failed.size} entries (first: "
            f"{[tuple(int(i) for i in r) for r in np.argwhere(failed)[:5]]}); tol is below the "
            f"closed form's rounding level",
            error_bound=bound,
            tol=t.copy(),
            iterations=its,
            failed=failed,
            theta=to_numpy(theta),
        )
    return ProxInfo(iterations=its, error_bound=bound, tol=t.copy())
