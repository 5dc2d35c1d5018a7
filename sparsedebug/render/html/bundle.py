"""The bundle as one page (``report.html``).

The bundle page is the review memo and the deployment report in one file, with
the figures first: latency distributions, per-layer time by path, the sparse
reality check, forward time, the GPU timeline of traced runs and speed against
quality. The decision is read from ``bundle.decision`` (never computed here) and
the Markdown parts are the same text as ``memo.md`` and ``report.md``.
"""

from __future__ import annotations

from html import escape

from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.memo import Memo
from sparsedebug.records.playbook import Playbook
from sparsedebug.render.document import report, review
from sparsedebug.render.html.energy import energy_section
from sparsedebug.render.html.page import Part, Section, page
from sparsedebug.render.html.sections import (
    PageRun,
    forward_section,
    latency_section,
    layer_section,
    quality_section,
    reality_section,
    timeline_section,
)
from sparsedebug.render.markdown.memo import render_full_report
from sparsedebug.render.memo import phrases
from sparsedebug.render.memo.formats import render
from sparsedebug.render.memo.markdown import MAX_REASONS


def bundle_sections(bundle: LoadedBundle) -> list[Section]:
    """The figure sections of a bundle, in page order."""
    doc = report(bundle)
    by_role = {"baseline": bundle.baseline, "candidate": bundle.candidate, "fixed": bundle.fixed}
    runs: list[PageRun] = []
    for fig in doc.latency:
        run = by_role[fig.role]
        assert run is not None
        judged = doc.run(fig.role)
        # the baseline is judged by no gate: its layer rows are kept apart
        layers = judged.layers if judged is not None else doc.baseline_layers
        runs.append(PageRun(fig.role, run, fig, layers, judged.reality if judged is not None else None))
    page_runs = {item.role: item for item in runs}
    sparse_runs = [item for item in runs if item.role != "baseline"]
    return [
        latency_section(runs),
        layer_section(page_runs["baseline"], page_runs["candidate"], page_runs.get("fixed")),
        reality_section(sparse_runs),
        forward_section(runs),
        timeline_section(runs),
        quality_section(runs),
        energy_section(bundle),
    ]


def _decision_lead(memo: Memo) -> str:
    """The decision box: the decision and its reasons once (at most three, as memo.md states them); figures follow."""
    st = phrases.PLAIN
    items = "".join(f"<li>{escape(phrases.reason(st, r))}</li>" for r in memo.reasons[:MAX_REASONS])
    rest = len(memo.reasons) - MAX_REASONS
    more = f"<p>{rest} more in the deployment report's gate matrix.</p>" if rest > 0 else ""
    more += "".join(f"<p>{escape(phrases.headline(f))}</p>" for f in memo.headline)
    return (
        f'<div class="banner {escape(memo.decision.code or "")}"><p class="decision">{escape(phrases.decision_head(st, memo.decision))}</p>'
        f"<p>{escape(phrases.decision_basis(st, memo.decision))}</p><ol>{items}</ol>{more}</div>"
    )


def render_bundle_html(bundle: LoadedBundle, book: Playbook) -> str:
    """``report.html``: the decision box, the figures, their tables, the review memo and the deployment report of
    ``bundle``, all read from its review document (``bundle.memo``)."""
    memo = review(bundle)
    base, cand = bundle.baseline, bundle.candidate
    inputs = ", ".join(f"{i.role} {i.label} ({i.kind})" for i in bundle.manifest.inputs)
    subtitle = f"Bundle {bundle.root.name}, created {bundle.manifest.created_at}, playbook {bundle.manifest.playbook}; inputs: {inputs}."
    parts = [Part("memo", "Review memo", render(memo, "markdown")), Part("report", "Deployment report", render_full_report(bundle, book))]
    return page(
        f"Sparsity review: {cand.name} against {base.name}", subtitle, bundle_sections(bundle),
        lead=_decision_lead(memo), parts=parts,
    )
