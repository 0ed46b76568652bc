r"""The condition search (issue 27, item 3): the simplest added hypothesis under which a failing claim
holds on every instance, found from the run's own instances (docs/conditions.md).

Atoms (each restricts the cases the claim is judged on):

* a **property** of the instance (:func:`moreau.analysis.engine.properties.instance_properties`) or
  its negation;
* a **threshold on a batch field**: a per-instance scalar of the batch (``tau``, ``lam``, ``S``)
  or the ratio ``a/b`` of two positive ones (``lam/L``), ``field ≥ c``, ``field ≤ c`` and, for an
  integer field, ``field = c``;
* a **threshold on an argument of one of the claim's conditions** (a claim entry that returns a
  mask, e.g. ``sampling(S, n, tau)`` or pFedMe's ``condition(lam, L)``): the condition becomes
  "printed condition and argument ≥ c" (ratios of its positive arguments too, ``S/n``).  Unlike a
  batch field it acts where the statement applies its hypothesis (a sweep's own τ, not a field);
* a **range** entry of the claim (a number named ``*_min`` or ``*_max``, e.g. Frank–Wolfe's
  ``t_min``): ``t ≥ c`` raises it.

c is always an observed value: the boundary is fitted from both sides (the largest value on which
the claim fails, the smallest on which it holds, for ``≥``).

Search.  The claim is judged once per candidate (per instance: every part holds, not applicable
counting as holding); a condition *holds* when every case it admits holds and it keeps at least one
instance on which a part that fails is applicable (a condition that makes the failing part
inapplicable everywhere is vacuous).  One atom first; when some hold, "A or B" of two of them is
tried (a claim holds under A or B iff it holds under each, so "or" only widens a sufficient atom)
and kept when it keeps more instances.  When no single atom holds, "A and B".  Candidates rank by
instances kept (more first), then fewer atoms, then atoms on the claim's own conditions before
properties before batch fields.  The best candidates are validated on a fresh batch drawn from the
generator (its own stream, ``FRESH_FACTOR`` times the instances); the first that holds there is
reported, with an instance of the run's batch outside it on which the claim fails.
"""

from __future__ import annotations

import inspect
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from moreau.analysis.engine.core import Reading

#: claim entries that are conditions: a formula returning a mask (docs of moreau.analysis.engine.analyse)
_COND = re.compile(r"^(condition.*|cond\d*|.*_condition|.*_ok|steps)$")


def condition_keys(statement):
    """The claim entries that are conditions (see the module docstring)."""
    return [k for k in statement.claim if _COND.match(k)]


def _always(*args, **kwargs):
    shapes = [np.shape(a) for a in args if np.ndim(a)]
    return np.ones(np.broadcast_shapes(*shapes), dtype=bool) if shapes else True


__all__ = ["Atom", "Condition", "find_condition", "conditions_found", "SEARCH_SECONDS", "FRESH_FACTOR"]

#: wall-clock budget of one search (the atoms tried so far are kept when it runs out)
SEARCH_SECONDS = 10.0
#: the fresh validation batch has this many times the run's instances (at least 16)
FRESH_FACTOR = 2
#: how many steps a range entry (``t_min``) is raised at most
RANGE_STEPS = 10
#: at most this many conditions are reported (each validated, none implied by an earlier one)
MAX_REPORTED = 3
#: a condition must keep at least this many instances on which a failing part applies, and this fraction
#: of them: one that holds on two instances of sixty says little
MIN_KEPT, MIN_KEPT_FRACTION = 3, 0.1
#: fields that are not quantities of the problem (random seeds)
_NOT_QUANTITIES = re.compile(r"(^|_)seed")
_RANGE = re.compile(r"^(.+)_(min|max)$")
_GE, _LE, _EQ = "≥", "≤", "="


@dataclass(frozen=True)
class Atom:
    """One added hypothesis.  ``mask(batch, props) -> bool (T,)`` for an instance atom,
    ``change(claim) -> claim`` for an atom on the claim; ``tier`` 0 (the claim's own conditions),
    1 (a property), 2 (a batch field); ``source``: atoms of one source are never combined;
    ``boundary``: ``(failing value, holding value)`` of a fitted threshold."""

    text: str
    tier: int
    source: str
    mask: Callable | None = None
    change: Callable | None = None
    boundary: tuple | None = None
    base: float | None = None  # a range atom: the printed value of its entry
    value: float | None = None  # a threshold's c


@dataclass
class Condition:
    """A candidate: ``op`` "one" | "and" | "or" over ``atoms``; what it kept on the run's batch."""

    op: str
    atoms: tuple
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def text(self) -> str:
        return f" {self.op} ".join(a.text for a in self.atoms)

    @property
    def tier(self) -> int:
        return sum(a.tier for a in self.atoms)


# -- numbers ------------------------------------------------------------------------------------
def _fmt(x: float, other: float | None = None) -> str:
    """``x`` with 3 significant digits, more when needed to tell it from ``other``."""
    x = float(x)
    if x == int(x) and abs(x) < 1e15 and (other is None or float(other) != x):
        return str(int(x))
    for d in range(3, 17):
        s = f"{x:.{d}g}"
        if other is None or s != f"{float(other):.{d}g}":
            return s
    return repr(x)


def _cmp(v, op: str, c: float):
    v = np.asarray(v, dtype=float)
    return v >= c if op == _GE else v <= c if op == _LE else v == c


# -- judging a claim per instance --------------------------------------------------------------------
class _Judge:
    """The claim's per-instance verdicts on one batch, cached per set of claim atoms."""

    def __init__(self, st, fam, batch, claim, relevant=None):
        from moreau.analysis.engine.properties import instance_properties

        self.st, self.fam, self.batch, self.claim = st, fam, batch, dict(claim)
        self.prepared = st.prepared(batch)
        self.props = instance_properties(st, fam, batch)
        self.cache: dict = {}
        self.relevant = relevant
        self.result = self._run(self.claim)
        if self.relevant is None:  # the parts that fail per instance under the base claim
            self.relevant = {p.name for p in self.result.parts if (~p.holds_each).any()}
        self.n = self.result.instances

    def _run(self, claim):
        return self.st.run(
            self.fam,
            None,
            None,
            batch=self.batch,
            prepared=self.prepared,
            reading=Reading("condition", claim),
        )

    def verdicts(self, claim_atoms: tuple):
        """``(holds (T,), applicable (T,))`` under the base claim changed by ``claim_atoms``:
        ``applicable``: a part that fails under the base claim applies there."""
        key = tuple(sorted(a.text for a in claim_atoms))
        if key not in self.cache:
            claim = self.claim
            for a in claim_atoms:
                claim = a.change(claim)
            res = self.result if not claim_atoms else self._run(claim)
            holds = np.all([p.holds_each for p in res.parts], axis=0)
            app = np.zeros(res.instances, bool)
            for p in res.parts:
                if p.name in self.relevant:
                    app |= np.asarray(p.sides.applicable, bool)
            self.cache[key] = (holds, app)
        return self.cache[key]

    def mask(self, atoms) -> np.ndarray:
        m = np.ones(self.n, bool)
        for a in atoms:
            if a.mask is not None:
                m &= np.asarray(a.mask(self.batch, self.props), bool)
        return m

    def judge(self, cond: Condition) -> tuple[bool, np.ndarray]:
        """``(holds, kept)``: every case ``cond`` admits holds; the instances it keeps (admitted, a
        failing part applicable)."""
        if cond.op == "or":
            out = [self.judge(Condition("one", (a,))) for a in cond.atoms]
            return all(h for h, _ in out), np.any([k for _, k in out], axis=0)
        holds, app = self.verdicts(tuple(a for a in cond.atoms if a.change is not None))
        m = self.mask(cond.atoms)
        return bool(np.all(holds | ~m)), m & app


# -- atoms -------------------------------------------------------------------------------------------
def _property_atoms(props: dict) -> list[Atom]:
    """Each property and its negation, where both values occur in the batch (one that every instance has,
    or none, restricts nothing)."""
    out = []
    for name, v in props.items():
        if v.all() or not v.any():
            continue
        out.append(Atom(name, 1, f"property {name}", mask=lambda b, p, k=name: p[k]))
        out.append(Atom(f"not {name}", 1, f"property {name}", mask=lambda b, p, k=name: ~p[k]))
    return out


@dataclass
class _Family:
    """Thresholds on one scalar: ``where`` "field" (``value(batch)``), "arg" (``value(bound
    arguments)`` of claim entry ``entry``) or "range" (claim entry ``entry``, a number)."""

    label: str
    where: str
    values: np.ndarray
    integer: bool
    value: Callable | None = None
    entry: str = ""
    ops: tuple = (_GE, _LE)
    fixed: dict = field(default_factory=dict)  # the condition's arguments that are one number (n = 2)
    base: float | None = None  # a range entry's printed value

    @property
    def tier(self) -> int:
        return 2 if self.where == "field" else 0

    def atom(self, op: str, c: float, failing: float | None = None) -> Atom:
        lo, hi = self.values[0], self.values[-1]
        shown = _EQ if (op == _LE and c == lo) or (op == _GE and c == hi) else op
        text = f"{self.label} {shown} {_fmt(c, failing)}"
        if self.where == "arg":  # where the hypothesis goes, and the condition's fixed arguments
            text += f" (in {self.entry}" + "".join(f"; {k} = {_fmt(v)}" for k, v in self.fixed.items()) + ")"
        boundary = None if failing is None else (float(failing), float(c))
        src = f"{self.where} {self.entry}:{self.label}"
        if self.where == "field":
            return Atom(
                text, 2, src, mask=lambda b, p, f=self.value: _cmp(f(b), op, c), boundary=boundary, value=c
            )
        if self.where == "range":
            return Atom(
                text,
                0,
                src,
                change=lambda cl, e=self.entry: {**cl, e: c},
                boundary=boundary,
                base=self.base,
                value=c,
            )
        return Atom(
            text,
            0,
            src,
            change=lambda cl: _arg_change(cl, self.entry, self.value, op, c),
            boundary=boundary,
            value=c,
        )


def _arg_change(claim, entry, value, op, c):
    f = claim[entry]
    sig = inspect.signature(f)

    def g(*a, **kw):
        args = sig.bind(*a, **kw).arguments
        return np.asarray(f(*a, **kw), bool) & _cmp(value(args), op, c)

    g.__signature__ = sig
    return {**claim, entry: g}


def _scalar_families(named: dict, where: str, entry: str = "", getter=None) -> list[_Family]:
    """Families of ``named`` ({name: values (1-D, all calls)}): each scalar with two or more values
    and the ratio of each pair of positive ones."""
    get = getter or (lambda k: lambda b: np.asarray(b[k], float))
    out = []
    names = [k for k, v in named.items() if np.unique(v).size >= 1]
    for k in names:
        v = np.unique(named[k])
        if v.size >= 2:
            out.append(_Family(k, where, v, bool(np.all(v == np.round(v))), get(k), entry))
    fixed = {k: float(named[k][0]) for k in names if np.unique(named[k]).size == 1}
    for f in out:
        f.fixed = fixed
    pos = [k for k in names if np.all(named[k] > 0)]
    for a, b in itertools.combinations(pos, 2):
        if named[a].shape != named[b].shape:
            continue
        with np.errstate(all="ignore"):
            v = np.unique(named[a] / named[b])
        if v.size >= 2 and np.all(np.isfinite(v)):
            fa, fb = get(a), get(b)
            out.append(
                _Family(f"{a}/{b}", where, v, False, lambda x, fa=fa, fb=fb: fa(x) / fb(x), entry, (_GE, _LE))
            )
    return out


def _field_families(batch: dict) -> list[_Family]:
    n = {np.shape(v)[0] for v in batch.values() if np.ndim(v) > 0}
    named = {
        k: np.asarray(v, float)
        for k, v in batch.items()
        if np.ndim(v) == 1
        and np.issubdtype(np.asarray(v).dtype, np.number)
        and not _NOT_QUANTITIES.search(k)
        and np.all(np.isfinite(np.asarray(v, float)))
        and len(n) == 1
    }
    fams = _scalar_families(named, "field")
    for f in fams:
        if f.integer and f.values.size <= 12:
            f.ops = (_GE, _LE, _EQ)
    return fams


def _claim_families(claim: dict, calls: list, app: np.ndarray) -> list[_Family]:
    """Families on the claim's conditions' arguments (from the calls recorded in a run) and its
    range entries."""
    out = []
    for entry, v in claim.items():
        m = _RANGE.match(str(entry))
        if m and isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool):
            op = _GE if m.group(2) == "min" else _LE
            step = 1 if op == _GE else -1
            vals = np.array(sorted(float(v) + step * k for k in range(0, RANGE_STEPS + 1)))
            out.append(_Family(m.group(1), "range", vals, True, None, entry, (op,), base=float(v)))
    by_entry: dict = {}
    for entry, bound, res in calls:
        r = np.asarray(res)
        if r.dtype != bool or r.ndim != 1:
            continue
        keep = app if r.shape == app.shape and app.any() else np.ones(r.shape, bool)
        for name, a in bound.items():
            a = np.asarray(a)
            if a.dtype == bool or not np.issubdtype(a.dtype, np.number) or a.ndim > 1:
                continue
            by_entry.setdefault(entry, {}).setdefault(name, []).append(
                np.broadcast_to(a, r.shape)[keep].astype(float)
            )
    for entry, named in by_entry.items():
        flat = {k: np.concatenate(v) for k, v in named.items() if len(v) == max(map(len, named.values()))}
        flat = {k: v for k, v in flat.items() if np.all(np.isfinite(v))}
        fams = _scalar_families(flat, "arg", entry, getter=lambda k: lambda args: np.asarray(args[k], float))
        for f in fams:
            if f.integer and f.values.size <= 12:
                f.ops = (_GE, _LE, _EQ)
        out.extend(fams)
    return out


def _spied(claim: dict):
    """The claim with every callable entry recording ``(entry, bound arguments, result)``."""
    calls: list = []
    out = {}
    for k, f in claim.items():
        if not callable(f):
            out[k] = f
            continue
        try:
            sig = inspect.signature(f)
        except (TypeError, ValueError):
            out[k] = f
            continue

        def g(*a, _f=f, _k=k, _sig=sig, **kw):
            res = _f(*a, **kw)
            try:
                calls.append((_k, dict(_sig.bind(*a, **kw).arguments), res))
            except TypeError:
                pass
            return res

        g.__signature__ = sig  # type: ignore[attr-defined]
        out[k] = g
    return out, calls


# -- fitting a threshold -------------------------------------------------------------------------------
def _fit(j: _Judge, fam: _Family, op: str, context: tuple) -> Atom | None:
    """The loosest ``fam op c`` (c an observed value) under which ``context`` + it holds; None."""
    ctx = Condition("and", context)
    holds, _ = j.judge(ctx)
    if holds:
        return None  # nothing to exclude
    if fam.where == "field":
        h, app = j.verdicts(tuple(a for a in context if a.change is not None))
        m = j.mask(context)
        assert fam.value is not None  # a field family always has its getter
        v = fam.value(j.batch)
        bad = m & ~h
        if op == _EQ:
            best = None
            for c in fam.values:
                at = m & (v == c)
                if at.any() and not (bad & at).any() and (best is None or at.sum() > best[1]):
                    best = (c, at.sum())
            return None if best is None else fam.atom(_EQ, best[0])
        edge = np.max(v[bad]) if op == _GE else np.min(v[bad])
        # the holding side is fitted on instances where a failing part applies (the others say nothing)
        beyond = m & app & ((v > edge) if op == _GE else (v < edge))
        if not beyond.any():
            return None
        c = np.min(v[beyond]) if op == _GE else np.max(v[beyond])
        return fam.atom(op, c, edge)
    if op == _EQ:
        for c in fam.values:
            a = fam.atom(_EQ, c)
            if j.judge(Condition("and", (*context, a)))[0]:
                return a
        return None
    # candidates from the most restrictive to the loosest (≥ c: the largest c first); monotone
    order = list(fam.values[::-1]) if op == _GE else list(fam.values)
    if not j.judge(Condition("and", (*context, fam.atom(op, order[0]))))[0]:
        return None
    lo, hi = 0, len(order) - 1  # order[lo] holds; the last index that holds is searched
    if j.judge(Condition("and", (*context, fam.atom(op, order[hi]))))[0]:
        return None  # the loosest observed value holds: it excludes nothing observed
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if j.judge(Condition("and", (*context, fam.atom(op, order[mid]))))[0]:
            lo = mid
        else:
            hi = mid
    return fam.atom(op, order[lo], order[hi])


# -- the search ---------------------------------------------------------------------------------------
def _candidates(j: _Judge, fixed: list, fams: list, budget: float) -> tuple[list, bool]:
    """Conditions that hold on ``j``'s batch, best first; whether the budget ran out."""
    t0 = time.perf_counter()

    def late():
        return time.perf_counter() - t0 > budget

    found: list = []
    seen: set = set()
    applicable = int(j.verdicts(())[1].sum())

    def add(cond):
        if cond.text in seen:
            return False
        seen.add(cond.text)
        holds, kept = j.judge(cond)
        if holds and kept.sum() >= max(MIN_KEPT, MIN_KEPT_FRACTION * applicable):
            cond.kept = kept
            found.append(cond)
            return True
        return False

    holding = set()
    for a in fixed:
        if add(Condition("one", (a,))):
            holding.add(a.source)
    for fam in fams:
        for op in fam.ops:
            a = _fit(j, fam, op, ())
            if a is not None and add(Condition("one", (a,))):
                holding.add(a.source)
        if late():
            return _ranked(found), True
    top = _ranked(found)[:12]
    for x, y in itertools.combinations(top, 2):  # "or" only widens atoms that hold alone
        if x.atoms[0].source != y.atoms[0].source and (x.kept | y.kept).sum() > max(
            x.kept.sum(), y.kept.sum()
        ):
            add(Condition("or", (x.atoms[0], y.atoms[0])))
    # "and" of atoms that do not hold alone (with one that holds it only narrows it)
    free = [a for a in fixed if a.source not in holding]
    firsts = list(free)
    for fam in fams:  # thresholds (of a scalar, not a ratio) at a few observed cuts as first atoms
        if "/" in fam.label:
            continue
        cuts = np.unique(np.quantile(fam.values, [0.25, 0.5, 0.75], method="nearest"))
        for op in fam.ops:
            firsts.extend(fam.atom(op, c) for c in (fam.values if op == _EQ else cuts))
    firsts = [a for a in firsts if j.judge(Condition("one", (a,)))[1].any()]
    for a in firsts:
        for b in free:
            if b.source != a.source:
                add(Condition("and", (a, b)))
        for fam in fams:
            if f"{fam.where} {fam.entry}:{fam.label}" == a.source:
                continue
            for op in fam.ops:
                b = _fit(j, fam, op, (a,))
                if b is not None and not j.judge(Condition("one", (b,)))[0]:
                    add(Condition("and", (a, b)))
            if late():
                return _ranked(found), True
    return _ranked(found), late()


def _ranked(found):
    """Conditions on the claim's own conditions and on properties before those on batch fields (a field
    may encode how the generator designed its instances), then the claim's ranges moved least, then
    more instances kept, then fewer atoms, scalars before ratios."""
    return sorted(
        found,
        key=lambda c: (
            max(a.tier for a in c.atoms) == 2,
            _shift(c),
            -int(c.kept.sum()),
            len(c.atoms),
            c.tier,
            c.text.count("/"),
            c.text,
        ),
    )


def _shift(c: Condition) -> float:
    """How far the condition moves the claim's own ranges (``t ≥ 7`` from the printed ``t ≥ 0``: 7)."""
    return sum(abs(a.value - a.base) for a in c.atoms if a.base is not None and a.value is not None)


def _failing_inside(j: _Judge, cond: Condition) -> np.ndarray:
    """The instances ``cond`` admits on which the claim (with its claim atoms) fails."""
    groups = [(a,) for a in cond.atoms] if cond.op == "or" else [cond.atoms]
    bad = np.zeros(j.n, bool)
    for atoms in groups:
        h, _ = j.verdicts(tuple(a for a in atoms if a.change is not None))
        bad |= j.mask(atoms) & ~h
    return bad


def _dominates(a: Condition, b: Condition) -> bool:
    """``a`` keeps every instance ``b`` keeps and moves the claim's ranges no more than ``b`` (then ``b``
    adds nothing beside ``a``)."""
    return not np.any(b.kept & ~a.kept) and _shift(a) <= _shift(b)


def find_condition(
    st,
    family: str,
    batch: dict,
    *,
    claim: dict | None = None,
    seed: int = 0,
    fresh: dict | None = None,
    budget: float = SEARCH_SECONDS,
    index=None,
) -> dict | None:
    """The condition search for ``claim`` (default the printed one) of ``st`` on ``family``'s
    ``batch``; None when the claim holds on every instance of it (no condition to find).

    ``fresh``: the validation batch (default drawn by the generator from its own stream
    ``rng_for(seed, id, family, "conditions")``, :data:`FRESH_FACTOR` times the instances).
    ``index``: the global instance number of each row of ``batch`` (a chunked run's kept rows).
    Returns a JSON-ready dict: ``condition`` (text), ``atoms``, ``boundaries``, ``kept``,
    ``applicable``, ``instances``, ``complement`` (an instance outside the condition on which the
    claim fails: ``instance``, ``part``, ``lhs``, ``rhs``), ``validated`` (on the fresh batch:
    ``instances``, ``kept``, ``holds``), ``budget_exhausted``, ``candidates`` (how many held), and
    ``text`` (the reading's line)."""
    from moreau.analysis.engine.batches import rng_for

    claim = dict(st.claim if claim is None else claim)
    spied, calls = _spied(claim)
    j = _Judge(st, family, batch, claim)
    if not j.relevant:
        return None
    _Judge(st, family, batch, spied, relevant=j.relevant)  # records the conditions' arguments
    fams = _field_families(batch) + _claim_families(claim, calls, j.verdicts(())[1])
    fams = _dedupe(fams)
    fixed = _property_atoms(j.props)
    t0 = time.perf_counter()
    found, exhausted = _candidates(j, fixed, fams, budget)
    if fresh is None:
        fresh = st.instances(family, max(FRESH_FACTOR * j.n, 16), rng_for(seed, st.id, family, "conditions"))
    jf = _Judge(st, family, fresh, claim, relevant=j.relevant)
    chosen: list = []  # (Condition, validation) of the fresh batch
    rejected: list = []
    for cond in found[:12]:
        if len(chosen) == MAX_REPORTED:
            break
        if any(_dominates(c, cond) for c, _ in chosen):
            continue
        holds, kept = jf.judge(cond)
        check = {"instances": jf.n, "kept": int(kept.sum()), "holds": bool(holds and kept.any())}
        if check["holds"]:
            chosen.append((cond, check))
        else:
            fails = np.flatnonzero(_failing_inside(jf, cond))
            rejected.append((cond, {**check, "fails_on": int(fails[0]) if fails.size else None}))
    if not chosen and rejected:
        chosen = rejected[:1]
    app = j.verdicts(())[1]
    out = {
        "claim_failures": int((~j.verdicts(())[0]).sum()),
        "instances": j.n,
        "applicable": int(app.sum()),
        "candidates": len(found),
        "budget_exhausted": exhausted,
        "seconds": time.perf_counter() - t0,
    }
    if not chosen:
        return {**out, "condition": None, "text": "no condition of at most two atoms found", "also": []}
    comp = _complement(j, index)
    entries = [_entry(cond, check, comp, j) for cond, check in chosen]
    out.update(entries[0])
    out["also"] = entries[1:]
    out["rejected_on_fresh_batch"] = [c.text for c, _ in rejected]
    return out


def _entry(cond: Condition, check: dict, comp, j: _Judge) -> dict:
    e = {
        "condition": cond.text,
        "op": cond.op,
        "atoms": [a.text for a in cond.atoms],
        "boundaries": {a.text: list(a.boundary) for a in cond.atoms if a.boundary is not None},
        "kept": int(cond.kept.sum()),
        "applicable": int(j.verdicts(())[1].sum()),
        "complement": comp,
        "validated": check,
    }
    e["text"] = _line(e, cond)
    return e


def _dedupe(fams):
    """A batch field that is also an argument of a claim condition (same name, same values) is kept once,
    as the condition's."""
    claimed = {(f.label, tuple(f.values)) for f in fams if f.where != "field"}
    return [f for f in fams if f.where != "field" or (f.label, tuple(f.values)) not in claimed]


def _complement(j: _Judge, index) -> dict | None:
    """The instance of the batch on which the claim fails with the largest LHS/RHS (every failure lies
    outside a condition that holds)."""
    best = None
    for p in j.result.parts:
        if p.name not in j.relevant:
            continue
        for i in np.flatnonzero(~p.holds_each):
            r = float(p.ratio[i]) if p.ratio is not None else float("nan")
            key = r if np.isfinite(r) else -np.inf
            if best is None or key > best[0]:
                best = (key, p, int(i))
    if best is None:
        return None
    _, p, row = best
    return {
        "instance": int(index[row]) if index is not None else row,
        "part": p.name,
        "lhs": float(p.sides.lhs[row]),
        "rhs": float(p.sides.rhs[row]),
    }


def _line(out: dict, best: Condition) -> str:
    bounds = "; ".join(
        f"{t}: boundary fitted from both sides, {_fmt(lo, hi)} fails, {_fmt(hi, lo)} holds"
        for t, (lo, hi) in out["boundaries"].items()
    )
    c = out["complement"]
    comp = (
        f"; outside it fails e.g. #{c['instance']} ({c['part'][:40]}: lhs {c['lhs']:.4g} > rhs {c['rhs']:.4g})"
        if c
        else ""
    )
    v = out["validated"]
    val = (
        f"; validated on a fresh batch: holds on all {v['kept']} of its {v['instances']} instances kept"
        if v and v["holds"]
        else f"; NOT confirmed on a fresh batch of {v['instances']} (fails on #{v.get('fails_on')})"
        if v
        else ""
    )
    return (
        f"holds on every instance with {best.text} (kept {out['kept']}/{out['applicable']}"
        + (f"; {bounds}" if bounds else "")
        + f"{comp}){val}"
    )


def _relaxed(f):
    """A claim condition dropped ("always true") that keeps ``f``'s signature, so that the search sees
    its arguments (``moreau.analysis.engine.analyse`` drops it the same way)."""

    if not callable(f):
        return f

    def g(*a, **kw):
        return _always(*a, **kw)

    try:
        g.__signature__ = inspect.signature(f)
    except (TypeError, ValueError):
        pass
    return g


def conditions_found(rec, seed: int = 0, budget: float = SEARCH_SECONDS) -> list[dict]:
    """The conditions searched for one record under ``--analyse``: for the printed claim when it fails
    on an instance, and for each condition of the claim the analyses judge (the printed one when it
    holds, else the first reading that holds) dropped in turn when the claim then fails (the search
    should find it again).  Each entry: ``claim`` ("printed" or "printed, <entry> dropped") and the
    fields of :func:`find_condition`."""

    st, fam, batch = rec.statement, rec.result.family, rec.batch
    out = []
    if not rec.result.holds:
        r = find_condition(st, fam, batch, seed=seed, budget=budget, index=rec.index)
        if r is not None:
            out.append({"claim": "printed", **r})
    ref = st.reference
    base = {**st.claim, **(ref.changes if ref is not None else {})}
    name = "printed" if ref is None else f"reading {ref.name}"
    if ref is None and not rec.result.holds:
        return out
    for key in condition_keys(st):
        try:
            r = find_condition(
                st,
                fam,
                batch,
                claim={**base, key: _relaxed(base[key])},
                seed=seed,
                budget=budget,
                index=rec.index,
            )
        except Exception as exc:  # a formula that cannot run without its condition: said, not raised
            out.append(
                {
                    "claim": f"{name}, {key} dropped",
                    "dropped": key,
                    "condition": None,
                    "text": f"not searched ({type(exc).__name__}: {str(exc)[:120]})",
                }
            )
            continue
        if r is not None:
            out.append({"claim": f"{name}, {key} dropped", "dropped": key, **r})
    return out
