"""A time-bounded hypothesis fuzz test of the inputs a user types (docs/bad-input.md): ``Statement``
fields, ``moreau.testing.check`` arguments and ``moreau reproduce --set`` values.

Every outcome is a result or a one-line error of the expected types whose message names the input;
never another exception (an internal error, exit 3), never a hang (each example has a deadline and
each test a bounded number of examples: the file runs in well under 60 s).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402  (after the importorskip above)
from hypothesis import strategies as st  # noqa: E402  (after the importorskip above)

from moreau._cli import main  # noqa: E402  (after the importorskip above)
from moreau.analysis.api import Mutant, Reading, Sides, Statement  # noqa: E402  (after the importorskip)
from moreau.testing import check  # noqa: E402  (after the importorskip above)

FUZZ = settings(
    max_examples=300,
    deadline=2000,  # ms per example: a hang fails the test instead of stalling it
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,  # the same examples on every run: a failure is reproducible, never flaky
)

#: anything a user might type or pass by mistake
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(-5, 5), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(-3, 3), max_size=2),
    st.tuples(st.text(max_size=3)),
    st.sampled_from(["upper", "tight", "rate", "holds", "printed", "all", "quadratic", "../x", "a/b", ""]),
)


def _x(family, trials, rng):
    return {"x": rng.uniform(0, 1, 5)}


def _x_le_1(batch, claim):
    return {"x <= 1": Sides(batch["x"], np.ones_like(batch["x"]), "upper")}


FIELDS = dict(
    id="mine.x",
    source="mine",
    paper="mine",
    latex="",
    text="",
    assumptions=("x",),
    families={"quadratic": ("mine",)},
    claimed="upper",
    instances=_x,
    evaluate=_x_le_1,
    claim={"c": 1.0},
)
OK = Statement(**FIELDS, readings=(Reading("loose", {"c": 2.0}),))
#: the fields a Statement validates when made, each as its message names it
CHECKED = (
    "id",
    "claimed",
    "families",
    "instances",
    "evaluate",
    "claim",
    "mutants",
    "readings",
    "expect",
    "origin",
)


def _named(exc: BaseException, *names: str) -> bool:
    text = str(exc)
    return len(text.splitlines()) == 1 and any(n in text for n in names)


@FUZZ
@given(field=st.sampled_from(CHECKED), value=JUNK)
def test_statement_fields(field, value):
    if field in ("mutants", "readings") and isinstance(value, tuple | list):
        value = tuple(Mutant("m", {str(k): 1.0}) if field == "mutants" else k for k in value)
    try:
        s = Statement(**{**FIELDS, field: value})
    except (TypeError, ValueError) as exc:
        assert _named(exc, field, field.rstrip("s"), "Statement id"), (field, value, exc)
        return
    # accepted: it runs as a statement (a verdict or a one-line error naming the statement)
    try:
        check(s, search=False, trials=4)
    except AssertionError:
        pass  # a verdict on a statement whose fields were changed (e.g. no instance)
    except (TypeError, ValueError) as exc:
        assert _named(exc, s.id), (field, value, exc)


ARGS = ("family", "trials", "seed", "reading")


@FUZZ
@given(arg=st.sampled_from(ARGS), value=JUNK)
def test_check_arguments(arg, value):
    try:
        check(OK, search=False, **{arg: value})
    except (TypeError, ValueError) as exc:
        assert _named(exc, arg), (arg, value, exc)
        return
    # accepted: the value was a valid one (OK holds under every reading, on its one family)
    if arg == "trials" and value is not None:
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if arg == "seed":
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 0


#: keys of two experiments' configurations: scalars, lists, tables and nested keys
KEYS = {
    "pfedme-prop1": ["L", "mu", "d", "lam_convex", "lam_weak", "nope"],
    "compare": [
        "seeds",
        "rounds",
        "S",
        "batch",
        "mu",
        "fedavg.eta",
        "pfedme.lam",
        "pfedme",
        "example.n_clients",
        "methods",
        "band",
        "test_fraction",
        "per_fedavg.variant",
    ],
}
VALUES = st.one_of(
    JUNK.map(lambda v: json.dumps(v) if not isinstance(v, float) or math.isfinite(v) else repr(v)),
    st.sampled_from(
        ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400, "[1,NaN]", "[]", "{}", "null"]
    ),
    st.text(max_size=10),
)


@FUZZ
@given(name=st.sampled_from(sorted(KEYS)), data=st.data())
def test_reproduce_set_values(name, data, tmp_path_factory, capsys):
    from moreau.experiments._config import ConfigError, parse_set, resolve
    from moreau.experiments.registry import experiments

    key = data.draw(st.sampled_from(KEYS[name]))
    text = data.draw(VALUES)
    item = f"{key}={text}"
    exp = experiments()[name]
    try:
        params, _ = resolve(exp, True, None, parse_set([item]))
    except ConfigError as exc:
        assert _named(exc, key.split(".")[-1]), (item, exc)
        accepted = False
    else:
        accepted = True
        for v in _numbers(params):  # never a NaN or an infinity accepted
            assert math.isfinite(v), (item, params)
        for dotted, rng in exp.ranges.items():  # every declared range holds
            value = params
            for part in dotted.split("."):
                value = value[part]
            for v in value if isinstance(value, list) else [value]:
                assert v in rng, (item, dotted, v)
    # the command line: exit 0 (printed) or 2 (one line naming the key), never 3
    out = tmp_path_factory.mktemp("o") / "never"
    code = main(["reproduce", name, "--quick", "--print-config", "--out", str(out), "--set", item])
    err = capsys.readouterr().err.strip()
    assert code in (0, 2) and not out.exists(), (item, code, err)
    assert (code == 0) == accepted or "--print-config" in err, (item, code, err)
    if code == 2:
        assert len(err.splitlines()) == 1 and key.split(".")[-1] in err, (item, err)


def _numbers(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _numbers(x)
    elif isinstance(v, list):
        for x in v:
            yield from _numbers(x)
    elif isinstance(v, float):
        yield v
