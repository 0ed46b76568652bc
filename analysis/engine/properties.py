r"""Properties an instance may have beyond a statement's printed hypotheses (issue 27).

Interface (shared by the shared-property report and the condition search):

* :data:`PROPERTIES` — ``{name: Property}``, the library;
* :func:`instance_properties` ``(statement, family, batch) -> {name: bool array}`` — each
  property that can be computed on this batch, one boolean per instance, computed from the
  instances' own numbers (never from flags the generator sets).

The batch conventions read here (docs/instances.md):

* ``A`` ``(T, d, d)`` or ``(T, m, d, d)``: the Hessian(s) of a quadratic, one per client when 4-D
  (else ``eig`` ``(T, ..., d)``, the spectra); ``p`` ``(T, m)``: the clients' weights;
* ``X`` ``(T, [m,] s, d)``, ``y``, ``mu`` on the logistic and multinomial families: the samples of
  ridge-regularised logistic losses ℓ_j(θ) = log(1 + exp(−y_j x_jᵀθ)) + (μ/2)‖θ‖² (with ``sample_mu``
  ``(T, [m,] s)``: each sample's own ridge μ_j, their mean the client's μ);
  ``B`` ``(T, s, d)`` beside a 3-D ``A``: quadratic samples ½θᵀAθ − B_jᵀθ (one shared Hessian);
  ``knots``, ``V``, ``mu`` (the 1-D sample family of pfedme.lemma1): ℓ_j = f + ψ_j with ψ_j'
  piecewise linear through ``V[j]`` at ``knots`` and f μ-strongly convex;
* ``x0``, ``h``, ``set``: a start and a compact set (the box [−h, h], or a ball, simplex or ℓ1
  ball of radius h_1 by the code ``set``: FedFW's batches, those with ``lam0``, code
  (box, ℓ1, ℓ2, simplex), the thesis's (box, ℓ2, simplex, ℓ1));
* scalars ``lam``, ``L``, ``mu`` ``(T,)``; a dimension ``d`` ``(T,)`` where the batch draws one.

A property that needs a field a batch lacks is not computed there (``compute`` returns None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Property", "PROPERTIES", "instance_properties", "observed_ranges", "shared_properties"]

_RTOL = 1e-9  # equalities (shared, isotropic, commuting) to this relative to the matrices' size


@dataclass(frozen=True)
class Property:
    """``compute(batch) -> bool array`` (one per instance) or None where it cannot be computed on
    that batch (the fields it needs are absent).  ``families``: the families whose batches follow
    the convention it reads (empty: every family).  ``why``: what it means, for the docs."""

    name: str
    compute: Callable
    why: str = ""
    families: tuple = ()


def _arr(batch: dict, key: str):
    v = batch.get(key)
    return None if v is None else np.asarray(v)


#: a quadratic's other fields: an ``A`` beside one of them is the Hessian of ½θᵀAθ − bᵀθ
_QUADRATIC_BESIDE_A = ("b", "eig", "B", "g")


def _hessians(batch):
    """The clients' Hessians ``(T, m, d, d)`` (m = 1 for a single function), or None."""
    A = _arr(batch, "A")
    if A is None or A.ndim not in (3, 4) or A.shape[-1] != A.shape[-2]:
        return None
    if not any(k in batch for k in _QUADRATIC_BESIDE_A):
        return None  # an A without a linear term or spectrum is other data (a matrix to factorise)
    return A[:, None] if A.ndim == 3 else A


def _scale(A):
    return np.maximum(np.max(np.abs(A), axis=tuple(range(1, A.ndim))), np.finfo(float).tiny)


def _clients(batch):
    """The number of clients per instance ``(T,)``, or None where the batch has no client axis."""
    p = _arr(batch, "p")
    if p is not None and p.ndim == 2:
        return np.sum(p > 0, axis=1)
    A = _arr(batch, "A")
    if A is not None and A.ndim == 4 and _hessians(batch) is not None:
        return np.full(A.shape[0], A.shape[1])
    X = _arr(batch, "X")
    if X is not None and X.ndim == 4:
        return np.full(X.shape[0], X.shape[1])
    return None


def _one_client(batch):
    m = _clients(batch)
    return None if m is None else m == 1


def _dim(batch):
    """The parameter dimension per instance ``(T,)``, or None."""
    d = _arr(batch, "d")
    if d is not None and d.ndim == 1:
        return d.astype(int)
    for key in ("A", "X", "Xl", "x0", "w0", "h"):
        v = _arr(batch, key)
        if v is not None and v.ndim >= 2:
            return np.full(v.shape[0], v.shape[-1])
    if "knots" in batch and _arr(batch, "w") is not None and _arr(batch, "w").ndim == 1:
        return np.ones(np.shape(batch["w"])[0], int)  # θ is the scalar w's axis
    return None


def _d_is_1(batch):
    d = _dim(batch)
    return None if d is None else d == 1


def _isotropic(batch):
    A = _hessians(batch)
    if A is not None:
        d = A.shape[-1]
        diag = np.diagonal(A, axis1=-2, axis2=-1)
        c = diag.mean(axis=-1)[..., None, None]
        dev = np.abs(A - c * np.eye(d))
        return np.max(dev.reshape(A.shape[0], -1), axis=1) <= _RTOL * _scale(A)
    eig = _arr(batch, "eig")
    if eig is None or eig.ndim < 2:
        return None
    dev = np.abs(eig - eig[..., :1])
    return np.max(dev.reshape(eig.shape[0], -1), axis=1) <= _RTOL * _scale(eig)


def _shared_hessian(batch):
    A = _hessians(batch)
    if A is None or A.shape[1] < 2:
        return None
    dev = np.abs(A - A[:, :1])
    return np.max(dev.reshape(A.shape[0], -1), axis=1) <= _RTOL * _scale(A)


def _commuting(batch):
    A = _hessians(batch)
    if A is None or A.shape[1] < 2:
        return None
    AB = np.einsum("tkij,tljn->tklin", A, A)
    comm = AB - np.swapaxes(AB, 1, 2)
    return np.max(np.abs(comm).reshape(A.shape[0], -1), axis=1) <= _RTOL * _scale(A) ** 2


def _equal_weights(batch):
    p = _arr(batch, "p")
    if p is None or p.ndim != 2 or p.shape[1] < 2:
        return None
    return np.max(p, axis=1) - np.min(p, axis=1) <= _RTOL * np.max(np.abs(p), axis=1)


def _logistic_samples(batch):
    """``(X, y, mu)`` of ridge-logistic samples, or None."""
    X, y, mu = _arr(batch, "X"), _arr(batch, "y"), _arr(batch, "mu")
    if X is None or y is None or mu is None or mu.ndim != 1 or X.ndim < 3:
        return None
    return X, y, mu


def _knot_slopes(batch):
    """``(mu, slopes (T, n, P - 1))`` of the 1-D piecewise-linear sample family, or None."""
    knots, V, mu = _arr(batch, "knots"), _arr(batch, "V"), _arr(batch, "mu")
    if knots is None or V is None or mu is None or V.ndim != 3:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.diff(V, axis=-1) / np.diff(knots, axis=-1)[:, None, :]
    return mu, np.where(np.isfinite(slopes), slopes, 0.0)


def _quadratic_samples(batch):
    """The shared sample Hessian ``(T, d, d)`` of quadratic samples ½θᵀAθ − B_jᵀθ, or None."""
    A, B = _arr(batch, "A"), _arr(batch, "B")
    if A is None or B is None or A.ndim != 3 or B.ndim != 3:
        return None
    return A


def _sample_curvature(batch):
    """The smallest curvature of any sample loss anywhere ``(T,)``, or None."""
    ls = _logistic_samples(batch)
    if ls is not None:
        # the logistic term is convex with curvature tending to 0 far out: the ridge μ, or the smallest of
        # the samples' own ridges ``sample_mu`` (T, [m,] n) where the batch splits μ among its samples
        per = _arr(batch, "sample_mu")
        if per is not None and per.ndim >= 2 and per.shape[0] == ls[2].shape[0]:
            return np.min(per.reshape(per.shape[0], -1), axis=1)
        return ls[2]
    ks = _knot_slopes(batch)
    if ks is not None:
        mu, slopes = ks
        return mu + np.min(slopes.reshape(slopes.shape[0], -1), axis=1)
    A = _quadratic_samples(batch)
    if A is not None:
        return np.linalg.eigvalsh(A)[:, 0]
    return None


def _samples_strongly_convex(batch):
    c = _sample_curvature(batch)
    return None if c is None else c > 0


def _samples_convex(batch):
    c = _sample_curvature(batch)
    return None if c is None else c >= 0


def _noise_independent(batch):
    """∇ℓ_j − ∇f does not depend on θ: the samples' Hessians agree everywhere."""
    ks = _knot_slopes(batch)
    if ks is not None:
        return np.all(ks[1].reshape(ks[1].shape[0], -1) == 0, axis=1)
    if _quadratic_samples(batch) is not None:
        return np.ones(np.shape(batch["A"])[0], bool)  # one Hessian A for every sample
    ls = _logistic_samples(batch)
    if ls is not None:
        X, y, _ = ls
        if X.ndim != 3 or y.shape != X.shape[:2]:
            return None
        z = X * y[..., None] if np.all(np.isin(y, (-1, 1))) else X  # 0/1 labels: the rows decide
        dev = np.abs(z - z[:, :1])
        return np.all(dev.reshape(X.shape[0], -1) == 0, axis=1) & np.all(y == y[:, :1], axis=1)
    return None


_FEDFW_SETS = ("box", "l1", "l2", "simplex")
_THESIS_SETS = ("box", "l2", "simplex", "l1")


def _x0_inside(batch):
    x0, h = _arr(batch, "x0"), _arr(batch, "h")
    if x0 is None or h is None or x0.shape != h.shape or x0.ndim != 2:
        return None
    code = _arr(batch, "set")
    code = np.zeros(x0.shape[0], int) if code is None else code.astype(int)
    names = np.asarray(_FEDFW_SETS if "lam0" in batch else _THESIS_SETS)[code]
    r = h[:, 0]
    tol = 1e-12 * r
    inside = {
        "box": np.all(np.abs(x0) <= h, axis=-1),
        "l2": np.linalg.norm(x0, axis=-1) <= r + tol,
        "l1": np.sum(np.abs(x0), axis=-1) <= r + tol,
        "simplex": (np.min(x0, axis=-1) >= -tol) & (np.abs(np.sum(x0, axis=-1) - r) <= tol),
    }
    return np.select([names == k for k in inside], list(inside.values()), False)


def _strongly_convex_objective(batch):
    mu = _arr(batch, "mu")
    if mu is not None and mu.ndim == 1:
        return mu > 0
    A = _hessians(batch)
    if A is None:
        return None
    lo = np.linalg.eigvalsh(A.mean(axis=1))[:, 0]
    return lo > _RTOL * _scale(A)


def _bounded_gradients(batch):
    """Gradients bounded on all of R^d (unconstrained batches only: a set bounds every gradient)."""
    if "h" in batch or "set" in batch:
        return None
    ls = _logistic_samples(batch)
    if ls is not None:
        return ls[2] == 0  # a logistic loss has gradients bounded by max‖x_j‖; a ridge does not
    A = _hessians(batch)
    if A is None:
        return None
    return np.all(A.reshape(A.shape[0], -1) == 0, axis=1)


def _ratio(batch, num, den):
    a, b = _arr(batch, num), _arr(batch, den)
    if a is None or b is None or a.ndim != 1 or b.ndim != 1:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / b


def _lam_le_L(batch):
    r = _ratio(batch, "lam", "L")
    return None if r is None else r <= 1


def _lam_ge_L(batch):
    r = _ratio(batch, "lam", "L")
    return None if r is None else r >= 1


_LOGISTIC = ("logistic", "multinomial")

#: The property library, by name: what an instance can have beyond the printed hypotheses
#: (``Statement.implies``, ``Statement.waived``; docs/instances.md)
PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in (
        Property("one client", _one_client, "m = 1: the federation is a single client"),
        Property("d = 1", _d_is_1, "the parameter is a scalar"),
        Property("isotropic Hessians", _isotropic, "every Hessian A is a multiple of the identity"),
        Property("shared Hessian across clients", _shared_hessian, "every client has the same A"),
        Property("commuting Hessians across clients", _commuting, "A_i A_k = A_k A_i for all clients"),
        Property("equal client weights", _equal_weights, "the weights p_i are all equal"),
        Property(
            "strongly convex sample losses",
            _samples_strongly_convex,
            "every sample loss ℓ_j is strongly convex (not only their mean f)",
            ("quadratic", "nonconvex", *_LOGISTIC),
        ),
        Property(
            "convex sample losses",
            _samples_convex,
            "every sample loss ℓ_j is convex",
            ("quadratic", "nonconvex", *_LOGISTIC),
        ),
        Property(
            "noise independent of θ",
            _noise_independent,
            "∇ℓ_j(θ) − ∇f(θ) is the same at every θ (the samples' Hessians agree)",
            ("quadratic", "nonconvex", *_LOGISTIC),
        ),
        Property("x⁰ inside the set", _x0_inside, "the start lies in the constraint set"),
        Property("strongly convex objective (μ > 0)", _strongly_convex_objective, "μ > 0"),
        Property("bounded gradients", _bounded_gradients, "sup_θ ‖∇f(θ)‖ < ∞ on R^d (unconstrained batches)"),
        Property("λ ≤ L", _lam_le_L, "the penalty λ at most the smoothness L"),
        Property("λ ≥ L", _lam_ge_L, "the penalty λ at least the smoothness L"),
    )
}
# the sample-loss conventions hold on these families only (an ``X`` elsewhere is other data)
_SAMPLE_PROPS = ("strongly convex sample losses", "convex sample losses", "noise independent of θ")


def instance_properties(statement, family: str, batch: dict) -> dict[str, np.ndarray]:
    """Every property of :data:`PROPERTIES` computable on ``batch``: ``{name: bool array}``
    (``statement`` is not read: the properties are the batch's; it is part of the interface)."""
    out = {}
    nonlogistic = {k: v for k, v in batch.items() if k not in ("X", "y")}
    for name, prop in PROPERTIES.items():
        if prop.families and family not in prop.families:
            continue
        # X, y outside the logistic families are other data (least squares, factorisations)
        view = batch if name not in _SAMPLE_PROPS or family in _LOGISTIC else nonlogistic
        with np.errstate(all="ignore"):
            value = prop.compute(view)
        if value is not None:
            out[name] = np.asarray(value, dtype=bool)
    return out


def observed_ranges(batch: dict) -> dict[str, tuple[float, float]]:
    """``{"λ/L": (min, max)}``: the observed range of the declared ratios present in ``batch``
    (λ/L, λ/μ, μ/L), finite instances only."""
    out = {}
    for num, den, name in (("lam", "L", "λ/L"), ("lam", "mu", "λ/μ"), ("mu", "L", "μ/L")):
        r = _ratio(batch, num, den)
        if r is not None and np.any(np.isfinite(r)):
            f = r[np.isfinite(r)]
            out[name] = (float(f.min()), float(f.max()))
    return out


def shared_properties(statement, family: str, every: dict) -> tuple[list[str], dict[str, str]]:
    """``(shared, waived)`` of one (statement, family) run: ``every`` maps a property name to whether
    every instance had it (``Record.properties``); ``shared`` lists those not implied by the printed
    hypotheses (``Statement.implies``) and not waived, ``waived`` maps the waived ones to the
    statement's reason (``Statement.waived``, keyed by the name or by ``(family, name)``)."""
    implied = set(getattr(statement, "implies", ()))
    reasons = getattr(statement, "waived", {})
    shared, waived = [], {}
    for name, all_have in every.items():
        if not all_have or name in implied:
            continue
        why = reasons.get((family, name), reasons.get(name))
        if why is None:
            shared.append(name)
        else:
            waived[name] = why
    return shared, waived
