r"""Per statement: which PEP, at which parameters, beside which checker part.

Each builder takes the checker's statement, its quadratic-family batch (``moreau.analysis.runner``)
and the run's seed (for a seeded search only) and returns rows
``dict(part, cls, parameters, pep, paper, orientation, inst, sharp, note, ...)``:
``pep`` the class worst case (a :class:`moreau.analysis._pep_solve.Solve`-valued pair), ``paper`` the
paper's constant at the same parameters, ``orientation`` "upper" (the true quantity must stay
below the paper's: ratio = PEP/paper) or "lower" (a strong-convexity constant: ratio =
paper/PEP), ``inst`` the checker's LHS/RHS on its worst instance at those parameters.  The
parameters are those of the checker's worst applicable instance, so the instance's ratio and
the PEP's ratio are comparable number for number.  ``moreau.analysis.pep`` turns rows into records.
"""
from __future__ import annotations

import numpy as np

from . import _pep_classes as C
from . import fedprox_lemma2 as _lemma2
from . import pfedme_prop1 as _prop1
from ._core import Mutant
from ._pep_boxes import search_boxes
from ._pep_instances import coordinates, embed, fw_replay, quadratic_through, snap

__all__ = ["BUILDERS", "NOT_EXPRESSIBLE"]


def _worst(part):
    r = np.where(part.sides.applicable, part.ratio, -np.inf)
    i = int(np.argmax(r))
    return i, float(r[i])


def _parts(st, batch, changes=None, name="pep: one iterate"):
    res = st.run("quadratic", None, None, mutant=Mutant(name, changes) if changes else None, batch=batch)
    return {p.name: p for p in res.parts}


def _row(part, cls, params, pep, paper, orientation, inst, sharp="", note="", required=True, outside=False, **extra):
    """``required=False``: a supplementary solve (its failure is reported, not a failure of the run);
    ``outside=True``: parameters outside the statement's conditions (a threshold sweep)."""
    return dict(part=part, cls=cls, parameters={k: float(v) for k, v in params.items()}, pep=pep, paper=float(paper),
                orientation=orientation, inst=inst, sharp=sharp, note=note, required=required, outside=outside,
                **extra)


# -- envelope and prox constants ----------------------------------------------------------------
def pfedme_prop1(st, batch, seed=0):
    parts, names = _parts(st, batch), list(_prop1.PARTS)
    rows = []
    i, r = _worst(parts[names[1]])
    lam, L = batch["lam"][i], batch["L"][i]
    pep = C.envelope_smoothness(lam, L)
    rows.append(_row(names[1], "L-smooth convex", dict(lam=lam, L=L), pep, lam, "upper", r,
                     sharp="lam L/(lam + L)", feedback=_envelope_feedback(st, pep[1], lam, L, names[1])))
    rows.append(_row(names[1], "convex (nonsmooth allowed)", dict(lam=lam), C.envelope_smoothness(lam, cls="convex"),
                     lam, "upper", r, note="the paper's class for L_F = lam: any convex f; the quadratic instances "
                                           "are L-smooth, so they reach L/(lam + L) of it"))
    i, r = _worst(parts[names[2]])
    lam, L = batch["lam"][i], batch["L"][i]
    rows.append(_row(names[2], "L-smooth (weakly convex)", dict(lam=lam, L=L),
                     C.envelope_smoothness(lam, L, cls="weakly_convex"), lam, "upper", r, sharp="lam L/(lam - L)"))
    where = {1.5: ", violates lam > 2L", 2.0: ", the threshold itself"}
    for k in (1.5, 2.0, 3.0):  # the condition lam > 2L over the whole class (L = 1)
        rows.append(_row(names[2], "L-smooth (weakly convex)", dict(lam=k, L=1.0),
                         C.envelope_smoothness(k, 1.0, cls="weakly_convex"), k, "upper", None, sharp="lam L/(lam - L)",
                         note=f"threshold sweep: lam = {k:g} L" + where.get(k, ""), outside=k <= 2))
    i, r = _worst(parts[names[3]])
    lam, mu, L = batch["lam"][i], batch["eig"][i, 0], batch["L"][i]
    rows.append(_row(names[3], "L-smooth mu-strongly convex", dict(lam=lam, mu=mu, L=L),
                     C.envelope_strong_convexity(lam, mu, L), lam * mu / (lam + mu), "lower", r))
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
    one = dict(A=A[None], b=bb[None], eig=a[None], L=np.array([L]), lam=np.array([lam]), w=np.zeros((1, A.shape[0])))
    r = float(_parts(st, one)[part].ratio[0])
    return {"status": "quadratic", "dimension": int(np.sum(np.abs(eig) > 1e-6 * L)), "residual": res,
            "checker_ratio": r}


def fedprox_lemma2(st, batch, seed=0):
    parts, names = _parts(st, batch), list(_lemma2.PARTS)
    fns = ((C.envelope_strong_convexity, "lower", lambda lam, mu, L: lam * mu / (lam + mu), ""),
           (C.envelope_smoothness, "upper", lambda lam, mu, L: lam * L / (lam + L), ""),
           (C.h_strong_convexity, "lower", lambda lam, mu, L: mu + lam, ""),
           (C.h_smoothness, "upper", lambda lam, mu, L: L + lam, ""),
           (C.prox_lipschitz, "upper", lambda lam, mu, L: lam / (lam + mu), ""))
    rows = []
    for name, (fn, orient, paper, sharp) in zip(names, fns):
        i, r = _worst(parts[name])
        lam, mu, L = batch["lam"][i], batch["eig"][i, 0], batch["eig"][i, -1]
        args = {C.envelope_strong_convexity: (lam, mu, L), C.envelope_smoothness: (lam, L, mu),
                C.h_strong_convexity: (lam, mu, L), C.h_smoothness: (lam, L, mu), C.prox_lipschitz: (lam, mu, L)}[fn]
        rows.append(_row(name, "L-smooth mu-strongly convex", dict(lam=lam, mu=mu, L=L), fn(*args), paper(lam, mu, L),
                         orient, r))
    return rows


# -- GD ------------------------------------------------------------------------------------------
def gd_strongly_convex(st, batch, seed=0):
    (name,) = _parts(st, batch)
    rows = []
    for t0 in (1, 2, 5):
        rate = lambda mu, L, eta, t, t0=t0: np.where(t == t0, (1 - mu * eta) ** t, np.inf)  # noqa: E731
        i, r = _worst(_parts(st, batch, {"rate": rate})[name])
        mu, L, eta = batch["mu"][i], batch["L"][i], batch["eta"][i]
        pep = C.gd_strongly_convex(mu, L, eta, t0)
        rows.append(_row(name, "L-smooth mu-strongly convex", dict(mu=mu, L=L, eta=eta, t=t0), pep,
                         (1 - mu * eta) ** t0, "upper", r, sharp="(1 - mu eta)^(2t)",
                         note=f"closed form (1 - mu eta)^(2t) = {(1 - mu * eta) ** (2 * t0):.10g}",
                         feedback=_gd_feedback(st, pep[1], mu, L, eta, t0, name, rate)))
    mu, L, eta = 0.2, 1.0, 1.95  # outside eta <= 1/L: the class worst case max((1 - mu eta)^2, (1 - L eta)^2)
    rows.append(_row(name, "L-smooth mu-strongly convex", dict(mu=mu, L=L, eta=eta, t=1),
                     C.gd_strongly_convex(mu, L, eta, 1), 1 - mu * eta, "upper", None, outside=True,
                     note="eta = 1.95/L violates eta <= 1/L; closed form max((1 - mu eta)^2, (1 - L eta)^2) = "
                          f"{max((1 - mu * eta) ** 2, (1 - L * eta) ** 2):.10g}"))
    return rows


def _gd_feedback(st, s, mu, L, eta, t0, name, rate):
    f = s.problem.list_of_functions[0]
    X = coordinates([p for p, _, _ in f.list_of_points])
    G = coordinates([g for _, g, _ in f.list_of_points])
    q = quadratic_through(X, G)
    if q is None:
        return {"status": "not quadratic"}
    Q, b, res, eig = q
    Q, moved = snap(Q, (0.0, mu, L))
    xs = X[0]  # the stationary point is declared first
    A, _, (z, x0), a = embed(Q, b, [xs, X[1]], mu, L)
    one = dict(A=A[None], b=(A @ z)[None], z=z[None], x0=x0[None], eta=np.array([eta]), L=np.array([L]),
               mu=np.array([mu]))
    r = float(_parts(st, one, {"rate": rate})[name].ratio[0])
    return {"status": "quadratic", "dimension": int(np.sum(np.abs(eig) > 1e-6 * L)), "residual": res,
            "eigenvalues_snapped_by": moved, "checker_ratio": r}


def gd_nonconvex(st, batch, seed=0):
    names = list(_parts(st, batch))
    rows = []
    for T0 in (1, 2, 5):
        bound = lambda gap, eta, T, T0=T0: np.where(T == T0, 2 * gap / (eta * T), np.inf)  # noqa: E731
        parts = _parts(st, batch, {"bound": bound})
        for name, note in ((names[1], "PEP of exactly this quantity"),
                           (names[0], "PEP with F(x^0) - F(x^T) <= 1: bounds the F* form from above")):
            i, r = _worst(parts[name])
            L, eta = batch["L"][i], batch["eta"][i]
            v, s = C.gd_nonconvex(L, eta, T0)
            rows.append(_row(name, "L-smooth (nonconvex)", dict(L=L, eta=eta, T=T0), (v, s), 2 / (eta * T0), "upper",
                             r, note=note))
    for eta in (0.5, 0.2):  # steps below 1/L (L = 1): the sharp constant, no instance at these parameters
        v, s = C.gd_nonconvex(1.0, eta, 3)
        rows.append(_row(names[1], "L-smooth (nonconvex)", dict(L=1.0, eta=eta, T=3), (v, s), 2 / (eta * 3), "upper",
                         None, sharp="(1/T) sum ||grad||^2 per unit F(x^0) - F(x^T)",
                         note=f"the descent lemma telescoped gives 1/(2 - L eta) = {1 / (2 - eta):.6g} of the paper's "
                              "constant"))
    return rows


# -- Frank-Wolfe ---------------------------------------------------------------------------------
FW_T = (1, 2, 3, 5, 9, 10)


def fw_convex(st, batch, seed=0):
    from .runner import rng_for
    name = list(_parts(st, batch))[0]
    rows = []
    for t0 in FW_T:
        bound = lambda L, R, t, t0=t0: np.where(t == t0, 2 * L * R**2 / (t + 2), np.inf)  # noqa: E731
        i, r = _worst(_parts(st, batch, {"bound": bound})[name])
        params = dict(L=1.0, R=1.0, t=t0)
        v, s, tr = C.frank_wolfe(1.0, 1.0, t0)
        rows.append(_row(name, "L-smooth convex on a convex set of diameter R", params, (v, s), 2 / (t0 + 2), "upper",
                         r, note="ratio scale-free (F - F* scales as L R^2): L = R = 1; instances: boxes, balls, simplices, l1 balls",
                         sharp="(F(x^t) - F*)/(L R^2)",
                         feedback=_fw_feedback(tr, t0, quadratic=False)))
        box_r, box = search_boxes(st, t0, rng_for(seed, st.id, "quadratic", f"pep box search t={t0}"))
        box = {"ratio": box_r, "dimension": int(box["A"].shape[-1]), "scored_by": "the checker",
               **{k: np.asarray(v)[0].tolist() for k, v in box.items()}}
        try:
            vq, sq, trq = C.frank_wolfe(1.0, 1.0, t0, cls="quadratic", accept=("optimal", "optimal_inaccurate"))
            pep_q, qnote, fb = (vq, sq), "", _fw_feedback(trq, t0, quadratic=True)
        except Exception as e:  # a failed solve is reported, never replaced
            pep_q, qnote, fb = (None, e), f"solve failed: {e}", {}
        fb["box_search"] = box
        if not qnote:
            qnote = "the best any quadratic instance can do, on any convex set of diameter R, in any dimension"
            if vq < v * (1 - 1e-4):  # 1e-4: the gap accepted for an optimal_inaccurate solve
                qnote += (f"; below the class worst case ({vq:.6g} < {v:.6g}): no quadratic instance reaches it at "
                          f"t = {t0}, the class's worst function is not quadratic")
        rows.append(_row(name, "convex quadratics on a convex set of diameter R", params, pep_q, 2 / (t0 + 2),
                         "upper", r, note=qnote, feedback=fb, required=False, sharp="(F(x^t) - F*)/(L R^2)"))
    return rows


def _fw_feedback(tr, t0, quadratic):
    """The FW worst case as a quadratic on the polytope conv(x^0, s^0, ..., x*), replayed in numpy."""
    f = tr["f"]
    X = coordinates([p for p, _, _ in f.list_of_points])
    G = coordinates([g for _, g, _ in f.list_of_points])
    q = quadratic_through(X, G)
    if q is None:
        return {"status": "not quadratic", "note": "no convex quadratic through the worst case's points"}
    Q, b, res, eig = q
    if not quadratic:  # the smooth convex worst case: say how far from a quadratic it is
        return {"status": "quadratic" if res < 1e-3 else "not quadratic", "residual": res,
                "max_curvature": float(eig.max())}
    V = coordinates([tr["x"][0]] + tr["s"] + [tr["xs"]])
    R = float(np.max(np.linalg.norm(V[:, None] - V[None], axis=-1)))
    L = float(eig.max())
    gap, excess, opt = fw_replay(Q, b, V, V[0], t0, list(range(1, t0 + 1)))
    return {"status": "quadratic on a polytope", "dimension": int(np.sum(eig > 1e-6 * L)), "vertices": len(V),
            "residual": res, "L": L, "R": R, "x_star_fw_gap": opt, "lmo_tie_excess": excess,
            "replay_ratio": gap / (2 * L * R**2 / (t0 + 2))}


# -- FedProx Algorithm 1 -------------------------------------------------------------------------
FEDPROX_K = (2, 8)  # the checker's two smallest local-step groups: SDPs of a few dozen points


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
            v, s = C.fedprox_rounds(p["lam"], p["mu"], p["L"], p["gamma"], p["eta"], K, 1, m=m,
                                    accept=("optimal", "optimal_inaccurate"))
        except Exception as e:  # reported as a failed solve, never replaced
            rows.append(_row(name, f"L-smooth mu-strongly convex, m = {m} clients", dict(p, K=K, N=1, m=m), (None, e),
                             rho, "upper", float(parts[name].ratio[i]), kind="rate bound", note=f"solve failed: {e}"))
            continue
        dist = f"distance reading: sqrt(c) = {v ** 0.5:.6g} {'<=' if v ** 0.5 <= rho else '>'} rho = {rho:.6g}. "
        rows.append(_row(
            name, f"L-smooth mu-strongly convex, m = {m} clients", dict(p, K=K, N=1, m=m), (v, s), rho, "upper",
            float(parts[name].ratio[i]), kind="rate bound",
            note=dist + "PEP value c: the worst one-round factor of ||w - w~||^2 + sum_i ||theta_i - w~_i||^2 over "
                        "the class (K local steps, (w~, w~_i) the FedProx optimum). Every round is an instance of "
                        "this PEP, so the squared error contracts by c per round for every function of the class: "
                        "c <= rho proves the squared-distance reading over the class, sqrt(c) <= rho the distance "
                        "reading (upper bounds on the class rate, not its exact value); the checker's ratio is "
                        "sr(M)^2/rho on quadratic clients at the same parameters"))
    return rows


BUILDERS = {"pfedme.prop1": pfedme_prop1, "fedprox.lemma2": fedprox_lemma2, "gd.strongly_convex": gd_strongly_convex,
            "gd.nonconvex": gd_nonconvex, "fw.convex": fw_convex, "fedprox.thm2": fedprox_thm2}

#: catalogue statements without a class worst case here, and why
NOT_EXPRESSIBLE = {
    "pfedme.lemma1": "statistical (data heterogeneity of sampled clients), not a first-order statement",
    "pfedme.lemma2": "statistical (mini-batch variance), not a first-order statement",
    "fedprox.lemma1": "about the FedProx optimum of a given data set, not a method over a class",
    "fedprox.lemma3": "an identity of the Moreau envelope (exact on every instance), nothing to maximise",
    "perfedavg.lemma4_2": "needs a Hessian-Lipschitz class (the MAML step uses the Hessian), not in PEPit",
    "perfedavg.lemma4_4": "a variance bound over sampled data, not a first-order statement",
    "fedprox.thm1": "a statistical rate over sampled data sets, not a first-order statement",
    "fedprox.cor1": "the shape in lambda of Theorem 2's round and gradient counts (O(.)), no single worst case",
    "pfedme.thm1": "stochastic (mini-batches, client sampling) with O(.) constants: no closed worst case to compare",
    "pfedme.thm1b": "stochastic (mini-batches, client sampling) with O(.) constants: no closed worst case to compare",
}
