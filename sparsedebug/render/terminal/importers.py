"""Render imported artifacts (trace, ncu, nvidia-smi, TensorRT log) and fallback reports as rich tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from sparsedebug.core.kernel_names import short_kernel_name
from sparsedebug.records.artifacts import NcuReport, SmiReport, TrtSparsityReport
from sparsedebug.records.engine import BuildSparsity
from sparsedebug.records.findings import FallbackReport
from sparsedebug.records.report import LayerRow
from sparsedebug.records.run import RunRecord
from sparsedebug.records.trace import TraceSummary
from sparsedebug.render.terminal.fit import optional
from sparsedebug.render.words.dispatch import cause_words
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.sources_trace import temporal_words


def _ms(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "-"


def trace_summary_table(summary: TraceSummary) -> Table:
    """Whole-trace GPU timeline: busy, span, idle and its host/kernel/other split."""
    table = Table(title=f"GPU timeline: {summary.file}", show_header=True)
    table.add_column("figure")
    table.add_column("ms", justify="right")
    table.add_column("of span", justify="right")
    table.add_row("span (first GPU op start to last end)", _ms(summary.span_ms), "100.0%")
    table.add_row("GPU busy (union of kernels/memsets/memcpys)", _ms(summary.busy_ms), _pct(summary.busy_ms, summary.span_ms))
    table.add_row("GPU idle", _ms(summary.idle_ms), _pct(summary.idle_ms, summary.span_ms))
    table.add_row("  host wait (launch began after the GPU went idle)", _ms(summary.host_wait_ms), _pct(summary.host_wait_ms, summary.span_ms))
    table.add_row("  kernel wait (launch was queued)", _ms(summary.kernel_wait_ms), _pct(summary.kernel_wait_ms, summary.span_ms))
    if summary.other_wait_ms > 0:
        table.add_row("  other (no linked launch call)", _ms(summary.other_wait_ms), _pct(summary.other_wait_ms, summary.span_ms))
    table.caption = (
        f"{summary.device or 'unknown device'}; {summary.gpu_ops} GPU ops ({summary.kernels} kernels) on {len(summary.streams) or 1} stream(s); "
        f"{len(summary.iterations)} iterations from {summary.iteration_source}; {layer_source_text(summary)}"
    )
    return table


_SOURCE_WORDS = {"annotation": "annotations", "module": "module calls", "aten_op": "top-level ops", "kernel": "kernel names"}


def layer_source_text(summary: TraceSummary) -> str:
    """How the layers were found, in words (and why they are kernel names when they are)."""
    parts = [f"{n} from {_SOURCE_WORDS.get(source, source)}" for source, n in sorted(summary.layer_sources.items(), key=lambda kv: (-kv[1], kv[0]))]
    text = f"{summary.layers} layers" + (f" ({', '.join(parts)})" if parts else "")
    if summary.cuda_graph:
        text += "; CUDA-graph replay: no CPU ops under its kernels, so those layers are kernel names"
    elif summary.layer_sources.get("kernel") == summary.layers:
        text += "; no CPU ops under the kernels: one layer per kernel name"
    return text


def temporal_table(summary: TraceSummary) -> Table:
    """HTA's temporal breakdown (compute, non-compute, idle) under each convention."""
    table = Table(title="temporal breakdown (Holistic Trace Analysis)", show_header=True)
    for column in ("convention", "compute ms", "non-compute ms", "idle ms", "span ms", "idle %"):
        table.add_column(column, justify="left" if column == "convention" else "right")
    for item in summary.temporal:
        table.add_row(item.convention, _ms(item.compute_ms), _ms(item.non_compute_ms), _ms(item.idle_ms), _ms(item.span_ms), _pct(item.idle_ms, item.span_ms))
    table.caption = "; ".join(f"{item.convention}: {temporal_words(item)}" for item in summary.temporal)
    return table


def streams_table(summary: TraceSummary) -> Table:
    """Per-stream op counts and busy time (device busy is the union across streams)."""
    table = Table(title="GPU streams", show_header=True)
    for column in ("stream", "GPU ops", "busy ms", "span ms", "top class"):
        table.add_column(column, justify="left" if column == "top class" else "right")
    for s in summary.streams:
        top = max(s.by_class_ms.items(), key=lambda kv: kv[1])[0] if s.by_class_ms else "-"
        table.add_row(str(s.stream), str(s.gpu_ops), _ms(s.busy_ms), _ms(s.span_ms), top)
    table.caption = f"device busy (union across streams) {summary.busy_ms:.3f} ms"
    return table


def iterations_table(summary: TraceSummary, limit: int | None = None) -> Table:
    """Per-iteration span, busy and latency (the first ``limit`` iterations; every one in --json)."""
    table = Table(title="iterations", show_header=True)
    for column in ("#", "GPU ops", "span ms", "busy ms", "idle ms", "latency ms"):
        table.add_column(column, justify="right")
    shown = summary.iterations if limit is None else summary.iterations[:limit]
    for it in shown:
        table.add_row(str(it.index) + (" (partial)" if it.partial else ""), str(it.gpu_ops), _ms(it.span_ms), _ms(it.busy_ms),
                      _ms(it.span_ms - it.busy_ms), _ms(it.latency_ms))
    notes = []
    if summary.iteration_detail is not None:
        notes.append(f"{summary.iteration_source}: {say(summary.iteration_detail)}")
    if len(shown) < len(summary.iterations):
        notes.append(f"first {len(shown)} of {len(summary.iterations)} iterations (--json for all)")
    if notes:
        table.caption = "; ".join(notes)
    return table


def class_table(by_class_ms: dict[str, float]) -> Table:
    """GPU time per kernel class."""
    total = sum(by_class_ms.values())
    table = Table(title="GPU time by kernel class", show_header=True)
    table.add_column("class")
    table.add_column("ms", justify="right")
    table.add_column("share", justify="right")
    for cls, ms in sorted(by_class_ms.items(), key=lambda kv: -kv[1]):
        table.add_row(cls, _ms(ms), _pct(ms, total))
    return table


def layer_table(record: RunRecord, rows: Sequence[LayerRow], limit: int | None = None) -> Table:
    """Per layer: op, weight shape, dtype, path, kernel class, calls and per-call GPU time (p50, ``rows``:
    ``signoff.metrics.layer_rows``); kernel names are in --json."""
    graph = {layer.name: layer for layer in record.graph.layers}
    timing = {layer.name: layer for layer in record.kernel.layers}
    medians = {row.name: row.time_ms for row in rows}
    table = Table(title=f"layers of {record.name}", show_header=True)
    table.add_column("layer", overflow="fold")
    for column in ("op", "weight", "dtype", "path", "class", "backend", "calls", "p50 ms"):
        table.add_column(column, justify="right" if column in ("calls", "p50 ms") else "left", no_wrap=True)
    layers = record.lower.layers if limit is None else record.lower.layers[:limit]
    for lower in layers:
        g = graph.get(lower.name)
        k = timing.get(lower.name)
        p50 = medians.get(lower.name)
        table.add_row(
            short_kernel_name(lower.name, None) if lower.identity == "kernel" else lower.name,
            g.op.value if g else "-",
            "x".join(str(d) for d in g.weight_shape) if g and g.weight_shape else "-",
            g.dtype if g else "-",
            lower.path.value,
            lower.kernel_class.value if lower.kernel_class else "-",
            lower.dispatch.backend if lower.dispatch and lower.dispatch.backend else "-",
            str(len(k.samples_ms)) if k else "-",
            _ms(p50),
        )
    if limit is not None and len(record.lower.layers) > limit:
        table.caption = f"first {limit} of {len(record.lower.layers)} layers (--json for all)"
    optional(table, "backend", "calls", "dtype", "op", "weight")
    return table


def path_counts(record: RunRecord) -> dict[str, int]:
    """Number of layers per kernel class (for one-line summaries)."""
    counts: dict[str, int] = defaultdict(int)
    for layer in record.lower.layers:
        counts[layer.kernel_class.value if layer.kernel_class else layer.path.value] += 1
    return dict(counts)


def ncu_table(report: NcuReport) -> Table:
    """Per kernel: duration, SM and memory throughput, the Speed-of-Light bound, spills."""
    table = Table(title=f"Nsight Compute: {report.file}", show_header=True)
    for column in ("id", "kernel", "class", "duration us", "SM %", "memory %", "bound", "spill requests"):
        table.add_column(column, justify="right" if column in ("duration us", "SM %", "memory %", "spill requests") else "left", overflow="fold")
    for k in report.kernels:
        table.add_row(
            k.id,
            short_kernel_name(k.name, None),
            k.kernel_class.value,
            _ms(k.duration_us, 1),
            _ms(k.sm_throughput_pct, 1),
            _ms(k.memory_throughput_pct, 1),
            k.bound or "-",
            "-" if k.local_spill_requests is None else f"{k.local_spill_requests:,.0f}",
        )
    optional(table, "spill requests", "id", "class", "memory %")
    return table


def smi_table(report: SmiReport) -> Table:
    """Per GPU: clock drop versus max, power, temperature, and time under each clock event reason."""
    table = Table(title=f"nvidia-smi: {report.file}", show_header=True)
    table.add_column("gpu")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for s in report.summaries:
        rows: list[tuple[str, str]] = [
            ("samples (active)", f"{s.samples} ({s.active_samples}) over {s.duration_s:.2f} s"),
            (f"max SM clock ({s.max_clock_source})", f"{_ms(s.max_sm_clock_mhz, 0)} MHz"),
            ("active SM clock min / median", f"{_ms(s.min_sm_clock_mhz, 0)} / {_ms(s.median_sm_clock_mhz, 0)} MHz"),
            ("clock drop vs max: worst / median", f"{_ms(s.clock_drop_pct, 1)}% / {_ms(s.median_clock_drop_pct, 1)}%"),
            (f"power max / median ({s.power_field or 'no power field'})", f"{_ms(s.max_power_w, 1)} / {_ms(s.median_power_w, 1)} W"),
            ("temperature max", f"{_ms(s.max_temperature_c, 0)} C"),
        ]
        for reason in s.reasons:
            rows.append((f"under {reason.reason}", f"{reason.seconds:.2f} s ({100 * reason.fraction:.1f}% of samples)"))
        if report.reasons_column is None:
            rows.append(("clock event reasons", "not logged"))
        for i, (label, value) in enumerate(rows):
            table.add_row(s.gpu if i == 0 else "", label, value)
    return table


def trt_table(report: TrtSparsityReport) -> Table:
    """Eligible, picked and fallback layers of a TensorRT build."""
    table = Table(title=f"TensorRT sparsity: {report.file}", show_header=True)
    table.add_column("layer", overflow="fold")
    table.add_column("eligible")
    table.add_column("picked sparse")
    picked = set(report.picked)
    for name in report.eligible:
        table.add_row(name, "yes", "yes" if name in picked else Text("no: dense fallback", style="red"))
    for name in report.picked_not_eligible:
        table.add_row(name, "not listed", "yes")
    table.caption = (
        f"{len(report.eligible)} eligible, {len(report.picked)} picked, {len(report.fallback)} dense fallback"
        + ("" if report.complete else " (log lacks the eligible or the picked line: incomplete build log?)")
    )
    return table


def trt_build_sparsity_lines(report: TrtSparsityReport) -> list[str]:
    """The build-level sparsity finding of a TensorRT log, one line each (none when its (Sparsity) lines say it all)."""
    lines: list[str] = []
    flags = " or ".join(report.enable_flags)
    if report.build_sparsity is BuildSparsity.DISABLED:
        lines.append(f"finding: the build options say Sparsity: Disabled (line {report.build_sparsity_line}): no layer can run a sparse "
                     f"tactic; rebuild with {flags}")
    elif not report.sparsity_lines and report.enable_flags:
        lines.append(f"finding: no (Sparsity) lines and no Sparsity build option: this build shows no sparsity at all; rebuild with {flags} "
                     "and verbose logging to see which layers are eligible and which got a sparse tactic")
    elif not report.sparsity_lines:
        lines.append(f"no (Sparsity) lines although the build says Sparsity: {report.build_sparsity.value.capitalize()}: "
                     "log the build verbosely (trtexec --verbose) to see which layers are eligible and picked")
    return lines


def fallback_table(report: FallbackReport) -> Table:
    """Every layer whose kernel class changed, with the unintended ones marked."""
    table = Table(title=f"kernel path changes: {report.base} -> {report.cand}", show_header=True)
    for column in ("layer", "base", "candidate", "declared", "verdict", "base ms", "cand ms"):
        table.add_column(column, justify="right" if column.endswith("ms") else "left", overflow="fold")
    for change in report.changed:
        same = change.base_class == change.cand_class
        # the backend tells two paths apart when the kernel class does not; else the classes the layer ran
        backends = same and change.base_backend is not None and change.cand_backend is not None
        sets = same and not backends and change.base_classes != change.cand_classes
        table.add_row(
            change.layer,
            ("+".join(change.base_classes) if sets else change.base_class or change.base_path) + (f" ({change.base_backend})" if backends else ""),
            ("+".join(change.cand_classes) if sets else change.cand_class or change.cand_path) + (f" ({change.cand_backend})" if backends else ""),
            change.cand_intended or "-",
            Text("UNINTENDED", style="red") if change.unintended else "declared sparse",
            _ms(change.base_ms),
            _ms(change.cand_ms),
        )
    parts = [f"{report.matched_layers} layers matched", f"{len(report.changed)} changed", f"{len(report.unintended)} unintended"]
    if report.dense_fallbacks:
        parts.append(f"{len(report.dense_fallbacks)} declared sparse but ran dense: " + ", ".join(f.layer for f in report.dense_fallbacks))
    if report.only_in_base or report.only_in_cand:
        parts.append(f"{len(report.only_in_base)} only in base, {len(report.only_in_cand)} only in candidate")
    causes: dict[str, list[str]] = defaultdict(list)
    for change in report.unintended:
        for cause in change.cause:
            causes[cause_words(cause)].append(change.layer)
    for said, layers in causes.items():
        parts.append(f"cause seen in the trace ({', '.join(layers[:3])}{' and more' if len(layers) > 3 else ''}): {said}")
    precision = [f"{c.layer} {c.precision}" for c in report.changed if c.precision is not None]
    if precision:
        parts.append(f"{len(precision)} changed precision: " + ", ".join(precision[:3]) + (" and more" if len(precision) > 3 else ""))
    table.caption = "; ".join(parts)
    optional(table, "declared", "base ms", "cand ms")
    return table


def class_delta_table(report: FallbackReport) -> Table:
    """GPU time per kernel class, baseline versus candidate (useful when layers do not match)."""
    table = Table(title="GPU time by kernel class", show_header=True)
    table.add_column("class")
    table.add_column("base ms", justify="right")
    table.add_column("cand ms", justify="right")
    for cls in sorted(set(report.by_class_ms_base) | set(report.by_class_ms_cand)):
        table.add_row(cls, _ms(report.by_class_ms_base.get(cls)), _ms(report.by_class_ms_cand.get(cls)))
    return table


def engine_table(record: RunRecord, limit: int | None = None) -> Table:
    """Per TensorRT engine layer: type, precision, tactic, 2:4 weights, sparse tactic, why not sparse, median time and share."""
    table = Table(title=f"engine layers of {record.name}", show_header=True)
    table.add_column("layer", overflow="fold")
    for column in ("type", "precision", "tactic", "2:4 weights", "sparse", "why not", "median ms", "share"):
        table.add_column(column, justify="right" if column in ("median ms", "share") else "left", overflow="fold" if column == "tactic" else "ellipsis",
                         no_wrap=column != "tactic")
    layers = record.lower.layers if limit is None else record.lower.layers[:limit]
    for lower in layers:
        e = lower.engine
        if e is None:
            continue
        table.add_row(
            lower.name, e.layer_type, e.precision or "-", e.tactic or "-",
            "-" if e.sparse_weights is None else ("yes" if e.sparse_weights else "no"),
            "yes" if lower.path.value == "sparse" else "no",
            e.not_sparse.value.replace("_", " ") if e.not_sparse is not None else "-",
            _ms(e.median_ms, 4), f"{e.share:.1%}" if e.share is not None else "-",
        )
    if limit is not None and len(record.lower.layers) > limit:
        table.caption = f"first {limit} of {len(record.lower.layers)} layers (--json for all)"
    optional(table, "why not", "share")
    return table
