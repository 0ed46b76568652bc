r"""The catalogue documents itself: ``docs/catalogue.md`` and ``moreau check --describe ID``.

Everything here is generated from the registry (each checker module's
docstring and its :class:`~moreau.analysis.engine.core.Statement`), so the documentation
cannot drift from what is checked; ``tests/catalogue/engine/test_docs.py`` fails when
the committed ``docs/catalogue.md`` differs from :func:`catalogue_markdown`.
Regenerate it with ``python -m moreau.analysis.engine.describe`` (writes ``docs/catalogue.md``).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from moreau.analysis.engine.coverage import known_gaps, paper_citation
from moreau.analysis.engine.findings import NOTES_LABEL
from moreau.analysis.engine.registry import paper_packages

__all__ = ["describe", "catalogue_markdown", "DOC_PATH", "main"]

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "catalogue.md"

CONVENTIONS = """\
## Conventions

- **Prox and envelope** (the papers' λ; γ = 1/λ elsewhere in the literature), λ > 0:
  `prox_{f/λ}(w) = argmin_θ f(θ) + (λ/2)‖θ − w‖²`, `F(w) = min_θ f(θ) + (λ/2)‖θ − w‖²`.
- **Quadratic** `f(θ) = ½ θᵀAθ − bᵀθ + c`, A symmetric with eigenvalues `a_1 ≤ … ≤ a_d`:
  smoothness `L = max_k |a_k|`, strong convexity `μ = a_1` when `a_1 > 0`; when `a_1 < 0`, f is
  (−a_1)-weakly convex and the prox exists iff `λ > −a_1`. Closed forms:
  `prox(w) = (A + λI)⁻¹(b + λw)`, `∇F(w) = λ(w − prox(w))`, `∇²F = λA(A + λI)⁻¹` with eigenvalues
  `λa_k/(λ + a_k)`.
- **Logistic** (labels ±1, rows x_j of X, weights w_j):
  `f(θ) = Σ_j w_j log(1 + exp(−y_j x_jᵀθ))/Σ_j w_j + (μ/2)‖θ‖²`, smoothness bound
  `λ_max(XᵀWX)/(4Σw) + μ` (attained at θ = 0), strong convexity μ; the prox is a certified Newton
  solve (`‖θ − prox(w)‖ ≤ ‖∇h(θ)‖/(λ + μ)`, h the prox subproblem, with rounding accounted for).
- **Multinomial** (softmax, C classes): the model of the pFedMe and FedProx experiments; parameter
  the d×C matrix flattened row-major.
- **Least squares** `ℓ(w, z) = ½(y − xᵀw)²`: with `y = xᵀw⋆ + ε`, `∇ℓ(w⋆, z) = −εx`.
- **Data for statistical statements** must be well specified: the ground truth w⋆⁽ⁱ⁾ is the
  population minimiser of client i's loss (for logistic data, labels drawn with
  `P(y = 1 | x) = σ(xᵀβ)`). Argmax labels (the public synthetic generators) make data separable and
  are used for figures only.
- **Parts.** Every part of a statement is normalised to `lhs ≤ rhs`. `upper`: an inequality the
  paper states; `tight`: the paper's constant is claimed attained (max lhs/rhs must reach 1);
  `exact`: an identity (lhs an error, rhs the allowed rounding); `rate`: a fitted exponent with a
  confidence interval against the theory's exponent. An instance outside a part's assumptions is
  not applicable and never counts as a failure.
- **Mutants** are wrong versions of a statement (a constant changed, an exponent changed, an
  inequality reversed, a condition relaxed); each must be rejected by some family. *Equivalent*
  mutants are true statements (no instance can refute them) and are listed with the reason.
"""


def _docstring(statement) -> str:
    module = sys.modules.get(statement.instances.__module__)
    doc = inspect.getdoc(module) if module is not None else None
    return doc or ""


def describe(statement) -> str:
    """Markdown description of one :class:`~moreau.analysis.engine.core.Statement`."""
    s = statement
    out = [f"### `{s.id}` — {s.source}", ""]
    out.append(f"*Source:* {paper_citation(s.paper)}, {s.source.split(',', 1)[-1].strip()}.  ")
    out.append(f"*Claimed by the paper:* {s.claimed}.  ")
    out.append(
        "*Families:* " + "; ".join(f"{fam} ({', '.join(kinds)})" for fam, kinds in s.families.items()) + "."
    )
    out += ["", f"**Statement (as printed).** {s.text}", "", "```", s.latex, "```", ""]
    out.append(
        f"*The catalogue expects the printed statement to:* {'hold' if s.expect == 'holds' else s.expect[:-1]}."
    )
    origin = getattr(s, "origin", "printed")
    if origin != "printed":
        out.append(
            "*Origin:* "
            + (
                "a remark of the paper's discussion, judged on its own (never as the theorem's verdict)."
                if origin == "remark"
                else "a reconstruction (no statement is printed; the catalogue reconstructs one from the text)."
            )
        )
    out.append("")
    if s.readings:
        out.append("**Readings (named claims beside the printed one, each with its own verdict).**")
        out += [
            f"- '{r.name}' ({r.kind}; expected to {'hold' if r.expect == 'holds' else r.expect[:-1]}"
            + (f"; repairs: {r.repairs}" if getattr(r, "repairs", "") else "")
            + f"): {r.why}"
            + (f" (the paper's own text: {r.cite})" if getattr(r, "cite", "") else "")
            for r in s.readings
        ]
        out.append("")
    if s.assumptions:
        out.append("**Assumptions.** " + "; ".join(s.assumptions) + ".")
        out.append("")
    doc = _docstring(s)
    if doc:
        out += [
            "<details><summary>The checker's documentation (statement, constants, instances, sides, "
            "what the check shows)</summary>",
            "",
            "```text",
            doc,
            "```",
            "",
            "</details>",
            "",
        ]
    if s.mutants:
        against = "the printed statement" if s.reference is None else f"the reading '{s.reference.name}'"
        o_eq = sum(bool(m.o_equivalent) for m in s.mutants)
        more = f", and {o_eq} equivalent under O(·), not counted" if o_eq else ""
        out.append(
            f"**Mutants ({len(s.mutants) - o_eq}, each must be rejected{more}; applied to {against}).**"
        )
        out += [
            f"- {m.name}"
            + (f" (equivalent under O(·), not counted: {m.o_equivalent})" if m.o_equivalent else "")
            for m in s.mutants
        ]
        out.append("")
    if s.evidence_only:
        out.append(
            "**Families that are evidence only (no mutant can be rejected there; not part of the verdict).**"
        )
        out += [f"- {fam}: {why}" for fam, why in s.evidence_only.items()]
        out.append("")
    if s.consistency_checks:
        out.append("**Consistency checks (parts no mutant can reject, and why).**")
        out += [f"- {name}: {why}" for name, why in s.consistency_checks.items()]
        out.append("")
    out.append("**Analyses.** " + _analyses(s))
    out.append("")
    if s.powered:  # Statement.powered: run by --analyse (moreau.analysis.engine.power, docs/power.md)
        out.append(
            "**Powered rate checks (`--analyse`; each rate part must detect a change of at most 0.05).**"
        )
        out += [f"- `{p.id}`: {p.text}; mutants: " + "; ".join(m.name for m in p.mutants) for p in s.powered]
        out.append("")
    if s.equivalent_mutants:
        out.append("**Equivalent mutants (true statements, not counted).**")
        out += [f"- {name}: {why}" for name, why in s.equivalent_mutants.items()]
        out.append("")
    if s.findings:  # the notes (core.Statement.findings)
        out.append(
            f"**{NOTES_LABEL}.** `moreau check` reports only what its run computes (docs/findings.md)."
        )
        out += [f"- {f}" for f in s.findings]
        out.append("")
    return "\n".join(out)


def _analyses(s) -> str:
    """Which generic analyses apply to the statement, and why not where they do not."""
    from moreau.analysis.engine.registry import declared

    pep = {sid for _, d in declared("PEP") for sid in d}
    why_not = {sid: why for _, d in declared("PEP_NOT_APPLICABLE") for sid, why in d.items()}
    out = [
        "--pep: "
        + (
            "a class worst case"
            if s.id in pep
            else f"not applicable ({why_not.get(s.id, 'no reason given')})"
        )
    ]
    out.append(
        "--analyse scale consistency: "
        + (
            "declared for " + ", ".join(f for f, v in s.scaling.items() if callable(v))
            if any(callable(v) for v in s.scaling.values())
            else "not declared"
        )
    )
    out.append("--analyse sympy sharp constants: " + (", ".join(s.sharp) if s.sharp else "none"))
    out.append(
        "--search: "
        + ("a hypothesis strategy" if s.strategy is not None else "the instance generator's seeds")
    )
    return "; ".join(out) + "."


def catalogue_markdown(cat=None) -> str:
    """The whole catalogue document, generated from the registry."""
    if cat is None:
        from moreau.analysis.engine.registry import catalogue

        cat = catalogue()
    out = [
        "# The theorem catalogue",
        "",
        "Generated from the registry by `python -m moreau.analysis.engine.describe`; do not edit by hand "
        "(a test keeps it in sync). `moreau check --describe ID` prints one entry.",
        "",
        "| id | source | families | claimed | mutants |",
        "|---|---|---|---|---|",
    ]
    for s in cat.values():
        out.append(
            f"| [`{s.id}`](#{_anchor(s)}) | {s.source} | {', '.join(s.families)} | {s.claimed} | "
            f"{len(s.mutants)} |"
        )
    out += ["", "## Sources", ""] + [f"- {pkg.PAPER['citation']}" for pkg in paper_packages()]
    out += ["", CONVENTIONS, "## Statements", ""]
    out += [describe(s) for s in cat.values()]
    gaps = known_gaps(set(cat))
    out += [
        "## Not checked (yet)",
        "",
        "Formal statements of the source papers that the catalogue does not check; `moreau check` lists "
        "them at the end of every run.",
        "",
    ]
    out += [f"- `{sid}` — {cite}, {where}: {line}" for sid, cite, where, line in gaps] or ["- none"]
    out.append("")
    return "\n".join(out)


def _anchor(s) -> str:
    text = f"{s.id} — {s.source}".lower()
    keep = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return keep.replace(" ", "-")


def main(argv=None) -> int:
    DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOC_PATH.write_text(catalogue_markdown(), encoding="utf-8")
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
