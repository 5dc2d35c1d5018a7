"""The bundle as one page (``report.html``).

The bundle page is the review memo and the deployment report in one file, with
the figures first: latency distributions, per-layer time by path, the sparse
reality check, forward time, the GPU timeline of traced runs and speed against
quality. The decision is read from ``bundle.decision`` (never computed here) and
the Markdown parts are the same text as ``memo.md`` and ``report.md``.
"""

from __future__ import annotations

from html import escape

from sparsedebug.records.playbook import Playbook
from sparsedebug.render.html.energy import energy_section
from sparsedebug.render.html.page import Part, Section, page
from sparsedebug.render.html.sections import (
    Runs,
    forward_section,
    latency_section,
    layer_section,
    quality_section,
    reality_section,
    timeline_section,
)
from sparsedebug.render.markdown.deployment import render_report
from sparsedebug.render.markdown.memo import render_memo
from sparsedebug.signoff.decide import stored_decision
from sparsedebug.sources.bundle import LoadedBundle


def bundle_sections(bundle: LoadedBundle) -> list[Section]:
    """The figure sections of a bundle, in page order."""
    runs: Runs = [("baseline", bundle.baseline), ("candidate", bundle.candidate)]
    if bundle.fixed is not None:
        runs = [*runs, ("fixed", bundle.fixed)]
    sparse_runs = [item for item in runs if item[0] != "baseline"]
    return [
        latency_section(runs),
        layer_section(
            ("baseline", bundle.baseline), ("candidate", bundle.candidate),
            ("fixed", bundle.fixed) if bundle.fixed is not None else None,
        ),
        reality_section(bundle.baseline, sparse_runs),
        forward_section(runs),
        timeline_section(runs),
        quality_section(runs),
        energy_section(bundle),
    ]


def _decision_lead(bundle: LoadedBundle, book: Playbook) -> str:
    decision = stored_decision(bundle)
    label = book.decision(decision.decision).label
    items = "".join(f"<li>{escape(r)}</li>" for r in decision.reasons)
    refused = ""
    if decision.decision != "ship" and decision.ship_refused:
        refused = "<p>Not shipped because:</p><ul>" + "".join(f"<li>{escape(r)}</li>" for r in decision.ship_refused) + "</ul>"
    recomputed = ""
    if decision.recomputed:
        recomputed = f"<p>Decided again at rendering: {escape(', '.join(decision.recomputed))} changed since the walk.</p>"
    return (
        f'<div class="banner {escape(decision.decision)}"><p class="decision">Decision: {escape(label)}</p>'
        f"<p>Judged on the {escape(decision.judged_on)}.</p><ul>{items}</ul>{refused}{recomputed}</div>"
    )


def render_bundle_html(bundle: LoadedBundle, book: Playbook) -> str:
    """``report.html``: the figures, their tables, the review memo and the deployment report of ``bundle``."""
    base, cand = bundle.baseline, bundle.candidate
    inputs = ", ".join(f"{i.role} {i.label} ({i.kind})" for i in bundle.manifest.inputs)
    subtitle = f"Bundle {bundle.root.name}, created {bundle.manifest.created_at}, playbook {bundle.manifest.playbook}; inputs: {inputs}."
    parts = [Part("memo", "Review memo", render_memo(bundle, book)), Part("report", "Deployment report", render_report(bundle))]
    return page(
        f"Sparsity review: {cand.name} against {base.name}", subtitle, bundle_sections(bundle),
        lead=_decision_lead(bundle, book), parts=parts,
    )
