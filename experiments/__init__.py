"""Reproductions of the papers' figures and teaching demos.

Every artifact written here carries its parameters, seed, package versions
and the git commit (see :mod:`moreau.experiments._artifact`).
"""
