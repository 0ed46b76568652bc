r"""pfedme.prop1 — pFedMe, Proposition 1, eq. (6).

Statement (paper): if f_i is convex, or nonconvex with L-Lipschitz gradient,
then F_i (the Moreau envelope with parameter λ) is L_F-smooth with L_F = λ
(with the condition λ > 2L for nonconvex f_i), and
∇F_i(w) = λ(w − θ̂_i(w)).  If f_i is μ-strongly convex, F_i is
μ_F = λμ/(λ+μ)-strongly convex.

Assumptions: λ > 0; f_i convex (or μ-strongly convex), or L-smooth with
λ > 2L when nonconvex.

Instances (multinomial: 3-class softmax models, labels drawn from the
model, the same parts as logistic with L a valid bound instead of the exact
sup): convex / strongly convex / weakly convex quadratics (exact
spectra, λ from 0.05 L to 20 L, weakly convex ones with a_1 = −L and λ just
above 2L, and λ in (L, 2L] where the condition fails); logistic models with
μ = 0 and μ > 0, Hessians sampled at points including w = ∇f(0)/λ, where
θ̂(w) = 0 and the envelope's curvature λL/(λ+L) is attained.

Sides (lhs <= rhs): the envelope's constants are computed from the
eigenvalues of ``moreau.envelope(f, λ).hess(w)`` (numpy eigvalsh of the
implicit-function Hessian, independent of the curvature-bounds code); the
gradient formula is compared with λ(A+λI)⁻¹(Aw−b) on quadratics and with
central differences of F on logistic.

Claimed by the paper: upper bounds.  What the check shows on quadratics:
μ_F is attained (tight); L_F = λ is never attained for convex f (true
constant λL/(λ+L)); for nonconvex f with a_1 = −L the true constant is
λL/(λ−L), which equals λ exactly at λ = 2L: the condition is the threshold.
"""

from __future__ import annotations

from functools import partial

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import (
    LOGISTIC_SCALING,
    QUADRATIC_SCALING,
    Mutant,
    Sides,
    Statement,
    scale_fields,
)
from moreau.analysis.engine.instances import log_uniform, logistic_batch, quadratic_batch, split_counts
from moreau.analysis.engine.shrink import Simplify, quadratic_fields
from moreau.analysis.pfedme import sharp_constants as _sharp

__all__ = ["STATEMENTS"]

CLAIM = {
    "grad": lambda lam, w, theta: lam[..., None] * (w - theta),
    "L_F": lambda lam, L: lam,
    "L_F_nonconvex": lambda lam, L: lam,
    "condition": lambda lam, L: lam > 2 * L,
    "mu_F": lambda lam, mu: lam * mu / (lam + mu),
}

PARTS = (
    "gradient formula (6)",
    "smoothness L_F = λ (f convex)",
    "smoothness L_F = λ (f nonconvex, λ > 2L)",
    "strong convexity μ_F = λμ/(λ+μ)",
)


def instances(family, trials, rng):
    if family == "quadratic":
        T = trials or 48
        parts = [
            quadratic_batch(rng, n, 4, k)
            for n, k in zip(split_counts(T, 3), ("convex", "strongly_convex", "weakly_convex"), strict=True)
        ]
        batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        L = batch["L"]
        lam = L * log_uniform(rng, 0.05, 20.0, T)
        nc = batch["eig"][:, 0] < 0
        # nonconvex: lam must exceed -a_1; a third just above 2L (the
        # threshold), a third in (L, 2L] (condition fails), a third above
        k = np.flatnonzero(nc)
        third = np.array_split(k, 3)
        lam[third[0]] = 2 * L[third[0]] * (1 + 1e-9)
        lam[third[1]] = L[third[1]] * rng.uniform(1.05, 2.0, third[1].size)
        lam[third[2]] = L[third[2]] * rng.uniform(2.0, 20.0, third[2].size)
        batch["lam"] = lam
        batch["w"] = rng.standard_normal((T, 4)) * 3
        return batch
    T = trials or 24
    halves = split_counts(T, 2)
    parts = [
        logistic_batch(rng, n, 30, 3, mu=mu, scale=2.0) for n, mu in zip(halves, (0.0, 0.5), strict=True)
    ]
    batch = {k: np.concatenate([p[k] for p in parts]) for k in ("X", "y", "mu")}
    if family == "multinomial":  # 3 classes, labels drawn from the softmax model of a random W
        W = rng.standard_normal((T, 3, 3))
        logits = np.einsum("tnd,tdc->tnc", batch["X"], W)
        P = np.exp(logits - logits.max(axis=-1, keepdims=True))
        P /= P.sum(axis=-1, keepdims=True)
        batch["y"] = (rng.uniform(size=P.shape[:2] + (1,)) > np.cumsum(P, axis=-1)).sum(axis=-1).astype(float)
        batch["n_classes"] = np.full(T, 3)
    batch["lam"] = log_uniform(rng, 0.1, 10.0, T)
    # sample points: random ones, far ones (margins large: curvature -> mu) and
    # w = grad f(0) / lam (prox = 0: the curvature sup is attained); set in evaluate
    D = 9 if family == "multinomial" else 3
    batch["w"] = np.concatenate([rng.standard_normal((T, 4, D)), 30 * rng.standard_normal((T, 2, D))], axis=1)
    return batch


def prepare(batch):
    """Everything the claim does not enter: certified proxes, envelope spectra, references."""
    lam = batch["lam"]
    return _quadratic(batch, lam) if "A" in batch else _logistic(batch, lam)


def finish(prep, claim):
    """Both sides of every part from the prepared quantities and the claim's formulas."""
    lam, L, consts = prep["lam"], prep["L"], prep["consts"]
    err = np.linalg.norm(prep["g_ref"] - claim["grad"](lam, prep["w"], prep["theta"]), axis=-1)
    if prep["quadratic"]:
        a1 = prep["a1"]
        return {
            PARTS[0]: Sides(
                err, prep["tol"], "exact", constants=consts, note="gradient vs lam (A + lam I)^-1 (A w - b)"
            ),
            PARTS[1]: Sides(
                prep["smooth_F"],
                claim["L_F"](lam, L),
                "upper",
                applicable=a1 >= 0,
                constants=consts,
                note="true constant lam L/(lam + L) < lam: never attained",
            ),
            PARTS[2]: Sides(
                prep["smooth_F"],
                claim["L_F_nonconvex"](lam, L),
                "upper",
                applicable=(a1 < 0) & claim["condition"](lam, L),
                constants=consts,
                note="a_1 = -L: true constant lam L/(lam - L) = lam exactly at lam = 2L (threshold)",
            ),
            PARTS[3]: Sides(
                claim["mu_F"](lam, np.maximum(a1, 0)),
                prep["strong_F"],
                "tight",
                applicable=a1 > 0,
                constants=consts,
                note="lhs: claimed mu_F; rhs: true strong convexity of F",
            ),
        }
    lo = prep["lo"]
    err = np.max(err, axis=0)  # over the sampled points
    return {
        PARTS[0]: Sides(
            err, prep["tol"], "exact", constants=consts, note="gradient vs central differences of F"
        ),
        PARTS[1]: Sides(
            prep["smooth_F"], claim["L_F"](lam, L), "upper", constants=consts, note=prep["sup_note"]
        ),
        PARTS[3]: Sides(
            claim["mu_F"](lam, lo),
            prep["strong_F"],
            "upper",
            applicable=lo > 0,
            constants=consts,
            note="rhs sampled (>= the true inf); at the far points the curvature of f has "
            "decayed to mu in floating point, so the inf is reached there",
        ),
    }


def evaluate(batch, claim):
    return finish(prepare(batch), claim)


def _quadratic(batch, lam):
    A, b, w = batch["A"], batch["b"], batch["w"]
    q = mo.Quadratic(A, b)
    F = mo.envelope(q, lam)
    a1, L = batch["eig"][:, 0], batch["L"]  # the instance's exact spectrum
    eig_F = np.linalg.eigvalsh(F.hess(w))
    theta = mo.prox(q, w, lam)
    d = A.shape[-1]
    M = A + lam[:, None, None] * np.eye(d)
    g_ref = lam[:, None] * np.linalg.solve(M, (A @ w[..., None])[..., 0:1] - b[..., None])[..., 0]
    # allowed rounding: a few hundred ulps of the quantities combined (cond(A + lam I) <= ~400 here)
    tol = 1e-12 * (
        np.linalg.norm(g_ref, axis=1) + lam * (np.linalg.norm(w, axis=1) + np.linalg.norm(theta, axis=1))
    )
    consts = {
        "L": "exact (eigenvalues of A)",
        "mu": "exact (a_1)",
        "envelope constants": "exact (eigvalsh of hess F)",
    }
    return {
        "quadratic": True,
        "lam": lam,
        "L": L,
        "a1": a1,
        "w": w,
        "theta": theta,
        "g_ref": g_ref,
        "tol": tol,
        "smooth_F": np.max(np.abs(eig_F), axis=1),
        "strong_F": eig_F[:, 0],
        "consts": consts,
    }


def _logistic(batch, lam):
    if "n_classes" in batch:
        f = mo.Multinomial(batch["X"], batch["y"], n_classes=int(batch["n_classes"][0]), mu=batch["mu"])
    else:
        f = mo.Logistic(batch["X"], batch["y"], mu=batch["mu"])
    F = mo.envelope(f, lam)
    T, d = batch["X"].shape[0], f.dim
    w0 = f.grad(np.zeros((T, d))) / lam[:, None]  # prox(w0) = 0
    W = np.concatenate([batch["w"], w0[:, None, :]], axis=1).transpose(1, 0, 2)  # (P, T, d)
    lo, L = (np.asarray(c) for c in f.curvature_bounds())
    eig_F = np.linalg.eigvalsh(F.hess(W))  # (P, T, d)
    theta = mo.prox(f, W, lam)
    # central differences of the certified envelope value; h balances truncation
    # (h^2 |F'''|) against rounding (eps |F| / h): error ~1e-10 relative, tolerance 1e-6
    h = 1e-5
    fd = np.stack([(F.value(W + h * e) - F.value(W - h * e)) / (2 * h) for e in np.eye(d)], axis=-1)
    tol = 1e-6 * (1 + np.max(np.linalg.norm(fd, axis=-1), axis=0))
    if isinstance(f, mo.Multinomial):
        L_how = "valid bound: lambda_max(X^T X)/(2n) + mu (lambda_max(diag p - p p^T) <= 1/2; not attained)"
        sup_note = "true sup of the curvature of F is <= lam L/(lam + L) (L a bound here); sampled"
    else:
        L_how = "exact sup: lambda_max(X^T X)/(4n) + mu (attained at theta = 0)"
        sup_note = "sup of curvature of F is lam L/(lam + L), attained at w = grad f(0)/lam"
    consts = {
        "L": L_how,
        "mu": "exact inf (mu)",
        "envelope constants": "sampled: max/min eigenvalue of hess F over points incl. w = grad f(0)/lam",
    }
    return {
        "quadratic": False,
        "lam": lam,
        "L": L,
        "lo": lo,
        "w": W,
        "theta": theta,
        "g_ref": fd,
        "tol": tol,
        "smooth_F": np.max(np.abs(eig_F), axis=(0, 2)),
        "strong_F": np.min(eig_F[..., 0], axis=0),
        "consts": consts,
        "sup_note": sup_note,
    }


def worst_quadratic():
    """The worst instances of the bounds found by the worst-case search (``moreau check pfedme.prop1
    --analyse``, docs/optimisation.md), written in round numbers (d = 4, b = w = 1): #0 convex, spectrum
    (0, 1e-3, 1, 1e4), lam = 1e-2: LHS/RHS of L_F = λ is L/(λ + L) = 1 − 1e-6 (the search: approached 1 as
    λ/L → 0, never attained); #1 weakly convex, spectrum (−1, −0.5, 0, 0.5), λ = 2(1 + 1e-9) just above
    the threshold 2L: L/(λ − L) = 1 − 2e-9; #2 strongly convex, spectrum (0.5, 1, 2, 4), λ = 1: μ_F
    attained (ratio 1)."""
    eig = np.array([[0.0, 1e-3, 1.0, 1e4], [-1.0, -0.5, 0.0, 0.5], [0.5, 1.0, 2.0, 4.0]])
    A = np.stack([np.diag(e) for e in eig])
    return {
        "A": A,
        "b": np.ones((3, 4)),
        "eig": eig,
        "L": np.max(np.abs(eig), axis=1),
        "lam": np.array([1e-2, 2 * (1 + 1e-9), 1.0]),
        "w": np.ones((3, 4)),
    }


STATEMENTS = (
    Statement(
        id="pfedme.prop1",
        waived={
            "convex sample losses": (
                "Proposition 1 is about the Moreau envelope of f: the samples do not enter"
            ),
        },
        source="pFedMe, Proposition 1, eq. (6)",
        paper="pfedme-moreau-envelopes.md",
        latex=r"\nabla F_i(w) = \lambda(w - \hat\theta_i(w));\ L_F = \lambda\ (\lambda > 2L \text{ if nonconvex});\ "
        r"\mu_F = \frac{\lambda\mu}{\lambda+\mu}",
        text="grad F = lam (w - prox(w)); F is lam-smooth (lam > 2L if f nonconvex); "
        "F is lam mu/(lam + mu)-strongly convex if f is mu-strongly convex",
        assumptions=(
            "lam > 0",
            "f convex, or L-smooth nonconvex with lam > 2L",
            "mu-strong convexity for mu_F",
        ),
        scaling={
            "quadratic": scale_fields(QUADRATIC_SCALING),
            "logistic": scale_fields(LOGISTIC_SCALING, c_free=False),
            "multinomial": scale_fields(LOGISTIC_SCALING, c_free=False),
        },
        sharp={
            "quadratic": {
                PARTS[1]: partial(_sharp.pfedme_prop1, "convex"),
                PARTS[2]: partial(_sharp.pfedme_prop1, "nonconvex"),
                PARTS[3]: partial(_sharp.pfedme_prop1, "mu_F"),
            }
        },
        # the quadratic instance's fields (the worst-case search moves A's eigenvalues, lam, b, w)
        worst={"quadratic": worst_quadratic},
        simplify={
            "quadratic": Simplify(matrix="A", vectors=("b", "w"), scalars=("lam",), derive=quadratic_fields)
        },
        families={
            "quadratic": ("convex", "strongly_convex", "weakly_convex"),
            "logistic": ("mu = 0", "mu > 0"),
            "multinomial": ("3 classes, mu = 0", "3 classes, mu > 0"),
        },
        claimed="upper",
        instances=instances,
        prepare=prepare,
        evaluate=finish,
        claim=CLAIM,
        mutants=(
            Mutant(
                "gradient sign flipped: lam (prox(w) - w)",
                {"grad": lambda lam, w, t: lam[..., None] * (t - w)},
            ),
            Mutant(
                "gradient with 1/lam for lam: (w - prox(w)) / lam",
                {"grad": lambda lam, w, t: (w - t) / lam[..., None]},
            ),
            Mutant("L_F = lam / 2", {"L_F": lambda lam, L: lam / 2}),
            Mutant("mu_F = lam mu / (lam - mu)", {"mu_F": lambda lam, mu: lam * mu / (lam - mu)}),
            Mutant("mu_F = mu (no shrinkage by the envelope)", {"mu_F": lambda lam, mu: mu + 0 * lam}),
            Mutant(
                "mu_F = lam mu / (lam + 2 mu) (looser, so not attained)",
                {"mu_F": lambda lam, mu: lam * mu / (lam + 2 * mu)},
            ),
            Mutant("condition relaxed: lam > L instead of lam > 2L", {"condition": lambda lam, L: lam > L}),
            Mutant("inequality reversed: smoothness of F >= lam (f convex)", {"flip": (PARTS[1],)}),
        ),
    ),
)
