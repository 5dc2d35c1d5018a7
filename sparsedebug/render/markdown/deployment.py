"""The sparsity deployment report (``report.md``): the memo's required artifact.

Three parts, as the playbook's signoff asks: the supported-layer matrix (each
layer's op, shape, dtype, pattern, the path it took and why), the pruning
schedule as recorded in the run, and the dense-fallback impact (share of time and
FLOPs still dense, and the speedup the fallbacks leave on the table, Amdahl
style), and the sparsity that costs time: layers lowered sparse but projected
slower than dense on the target GPU. Then the playbook's metrics to collect and
the "sparse reality check" bar chart. Every latency names its clock (this machine,
the traced device, or the target, projected). Pure functions over run records.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparsedebug.core.patterns import declared_sparse
from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.report import FallbackSummary, RealityFigures, RunFigures, RunReport
from sparsedebug.records.run import KernelPath, RunRecord
from sparsedebug.records.target import LayerProjection
from sparsedebug.render.clocks import bundle_clock, label_latencies, measured_clock, slower_layers, target_sentence
from sparsedebug.render.document import figures, report, review, sections
from sparsedebug.render.markdown.cells import md_cell
from sparsedebug.render.markdown.energy import energy_section
from sparsedebug.render.words.figures import headline
from sparsedebug.render.words.gate import measured_words
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.run_figures import real_quality_text

BAR = "\u2588"


def _shape(shape: list[int] | None) -> str:
    return "x".join(str(d) for d in shape) if shape else "-"



def layer_matrix(run: RunRecord, judged: RunReport, fig: RunFigures) -> list[str]:
    """The supported-layer matrix as a Markdown table (kernel times on the run's clock, then the target's)."""
    clock = measured_clock(fig)
    target = {layer.name: layer for layer in run.target.layers} if run.target is not None else None
    rows = judged.layers
    converts = any(r.conversion_per_call_ms > 0 for r in rows)
    head = f"| layer | op | shape | dtype | pattern | path | reason | kernel p50 ms ({clock}) | dense p50 ms ({clock}) |"
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    if converts:
        # the kernel column never holds the per-call weight conversion (records.run): it is timed apart, its own column
        head = head.replace(f"| kernel p50 ms ({clock}) |", f"| kernel p50 ms ({clock}; per-call conversion excluded) | per-call conversion ms ({clock}, timed apart) |")
        rule += " --- |"
    if target is not None:
        head += " target ms (projected) | target dense ms (projected) | target speedup |"
        rule += " --- | --- | --- |"
    lines = [head, rule]
    for r in rows:
        path = r.path or "-"
        if r.fell_back:
            path = "**dense (fallback)**"
        reason = r.reason or ("" if r.path != KernelPath.DENSE.value else "unknown")
        if r.detail:
            reason = f"{reason}: {say(r.detail)}" if reason else say(r.detail)
        reason = reason or "-"
        if r.conversions_per_call:
            reason += f" (re-converted {r.conversions_per_call}x per call)"
        line = (
            f"| {md_cell(r.name)} | {r.op} | {_shape(r.weight_shape or r.input_shape)} | {r.dtype} | {r.intended} | {path} | "
            f"{md_cell(reason)} | {'-' if r.time_ms is None else f'{r.time_ms:.4f}'} | "
            + (f"{r.conversion_per_call_ms:.4f} | " if converts and r.conversion_per_call_ms > 0 else ("- | " if converts else ""))
            + f"{'-' if r.dense_time_ms is None else f'{r.dense_time_ms:.4f}'} |"
        )
        if target is not None:
            line += _target_cells(target.get(r.name))
        lines.append(line)
    return lines


def _target_cells(proj: LayerProjection | None) -> str:
    chosen = proj.chosen() if proj is not None else None
    dense = proj.dense if proj is not None else None
    speed = "-" if proj is None or proj.speedup is None or proj.path != "sparse" else f"{proj.speedup:.2f}x"
    return (
        f" {'-' if chosen is None else f'{chosen.per_call_ms:.4f}'} | {'-' if dense is None else f'{dense.per_call_ms:.4f}'} | {speed} |"
    )


def _no_target(run: RunRecord, fig: RunFigures) -> str:
    """Why a run has no target clock, in words that fit its source and backend profile."""
    if not fig.replayed:
        return "measured on the traced device itself: nothing projected onto a target"
    if fig.profile_target is None:
        return "no target clock in this run (its backend profile models no GPU): nothing projected"
    knobs = run.workload.knobs if run.workload is not None else {}
    why = "real-model workloads are timed on this machine only" if "model" in knobs else "the record holds no projection"
    return (
        f"no target projection in this run: the `{run.lower.backend}` profile models the {fig.profile_target}, but this replay "
        f"was not projected onto it ({why}); its latencies are this machine's"
    )


def costs_time(run: RunRecord, fig: RunFigures) -> list[str]:
    """Sparsity that costs time: layers lowered sparse but projected slower than dense on the target."""
    if run.target is None:
        return [f"- {_no_target(run, fig)}"]
    lines = [f"- {target_sentence(run)}"]
    slower = slower_layers(run)
    if not slower:
        lines.append("- no sparse layer is projected slower than dense on the target")
        return lines
    lines.append(f"- {len(slower)} sparse layer(s) projected slower than dense (lowering flag `slower_than_dense`):")
    for name, sparse_ms, dense_ms in slower:
        lines.append(f"  - `{md_cell(name)}`: sparse {sparse_ms:.4f} ms vs dense {dense_ms:.4f} ms per call (target, projected)")
    return lines


def pruning_schedule(run: RunRecord) -> list[str]:
    """Method, pattern, schedule (steps) and calibration exactly as the run recorded them."""
    knobs = run.workload.knobs if run.workload is not None else {}
    patterns = sorted({g.intended for g in run.graph.layers if declared_sparse(g.intended)})
    recorded = {k: v for k, v in knobs.items() if k.startswith("pruning.")}
    lines = []
    if recorded:
        for key in ("pruning.method", "pruning.schedule", "pruning.calibration"):
            if key in recorded:
                lines.append(f"- {key.split('.', 1)[1]}: {recorded[key]}")
        for key, value in sorted(recorded.items()):
            if key not in ("pruning.method", "pruning.schedule", "pruning.calibration", "pruning.pattern"):
                lines.append(f"- {key.split('.', 1)[1]}: {value}")
    else:
        lines.append(
            f"- method, schedule, calibration: not recorded in this {run.source.kind} run "
            "(pruning happened outside what sparsedebug observed)"
        )
    lines.append(f"- pattern(s): {', '.join(patterns) if patterns else 'none (dense)'}")
    return lines


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def fallback_impact(fb: FallbackSummary) -> list[str]:
    """Dense shares of FLOPs and time, fallback counts by reason, and the Amdahl cost (``fb``: the run's
    ``signoff.metrics.fallback_summary``, its kernel speedup paired with the baseline's dense layers when the run
    has no paired dense samples)."""
    lines = [
        f"- layers meant to be sparse: {fb.meant_sparse}; running dense (fallback): {fb.fell_back}"
        + (f" ({', '.join(f'{k} x{v}' for k, v in sorted(fb.reasons.items()))})" if fb.reasons else ""),
        f"- share of all FLOPs still dense (every dense-path layer): {_pct(fb.dense_flop_share)}; in fallbacks: {_pct(fb.fallback_share_of_all_flops)} of all FLOPs, {_pct(fb.fallback_flop_share)} of the FLOPs declared sparse",
        f"- share of kernel time still dense: {_pct(fb.dense_time_share)}; in fallbacks: {_pct(fb.fallback_time_share)}",
    ]
    if fb.sparse_kernel_speedup is not None:
        lines.append(f"- sparse kernel speedup: {fb.sparse_kernel_speedup:.3f}x ({say(fb.sparse_kernel_speedup_source) if fb.sparse_kernel_speedup_source else '-'})")
    elif fb.sparse_kernel_speedup_source is not None:
        lines.append(f"- sparse kernel speedup: {say(fb.sparse_kernel_speedup_source)}")
    if fb.meant_sparse and not fb.fell_back:
        lines.append("- speedup left on the table by fallbacks: none: no layer meant to be sparse runs dense")
    elif fb.speedup_left_on_table is not None and fb.sparse_kernel_speedup is not None and fb.sparse_kernel_speedup <= 1.0:
        lines.append(
            f"- speedup left on the table by fallbacks: none: the sparse kernels here are not faster than dense "
            f"({fb.sparse_kernel_speedup:.3f}x), so running the fallback layers sparse would not pay"
        )
    elif fb.speedup_left_on_table is not None:
        lines.append(
            f"- speedup left on the table by fallbacks (Amdahl, kernel time): {fb.speedup_left_on_table:.3f}x "
            f"= 1 / ((1 - {fb.fallback_time_share:.3f}) + {fb.fallback_time_share:.3f} / {fb.sparse_kernel_speedup:.3f})"
        )
    elif fb.fell_back and fb.sparse_kernel_speedup is None:
        lines.append("- speedup left on the table: n/a (no measured sparse kernel speedup to run the fallback layers at)")
    elif fb.fell_back:
        lines.append("- speedup left on the table: n/a (no per-layer kernel times for the fallback layers)")
    if fb.amdahl_ceiling is not None:
        lines.append(
            f"- model ceiling if every meant-sparse layer got its nominal M/N (Amdahl over kernel time): {fb.amdahl_ceiling:.3f}x"
        )
    return lines


def bar_chart(rows: Sequence[tuple[str, float, str]], width: int = 40) -> list[str]:
    """Text bars: ``(label, value, shown)``; lengths proportional to value, the largest ``width`` long."""
    top = max((v for _, v, _ in rows if v > 0), default=0.0)
    label_w = max((len(lbl) for lbl, _, _ in rows), default=0)
    out = []
    for label, value, shown in rows:
        n = 0 if top <= 0 or value <= 0 else max(1, round(width * value / top))
        out.append(f"{label.ljust(label_w)}  {BAR * n}{' ' if n else ''}{shown}")
    return out


def reality_check(fig: RealityFigures | None, width: int = 40, role: str = "run") -> list[str] | None:
    """The SPARSE REALITY CHECK bars of ``fig`` (``signoff.metrics.reality_figures``): nominal speedup, real speedup,
    fallback overhead.

    Nominal is the pattern's M/N; real is the run's speedup over the baseline (its
    own dense-baseline speedup when there is no baseline latency); fallback
    overhead is the share of kernel time spent in fallback layers, drawn on the
    same axis as a fraction of the nominal bar. None when no pattern is declared.
    """
    if fig is None:
        return None
    nominal, real = fig.nominal, fig.real
    rows: list[tuple[str, float, str]] = [("nominal speedup", nominal, f"{nominal:.2f}x (pattern M/N)")]
    if fig.ceiling is not None:
        rows.append(("model ceiling", fig.ceiling, f"{fig.ceiling:.2f}x (Amdahl over kernel time, every meant-sparse layer at M/N)"))
    rows.append(("real speedup", real or 0.0, f"{real:.2f}x (baseline p50 / {role} p50)" if real else "n/a"))
    overhead = fig.fallback_time_share
    if overhead is not None:
        rows.append(("fallback overhead", overhead * nominal, f"{overhead:.1%} of kernel time in dense fallbacks"))
    dense = fig.dense_time_share
    if dense is not None:
        rows.append(("dense time share", dense * nominal, f"{dense:.1%} of kernel time on dense paths"))
    return bar_chart(rows, width)


def collected_metrics(run: RunRecord, judged: RunReport, fig: RunFigures) -> list[str]:
    """The playbook's four metrics to collect, as far as the record carries them (``RunReport.collected``)."""
    lines = []
    m = judged.collected
    if m is not None and m.class_shares:
        shares = ", ".join(f"{k} {v:.1%}" for k, v in m.class_shares.items())
        lines.append(f"- tensor-core / FMA occupancy proxy (kernel time by class): {shares}")
    elif m is not None and m.sparse_time_share is not None:
        lines.append(f"- occupancy proxy: {m.sparse_time_share:.1%} of kernel time on the sparse path (no per-class counters)")
    else:
        lines.append("- occupancy: no kernel timing in the record; capture an Nsight Compute report")
    fb = judged.fallback
    lines.append(
        f"- fallback kernel rate: {'n/a' if fb.rate is None else f'{fb.rate:.1%}'} ({fb.fell_back}/{fb.meant_sparse} meant-sparse layers)"
    )
    share = m.metadata_share if m is not None else None
    if m is not None and share is not None:
        text = f"- sparse metadata overhead: {m.metadata_bytes} metadata bytes over {m.value_bytes} value bytes ({share:.1%})"
    else:
        text = "- sparse metadata overhead: no metadata/value bytes recorded"
    if m is not None and m.converting_layers:
        text += (f"; {m.converting_layers} layer(s) re-convert weights on every call, {m.conversion_ms_per_forward:.3f} ms per "
                 f"forward ({measured_clock(fig)})")
    lines.append(text)
    q = run.outcome.quality
    errs = [r for r in judged.layers if r.rel_err is not None]
    worst = max(errs, key=lambda r: r.rel_err or 0.0) if errs else None
    qt = f"output cosine {q.cosine:.4f}, rel err {q.rel_err:.4g} vs dense" if q is not None else "no quality measurement"
    if q is not None and q.evidence is not None:
        qt = real_quality_text(q)
    if worst is not None:
        qt += f"; worst layer {worst.name} rel err {worst.rel_err:.3g} vs fp64 ({worst.precision or worst.dtype})"
    lines.append(f"- quality guardrail drift: {qt}")
    return lines


def _latency_row(fig: RunFigures) -> str:
    p = fig.latency
    clock = measured_clock(fig)
    if p is None:
        return f"| {fig.role} | `{md_cell(fig.run)}` | - | - | - | - | - | {clock} |"
    speed = "-" if fig.speedup is None else f"{fig.speedup:.3f}x"  # the one speedup the gate and the memo state
    budget = "-" if fig.budget_ms is None else f"{fig.budget_ms:g}"
    return f"| {fig.role} | `{md_cell(fig.run)}` | {p.p50:.3f} | {p.p95:.3f} | {p.p99:.3f} | {speed} | {budget} | {clock} |"


def _target_row(label: str, run: RunRecord) -> str | None:
    fwd = run.target.forward if run.target is not None else None
    if run.target is None or fwd is None or fwd.candidate is None or fwd.dense is None:
        return None
    speed = f"{fwd.speedup:.3f}x vs its dense" if fwd.speedup is not None else "-"
    clock = f"target: {run.target.backend}, {run.target.launch.replace('_', ' ')}, projected ({fwd.basis})"
    return f"| {label} (target) | `{md_cell(run.name)}` | {fwd.candidate.total_ms:.3f} | - | - | {speed} | - | {clock} |"


def render_report(bundle: LoadedBundle) -> str:
    """The sparsity deployment report for ``bundle`` as Markdown, from its review document's report sections."""
    base, cand, fixed = bundle.baseline, bundle.candidate, bundle.fixed
    doc = report(bundle)
    lines = ["# Sparsity deployment report", ""]
    lines.append(
        f"Baseline `{base.name}` ({base.source.kind}), candidate `{cand.name}` ({cand.source.kind})"
        + (f", fixed `{fixed.name}` ({fixed.source.kind})" if fixed is not None else "")
        + f"; bundle `{bundle.root.name}`, {bundle.manifest.created_at}."
    )
    lines += ["", *(f"- {headline(f)}" for f in review(bundle).headline)]
    lines += ["", "## Latency (whole forward)", ""]
    lines.append("| run | name | p50 ms | p95 ms | p99 ms | speedup vs baseline (p50) | budget ms | clock |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    lines += [_latency_row(fig) for fig in doc.latency]
    for label, run in (("baseline", base), ("candidate", cand), ("fixed", fixed)):
        row = _target_row(label, run) if run is not None else None
        if row is not None:
            lines.append(row)
    lines += energy_section(bundle)
    lines += ["", "## Correctness, quality and performance matrix (default gate vs the baseline)", ""]
    lines += [f"Latencies in this matrix: {bundle_clock(doc.latency)}.", ""]
    runs = [("candidate", cand)] + ([("fixed", fixed)] if fixed is not None else [])
    results = [(judged.role, judged.gate) for judged in doc.runs if judged.gate is not None]
    checks = [c.id for c in results[0][1].checks] if results else []
    lines.append("| run | " + " | ".join(checks) + " |")
    lines.append("| --- |" + " --- |" * len(checks))
    for label, result in results:
        cells = [f"{c.status}: {md_cell(measured_words(c))}" for c in result.checks]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, run in runs:
        judged, fig = sections(bundle, label), figures(bundle, label)
        lines += ["", f"## Supported-layer matrix ({label}, backend `{run.lower.backend}`)", ""]
        lines += layer_matrix(run, judged, fig)
        lines += ["", f"## Pruning schedule ({label}, as recorded)", ""]
        lines += pruning_schedule(run)
        lines += ["", f"## Dense-fallback impact ({label})", ""]
        lines += fallback_impact(judged.fallback)
        lines += ["", f"## Sparsity that costs time on the target ({label})", ""]
        lines += costs_time(run, fig)
        lines += ["", f"## Metrics collected ({label})", ""]
        lines += collected_metrics(run, judged, fig)
        chart = reality_check(judged.reality, role=label)
        lines += ["", f"## Sparse reality check ({label})", ""]
        if chart is None:
            lines.append("No layer of this run declares an N:M pattern: nothing to check.")
        else:
            lines += ["```", "SPARSE REALITY CHECK", "", *chart, "```"]
    lines.append("")
    return "\n".join(label_latencies(lines, bundle_clock(doc.latency)))
