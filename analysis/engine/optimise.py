r"""Worst cases by optimisation: the sup of LHS/RHS of each theorem inequality part over a family's
continuous parameters, searched from the worst instances of the run's batch.

A random batch rarely reaches the worst case of a bound (FedProx (5) sampled at 0.125 of a bound whose
sup is 1), and its maximum says nothing about whether the sup is attained, approached at the edge of the
parameter space or infinite.  For every inequality part of the theorem (``claimed`` "upper" or "tight",
``role`` "theorem") :func:`optimise_part` maximises the part's LHS/RHS on a one-instance batch rebuilt
from a vector of *coordinates* (:class:`Parametrisation`):

* from the statement's :class:`~moreau.analysis.engine.shrink.Simplify` (``Statement.simplify[family]``):
  each free scalar (``scalars``; in log10 when positive, rounded when the field holds integers; a count
  grows above its start only within ``Simplify.bounds``), each
  eigenvalue of the symmetric ``matrix`` (``A = V diag(a) Vᵀ``: the eigenvectors kept, each nonzero
  eigenvalue in log10 of its modulus with its sign kept, so a convex family stays convex and a weakly
  convex one weakly convex), each entry of the ``vectors``; the fields that follow from the others are
  rebuilt with ``derive`` and the family's ``valid`` is checked;
* without one: every per-instance positive floating-point scalar field, in log10 (integer fields such as
  counts and seeds are left alone: a seed is not a parameter, a dimension changes the cost).

The objective is the printed statement's own evaluation (``Statement.run``) on the rebuilt instance: an
instance outside the statement's hypotheses (the part not applicable there), with a non-positive or
non-finite right side, or that the evaluation refuses (an exception) has ratio −inf.  A Monte Carlo part
(``Sides.lhs_ci``) counts with the lower end of its interval (what the run is sure of; the point estimate
exceeds the bound by noise: FedProx (4)'s "1.022").

**Why Nelder–Mead** (:func:`scipy.optimize.minimize`, ``method="Nelder-Mead"``, with bounds): the sides
are evaluated by the checkers' plain code, so no derivative is available; they are piecewise smooth (a max
over iterates or eigenvalues, a min of two regimes, applicability masks), where a simplex method does
not need a gradient and does not break at the kinks; it is in scipy, which the project already depends
on.  CMA-ES would handle multimodality better but is a new dependency (``cma``); instead the search is
restarted from several of the batch's worst instances and, after it converges, from its best point.

Each coordinate moves in a box: ±:data:`DECADES` decades around the start for a log coordinate,
±10 (1 + |x|) for a linear one.  The result of a part (:func:`optimise_part`) is classified:

* **attained**: the best is at finite parameters strictly inside the box (or moving the coordinates at
  the box's edge further does not increase the ratio): the sup of LHS/RHS over the family is reached
  there; ``bound_attained`` when it equals 1 (the right side itself) to :data:`ATTAINED_RTOL`;
* **approached**: the best sits at the box's edge and the ratio keeps rising towards it: the path
  (those coordinates moved together, :data:`PATH_STEPS` decades on either side of the best) is reported
  with its ratios, the parameter that runs to ∞ or 0, and the largest ratio along it;
* **unbounded**: as approached, and along that path the ratio grows by a fitted power law: the log-log
  slope of the ratio against the parameter over the path's last points (at least :data:`MIN_POINTS`
  points spanning at least :data:`MIN_DECADES` decades, increasing) is at least :data:`MIN_SLOPE`.

The best instance of every part is kept (``"instance"``), for ``moreau check --analyse --save-worst`` and
for recording it in the catalogue (``Statement.worst``), where every default run evaluates it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from moreau.analysis.engine.judge import NEAR_TIE

__all__ = [
    "Parametrisation",
    "parametrisation",
    "part_ratio",
    "optimise_part",
    "optimise_record",
    "mc_sibling",
    "DECADES",
    "ATTAINED_RTOL",
    "MIN_SLOPE",
    "MIN_POINTS",
    "MIN_DECADES",
    "PATH_STEPS",
    "OPTIMISE_SECONDS",
]

#: decades a log coordinate may move either way from its start
DECADES = 3.0
#: the relative distance to 1 within which the bound itself is attained
ATTAINED_RTOL = 1e-9
#: growth law: the smallest log-log slope, the fewest points and the decades they must span
MIN_SLOPE, MIN_POINTS, MIN_DECADES = 0.05, 4, 2.0
#: the path at a boundary: the edge coordinates moved by these many decades (negative: back inside)
PATH_STEPS = (-4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0)
#: the default budget per statement and family, in seconds (``--optimise-seconds``)
OPTIMISE_SECONDS = 2.0
#: a coordinate within this distance (in its own units) of its box's edge is at the boundary
_EDGE = 1e-3
#: the share of the budget left after the starts' searches that goes to random points in the box (the rest:
#: Nelder–Mead from the best of them)
EXPLORE_SHARE = 0.5
#: the integer line search: grid points over a count's box (log10), and the steps around its best value
INTEGER_GRID = 9
_NEIGHBOURS = np.array([-0.3, -0.1, -0.03, 0.03, 0.1, 0.3])
_REFUSED = (
    ValueError,
    ZeroDivisionError,
    FloatingPointError,
    IndexError,
    np.linalg.LinAlgError,
    OverflowError,
)


class _OutOfTime(Exception):
    pass


@dataclass(frozen=True)
class _Coordinate:
    name: str  # as reported: "lam", "eig(A)[3]", "w[1]"
    field: str
    index: tuple | None  # the entry of the one-instance array; None for an eigenvalue
    log: bool
    sign: float = 1.0
    eig: int | None = None
    integer: bool = False
    limit: tuple | None = None  # the declared (lo, hi) of its value (``Simplify.bounds``)


class Parametrisation:
    """Coordinates of a one-instance batch ``base``: :meth:`encode` gives the start's vector,
    :meth:`decode` rebuilds an instance from a vector, :attr:`lo`, :attr:`hi` the box."""

    def __init__(self, base: dict, coords: list, spec=None):
        self.base = {k: np.array(v) for k, v in base.items()}
        self.coords = coords
        self.spec = spec
        M = getattr(spec, "matrix", None)
        if M is not None and any(c.eig is not None for c in coords):
            a, V = np.linalg.eigh(self.base[M][0])
            self._eig, self._V = a, V
        x0 = self.encode()
        width = np.array(
            [DECADES if c.log else 10.0 * (1.0 + abs(x)) for c, x in zip(coords, x0, strict=True)]
        )
        self.lo, self.hi = x0 - width, x0 + width
        for k, c in enumerate(coords):
            if c.integer:
                self.lo[k] = max(self.lo[k], 0.0)
                if (
                    c.limit is None
                ):  # a count's cost grows with it: above its start only within declared limits
                    self.hi[k] = x0[k]
            if c.limit is not None and c.log:  # declared limits are the box (|value| in log10)
                self.lo[k], self.hi[k] = sorted(np.log10(np.abs(np.asarray(c.limit, dtype=float))))
            elif c.limit is not None:
                self.lo[k], self.hi[k] = c.limit
        self.lo = np.minimum(self.lo, x0)  # a start outside its limits keeps its own value reachable
        self.hi = np.maximum(self.hi, x0)

    @property
    def names(self) -> list:
        return [c.name for c in self.coords]

    def encode(self) -> np.ndarray:
        out = []
        for c in self.coords:
            v = self._eig[c.eig] if c.eig is not None else float(self.base[c.field][c.index])
            out.append(np.log10(abs(v)) if c.log else float(v))
        return np.array(out, dtype=float)

    def values(self, x) -> dict:
        """The parameters' values at ``x`` (as the instance holds them)."""
        return {c.name: self._value(c, xi) for c, xi in zip(self.coords, x, strict=True)}

    @staticmethod
    def _value(c, xi):
        v = c.sign * 10.0**xi if c.log else float(xi)
        if c.limit is not None:  # never beyond the declared limits (a path may step past the box)
            v = float(np.clip(v, *sorted(c.limit)))
        return float(max(1, round(v))) if c.integer else float(v)

    def at_limit(self, k: int, x: np.ndarray) -> bool:
        """Whether coordinate ``k`` of ``x`` sits at one of its declared limits (not the box's edge)."""
        c = self.coords[k]
        if c.limit is None:
            return False
        v = abs(self._value(c, x[k]))
        return bool(np.any(np.isclose(v, np.abs(np.asarray(c.limit, dtype=float)), rtol=1e-9)))

    def decode(self, x) -> dict:
        inst = {k: np.array(v) for k, v in self.base.items()}
        eig = None
        for c, xi in zip(self.coords, x, strict=True):
            v = self._value(c, xi)
            if c.eig is not None:
                eig = self._eig.copy() if eig is None else eig
                eig[c.eig] = v
            else:
                inst[c.field][c.index] = v
        if eig is not None:
            A = (self._V * eig) @ self._V.T
            inst[self.spec.matrix] = (0.5 * (A + A.T))[None]
        if self.spec is not None and self.spec.derive is not None:
            inst.update({k: np.asarray(v) for k, v in self.spec.derive(inst).items()})
        return inst

    def valid(self, inst) -> bool:
        check = getattr(self.spec, "valid", None)
        return True if check is None else bool(np.all(check(inst)))


def parametrisation(statement, family: str, instance: dict) -> Parametrisation:
    """The coordinates of ``instance`` (a one-instance batch) for ``statement`` on ``family``: from
    ``Statement.simplify[family]`` when declared, else its positive floating-point scalar fields in log10."""
    spec = (getattr(statement, "simplify", None) or {}).get(family)
    coords = []
    if spec is None:
        for k, v in instance.items():
            a = np.asarray(v)
            if a.shape == (1,) and np.issubdtype(a.dtype, np.floating) and np.isfinite(a[0]) and a[0] > 0:
                coords.append(_Coordinate(k, k, (0,), log=True))
        return Parametrisation(instance, coords)
    bounds = getattr(spec, "bounds", None) or {}
    for k in spec.scalars:
        a = np.asarray(instance[k])
        if a.size != 1 or not np.issubdtype(a.dtype, np.number) or not np.isfinite(a.ravel()[0]):
            continue
        x = float(a.ravel()[0])
        integer = bool(np.issubdtype(a.dtype, np.integer) or k in getattr(spec, "integers", ()))
        idx = (0,) * a.ndim
        if x != 0:
            limit = tuple(float(v) for v in bounds[k]) if k in bounds else None
            coords.append(
                _Coordinate(k, k, idx, log=True, sign=float(np.sign(x)), integer=integer, limit=limit)
            )
    if spec.matrix is not None and spec.matrix in instance:
        a = np.linalg.eigvalsh(np.asarray(instance[spec.matrix], dtype=float)[0])
        for j, e in enumerate(a):
            if e != 0:
                coords.append(
                    _Coordinate(f"eig({spec.matrix})[{j}]", spec.matrix, None, True, float(np.sign(e)), j)
                )
    for k in spec.vectors:
        a = np.asarray(instance.get(k, np.zeros((1, 0))))
        if not np.issubdtype(a.dtype, np.floating):
            continue
        for j in range(a.shape[-1]):
            coords.append(_Coordinate(f"{k}[{j}]", k, (0, j), log=False))
    return Parametrisation(instance, coords, spec)


def part_ratio(p) -> float:
    """LHS/RHS of part result ``p`` on its (one) instance: −inf where the part is not applicable, the right
    side is not positive or a side is not finite; a Monte Carlo part with the lower end of its interval."""
    s = p.sides
    if not bool(np.asarray(s.applicable)[0]):
        return -np.inf
    lhs = float(np.asarray(s.lhs_ci[0])[0]) if s.lhs_ci is not None else float(s.lhs[0])
    rhs = float(s.rhs[0])
    if not (np.isfinite(lhs) and np.isfinite(rhs) and rhs > 0):
        return -np.inf
    r = lhs / rhs
    if r > 1 and (r - 1 <= NEAR_TIE or (p.floor_rows is not None and np.size(p.floor_rows))):
        # above the bound by less than a near tie (or within the judge's rounding floor): rounding cannot
        # be told from a tie here (``Statement.precise`` decides it in the run), so the search counts 1
        return 1.0
    return r


def mc_sibling(name: str, names) -> bool:
    """Whether part ``name`` (a Monte Carlo part) has an exact part of the same bound among ``names``:
    the same name once the words "Monte Carlo" / "exact" and the punctuation around them are removed."""

    def key(n):
        out = n.lower().replace("monte carlo", "").replace("exact", "")
        return " ".join(out.replace(",", " ").split())

    return any(key(o) == key(name) and o != name and "monte carlo" not in o.lower() for o in names)


class _Objective:
    def __init__(self, statement, family, par, part, deadline):
        self.st, self.fam, self.par, self.part, self.deadline = statement, family, par, part, deadline
        self.evals, self.best, self.best_x = 0, -np.inf, None

    def ratio(self, x, *, timed=True) -> float:
        if timed and time.perf_counter() > self.deadline:
            raise _OutOfTime
        self.evals += 1
        x = np.clip(np.asarray(x, dtype=float), self.par.lo, self.par.hi) if timed else np.asarray(x, float)
        try:
            with np.errstate(all="ignore"):
                inst = self.par.decode(x)
                if not self.par.valid(inst):
                    return -np.inf
                res = self.st.run(self.fam, None, None, batch=inst, reading=None)
        except _REFUSED:
            return -np.inf
        p = next((q for q in res.parts if q.name == self.part), None)
        r = -np.inf if p is None else part_ratio(p)
        r = r if np.isfinite(r) else (-np.inf if r != np.inf else np.inf)
        if timed and r > self.best:
            self.best, self.best_x = r, x.copy()
        return r

    def __call__(self, x):
        r = self.ratio(x)
        return -r if np.isfinite(r) else (1e300 if r < 0 else -1e300)


def optimise_part(statement, family: str, part: str, starts: list, seconds: float) -> dict:
    """Maximise LHS/RHS of ``part`` from each one-instance batch of ``starts`` (best first) within
    ``seconds``; the JSON-ready result described in the module docstring."""
    t0 = time.perf_counter()
    deadline = t0 + max(seconds, 0.0)
    best = None
    total_evals, converged, tried = 0, True, 0
    for k, start in enumerate(starts):
        par = parametrisation(statement, family, start)
        # each start its share of what is left; the last start (and path) whatever remains
        share = (deadline - time.perf_counter()) / (len(starts) - k + 1)
        obj = _Objective(statement, family, par, part, time.perf_counter() + max(share, 0.0))
        x0 = par.encode()
        try:
            obj.ratio(x0)
        except _OutOfTime:
            obj.deadline = np.inf  # every start gets its own evaluation
            obj.ratio(x0)
        tried += 1
        if len(x0) and np.isfinite(obj.best):
            converged &= _nelder_mead(obj, x0, par)
            while converged and _integer_line_search(obj, par):  # a count moved: polish from there
                converged &= _nelder_mead(obj, obj.best_x, par)
        total_evals += obj.evals
        if obj.best_x is not None and (best is None or obj.best > best[0]):
            best = (obj.best, obj.best_x, par)
        if time.perf_counter() > deadline:
            converged = converged and k == len(starts) - 1
            break
    explored = 0
    if best is not None and np.isfinite(best[0]) and len(best[1]) and time.perf_counter() < deadline:
        # what is left: random points in the best start's box, then Nelder–Mead from the best of them
        par = best[2]
        left = deadline - time.perf_counter()
        obj = _Objective(statement, family, par, part, time.perf_counter() + EXPLORE_SHARE * left)
        rng = np.random.default_rng(0)
        try:
            while True:
                obj.ratio(par.lo + rng.random(len(par.lo)) * (par.hi - par.lo))
                explored += 1
        except _OutOfTime:
            pass
        if obj.best_x is not None and np.isfinite(obj.best):
            obj.deadline = deadline
            _nelder_mead(obj, obj.best_x, par)
            while _integer_line_search(obj, par):
                _nelder_mead(obj, obj.best_x, par)
        total_evals += obj.evals
        if obj.best_x is not None and obj.best > best[0]:
            best = (obj.best, obj.best_x, par)
    out = {"part": part, "starts": tried, "evaluations": total_evals, "budget_s": float(seconds)}
    out["explored"] = explored
    if best is None or not np.isfinite(best[0]):
        return {**out, "status": "no applicable start", "seconds": time.perf_counter() - t0}
    r, x, par = best
    out.update(
        best=float(r),
        parameters=par.values(x),
        coordinates=par.names,
        converged=bool(converged),
        bound_attained=bool(abs(r - 1.0) <= ATTAINED_RTOL),
    )
    edge = [
        (k, -1.0 if x[k] - par.lo[k] <= _EDGE else 1.0)
        for k in range(len(x))
        if x[k] - par.lo[k] <= _EDGE or par.hi[k] - x[k] <= _EDGE
    ]
    # a coordinate at its declared limit (``Simplify.bounds``) is not a boundary of the family: said, not pathed
    # and a count without declared limits at the top of its box (its start: it never grows, see
    # Parametrisation) is at its search limit too, never pathed towards larger counts
    limits = [
        k
        for k, d in edge
        if par.at_limit(k, x) or (d > 0 and par.coords[k].integer and par.coords[k].limit is None)
    ]
    edge = [(k, d) for k, d in edge if k not in limits]
    if limits:
        out["at_limit"] = {par.names[k]: par.values(x)[par.names[k]] for k in limits}
    obj = _Objective(statement, family, par, part, max(deadline, time.perf_counter() + seconds / 4))
    path = _path(obj, par, x, edge, r) if edge else None
    if path is not None and path["rising"] and len(edge) > 1:
        path = _one_parameter_ray(obj, par, x, edge, r, path)
    elif path is not None:
        path["ray"] = f"{path['parameter']} alone, the others fixed at the best point"
    if path is not None and path["rising"] and path["best_on_path"] > r:
        r, x = path["best_on_path"], path.pop("best_x")  # further along the path than the box allowed
        out.update(best=float(r), parameters=par.values(x))
    if path is not None:
        path.pop("best_x", None)
    instance = par.decode(x)
    out["instance"] = {k: np.asarray(v) for k, v in instance.items()}
    out["evaluations"] += obj.evals
    if (path is None or not path["rising"]) and not converged:
        out["status"] = "not converged"  # the budget ran out first: a lower bound of the sup, nothing more
        out["bound_attained"] = bool(abs(r - 1.0) <= ATTAINED_RTOL)
    elif path is None or not path["rising"]:
        out["status"] = "attained"
        if path is not None:
            out["flat_at_edge"] = [par.names[k] for k, _ in edge]
    else:
        out["path"] = path
        out["bound_attained"] = False  # a limit, not a value at finite parameters
        growth = _growth(path)
        out["growth"] = growth
        out["status"] = "unbounded" if growth is not None and growth["slope"] >= MIN_SLOPE else "approached"
    out["seconds"] = time.perf_counter() - t0
    return out


def _nelder_mead(obj, x0, par) -> bool:
    """Nelder–Mead from ``x0``, restarted from its best point while it improves (at most 4 runs);
    whether it converged before the deadline."""
    x = x0
    for _ in range(4):
        before = obj.best
        step = np.where(par.hi - par.lo > 0, 0.05 * (par.hi - par.lo), 0.1)
        simplex = np.vstack(
            [x] + [np.clip(x + np.eye(len(x))[i] * step[i], par.lo, par.hi) for i in range(len(x))]
        )
        for i in range(1, len(simplex)):  # a vertex clipped onto the start: step inwards instead
            if np.array_equal(simplex[i], x):
                simplex[i, i - 1] = np.clip(x[i - 1] - step[i - 1], par.lo[i - 1], par.hi[i - 1])
        try:
            minimize(
                obj,
                x,
                method="Nelder-Mead",
                bounds=list(zip(par.lo, par.hi, strict=True)),
                options={
                    "initial_simplex": simplex,
                    "xatol": 1e-6,
                    "fatol": 1e-15,
                    "maxfev": 400 * (len(x) + 1),
                    "adaptive": len(x) > 3,
                },
            )
        except _OutOfTime:
            return False
        x = obj.best_x
        if not obj.best > before + 1e-13 * abs(before):
            break
    return True


def _integer_line_search(obj, par) -> bool:
    """A 1-D search over each count (an integer coordinate with declared limits) with the others fixed at
    the best point: its values on a log grid over the box (:data:`INTEGER_GRID` points) and the neighbours
    of the best; whether one raised the ratio (then the best point moved there)."""
    try:
        return _integer_steps(obj, par)
    except _OutOfTime:
        return False


def _integer_steps(obj, par) -> bool:
    moved = False
    for k, c in enumerate(par.coords):
        # only a count whose limits the statement declares (``Simplify.bounds``): the statement knows what
        # its largest value costs; an undeclared count's box is DECADES wide, and a grid point at its top
        # can cost more memory than the machine has (perfedavg.lemma4_3 enumerates compositions of n)
        if not c.integer or c.limit is None or obj.best_x is None:
            continue
        x = np.array(obj.best_x, dtype=float)
        grid = np.unique(
            np.concatenate([np.linspace(par.lo[k], par.hi[k], INTEGER_GRID), x[k] + _NEIGHBOURS])
        )
        before = obj.best
        for g in np.clip(grid, par.lo[k], par.hi[k]):
            y = x.copy()
            y[k] = g
            obj.ratio(y)
        moved |= bool(obj.best > before + 1e-13 * abs(before))
    return moved


def _one_parameter_ray(obj, par, x, edge, best, joint):
    """The growth law along a ray where one parameter moves and the others stay at the best point: the
    edge coordinate whose own ray rises most (its last ratio largest) replaces the joint ``path`` (which is
    kept under ``"joint"``); when none rises alone, the joint path stays, and says it is joint."""
    rays = []
    for k, d in edge:
        ray = _path(obj, par, x, [(k, d)], best)
        if ray["rising"]:
            rays.append(ray)
    if not rays:
        joint["ray"] = "joint: " + ", ".join([joint["parameter"], *joint["also"]]) + " move together"
        return joint
    top = max(rays, key=lambda p: p["best_on_path"])
    top["ray"] = f"{top['parameter']} alone, the others fixed at the best point"
    top["joint"] = {k: v for k, v in joint.items() if k != "best_x"}
    return top


def _path(obj, par, x, edge, best):
    """The ratio along the path on which the edge coordinates move together (``PATH_STEPS`` decades, or
    units for a linear coordinate times its scale): ``{"parameter", "towards", "values", "ratios",
    "rising"}``."""
    k0, d0 = edge[0]
    c0 = par.coords[k0]
    if c0.log:  # |value| = 10^x: up is towards infinity (minus infinity for a negative value)
        towards = ("∞" if d0 > 0 else "0") if c0.sign > 0 else ("−∞" if d0 > 0 else "0")
    else:
        towards = "+∞" if d0 > 0 else "−∞"
    values, ratios, best_x = [], [], np.array(x, dtype=float)
    for s in PATH_STEPS:
        y = np.array(x, dtype=float)
        for k, d in edge:
            c = par.coords[k]
            y[k] = x[k] + d * s if c.log else x[k] + d * (10.0 ** abs(s) - 1) * np.sign(s) * (1 + abs(x[k]))
        try:
            r = obj.ratio(y, timed=False) if time.perf_counter() <= obj.deadline else None
        except Exception:  # any error: a point beyond the box that the evaluation cannot handle
            r = None
        values.append(par._value(c0, y[k0]))
        ratios.append(float(r) if r is not None and np.isfinite(r) else None)
        if ratios[-1] is not None and ratios[-1] >= max(
            (v for v in ratios if v is not None), default=-np.inf
        ):
            best_x = y
    inner = [r for s, r in zip(PATH_STEPS, ratios, strict=True) if s < 0 and r is not None]
    outer = [r for s, r in zip(PATH_STEPS, ratios, strict=True) if s >= 0 and r is not None]
    rising = bool(inner and outer and max(outer) > max(inner) * (1 + 1e-12) + 1e-300)
    return {
        "parameter": c0.name,
        "also": [par.coords[k].name for k, _ in edge[1:]],
        "towards": towards,
        "values": values,
        "ratios": ratios,
        "rising": rising,
        "best_on_path": max((r for r in ratios if r is not None), default=best),
        "best_x": best_x,
    }


def _growth(path):
    """The power law of the ratio along ``path``: the log-log slope of ratio against |parameter| over its
    points from the box's edge outwards (positive ratios, increasing), when they are at least
    :data:`MIN_POINTS` spanning :data:`MIN_DECADES` decades; None otherwise."""
    pts = [
        (abs(v), r)
        for s, v, r in zip(PATH_STEPS, path["values"], path["ratios"], strict=True)
        if s >= -1 and r is not None and r > 0 and v != 0
    ]
    if len(pts) < MIN_POINTS:
        return None
    lv = np.log10([p for p, _ in pts])
    lr = np.log10([r for _, r in pts])
    if lv.max() - lv.min() < MIN_DECADES or not np.all(np.diff(lr) > 0):
        return None
    slope = float(np.polyfit(lv, lr, 1)[0])
    return {
        "slope": abs(slope),
        "points": len(pts),
        "decades": float(lv.max() - lv.min()),
        "law": f"LHS/RHS ~ {path['parameter']}^{slope:.3g}",
    }


def optimise_record(
    statement, family: str, batch: dict, parts: list, seconds: float, *, starts: int = 2
) -> list:
    """:func:`optimise_part` for each of ``parts`` (judged parts of ``statement`` on ``batch``, the
    theorem's inequality parts) from its ``starts`` worst instances, ``seconds`` shared among them."""
    from moreau.analysis.engine.core import take

    out = []
    todo = [p for p in parts if p.applicable]
    for j, p in enumerate(todo):
        s = p.sides
        lhs = s.lhs_ci[0] if s.lhs_ci is not None else s.lhs
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(
                s.applicable & (s.rhs > 0) & np.isfinite(lhs) & np.isfinite(s.rhs), lhs / s.rhs, -np.inf
            )
        order = [int(i) for i in np.argsort(-r, kind="stable")[:starts] if np.isfinite(r[i])]
        left = seconds - 0.0
        share = max(left / (len(todo) - j), 0.0) if todo else 0.0
        t0 = time.perf_counter()
        res = optimise_part(statement, family, p.name, [take(batch, [i]) for i in order], share)
        res["start_instances"] = order
        res["sample_max"] = float(r[order[0]]) if order else None
        out.append(res)
        seconds -= time.perf_counter() - t0
    return out
