"""An experiment's configuration: its defaults, ``--config FILE.toml`` and ``--set KEY=VALUE``.

The keys are those of ``Experiment.config(quick, trials)`` (``moreau reproduce NAME
--print-config`` prints them as TOML); a nested table (``same``, ``tuned``) is set key by key
(``--set same.lam=20``, a ``[same]`` table in the file) or as a whole table whose keys are merged; a
table empty in the defaults (``method_args``) is open: its keys are yours (``--set method_args.f.lr=0.1``).
A value's type is that of the defaults of both modes (``max_size`` is an integer or null): an
integer stands for a number, counts (integers that are at least 1 in the defaults) must be at
least 1, and a list keeps the type of its default elements.  Overrides apply in order (the file,
then each ``--set``); ``--trials N`` stands for ``--set seeds=N``.  Keys an experiment marks as
notes (``Experiment.notes``) describe the run and cannot be set.  Errors are one line naming the
source, the key, the expected type and the value (:class:`ConfigError`, a ``ValueError``).

Values are checked before anything is written: a number must be finite (NaN and infinities are
refused), a key the experiment declares in ``Experiment.ranges`` (:class:`Range`, by dotted key;
a list's elements each) must lie in its range, and the experiment's cross-field rules
(``Experiment.rules(params)``, e.g. ``mu <= L``) must hold.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["ConfigError", "Range", "parse_set", "read_toml", "resolve", "to_toml"]


class ConfigError(ValueError):
    """A bad override: unknown key, wrong type, a value out of range, unreadable file (one line)."""


@dataclass(frozen=True)
class Range:
    """The values a numeric parameter may take: ``lo`` < (or <=, ``lo_open=False``) x < (or <=) ``hi``;
    ``why`` (optional) says what breaks outside it."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    why: str = ""

    def __contains__(self, x: float) -> bool:
        if self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo):
            return False
        return not (self.hi is not None and (x >= self.hi if self.hi_open else x > self.hi))

    def text(self) -> str:
        """``> 0``, ``in [0, 1)``, ``<= 2000``."""
        if self.lo is not None and self.hi is not None:
            return f"in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '<='} {self.hi:g}"
        return "any number"


#: common ranges, for the experiments' declarations
POSITIVE = Range(0, lo_open=True)
NONNEGATIVE = Range(0)
FRACTION = Range(0, 1, hi_open=True)


def parse_set(items) -> list:
    """``[(source, key, value)]`` of ``--set KEY=VALUE`` items: VALUE parsed as JSON, else a string."""
    out = []
    for item in items or ():
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set {_printable(item)}: expected KEY=VALUE (e.g. --set rounds=200)")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        out.append((f"--set {_printable(item)}", key.strip(), value))
    return out


def _printable(text) -> str:
    """``text`` as typed when it is printable, else its Python repr (a control character such as a
    newline or a carriage return would break the one-line error)."""
    return str(text) if str(text).isprintable() else repr(str(text))


def read_toml(path) -> list:
    """``[(source, key, value)]`` of a TOML file's top-level keys (tables stay tables); a file that is
    not UTF-8 text (a binary file) is refused naming it."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise ConfigError("--config needs Python >= 3.11 (tomllib) or the tomli package") from None
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"--config {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {path}: not valid TOML ({str(exc).splitlines()[0]})") from None
    except UnicodeDecodeError as exc:  # a binary file
        raise ConfigError(f"--config {path}: not a TOML text file (not UTF-8: {exc.reason})") from None
    return [(f"--config {_printable(path)}", key, value) for key, value in data.items()]


def resolve(experiment, quick: bool, trials, overrides=()) -> tuple:
    """``(params, applied)``: the experiment's defaults for the mode with ``overrides`` applied in
    order (``[(source, key, value)]``, or a dict ``{key: value}``), and ``{dotted key: value}`` of
    what was set."""
    if isinstance(overrides, dict):
        overrides = [(f"override {k}", k, v) for k, v in overrides.items()]
    params = experiment.config(quick, trials)
    examples = [params, experiment.config(not quick, None)]
    applied: dict[str, Any] = {}
    for source, key, value in overrides:
        path = key.split(".")
        if path[0] == "seeds" and trials is not None:
            raise ConfigError(f"{source}: --trials {trials} already sets seeds; give one of them")
        if path[0] in getattr(experiment, "notes", ()):
            raise ConfigError(f"{source}: '{path[0]}' is a note describing the run, not a parameter")
        _apply(experiment.name, source, params, examples, path, value, applied)
        _in_range(experiment, source, params, path)
    rules = getattr(experiment, "rules", None)
    if rules is not None:
        try:
            rules(params)
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(str(exc).splitlines()[0]) from None
    return params, applied


def _in_range(experiment, source, params, path) -> None:
    """Refuse a value set by ``source`` outside the range the experiment declares for its key (each
    element of a list; each key of a table set as a whole)."""
    ranges = getattr(experiment, "ranges", None) or {}
    prefix = ".".join(path)
    for key, rng in ranges.items():
        if key != prefix and not key.startswith(prefix + "."):
            continue
        value: Any = params
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for i, x in items:
            if _kind(x) in ("int", "float") and x not in rng:
                where = key if i is None else f"{key}[{i}]"
                why = f": {rng.why}" if rng.why else ""
                raise ConfigError(f"{source}: '{where}' must be {rng.text()} (got {_show(x)}){why}")


def _apply(name, source, params, examples, path, value, applied, prefix=""):
    head, rest = path[0], path[1:]
    where = prefix + head
    if head not in params:
        keys = ", ".join(params) or "none"
        what = f"for {name}" if not prefix else f"in table '{prefix[:-1]}'"
        raise ConfigError(
            f"{source}: unknown key {where!r} {what} (its keys: {keys}; "
            f"moreau reproduce {name} --print-config shows them)"
        )
    ex = [e[head] for e in examples if isinstance(e, dict) and head in e]
    if isinstance(params[head], dict) and any(e == {} for e in ex):  # (``ex`` holds the other mode's default)
        _set_open(source, where, params[head], rest, value, applied)
        return
    if isinstance(params[head], dict) and (rest or isinstance(value, dict)):
        sub = [e for e in ex if isinstance(e, dict)]
        items = [(rest, value)] if rest else [([k], v) for k, v in value.items()]
        for p, v in items:
            _apply(name, source, params[head], sub, p, v, applied, where + ".")
        return
    if rest:
        raise ConfigError(f"{source}: '{where}' is {_describe(ex)}, not a table: no key '{'.'.join(path)}'")
    params[head] = _coerce(source, where, value, ex)
    applied[where] = copy.deepcopy(params[head])


def _set_open(source, where, table, path, value, applied) -> None:
    """Set ``path`` in an open table (one whose defaults are empty, such as ``method_args``: its keys
    are the user's names, e.g. ``method_args.my_method.lr``): any key, any JSON value but a
    non-finite number; a table given whole is merged key by key."""
    if not path:
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: '{where}' is a table of your own keys (got {_show(value)})")
        for k, v in value.items():
            _set_open(source, where, table, [k], v, applied)
        return
    for i, part in enumerate(path[:-1]):
        table = table.setdefault(part, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: '{where}.{'.'.join(path[: i + 1])}' is not a table")

    def finite(v):
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{source}: '{where}.{'.'.join(path)}' expects finite numbers (got {_show(v)})")
        for x in v.values() if isinstance(v, dict) else v if isinstance(v, list) else ():
            finite(x)

    finite(value)
    table[path[-1]] = copy.deepcopy(value)
    applied[f"{where}.{'.'.join(path)}"] = copy.deepcopy(value)


def _kind(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    for t, k in ((int, "int"), (float, "float"), (str, "str"), (list, "list"), (dict, "table")):
        if isinstance(v, t):
            return k
    return type(v).__name__


_WORDS = {
    "null": ("null", "nulls"),
    "bool": ("true or false", "booleans"),
    "int": ("an integer", "integers"),
    "float": ("a number", "numbers"),
    "str": ("a string", "strings"),
    "list": ("a list", "lists"),
    "table": ("a table", "tables"),
}


def _counts(examples) -> bool:
    ints = [e for e in examples if _kind(e) == "int"]
    return bool(ints) and all(e >= 1 for e in ints)


def _describe(examples, plural=False) -> str:
    kinds = sorted({_kind(e) for e in examples}, key=lambda k: list(_WORDS).index(k) if k in _WORDS else 99)
    words = []
    for k in kinds:
        w = _WORDS[k][plural] if k in _WORDS else k
        if k == "int" and _counts(examples):
            w += " >= 1"
        inner = [x for e in examples if isinstance(e, list) for x in e]
        if k == "list" and inner:
            w = f"{'non-empty lists' if plural else 'a non-empty list'} of {_describe(inner, plural=True)}"
        words.append(w)
    return " or ".join(words) or "a value"


def _show(value) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    return json.dumps(value, ensure_ascii=False) if _kind(value) in _WORDS else repr(value)


def _coerce(source, key, value, examples):
    kinds = {_kind(e) for e in examples}
    k = _kind(value)
    bad = ConfigError(f"{source}: '{key}' expects {_describe(examples)} (got {_show(value)})")
    if k == "int" and "float" in kinds and "int" not in kinds:
        try:
            value, k = float(value), "float"
        except OverflowError:
            raise ConfigError(
                f"{source}: '{key}' expects a finite number (got {_show(value)[:40]})"
            ) from None
    if k not in kinds:
        raise bad
    if k == "int" and _counts(examples) and value < 1:
        raise bad
    finite = all(math.isfinite(e) for e in examples if _kind(e) == "float")
    if k == "float" and not math.isfinite(value) and finite:
        raise ConfigError(f"{source}: '{key}' expects a finite number (got {_show(value)})")
    if k == "list":
        inner = [x for e in examples if isinstance(e, list) for x in e]
        if inner:
            if not value:
                raise bad
            value = [_coerce(source, f"{key}[{i}]", x, inner) for i, x in enumerate(value)]
    return value


def to_toml(params: dict, notes=(), header=()) -> str:
    """``params`` as TOML: scalars and lists first, then one ``[table]`` per nested dict; notes and
    nulls (TOML has none) as comments."""
    lines = [f"# {h}" for h in header]
    tables = [(k, v) for k, v in params.items() if isinstance(v, dict)]
    for key, value in params.items():
        if not isinstance(value, dict):
            lines.append(_line(key, value, key in notes))
    for key, table in tables:
        lines += ["", f"[{_key(key)}]"] + [_line(k, v, False) for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _line(key, value, note) -> str:
    if note:
        return f"# {_key(key)} = {_value(value)}  (a note describing the run, not a parameter)"
    if value is None:
        return f"# {_key(key)} = null  (the default; TOML has no null: --set {key}=null sets it)"
    return f"{_key(key)} = {_value(value)}"


def _key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else json.dumps(key, ensure_ascii=False)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return ("nan" if math.isnan(v) else "inf" if v > 0 else "-inf") if not math.isfinite(v) else repr(v)
    if isinstance(v, (int, str)):
        return str(v) if isinstance(v, int) else json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise ConfigError(f"cannot write {v!r} as TOML")
