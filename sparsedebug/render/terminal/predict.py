"""Render target projections: per layer dense and sparse time on the target clock, totals, break-even tokens.

Every latency these tables show is on the target clock (projected onto the GPU of
the backend profile, never timed on this machine); titles and captions say so.
"""

from __future__ import annotations

import re

from rich.table import Table
from rich.text import Text

from sparsedebug.records.target import BreakEven, ForwardProjection, LayerProjection, PathTime, PredictReport, Provenance
from sparsedebug.render.clocks import target_clock_label
from sparsedebug.render.terminal.fit import optional, under
from sparsedebug.render.words.notes import say, say_all
from sparsedebug.render.words.target import break_even_note, missing_forward_words
from sparsedebug.render.words.targets import method_words

_GEMM_ROW = re.compile(r"gemm\[(\d+)\]")
_FILE = re.compile(r"([\w.-]+\.(?:json\.gz|json|csv|yaml))")


def short_sources(*provenances: Provenance | None) -> str:
    """The measured inputs of some figures, compressed: ``gemm[10,11] + trace_sparse_mlp_T2048.json.gz``."""
    rows: list[int] = []
    files: list[str] = []
    for prov in provenances:
        if prov is None:
            continue
        for source in prov.sources:
            rows += [int(m) for m in _GEMM_ROW.findall(source)]
            files += [f for f in _FILE.findall(source) if f != "results.json"]
    parts = []
    if rows:
        parts.append("gemm[" + ",".join(str(r) for r in sorted(set(rows))) + "]")
    parts += list(dict.fromkeys(files))
    return " + ".join(parts) or "-"


def _ms(path: PathTime | None) -> str:
    return "-" if path is None else f"{path.per_call_ms:.4f}"


def _host_gpu(path: PathTime | None) -> str:
    return "-" if path is None else f"{path.host_ms:.3f} / {path.gpu_ms:.4f}"


def _speedup(layer: LayerProjection) -> str | Text:
    """The speedup with its 90% interval, coloured by the verdict (not by the central value)."""
    if layer.speedup is None:
        return "-"
    colour = {"sparse wins": "green", "sparse loses": "red"}.get(layer.verdict or "", "yellow")
    text = f"{layer.speedup:.2f}x"
    if layer.speedup_low is not None and layer.speedup_high is not None:
        text += f" [{layer.speedup_low:.2f}-{layer.speedup_high:.2f}]"
    return Text(text, style=colour)


_VERDICT = {"sparse wins": "wins", "sparse loses": "loses", "uncertain here": "uncertain"}
"""The verdict column: short words for the record's verdicts."""


def measure_lines(layers: list[LayerProjection]) -> list[str]:
    """One line per uncertain layer: what to measure on the target to settle it."""
    return [f"uncertain here: {layer.name}: {say(layer.measure)}" for layer in layers if layer.verdict == "uncertain here" and layer.measure]


def _basis(basis: str) -> Text:
    colour = {"measured": "green", "interpolated": "cyan", "extrapolated": "yellow", "estimate": "magenta"}.get(basis, "red")
    return Text(basis, style=colour)


def layers_table(layers: list[LayerProjection], title: str, *, all_layers: bool = True) -> Table:
    """Per layer: shape, path, dense and sparse per-call ms, sparse host / GPU ms, speedup, basis, sources."""
    table = Table(title=title)
    table.add_column("layer", overflow="fold", min_width=15)
    table.add_column("shape", no_wrap=True, min_width=11)
    table.add_column("path")
    table.add_column("dense ms", justify="right")
    table.add_column("sparse ms", justify="right")
    table.add_column("sparse host / GPU ms", justify="right")
    table.add_column("speedup [90%]", justify="right", min_width=17)
    table.add_column("verdict")
    table.add_column("basis")
    table.add_column("from", overflow="fold", max_width=24)
    for layer in layers:
        if not all_layers and layer.op != "linear":
            continue
        shape = "x".join(str(d) for d in layer.shape) if layer.shape else layer.op
        sources = short_sources(*(p.gpu for p in (layer.dense, layer.sparse) if p), *(p.host for p in (layer.dense, layer.sparse) if p))
        if layer.notes and layer.sparse is None and layer.op == "linear":
            why = say_all(layer.notes)
            sources = f"{sources}; {why}" if sources != "-" else why
        table.add_row(
            layer.name, shape, layer.path, _ms(layer.dense), _ms(layer.sparse), _host_gpu(layer.sparse),
            _speedup(layer), _VERDICT.get(layer.verdict or "", "-"), _basis(layer.basis), sources,
        )
    table.caption = (
        "per call: max(host, GPU) eager, GPU under a CUDA graph; speedup = dense / sparse with its 90% interval "
        "(fit residuals and distance from measured points); a win or loss only where the interval excludes 1.0"
    )
    return under(optional(table, "sparse host / GPU ms", "basis", "path", "sparse ms", "dense ms"), "from")


def forward_line(forward: ForwardProjection) -> str:
    """One line: dense and candidate whole forward on the target clock, and the speedup."""
    if forward.dense is None or forward.candidate is None:
        return f"whole forward (target clock, projected): n/a: {missing_forward_words(forward)}"
    d, c = forward.dense, forward.candidate
    line = (
        f"whole forward (target clock, projected, {forward.launch.replace('_', ' ')}): dense {d.total_ms:.3f} ms "
        f"(GPU {d.gpu_ms:.3f}, host {d.host_ms:.3f}), candidate {c.total_ms:.3f} ms (GPU {c.gpu_ms:.3f}, host {c.host_ms:.3f})"
    )
    if forward.speedup is not None:
        line += f", speedup {forward.speedup:.2f}x"
        if forward.speedup_low is not None and forward.speedup_high is not None:
            line += f" [{forward.speedup_low:.2f}-{forward.speedup_high:.2f}, 90%, non-linear ops at their estimate]"
        if forward.verdict is not None:
            line += f": {forward.verdict}"
    line += f"; basis {forward.basis}"
    if forward.extrapolated_layers:
        line += f" ({len(forward.extrapolated_layers)} layer(s) extrapolated)"
    return line


def break_even_table(rows: list[BreakEven], title: str) -> Table:
    """Per shape: the token count from which 2:4 pays off on the target."""
    table = Table(title=title)
    table.add_column("shape", no_wrap=True)
    table.add_column("dtype")
    table.add_column("2:4 pays off from", justify="right")
    table.add_column("basis")
    table.add_column("note", overflow="fold", min_width=40)
    for row in rows:
        if row.tokens_from is not None:
            tokens = f"{row.tokens_from} tokens"
        elif row.uncertain_tokens is not None:
            tokens = "uncertain here"
        else:
            tokens = f"not up to {row.searched_up_to}"
        note = break_even_note(row) + (f"; {say(row.measure)}" if row.measure else "")
        table.add_row("x".join(str(d) for d in row.shape), row.dtype, tokens, _basis(row.basis), note)
    return under(table, "note")


def predict_tables(report: PredictReport, *, all_layers: bool = False) -> list[Table | str]:
    """Everything ``sparsedebug predict`` prints: one table and total per token count, then break-even."""
    clock = target_clock_label(report.backend, report.device, report.launch)
    out: list[Table | str] = []
    for at in report.results:
        what = f"workload {report.workload}" if report.workload else "shapes"
        out.append(layers_table(at.layers, f"{what} at {at.tokens} tokens: {clock}", all_layers=all_layers))
        out.extend(measure_lines(at.layers))
        out.append(forward_line(at.forward))
    if report.break_even:
        out.append(break_even_table(report.break_even, f"break-even per shape: {clock}"))
    out.append(f"method: {method_words(report.method)}")
    return out
