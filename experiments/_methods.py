r"""The methods of ``moreau reproduce compare``: the built-in algorithms and a user's, one interface.

The interface is the one :mod:`moreau.fl`'s algorithms share::

    algorithm(objective, *, rounds, rng) -> moreau.fl.History

``objective`` the clients' training losses as ONE batched objective (batch shape ``(m,)``, here a
:class:`moreau.Multinomial` over the clients' training rows, ragged sizes held in buckets), ``rounds``
the number of communication rounds T, ``rng`` a ``numpy.random.Generator`` (the method's own
stream: adding or removing a method changes no other method's numbers).  Further hyperparameters
are keyword arguments with defaults (or bound with ``functools.partial``): the comparison passes
only ``rounds`` and ``rng``.  The built-ins are exactly that: ``moreau.fl.fedavg``, ``per_fedavg``
and ``pfedme`` with the configuration's hyperparameters bound.

What is evaluated, from the returned :class:`moreau.fl.History` (every round t = 0..T):

* the global model ``w_global`` ``(T+1, D)``, where it is not None;
* the personalised models ``theta`` ``(T+1, m, D)``, where not None; else, for a method without a
  server (``w_global`` None), the local models ``w_local`` ``(T+1, m, D)``.

A method with both is reported twice, ``NAME-GM`` (global model) and ``NAME-PM`` (personalised);
with one, as ``NAME``.  A user's method is named ``module:function`` or ``path/to/file.py:function``
(``--method``); its name is the function's.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

from moreau import fl

__all__ = ["BUILTIN", "labels", "load", "models", "source_digest"]

#: built-in name -> (labels of (global, personalised) models)
BUILTIN = {
    "FedAvg": ("FedAvg", None),
    "Per-FedAvg": (None, "Per-FedAvg"),
    "pFedMe": ("pFedMe-GM", "pFedMe-PM"),
}


def _builtin(name, params):
    """The built-in ``name`` with the configuration's hyperparameters bound (the shared interface)."""
    S = params["S"] or None
    B = params["batch"] or None
    if name == "FedAvg":
        hp = params["fedavg"]
        return functools.partial(fl.fedavg, eta=hp["eta"], tau=hp["tau"], S=S, batch_size=B)
    if name == "Per-FedAvg":
        hp = params["per_fedavg"]
        return functools.partial(
            fl.per_fedavg,
            alpha=hp["alpha"],
            beta=hp["beta"],
            tau=hp["tau"],
            S=S,
            D=B,
            D_prime=B,
            D_second=B if hp["variant"] != "first_order" else None,
            variant=hp["variant"],
        )
    hp = params["pfedme"]
    return functools.partial(
        fl.pfedme,
        lam=hp["lam"],
        eta=hp["eta"],
        beta=hp["beta"],
        R=hp["R"],
        S=S,
        batch_size=B,
        inner=hp["K"],
        inner_eta="client",
        personal="inner",
    )


def _module_file(spec):
    """The ``(module or file, function)`` of a user's ``spec``."""
    target, colon, func = spec.rpartition(":")
    if not colon or not target or not func.isidentifier():
        raise ValueError(
            f"--method {spec}: expected MODULE:FUNCTION or path/to/file.py:FUNCTION (or a built-in: "
            f"{', '.join(BUILTIN)})"
        )
    return target, func


@functools.cache
def _import(target):
    """The module ``target``: a ``.py`` path, or a dotted name importable from here or the working directory."""
    if target.endswith(".py"):
        path = Path(target).resolve()
        if not path.is_file():
            raise ValueError(f"--method {target}: no such file")
        name = "moreau_user_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise ValueError(f"--method {target}: importing it raised {type(exc).__name__}: {exc}") from None
        return module
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # `moreau` runs as a script: its sys.path lacks the working directory
    try:
        return importlib.import_module(target)
    except Exception as exc:
        raise ValueError(f"--method {target}: cannot import it ({type(exc).__name__}: {exc})") from None


def load(spec, params):
    """``(name, algorithm)`` of a method ``spec``: a built-in name or a user's ``module:function``."""
    if spec in BUILTIN:
        return spec, _builtin(spec, params)
    target, func = _module_file(spec)
    fn = getattr(_import(target), func, None)
    if fn is None:
        raise ValueError(f"--method {spec}: {target} has no attribute {func!r}")
    if not callable(fn):
        raise ValueError(f"--method {spec}: {func!r} is not callable (got {type(fn).__name__})")
    return func, fn


def source_digest(spec) -> str:
    """sha256 of a user's method's source file ('' for a built-in or a module without a file): part of
    a run's points, so that resuming after the code changed is refused."""
    if spec in BUILTIN:
        return ""
    target, _ = _module_file(spec)
    path = Path(target) if target.endswith(".py") else getattr(_import(target), "__file__", None)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else ""


def labels(name, h) -> tuple:
    """``(global label or None, personalised label or None)`` of method ``name``'s History ``h``."""
    if name in BUILTIN:
        return BUILTIN[name]
    has_g = getattr(h, "w_global", None) is not None
    has_p = getattr(h, "theta", None) is not None or (not has_g and getattr(h, "w_local", None) is not None)
    if has_g and has_p:
        return f"{name}-GM", f"{name}-PM"
    return (name if has_g else None), (name if has_p else None)


def models(spec, h, m, D, rounds) -> dict:
    """``{label: models (T+1, D) or (T+1, m, D)}`` of a method's History, shapes checked."""
    if not isinstance(h, fl.History):
        raise ValueError(f"--method {spec}: returned {type(h).__name__}, not a moreau.fl.History")
    g_label, p_label = labels(spec if spec in BUILTIN else _module_file(spec)[1], h)
    out = {}
    for label, arr, shape in (
        (g_label, h.w_global, (rounds + 1, D)),
        (p_label, h.theta if h.theta is not None else h.w_local, (rounds + 1, m, D)),
    ):
        if label is None:
            continue
        arr = np.asarray(arr, dtype=float)
        if arr.shape != shape:
            raise ValueError(
                f"--method {spec}: its History holds models of shape {arr.shape} for {label}; expected "
                f"{shape} (rounds + 1 = {rounds + 1}, clients m = {m}, dimension D = {D})"
            )
        bad = ~np.isfinite(arr.reshape(rounds + 1, -1)).all(axis=1)
        if bad.any():  # accuracies of NaN models would be reported as numbers
            raise ValueError(
                f"--method {spec}: its History holds non-finite models (NaN or inf) for {label} from round "
                f"{int(np.argmax(bad))} of 0..{rounds}: a diverged or broken method has no accuracy"
            )
        out[label] = arr
    if not out:
        raise ValueError(f"--method {spec}: its History has no models (w_global, theta and w_local are None)")
    return out
