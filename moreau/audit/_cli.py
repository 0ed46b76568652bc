"""``moreau audit``: check your own FedAvg / FedProx / pFedMe / FedFW / PerMFL / pFL^MF / Per-FedAvg
implementation against the paper's algorithm (moreau.fl) on an exact instance.

Your module (a .py file, --module) defines either

  round_fn(w_global, clients, rng, **hyper) -> w_global          (or -> (w_global, local_models))

or the pair

  client_update(w_global, client, rng, **hyper) -> w_local
  aggregate(w_global, local_models, clients, rng, **hyper) -> w_global

on numpy arrays: w_global (d,), local_models (m, d), clients a list of moreau.audit.Client
(X, y, weight, kind, mu, index), rng a numpy Generator, hyper the algorithm's hyperparameters as
keywords (fedavg: eta, tau, S; fedprox: lam, gamma, eta, K; pfedme: lam, eta, beta, R, inner,
inner_eta, S; fedfw: lam0, K, S, radius).  The report says where the implementation parts from
the paper's algorithm, where it ends up against the exact optimum, and which named deviation
(docs/audit.md) reproduces its iterates.

--torch module.py (PyTorch; docs/audit.md) defines

  model                         an nn.Module whose parameters are w (e.g. nn.Linear(d, 1, bias=False)),
                                or a function model(d) returning one (d: the instance's features)
  train(model, loader, *, global_model, **hyper)                  trains the client's model in place
  aggregate(models, weights, *, global_model, num_samples, **hyper) -> state_dict (or model, tensor)
  team(team_model, device_models, *, global_model, **hyper)      PerMFL's team step (permfl only)
  dtype        (optional)       "float64" (default) or "float32" (or a torch dtype)
  batch_size   (optional)       None: one full batch (default)

--flower module.py (Flower 1.42; every algorithm) defines, for the message-based API,

  strategy                      a flwr.serverapp.strategy.Strategy, e.g. FedAvg()
  app_fn(client)                -> a ClientApp for one moreau.audit.Client (full participation)

or, for the legacy flwr.server.strategy interface,

  strategy                      a flwr.server.strategy.Strategy, e.g. FedAvg()
  client_fn(client)             -> a NumPyClient for one moreau.audit.Client
                                   (pflmf: client_fn(client, v0), its get_properties -> v_0 .. v_{r-1})

PerMFL (--algorithm permfl: lam, gamma, alpha, eta, beta, K, L; the clients are devices with a
team), pFL^MF (pflmf: rank, eta_u, eta_v, tau; the state is concat(U.ravel(), V.ravel())) and
Per-FedAvg (perfedavg: alpha, beta, tau, S) are audited through round_fn and --torch (PerMFL: with
team; pFL^MF: a model of two parameters, the shared factor then the personal one); all of them
also through --flower, with your own strategy for pFedMe, FedFW, PerMFL (K Flower rounds per
global round, each a team round) and pFL^MF (docs/audit.md, what each adapter supports).

--torch needs torch and --flower needs flwr: pip install 'moreau-pfl[audit]'.

Exit codes: 0 the implementation matches the paper's algorithm to rounding; 1 it departs (the
report says where and why); 2 a usage error or a bad module (one line: what and where).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ._audit import DEFAULT_HYPER, AuditError, audit
from ._engine import ALGORITHMS
from ._instance import FAMILIES

__all__ = ["add_audit_parser"]


def add_audit_parser(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="audit your FL implementation (numpy, PyTorch or Flower) against the paper's algorithm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--module",
        metavar="PATH",
        help="a .py file defining round_fn, or client_update and aggregate (numpy)",
    )
    src.add_argument(
        "--torch",
        metavar="PATH",
        help="a .py file defining model, train and aggregate (PyTorch; optional dtype, batch_size)",
    )
    src.add_argument(
        "--flower",
        metavar="PATH",
        help="a .py file defining strategy and client_fn or app_fn (Flower)",
    )
    p.add_argument(
        "--algorithm", required=True, choices=ALGORITHMS, help="the paper's algorithm it implements"
    )
    p.add_argument("--rounds", type=int, default=20, help="communication rounds (default 20)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the instance and of the rng passed in (default 0)"
    )
    p.add_argument(
        "--family",
        default="quadratic",
        choices=FAMILIES,
        help="client losses (default quadratic: least squares)",
    )
    p.add_argument(
        "--homogeneous", action="store_true", help="identical client optima (default: heterogeneous)"
    )
    p.add_argument(
        "--weights",
        default="uniform",
        choices=("uniform", "samples"),
        help="the paper's p_i (default uniform)",
    )
    p.add_argument(
        "--hyper",
        default="{}",
        metavar="JSON",
        help="hyperparameters overriding the defaults, as JSON, e.g. '{\"eta\": 0.05}' (defaults: "
        + "; ".join(f"{a}: {h}" for a, h in DEFAULT_HYPER.items())
        + ")",
    )
    p.set_defaults(func=cmd_audit)


def _require(package: str, option: str) -> None:
    """A one-line error when the optional dependency of ``--torch`` / ``--flower`` is missing."""
    try:
        importlib.import_module(package)
    except ImportError:
        raise AuditError(
            f"{option} needs {package.split('.')[0]}, which is not installed: pip install 'moreau-pfl[audit]'"
        ) from None


def _attr(mod: ModuleType, name: str, option: str, path: str) -> Any:
    if not hasattr(mod, name):
        raise AuditError(f"{option} {path!r} defines no {name} (docs/audit.md: what the module defines)")
    return getattr(mod, name)


def _load(path: str, option: str = "--module") -> ModuleType:
    file = Path(path)
    if file.suffix != ".py" or not file.is_file():
        raise AuditError(f"{option} must be an existing .py file (got {path!r})")
    spec = importlib.util.spec_from_file_location(f"moreau_audit_user_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise AuditError(f"{option} {path!r} cannot be loaded as a Python module")
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as exc:  # noqa: BLE001  (the user's module: one line)
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise AuditError(f"{option} {path!r} fails to import: {type(exc).__name__}: {first}") from None
    return mod


def _implementation(args: argparse.Namespace) -> Any:
    """The round function (or pair) ``audit`` runs, from --module, --torch or --flower."""
    if args.torch is not None:
        _require("torch", "--torch")
        from ._instance import instance
        from ._torch_api import torch_round_fn

        mod = _load(args.torch, "--torch")
        model = _attr(mod, "model", "--torch", args.torch)
        import torch

        if not isinstance(model, torch.nn.Module) and callable(model):
            d = instance(args.family, seed=args.seed, heterogeneous=not args.homogeneous).dim
            model = model(d)
        dtype = getattr(mod, "dtype", None)
        if isinstance(dtype, str):
            if dtype not in ("float32", "float64"):
                raise AuditError(
                    f"--torch {args.torch!r}: dtype must be 'float32' or 'float64' (got {dtype!r})"
                )
            dtype = getattr(torch, dtype)
        return torch_round_fn(
            model,
            _attr(mod, "train", "--torch", args.torch),
            _attr(mod, "aggregate", "--torch", args.torch),
            args.algorithm,
            dtype=dtype,
            batch_size=getattr(mod, "batch_size", None),
            team=getattr(mod, "team", None),
        )
    if args.flower is not None:
        _require("flwr.server.strategy", "--flower")
        from ._flower_api import flower_round_fn

        mod = _load(args.flower, "--flower")
        if hasattr(mod, "app_fn"):  # the message-based API: a flwr.serverapp.strategy strategy
            from ._flower_api import flower_message_round_fn

            return flower_message_round_fn(
                _attr(mod, "strategy", "--flower", args.flower), mod.app_fn, args.algorithm
            )
        return flower_round_fn(
            _attr(mod, "strategy", "--flower", args.flower),
            _attr(mod, "client_fn", "--flower", args.flower),
            args.algorithm,
        )
    mod = _load(args.module)
    if hasattr(mod, "round_fn"):
        return mod.round_fn
    if hasattr(mod, "client_update") and hasattr(mod, "aggregate"):
        return (mod.client_update, mod.aggregate)
    raise AuditError(f"--module {args.module!r} defines neither round_fn nor client_update and aggregate")


def cmd_audit(args: argparse.Namespace) -> int:
    try:
        impl = _implementation(args)
        try:
            hyper = json.loads(args.hyper)
        except json.JSONDecodeError as exc:
            raise AuditError(f"--hyper must be a JSON object (got {args.hyper!r}: {exc})") from None
        if not isinstance(hyper, dict):
            raise AuditError(f"--hyper must be a JSON object (got {args.hyper!r})")
        report = audit(
            impl,
            args.algorithm,
            family=args.family,
            rounds=args.rounds,
            seed=args.seed,
            heterogeneous=not args.homogeneous,
            weights=args.weights,
            hyper=hyper,
        )
    except (AuditError, ValueError, TypeError, ImportError) as exc:
        print(f"moreau audit: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(report)
    return report.exit_code
