"""``moreau check --replay FILE``: re-check one saved instance (a counterexample, or the instance
that rejects a mutant) and exit by whether it fails on it."""

from __future__ import annotations

import sys

from moreau.analysis.engine.cli_options import _fail

__all__: list[str] = []


def _replay(args, cat) -> int:
    """Re-check one saved instance.  Exit 1 when an inequality fails on it; whether a
    claimed-tight bound is attained is a property of a family, not of one instance."""
    import zipfile
    from pathlib import Path

    from moreau.analysis.engine.records import load_counterexample

    expected = "expected a .npz counterexample written by moreau check --save-counterexamples"
    if Path(args.replay).is_file() and not zipfile.is_zipfile(
        args.replay
    ):  # numpy's advice (allow_pickle) is not ours
        return _fail(f"cannot read {args.replay}: not a .npz archive ({expected})")
    try:
        meta, batch = load_counterexample(args.replay)
        if not isinstance(meta, dict) or not isinstance(meta.get("family"), str):
            raise ValueError("its metadata is not a moreau counterexample record")
    except (OSError, KeyError, ValueError, TypeError, AttributeError, EOFError, zipfile.BadZipFile) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "pickle" in why:
            why = "it holds object (pickled) arrays"
        return _fail(f"cannot read {args.replay}: {why} ({expected})")
    if meta.get("id") not in cat:
        print(f"moreau check: {args.replay} is for unknown id {meta.get('id')!r}", file=sys.stderr)
        return 2
    if args.ids and meta["id"] not in args.ids:
        return _fail(
            f"{args.replay} holds an instance of {meta['id']}, not of {', '.join(args.ids)}: "
            f"run `moreau check {meta['id']} --replay {args.replay}`"
        )
    st = cat[meta["id"]]
    mutant = None
    if meta.get("mutant"):
        mutant = next((m for m in st.mutants if m.name == meta["mutant"]), None)
        if mutant is None:
            print(f"moreau check: {st.id} has no mutant {meta['mutant']!r}", file=sys.stderr)
            return 2
    if meta["family"] not in st.families:
        return _fail(
            f"{args.replay}: family {meta['family']!r} is not one of {st.id}'s ({', '.join(st.families)})"
        )
    try:
        res = st.run(meta["family"], None, None, mutant=mutant, batch=batch)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        return _fail(f"{args.replay} does not hold a valid {st.id} instance ({type(exc).__name__}: {exc})")
    if mutant is not None:
        print(f"replaying mutant of {st.id}: {mutant.name}")
    ok = True
    who = f"mutant {mutant.name!r} of {st.id}" if mutant is not None else f"{st.id} (as printed)"
    for p in res.parts:
        s = p.sides
        if not s.applicable[0]:
            print(f"{who} [{meta['family']}] {p.name}: assumption not met on this instance (not checked)")
            continue
        holds = p.failures.size == 0
        ok &= holds
        print(f"{who} [{meta['family']}] {p.name}: lhs={s.lhs[0]:.17g} rhs={s.rhs[0]:.17g} holds={holds}")
    if mutant is not None:  # a mutant's instance is meant to reject it: exit 0 when it does
        print(f"mutant {mutant.name!r}: {'rejected' if not ok else 'NOT rejected'} on this instance")
        return 0 if not ok else 1
    return 0 if ok else 1
