"""Render a replayed (or imported) run record: summary, lowering and per-layer kernel tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.table import Table
from rich.text import Text

from sparsedebug.records.basis import per_iteration
from sparsedebug.records.report import LayerRow, RunFigures
from sparsedebug.records.run import GraphStage, KernelPath, LowerStage, RunRecord
from sparsedebug.render.clocks import measured_clock, sample_count
from sparsedebug.render.terminal.fit import optional
from sparsedebug.render.words.core import timing_words
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.run_figures import equal_latency_sentence, quality_figure
from sparsedebug.render.words.target import missing_forward_words


def target_rows(record: RunRecord) -> list[tuple[str, str | Text]]:
    """Summary rows of the target clock: projected forward, speedup, layers slower sparse than dense."""
    target = record.target
    if target is None:
        return []
    label = f"target ({target.backend}, {target.launch.replace('_', ' ')}, projected)"
    fwd = target.forward
    if fwd.dense is None or fwd.candidate is None or fwd.speedup is None:
        return [(label, missing_forward_words(fwd) if fwd.missing_layers else "no projection")]
    colour = "green" if fwd.speedup >= 1.0 else "red"
    rows: list[tuple[str, str | Text]] = [
        (
            label,
            Text.assemble(
                f"dense {fwd.dense.total_ms:.3f} ms, candidate {fwd.candidate.total_ms:.3f} ms (host {fwd.candidate.host_ms:.3f}, "
                f"GPU {fwd.candidate.gpu_ms:.3f}): ", (f"{fwd.speedup:.2f}x", colour), f"; basis {fwd.basis}",
            ),
        )
    ]
    slower = [lo.name for lo in record.lower.layers if lo.slower_on_target is not None]
    if slower:
        rows.append(("sparse slower than dense (target)", f"{len(slower)} layer(s): {', '.join(slower[:4])}" + (" ..." if len(slower) > 4 else "")))
    return rows


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    if value >= 1 << 20:
        return f"{value / (1 << 20):.2f} MiB"
    if value >= 1 << 10:
        return f"{value / (1 << 10):.1f} KiB"
    return f"{value} B"


def summary_table(record: RunRecord, figures: RunFigures) -> Table:
    """Whole-run figures (``figures``: the run's, ``signoff.report.run_figures``): latency tails vs budget, speedup,
    overhead, dense share, quality."""
    table = Table(title=f"run {record.name}")
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    outcome = record.outcome
    schedule = record.schedule
    clock = measured_clock(figures)
    lat = figures.latency
    assert lat is not None  # a replay always has samples
    table.add_row(f"forward latency ({clock})", f"p50 {lat.p50:.3f} ms  p95 {lat.p95:.3f} ms  p99 {lat.p99:.3f} ms  ({sample_count(record)})")
    if outcome.budget_ms is not None:
        status = Text("within", style="green") if lat.p99 <= outcome.budget_ms else Text("over", style="red")
        table.add_row(f"budget (p99, {clock})", Text.assemble(f"{outcome.budget_ms:g} ms: ", status))
    base = figures.dense_baseline
    if base is not None:
        table.add_row(f"dense baseline ({clock})", f"p50 {base.p50:.3f} ms  p95 {base.p95:.3f} ms  p99 {base.p99:.3f} ms")
    if outcome.effective_speedup is not None:
        colour = "green" if outcome.effective_speedup >= 1.0 else "red"
        table.add_row(f"effective speedup ({clock})", Text.assemble((f"{outcome.effective_speedup:.2f}x", colour), " (dense p50 / candidate p50)"))
    elif outcome.timing is not None and not outcome.timing.stable:
        table.add_row(f"effective speedup ({clock})", Text(f"not reported: timings {timing_words(outcome.timing)}", style="yellow"))
    if outcome.timing is not None and outcome.timing.stable and outcome.timing.flagged_rounds:
        table.add_row("timing interference", timing_words(outcome.timing))
    for label, text in target_rows(record):
        table.add_row(label, text)
    busy, span = figures.busy_ms, figures.span_ms
    if busy is not None and span is not None:
        table.add_row("span / busy", f"{span:.3f} ms / {busy:.3f} ms (overhead {_ms(per_iteration(schedule, schedule.host_wait_ms))} ms per iteration)")
    if schedule.dense_share is not None:
        table.add_row("dense share of busy time", f"{schedule.dense_share:.1%}")
    if schedule.threads is not None:
        table.add_row("threads", str(schedule.threads))
    lower = record.lower
    linear = [layer for layer in lower.layers if layer.kernel_class is not None and "gemm" in layer.kernel_class.value]
    sparse = [layer for layer in linear if layer.path is KernelPath.SPARSE]
    fallbacks = [layer for layer in linear if layer.path is KernelPath.DENSE and layer.reason is not None and layer.reason.value != "intended_dense"]
    table.add_row("lowering", f"{len(sparse)} of {len(linear)} linear layers sparse on {lower.backend}; {len(fallbacks)} fell back")
    if outcome.quality is not None:
        q = outcome.quality
        text = f"{quality_figure(q)}, rel err {q.rel_err:.4f}"
        if q.evidence is not None:
            text += f" on {q.evidence.units} {q.evidence.unit}s ({q.evidence.tokens} tokens) of {q.evidence.text}"
        if q.accuracy is not None:
            text += f", accuracy {q.accuracy:.3f} (dense {q.dense_accuracy:.3f})" if q.dense_accuracy is not None else f", accuracy {q.accuracy:.3f}"
        table.add_row("quality vs dense", text)
    eq = outcome.equal_latency
    if eq is not None:
        color = "green" if eq.sparsity_wins else "red"
        table.add_row("equal latency", Text(equal_latency_sentence(eq), style=color))
    for verdict_row in record.verdicts:
        table.add_row(f"check {verdict_row.check}", f"{verdict_row.status}: {say(verdict_row.detail)}")
    return table


def lower_table(graph: GraphStage, lower: LowerStage, *, linear_only: bool = True) -> Table:
    """Per layer: path, reason, conversion cost and bytes (linear and embedding layers by default)."""
    table = Table(title=f"lowering on {lower.backend}", caption="convert ms: measured on this machine; slower_than_dense and target sparse/dense ms: projected on the target")
    table.add_column("layer", no_wrap=True)
    table.add_column("intended", no_wrap=True)
    table.add_column("path", no_wrap=True)
    table.add_column("reason", no_wrap=True)
    table.add_column("target sparse/dense ms", justify="right")
    table.add_column("convert ms", justify="right")
    table.add_column("per call", justify="right")
    table.add_column("values", justify="right")
    table.add_column("metadata", justify="right")
    intended = {layer.name: layer.intended for layer in graph.layers}
    ops = {layer.name: layer.op.value for layer in graph.layers}
    for layer in lower.layers:
        if linear_only and ops.get(layer.name) not in ("linear", "embedding"):
            continue
        if layer.path is KernelPath.SPARSE:
            path: str | Text = Text("sparse", style="green")
        elif layer.reason is not None and layer.reason.value != "intended_dense":
            path = Text("dense (fallback)", style="red")
        else:
            path = "dense"
        reason: str | Text = "-" if layer.reason is None else layer.reason.value
        target = "-"
        if layer.slower_on_target is not None:
            flag = layer.slower_on_target
            reason = Text("slower_than_dense", style="yellow")
            target = f"{flag.sparse_ms:.3f}/{flag.dense_ms:.3f}"
        table.add_row(
            layer.name,
            intended.get(layer.name, "-"),
            path,
            reason,
            target,
            _ms(layer.conversion_ms),
            str(layer.conversions_per_call),
            _bytes(layer.value_bytes),
            _bytes(layer.metadata_bytes),
        )
    optional(table, "metadata", "values", "per call", "convert ms", "target sparse/dense ms")
    return table


def fallback_table(lower: LowerStage) -> Table | None:
    """The full reason of every fallback (the backend's own error where there is one); None if none fell back."""
    rows = [
        layer
        for layer in lower.layers
        if layer.path is KernelPath.DENSE and layer.reason is not None and layer.reason.value != "intended_dense"
    ]
    if not rows:
        return None
    table = Table(title="why layers fell back to dense")
    table.add_column("layer", no_wrap=True)
    table.add_column("reason", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for layer in rows:
        assert layer.reason is not None
        table.add_row(layer.name, layer.reason.value, say(layer.detail) if layer.detail else "-")
    return table


def kernel_table(record: RunRecord, figures: RunFigures, rows: Sequence[LayerRow]) -> Table:
    """Per layer: chosen-path and dense-path p50 (this machine; ``rows``: ``signoff.metrics.layer_rows``), target
    projection, ratios, numeric error."""
    table = Table(title=f"kernels (p50 of interleaved samples, {measured_clock(figures)}; target: projected)")
    table.add_column("layer", no_wrap=True)
    table.add_column("path")
    table.add_column("chosen ms", justify="right")
    table.add_column("dense ms", justify="right")
    table.add_column("dense/chosen", justify="right")
    if record.target is not None:
        table.add_column("target chosen ms", justify="right")
        table.add_column("target dense/chosen", justify="right")
    table.add_column("precision")
    table.add_column("max abs err", justify="right")
    table.add_column("rel err", justify="right")
    paths = {layer.name: layer.path.value for layer in record.lower.layers}
    projected = {layer.name: layer for layer in record.target.layers} if record.target is not None else {}
    medians = {row.name: row for row in rows}
    for layer in record.kernel.layers:
        row = medians.get(layer.name)
        chosen = row.time_ms if row is not None else None
        dense = row.dense_time_ms if row is not None else None
        ratio = "-" if chosen is None or dense is None or chosen == 0 else f"{dense / chosen:.2f}x"
        target_cells: list[str] = []
        if record.target is not None:
            proj = projected.get(layer.name)
            path = proj.chosen() if proj is not None else None
            target_cells = [_ms(path.per_call_ms if path else None), "-" if proj is None or proj.speedup is None else f"{proj.speedup:.2f}x"]
        table.add_row(
            layer.name,
            paths.get(layer.name, "-"),
            _ms(chosen),
            _ms(dense),
            ratio,
            *target_cells,
            layer.precision or "-",
            "-" if layer.max_abs_err is None else f"{layer.max_abs_err:.2e}",
            "-" if layer.rel_err is None else f"{layer.rel_err:.2e}",
        )
    optional(table, "max abs err", "dense/chosen", "precision", "dense ms")
    return table


class OriginFacts(Protocol):
    """What the origin note prints of a reproducer's origin (``sources.workload.schema.WorkloadOrigin``)."""

    @property
    def trace(self) -> str: ...
    @property
    def layer(self) -> str: ...
    @property
    def first_stage(self) -> str: ...
    @property
    def mechanism(self) -> str | None: ...
    @property
    def replay_shows(self) -> bool: ...
    @property
    def note(self) -> str: ...
    @property
    def dense_twin(self) -> str | None: ...


def origin_note(origin: OriginFacts, workload_file: str) -> Text:
    """What a reproducer cut from a trace pair reproduces, and whether (and why not) this replay can show it."""
    text = Text()
    text.append(f"reproducer of {origin.layer} from trace {origin.trace}: ", style="bold")
    text.append(f"the trace pair diverged first at {origin.first_stage}, mechanism {origin.mechanism or 'none'}")
    twin = f"; dense twin: {origin.dense_twin} (`sparsedebug bisect {origin.dense_twin} {workload_file}`)" if origin.dense_twin else ""
    text.append(twin + "\n")
    if origin.replay_shows:
        text.append(f"this replay shows it: {origin.note}\n", style="green")
    else:
        text.append(f"this replay cannot show it: {origin.note}\n", style="yellow")
    return text
