"""argparse value types shared by the subcommands: a bad value is a usage error (exit 2) naming it."""
from __future__ import annotations

import argparse

__all__ = ["positive_int", "nonnegative_int"]


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


def nonnegative_int(s) -> int:
    """A whole number >= 0 (``--seed``)."""
    return _whole(s, 0, ">= 0")
