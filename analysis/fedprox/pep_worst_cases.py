r"""Class worst cases (PEP) of the FedProx analysis's statements, beside the checker's instances.

``PEP`` maps a statement id to its builder (rows made with ``moreau.analysis.pep.rows``);
``PEP_NOT_APPLICABLE`` says why the other statements have no class worst case here.  Collected
by ``moreau.analysis.engine.registry``; run by ``moreau check --pep``.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.fedprox import lemma2 as _lemma2
from moreau.analysis.pep import classes as C
from moreau.analysis.pep.rows import row as _row
from moreau.analysis.pep.rows import run_parts as _parts
from moreau.analysis.pep.rows import worst as _worst

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]

FEDPROX_K = (2, 8)  # the checker's two smallest local-step groups: SDPs of a few dozen points


def fedprox_lemma2(st, batch, seed=0):
    parts, names = _parts(st, batch), list(_lemma2.PARTS)
    fns = (
        (C.envelope_strong_convexity, "lower", lambda lam, mu, L: lam * mu / (lam + mu), ""),
        (C.envelope_smoothness, "upper", lambda lam, mu, L: lam * L / (lam + L), ""),
        (C.h_strong_convexity, "lower", lambda lam, mu, L: mu + lam, ""),
        (C.h_smoothness, "upper", lambda lam, mu, L: L + lam, ""),
        (C.prox_lipschitz, "upper", lambda lam, mu, L: lam / (lam + mu), ""),
    )
    rows = []
    for name, (fn, orient, paper, _sharp) in zip(names, fns, strict=True):
        i, r = _worst(parts[name])
        lam, mu, L = batch["lam"][i], batch["eig"][i, 0], batch["eig"][i, -1]
        args = {
            C.envelope_strong_convexity: (lam, mu, L),
            C.envelope_smoothness: (lam, L, mu),
            C.h_strong_convexity: (lam, mu, L),
            C.h_smoothness: (lam, L, mu),
            C.prox_lipschitz: (lam, mu, L),
        }[fn]
        rows.append(
            _row(
                name,
                "L-smooth mu-strongly convex",
                dict(lam=lam, mu=mu, L=L),
                fn(*args),
                paper(lam, mu, L),
                orient,
                r,
            )
        )
    return rows


def fedprox_thm2(st, batch, seed=0):
    parts = _parts(st, batch)
    name = [n for n in parts if n.startswith("squared")][0]
    m = int(batch["A"].shape[1])  # the checker's number of clients
    rows = []
    for K in FEDPROX_K:
        ok = parts[name].sides.applicable & (batch["K"] == K)
        if not ok.any():
            continue
        i = int(np.argmax(np.where(ok, parts[name].ratio, -np.inf)))
        p = {k: float(batch[k][i]) for k in ("lam", "mu", "L", "gamma", "eta")}
        mu_g = p["lam"] * p["mu"] / (p["lam"] + p["mu"])
        rho = 1 - p["gamma"] * mu_g / 2 - (p["gamma"] * mu_g) ** 2 / 2
        try:
            v, s = C.fedprox_rounds(
                p["lam"],
                p["mu"],
                p["L"],
                p["gamma"],
                p["eta"],
                K,
                1,
                m=m,
                accept=("optimal", "optimal_inaccurate"),
            )
        except Exception as e:  # reported as a failed solve, never replaced
            rows.append(
                _row(
                    name,
                    f"L-smooth mu-strongly convex, m = {m} clients",
                    dict(p, K=K, N=1, m=m),
                    (None, e),
                    rho,
                    "upper",
                    float(parts[name].ratio[i]),
                    kind="rate bound",
                    note=f"solve failed: {e}",
                )
            )
            continue
        dist = f"distance reading: sqrt(c) = {v**0.5:.6g} {'<=' if v**0.5 <= rho else '>'} rho = {rho:.6g}. "
        rows.append(
            _row(
                name,
                f"L-smooth mu-strongly convex, m = {m} clients",
                dict(p, K=K, N=1, m=m),
                (v, s),
                rho,
                "upper",
                float(parts[name].ratio[i]),
                kind="rate bound",
                note=dist
                + "PEP value c: the worst one-round factor of ||w - w~||^2 + sum_i ||theta_i - w~_i||^2 over "
                "the class (K local steps, (w~, w~_i) the FedProx optimum). Every round is an instance of "
                "this PEP, so the squared error contracts by c per round for every function of the class: "
                "c <= rho proves the squared-distance reading over the class, sqrt(c) <= rho the distance "
                "reading (upper bounds on the class rate, not its exact value); the checker's ratio is "
                "sr(M)^2/rho on quadratic clients at the same parameters",
            )
        )
    return rows


PEP = {"fedprox.lemma2": fedprox_lemma2, "fedprox.thm2": fedprox_thm2}

#: statements without a class worst case here, and why
PEP_NOT_APPLICABLE = {
    "fedprox.lemma1": "about the FedProx optimum of a given data set, not a method over a class",
    "fedprox.lemma3": ("an identity of the Moreau envelope (exact on every instance), nothing to maximise"),
    "fedprox.thm1": "a statistical rate over sampled data sets, not a first-order statement",
    "fedprox.thm1_remark": "a comparison of statistical errors over sampled data sets, not a first-order statement",
    "fedprox.cor1": (
        "the shape in lambda of Theorem 2's round and gradient counts (O(.)), no single worst case"
    ),
}
