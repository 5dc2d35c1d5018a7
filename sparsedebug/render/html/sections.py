"""Records to page sections: the figure data, its figure and the tables that carry its numbers.

Each ``*_section`` takes the page's runs labelled by role (baseline, candidate, fixed;
``run`` on a single-run page), each with the figures the review document holds for it
(``records.report``: percentiles, medians, layer rows, the reality check, all computed
once by ``signoff.report``), and hands the same data to the figure and to its tables, so
the page never holds a number only in a picture. A figure the records cannot support
becomes a section that says why. Nothing here computes a statistic.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from sparsedebug.records import strip as strip_sums
from sparsedebug.records.report import LayerRow, RealityFigures, RunFigures
from sparsedebug.records.run import RunRecord, TimelineStrip
from sparsedebug.records.stats import TAIL_MIN_SAMPLES
from sparsedebug.render.clocks import measured_clock
from sparsedebug.render.html import figures as fg
from sparsedebug.render.html.page import Chart, Section, Table
from sparsedebug.render.words.run_figures import equal_latency_sentence


@dataclass(frozen=True)
class PageRun:
    """One run of a page: its role, its record (samples to draw, the timeline strip, quality), and its figures."""

    role: str
    run: RunRecord
    figures: RunFigures
    layers: list[LayerRow] = field(default_factory=list)
    reality: RealityFigures | None = None


Runs = Sequence[PageRun]
"""The page's runs in page order."""

MAX_LAYER_ROWS = 40
"""More layers than this are grouped by name across blocks (``layers.*.mlp.down_proj``)."""


def _ms(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def clock(run: PageRun) -> str:
    """Which clock a run's latencies are on, in the words every renderer uses (``render.clocks``)."""
    return measured_clock(run.figures)


def _axis(label: str, runs: Runs) -> str:
    clocks = list(dict.fromkeys(clock(item) for item in runs))
    return f"{label} (ms; {' / '.join(clocks)})"


# --------------------------------------------------------------------------- latency


def latency_section(runs: Runs) -> Section:
    """ECDF of whole-forward latency per run, p50/p95/p99 marked, budgets drawn; the percentile table."""
    series = []
    rows = []
    for item in runs:
        role, run, p = item.role, item.run, item.figures.latency
        if p is None:
            rows.append([role, run.name, clock(item), "0", "-", "-", "-", "no latency samples", _ms(run.outcome.budget_ms, "g")])
            continue
        ok = p.n >= TAIL_MIN_SAMPLES
        series.append(fg.LatencySeries(role, run.name, tuple(run.outcome.latency_samples_ms), p.p50, p.p95, p.p99, ok))
        tail = "tail estimate" if ok else f"inconclusive: fewer than {TAIL_MIN_SAMPLES} samples"
        rows.append([role, run.name, clock(item), str(p.n), f"{p.p50:.3f}", f"{p.p95:.3f}", f"{p.p99:.3f}", tail, _ms(run.outcome.budget_ms, "g")])
    table = Table(
        "Whole-forward latency per run", ["run", "name", "clock", "n", "p50 ms", "p95 ms", "p99 ms", "p99", "budget ms"], rows,
        numeric=[False, False, False, True, True, True, True, False, True],
    )
    title = "Latency distributions"
    if not series:
        return Section("latency", title, None, [table], missing="no run carries whole-forward latency samples")
    budgets = sorted({item.run.outcome.budget_ms for item in runs if item.run.outcome.budget_ms is not None})
    svg = fg.latency_ecdf(series, budgets, _axis("whole-forward latency", runs), TAIL_MIN_SAMPLES)
    caption = (
        "Each step curve is one run's share of forwards at or below a latency; markers at p50 (circle), p95 (square) and "
        f"p99 (triangle, hollow when fewer than {TAIL_MIN_SAMPLES} samples make it inconclusive)"
        + ("; the dotted line is the latency budget." if budgets else "; no latency budget is recorded.")
    )
    return Section("latency", title, Chart(svg, caption), [table])


# --------------------------------------------------------------------------- per-layer time


def path_kind(row: LayerRow) -> str:
    """The figure's path class of a layer: sparse, dense as intended, dense fallback, or unknown."""
    if row.path is None:
        return "no lowering recorded"
    if row.path == "sparse":
        return "sparse"
    return "dense fallback" if row.fell_back else "dense (intended)"


def _group_key(name: str) -> str:
    return re.sub(r"(?<![^.])\d+(?![^.])", "*", name)


def _segments(rows: list[LayerRow]) -> tuple[tuple[str, float], ...] | None:
    if not rows:
        return None
    totals = {kind: 0.0 for kind in fg.PATH_KINDS}
    for r in rows:
        if r.time_ms is not None:
            totals[path_kind(r)] += r.time_ms
            totals[fg.CONVERSION] += r.conversion_per_call_ms
    return tuple((k, v) for k, v in totals.items() if v > 0)


def _path_text(rows: list[LayerRow]) -> str:
    if not rows:
        return "-"
    if len(rows) == 1:
        r = rows[0]
        kind = path_kind(r)
        return f"{kind}: {r.reason}" if kind == "dense fallback" and r.reason else kind
    counts: dict[str, int] = {}
    for r in rows:
        counts[path_kind(r)] = counts.get(path_kind(r), 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in counts.items())


def _layer_groups(runs: Sequence[PageRun], lead: int) -> tuple[list[tuple[str, list[list[LayerRow]]]], bool]:
    """Rows per layer (or per same-named group across blocks), one list of rows per run, in the order of ``runs[lead]``."""
    per_run = [item.layers for item in runs]
    order = [per_run[lead], *(rows for index, rows in enumerate(per_run) if index != lead)]
    names = list(dict.fromkeys(r.name for rows in order for r in rows))
    grouped = len(names) > MAX_LAYER_ROWS
    key = _group_key if grouped else (lambda name: name)
    groups: dict[str, list[list[LayerRow]]] = {}
    for name in names:
        groups.setdefault(key(name), [[] for _ in runs])
    for index, rows in enumerate(per_run):
        for r in rows:
            groups[key(r.name)][index].append(r)
    items = list(groups.items())
    if len(items) > MAX_LAYER_ROWS:
        def size(item: tuple[str, list[list[LayerRow]]]) -> float:
            return max(sum(r.call_ms or 0.0 for r in side) for side in item[1])
        keep = {k for k, _ in sorted(items, key=lambda i: (-size(i), i[0]))[: MAX_LAYER_ROWS - 1]}
        rest = [i for i in items if i[0] not in keep]
        items = [i for i in items if i[0] in keep]
        items.append(("all other layers", [[r for i in rest for r in i[1][index]] for index in range(len(runs))]))
        grouped = True
    return items, grouped


def _total(rows: list[LayerRow]) -> float | None:
    return sum(r.call_ms for r in rows if r.call_ms is not None) if any(r.call_ms is not None for r in rows) else None


def layer_section(base: PageRun | None, cand: PageRun, fixed: PageRun | None = None) -> Section:
    """Per layer (or per same-named group across blocks): kernel time by path on every side, fallbacks highlighted,
    per-call weight conversion apart from the sparse kernel."""
    sides = [side for side in (base, cand, fixed) if side is not None]
    items, grouped = _layer_groups(sides, lead=1 if base else 0)
    bars = []
    rows = []
    converts = False
    for label, per_side in items:
        n = max(len(side) for side in per_side)
        shown = f"{label} (x{n})" if grouped and n > 1 else label
        fell = any(r.fell_back for side in per_side for r in side)
        converts = converts or any(r.conversion_per_call_ms > 0 for side in per_side for r in side)
        segments = dict(zip([item.role for item in sides], [_segments(side) for side in per_side], strict=True))
        b_rows = per_side[0] if base else []
        c_rows = per_side[1 if base else 0]
        f_rows = per_side[-1] if fixed else []
        bars.append(fg.LayerBar(
            shown, segments.get(base.role) if base else None, segments[cand.role], fell,
            fixed=segments.get(fixed.role) if fixed else None,
        ))
        bt, ct, ft = _total(b_rows), _total(c_rows), _total(f_rows)
        ratio = f"{ct / bt:.3f}x" if bt and ct is not None else "-"
        row = [shown] + ([_path_text(b_rows), _ms(bt, ".4f")] if base else []) + [_path_text(c_rows), _ms(ct, ".4f")] + ([ratio] if base else [])
        if fixed:
            row += [_path_text(f_rows), _ms(ft, ".4f")] + ([f"{ft / bt:.3f}x" if bt and ft is not None else "-"] if base else [])
        rows.append(row)
    header = ["layer"] + ([f"{base.role} path", f"{base.role} ms"] if base else []) + [f"{cand.role} path", f"{cand.role} ms"]
    header += [f"{cand.role} / {base.role}"] if base else []
    numeric = [False] + ([False, True] if base else []) + [False, True] + ([True] if base else [])
    if fixed:
        header += [f"{fixed.role} path", f"{fixed.role} ms"] + ([f"{fixed.role} / {base.role}"] if base else [])
        numeric += [False, True] + ([True] if base else [])
    note = "Median time per call, per-call weight conversion included; " + (
        "same-named layers of every block summed per row." if grouped else "one row per layer."
    )
    table = Table("Kernel time per layer and path", header, rows, numeric=numeric, note=note)
    title = "Per-layer kernel time by path"
    if not any(bar.base or bar.cand or bar.fixed for bar in bars):
        return Section("layers", title, None, [table], missing="no per-layer kernel time in these runs")
    base_title = f"{base.role}: {base.run.name}" if base else None
    fixed_title = f"{fixed.role}: {fixed.run.name}" if fixed else None
    svg = fg.layer_time(bars, base_title, f"{cand.role}: {cand.run.name}", grouped, fixed_title)
    caption = "Bars are median time per call, coloured by the path each layer took; dense fallbacks are hatched and their names set in bold."
    if converts:
        caption += (
            " A layer that re-converts its weights on every call shows that conversion (timed apart, dotted) after its "
            "sparse kernel: the green part is the kernel alone."
        )
    return Section("layers", title, Chart(svg, caption), [table])


# --------------------------------------------------------------------------- reality check


def reality_section(runs: Runs) -> Section:
    """The sparse reality check of each sparse run against the baseline, as bars and as a table."""
    bars = []
    for item in runs:
        fig = item.reality
        if fig is not None:
            bars.append(fg.RealityBars(item.role, item.run.name, fig.nominal, fig.ceiling, fig.real, fig.fallback_time_share, fig.dense_time_share))
    title = "Sparse reality check"
    if not bars:
        return Section("reality", title, None, [], missing="no layer of these runs declares an N:M pattern")
    metric_rows: list[tuple[str, str, list[str]]] = [
        ("nominal speedup", "the pattern's M/N", [f"{b.nominal:.3f}x" for b in bars]),
        ("model ceiling", "Amdahl over kernel time, every meant-sparse layer at its M/N", [_ms(b.ceiling) + ("x" if b.ceiling else "") for b in bars]),
        ("real speedup", "baseline p50 / run p50", [_ms(b.real) + ("x" if b.real else "") for b in bars]),
        ("fallback overhead", "share of kernel time in dense fallbacks", ["-" if b.fallback_share is None else f"{b.fallback_share:.1%}" for b in bars]),
        ("dense time share", "share of kernel time on dense paths", ["-" if b.dense_share is None else f"{b.dense_share:.1%}" for b in bars]),
    ]
    header = ["figure", *[f"{b.role}: {b.name}" for b in bars], "definition"]
    rows = [[name, *values, how] for name, how, values in metric_rows]
    table = Table("Sparse reality check", header, rows, numeric=[False, *[True] * len(bars), False])
    caption = "Left: the speedup the pattern promises, the most the model could get, and what the run got; right: the kernel time still spent dense."
    return Section("reality", title, Chart(fg.reality_check(bars), caption), [table])


# --------------------------------------------------------------------------- forward time


def forward_section(runs: Runs) -> Section:
    """Median span and busy time per forward for each run: how much of a forward is not compute."""
    bars = []
    rows = []
    for item in runs:
        role, run, span, busy = item.role, item.run, item.figures.span_ms, item.figures.busy_ms
        if span is None or busy is None:
            continue
        bar = fg.ForwardBar(role, run.name, span, busy)
        bars.append(bar)
        rest = max(0.0, bar.span_ms - bar.busy_ms)
        rows.append([role, run.name, clock(item), str(len(run.schedule.span_samples_ms)), f"{bar.span_ms:.3f}", f"{bar.busy_ms:.3f}", f"{rest:.3f}",
                     f"{rest / bar.span_ms:.1%}" if bar.span_ms > 0 else "-"])
    title = "Forward time: busy against host overhead"
    if not bars:
        return Section("forward", title, None, [], missing="no schedule samples (span and busy time) in these runs")
    table = Table(
        "Median forward: span, busy and the rest", ["run", "name", "clock", "iterations", "span ms", "busy ms", "not busy ms", "not busy"],
        rows, numeric=[False, False, False, True, True, True, True, True],
        note="Span: first op start to last op end of a forward (a replay's forward wall time); busy: summed kernel or layer time. Medians over iterations.",
    )
    caption = "The median forward of each run: time its kernels or layers were busy, then the rest (host overhead such as launches and weight conversion, or device idle)."
    return Section("forward", title, Chart(fg.forward_time(bars, _axis("median forward time", runs)), caption), [table])


# --------------------------------------------------------------------------- timeline strip


def _gap_rows(role: str, strip: TimelineStrip, limit: int) -> list[list[str]]:
    starts = [e.start_ms for e in strip.events]
    rows = []
    for gap in sorted(strip.gaps, key=lambda g: (-g.dur_ms, g.start_ms))[:limit]:
        nxt = bisect.bisect_left(starts, gap.start_ms + gap.dur_ms - 1e-9)
        layer = strip.events[nxt].layer if nxt < len(strip.events) else None
        rows.append([role, f"{gap.start_ms:.3f}", f"{gap.dur_ms:.3f}", gap.cause.replace("_", " "), layer or "-"])
    return rows


def timeline_section(runs: Runs, largest_gaps: int = 8) -> Section:
    """One iteration's GPU timeline per traced run; tables of its idle split, kernel time by class and largest gaps."""
    strips = [(item.role, item.run.name, item.run.schedule.timeline) for item in runs if item.run.schedule.timeline is not None]
    title = "GPU timeline of one iteration"
    if not strips:
        return Section(
            "timeline", title, None, [],
            missing="no per-kernel timeline in these runs (a replay times whole layers; import a PyTorch profiler trace for one)",
        )
    summary, classes, gaps = [], [], []
    for role, name, strip in strips:
        summary.append([
            role, name, str(strip.iteration), str(strip.events_total), f"{strip.span_ms:.3f}", f"{strip_sums.busy_ms(strip):.3f}",
            *(f"{strip_sums.idle(strip, c)[0]:.3f} ({strip_sums.idle(strip, c)[1]})" for c in ("host_wait", "kernel_wait", "other")),
        ])
        by_class = strip_sums.by_class(strip)
        for cls in fg.CLASS_COLOURS:
            if cls in by_class:
                classes.append([role, cls, f"{by_class[cls][0]:.3f}", str(by_class[cls][1])])
        gaps += _gap_rows(role, strip, largest_gaps)
    note = None
    cut = [f"{role} ({s.events_total - len(s.events)} ops after {s.cut_at_ms:.3f} ms)" for role, _, s in strips if s.cut_at_ms is not None]
    if cut:
        note = "Strips cut at the op limit: " + ", ".join(cut) + "."
    tables = [
        Table("The iteration's span and idle split", ["run", "name", "iteration", "GPU ops", "span ms", "busy ms",
              "host wait ms (gaps)", "kernel wait ms (gaps)", "other idle ms (gaps)"], summary,
              numeric=[False, False, True, True, True, True, True, True, True], note=note),
        Table("GPU time by kernel class in the iteration", ["run", "class", "ms", "ops"], classes, numeric=[False, False, True, True]),
        Table(f"Largest idle gaps (up to {largest_gaps} per run)", ["run", "starts at ms", "lasts ms", "cause", "next op's layer"], gaps,
              numeric=[False, True, True, False, False]),
    ]
    caption = (
        "Each panel is the iteration with the median span: GPU ops per stream coloured by kernel class, and below them the idle "
        "gaps, black where the GPU waited for the host to launch the next op, grey where the launch was already queued."
    )
    return Section("timeline", title, Chart(fg.timeline(strips), caption), tables)


# --------------------------------------------------------------------------- speed against quality


SAME_POINT = 0.005
"""A run timed beside its narrowed model within this relative latency of its own p50 is drawn as one point."""

NARROWED_MARKERS = ("P", "X", "*")


def _quality_points(runs: Runs) -> tuple[list[fg.QualityPoint], list[list[str]]]:
    points: list[fg.QualityPoint] = []
    rows: list[list[str]] = []
    markers = {"baseline": "D", "candidate": "o", "fixed": "s", "run": "o"}
    for item in runs:
        role, run, lat = item.role, item.run, item.figures.latency
        q = run.outcome.quality
        if q is not None and lat is not None:
            label = "dense baseline" if role == "baseline" else role
            points.append(fg.QualityPoint(label, role, lat.p50, q.cosine, markers.get(role, "o")))
            rows.append([label, run.name, f"{lat.p50:.3f}", f"p50 of the run's samples ({clock(item)})", f"{q.cosine:.4f}", f"{q.rel_err:.4g}"])
    own = {p.role: p for p in points}
    for item in runs:
        role, run = item.role, item.run
        eq = run.outcome.equal_latency
        if eq is None or role == "baseline":
            continue
        narrowed = (
            f"dense, {eq.narrowed_ffn_fraction:.0%} of FFN removed (vs {role})" if eq.narrowed_ffn_fraction > 0
            else f"dense, not narrowed (timed beside the {role})"
        )
        beside: str | None = None
        if eq.candidate_latency_ms is not None:
            rows.append([f"{role}, timed beside it", run.name, f"{eq.candidate_latency_ms:.3f}", f"equal-latency search ({clock(item)})",
                         f"{eq.candidate.cosine:.4f}", f"{eq.candidate.rel_err:.4g}"])
            main = own.get(role)
            if main is not None and abs(main.latency_ms - eq.candidate_latency_ms) <= SAME_POINT * main.latency_ms and main.cosine == eq.candidate.cosine:
                beside = main.label
            else:
                beside = f"{role}, timed beside it"
                points.append(fg.QualityPoint(beside, role, eq.candidate_latency_ms, eq.candidate.cosine, markers.get(role, "o"), hollow=True))
        marker = NARROWED_MARKERS[sum(p.role == "narrowed" for p in points) % len(NARROWED_MARKERS)]
        points.append(fg.QualityPoint(narrowed, "narrowed", eq.narrowed_latency_ms, eq.narrowed.cosine, marker, pair=beside))
        rows.append([narrowed, run.name, f"{eq.narrowed_latency_ms:.3f}", f"equal-latency search ({clock(item)})",
                     f"{eq.narrowed.cosine:.4f}", f"{eq.narrowed.rel_err:.4g}"])
    return points, rows


def quality_section(runs: Runs) -> Section:
    """Latency against output quality: dense, candidate, fixed, and the dense model narrowed to equal latency."""
    points, rows = _quality_points(runs)
    title = "Speed against quality"
    if not points:
        return Section("quality", title, None, [], missing="no run carries a quality measurement against the dense model")
    sentences = [f"{item.role}: {equal_latency_sentence(item.run.outcome.equal_latency, run=item.role)}." for item in runs
                 if item.run.outcome.equal_latency is not None and item.role != "baseline"]
    table = Table(
        "Latency and quality of each model", ["point", "record", "latency ms", "measured as", "output cosine vs dense", "rel err vs dense"],
        rows, numeric=[False, False, True, False, True, True], note=" ".join(sentences) or None,
    )
    narrowed = [item.run.outcome.equal_latency.narrowed_ffn_fraction > 0 for item in runs
                if item.run.outcome.equal_latency is not None and item.role != "baseline"]
    if narrowed and not any(narrowed):
        dense = ("the dense model, not narrowed (it was already at least as fast), as timed beside the run in the same interleaved "
                 "measurement")
    elif all(narrowed):
        dense = "the dense model narrowed until it is as fast"
    else:
        dense = "the dense model narrowed until it is as fast, or not narrowed where it was already at least as fast"
    caption = (
        "Filled markers: each run at the p50 of its own samples; plus, cross or star markers: " + dense + ", joined by a dotted "
        "line to the run timed beside it (hollow when that measurement differs from the run's own p50); a marker drawn on top "
        "of another is a larger ring around it."
    ) if narrowed else "Each run at the p50 of its own samples; no run records an equal-latency comparison with a narrowed dense model."
    return Section("quality", title, Chart(fg.speed_quality(points, _axis("latency p50", runs)), caption), [table])
