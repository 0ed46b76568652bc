r"""Readable counterexamples: a failing instance made small and simple, still failing.

A random failing instance (a 4×4 matrix with entries like 0.3719…) proves a statement false but
says little.  Given a failing instance and what its fields *are* (:class:`Simplify`: which field is
the symmetric matrix, which are vectors in its coordinates, which are free scalars, how the derived
fields follow from the others, whether the statement is invariant under rotations), :func:`shrink`
tries, in order, and keeps each step only if the printed statement still fails there (a theorem
part with finite sides, a positive right side and LHS > RHS) and the instance still meets the
statement's assumptions (the evaluation's own applicability decides: an instance outside them
fails nothing):

0. *fewer clients* (a family whose fields have a client axis, ``Simplify.clients``): drop client k
   from every such field (axis 1, after the instance axis), one at a time, as long as one can be
   dropped (down to ``min_clients``);
1. *diagonalise* (rotation-invariant statements only): ``A = V diag(a) Vᵀ`` becomes ``diag(a)`` and
   each vector ``v`` becomes ``Vᵀ v`` — the same instance in the eigenbasis;
2. *fewer dimensions*: drop coordinate k (the principal submatrix of ``A`` without row and column k,
   the vectors without entry k), one at a time, as long as one can be dropped;
3. *simpler numbers*: each free scalar, each diagonal entry and each vector entry (off-diagonal
   entries of a matrix that is not diagonal, in symmetric pairs) replaced by the first of 0, ±1,
   the nearest integer, one significant digit, a half, two significant digits that still fails
   (the entries of the client fields too).

Every candidate is rebuilt with ``derive`` (e.g. the spectrum and the smoothness of the new
matrix), so no field is rounded out of step with what it depends on.  The result is a
counterexample found by the run, not a proof of minimality: the report calls it the *smallest
found*.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from moreau.analysis.engine.judge import NEAR_TIE, ROUND_ULPS, rounding_floor

__all__ = ["Simplify", "shrink", "quadratic_fields"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Simplify:
    """What the shrinker may do with a family's instances (``Statement.simplify[family]``).

    ``matrix``: the name of a symmetric ``(1, d, d)`` field (or None); ``vectors``: fields ``(1, d)``
    in the matrix's coordinates (dropped and rotated with it); ``scalars``: free ``(1,)`` fields that
    may be rounded; ``derive(instance) -> dict``: the fields that follow from the others, recomputed
    for every candidate (:func:`quadratic_fields` for ``quadratic_batch``'s ``eig`` and ``L``);
    ``rotation_invariant``: the statement's sides do not change under ``A -> Q A Qᵀ``, ``v -> Q v``
    (then the instance is diagonalised first); ``min_dim``: the smallest dimension to try; ``valid(instance)
    -> bool``: the family's own constraints a candidate must keep (e.g. a positive smallest eigenvalue for a
    strongly convex family), beside the statement's applicability.  ``clients``: fields ``(1, m, ...)``
    whose axis 1 is the client axis (per-client numbers, vectors, matrices): clients are dropped
    from all of them together, down to ``min_clients`` (``derive`` recomputes what follows from the
    clients, e.g. their number or their average).  For the worst-case search
    (``moreau.analysis.engine.optimise``): ``integers`` names scalars that are counts stored as floats
    (rounded like an integer field), ``bounds`` maps a scalar to the ``(lo, hi)`` its search keeps to
    (a count such as m up to where the statement's closed form stays cheap)."""

    matrix: str | None = None
    vectors: tuple = ()
    scalars: tuple = ()
    derive: Callable | None = None
    rotation_invariant: bool = False
    min_dim: int = 1
    valid: Callable | None = None
    clients: tuple = ()
    min_clients: int = 1
    integers: tuple = ()
    bounds: dict | None = None


def quadratic_fields(instance, matrix="A"):
    """``quadratic_batch``'s derived fields of ``instance[matrix]``: ``eig`` (ascending) and ``L = max|eig|``."""
    eig = np.linalg.eigvalsh(instance[matrix])
    return {"eig": eig, "L": np.max(np.abs(eig), axis=-1)}


def _simple_values(x):
    """Candidates for the number ``x``, simplest first (each different from ``x``)."""
    out = [0.0, float(np.sign(x)) if x else 1.0, float(np.round(x))]
    if x:
        e = np.floor(np.log10(abs(x)))
        out += [
            float(np.round(x / 10**e) * 10**e),
            float(np.round(2 * x) / 2),
            float(np.round(x / 10 ** (e - 1)) * 10 ** (e - 1)),
        ]
    seen, res = set(), []
    for v in out:
        if v != x and v not in seen:
            seen.add(v)
            res.append(v)
    return res


def shrink(statement, family, instance, spec: Simplify, *, max_evals=400):
    """``(instance, log, evaluations)``: the simplest failing instance found from ``instance`` (a one-instance
    batch on which the printed statement fails) by the steps of the module doc; ``log`` lists the
    steps taken ("diagonalised", "d 4 -> 2", "7 numbers simplified")."""
    evals = [0]

    def rebuilt(inst):
        inst = {k: np.array(v) if np.ndim(v) else v for k, v in inst.items()}
        if spec.derive is not None:
            inst.update({k: np.asarray(v) for k, v in spec.derive(inst).items()})
        return inst

    def fails(inst):
        if evals[0] >= max_evals:
            return False
        evals[0] += 1
        if spec.valid is not None and not bool(np.all(spec.valid(inst))):
            return False
        near = _failing(statement, family, inst, _magnitude(inst, free))
        if near is None:
            return False
        if not near:
            return True
        # a margin within NEAR_TIE of the magnitudes involved: kept only if it survives the inputs moved
        # by a few ulps (rounding noise changes, or changes sign, when the rounding pattern does)
        rng = np.random.default_rng(0)
        for _ in range(2):
            moved = {k: (_jiggle(v, rng) if k in free else v) for k, v in inst.items()}
            moved = rebuilt(moved)
            if spec.valid is not None and not bool(np.all(spec.valid(moved))):
                return False
            again = _failing(statement, family, moved, _magnitude(moved, free))
            if again is None or not _same_margin(near, again):
                return False
        return True

    free = {*spec.scalars, *spec.vectors, *spec.clients, *([spec.matrix] if spec.matrix is not None else [])}

    cur, log = rebuilt(instance), list[str]()
    if spec.clients:
        cur = _drop_clients(cur, spec, rebuilt, fails, log)
    M = spec.matrix
    if M is not None and spec.rotation_invariant and not _is_diagonal(cur[M]):
        a, V = np.linalg.eigh(cur[M][0])
        cand = dict(cur)
        cand[M] = np.diag(a)[None]
        for v in spec.vectors:
            cand[v] = (V.T @ cur[v][0])[None]
        cand = rebuilt(cand)
        if fails(cand):
            cur = cand
            log.append("diagonalised")
    if M is not None:
        d0 = cur[M].shape[-1]
        dropped = True
        while dropped and cur[M].shape[-1] > spec.min_dim:
            dropped = False
            for k in range(cur[M].shape[-1]):
                keep = [j for j in range(cur[M].shape[-1]) if j != k]
                cand = dict(cur)
                cand[M] = cur[M][:, keep][:, :, keep]
                for v in spec.vectors:
                    cand[v] = cur[v][:, keep]
                cand = rebuilt(cand)
                if fails(cand):
                    cur, dropped = cand, True
                    break
        if cur[M].shape[-1] < d0:
            log.append(f"d {d0} -> {cur[M].shape[-1]}")
    n_simpler = 0
    for name, index in _entries(cur, spec):
        x = float(cur[name][index])
        for v in _simple_values(x):
            cand = {k: (np.array(val) if np.ndim(val) else val) for k, val in cur.items()}
            cand[name][index] = v
            if name == M and index[1] != index[2]:  # keep the matrix symmetric
                cand[name][index[0], index[2], index[1]] = v
            cand = rebuilt(cand)
            if fails(cand):
                cur, n_simpler = cand, n_simpler + 1
                break
    if n_simpler:
        log.append(f"{n_simpler} number(s) simplified")
    return cur, log, evals[0]


def _drop_clients(cur, spec, rebuilt, fails, log):
    """Step 0: drop one client at a time from every client field while the statement still fails."""
    m0 = m = int(np.shape(cur[spec.clients[0]])[1])
    bad = [c for c in spec.clients if np.ndim(cur[c]) < 2 or np.shape(cur[c])[1] != m0]
    if bad:
        raise ValueError(
            f"Simplify.clients fields must share a client axis (axis 1) of length {m0} "
            f"(got {[(c, np.shape(cur[c])) for c in bad]})"
        )
    dropped = True
    while dropped and m > spec.min_clients:
        dropped = False
        for k in range(m):
            keep = [j for j in range(m) if j != k]
            cand = dict(cur)
            for c in spec.clients:
                cand[c] = np.asarray(cur[c])[:, keep]
            cand = rebuilt(cand)
            if fails(cand):
                cur, m, dropped = cand, m - 1, True
                break
    if m < m0:
        log.append(f"clients {m0} -> {m}")
    return cur


def _magnitude(inst, free):
    """The largest finite |entry| of the instance's free fields (the numbers the shrinker moves)."""
    m = [np.max(np.abs(np.asarray(inst[k], dtype=float)), initial=0.0) for k in free if k in inst]
    return float(max((x for x in m if np.isfinite(x)), default=0.0))


def _failing(statement, family, inst, inputs):
    """How the printed statement fails on the one-instance batch ``inst``: None where it does not (a
    theorem part failing beyond its rounding floor, with finite sides and a positive right side, or a
    rate part), ``{}`` for a clear failure, else ``{part: margin}`` of the near ties — a margin lhs - rhs
    within :data:`NEAR_TIE` of the sides, or within some ulps of ``inputs`` (the largest number of the
    instance: sides of 1e-17 computed from numbers of 1 are rounding) — for a check under moved inputs."""
    try:
        with np.errstate(all="ignore"):
            res = statement.run(family, None, None, batch=inst, reading=None)
    except (ValueError, ZeroDivisionError, np.linalg.LinAlgError, FloatingPointError):
        return None  # a candidate the statement refuses (outside its domain) is not a counterexample
    near = {}
    for p in res.parts:
        if p.sides.role != "theorem" or not p.failures.size:
            continue
        if p.claimed == "rate":
            return {}
        s = p.sides
        lhs, rhs = float(np.asarray(s.lhs)[0]), float(np.asarray(s.rhs)[0])
        if not (np.isfinite(lhs) and np.isfinite(rhs) and rhs > 0):
            continue
        margin = lhs - rhs
        if margin <= 16 * float(rounding_floor(s)[0]):  # a margin of some rounding floors: not kept
            continue
        mag = max(abs(lhs), abs(rhs), float(s.scale[0]) if s.scale is not None else 0.0)
        if margin > NEAR_TIE * mag and margin > 1024 * ROUND_ULPS * _EPS * inputs:
            return {}
        near[p.name] = margin
    return near or None


def _same_margin(near, again):
    """Every near tie of ``near`` fails again (``again``: {} is a clear failure) within a factor 2."""
    if not again:
        return True
    return all(k in again and 0.5 * m <= again[k] <= 2 * m for k, m in near.items())


def _jiggle(v, rng, ulps=4):
    """``v`` with each float entry moved by up to ``ulps`` relative ulps (integers unchanged)."""
    v = np.asarray(v)
    if not np.issubdtype(v.dtype, np.floating):
        return v
    eps = float(np.finfo(v.dtype).eps)
    return v * (1 + ulps * eps * rng.uniform(-1.0, 1.0, v.shape))


def _is_diagonal(A):
    return bool(np.all(A[0] == np.diag(np.diag(A[0]))))


def _entries(inst, spec):
    """(field, index) of every number the shrinker may simplify: scalars, the matrix's diagonal (and its
    upper triangle when it is not diagonal), the vectors' entries."""
    out = [(s, (0,)) for s in spec.scalars]
    if spec.matrix is not None:
        A = inst[spec.matrix]
        d = A.shape[-1]
        diag = _is_diagonal(A)
        out += [(spec.matrix, (0, i, j)) for i in range(d) for j in range(i, d) if i == j or not diag]
    out += [(v, (0, i)) for v in spec.vectors for i in range(inst[v].shape[-1])]
    # per-client numbers and vectors (a per-client matrix would lose its symmetry entry by entry)
    out += [
        (c, (0, *i)) for c in spec.clients if np.ndim(inst[c]) <= 3 for i in np.ndindex(np.shape(inst[c])[1:])
    ]
    return out
