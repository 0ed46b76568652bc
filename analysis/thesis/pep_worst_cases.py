r"""Class worst cases (PEP) of the thesis, chapter 2's statements, beside the checker's instances.

``PEP`` maps a statement id to its builder (rows made with ``moreau.analysis.pep.rows``);
``PEP_NOT_APPLICABLE`` says why the other statements have no class worst case here.  Collected
by ``moreau.analysis.engine.registry``; run by ``moreau check --pep``.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.pep import classes as C
from moreau.analysis.pep.instances import coordinates, embed, fw_replay, quadratic_through, snap
from moreau.analysis.pep.rows import row as _row
from moreau.analysis.pep.rows import run_parts as _parts
from moreau.analysis.pep.rows import worst as _worst
from moreau.analysis.thesis.fw.pep_boxes import search_boxes

__all__ = ["PEP", "PEP_NOT_APPLICABLE"]

FW_T = (1, 2, 3, 5, 9, 10)


def gd_strongly_convex(st, batch, seed=0):
    (name,) = _parts(st, batch)
    rows = []
    for t0 in (1, 2, 5):
        rate = lambda mu, L, eta, t, t0=t0: np.where(t == t0, (1 - mu * eta) ** t, np.inf)  # noqa: E731
        i, r = _worst(_parts(st, batch, {"rate": rate})[name])
        mu, L, eta = batch["mu"][i], batch["L"][i], batch["eta"][i]
        pep = C.gd_strongly_convex(mu, L, eta, t0)
        rows.append(
            _row(
                name,
                "L-smooth mu-strongly convex",
                dict(mu=mu, L=L, eta=eta, t=t0),
                pep,
                (1 - mu * eta) ** t0,
                "upper",
                r,
                sharp="(1 - mu eta)^(2t)",
                note=f"closed form (1 - mu eta)^(2t) = {(1 - mu * eta) ** (2 * t0):.10g}",
                feedback=_gd_feedback(st, pep[1], mu, L, eta, t0, name, rate),
            )
        )
    mu, L, eta = 0.2, 1.0, 1.95  # outside eta <= 1/L: the class worst case max((1 - mu eta)^2, (1 - L eta)^2)
    rows.append(
        _row(
            name,
            "L-smooth mu-strongly convex",
            dict(mu=mu, L=L, eta=eta, t=1),
            C.gd_strongly_convex(mu, L, eta, 1),
            1 - mu * eta,
            "upper",
            None,
            outside=True,
            note="eta = 1.95/L violates eta <= 1/L; closed form max((1 - mu eta)^2, (1 - L eta)^2) = "
            f"{max((1 - mu * eta) ** 2, (1 - L * eta) ** 2):.10g}",
        )
    )
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
    one = dict(
        A=A[None],
        b=(A @ z)[None],
        z=z[None],
        x0=x0[None],
        eta=np.array([eta]),
        L=np.array([L]),
        mu=np.array([mu]),
    )
    r = float(_parts(st, one, {"rate": rate})[name].ratio[0])
    return {
        "status": "quadratic",
        "dimension": int(np.sum(np.abs(eig) > 1e-6 * L)),
        "residual": res,
        "eigenvalues_snapped_by": moved,
        "checker_ratio": r,
    }


def gd_nonconvex(st, batch, seed=0):
    names = list(_parts(st, batch))
    rows = []
    for T0 in (1, 2, 5):
        bound = lambda gap, eta, T, T0=T0: np.where(T == T0, 2 * gap / (eta * T), np.inf)  # noqa: E731
        parts = _parts(st, batch, {"bound": bound})
        for name, note in (
            (names[1], "PEP of exactly this quantity"),
            (names[0], "PEP with F(x^0) - F(x^T) <= 1: bounds the F* form from above"),
        ):
            i, r = _worst(parts[name])
            L, eta = batch["L"][i], batch["eta"][i]
            v, s = C.gd_nonconvex(L, eta, T0)
            rows.append(
                _row(
                    name,
                    "L-smooth (nonconvex)",
                    dict(L=L, eta=eta, T=T0),
                    (v, s),
                    2 / (eta * T0),
                    "upper",
                    r,
                    note=note,
                )
            )
    for eta in (0.5, 0.2):  # steps below 1/L (L = 1): the sharp constant, no instance at these parameters
        v, s = C.gd_nonconvex(1.0, eta, 3)
        rows.append(
            _row(
                names[1],
                "L-smooth (nonconvex)",
                dict(L=1.0, eta=eta, T=3),
                (v, s),
                2 / (eta * 3),
                "upper",
                None,
                sharp="(1/T) sum ||grad||^2 per unit F(x^0) - F(x^T)",
                note=f"the descent lemma telescoped gives 1/(2 - L eta) = {1 / (2 - eta):.6g} of the paper's "
                "constant",
            )
        )
    return rows


def fw_convex(st, batch, seed=0):
    from moreau.analysis.engine.runner import rng_for

    name = list(_parts(st, batch))[0]
    rows = []
    for t0 in FW_T:
        bound = lambda L, R, t, t0=t0: np.where(t == t0, 2 * L * R**2 / (t + 2), np.inf)  # noqa: E731
        i, r = _worst(_parts(st, batch, {"bound": bound})[name])
        params = dict(L=1.0, R=1.0, t=t0)
        v, s, tr = C.frank_wolfe(1.0, 1.0, t0)
        rows.append(
            _row(
                name,
                "L-smooth convex on a convex set of diameter R",
                params,
                (v, s),
                2 / (t0 + 2),
                "upper",
                r,
                note="ratio scale-free (F - F* scales as L R^2): L = R = 1; "
                "instances: boxes, balls, simplices, l1 balls",
                sharp="(F(x^t) - F*)/(L R^2)",
                feedback=_fw_feedback(tr, t0, quadratic=False),
            )
        )
        box_r, box = search_boxes(st, t0, rng_for(seed, st.id, "quadratic", f"pep box search t={t0}"))
        box = {
            "ratio": box_r,
            "dimension": int(box["A"].shape[-1]),
            "scored_by": "the checker",
            **{k: np.asarray(v)[0].tolist() for k, v in box.items()},
        }
        try:
            vq, sq, trq = C.frank_wolfe(
                1.0, 1.0, t0, cls="quadratic", accept=("optimal", "optimal_inaccurate")
            )
            pep_q, qnote, fb = (vq, sq), "", _fw_feedback(trq, t0, quadratic=True)
        except Exception as e:  # a failed solve is reported, never replaced
            pep_q, qnote, fb = (None, e), f"solve failed: {e}", {}
        fb["box_search"] = box
        if not qnote:
            qnote = (
                "the best any quadratic instance can do, on any convex set of diameter R, in any dimension"
            )
            if vq < v * (1 - 1e-4):  # 1e-4: the gap accepted for an optimal_inaccurate solve
                qnote += (
                    f"; below the class worst case ({vq:.6g} < {v:.6g}): no quadratic instance reaches it at "
                    f"t = {t0}, the class's worst function is not quadratic"
                )
        rows.append(
            _row(
                name,
                "convex quadratics on a convex set of diameter R",
                params,
                pep_q,
                2 / (t0 + 2),
                "upper",
                r,
                note=qnote,
                feedback=fb,
                required=False,
                sharp="(F(x^t) - F*)/(L R^2)",
            )
        )
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
        return {
            "status": "quadratic" if res < 1e-3 else "not quadratic",
            "residual": res,
            "max_curvature": float(eig.max()),
        }
    V = coordinates([tr["x"][0]] + tr["s"] + [tr["xs"]])
    R = float(np.max(np.linalg.norm(V[:, None] - V[None], axis=-1)))
    L = float(eig.max())
    gap, excess, opt = fw_replay(Q, b, V, V[0], t0, list(range(1, t0 + 1)))
    return {
        "status": "quadratic on a polytope",
        "dimension": int(np.sum(eig > 1e-6 * L)),
        "vertices": len(V),
        "residual": res,
        "L": L,
        "R": R,
        "x_star_fw_gap": opt,
        "lmo_tie_excess": excess,
        "replay_ratio": gap / (2 * L * R**2 / (t0 + 2)),
    }


PEP = {"gd.strongly_convex": gd_strongly_convex, "gd.nonconvex": gd_nonconvex, "fw.convex": fw_convex}

#: statements without a class worst case here, and why
PEP_NOT_APPLICABLE = {
    "sgd.strongly_convex": (
        "stochastic gradients with (M, sigma^2)-bounded noise: not a deterministic PEPit class"
    ),
    "sgd.nonconvex": (
        "stochastic gradients with (M, sigma^2)-bounded noise: not a deterministic PEPit class"
    ),
    "fw.nonconvex": (
        "the Frank-Wolfe gap of a nonconvex smooth function over a set: the class worst case needs a "
        "nonconvex interpolation PEPit does not offer with a linear-optimisation step"
    ),
}
