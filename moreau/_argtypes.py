"""argparse value types shared by the subcommands: a bad value is a usage error (exit 2) naming it."""

from __future__ import annotations

import argparse

__all__ = ["positive_int", "nonnegative_int", "trials_int", "MAX_TRIALS"]

#: the largest ``--trials``: 10^9 instances per (id, family) is days of work on one machine; beyond it
#: the count is almost surely a typo (and past 2^63 not even an integer numpy can hold)
MAX_TRIALS = 10**9


def _whole(s, lo, what):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number {what} (got {s!r})") from None
    if v < lo:
        raise argparse.ArgumentTypeError(f"must be {what} (got {v})")
    return v


def positive_int(s) -> int:
    """A whole number >= 1 (``--trials``, ``--workers``, ``--search``)."""
    return _whole(s, 1, ">= 1")


def trials_int(s) -> int:
    """``--trials``: a whole number in [1, MAX_TRIALS]."""
    v = _whole(s, 1, ">= 1")
    if v > MAX_TRIALS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_TRIALS:.0e} (got {v}): instances per statement "
            "and family; split a larger sweep over seeds"
        )
    return v


def nonnegative_int(s) -> int:
    """A whole number >= 0 (``--seed``)."""
    return _whole(s, 0, ">= 0")
