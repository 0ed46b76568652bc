r"""``moreau.audit.audit``: run an implementation beside the paper's algorithm, find where they part,
where the implementation ends up, and which named deviation reproduces it."""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from ._deviations import DEVIATIONS, Deviation
from ._engine import ALGORITHMS, ENGINES, Knobs, run_variant, steps_per_round
from ._instance import Client, Instance, instance
from ._targets import _euclid, _optimum, _reference, check_builtin

__all__ = ["audit", "AuditReport", "Fit", "AuditError", "DEFAULT_HYPER"]

#: The hyperparameters each audit uses unless ``hyper`` overrides them (stable on both families).
DEFAULT_HYPER: dict[str, dict[str, Any]] = {
    "fedavg": {"eta": 0.1, "tau": 5, "S": None},
    "fedprox": {"lam": 1.0, "gamma": 0.5, "eta": 0.1, "K": 5},
    "pfedme": {"lam": 2.0, "eta": 0.2, "beta": 1.0, "R": 3, "inner": 5, "inner_eta": 0.1, "S": None},
    "fedfw": {"lam0": 1.0, "K": 1, "S": None, "radius": 1.0},
}
#: Rounding allowance: tolerance = ROUNDING * eps * (1 + local steps so far) * (1 + max |w_ref|).
ROUNDING = 16.0

RoundFn = Callable[..., Any]


class AuditError(ValueError):
    """The implementation under audit cannot be run: a bad signature, a bad return value, or an
    exception inside it (the message names which, in one line)."""


@dataclass(frozen=True)
class Fit:
    """A deviation (or a combination: ``names`` of length 2 or 3) fitted to the implementation's iterates:
    ``params`` the fitted values by parameter name, ``residual`` the largest distance over rounds
    between the variant's and the implementation's global models, ``explained`` whether that is
    within the rounding tolerance at every round."""

    names: tuple[str, ...]
    params: dict[str, float]
    residual: float
    explained: bool

    def __str__(self) -> str:
        ps = ", ".join(f"{k} = {v:.10g}" for k, v in self.params.items())
        return " + ".join(self.names) + (f" ({ps})" if ps else "")


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit` found (host numpy arrays, index t: after t rounds).

    ``distance`` ``(rounds+1,)``: :math:`\\|w_t^{impl} - w_t^{ref}\\|`; ``tolerance`` ``(rounds+1,)``:
    the rounding allowance at each round; ``parted_round`` the first round beyond it (None: they
    match); ``parted_clients`` the clients whose local models part first in that round (where the
    adapter exposes them, else None); ``optimum`` the exact optimum of the paper's problem;
    ``bias`` :math:`\\|w_T^{impl} - w^\\star\\|` and ``reference_bias`` the printed algorithm's
    after the same rounds; ``gap``/``reference_gap`` the objective's excess over its minimum;
    ``last_step`` :math:`\\|w_T^{impl} - w_{T-1}^{impl}\\|`; ``fits`` every deviation tried, best first;
    ``diagnosis`` the best fit that explains the iterates (None: matching, or unexplained)."""

    algorithm: str
    description: str
    hyper: dict[str, Any]
    rounds: int
    dtype: str
    w_impl: np.ndarray
    w_ref: np.ndarray
    distance: np.ndarray
    tolerance: np.ndarray
    parted_round: int | None
    parted_clients: tuple[int, ...] | None
    optimum: np.ndarray
    bias: float
    reference_bias: float
    gap: float
    reference_gap: float
    last_step: float
    fits: tuple[Fit, ...] = field(default=())

    @property
    def matches(self) -> bool:
        return self.parted_round is None

    @property
    def diagnosis(self) -> Fit | None:
        good = [f for f in self.fits if f.explained]
        return good[0] if good else None

    @property
    def exit_code(self) -> int:
        """0 when the implementation matches the paper's algorithm, 1 when it departs."""
        return 0 if self.matches else 1

    def __str__(self) -> str:
        hp = ", ".join(f"{k}={v}" for k, v in self.hyper.items())
        out = [
            f"audit of {self.algorithm} ({hp}; {self.rounds} rounds, {self.dtype})",
            f"  on {self.description}",
        ]
        if self.matches:
            out.append(
                f"  MATCHES the paper's algorithm: largest distance {np.max(self.distance):.3g} "
                f"(rounding allowance {self.tolerance[-1]:.3g} at round {self.rounds})"
            )
        else:
            t = self.parted_round
            assert t is not None
            who = "" if not self.parted_clients else f", clients {list(self.parted_clients)}"
            out.append(
                f"  PARTS from the paper's algorithm at round {t}{who}: distance {self.distance[t]:.3g} "
                f"> allowance {self.tolerance[t]:.3g}"
            )
            marks = sorted({1, t, (t + self.rounds) // 2, self.rounds})
            out.append(
                "  distance over rounds: " + ", ".join(f"t={s}: {self.distance[s]:.3g}" for s in marks)
            )
        out.append(
            f"  ends at |w_T - w*| = {self.bias:.3g} (the paper's algorithm after {self.rounds} rounds: "
            f"{self.reference_bias:.3g}); objective excess {self.gap:.3g} (paper's: {self.reference_gap:.3g}); "
            f"last step {self.last_step:.3g}"
        )
        if not self.matches:
            d = self.diagnosis
            if d is not None:
                out.append(
                    f"  WHY: {d} reproduces the iterates to rounding (largest distance {d.residual:.3g})"
                )
                for other in [f for f in self.fits if f.explained][1:]:
                    out.append(f"    also explained by {other} (largest distance {other.residual:.3g})")
            else:
                best = min(self.fits, key=lambda f: f.residual) if self.fits else None
                out.append(
                    "  WHY: unexplained by the deviation library"
                    + ("" if best is None else f"; nearest {best}, largest distance {best.residual:.3g}")
                )
        return "\n".join(out)


def _check_callable(fn: Any, name: str, positional: int, hyper: Mapping[str, Any]) -> None:
    if not callable(fn):
        raise AuditError(f"{name} must be callable (got {type(fn).__name__})")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin without a signature: accepted, called as documented
    try:
        sig.bind(*([None] * positional), **hyper)
    except TypeError as exc:
        raise AuditError(
            f"{name}{sig} must accept {positional} positional arguments and the keywords {sorted(hyper)} ({exc})"
        ) from None


def _as_point(x: Any, d: int, what: str) -> np.ndarray:
    try:
        a = np.asarray(x)
    except Exception as exc:  # noqa: BLE001  (any object: reported as a bad return value)
        raise AuditError(f"{what} must be an array of shape ({d},) (got {type(x).__name__}: {exc})") from None
    if a.shape != (d,) or a.dtype.kind not in "fiu":
        raise AuditError(
            f"{what} must be a real array of shape ({d},) (got shape {a.shape}, dtype {a.dtype})"
        )
    return a


def _run_impl(
    impl: RoundFn | tuple[RoundFn, RoundFn],
    inst: Instance,
    hyper: Mapping[str, Any],
    rounds: int,
    seed: int,
    w0: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Server states ``(rounds+1, D)`` from ``w0`` (default 0, D = d), local models
    ``(rounds+1, m, d)`` or None (index 0: zeros, not compared), and the dtype."""
    clients: list[Client] = list(inst.clients)
    if isinstance(impl, tuple):
        if len(impl) != 2:
            raise AuditError(f"a pair implementation is (client_update, aggregate) (got {len(impl)} items)")
        _check_callable(impl[0], "client_update", 3, hyper)
        _check_callable(impl[1], "aggregate", 4, hyper)
    else:
        _check_callable(impl, "round_fn", 3, hyper)
    rng = np.random.default_rng(seed)
    w = np.zeros(inst.dim) if w0 is None else np.array(w0, dtype=float)
    d, m = w.shape[0], inst.m
    gs, ls, locs, dtypes = [w], [np.zeros((m, inst.dim))], True, set()
    for t in range(1, rounds + 1):
        where = f"round {t}"
        try:
            if isinstance(impl, tuple):
                cu, agg = impl
                local = []
                for c in clients:
                    where = f"round {t}, client_update of client {c.index}"
                    local.append(_as_point(cu(w.copy(), c, rng, **hyper), d, f"client_update ({where})"))
                stacked = np.stack(local)
                L: np.ndarray | None = stacked
                where = f"round {t}, aggregate"
                new = agg(w.copy(), stacked.copy(), clients, rng, **hyper)
            else:
                out = impl(w.copy(), clients, rng, **hyper)
                new, loc = out if isinstance(out, tuple) and len(out) == 2 else (out, None)
                L = None if loc is None else np.asarray(loc)
                if L is not None:
                    if L.shape != (m, inst.dim):
                        raise AuditError(
                            f"round_fn's local models must have shape ({m}, {inst.dim}) (got {L.shape})"
                        )
        except AuditError:
            raise
        except Exception as exc:  # noqa: BLE001  (the user's code: one line naming where)
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise AuditError(f"the implementation raised {type(exc).__name__} at {where}: {first}") from exc
        w_new = _as_point(new, d, f"the new global model ({where})")
        dtypes.add(w_new.dtype)
        w = np.asarray(w_new, dtype=float)
        gs.append(w)
        if L is None:
            locs = False
        else:
            ls.append(np.asarray(L, dtype=float))
    low = min(dtypes, key=lambda t: np.finfo(t).eps if t.kind == "f" else 0.0) if dtypes else np.dtype(float)
    return np.stack(gs), (np.stack(ls) if locs else None), str(low)


def _gauss_newton(
    vals: list[float],
    params: Sequence[Any],
    traj: Callable[[Sequence[float]], np.ndarray],
    target: np.ndarray,
    tol: np.ndarray,
    score: Callable[[Sequence[float]], float],
) -> list[float]:
    """Polish the fitted values by Gauss-Newton on the trajectory residual (central differences):
    a bounded Brent search stops at sqrt(eps) relative accuracy, this reaches rounding."""
    if not params or not all(math.isfinite(v) for v in vals):
        return vals
    best = score(vals)
    wt = 1.0 / tol[:, None]
    for _ in range(4):
        try:
            with np.errstate(all="ignore"):
                r0 = ((traj(vals) - target) * wt).ravel()
                cols = []
                for j in range(len(vals)):
                    h = 1e-6 * max(abs(vals[j]), 1e-3)
                    up, dn = list(vals), list(vals)
                    up[j] += h
                    dn[j] -= h
                    cols.append(((traj(up) - traj(dn)) * wt).ravel() / (2 * h))
            J = np.stack(cols, axis=1)
            step = np.linalg.lstsq(J, -r0, rcond=None)[0]
        except (ValueError, np.linalg.LinAlgError):
            break
        cand = [float(min(max(v + s, p.lo), p.hi)) for v, s, p in zip(vals, step, params, strict=True)]
        sc = score(cand)
        if not sc < best:
            break
        vals, best = cand, sc
    return vals


def _fit(
    devs: Sequence[Deviation],
    target: np.ndarray,
    tol: np.ndarray,
    run: Callable[[Knobs], np.ndarray],
    hyper: Mapping[str, Any],
    inst: Instance,
    start: Mapping[str, float] | None = None,
) -> Fit:
    """Fit the parameters of ``devs`` (applied in order) to ``target``: a grid and a bounded Brent
    refinement per parameter (coordinate sweeps for two parameters)."""

    def knobs(vals: Sequence[float]) -> Knobs:
        k, it = Knobs(), iter(vals)
        for dv in devs:
            k = dv.apply(k, next(it) if dv.param else math.nan, hyper, inst)
        return k

    def dist(vals: Sequence[float]) -> np.ndarray:
        with np.errstate(all="ignore"):
            try:
                traj = run(knobs(vals))
            except (ValueError, FloatingPointError, OverflowError, np.linalg.LinAlgError):
                return np.full(target.shape[0], np.inf)
            r = np.linalg.norm(traj - target, axis=-1)
        return np.where(np.isfinite(r), r, np.inf)

    def score(vals: Sequence[float]) -> float:
        r = dist(vals) / tol  # in units of the allowance: every round counts
        return float(np.sum(r * r)) if np.all(np.isfinite(r)) else math.inf

    params = [dv.param for dv in devs if dv.param is not None]
    vals = [(start or {}).get(p.name, math.nan) for p in params]
    for sweep in range(1 if len(params) < 2 else 4):
        for j, prm in enumerate(params):

            def g(x: float, j: int = j) -> float:
                v = list(vals)
                v[j] = x
                return score(v)

            if sweep == 0 and math.isnan(vals[j]):
                grid = np.geomspace(prm.lo, prm.hi, 29) if prm.log else np.linspace(prm.lo, prm.hi, 29)
            else:  # refine around the current value
                c = vals[j]
                grid = np.linspace(
                    max(prm.lo, c * 0.8 if prm.log else c - 0.1),
                    min(prm.hi, c * 1.25 if prm.log else c + 0.1),
                    9,
                )
            sc = [g(float(x)) for x in grid]
            i = int(np.argmin(sc))
            a, b = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
            best, bx = sc[i], float(grid[i])
            if math.isfinite(best) and b > a:
                res = minimize_scalar(
                    g, bounds=(a, b), method="bounded", options={"xatol": 1e-15 * max(abs(b), 1e-300)}
                )
                if float(res.fun) <= best:
                    bx = float(res.x)
            vals[j] = bx
    vals = _gauss_newton(vals, params, lambda v: run(knobs(v)), target, tol, score)
    vals = [
        float(round(v)) if p.integer and math.isfinite(v) else v for v, p in zip(vals, params, strict=True)
    ]
    with np.errstate(all="ignore"):
        r = dist(vals)
    names = tuple(dv.name for dv in devs)
    return Fit(
        names,
        {p.name: v for p, v in zip(params, vals, strict=True)},
        float(np.max(r)),
        bool(np.all(r <= tol)),
    )


#: Triples are searched among at most this many candidate deviations (C(8, 3) = 56 fits at most).
MAX_TRIPLE_CANDIDATES = 8
#: ... taken from the deviations of the best this many pairs, then from the singles that reduce the residual.
TRIPLE_SEED_PAIRS = 3


def _start(singles: Mapping[str, Fit], devs: Sequence[Deviation]) -> dict[str, float] | None:
    """Start a combination's coordinate search at its members' single fits when it has two
    parameters or more; one parameter gets a fresh grid search (its single fit, made while the
    other deviations were missing, may be far off)."""
    if sum(dv.param is not None for dv in devs) < 2:
        return None
    return {k: v for dv in devs for k, v in singles[dv.name].params.items()}


def _triples(
    devs: Sequence[Deviation],
    singles: Mapping[str, Fit],
    fits: Sequence[Fit],
    base: float,
    target: np.ndarray,
    tol: np.ndarray,
    run: Callable[[Knobs], np.ndarray],
    hyper: Mapping[str, Any],
    inst: Instance,
) -> list[Fit]:
    """Every triple of distinct groups among the candidates: the members of the
    :data:`TRIPLE_SEED_PAIRS` best pairs (greedy: the pairs that come closest), then the single
    deviations that each reduce the largest distance below ``base`` (the reference's own), best
    first, at most :data:`MAX_TRIPLE_CANDIDATES` in all."""
    by_name = {dv.name: dv for dv in devs}
    pair_fits = sorted((f for f in fits if len(f.names) == 2), key=lambda f: f.residual)
    order: list[str] = []
    for f in pair_fits[:TRIPLE_SEED_PAIRS]:
        order.extend(n for n in f.names if math.isfinite(f.residual) and f.residual < base)
    reducing = sorted((f for f in singles.values() if f.residual < base), key=lambda f: f.residual)
    order.extend(f.names[0] for f in reducing)
    cands = [by_name[n] for n in dict.fromkeys(order)][:MAX_TRIPLE_CANDIDATES]
    out = []
    for trio in itertools.combinations(cands, 3):
        if len({dv.group for dv in trio}) < 3:
            continue
        out.append(_fit(list(trio), target, tol, run, hyper, inst, _start(singles, trio)))
    return out


def audit(
    impl: RoundFn | tuple[RoundFn, RoundFn],
    algorithm: str,
    *,
    family: str = "quadratic",
    rounds: int = 20,
    seed: int = 0,
    heterogeneous: bool = True,
    weights: str = "uniform",
    hyper: Mapping[str, Any] | None = None,
    inst: Instance | None = None,
    deviations: Mapping[str, Deviation] | None = None,
    pairs: bool = True,
    triples: bool = True,
) -> AuditReport:
    r"""Audit an implementation of ``algorithm`` (``"fedavg"``, ``"fedprox"``, ``"pfedme"`` or
    ``"fedfw"``: FedFW over the L2 ball of radius ``hyper["radius"]`` at 0, quadratic clients).

    ``impl`` is a round function ``round_fn(w_global, clients, rng, **hyper) -> w_global`` (or
    ``-> (w_global, local_models (m, d))``) or a pair ``(client_update, aggregate)``:
    ``client_update(w_global, client, rng, **hyper) -> w_local`` and
    ``aggregate(w_global, local_models (m, d), clients, rng, **hyper) -> w_global``
    (docs/audit.md).  It runs ``rounds`` rounds from :math:`w_0 = 0` on ``inst`` (default
    :func:`moreau.audit.instance` (``family``, ``seed``, ``heterogeneous``, ``weights``)) with the
    hyperparameters :data:`DEFAULT_HYPER` updated by ``hyper``, beside :mod:`moreau.fl`'s
    algorithm with the same hyperparameters and rng seed, and returns an :class:`AuditReport`:
    where they part (first round beyond a rounding allowance of the implementation's dtype),
    where the implementation ends up against the exact optimum (:func:`moreau.fl.global_train`
    for FedAvg, :func:`moreau.fl.fedprox_optimum` for FedProx and pFedMe,
    :func:`moreau.fl.fedfw_optimum` for FedFW), and, when they part,
    every deviation of ``deviations`` (default :data:`moreau.audit.DEVIATIONS`) fitted, then
    (``pairs``, when no single one explains the iterates) every pair of them, then
    (``triples``, when no pair does either) the triples of a pruned candidate set: the members
    of the best pairs and the single deviations that each reduce the distance to the
    implementation, at most :data:`MAX_TRIPLE_CANDIDATES` (docs/audit.md).
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS} (got {algorithm!r})")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an int >= 1 (got {rounds!r})")
    h = dict(DEFAULT_HYPER[algorithm])
    unknown = set(hyper or {}) - set(h)
    if unknown:
        raise ValueError(f"hyper has no {sorted(unknown)} for {algorithm} (its keys: {sorted(h)})")
    h.update(hyper or {})
    eng = ENGINES.get(algorithm)
    if inst is None:
        inst = (
            instance(family, seed=seed, heterogeneous=heterogeneous, weights=weights)
            if eng is None
            else eng.instance(family, seed, heterogeneous, weights)
        )
    if eng is None:
        check_builtin(algorithm, inst)
    else:
        eng.check(inst, h)
    if eng is not None and isinstance(impl, tuple):
        raise AuditError(
            f"{algorithm} is audited through a round function, not a (client_update, aggregate) pair"
        )
    w0 = None if eng is None else eng.start(inst, h, seed)
    w_impl, l_impl, dtype = _run_impl(impl, inst, h, rounds, seed, w0)
    l_ref: np.ndarray | None
    if eng is None:
        ref = _reference(algorithm, inst, h, rounds, seed)
        w_ref, l_ref = np.asarray(ref.w_global), np.asarray(ref.w_local)
    else:
        w_ref, l_ref = eng.reference(inst, h, rounds, seed)
    eps = float(np.finfo(np.dtype(dtype)).eps) if np.dtype(dtype).kind == "f" else float(np.finfo(float).eps)
    steps = steps_per_round(algorithm, h)
    scale = 1.0 + float(np.max(np.linalg.norm(w_ref, axis=-1)))
    tol = ROUNDING * eps * (1.0 + steps * np.arange(rounds + 1)) * scale
    dist = np.linalg.norm(w_impl - w_ref, axis=-1)
    dist = np.where(np.isfinite(dist), dist, np.inf)
    local_dist = None if l_impl is None or l_ref is None else np.linalg.norm(l_impl - l_ref, axis=-1)
    if local_dist is not None:
        local_dist[0] = 0.0  # (rounds+1, m): the start is the reference's, not returned by the code
    bad_rounds = np.flatnonzero(dist > tol)
    if local_dist is not None:
        bad_rounds = np.union1d(bad_rounds, np.flatnonzero(np.any(~(local_dist <= tol[:, None]), axis=-1)))
    parted = int(bad_rounds[0]) if bad_rounds.size else None
    clients = None
    if parted is not None and local_dist is not None:
        clients = tuple(int(i) for i in np.flatnonzero(~(local_dist[parted] <= tol[parted])))
    w_star, F, far = (*_optimum(algorithm, inst, h), _euclid) if eng is None else eng.optimum(inst, h)
    F_star = F(w_star)
    fits: list[Fit] = []
    if parted is not None:
        lib = DEVIATIONS if deviations is None else deviations
        devs = [dv for dv in lib.values() if algorithm in dv.algorithms and dv.applies(h, inst)]

        def run(k: Knobs) -> np.ndarray:
            return run_variant(algorithm, inst, h, rounds, seed, k)[0]

        singles = {dv.name: _fit([dv], w_impl, tol, run, h, inst) for dv in devs}
        fits.extend(singles.values())
        if pairs and not any(f.explained for f in fits):
            for a, b in itertools.combinations(devs, 2):
                if a.group == b.group:
                    continue
                fits.append(_fit([a, b], w_impl, tol, run, h, inst, _start(singles, (a, b))))
        if pairs and triples and not any(f.explained for f in fits):
            fits.extend(_triples(devs, singles, fits, float(np.max(dist)), w_impl, tol, run, h, inst))
        fits.sort(key=lambda f: (not f.explained, len(f.names), f.residual))
    fin = np.isfinite(w_impl[-1]).all()
    return AuditReport(
        algorithm=algorithm,
        description=inst.description,
        hyper=h,
        rounds=rounds,
        dtype=dtype,
        w_impl=w_impl,
        w_ref=w_ref,
        distance=dist,
        tolerance=tol,
        parted_round=parted,
        parted_clients=clients,
        optimum=w_star,
        bias=far(w_impl[-1], w_star) if fin else math.inf,
        reference_bias=far(w_ref[-1], w_star),
        gap=F(w_impl[-1]) - F_star if fin else math.inf,
        reference_gap=F(w_ref[-1]) - F_star,
        last_step=float(np.linalg.norm(w_impl[-1] - w_impl[-2])),
        fits=tuple(fits),
    )
