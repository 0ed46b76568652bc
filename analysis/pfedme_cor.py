"""Placeholder: this checker module is being written (issue 10)."""
STATEMENTS = ()
