"""The theorem catalogue of moreau: one checker per statement, with mutants.

``moreau.analysis.registry.catalogue()`` lists the statements; ``moreau.analysis.runner``
runs them and ``moreau.analysis.records`` reports them; ``moreau check`` is the command line.
"""
