"""The theorem catalogue of moreau: one checker per statement, with mutants.

Layout (``analysis/README.md`` in the repository maps it file by file):

* ``moreau.analysis.engine``: the machinery — ``core`` (Statement, Sides, Mutant), ``registry``
  (finds the statements by walking the paper packages), ``runner`` and ``records`` (running and
  reporting), ``search``, ``analyse``, ``sharp``, ``symbolic``, ``describe``, ``coverage``, ``cli``
  (``moreau check``).  It never imports a paper package.
* ``moreau.analysis.pep``: performance estimation (``moreau check --pep``).
* one package per paper — ``pfedme``, ``fedprox``, ``perfedavg``, ``thesis`` and the thesis's own
  systems ``fedfw``, ``permfl``, ``pflmf`` — with a module (or
  a small package) per statement whose path follows its id: ``pfedme.thm2`` is
  ``moreau.analysis.pfedme.thm2``, ``gd.nonconvex`` is in ``moreau.analysis.thesis.gd``.
"""
