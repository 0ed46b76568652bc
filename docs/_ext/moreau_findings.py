"""The site's findings page, rendered from a check run made when the docs build.

At ``builder-inited`` this extension runs ``moreau check`` (the whole catalogue, seed 0, no
time-budgeted search, so that the verdicts depend on the seed alone) with ``--json`` in a
subprocess, exactly as a user would, and writes ``docs/generated/findings-run.md`` (not committed):
the command, seed, version and commit it came from, the report as the command printed it, and per
statement its verdict lines and its records' findings. Nothing is computed or worded here: the
verdict lines are ``moreau.analysis.engine.verdict.headline`` of the record's ``"verdict"``, and the
findings are the ``"findings"`` lines that ``moreau.analysis.engine.findings.record_findings``
rendered into the JSON (docs/findings.md says what each kind means).

``sphinx-build -D moreau_findings_json=PATH`` renders a JSON written by an earlier
``moreau check --json PATH`` instead of running the check (the page then says so).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from sphinx.errors import ExtensionError

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
PAGE = DOCS / "generated" / "findings-run.md"
SEED = 0
#: the check the page comes from, as typed on a command line (``--json PATH`` appended)
ARGS = ["check", "--seed", str(SEED), "--search-seconds", "0"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|~$#])")


def _md(text: str) -> str:
    """``text`` as Markdown that shows it as written (markup characters escaped)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def run_check(json_path: Path) -> tuple[str, int, float]:
    """Run ``python -m moreau check ... --json json_path``; return its stdout, exit code and seconds."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run(  # in the JSON's folder: the report names the file as the page's command does
        [sys.executable, "-m", "moreau", *ARGS, "--json", json_path.name],
        cwd=json_path.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):  # 1: a verdict differs from the catalogue's expectation (shown)
        raise ExtensionError(
            f"moreau {' '.join(ARGS)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}"
        )
    return proc.stdout, proc.returncode, time.perf_counter() - t0


def render(
    records: list[dict], stdout: str | None, returncode: int | None, seconds: float | None, source: str
) -> str:
    """The page's Markdown from the run's JSON records (and its printed report, when it was run here)."""
    from moreau.analysis.engine.verdict import headline

    run = records[0]["run"] if records else {}
    versions = run.get("versions", {})
    lines = [
        "# Findings of a check run",
        "",
        "This page was generated when the site was built. " + source,
        "",
        f"- seed {run.get('seed')}, trials {run.get('trials') or 'the default'}, "
        f"family {run.get('family')}, search seconds {run.get('search_seconds')}",
        f"- moreau {versions.get('moreau-pfl')}, git commit `{run.get('git_commit')}`, Python "
        f"{run.get('python')}, numpy {versions.get('numpy')}, scipy {versions.get('scipy')}",
        f"- {len(records)} records (statement, family)"
        + (f"; exit code {returncode}" if returncode is not None else "")
        + (f"; {seconds:.0f} s" if seconds is not None else ""),
        "",
        "Nothing here is copied by hand: the report is what the command printed, each statement's "
        "verdict lines are rendered from its JSON record by the function that prints them in the "
        'report, and its findings are the record\'s `"findings"` lines. What each kind of finding '
        "means: [findings.md](../findings.md); the statements themselves: "
        "[catalogue.md](../catalogue.md).",
        "",
    ]
    if stdout is not None:
        lines += ["## The report as printed", "", "```text", stdout.rstrip(), "```", ""]
    lines += ["## By statement", ""]
    by_id: dict[str, list[dict]] = {}
    for rec in records:
        by_id.setdefault(rec["id"], []).append(rec)
    for sid, recs in by_id.items():
        lines += [f"### {_md(sid)}: {_md(recs[0]['source'])}", ""]
        verdict = recs[0].get("verdict")
        if verdict is not None:
            first, *rest = headline(verdict)
            lines += [f"**{_md(first)}**" + "".join(f"  \n{_md(r)}" for r in rest), ""]
        for rec in recs:
            found = rec.get("findings") or []
            lines.append(f"Findings on the {_md(rec['family'])} family ({rec['instances']} instances):")
            lines.append("")
            lines += [f"- {_md(f)}" for f in found] or ["- none recorded"]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_page(app: object) -> None:
    """Run the check (or read ``moreau_findings_json``) and write ``docs/generated/findings-run.md``."""
    given = getattr(getattr(app, "config", None), "moreau_findings_json", "")
    if given:
        path = Path(given)
        stdout, code, seconds = None, None, None
        source = f"It renders the JSON records of an earlier run, `{path.name}` (`moreau check --json`)."
    else:
        path = ROOT / "build" / "docs-check" / "check.json"  # the name the page's command gives
        stdout, code, seconds = run_check(path)
        source = f"It comes from the command\n\n```bash\nmoreau {' '.join(ARGS)} --json check.json\n```"
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExtensionError(f"moreau_findings_json: cannot read {path}: {exc}") from exc
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    text = render(records, stdout, code, seconds, source)
    if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
        PAGE.write_text(text, encoding="utf-8")


def setup(app):  # Sphinx's extension entry point
    app.add_config_value("moreau_findings_json", "", "env")
    app.connect("builder-inited", write_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
