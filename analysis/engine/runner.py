r"""Running the catalogue: statements and their mutants on instance batches (chunked for a large
``--trials``), the default batch and the hypothesis search for surviving mutants.

The reports (JSON records and their schema, counterexample files) are in
``moreau.analysis.engine.records``; their names are re-exported here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from moreau.analysis.engine.batches import _BUILTIN_PAPERS, _batch_len, _draw, rng_for
from moreau.analysis.engine.judge import judged_over
from moreau.analysis.engine.records import (
    SLACK_THRESHOLD,
    is_loose,
    load_counterexample,
    record_json,
    save_counterexample,
    save_instance,
)
from moreau.analysis.engine.registry import StatementError, catalogue
from moreau.analysis.engine.runner_mutants import _closest_instance as _closest_instance
from moreau.analysis.engine.runner_mutants import _rejecting_instance as _rejecting_instance
from moreau.analysis.engine.runner_mutants import _try_survivors as _try_survivors
from moreau.analysis.engine.runner_progress import _bar as _bar
from moreau.analysis.engine.runner_progress import _Lines as _Lines
from moreau.analysis.engine.runner_record import STEPS as STEPS
from moreau.analysis.engine.runner_record import Record as Record
from moreau.analysis.engine.runner_record import _chunks as _chunks
from moreau.analysis.engine.runner_record import _evaluate as _evaluate
from moreau.analysis.engine.runner_record import _local_outputs as _local_outputs
from moreau.analysis.engine.runner_record import _run_one as _run_one
from moreau.analysis.engine.runner_record import _shrunk as _shrunk

# The run over ids and families is here; one (statement, family) and its Record are in runner_record,
# the mutants' verdicts in runner_mutants, the progress over chunks in runner_progress.  Their names
# are imported here as themselves, so that moreau.analysis.engine.runner.<name> keeps working.

__all__ = [
    "SLACK_THRESHOLD",
    "is_loose",
    "Record",
    "run",
    "record_json",
    "save_counterexample",
    "save_instance",
    "load_counterexample",
    "rng_for",
    "CHUNK",
    "STEPS",
]

FAMILIES = ("quadratic", "logistic", "multinomial", "nonconvex")


#: instances drawn, prepared and judged at a time when ``trials`` exceeds it (memory stays that of
#: one chunk however large ``--trials`` is; see ``moreau.analysis.engine.chunks``)
CHUNK = 2048


def run(
    ids=None,
    family="all",
    trials=None,
    seed=0,
    mutants=False,
    search_examples=0,
    chunk=None,
    progress=False,
    cat=None,
    client=None,
    modules=(),
    search_seconds=0.0,
):
    """Run statements; returns a list of :class:`Record` (one per id and family).

    A mutant is rejected when the batch, or the checker's default batch, or
    (with ``search_examples > 0``) a hypothesis search finds an instance where
    it fails.  With ``search_examples > 0`` the statement itself is also
    searched: a failing instance found that way is appended to the record's
    batch and counted like any other instance.  Without it, ``search_seconds > 0`` gives each
    statement expected to hold a short search of that many seconds (``search.short_search``), whose
    failing instance joins the batch the same way.

    ``trials`` above ``chunk``: instances are drawn, prepared and judged ``chunk`` at a time
    (chunk k > 0 from its own stream ``rng_for(seed, id, family, "chunk k")``), the results reduced
    as they come (:class:`moreau.analysis.engine.chunks.ChunkReducer`), and each mutant judged chunk by chunk
    until one rejects it.  A checker whose ``trials`` is not a count of instances (its batch size
    differs from the trials asked) gets one call, as with a small ``trials``.  ``progress``: a
    tqdm bar over the chunks (when tqdm is installed).  ``cat``: the statements to choose from
    (default the catalogue; the CLI passes the users' statements too).  ``client``: a Dask client
    (``moreau check --scheduler``): the chunks go to the cluster (``moreau.analysis.engine.distributed``;
    ``modules``: the ``--module`` specs the workers load), with the same records as the serial run.

    Families are the statements' own (any name a statement's instance generator knows); a statement
    whose generator draws no instance, or fails, on a family it declares raises
    ``StatementError``: a run on no instance is an error, never a pass.
    """
    cat = catalogue() if cat is None else cat
    ids = list(cat) if not ids else list(ids)
    unknown = [i for i in ids if i not in cat]
    if unknown:
        raise KeyError(f"unknown statement id(s) {unknown}; known: {', '.join(cat)}")
    chunk = CHUNK if chunk is None else chunk
    records = []
    for sid in ids:
        st = cat[sid]
        for fam in _families(st):
            if family in ("all", fam):
                with _users_code(st, fam):
                    records.append(
                        _run_family(
                            st,
                            fam,
                            trials,
                            seed,
                            mutants,
                            search_examples,
                            chunk,
                            progress,
                            client,
                            modules,
                            search_seconds,
                        )
                    )
    return records


@contextlib.contextmanager
def _users_code(st, fam: str) -> Iterator[None]:
    """A user's statement (not the catalogue's) that raises while it runs: its own code or data, not an
    internal error: a :class:`StatementError` naming the statement, the family and what was raised
    (the original exception chained, for ``--debug``)."""
    try:
        yield
    except StatementError:
        raise
    except Exception as exc:
        if st.paper in _BUILTIN_PAPERS():
            raise
        who = f"{st.id} [{fam}]"
        what = str(exc).splitlines()[0] if str(exc) else ""
        what = what.removeprefix(f"{who}: ")
        raise StatementError(f"{who}: running it raised {type(exc).__name__}: {what}") from exc


def _run_family(
    st, fam, trials, seed, mutants, search_examples, chunk, progress, client, modules, search_seconds
) -> Record:
    """One (statement, family) of :func:`run`: its record."""
    outputs = None
    searches: list[tuple[str, dict]] = []  # as Record.searches
    timings = dict.fromkeys(STEPS, 0.0)  # as Record.timings (the cluster's draws are the workers')
    chunked = bool(
        trials and trials > chunk and _batch_len(_draw(st, fam, chunk, rng_for(seed, st.id, fam))) == chunk
    )
    with judged_over(trials if chunked else 0):  # Monte Carlo levels hold over the run's instances
        if client is not None and chunked:
            from moreau.analysis.engine.distributed import remote_outputs

            outputs = remote_outputs(
                client,
                st,
                fam,
                trials,
                seed,
                chunk,
                mutants,
                modules,
                search_examples,
                searches,
                search_seconds,
                timings=timings,
            )
        rec = _run_one(
            st,
            fam,
            trials,
            seed,
            mutants,
            search_examples,
            chunk,
            progress,
            outputs,
            search_seconds,
            timings,
        )
    rec.searches = searches + rec.searches if outputs is not None else rec.searches
    return rec


def _families(st):
    """The statement's families, the built-in ones in their usual order first."""
    known = [f for f in FAMILIES if f in st.families]
    return known + [f for f in st.families if f not in known]
