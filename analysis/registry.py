"""The theorem catalogue: every checker module and the statements it defines.

A checker module exposes ``STATEMENTS``, a tuple of
:class:`moreau.analysis._core.Statement`.  Add a module name to ``MODULES`` to add
its statements to ``moreau check``, the JSON report and the test suite.
"""
from __future__ import annotations

import importlib
from functools import lru_cache

__all__ = ["MODULES", "REQUIRED_IDS", "catalogue", "get"]

MODULES = (
    "moreau.analysis.pfedme_prop1",
    "moreau.analysis.pfedme_lemma1",
    "moreau.analysis.pfedme_lemma2",
    "moreau.analysis.fedprox_lemma1",
    "moreau.analysis.fedprox_lemma2",
    "moreau.analysis.fedprox_lemma3",
    "moreau.analysis.fedprox_thm1",
    "moreau.analysis.perfedavg_lemma4_2",
    "moreau.analysis.perfedavg_lemma4_4",
    "moreau.analysis.thesis_gd",
    "moreau.analysis.thesis_fw",
    "moreau.analysis.fedprox_thm2",
    "moreau.analysis.fedprox_cor1",
    "moreau.analysis.pfedme_thm1",
    "moreau.analysis.thesis_sgd",
    "moreau.analysis.pfedme_thm2",
    "moreau.analysis.pfedme_cor",
    "moreau.analysis.perfedavg_lemma4_3",
    "moreau.analysis.perfedavg_appendix_h",
    "moreau.analysis.perfedavg_tv_w1",
    "moreau.analysis.perfedavg_propf1",
    "moreau.analysis.perfedavg_thm4_5",
)

#: ids the catalogue must contain
REQUIRED_IDS = (
    "pfedme.prop1", "pfedme.lemma1", "pfedme.lemma2",
    "fedprox.lemma1", "fedprox.lemma2", "fedprox.lemma3",
    "perfedavg.lemma4_2", "perfedavg.lemma4_4",
    "gd.strongly_convex", "gd.nonconvex", "fw.convex",
)


@lru_cache(maxsize=1)
def catalogue():
    """``{id: Statement}`` in catalogue order."""
    out = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for s in module.STATEMENTS:
            if s.id in out:
                raise ValueError(f"statement id {s.id!r} defined twice ({name})")
            out[s.id] = s
    return out


def get(statement_id: str):
    cat = catalogue()
    if statement_id not in cat:
        raise KeyError(f"unknown statement id {statement_id!r}; known: {', '.join(cat)}")
    return cat[statement_id]
