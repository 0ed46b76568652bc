r"""fedfw.sparse — thesis (Dadras) §4.3, after (4.6): "FedFW provides better privacy and communication
properties by sharing (sparse) step directions instead of gradients."

Statement (as printed): what a client sends in a round is its direction s_i^t of (4.5), and it is
sparse.  Read literally, for every convex compact D the thesis allows: at most one non-zero per
direction (one index and one value, against d numbers for a gradient or a model).  The count is the
algorithm's own record (``FedFWHistory.nnz``: the non-zeros of each s_i^t the server receives).

Reading "ℓ1 balls and simplices": the sets whose extreme points are 1-sparse.  s_i^t is an extreme
point of D (an LMO output), so it has one non-zero on the ℓ1 ball (−r sign(g_k)e_k) and on the
simplex (r e_k), while on a box it is a vertex (d non-zeros) and on a Euclidean ball −rg/‖g‖
(dense).  The sparsity is the constraint set's, not the algorithm's: the paper's experiments use
ℓ1 and ℓ2 balls (the authors' code: ``LMO_l1``, ``LMO_l2``), only the first sends sparse signals.

Assumptions: D convex compact; the LMO returns an extreme point (ties broken by the first index); the
start x_i^1 = x̄^1 in D (reconstructed: the thesis prints no start; ``moreau.fl.fedfw`` refuses one
outside D).

Instances (family quadratic, d = 6, m = 4, 50 rounds of FedFW with λ_t = λ0√(t+1)): convex clients with
spread stationary points on ℓ1 balls, simplices, Euclidean balls and boxes (8 each), in four groups
(``GROUPS``): average Hessian positive definite or singular (every client's projected off one common
direction), x̄¹ the set's centre or a point drawn inside the set off it (``instances.inside_points``).

Sides (claimed tight): lhs = the largest count over rounds and clients, rhs = the claimed count.
What the check shows: exactly 1 on every ℓ1 ball and simplex round; d = 6 on every box and ball
round (the printed literal reading fails there).  Mutants (on the reading): "d non-zeros" is not
attained, "no non-zero" is violated.
"""

from __future__ import annotations

import numpy as np

from moreau.analysis.engine.core import Mutant, Reading, Sides, Statement
from moreau.analysis.fedfw.instances import SCALING, SETS, concat_groups, run

__all__ = ["STATEMENTS"]

ROUNDS, M, D = 50, 4, 6

CLAIM = {"nnz": lambda d: np.ones_like(d), "sets": ("l1", "simplex", "l2", "box")}
READINGS = (
    Reading(
        "ℓ1 balls and simplices",
        {"sets": ("l1", "simplex")},
        why="the sets whose extreme points have one non-zero; the LMO output is an extreme point",
        repairs="missing hypothesis",
    ),
)
NAMES = {"l1": "ℓ1 ball", "simplex": "simplex", "l2": "Euclidean ball", "box": "box"}


def part(name):
    return f"{NAMES[name]}: non-zeros of s_i^t <= 1 (one index and one value per round)"


#: l1, simplex, l2, box (the codes of instances.SETS), cycled in each group: convex clients started at the set's
#: centre or off it, and convex clients with a singular average (a null direction common to all) likewise
ORDER = (1, 3, 2, 0)
GROUPS = tuple(
    {"kind": kind, "sets": ORDER, "start": start}
    for kind in ("convex", "convex_singular")
    for start in ("centre", "inside")
)


def instances(family, trials, rng):
    return concat_groups(rng, trials or 32, M, D, GROUPS)


def evaluate(batch, claim):
    hist = run(batch, ROUNDS)
    count = hist["nnz"].max(axis=(0, 2)).astype(float)
    d = np.full(count.shape, float(batch["b"].shape[-1]))
    out = {}
    for name in claim["sets"]:
        out[part(name)] = Sides(
            count,
            claim["nnz"](d),
            "tight",
            applicable=batch["set"] == SETS.index(name),
            constants={
                "non-zeros": "exact: counted in the directions the server receives (FedFWHistory.nnz)"
            },
            note=f"max over {ROUNDS} rounds and {M} clients",
        )
    return out


STATEMENTS = (
    Statement(
        id="fedfw.sparse",
        implies=("x⁰ inside the set",),
        source="Dadras thesis, §4.3, after (4.6)",
        paper="dadras-thesis-personalized-fl.md",
        latex=r"\mathrm{nnz}(s_i^t) \le 1\ \text{(sparse step directions)}",
        text="clients share (sparse) step directions instead of gradients (read literally: one non-zero per "
        "direction, on every convex compact D)",
        assumptions=(
            "D convex compact",
            "the LMO returns an extreme point",
            "x_i^1 = x̄^1 ∈ D (reconstructed: the thesis prints no start; a Frank-Wolfe start is feasible)",
        ),
        families={
            "quadratic": (
                "convex clients (positive definite or singular average, started at the set's centre or off it) "
                "on l1 balls, simplices, Euclidean balls, boxes (d = 6)",
            )
        },
        claimed="tight",
        instances=instances,
        evaluate=evaluate,
        claim=CLAIM,
        readings=READINGS,
        expect="fails",
        scaling={"quadratic": SCALING},
        # d = 2 (d = 1 cannot fail: every point of an interval has one coordinate), one client (m = 1), the box
        # D = [-1, 1]^2 (set 0, h = (1, 1), x̄^1 = its centre 0), f(x) = |x|^2/2 - x_1 - x_2 (A = I, L = 1; z = (1, 1)
        # a vertex), λ0 = u(L + G/D)/m with u = 1 (G = ||A|| ||h|| + ||b|| = 2√2 = D): λ0 = 2 (the penalty is 0 with
        # one client: x_1^t = x̄^t).  Round 1: ∇f(0) = (-1, -1), the box's LMO s = (1, 1), a vertex with 2 non-zeros
        # > 1 (and s = (1, 1) every round after, ties at ∇f = 0 included).
        counterexamples={
            "quadratic": {
                "A": np.eye(2)[None, None],
                "b": np.ones((1, 1, 2)),
                "L": np.ones(1),
                "h": np.ones((1, 2)),
                "set": np.zeros(1),
                "x0": np.zeros((1, 2)),
                "lam0": np.full(1, 2.0),
            }
        },
        mutants=(
            Mutant("d non-zeros (dense directions)", {"nnz": lambda d: d}),
            Mutant("no non-zero", {"nnz": lambda d: np.zeros_like(d)}),
        ),
        findings=(
            "The printed '(sparse) step directions' holds only where the constraint set's extreme points are sparse: "
            "on a box the direction is a vertex (d non-zeros), on a Euclidean ball -r g/||g|| (dense), as many numbers "
            "as a gradient; on l1 balls and simplices exactly one non-zero per client and round.",
        ),
        origin="remark",
    ),
)
