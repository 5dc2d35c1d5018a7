"""A small bundle with every figure's inputs (synthetic runs, numbers chosen here), and an HTML checker."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

from sparsedebug.records.run import (
    EqualLatencyQuality,
    KernelClass,
    QualityDelta,
    RunRecord,
    TimelineEvent,
    TimelineGap,
    TimelineStrip,
)
from sparsedebug.sources.bundle import LoadedBundle
from tests.support.bundles import make_bundle
from tests.support.synth import dense_run, sparse_run

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def strip(host_gap_ms: float) -> TimelineStrip:
    """One iteration: up (sparse GEMM), act, down (dense GEMM) with a host wait before down and a kernel wait after act."""
    events = [
        TimelineEvent(start_ms=0.0, dur_ms=1.2, kernel_class=KernelClass.SPARSE_GEMM, stream=7, layer="l0.up"),
        TimelineEvent(start_ms=1.25, dur_ms=0.2, kernel_class=KernelClass.ELEMENTWISE, stream=7, layer="l0.act"),
        TimelineEvent(start_ms=1.5 + host_gap_ms, dur_ms=2.0, kernel_class=KernelClass.DENSE_TC_GEMM, stream=7, layer="l0.down"),
    ]
    gaps = [
        TimelineGap(start_ms=1.2, dur_ms=0.05, cause="kernel_wait"),
        TimelineGap(start_ms=1.45, dur_ms=0.05 + host_gap_ms, cause="host_wait"),
    ]
    return TimelineStrip(iteration=1, span_ms=3.5 + host_gap_ms, events=events, events_total=3, gaps=gaps)


def _with(run: RunRecord, *, budget: float, timeline: TimelineStrip | None = None, eq: EqualLatencyQuality | None = None) -> RunRecord:
    outcome = run.outcome.model_copy(update={"budget_ms": budget, "equal_latency": eq})
    schedule = run.schedule.model_copy(update={"timeline": timeline})
    return run.model_copy(update={"outcome": outcome, "schedule": schedule})


def _eq(fraction: float, narrowed_ms: float, cand_ms: float, cosine: float) -> EqualLatencyQuality:
    return EqualLatencyQuality(
        narrowed_ffn_fraction=fraction, narrowed_latency_ms=narrowed_ms, latency_matched=True, candidate_latency_ms=cand_ms,
        narrowed=QualityDelta(cosine=0.99, rel_err=0.01), candidate=QualityDelta(cosine=cosine, rel_err=1 - cosine),
        sparsity_wins=False,
    )


def small_bundle() -> LoadedBundle:
    """Baseline 5 ms, candidate 6.5 ms with a fallback and a host-waiting timeline, fixed 3.5 ms; budget 6 ms."""
    base = _with(dense_run(5.0), budget=6.0, timeline=strip(0.0))
    cand = _with(sparse_run(6.5, fallback=True), budget=6.0, timeline=strip(3.0), eq=_eq(0.25, 6.4, 6.5, 0.97))
    fixed = _with(sparse_run(3.5, n=12), budget=6.0, eq=_eq(0.5, 3.6, 3.7, 0.97))
    return make_bundle(base, cand, fixed)


class Checked(HTMLParser):
    """Parses a page and fails on a mismatched end tag; records tags, attributes and text by element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: dict[str, str] = {}
        self._capture: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)
        ident = dict(attrs).get("id")
        self._capture.append(ident or "")
        if ident:
            self.text.setdefault(ident, "")
        if tag in VOID:
            self._capture.pop()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()
        self._capture.pop()

    def handle_data(self, data: str) -> None:
        for ident in self._capture:
            if ident:
                self.text[ident] += data

    def handle_comment(self, data: str) -> None:
        self.comments.append(data.strip())


def parse(html: str) -> Checked:
    """Parse ``html``, asserting every element is closed in order."""
    checked = Checked()
    checked.feed(html)
    checked.close()
    assert checked.stack == [], f"unclosed: {checked.stack}"
    return checked


def figure_words(html: str) -> str:
    """The text of every ``<text>`` element of the figures in ``html``, joined by spaces (a wrapped label reads whole)."""
    return " ".join(unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", html))
