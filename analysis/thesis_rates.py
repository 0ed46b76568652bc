"""Placeholder: being written."""
STATEMENTS = ()
