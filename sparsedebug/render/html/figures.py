"""The page's figures: pure functions from figure data (built from records in ``sections``) to inline SVG.

Each function draws one figure with the primitives of :mod:`svg` (SVG text, no plotting
library) and writes its alt text from the same data. Colours are Okabe-Ito; every colour is
paired with a second cue (line style, hatch, marker, label) so the figures read in grey print
too. Nothing here decides anything: the data says what to draw. Every figure is ``svg.WIDTH``
units wide and lays its labels out above the bars and its legends in wrapped rows, so it scales
to the page's width without cropping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparsedebug.records import strip as strip_sums
from sparsedebug.records.run import TimelineStrip
from sparsedebug.render.html.svg import (
    BLACK,
    BLUE,
    FONT,
    GREEN,
    GREY,
    INK,
    LABEL_FONT,
    LIGHT_GREY,
    ORANGE,
    PURPLE,
    SKY,
    VERMILLION,
    WIDTH,
    YELLOW,
    Canvas,
    Key,
    Plot,
    Scale,
    axis_title,
    legend,
    padded,
    side_note,
    text_width,
    title,
    wrap,
)

ROLE_STYLE: dict[str, tuple[str, str, str]] = {
    "baseline": (BLUE, "-", ""),
    "candidate": (VERMILLION, "--", "//"),
    "fixed": (GREEN, "-.", "\\\\"),
    "run": (BLUE, "-", ""),
}
"""Role -> (colour, line style, hatch)."""

CONVERSION = "weight conversion (per call)"
PATH_KINDS: tuple[str, ...] = ("sparse", CONVERSION, "dense (intended)", "dense fallback", "no lowering recorded")
PATH_STYLE: dict[str, tuple[str, str]] = {
    "sparse": (GREEN, ""),
    CONVERSION: (YELLOW, ".."),
    "dense (intended)": (SKY, ""),
    "dense fallback": (VERMILLION, "//"),
    "no lowering recorded": (LIGHT_GREY, ""),
}

CLASS_COLOURS: dict[str, str] = {
    "sparse_gemm": GREEN,
    "dense_tc_gemm": BLUE,
    "fp32_gemm": VERMILLION,
    "attention": PURPLE,
    "elementwise": ORANGE,
    "copy": YELLOW,
    "reduction": SKY,
    "other": GREY,
}
GAP_STYLE: dict[str, tuple[str, str, str]] = {
    "host_wait": (BLACK, "", "idle: host wait"),
    "kernel_wait": ("#BBBBBB", "", "idle: kernel wait"),
    "other": ("#FFFFFF", "xx", "idle: no linked launch"),
}


LABEL_CHARS = 44
"""Longest row label drawn; longer names (C++ kernel names) are cut with an ellipsis (the tables hold them whole)."""

MARKER_SCALE = 1.5
"""User units per matplotlib marker point (``ms``): a marker beside ``FONT`` text as it was beside 7.5 pt text."""
PLOT_LEFT = 46.0
"""Room left of a plot for its y tick labels."""
PLOT_RIGHT = 14.0
"""Room right of a plot (the last tick label's half)."""


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "\u2026"


def _style(role: str) -> tuple[str, str, str]:
    return ROLE_STYLE.get(role, (GREY, ":", "xx"))


# --------------------------------------------------------------------------- latency ECDF


@dataclass(frozen=True)
class LatencySeries:
    """One run's whole-forward latency samples and their percentiles."""

    role: str
    name: str
    samples: tuple[float, ...]
    p50: float
    p95: float
    p99: float
    tail_ok: bool


def latency_ecdf(series: Sequence[LatencySeries], budgets: Sequence[float], xlabel: str, min_tail: int) -> str:
    """ECDF per run with p50/p95/p99 marked (a hollow p99 when ``tail_ok`` is false) and each budget drawn."""
    c = Canvas("fig-latency-svg")
    top = axis_title(c, "fraction of forwards at or below", title(c, "Whole-forward latency, empirical CDF", 0))
    lows = [min(s.samples) for s in series]
    highs = [max(s.samples) for s in series]
    log = min(lows) > 0 and max(highs + list(budgets)) / min(lows) > 20
    values = [*lows, *highs, *budgets]
    lo, hi = (min(values) / 1.15, max(values) * 1.15) if log else padded(values)
    height = 250.0
    plot = Plot(c, PLOT_LEFT, top + 6, WIDTH - PLOT_LEFT - PLOT_RIGHT, height,
                Scale(lo, hi, PLOT_LEFT, WIDTH - PLOT_RIGHT, log), Scale(0.0, 1.05, top + 6 + height, top + 6))
    plot.grid()
    for budget in budgets:
        plot.vline(budget)
        side_note(c, plot.x(budget), plot.y(0.04), f"budget {budget:g} ms", right=plot.right)
    for s in series:
        colour, line, _ = _style(s.role)
        xs = sorted(s.samples)
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        plot.step([xs[0], *xs], [0.0, *ys], colour=colour, style=line)
        for q, value, marker in ((0.5, s.p50, "o"), (0.95, s.p95, "s"), (0.99, s.p99, "^")):
            hollow = q == 0.99 and not s.tail_ok
            c.marker(plot.x(value), plot.y(q), marker, colour=colour, face="white" if hollow else None, size=6 * MARKER_SCALE)
    bottom = plot.x_axis(xlabel)
    plot.y_axis()
    keys = [Key(f"{s.role}: {s.name} (n={len(s.samples)})", _style(s.role)[0], line=_style(s.role)[1]) for s in series]
    keys += [Key("p50", GREY, marker="o"), Key("p95", GREY, marker="s"), Key("p99", GREY, marker="^")]
    if budgets:
        keys.append(Key("latency budget", BLACK, line=":"))
    if not all(s.tail_ok for s in series):
        keys.append(Key(f"p99 from < {min_tail} samples: inconclusive", GREY, marker="^", face="white"))
    c.height = legend(c, keys, bottom)

    parts = [f"{s.role} {s.name}: p50 {s.p50:.3f}, p95 {s.p95:.3f}, p99 {s.p99:.3f} ms (n={len(s.samples)}"
             + ("" if s.tail_ok else ", p99 inconclusive") + ")" for s in series]
    desc = "Empirical CDF of whole-forward latency. " + "; ".join(parts) + "."
    if budgets:
        desc += " Latency budget " + ", ".join(f"{b:g} ms" for b in budgets) + " drawn as a dotted vertical line."
    return c.svg("Whole-forward latency distributions", desc)


# --------------------------------------------------------------------------- per-layer time by path


@dataclass(frozen=True)
class LayerBar:
    """One layer (or a group of same-named layers across blocks) on both sides: ms by path kind."""

    label: str
    base: tuple[tuple[str, float], ...] | None
    cand: tuple[tuple[str, float], ...] | None
    fallback: bool
    fixed: tuple[tuple[str, float], ...] | None = None

    def side(self, side: str) -> tuple[tuple[str, float], ...] | None:
        """The segments of one panel: ``base``, ``cand`` or ``fixed``."""
        return {"base": self.base, "cand": self.cand, "fixed": self.fixed}[side]


def _path_fill(c: Canvas, kind: str) -> tuple[str, str]:
    """Fill and edge of one path kind's bar segment (hatched kinds drawn with black lines)."""
    colour, hatch = PATH_STYLE[kind]
    return c.fill(colour, hatch, BLACK), BLACK if kind == "dense fallback" else "white"


ROW_BAR = 12.0
"""Height of one bar (user units) under its row label."""


def layer_time(
    bars: Sequence[LayerBar], base_title: str | None, cand_title: str, grouped: bool, fixed_title: str | None = None
) -> str:
    """Baseline, candidate and fixed run side by side (the candidate alone without the others): per layer, median
    kernel time per call by path, per-call weight conversion apart from the sparse kernel, fallbacks hatched and
    their names highlighted."""
    sides = ([("base", base_title)] if base_title is not None else []) + [("cand", cand_title)]
    sides += [("fixed", fixed_title)] if fixed_title is not None else []

    present = {k for b in bars for segs in (b.base or (), b.cand or (), b.fixed or ()) for k, _ in segs}
    xlabel = "ms per call, median: kernel, then weight conversion" if CONVERSION in present else "kernel ms per call, median"

    c = Canvas("fig-layers-svg")
    top = title(c, "Per-layer kernel time by path", 0)
    kinds = [k for k in PATH_KINDS if k in present]
    top = legend(c, [Key(k, PATH_STYLE[k][0], hatch=PATH_STYLE[k][1], edge=BLACK if k == "dense fallback" else "none") for k in kinds], top)
    gap, left = 12.0, 4.0
    panel_w = (WIDTH - 2 * left - gap * (len(sides) - 1)) / len(sides)
    title_size = FONT if len(sides) > 2 else LABEL_FONT
    heads = [wrap(t or "", panel_w, title_size) for _, t in sides]
    for i, lines in enumerate(heads):
        for j, line in enumerate(lines):
            c.text(left + i * (panel_w + gap), top + title_size + j * (title_size + 3), line, size=title_size)
    rows_top = top + max(len(h) for h in heads) * (title_size + 3) + 6
    row_h = FONT + 3 + ROW_BAR + 7
    rows_h = row_h * len(bars)
    totals = [sum(ms for _, ms in (b.side(side) or ())) for b in bars for side, _ in sides]
    hi = max([*totals, 0.0]) * 1.05 or 1.0
    plots = [Plot(c, left + i * (panel_w + gap), rows_top, panel_w, rows_h,
                  Scale(0.0, hi, left + i * (panel_w + gap), left + i * (panel_w + gap) + panel_w), Scale(0.0, 1.0, rows_top + rows_h, rows_top))
             for i in range(len(sides))]
    for plot in plots:
        plot.grid(y=False)
    for i, bar in enumerate(bars):
        y = rows_top + i * row_h
        c.text(left, y + FONT, _short(bar.label), colour=VERMILLION if bar.fallback else INK, weight="bold" if bar.fallback else "")
        for plot, (side, _) in zip(plots, sides, strict=True):
            start = 0.0
            for kind, ms in bar.side(side) or ():
                fill, edge = _path_fill(c, kind)
                plot.hbar(y + FONT + 3, ROW_BAR, start, ms, fill=fill, edge=edge)
                start += ms
    bottom = max(plot.x_axis() for plot in plots)
    for line in wrap(xlabel + (" (group sum)" if grouped else ""), WIDTH - 2 * left, LABEL_FONT):
        bottom += LABEL_FONT + 2
        c.text(WIDTH / 2, bottom, line, size=LABEL_FONT, anchor="middle")
    c.height = bottom + 8

    fallbacks = [b.label for b in bars if b.fallback]
    where = ", ".join(t for _, t in sides if t is not None) + " (panels left to right)"
    desc = (
        f"Horizontal bars per layer ({len(bars)} rows{', same-named layers of all blocks grouped' if grouped else ''}): "
        f"median kernel time per call, {where}, coloured by path "
        "(sparse kernel, per-call weight conversion dotted, dense as intended, dense fallback hatched). "
        + (f"Fallbacks (highlighted): {', '.join(fallbacks)}." if fallbacks else "No layer falls back.")
    )
    return c.svg("Per-layer kernel time by path", desc)


# --------------------------------------------------------------------------- sparse reality check


@dataclass(frozen=True)
class RealityBars:
    """The reality-check figures of one run (None: not recorded)."""

    role: str
    name: str
    nominal: float
    ceiling: float | None
    real: float | None
    fallback_share: float | None
    dense_share: float | None


def _grouped(c: Canvas, top: float, heading: str, groups: Sequence[str], runs: Sequence[RealityBars],
             values: Sequence[Sequence[float | None]], fmt: str, ylabel: str, ymax: float, one: bool) -> float:
    """One panel of grouped vertical bars with their values printed above; returns the y below it."""
    y = axis_title(c, ylabel, title(c, heading, top, size=LABEL_FONT))
    height = 150.0
    plot = Plot(c, PLOT_LEFT, y + 4, WIDTH - PLOT_LEFT - PLOT_RIGHT, height,
                Scale(-0.5, len(groups) - 0.5, PLOT_LEFT, WIDTH - PLOT_RIGHT), Scale(0.0, ymax, y + 4 + height, y + 4))
    plot.grid(x=False)
    group_w = plot.width / len(groups)
    width = group_w * 0.8 / max(1, len(runs))
    for j, run in enumerate(runs):
        colour, _, hatch = _style(run.role)
        for i, value in enumerate(values[j]):
            x = plot.left + group_w * i + group_w * 0.1 + width * j
            if value is None:
                c.text(x + width / 2, plot.y(0.0) - 3, "n/a", anchor="middle", colour=GREY)
                continue
            plot.vbar(x + width * 0.04, width * 0.92, value, fill=c.fill(colour, hatch, "white"))
            c.text(x + width / 2, plot.y(value) - 3, format(value, fmt), anchor="middle")
    if one:
        plot.hline(1.0)
    plot.y_axis()
    c.line(plot.left, plot.bottom, plot.right, plot.bottom, colour=INK, width=0.8)
    bottom = plot.bottom
    for i, group in enumerate(groups):
        lines = wrap(group, group_w - 6)
        for k, line in enumerate(lines):
            c.text(plot.left + group_w * (i + 0.5), plot.bottom + 4 + FONT + k * (FONT + 2), line, anchor="middle")
        bottom = max(bottom, plot.bottom + 4 + FONT + (len(lines) - 1) * (FONT + 2))
    return bottom + 10


def reality_check(runs: Sequence[RealityBars]) -> str:
    """Speedups (nominal M/N, model ceiling, real) and kernel-time shares (fallback, dense) per run."""
    c = Canvas("fig-reality-svg")
    top = title(c, "Sparse reality check", 0)
    speed = [[r.nominal, r.ceiling, r.real] for r in runs]
    top = _grouped(c, top, "Speedup: promised, possible, measured",
                   ["nominal\n(pattern M/N)", "model ceiling\n(Amdahl, kernel time)", "real\n(baseline p50 / run p50)"], runs, speed,
                   ".2f", "speedup (x)", max(v for row in speed for v in row if v is not None) * 1.18, True)
    shares = [[r.fallback_share, r.dense_share] for r in runs]
    pct = [[None if v is None else 100.0 * v for v in row] for row in shares]
    top = _grouped(c, top, "Kernel time still dense", ["in dense fallbacks", "on dense paths"], runs, pct, ".1f",
                   "share of kernel time (%)", max([100.0 * v for row in shares for v in row if v is not None] + [10.0]) * 1.2, False)
    keys = [Key(f"{r.role}: {r.name}", _style(r.role)[0], hatch=_style(r.role)[2], hatch_colour="white") for r in runs]
    keys.append(Key("1x: as fast as the baseline", BLACK, line=":"))
    c.height = legend(c, keys, top)

    parts = []
    for r in runs:
        real = "n/a" if r.real is None else f"{r.real:.2f}x"
        ceiling = "n/a" if r.ceiling is None else f"{r.ceiling:.2f}x"
        fb = "n/a" if r.fallback_share is None else f"{r.fallback_share:.1%}"
        parts.append(f"{r.role} {r.name}: nominal {r.nominal:.2f}x, ceiling {ceiling}, real {real}, fallback share of kernel time {fb}")
    desc = "Bar chart of the sparse reality check. " + "; ".join(parts) + "."
    return c.svg("Sparse reality check", desc)


# --------------------------------------------------------------------------- forward time


@dataclass(frozen=True)
class ForwardBar:
    """Median span and busy time per forward of one run."""

    role: str
    name: str
    span_ms: float
    busy_ms: float


def forward_time(bars: Sequence[ForwardBar], xlabel: str) -> str:
    """Per run, the median forward split into busy time and the rest (host overhead or device idle)."""
    c = Canvas("fig-forward-svg")
    top = title(c, "Busy and not busy, per forward", 0)
    left = 4.0
    labels = []
    for b in bars:
        rest = max(0.0, b.span_ms - b.busy_ms)
        share = rest / (b.busy_ms + rest) if b.busy_ms + rest > 0 else 0.0
        labels.append(wrap(f"{_short(f'{b.role}: {b.name}')}: {b.busy_ms + rest:.2f} ms, {share:.0%} not busy", WIDTH - 2 * left))
    bar_h = 16.0
    rows_h = sum(len(lines) * (FONT + 3) + bar_h + 8 for lines in labels)
    hi = max(b.span_ms for b in bars)
    plot = Plot(c, left, top, WIDTH - left - PLOT_RIGHT, rows_h, Scale(0.0, (hi if hi > 0 else 1.0) * 1.05, left, WIDTH - PLOT_RIGHT),
                Scale(0.0, 1.0, top + rows_h, top))
    plot.grid(y=False)
    y = top
    idle_fill = c.fill(ORANGE, "//", "white")
    for b, lines in zip(bars, labels, strict=True):
        for line in lines:
            y += FONT + 3
            c.text(left, y - 3, line)
        busy, rest = b.busy_ms, max(0.0, b.span_ms - b.busy_ms)
        plot.hbar(y, bar_h, 0.0, busy, fill=BLUE, edge="white")
        plot.hbar(y, bar_h, busy, rest, fill=idle_fill, edge="white")
        y += bar_h + 8
    bottom = plot.x_axis(xlabel)
    keys = [Key("busy: kernel / layer compute time", BLUE),
            Key("not busy: host overhead, idle (span - busy)", ORANGE, hatch="//", hatch_colour="white")]
    c.height = legend(c, keys, bottom)

    parts = [f"{b.role} {b.name}: span {b.span_ms:.3f} ms, busy {b.busy_ms:.3f} ms" for b in bars]
    desc = "Stacked horizontal bars of the median forward, busy time then the rest. " + "; ".join(parts) + "."
    return c.svg("Forward time: busy against host overhead", desc)


# --------------------------------------------------------------------------- timeline strip


LANE = 16.0
"""Height of one stream's lane (and the idle lane) in the timeline."""


def _strip_panel(plot: Plot, strip: TimelineStrip, lane_of: dict[int, float]) -> None:
    """One run's lanes: GPU ops by kernel class per stream, the idle gaps by cause on the lane above them, the cut."""
    c = plot.canvas
    for cls, colour in CLASS_COLOURS.items():
        boxes: dict[int, list[tuple[float, float]]] = {}
        for e in strip.events:
            if e.kernel_class.value == cls:
                boxes.setdefault(e.stream, []).append((e.start_ms, e.dur_ms))
        for stream, spans in sorted(boxes.items()):
            plot.spans(spans, lane_of[stream], LANE - 4, fill=colour)
    for cause, (colour, hatch, _) in GAP_STYLE.items():
        spans = [(g.start_ms, g.dur_ms) for g in strip.gaps if g.cause == cause]
        plot.spans(spans, plot.top + 2, LANE - 4, fill=c.fill(colour, hatch, GREY), edge=GREY if hatch else "none")
    if strip.cut_at_ms is not None:
        plot.vline(strip.cut_at_ms, colour=VERMILLION, style="--", width=1.0)
        side_note(c, plot.x(strip.cut_at_ms), plot.bottom - 3, f"cut: {strip.events_total - len(strip.events)} more ops",
              right=plot.right, colour=VERMILLION)


def timeline(strips: Sequence[tuple[str, str, TimelineStrip]]) -> str:
    """One panel per run: one iteration's GPU ops by kernel class per stream, and the idle gaps by cause."""
    c = Canvas("fig-timeline-svg")
    top = title(c, "GPU timeline of one iteration (the median span)", 0)
    stream_sets = [sorted({e.stream for e in s.events}) for _, _, s in strips]
    lane_labels = ["GPU idle", *[f"stream {s}" for streams in stream_sets for s in streams]]
    left = 4.0 + max(text_width(t) for t in lane_labels) + 8
    span = max([s.span_ms for _, _, s in strips] + [1e-3]) * 1.01
    x = Scale(0.0, span, left, WIDTH - PLOT_RIGHT)
    plots: list[Plot] = []
    for (role, name, strip), streams in zip(strips, stream_sets, strict=True):
        for line in wrap(f"{role}: {name}, iteration {strip.iteration}", WIDTH - 8, LABEL_FONT):
            top += LABEL_FONT + 3
            c.text(4, top, line, size=LABEL_FONT)
        top += 4
        height = LANE * (len(streams) + 1) + 2
        if strip.cut_at_ms is not None:
            height += FONT + 2
        plot = Plot(c, left, top, WIDTH - PLOT_RIGHT - left, height, x, Scale(0.0, 1.0, top + height, top))
        plot.grid(y=False)
        lane_of = {s: top + 2 + LANE * (i + 1) for i, s in enumerate(streams)}
        for label, y in [("GPU idle", top + 2), *[(f"stream {s}", lane_of[s]) for s in streams]]:
            c.text(left - 6, y + LANE / 2 + FONT * 0.3, label, anchor="end")
        _strip_panel(plot, strip, lane_of)
        c.line(plot.left, plot.bottom, plot.right, plot.bottom, colour=INK, width=0.8)
        plots.append(plot)
        top = plot.bottom + 8
    bottom = plots[-1].x_axis("time from the iteration's first GPU op (ms)")
    classes = {e.kernel_class.value for _, _, s in strips for e in s.events}
    causes = {g.cause for _, _, s in strips for g in s.gaps}
    keys = [Key(k, col) for k, col in CLASS_COLOURS.items() if k in classes]
    keys += [Key(GAP_STYLE[g][2], GAP_STYLE[g][0], hatch=GAP_STYLE[g][1], edge=GREY, hatch_colour=GREY) for g in GAP_STYLE if g in causes]
    c.height = legend(c, keys, bottom)

    parts = []
    for role, name, strip in strips:
        (host, _), (kern, _) = strip_sums.idle(strip, "host_wait"), strip_sums.idle(strip, "kernel_wait")
        parts.append(f"{role} {name}: iteration {strip.iteration}, span {strip.span_ms:.3f} ms, {len(strip.events)} GPU ops, "
                     f"host wait {host:.3f} ms, kernel wait {kern:.3f} ms")
    desc = "Timeline strips: GPU ops coloured by kernel class, idle gaps below split into host wait and kernel wait. " + "; ".join(parts) + "."
    return c.svg("GPU timeline of one iteration", desc)


# --------------------------------------------------------------------------- speed against quality


@dataclass(frozen=True)
class QualityPoint:
    """One model on the speed/quality plane; ``pair`` is the label of the point it was timed beside."""

    label: str
    role: str
    latency_ms: float
    cosine: float
    marker: str
    hollow: bool = False
    pair: str | None = None


def speed_quality(points: Sequence[QualityPoint], xlabel: str) -> str:
    """Latency against output cosine: dense, candidate, fixed and the dense models narrowed to equal latency."""
    c = Canvas("fig-quality-svg")
    top = axis_title(c, "output cosine vs the dense model (1 = same)", title(c, "Speed against quality (left and up is better)", 0))
    xs = [p.latency_ms for p in points]
    ys = [p.cosine for p in points]
    lo, hi = min(xs), max(xs)
    xlo, xhi = (lo - 0.1 * max(lo, hi - lo), hi + 0.08 * hi) if hi > lo else padded(xs)
    pad = max(0.01, (max(ys) - min(ys)) * 0.15)
    height = 230.0
    plot = Plot(c, PLOT_LEFT, top + 6, WIDTH - PLOT_LEFT - PLOT_RIGHT, height, Scale(xlo, xhi, PLOT_LEFT, WIDTH - PLOT_RIGHT),
                Scale(min(ys) - pad, max(ys) + pad, top + 6 + height, top + 6))
    plot.grid()
    where = {p.label: p for p in points}
    for p in points:
        if p.pair is not None and p.pair in where:
            q = where[p.pair]
            plot.polyline([p.latency_ms, q.latency_ms], [p.cosine, q.cosine], colour=GREY, style=":", width=1.0, cls="pair")
    x_span = (max(xs) - min(xs)) or max(abs(max(xs)), 1e-9)
    y_span = (max(ys) - min(ys)) or 0.01
    drawn: list[QualityPoint] = []
    keys = []
    for p in points:
        colour = PURPLE if p.role == "narrowed" else _style(p.role)[0]
        # a point on top of one already drawn becomes a larger ring around it, so both stay visible
        near = sum(abs(p.latency_ms - q.latency_ms) <= 0.03 * x_span and abs(p.cosine - q.cosine) <= 0.03 * y_span for q in drawn)
        face = "none" if near > 0 else ("white" if p.hollow else None)
        c.marker(plot.x(p.latency_ms), plot.y(p.cosine), p.marker, colour=colour, face=face, size=(8 + 5 * near) * MARKER_SCALE, width=1.4)
        keys.append(Key(p.label, colour, marker=p.marker, face=face))
        drawn.append(p)
    bottom = plot.x_axis(xlabel)
    plot.y_axis()
    c.height = legend(c, keys, bottom)

    parts = [f"{p.label}: {p.latency_ms:.3f} ms, cosine {p.cosine:.4f}" for p in points]
    desc = "Scatter of latency p50 against output cosine versus the dense model. " + "; ".join(parts) + "."
    return c.svg("Speed against quality", desc)
