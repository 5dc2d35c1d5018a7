"""memo.md: the decision and its reasons first, then the seed's template one line per field, detail linked."""

from __future__ import annotations

from sparsedebug.records.memo import Memo
from sparsedebug.render.memo import action as act
from sparsedebug.render.memo import hypothesis as hyp
from sparsedebug.render.memo import phrases as p
from sparsedebug.render.memo import results, stage
from sparsedebug.render.memo.formats import MemoFormat, register
from sparsedebug.render.memo.tags import build_tags_parts

MAX_REASONS = 3
"""The page's banner (``render.html``) shows at most this many reasons; memo.md and the terminal state every one."""


def reason_lines(memo: Memo, style: p.Style) -> list[str]:
    """Every reason as a numbered list: each failing check, none behind a link."""
    out = []
    for i, r in enumerate(memo.reasons, 1):
        out += [f"{i}. {p.reason(style, r)}", *(f"   - {item}" for item in p.reason_items(style, r))]
    return out


def _sub(lines: list[str]) -> list[str]:
    """Lines under a field as its bullets (lines already nested, ``  - ...``, one level deeper)."""
    return [f"  {line}" if line.startswith("  ") else f"  - {line}" for line in lines]


@register
class MarkdownMemo(MemoFormat):
    """The review memo a lead signs: one page."""

    name = "markdown"
    help = "memo.md as playbook run writes it"

    def format(self, memo: Memo) -> str:
        """memo.md."""
        st = p.MD
        gate = memo.detail.get("gate") if st.markdown else None
        out = [f"# {memo.title}", "", *p.decision_lines(st, memo.decision, gate), ""]
        rows = results.table(st, memo)
        out += [*rows, "", results.LIMIT_LEGEND, ""] if rows else []
        out += [*reason_lines(memo, st), ""]
        # the table states every run's speedup: a headline of any other figure still gets its line
        headline = [f for f in memo.headline if not (rows and f.quantity == "speedup_p50")]
        out += [*(f"- {p.headline(f)}" for f in headline), ""] if headline else []
        # the results table gives each run's clock; the legend is left for what the table cannot say (a projection)
        legend = p.clock_legend(memo.clocks) if not rows or any(c.clock == "projected" for c in memo.clocks) else ""
        if legend:
            out += [legend, ""]
        s, h, a, g = memo.symptom, memo.hypothesis, memo.action, memo.signoff
        if s is not None:
            used = next((c for c in s.failing_metric if c.kind == "sparse_kernels"), None)
            out += ["## 1. Symptom", "",
                    "- **Failing metric**:", *(f"  - {part}" for part in p.failing_metric_parts(st, s.failing_metric)),
                    *(([f"- **Sparse kernels used**: {p.sparse_kernels_parts(st, used)[0]}"]
                       + _sub(p.sparse_kernels_parts(st, used)[1:])) if used is not None else []),
                    f"- **Workload or traffic slice**: {p.slice_(st, s.slice)}",
                    f"- **First failing layer or stage**: {stage.first_stage(st, s.first_stage, effect_here=False)}",
                    *_sub(stage.stage_legend(st, s.first_stage)),
                    *_sub([e[0].upper() + e[1:] for e in (stage.first_stage_effect(st, s.first_stage),) if e and not s.first_stage.withheld]),
                    *_sub(stage.first_stage_layers(st, s.first_stage)),
                    "- **Build and runtime tags**:", *(f"  - {part}" for part in build_tags_parts(st, s.build_tags)), ""]
        if h is not None:
            out += ["## 2. Mechanism hypothesis", "",
                    f"- **Primary mechanism**: {hyp.primary_mechanism(st, h.primary, settle_here=False)}",
                    *_sub(hyp.primary_settle(h.primary)),
                    *(["- **Competing hypotheses**:", *(f"  - {part}" for part in hyp.competing_parts(st, h.competing))]
                      if h.competing else ["- **Competing hypotheses**: none."]),
                    f"- **Missing evidence**: {hyp.missing(st, h.missing, memo.detail.get('mechanism', ''))}", ""]
        if a is not None:
            out += ["## 3. Proposed action", "",
                    f"- **Smallest reversible change**: {act.change(st, a.change)}",
                    *(f"  - {line}" for line in act.change_details(st, a.change)),
                    f"- **Expected movement**: {act.expected(st, a.expected)}",
                    f"- **Measured movement**: {act.measured(st, a.measured)}",
                    *_sub(act.measured_caveats(a.measured)),
                    "- **Regression risk**:", *(f"  - {act.risk(st, r)}" for r in a.risks), ""]
        if g is not None:
            out += ["## 4. Signoff", "",
                    f"- **Required artifact**: {act.artifact(st, g.artifact)}",
                    f"- **Required owners**: {act.owners(st, g.owners)}",
                    f"- **Final decision**: {st.bold(g.decision.terms.get('label', g.decision.code or ''))}.", ""]
        if memo.detail:
            sections = {k: v for k, v in memo.detail.items() if k != "gate"}
            out += ["Detail in the report: "
                    + ", ".join(f"[{name}]({target})" for name, target in sections.items()) + "."]
            if "gate" in memo.detail and not any(line.startswith("Blocking, with") for line in out):
                out += [f"Every gate check with its test and samples: [gate]({memo.detail['gate']})."]
            out += [""]
        return "\n".join(out)
