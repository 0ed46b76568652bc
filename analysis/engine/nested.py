r"""Nested hypotheses (issue 27, item 1): which of two nested hypotheses a claim actually needs.

A statement's printed hypotheses are often nested: μ-strongly convex implies convex, strongly convex
sample losses imply convex ones.  When a statement assumes the stronger one (``Statement.implies``
names it, or every instance of the family has it), ``moreau check --analyse`` judges the claim on
instances that violate exactly one of the two: they have the weaker hypothesis and not the stronger
(convex, not strongly convex), and reports

* **not needed on these instances**: the claim holds on every one of them (how many);
* **needed**: it fails on one with finite sides and a positive right side (instance, part, both sides);
* **needed: vacuous without it**: the right side turns infinite, undefined or non-positive there
  (the bound says nothing without the stronger hypothesis);
* **not exercised**: no such instance could be found or made (nothing is learnt).

The instances come from the run's batch when it has some (a mixed family), else they are *made* from
the batch's instances, each change one that moves the instance to the weaker side of the pair only:

* ``mu`` → 0: a field ``mu`` (T,) is the modulus of strong convexity (a ridge (μ/2)‖θ‖² on the
  logistic, multinomial and nonsmooth families; the modulus a quadratic statement declares);
* the quadratic's Hessian ``A`` (T, d, d), or every client's (T, m, d, d), projected off the eigenvector v
  of the (mean) Hessian's smallest eigenvalue (``A ← P A P``, P = I − vvᵀ: for one Hessian, that
  eigenvalue set to 0 and the others kept; for clients, v a common null direction, so their mean is
  singular), with ``mu`` → 0 beside it; the linear term follows the minimiser ``z`` where the batch has
  one (``b = A z``, so F* = F(z) stays finite), else loses its component along v (a minimiser exists);
  ``eig`` and ``L`` are recomputed, and a statement's ``Simplify.derive`` rebuilds its own derived fields.

Which side an instance lies on is never taken from the change: it is computed from the instance's own
numbers by :data:`PAIRS`' predicates (the stronger one is the property library's,
:mod:`moreau.analysis.engine.properties`; the weaker one a hypothesis predicate here, not a property
reported as shared), and a made instance that is not weaker-and-not-stronger is dropped.  The claim
is judged with every part's applicability dropped (a part whose printed hypotheses exclude μ = 0
would otherwise never be judged there), so the verdict is about the formula as printed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from moreau.analysis.engine.properties import PROPERTIES

__all__ = ["Pair", "PAIRS", "nested_hypotheses", "weaker_instances"]

_TOL = 1e-9  # an eigenvalue within this of 0, relative to the largest, is 0
#: a failure whose margin is at most this times the part's largest finite side is rounding, not a failure
#: (a made instance can be degenerate: x⁰ − x* in the zeroed direction gives both sides 0)
ROUNDING = 1e-12


def _mean_hessian_min(batch):
    """The smallest eigenvalue of the mean Hessian ``(T,)`` and the Hessians' scale, or None."""
    A = batch.get("A")
    if A is None or np.ndim(A) not in (3, 4) or not any(k in batch for k in ("b", "eig", "B", "g")):
        return None
    A = np.asarray(A, float)
    A = A[:, None] if A.ndim == 3 else A
    M = A.mean(axis=1)
    return np.linalg.eigvalsh(M)[:, 0], np.maximum(np.max(np.abs(M), axis=(1, 2)), np.finfo(float).tiny)


def _convex_objective(batch):
    """Convex (μ ≥ 0 and the mean Hessian positive semidefinite, where the batch has them)."""
    out = None
    mu = batch.get("mu")
    if mu is not None and np.ndim(mu) == 1:
        out = np.asarray(mu, float) >= 0
    h = _mean_hessian_min(batch)
    if h is not None:
        lo, scale = h
        c = lo >= -_TOL * scale
        out = c if out is None else out & c
    return out


def _strongly_convex_objective(batch):
    """Strongly convex: μ > 0 where the batch has a modulus, and a positive definite mean Hessian where it
    has Hessians (both, where it has both: a made instance must be weaker by every number it carries)."""
    out = None
    mu = batch.get("mu")
    if mu is not None and np.ndim(mu) == 1:
        out = np.asarray(mu, float) > 0
    h = _mean_hessian_min(batch)
    if h is not None:
        lo, scale = h
        c = lo > _TOL * scale
        out = c if out is None else out | c
    return out


@dataclass(frozen=True)
class Pair:
    """Two nested hypotheses: ``strong`` implies ``weak``.  ``implied_by``: the property name a statement's
    ``implies`` gives for ``strong``; ``weak(batch)``, ``strong(batch)``: one boolean per instance, or None
    where the batch lacks the fields; ``what``: the stronger hypothesis in words ("strong convexity")."""

    name: str
    implied_by: str
    weak: Callable
    strong: Callable
    what: str
    weak_text: str


def _samples(name):
    return lambda batch: PROPERTIES[name].compute(batch)


PAIRS: tuple = (
    Pair(
        "strongly convex objective ⊂ convex objective",
        "strongly convex objective (μ > 0)",
        _convex_objective,
        _strongly_convex_objective,
        "strong convexity",
        "convex, not strongly convex",
    ),
    Pair(
        "strongly convex sample losses ⊂ convex sample losses",
        "strongly convex sample losses",
        _samples("convex sample losses"),
        _samples("strongly convex sample losses"),
        "strong convexity of the sample losses",
        "convex sample losses, not strongly convex",
    ),
)


def _zero_mu(batch):
    if "mu" not in batch or np.ndim(batch["mu"]) != 1:
        return None
    return {**batch, "mu": np.zeros_like(np.asarray(batch["mu"], float))}


def _zero_eigenvalue(batch, spec=None):
    A = batch.get("A")
    if A is None or np.ndim(A) not in (3, 4) or np.shape(A)[-1] != np.shape(A)[-2]:
        return None
    A = np.asarray(A, float)
    clients = A.ndim == 4
    mean = A.mean(axis=1) if clients else A
    v = np.linalg.eigh(mean)[1][:, :, 0]  # (T, d): the direction of the mean Hessian's smallest eigenvalue
    P = np.eye(A.shape[-1]) - v[:, :, None] * v[:, None, :]
    P = P[:, None] if clients else P
    A2 = P @ A @ P  # every client's Hessian projected off v: v is a common null direction
    out = {**batch, "A": 0.5 * (A2 + np.swapaxes(A2, -1, -2))}
    vv = v[:, None, :] if clients else v
    if "z" in batch and "b" in batch and np.shape(batch["z"]) == np.shape(batch["b"]) == A.shape[:-1]:
        out["b"] = np.einsum("...ij,...j->...i", out["A"], np.asarray(batch["z"], float))
    elif "b" in batch and np.shape(batch["b"]) == A.shape[:-1]:
        b = np.asarray(batch["b"], float)
        out["b"] = b - np.sum(b * vv, axis=-1, keepdims=True) * vv
    a = np.linalg.eigvalsh(out["A"])
    if "eig" in batch and np.shape(batch["eig"]) == a.shape:
        out["eig"] = a
    if "L" in batch and np.ndim(batch["L"]) == 1:
        out["L"] = np.max(np.abs(a).reshape(a.shape[0], -1), axis=-1)
    if "mu" in batch and np.ndim(batch["mu"]) == 1:
        out["mu"] = np.zeros(a.shape[0])
    derive = getattr(spec, "derive", None)
    if derive is not None:
        rows = []
        for t in range(a.shape[0]):
            one = {k: np.asarray(x)[t : t + 1] if np.ndim(x) else x for k, x in out.items()}
            rows.append({**one, **{k: np.asarray(x) for k, x in derive(one).items()}})
        out = {k: np.concatenate([r[k] for r in rows]) if np.ndim(out[k]) else out[k] for k in out}
    return out


#: the changes that make an instance weaker (module docstring), tried in turn
CHANGES = (
    ("μ set to 0", lambda b, spec: _zero_mu(b)),
    ("A projected off its smallest eigenvector", _zero_eigenvalue),
)


def weaker_instances(statement, family: str, batch: dict, pair: Pair) -> tuple[dict | None, str]:
    """``(batch of instances that have pair.weak and not pair.strong, where they come from)``; ``(None,
    why)`` when none can be found or made."""
    from moreau.analysis.engine.core import take

    def side(b):
        with np.errstate(all="ignore"):
            w, s = pair.weak(b), pair.strong(b)
        if w is None or s is None:
            return None
        return np.asarray(w, bool) & ~np.asarray(s, bool)

    here = side(batch)
    if here is None:
        return None, "the batch carries no number that decides it"
    if here.any():
        return take(batch, np.flatnonzero(here)), f"{int(here.sum())} instance(s) of the run's batch"
    spec = (getattr(statement, "simplify", None) or {}).get(family)
    for what, change in CHANGES:
        try:
            with np.errstate(all="ignore"):
                made = change(batch, spec)
        except (ValueError, np.linalg.LinAlgError, KeyError, IndexError):
            continue
        if made is None:
            continue
        ok = side(made)
        if ok is not None and ok.any():
            return take(made, np.flatnonzero(ok)), f"{int(ok.sum())} instance(s) of the batch with {what}"
    return None, "no change of the batch's instances gives one"


def nested_hypotheses(statement, family: str, batch: dict, *, fails: str | None = None) -> list[dict]:
    """Each nested pair whose stronger hypothesis the statement assumes (``implies``, or every instance of
    ``batch`` has it): a JSON-ready dict ``pair``, ``hypothesis`` (the stronger one, in words), ``instances``
    (how many weaker ones were judged), ``source`` (from the batch or made, and how), ``verdict`` (module
    docstring) and, where it fails, ``instance``, ``part``, ``lhs``, ``rhs``, ``ratio``; ``text``: the
    report's line."""
    from moreau.analysis.engine.core import evaluate_claim, judge

    out = []
    for pair in PAIRS:
        with np.errstate(all="ignore"):
            strong = pair.strong(batch)
        declared = pair.implied_by in getattr(statement, "implies", ())
        if not declared and (strong is None or not np.all(strong)):
            continue
        entry = {
            "pair": pair.name,
            "hypothesis": pair.what,
            "assumed": "declared (implies)" if declared else "every instance has it",
        }
        if (
            fails is not None
        ):  # the claim fails with the stronger hypothesis: the weaker cannot teach anything
            entry.update(verdict="undecidable", instances=0, source="")
            entry["text"] = (
                f"{pair.what}: undecidable (the analysed claim fails on this batch: part {fails!r})"
            )
            out.append(entry)
            continue
        weaker, source = weaker_instances(statement, family, batch, pair)
        entry["source"] = source
        if weaker is None:
            entry.update(verdict="not exercised", instances=0)
            entry["text"] = f"{pair.what}: not exercised ({source})"
            out.append(entry)
            continue
        n = int(np.shape(next(v for v in weaker.values() if np.ndim(v)))[0])
        entry["instances"] = n
        try:
            with np.errstate(all="ignore"):
                parts = evaluate_claim(statement.evaluate, statement.prepared(weaker), dict(statement.claim))
        except (
            Exception
        ) as exc:  # a formula that cannot run without the stronger hypothesis: said, not raised
            entry.update(verdict="undefined", detail=f"{type(exc).__name__}: {str(exc)[:120]}")
            entry["text"] = f"{pair.what}: undefined without it ({entry['detail']})"
            out.append(entry)
            continue
        with np.errstate(all="ignore"):
            entry.update(_verdict(parts, judge))
        entry["text"] = _line(entry, pair)
        out.append(entry)
    return out


def _verdict(parts, judge) -> dict:
    vacuous = undefined = None
    for p in parts:
        if p.sides.role != "theorem" or p.claimed == "rate":
            continue
        s = p.sides
        q = judge(p.name, dataclasses.replace(s, applicable=np.ones(np.shape(s.lhs)[0], bool)))
        both = np.abs(np.concatenate([np.asarray(s.lhs, float), np.asarray(s.rhs, float)]))
        finite = both[np.isfinite(both)]
        tol = ROUNDING * (float(finite.max()) if finite.size else 0.0)  # a margin no larger is rounding
        for i in np.flatnonzero(~q.holds_each):
            lhs, rhs = float(s.lhs[i]), float(s.rhs[i])
            if not np.isfinite(lhs):
                undefined = undefined or {"instance": int(i), "part": p.name, "lhs": lhs, "rhs": rhs}
                continue
            if np.isfinite(rhs) and lhs - rhs <= tol:
                continue  # a tie within rounding (a degenerate made instance: both sides 0)
            if np.isfinite(rhs) and rhs > 0:
                return {
                    "verdict": "needed",
                    "instance": int(i),
                    "part": p.name,
                    "lhs": lhs,
                    "rhs": rhs,
                    "ratio": lhs / rhs,
                }
            vacuous = vacuous or {"instance": int(i), "part": p.name, "lhs": lhs, "rhs": rhs}
        lhs_ok = np.isfinite(np.asarray(s.lhs, float))
        bad = np.flatnonzero(lhs_ok & ~np.isfinite(np.asarray(s.rhs, float)))
        if bad.size and vacuous is None:
            j = int(bad[0])
            vacuous = {"instance": j, "part": p.name, "lhs": float(s.lhs[j]), "rhs": float(s.rhs[j])}
        if not lhs_ok.all() and undefined is None:
            j = int(np.flatnonzero(~lhs_ok)[0])
            undefined = {"instance": j, "part": p.name, "lhs": float(s.lhs[j]), "rhs": float(s.rhs[j])}
    for p in parts:  # rate parts: judged as the run judges them (their fitted exponents)
        if p.sides.role == "theorem" and p.claimed == "rate" and not p.holds:
            return {
                "verdict": "needed",
                "part": p.name,
                "instance": int(p.failures[0]) if p.failures.size else None,
            }
    if vacuous is not None:
        return {"verdict": "needed: vacuous without it", **vacuous}
    if undefined is not None:
        return {"verdict": "undefined", **undefined}
    return {"verdict": "not needed on these instances"}


def _line(e: dict, pair: Pair) -> str:
    where = f"on {e['instances']} {pair.weak_text} instance(s) ({e['source']})"
    v = e["verdict"]
    if v == "not needed on these instances":
        return f"{pair.what} not needed on these instances: the claim holds {where}"
    if v == "needed":
        if "lhs" in e:
            return (
                f"needs {pair.what}: fails {where}, e.g. #{e['instance']} ({e['part'][:50]}: lhs {e['lhs']:.4g} > "
                f"rhs {e['rhs']:.4g}, ratio {e['ratio']:.4g})"
            )
        return f"needs {pair.what}: the rate part {e['part'][:50]!r} fails {where}"
    if v == "undefined":
        return (
            f"{pair.what}: undefined without it: the left side is not finite {where}, e.g. #{e['instance']} "
            f"({e['part'][:50]}: lhs {e['lhs']:.4g}; the checker computes it with the stronger hypothesis)"
        )
    return (
        f"needs {pair.what}: without it the bound says nothing {where}: e.g. #{e['instance']} "
        f"({e['part'][:50]}: rhs {e['rhs']:.4g}, lhs {e['lhs']:.4g})"
    )
