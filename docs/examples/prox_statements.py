"""A user's own statements, checked with `moreau check --module docs/examples/prox_statements.py`.

The statement (a lemma one might write in a paper): for f mu-strongly convex with
gradient ∇f, the proximal step moves w by at most ‖∇f(w)‖/(λ + μ):

    ‖prox_{f/λ}(w) − w‖ ≤ ‖∇f(w)‖ / (λ + μ).

Only the public API is used (moreau.analysis.api and moreau).
"""

import numpy as np

import moreau as mo
from moreau.analysis.api import (
    Mutant,
    Reading,
    Sides,
    Simplify,
    Statement,
    log_uniform,
    pep_classes,
    pep_parts,
    pep_row,
    pep_worst,
    quadratic_batch,
    quadratic_fields,
)

CLAIM = {"denominator": lambda lam, mu, L: lam + mu}


def instances(family, trials, rng):
    """Strongly convex quadratics (spectrum in [mu, L], mu attained), λ log-uniform, a random point w."""
    if family != "quadratic":
        raise ValueError(f"family must be 'quadratic' (got {family!r})")
    T = trials or 64
    batch = quadratic_batch(rng, T, 3, "strongly_convex")
    batch["lam"] = log_uniform(rng, 1e-2, 1e2, T)
    batch["w"] = rng.standard_normal((T, 3)) * batch["L"][:, None]
    return batch


def evaluate(batch, claim):
    q = mo.Quadratic(batch["A"], batch["b"])
    lam, w = batch["lam"], batch["w"]
    theta = np.asarray(mo.prox(q, w, lam))  # exact prox (closed form on quadratics)
    lhs = np.linalg.norm(theta - w, axis=-1)
    grad = np.linalg.norm(np.asarray(q.grad(w)), axis=-1)
    mu, L = batch["eig"][:, 0], batch["L"]
    rhs = grad / claim["denominator"](lam, mu, L)
    return {PART: Sides(lhs, rhs, "upper", constants={"mu, L": "exact (spectrum)"})}


PART = "prox displacement <= |grad f(w)|/(lam + mu)"


def pep_worst_case(st, batch, seed=0):
    """`moreau check --pep`: the worst case of |prox(w) - w| / |grad f(w)| over all L-smooth mu-strongly
    convex f (not only quadratics), at the parameters of the checker's worst instance, against 1/(lam + mu)."""
    i, ratio = pep_worst(pep_parts(st, batch)[PART])
    lam, mu, L = batch["lam"][i], batch["eig"][i, 0], batch["L"][i]
    return [
        pep_row(
            PART,
            "L-smooth mu-strongly convex",
            dict(lam=lam, mu=mu, L=L),
            pep_classes.prox_displacement(lam, mu, L),
            1 / (lam + mu),
            "upper",
            ratio,
            sharp="1/(lam + mu)",
        )
    ]


PROX_DISPLACEMENT = Statement(
    id="mine.prox_displacement",
    source="my paper, Lemma 1",
    paper="my-paper",
    latex=r"\|\mathrm{prox}_{f/\lambda}(w) - w\| \le \|\nabla f(w)\|/(\lambda + \mu)",
    text="the proximal step moves w by at most |grad f(w)|/(lam + mu) for mu-strongly convex f",
    assumptions=("f mu-strongly convex, L-smooth",),
    families={"quadratic": ("strongly convex, d = 3",)},
    claimed="upper",
    instances=instances,
    evaluate=evaluate,
    claim=CLAIM,
    mutants=(
        Mutant("lam + L for lam + mu", {"denominator": lambda lam, mu, L: lam + L}),
        Mutant("2 lam + mu", {"denominator": lambda lam, mu, L: 2 * lam + mu}),
    ),
    pep=pep_worst_case,
)

#: the same lemma as a colleague wrote it, with λ + L: it fails as printed; the fix is a reading
AS_WRITTEN = Statement(
    id="mine.prox_displacement_L",
    source="a colleague's draft, Lemma 1'",
    paper="my-paper",
    latex=r"\|\mathrm{prox}_{f/\lambda}(w) - w\| \le \|\nabla f(w)\|/(\lambda + L)",
    text="the same bound with lam + L (as written in the draft)",
    assumptions=("f mu-strongly convex, L-smooth",),
    families={"quadratic": ("strongly convex, d = 3",)},
    claimed="upper",
    instances=instances,
    evaluate=evaluate,
    claim={"denominator": lambda lam, mu, L: lam + L},
    readings=(
        Reading("λ + μ", {"denominator": lambda lam, mu, L: lam + mu}, why="the strong convexity modulus"),
    ),
    expect="fails",
    # what an instance is, so that a failing one is shrunk to a readable counterexample: A a symmetric matrix,
    # b and w vectors in its coordinates, lam a free number, eig and L derived from A; the claim is invariant
    # under rotations (A -> Q A Q^T, b -> Q b, w -> Q w); valid: strongly convex (mu > 0), lam > 0
    simplify={
        "quadratic": Simplify(
            matrix="A",
            vectors=("b", "w"),
            scalars=("lam",),
            derive=quadratic_fields,
            rotation_invariant=True,
            valid=lambda inst: (inst["eig"][:, 0] > 0) & (inst["lam"] > 0),
        )
    },
    mutants=(Mutant("2 lam + mu", {"denominator": lambda lam, mu, L: 2 * lam + mu}),),
)

STATEMENTS = (PROX_DISPLACEMENT, AS_WRITTEN)
