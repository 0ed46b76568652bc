"""The theorem catalogue of moreau: one checker per statement, with mutants.

``analysis.registry.catalogue()`` lists the statements; ``analysis.runner``
runs them; ``moreau check`` is the command line.
"""
