"""``moreau check``: run the theorem catalogue and report.

Each statement's verdict is about the statement as printed in its paper: holds, FAILS AS
PRINTED (with a counterexample computed by this run) or UNDECIDED (with the reason); a reading
(a repair, another reading of ambiguous text) is a separate named claim with its own verdict.

Exit status, as test runners use them: 0 every verdict is what the catalogue expects (a known
failure of a printed statement that reproduces is expected, like pytest's xfail; with
``--mutants`` every mutant is rejected, with ``--symbolic`` every identity proved); 1 a verdict
differs from the expectation (a known failure no longer fails, a reading fails, a statement with
no recorded expectation fails), or a mutant survives; 2 usage or environment errors; 3 an
internal error.  ``--replay`` of a mutant's saved instance exits 0 when the mutant is rejected
on it, 1 when it is not.

A large ``--trials`` is drawn, judged and reduced in chunks of 2048 instances
(memory bounded by one chunk; a progress bar on a terminal).

What the default run (no ID, no flag) costs, measured once on a 2-cpu machine at load 4 (commit
2565cc8; every run's report ends with its own "time:" line): 15.8 s of CPU time, 30 s wall for 40
statements (64 records, 1720 instances).  Per step, wall seconds at that load:
  instances drawn                                    0.2 s
  prepare step and the printed claims' sides        20.4 s
  readings                                           4.0 s
  instance properties                                0.0 s
  recorded counterexamples and worst instances       1.7 s
  short search (--search-seconds 0.03 per pair)      1.2 s
  report                                             0.1 s
"""

from __future__ import annotations

import argparse

from moreau._argtypes import nonnegative_int, positive_int, trials_int
from moreau.analysis.engine.cli_options import DEFAULT_SEARCH_SECONDS as DEFAULT_SEARCH_SECONDS
from moreau.analysis.engine.cli_options import OPTIMISE_SECONDS as OPTIMISE_SECONDS
from moreau.analysis.engine.cli_options import _conflicts as _conflicts
from moreau.analysis.engine.cli_options import _fail as _fail
from moreau.analysis.engine.cli_options import _ratio_arg as _ratio_arg
from moreau.analysis.engine.cli_options import _seconds_arg as _seconds_arg
from moreau.analysis.engine.cli_options import _usage_problem as _usage_problem
from moreau.analysis.engine.cli_options import _users_error as _users_error
from moreau.analysis.engine.cli_options import _writable_dir as _writable_dir
from moreau.analysis.engine.cli_options import _writable_file as _writable_file
from moreau.analysis.engine.cli_replay import _replay as _replay
from moreau.analysis.engine.cli_run import _print_gaps as _print_gaps
from moreau.analysis.engine.cli_run import _step_seconds as _step_seconds
from moreau.analysis.engine.cli_run import _warning_counts as _warning_counts
from moreau.analysis.engine.cli_run import cmd_check as cmd_check

# The parser is here, with the help text (this module's docstring); the option checks live in
# cli_options, the run and its sub-modes in cli_run, --replay in cli_replay.  Their names are
# imported here as themselves, so that moreau.analysis.engine.cli.<name> keeps working.

__all__ = ["add_check_parser", "cmd_check"]


def add_check_parser(sub):
    p = sub.add_parser(
        "check",
        help="check the theorem catalogue on concrete instances",
        description=__doc__.replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="statement ids (default: the whole catalogue)")
    p.add_argument(
        "--family",
        default="all",
        metavar="FAMILY",
        help="instance family to check on: quadratic, logistic, multinomial, nonconvex or one a user's "
        "statement declares (default: every family a statement covers)",
    )
    p.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="SPEC",
        help="also load the statements of a module of your own: a .py file or a dotted module name whose "
        "STATEMENTS lists them (repeatable; installed packages declare theirs in the entry-point "
        "group moreau.statements); with no ID, only these are checked",
    )
    p.add_argument(
        "--trials",
        type=trials_int,
        default=None,
        help="instances per (id, family) (default: each checker's own, sized for a < 1 min run); "
        "above 2048 they are drawn and judged in chunks, in bounded memory",
    )
    p.add_argument(
        "--seed",
        type=nonnegative_int,
        default=0,
        help="seed of the instances (an integer >= 0; each (id, family) derives its own stream)",
    )
    p.add_argument("--mutants", action="store_true", help="run every mutant; each must be rejected")
    p.add_argument(
        "--search",
        type=positive_int,
        default=0,
        metavar="N",
        help="also search N hypothesis examples per (id, family) for a failing instance "
        "(and per surviving mutant); a failure is shrunk to one small instance",
    )
    p.add_argument(
        "--search-seconds",
        type=_seconds_arg,
        default=None,
        metavar="S",
        help="without --search: a short search of S seconds per (id, family) of each statement expected "
        f"to hold, for an instance that breaks it (default {DEFAULT_SEARCH_SECONDS}; 0: none)",
    )
    p.add_argument("--symbolic", action="store_true", help="sympy proofs of the quadratic identities")
    p.add_argument(
        "--analyse",
        action="store_true",
        help="also drop each condition in turn (which are necessary), rescale the problem (is "
        'the statement scale-consistent) and report the sharpest constants; JSON key "analyse"',
    )
    p.add_argument(
        "--optimise-seconds",
        type=_seconds_arg,
        default=None,
        metavar="S",
        help="with --analyse or --search: the worst-case search's budget per (id, family), in seconds "
        "(Nelder-Mead over the family's parameters from the batch's worst instances; default 2; "
        "docs/optimisation.md)",
    )
    p.add_argument(
        "--save-worst",
        metavar="DIR",
        help="with --analyse or --search: save the worst instance the search found for each inequality part "
        "as .npz (replayable with --replay)",
    )
    p.add_argument(
        "--pep",
        action="store_true",
        help="also the class worst case of each first-order statement by performance estimation "
        '(PEPit with the Clarabel solver; needs the pep extra); JSON key "pep" per record',
    )
    p.add_argument(
        "--slack-threshold",
        type=_ratio_arg,
        default=None,
        metavar="R",
        help="flag a bound that holds with max LHS/RHS below R as LOOSE (default 0.1)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="send the chunks of a large --trials to a Dask cluster (tcp://HOST:8786; the dask extra); "
        "the JSON equals the serial run's apart from timings",
    )
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write one record per (id, family); schema in analysis/engine/records.py",
    )
    p.add_argument(
        "--save-counterexamples",
        metavar="DIR",
        help="save failing instances, and the instance that rejects each mutant, as .npz "
        "(each printed with the command that replays it)",
    )
    p.add_argument("--replay", metavar="FILE", help="re-check one saved instance (.npz)")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="every part of every statement and reading, on every family (default: one line per statement)",
    )
    p.add_argument("--list", action="store_true", help="list the catalogue and exit")
    p.add_argument(
        "--describe",
        action="store_true",
        help="print the documentation of the given ids (default: all) and exit (docs/catalogue.md)",
    )
    p.add_argument(
        "--debug",
        action="store_true",  # read by moreau._cli.main, accepted anywhere on the line
        help="show the traceback of an internal error (exit 3)",
    )
    p.set_defaults(func=cmd_check)
    return p
