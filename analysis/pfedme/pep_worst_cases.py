r"""Class worst cases (PEP) of pFedMe's statements, beside the checker's instances.

``PEP`` maps a statement id to its builder (rows made with ``moreau.analysis.pep.rows``);
``PEP_NOT_APPLICABLE`` says why the other statements have no class worst case here.  Collected
by ``moreau.analysis.engine.registry``; run by ``moreau check --pep``.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.pep import classes as C
from moreau.analysis.pep.instances import coordinates, embed, quadratic_through
from moreau.analysis.pep.rows import row as _row
from moreau.analysis.pep.rows import run_parts as _parts
from moreau.analysis.pep.rows import worst as _worst
from moreau.analysis.pfedme import prop1 as _prop1

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]


def pfedme_prop1(st, batch, seed=0):
    parts, names = _parts(st, batch), list(_prop1.PARTS)
    rows = []
    i, r = _worst(parts[names[1]])
    lam, L = batch["lam"][i], batch["L"][i]
    pep = C.envelope_smoothness(lam, L)
    rows.append(
        _row(
            names[1],
            "L-smooth convex",
            dict(lam=lam, L=L),
            pep,
            lam,
            "upper",
            r,
            sharp="lam L/(lam + L)",
            feedback=_envelope_feedback(st, pep[1], lam, L, names[1]),
        )
    )
    rows.append(
        _row(
            names[1],
            "convex (nonsmooth allowed)",
            dict(lam=lam),
            C.envelope_smoothness(lam, cls="convex"),
            lam,
            "upper",
            r,
            note="the paper's class for L_F = lam: any convex f; the quadratic instances "
            "are L-smooth, so they reach L/(lam + L) of it",
        )
    )
    i, r = _worst(parts[names[2]])
    lam, L = batch["lam"][i], batch["L"][i]
    rows.append(
        _row(
            names[2],
            "L-smooth (weakly convex)",
            dict(lam=lam, L=L),
            C.envelope_smoothness(lam, L, cls="weakly_convex"),
            lam,
            "upper",
            r,
            sharp="lam L/(lam - L)",
        )
    )
    where = {1.5: ", violates lam > 2L", 2.0: ", the threshold itself"}
    for k in (1.5, 2.0, 3.0):  # the condition lam > 2L over the whole class (L = 1)
        rows.append(
            _row(
                names[2],
                "L-smooth (weakly convex)",
                dict(lam=k, L=1.0),
                C.envelope_smoothness(k, 1.0, cls="weakly_convex"),
                k,
                "upper",
                None,
                sharp="lam L/(lam - L)",
                note=f"threshold sweep: lam = {k:g} L" + where.get(k, ""),
                outside=k <= 2,
            )
        )
    i, r = _worst(parts[names[3]])
    lam, mu, L = batch["lam"][i], batch["eig"][i, 0], batch["L"][i]
    rows.append(
        _row(
            names[3],
            "L-smooth mu-strongly convex",
            dict(lam=lam, mu=mu, L=L),
            C.envelope_strong_convexity(lam, mu, L),
            lam * mu / (lam + mu),
            "lower",
            r,
        )
    )
    return rows


def _envelope_feedback(st, s, lam, L, part):
    """The L_F worst case as a quadratic instance (from the PEP's points), run through the checker."""
    f = s.problem.list_of_functions[0]
    X = coordinates([p for p, _, _ in f.list_of_points])
    G = coordinates([g for _, g, _ in f.list_of_points])
    q = quadratic_through(X, G)
    if q is None:
        return {"status": "not quadratic", "note": "the PEP's data admit no convex quadratic"}
    Q, b, res, eig = q
    A, bb, _, a = embed(Q, b, [], 0.0, L)
    one = dict(
        A=A[None], b=bb[None], eig=a[None], L=np.array([L]), lam=np.array([lam]), w=np.zeros((1, A.shape[0]))
    )
    r = float(_parts(st, one)[part].ratio[0])
    return {
        "status": "quadratic",
        "dimension": int(np.sum(np.abs(eig) > 1e-6 * L)),
        "residual": res,
        "checker_ratio": r,
    }


PEP = {"pfedme.prop1": pfedme_prop1}

#: statements without a class worst case here, and why
PEP_NOT_APPLICABLE = {
    "pfedme.lemma1": "statistical (data heterogeneity of sampled clients), not a first-order statement",
    "pfedme.lemma2": "statistical (mini-batch variance), not a first-order statement",
    "pfedme.thm1": (
        "stochastic (mini-batches, client sampling) with O(.) constants: no closed worst case to compare"
    ),
    "pfedme.thm1b": (
        "stochastic (mini-batches, client sampling) with O(.) constants: no closed worst case to compare"
    ),
    "pfedme.thm2": (
        "nonconvex, stochastic (mini-batches, client sampling) with O(.) constants: no closed worst case"
    ),
    "pfedme.cor1": ("exponents of Theorem 1's terms under a choice of beta: a shape, no single worst case"),
    "pfedme.cor2": ("exponents of Theorem 2's terms under a choice of beta: a shape, no single worst case"),
}
