"""The text report of ``moreau check``: one verdict line per statement by default, the per-part
detail with ``-v``.  Every number printed here is read from the run's results (prose that explains
a finding lives in ``--describe`` and docs/catalogue.md).

Each part of the report lives in its own module; this one gathers their names, so that
``moreau.analysis.engine.report.<name>`` keeps working:

- ``report_text``: the line shapes (numbers, a statement's place in its paper, wrapping);
- ``report_verdicts``: the verdict line per statement and the instances printed under it;
- ``report_table``: the verbose per-part view (``-v``);
- ``report_mutants``: the mutants' table (``--mutants``);
- ``report_search``: what the searches tried;
- ``report_summary``: the closing block (what the run did and what each step cost);
- ``report_saved``: the instances saved by ``--save-counterexamples``.
"""

from __future__ import annotations

from moreau.analysis.engine.report_mutants import _mutated_claim_fails as _mutated_claim_fails
from moreau.analysis.engine.report_mutants import family_power as family_power
from moreau.analysis.engine.report_mutants import mutant_verdicts as mutant_verdicts
from moreau.analysis.engine.report_mutants import print_mutants as print_mutants
from moreau.analysis.engine.report_saved import save as save
from moreau.analysis.engine.report_search import print_searches as print_searches
from moreau.analysis.engine.report_search import print_short_search as print_short_search
from moreau.analysis.engine.report_summary import run_counts as run_counts
from moreau.analysis.engine.report_summary import run_summary as run_summary
from moreau.analysis.engine.report_summary import step_totals as step_totals
from moreau.analysis.engine.report_summary import trials_used as trials_used
from moreau.analysis.engine.report_table import _ci_measure as _ci_measure
from moreau.analysis.engine.report_table import _level as _level
from moreau.analysis.engine.report_table import _measure as _measure
from moreau.analysis.engine.report_table import _power as _power
from moreau.analysis.engine.report_table import _rate_measure as _rate_measure
from moreau.analysis.engine.report_table import print_table as print_table
from moreau.analysis.engine.report_text import WIDTH as WIDTH
from moreau.analysis.engine.report_text import _fmt as _fmt
from moreau.analysis.engine.report_text import _num as _num
from moreau.analysis.engine.report_text import _short as _short
from moreau.analysis.engine.report_text import _wrap as _wrap
from moreau.analysis.engine.report_verdicts import counterexample_text as counterexample_text
from moreau.analysis.engine.report_verdicts import group as group
from moreau.analysis.engine.report_verdicts import minimal_text as minimal_text
from moreau.analysis.engine.report_verdicts import print_verdicts as print_verdicts
from moreau.analysis.engine.report_verdicts import shared_lines as shared_lines
from moreau.analysis.engine.report_verdicts import shrunk_text as shrunk_text
from moreau.analysis.engine.report_verdicts import verdict_of as verdict_of
from moreau.analysis.engine.report_verdicts import worst_text as worst_text

__all__ = [
    "group",
    "print_verdicts",
    "print_table",
    "print_mutants",
    "print_searches",
    "print_short_search",
    "save",
    "mutant_verdicts",
    "family_power",
    "counterexample_text",
    "run_counts",
    "step_totals",
    "run_summary",
]
