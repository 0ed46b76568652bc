r"""pflmf.bm — thesis §4.1, eqs. (4.1)-(4.2): the Burer–Monteiro form reaches the rank-r optimum.

Statement (thesis §4.1): problem (4.1), :math:`\min_{\mathrm{rank} X \le r} \frac1n\sum_i f_i(x_i)`,
is solved through its factorised form (4.2), :math:`\min_{U, V} \frac1n\sum_i f_i(Uv_i)`, by
gradient steps (Algorithm 1).  (4.2) has the optimal value of (4.1) (every rank-r X is a UV^T);
what the method relies on beyond that, and what is checked here, is the landscape: from random
starts the alternating gradient method reaches the *global* rank-r value, with no spurious local
minimum on the way, and its models are the rank-r optimum itself.  On the certified clients
:math:`f_i = \tfrac{s_i}2(x - c_i)^\top A(x - c_i)` that optimum is Eckart–Young's:
:math:`X^\star = A^{-1/2}[M]_r W^{-1/2}`, :math:`M = A^{1/2}CW^{1/2}` (``moreau.fl.low_rank_optimum``),
with value :math:`\tfrac12\sum_{k>r}\sigma_k(M)^2` above LocalTrain's (which is 0 here).

Assumptions: f_i as above (so (4.2) is the unweighted low-rank approximation of M after the change
of variables U' = A^{1/2}U, V' = W^{1/2}V, whose local minima are global: Baldi & Hornik 1989);
σ_r > σ_{r+1} (unique optimum; drawn with σ_{k+1}/σ_k in [0.5, 0.8]); A's spectrum in [1, 2];
steps η_v = 0.6/(L σ_1), η_u = 0.6/(a_d σ_1), 1000 rounds, full participation, exact gradients.

Instances (d = 4, m = 6, ``moreau.analysis.pflmf.clients``): 6 problems per rank r ∈ {1, 2, 3, 4}
(r = 4 = min(d, m): no constraint, LocalTrain), each from 4 random starts at the solution's scale;
τ = 1 local v-step for r = 1, τ = 5 otherwise.  Per problem the start with the largest error.
(Fewer rounds leave a few slow runs unconverged — a smallest kept σ_r ≈ 0.15 σ_1 with a badly scaled
start — not at a spurious point.)

Sides: (i) the value, |F(U_T, V_T) − ½Σ_{k>r}σ_k²| against 1e-9 σ_1² (an identity at
convergence: the rounding of F is ~1e-16 σ_1²); (ii) the models, ‖X_T − X*‖_F/‖C‖_F against 1e-5,
X* built from the instance's own SVD (never from ``low_rank_optimum``): the value error is
quadratic in the distance, hence the looser tolerance.

Non-proportional group (6 problems, r = 1, ``moreau.analysis.pflmf.landscape``): the printed claim says
nothing about the clients' Hessians, so the family also draws clients whose Hessians differ, each soft
along its own centre and stiff across it (A_i = s_i Q_i diag(1, κ, κ, κ) Q_iᵀ, Q_i e_1 = c_i/‖c_i‖, κ in
[4, 30]).  The global value of (4.1) is certified by exhaustive search: for r = 1, min_V F(u, V) = g(u)
in closed form, a function of the direction only, minimised over a grid of the unit sphere and refined
by BFGS from the best grid points (on the proportional rank-1 problems: Eckart–Young's value).  2000
rounds, τ = 5.  Side (iii): max over starts of (F(U_T, V_T) − F*)/F(0) against 1e-9; each end point is
tested (‖∇F‖ ≤ 1e-7 F(0), Hessian eigenvalues ≥ −1e-7 F(0): the scaling u → αu, v → v/α leaves one 0)
and the run prints how many runs end in a spurious local minimum (stationary, PSD, value above F*).

Claimed: an identity (the optimum of (4.2) is Eckart–Young's and Algorithm 1 finds it from every
start).  What the check shows: fails as printed (origin: reconstruction).  With proportional Hessians
it holds, to ~1e-12 in value from every start, and no run ends at a spurious point; with
non-proportional Hessians g has several wells and Algorithm 1 ends in a spurious local minimum from
many random starts (seed 0: 14 of 24 runs; every one stationary with a PSD Hessian).  The minimal
instance (d = 2, m = 2, ``_minimal_instance``) has an exact spurious minimum F = 1/2 against the global
1/4.  Reading "proportional Hessians" (A_i = s_i A, a missing hypothesis): holds.
"""

from __future__ import annotations

import numpy as np

import moreau as mo
from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement
from moreau.analysis.engine.instances import per_group, trials_in_groups
from moreau.analysis.pflmf import clients, landscape
from moreau.fl._pflmf import pflmf

__all__ = ["STATEMENTS"]

RANKS, STARTS, ROUNDS = (1, 2, 3, 4), 4, 1000
VALUE_TOL, MODEL_TOL = 1e-9, 1e-5
HETERO_ROUNDS, HETERO_TAU = 2000, 5  # the non-proportional group (r = 1): every run stationary by then

CLAIM = {
    "value_gap": lambda sigma, r: (
        0.5 * np.sum(np.where(np.arange(sigma.shape[-1]) >= r[:, None], sigma, 0.0) ** 2, axis=-1)
    ),
    "kept": lambda k, r: k < r,  # the singular directions X* keeps: the r largest
    "applies": lambda prop: np.ones_like(prop, bool),  # as printed: whatever the clients' Hessians
}

PART_VALUE = "F(U_T, V_T) = (1/2) sum_{k>r} sigma_k(M)^2 (Eckart-Young value), every start"
PART_MODEL = "U_T V_T^T = A^{-1/2} [M]_r W^{-1/2} (the truncated SVD), every start"
FINDING = (
    "fails where the clients' Hessians are not proportional: with each client a well around its own centre the "
    "rank-1 landscape g(u) = min_V F(u, V) has several local minima, and Algorithm 1 from random starts ends in a "
    "spurious one (stationary, PSD Hessian, value above the certified global); with A_i = s_i A every run reaches "
    "the global value (the reading 'proportional Hessians' holds)"
)
PART_GLOBAL = (
    "F(U_T, V_T) = min of (4.1), certified by exhaustive search over the sphere (r = 1), every start"
)


GROUPS = len(RANKS) + 1  # the ranks (proportional Hessians) and the non-proportional group (r = 1)
trials_used = trials_in_groups(GROUPS, "groups (4 ranks, 1 non-proportional)")  # what --trials becomes


def _hetero(rng, k, m, d):
    """``k`` non-proportional instances (``landscape.draw``) in the fields of ``clients.certified``: ``Ai``
    the clients' Hessians; ``A`` = I, ``s`` = 1 and the SVD of C^T/sqrt(m) fill the Eckart-Young fields
    (parts PART_VALUE, PART_MODEL do not apply there); ``L``, ``ad`` the largest client curvature."""
    Ai, C = landscape.draw(rng, k, m, d)
    P, sigma, Rt = np.linalg.svd(np.swapaxes(C, -1, -2) / np.sqrt(m), full_matrices=False)
    top = np.linalg.eigvalsh(Ai)[..., -1]
    return {
        "A": np.broadcast_to(np.eye(d), (k, d, d)).copy(),
        "s": np.ones((k, m)),
        "C": C,
        "sigma": sigma,
        "P": P,
        "R": np.swapaxes(Rt, -1, -2),
        "Li": top,
        "L": top.max(axis=1),
        "ad": top.max(axis=1),
        "Ai": Ai,
        "prop": np.zeros(k, bool),
    }


def instances(family, trials, rng):
    per = per_group(trials, GROUPS, 6)
    n = per * len(RANKS)
    batch = clients.certified(rng, n, 6, 4, kappa=2.0, decay=(0.5, 0.8))
    batch["Ai"] = batch["s"][..., None, None] * batch["A"][:, None]
    batch["prop"] = np.ones(n, bool)
    hetero = _hetero(rng, per, 6, 4)
    batch = {k: np.concatenate([batch[k], hetero[k]]) for k in batch}
    batch["r"] = np.repeat(np.array(RANKS + (1,)), per)
    U0, V0 = clients.starts(rng, batch, max(RANKS), STARTS)  # (STARTS, n, ., rmax); rank r keeps [..., :r]
    batch["U0"], batch["V0"] = np.swapaxes(U0, 0, 1), np.swapaxes(V0, 0, 1)
    return batch


def _objective(batch, reps=1):
    """The clients f_i = (1/2)(x - c_i)^T A_i (x - c_i) as one moreau.Quadratic (``clients.objective`` with
    the clients' own Hessians ``Ai``)."""
    Ai = batch["Ai"]
    b = np.einsum("nmij,nmj->nmi", Ai, batch["C"])
    c = 0.5 * np.einsum("nmi,nmi->nm", b, batch["C"])
    if reps > 1:
        Ai, b, c = (np.broadcast_to(x, (reps,) + x.shape) for x in (Ai, b, c))
    return mo.Quadratic(Ai, b, c)


def prepare(batch):
    """Run Algorithm 1 from every start (claim-independent): the final models and values; on the
    non-proportional group also the certified global value and each end point's stationarity test."""
    n, m, d = batch["C"].shape
    X = np.zeros((n, STARTS, m, d))
    ends = np.zeros((n, STARTS, d)), np.zeros((n, STARTS, m))  # (u, v) of the rank-1 runs
    prop = batch["prop"]
    for r, p in sorted({(int(r), bool(p)) for r, p in zip(batch["r"], prop, strict=True)}):
        g = np.flatnonzero((batch["r"] == r) & (prop == p))
        sub = {k: v[g] for k, v in batch.items()}
        f = _objective(sub, STARTS)
        s1 = sub["sigma"][:, 0]
        h = pflmf(
            f,
            r,
            rounds=ROUNDS if p else HETERO_ROUNDS,
            eta_u=0.6 / (sub["ad"] * s1),
            eta_v=0.6 / (sub["L"] * s1),
            tau=(1 if r == 1 else 5) if p else HETERO_TAU,
            U0=np.swapaxes(sub["U0"], 0, 1)[..., :r],
            V0=np.swapaxes(sub["V0"], 0, 1)[..., :r],
        )
        X[g] = np.swapaxes(np.asarray(h.theta[-1]), 0, 1)
        if r == 1:
            ends[0][g] = np.swapaxes(np.asarray(h.w_global[-1])[..., 0], 0, 1)
            ends[1][g] = np.swapaxes(np.asarray(h.w_local[-1])[..., 0], 0, 1)
    value = np.mean(np.asarray(_objective(batch).value(np.swapaxes(X, 0, 1))), axis=-1).T  # (n, STARTS)
    out = {**batch, "X": X, "value": value}
    one = np.flatnonzero(batch["r"] == 1)
    fstar = np.full(n, np.nan)
    stat, second, spur = (np.zeros((n, STARTS), bool) for _ in range(3))
    if one.size:
        A, C = batch["Ai"][one], batch["C"][one]
        hetero = ~prop[
            one
        ]  # proportional: Eckart-Young's value (exact from the drawn sigma); else the sphere search
        fstar[one[~hetero]] = 0.5 * np.sum(batch["sigma"][one[~hetero], 1:] ** 2, axis=-1)
        if np.any(hetero):
            fstar[one[hetero]] = landscape.certified_min(A[hetero], C[hetero])[0]
        scale = _scale(batch)[one]
        U, V = (np.swapaxes(e[one], 0, 1) for e in ends)  # (STARTS, k, .)
        test = landscape.classify(A, C, U, V, value[one].T, fstar[one], scale, value_tol=VALUE_TOL)
        stat[one], second[one], spur[one] = (np.swapaxes(t, 0, 1) for t in test)
        below = value[one] < fstar[one, None] - VALUE_TOL * scale[:, None]
        if np.any(below):  # a run below the certified minimum: the certificate is wrong, not the claim
            raise RuntimeError(
                f"pflmf.bm: a run ends below the certified global value of the sphere search by "
                f"{np.max((fstar[one, None] - value[one]) / scale[:, None]):.3g} (relative): refine the grid"
            )
    return {**out, "Fstar": fstar, "stationary": stat, "second_order": second, "spurious": spur}


def _scale(batch):
    """F(0) - min F over the whole space, (1/m) sum_i (1/2) c_i^T A_i c_i ``(n,)``: the scale of values."""
    return 0.5 * np.mean(np.einsum("nmi,nmij,nmj->nm", batch["C"], batch["Ai"], batch["C"]), axis=1)


def _optimum(data, keep):
    """X* of the claim: A^{-1/2} P diag(sigma * keep) R^T W^{-1/2}, from the instance's own SVD."""
    a, Q = np.linalg.eigh(data["A"])
    half_inv = np.einsum("nij,nj,nkj->nik", Q, a**-0.5, Q)
    M = np.einsum("ndk,nk,nmk->ndm", data["P"], data["sigma"] * keep, data["R"])
    w = data["s"] / data["s"].shape[1]
    return np.einsum("nij,njm->nmi", half_inv, M) / np.sqrt(w)[..., None]


def evaluate(data, claim):
    r, sigma, prop = data["r"], data["sigma"], data["prop"]
    target = claim["value_gap"](sigma, r)
    err = np.max(np.abs(data["value"] - target[:, None]), axis=1)
    keep = claim["kept"](np.arange(sigma.shape[1])[None, :], r[:, None]).astype(float)
    Xs = _optimum(data, keep)
    dist = np.max(np.linalg.norm(data["X"] - Xs[:, None], axis=(-2, -1)), axis=1) / np.linalg.norm(
        data["C"], axis=(-2, -1)
    )
    consts = {"sigma_k(M)": "exact: drawn (M = P diag(sigma) R^T)", "min f_i": "0 by construction"}
    out = {
        PART_VALUE: Sides(
            err,
            VALUE_TOL * sigma[:, 0] ** 2,
            "exact",
            applicable=prop,
            constants=consts,
            note=f"worst of {STARTS} random starts after {ROUNDS} rounds; rhs: 1e-9 sigma_1^2; "
            "proportional Hessians (Eckart-Young applies)",
        ),
        PART_MODEL: Sides(
            dist,
            MODEL_TOL,
            "exact",
            applicable=prop,
            constants=consts,
            note="||X_T - X*||_F / ||C||_F; X* from the drawn SVD, not from moreau.fl.low_rank_optimum",
        ),
    }
    one = r == 1
    if np.any(one):
        scale = _scale(data)
        gap = np.max(data["value"] - data["Fstar"][:, None], axis=1) / scale
        spur, stat = data["spurious"][one], data["stationary"][one]
        runs, hetero = spur.size, ~prop[one]
        out[PART_GLOBAL] = Sides(
            np.where(one, gap, 0.0),
            VALUE_TOL,
            "exact",
            applicable=one & claim["applies"](prop),
            constants={
                "min of (4.1)": "Eckart-Young's (proportional Hessians); otherwise certified: grid over the unit "
                "sphere of g(u) = min_V F(u, V), then BFGS from "
                f"the {landscape.REFINE} best grid points (moreau.analysis.pflmf.landscape)",
                "spurious": "stationary (||grad F|| <= 1e-7 F(0)) with a PSD Hessian (eigenvalues >= -1e-7 "
                "F(0)) and F above the certified minimum by more than 1e-9 F(0)",
            },
            note=f"(F_T - F*)/F(0), worst of {STARTS} starts; runs ending in a spurious local minimum: "
            f"{int(spur[hetero].sum())} of {int(hetero.sum()) * STARTS} with non-proportional Hessians, "
            f"{int(spur[~hetero].sum())} of {int((~hetero).sum()) * STARTS} with proportional ones; "
            f"not stationary: {int(runs - stat.sum())} of {runs}",
        )
    return out


def _minimal_instance():
    r"""The recorded minimal counterexample: d = 2, m = 2 clients, r = 1 (d = 1 or m = 1 cannot fail: rank <= 1).

    f_1(x) = ½(x - e_1)ᵀ diag(1, 4)(x - e_1), f_2(x) = ½(x - e_2)ᵀ 2 diag(4, 1)(x - e_2): each client soft along its
    own centre, stiff across it (Hessians not proportional).  g(θ) = min_V F((cos θ, sin θ), V) =
    ½(½·4 sin²θ/(cos²θ + 4 sin²θ) + ½·2·4 cos²θ/(sin²θ + 4 cos²θ)) has two wells: u = e_2 (x_2 = c_2,
    global, F = 1/4) and u = e_1 (x_1 = c_1, x_2 = 0, F = 1/2), a strict local minimum of g (curvature
    s_1κ_1 - s_2/κ_2 = 4 - 1/2 > 0), hence a
    spurious local minimum of F (stationary, Hessian PSD with only the scaling direction flat; checked exactly in
    Fractions by the tests).  Every start U_0 = (1, 0.3), V_0 = (0.8, 0.3) lies in the spurious basin: Algorithm 1
    (steps 0.6/(L σ_1), τ = 5) ends at F = 1/2 against the certified 1/4."""
    one = {
        "A": np.eye(2)[None],
        "s": np.ones((1, 2)),
        "C": np.eye(2)[None],
        "sigma": np.full((1, 2), np.sqrt(0.5)),  # C^T/sqrt(2) = I/sqrt(2)
        "P": np.eye(2)[None],
        "R": np.eye(2)[None],
        "Ai": np.array([[[[1.0, 0.0], [0.0, 4.0]], [[8.0, 0.0], [0.0, 2.0]]]]),
        "prop": np.zeros(1, bool),
        "r": np.array([1]),
    }
    one["Li"] = np.array([[4.0, 8.0]])
    one["L"], one["ad"] = np.array([8.0]), np.array([8.0])
    one["U0"] = np.tile(np.array([1.0, 0.3]).reshape(1, 1, 2, 1), (1, STARTS, 1, 1))
    one["V0"] = np.tile(np.array([0.8, 0.3]).reshape(1, 1, 2, 1), (1, STARTS, 1, 1))
    return one


STATEMENTS = (
    Statement(
        id="pflmf.bm",
        source="Dadras thesis, §4.1, eqs. (4.1)-(4.2) (Paper I, TMLR 2025, §3)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\min_{U,V}\tfrac1n\sum_i f_i(Uv_i) = \min_{\mathrm{rank}X\le r}\tfrac1n\sum_i f_i(x_i)"
        r" = \tfrac12\sum_{k>r}\sigma_k(M)^2\ \text{reached from random starts}",
        text="the Burer-Monteiro form (4.2) of the rank-r problem (4.1), solved by Algorithm 1 from random starts, "
        "reaches the global rank-r optimum (Eckart-Young on the certified clients)",
        assumptions=(
            "f_i = (s_i/2)(x - c_i)^T A (x - c_i), A positive definite, s_i > 0",
            "sigma_r(M) > sigma_{r+1}(M)",
            "full participation, exact gradients, steps 0.6/(L sigma_1)",
        ),
        scaling={
            "quadratic": (
                "the step sizes (eta_u, eta_v) and the rank-r factorisation are drawn inside the checker per "
                "instance (U V^T scales as theta: the factors split the scale freely), so a batch is not "
                "rescaled here"
            )
        },
        families={
            "quadratic": (
                "proportional Hessians: certified rank-r optimum (r = 1..4)",
                "non-proportional Hessians (each client a well around its own centre), r = 1: global value "
                "certified by exhaustive search over the sphere",
            )
        },
        claimed="upper",
        instances=instances,
        trials_used=trials_used,
        prepare=prepare,
        evaluate=evaluate,
        claim=CLAIM,
        expect="fails",
        counterexamples={"quadratic": _minimal_instance},
        readings=(
            Reading(
                "proportional Hessians",
                {"applies": lambda prop: prop},
                why="the clients' Hessians proportional to one matrix (A_i = s_i A): (4.2) is then a weighted "
                "low-rank approximation after whitening, whose local minima are global (Eckart-Young, Baldi-Hornik)",
                repairs="missing hypothesis",
            ),
        ),
        findings=(FINDING,),
        mutants=(
            Mutant(
                "value of rank r - 1 (sum over k >= r)",
                {
                    "value_gap": lambda sigma, r: (
                        0.5
                        * np.sum(
                            np.where(np.arange(sigma.shape[-1]) >= r[:, None] - 1, sigma, 0.0) ** 2, axis=-1
                        )
                    )
                },
            ),
            Mutant("rank constraint ignored (LocalTrain's value 0)", {"value_gap": lambda sigma, r: 0.0 * r}),
            Mutant(
                "singular values not squared",
                {
                    "value_gap": lambda sigma, r: (
                        0.5 * np.sum(np.where(np.arange(sigma.shape[-1]) >= r[:, None], sigma, 0.0), axis=-1)
                    )
                },
            ),
            Mutant("X* keeps the r smallest directions", {"kept": lambda k, r: k >= k.shape[-1] - r}),
            Mutant("X* keeps r - 1 directions", {"kept": lambda k, r: k < r - 1}),
            # the reading's hypothesis dropped again: the global-value part must fail where Algorithm 1
            # ends in a spurious minimum (non-proportional Hessians), or it could not fail at all
            Mutant("whatever the clients' Hessians", {"applies": lambda prop: np.ones_like(prop, bool)}),
        ),
        origin="reconstruction",
    ),
)
