"""``moreau audit``: check your own FedAvg / FedProx / pFedMe / FedFW implementation against the paper's
algorithm (moreau.fl) on an exact instance.

Your module (a .py file, --module) defines either

  round_fn(w_global, clients, rng, **hyper) -> w_global          (or -> (w_global, local_models))

or the pair

  client_update(w_global, client, rng, **hyper) -> w_local
  aggregate(w_global, local_models, clients, rng, **hyper) -> w_global

on numpy arrays: w_global (d,), local_models (m, d), clients a list of moreau.audit.Client
(X, y, weight, kind, mu, index), rng a numpy Generator, hyper the algorithm's hyperparameters as
keywords (fedavg: eta, tau, S; fedprox: lam, gamma, eta, K; pfedme: lam, eta, beta, R, inner,
inner_eta, S; fedfw: lam0, K, S, radius).  The report says where the implementation parts from the paper's algorithm,
where it ends up against the exact optimum, and which named deviation (docs/audit.md)
reproduces its iterates.

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
        help="audit your FL implementation (a numpy round function) against the paper's algorithm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--module",
        required=True,
        metavar="PATH",
        help="a .py file defining round_fn, or client_update and aggregate",
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


def _load(path: str) -> ModuleType:
    file = Path(path)
    if file.suffix != ".py" or not file.is_file():
        raise AuditError(f"--module must be an existing .py file (got {path!r})")
    spec = importlib.util.spec_from_file_location(f"moreau_audit_user_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise AuditError(f"--module {path!r} cannot be loaded as a Python module")
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as exc:  # noqa: BLE001  (the user's module: one line)
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise AuditError(f"--module {path!r} fails to import: {type(exc).__name__}: {first}") from None
    return mod


def cmd_audit(args: argparse.Namespace) -> int:
    try:
        mod = _load(args.module)
        if hasattr(mod, "round_fn"):
            impl: Any = mod.round_fn
        elif hasattr(mod, "client_update") and hasattr(mod, "aggregate"):
            impl = (mod.client_update, mod.aggregate)
        else:
            raise AuditError(
                f"--module {args.module!r} defines neither round_fn nor client_update and aggregate"
            )
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
    except (AuditError, ValueError, TypeError) as exc:
        print(f"moreau audit: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(report)
    return report.exit_code
