r"""Your methods beside the papers' in the pFedMe comparison (``pfedme-synthetic``, ``pfedme-digits``)
and in ``perfedavg-table1`` (which evaluates :func:`trained_models` by its own protocol).

``--method MODULE:FUNCTION`` (or ``path/to/file.py:FUNCTION``; repeatable) appends to the ``methods``
list, as in ``moreau reproduce compare``: a function ``algorithm(objective, *, rounds, rng, **kw) ->
moreau.fl.History`` (``moreau.experiments._methods``), ``objective`` the clients' training losses as one
batched :class:`moreau.Multinomial` (the comparison's, padding rows of weight 0), ``rng`` its own
stream (derived from the seed's seed sequence and the method's spec: adding or removing a method
changes no other number).  Its hyperparameters are ``method_args.FUNCTION.KEY`` (``--set
method_args.my_method.lr=0.1``): keyword arguments of the call, recorded in the manifest's
configuration and in the run's deviation lines (manifest, CSV header, figure captions).

Your method runs once per seed with its own hyperparameters; its rows appear under both settings
("same", "tuned": the settings are the paper methods' hyperparameters), so that every panel shows
it.  Its models are evaluated as the paper's methods' are (test and validation accuracy, training
objective) at the same rounds; a method with a global and personalised models is reported twice
(``NAME-GM``, ``NAME-PM``).  Not part of the claims.
"""

from __future__ import annotations

import inspect
import zlib

import numpy as np

from . import _methods
from ._curves import long_rows

__all__ = ["check_methods", "deviation_lines", "trained_models", "user_rows"]


def _stream(rng, tag):
    """An independent generator for ``tag`` from the point's seed sequence (not its state or its count of
    children: the paper methods' draws are the same with or without it)."""
    base = rng.bit_generator.seed_seq
    return np.random.default_rng(
        np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, zlib.crc32(tag.encode())))
    )


def check_methods(name, params, taken) -> None:
    """Refuse, before anything is written, methods that cannot run beside the paper's: a built-in
    name, an unimportable spec, a name that is already taken, ``method_args`` of no method."""
    names = []
    for spec in params["methods"]:
        if not isinstance(spec, str) or spec in _methods.BUILTIN:
            raise ValueError(
                f"{name}: methods lists your own methods as MODULE:FUNCTION or path/to/file.py:FUNCTION "
                f"(the paper's methods run anyway; got {spec!r})"
            )
        names.append(_methods.load(spec, params)[0])
    fns = dict(_methods.load(spec, params) for spec in params["methods"])
    for n in names:
        if names.count(n) > 1 or any(n == t or t.startswith(f"{n}-") for t in taken):
            raise ValueError(f"{name}: two methods would be named {n!r} (methods = {params['methods']})")
    for key, kw in params["method_args"].items():
        if key not in names:
            raise ValueError(
                f"{name}: method_args.{key} names no method in methods (your methods: {', '.join(names) or 'none'})"
            )
        if not isinstance(kw, dict):
            raise ValueError(f"{name}: method_args.{key} must be a table of keyword arguments (got {kw!r})")
        try:
            inspect.signature(fns[key]).bind_partial(None, rounds=1, rng=None, **kw)
        except TypeError as exc:
            raise ValueError(f"{name}: method_args.{key}: {key}() does not take them ({exc})") from None
        except ValueError:  # no signature to read (a builtin): the call itself will tell
            pass


def deviation_lines(params) -> list:
    """One line per method of yours: it is not in the paper, with its spec and hyperparameters."""
    out = []
    for spec in params["methods"]:
        fn = _methods._module_file(spec)[1]
        kw = params["method_args"].get(fn, {})
        hp = ", ".join(f"{k} = {v}" for k, v in kw.items()) or "its defaults"
        out.append(
            f"method {fn} ({spec}; hyperparameters: {hp}) runs beside the paper's methods (not in the paper)"
        )
    return out


def trained_models(rng, f, params) -> dict:
    """``{label: models (T+1, D) or (T+1, m, D)}`` of your methods, each called once on ``f`` with its
    own stream and hyperparameters (``rng``: the point's generator; only its seed sequence is used)."""
    T = params["rounds"]
    m = int(np.asarray(f.X).shape[0])
    out = {}
    for spec in params["methods"]:
        fn_name, algorithm = _methods.load(spec, params)
        kw = params["method_args"].get(fn_name, {})
        try:
            h = algorithm(f, rounds=T, rng=_stream(rng, f"method:{spec}"), **kw)
        except TypeError as exc:
            raise ValueError(
                f"--method {spec}: calling it with {sorted(kw)} raised TypeError: {exc}"
            ) from None
        out.update(_methods.models(spec, h, m, f.dim, T))
    return out


def user_rows(rng, f, splits, mu, params, seed, settings) -> list:
    """Long rows of your methods for one seed, repeated under each of ``settings``; ``splits`` =
    (train, validation or None, test) :class:`moreau.experiments._evaluate.Split`."""
    T, every = params["rounds"], params["eval_every"]
    ts = sorted(set(range(0, T + 1, every)) | {T})
    train, val, test = splits
    rows = []
    for label, arr in trained_models(rng, f, params).items():
        vals = {
            "test_accuracy": [test.accuracy(arr[t]) for t in ts],
            "train_loss": [train.loss(arr[t], mu) for t in ts],
        }
        if val is not None:
            vals["validation_accuracy"] = [val.accuracy(arr[t]) for t in ts]
        for setting in settings:
            rows += long_rows(vals, method=label, seed=seed, rounds=ts, setting=setting)
    return rows
