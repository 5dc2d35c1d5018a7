"""The page's figures: pure functions from figure data (built from records in ``sections``) to inline SVG.

Each function draws one figure with matplotlib (through :func:`svg.render_svg`) and
writes its alt text from the same data. Colours are Okabe-Ito; every colour is
paired with a second cue (line style, hatch, marker, label) so the figures read in
grey print too. Nothing here decides anything: the data says what to draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparsedebug.records.run import TimelineStrip
from sparsedebug.render.html.svg import (
    BLACK,
    BLUE,
    GREEN,
    GREY,
    LIGHT_GREY,
    MIN_FONT_PT,
    ORANGE,
    PURPLE,
    SKY,
    VERMILLION,
    YELLOW,
    render_svg,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

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
"""Longest tick label drawn; longer names (C++ kernel names) are cut with an ellipsis (the tables hold them whole)."""


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
    from matplotlib.lines import Line2D

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        lows = [min(s.samples) for s in series]
        highs = [max(s.samples) for s in series]
        for s in series:
            colour, line, _ = _style(s.role)
            xs = sorted(s.samples)
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step([xs[0], *xs], [0.0, *ys], where="post", color=colour, ls=line, lw=1.6, label=f"{s.role}: {s.name} (n={len(xs)})")
            for q, value, marker in ((0.5, s.p50, "o"), (0.95, s.p95, "s"), (0.99, s.p99, "^")):
                hollow = q == 0.99 and not s.tail_ok
                ax.plot([value], [q], marker=marker, ms=6, color=colour, mfc="white" if hollow else colour, mew=1.3, ls="none")
        for budget in budgets:
            ax.axvline(budget, color=BLACK, ls=":", lw=1.3)
            ax.annotate(f"budget {budget:g} ms", (budget, 0.04), xytext=(3, 0), textcoords="offset points", fontsize=MIN_FONT_PT)
        if min(lows) > 0 and max(highs + list(budgets)) / min(lows) > 20:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of forwards at or below")
        ax.set_title("Whole-forward latency, empirical CDF")
        handles, _ = ax.get_legend_handles_labels()
        handles += [
            Line2D([], [], marker="o", color=GREY, ls="none", label="p50"),
            Line2D([], [], marker="s", color=GREY, ls="none", label="p95"),
            Line2D([], [], marker="^", color=GREY, ls="none", label="p99"),
        ]
        if not all(s.tail_ok for s in series):
            handles.append(Line2D([], [], marker="^", color=GREY, mfc="white", ls="none", label=f"p99 from < {min_tail} samples: inconclusive"))
        fig.legend(handles=handles, loc="outside lower center", ncols=2)

    parts = [f"{s.role} {s.name}: p50 {s.p50:.3f}, p95 {s.p95:.3f}, p99 {s.p99:.3f} ms (n={len(s.samples)}"
             + ("" if s.tail_ok else ", p99 inconclusive") + ")" for s in series]
    desc = "Empirical CDF of whole-forward latency. " + "; ".join(parts) + "."
    if budgets:
        desc += " Latency budget " + ", ".join(f"{b:g} ms" for b in budgets) + " drawn as a dotted vertical line."
    return render_svg(draw, key="fig-latency-svg", title="Whole-forward latency distributions", desc=desc, size=(7.6, 4.0))


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


def _layer_panel(ax: Axes, bars: Sequence[LayerBar], side: str) -> None:
    for kind in PATH_KINDS:
        ys, widths, lefts = [], [], []
        for i, bar in enumerate(bars):
            segs = bar.side(side)
            if not segs:
                continue
            left = 0.0
            for k, ms in segs:
                if k == kind:
                    ys.append(i)
                    widths.append(ms)
                    lefts.append(left)
                left += ms
        if ys:
            colour, hatch = PATH_STYLE[kind]
            edge = BLACK if kind == "dense fallback" else "white"
            ax.barh(ys, widths, left=lefts, height=0.72, color=colour, hatch=hatch, edgecolor=edge, lw=0.6, label=kind)


def layer_time(
    bars: Sequence[LayerBar], base_title: str | None, cand_title: str, grouped: bool, fixed_title: str | None = None
) -> str:
    """Baseline, candidate and fixed run side by side (the candidate alone without the others): per layer, median
    kernel time per call by path, per-call weight conversion apart from the sparse kernel, fallbacks hatched and
    their names highlighted."""
    from matplotlib.patches import Patch

    sides = ([("base", base_title)] if base_title is not None else []) + [("cand", cand_title)]
    sides += [("fixed", fixed_title)] if fixed_title is not None else []

    present = {k for b in bars for segs in (b.base or (), b.cand or (), b.fixed or ()) for k, _ in segs}
    xlabel = "ms per call, median: kernel, then weight conversion" if CONVERSION in present else "kernel ms per call, median"

    def draw(fig: Figure) -> None:
        axes = fig.subplots(1, len(sides), sharey=True, sharex=True, squeeze=False)[0]
        for ax, (side, title) in zip(axes, sides, strict=True):
            _layer_panel(ax, bars, side)
            ax.set_title(title.replace(": ", ":\n", 1) if len(sides) > 2 else title, fontsize=MIN_FONT_PT if len(sides) > 2 else 8.5)
            ax.grid(axis="y", visible=False)
        fig.supxlabel(xlabel + (" (group sum)" if grouped else ""), fontsize=8.5)
        axes[0].set_yticks(range(len(bars)), [_short(b.label) for b in bars], fontsize=MIN_FONT_PT)
        for label, bar in zip(axes[0].get_yticklabels(), bars, strict=True):
            if bar.fallback:
                label.set_color(VERMILLION)
                label.set_fontweight("bold")
        axes[0].set_ylim(len(bars) - 0.5, -0.5)
        kinds = [k for k in PATH_KINDS if k in present]
        handles = [Patch(facecolor=PATH_STYLE[k][0], hatch=PATH_STYLE[k][1], edgecolor=BLACK if k == "dense fallback" else "white", label=k) for k in kinds]
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles))

    fallbacks = [b.label for b in bars if b.fallback]
    where = ", ".join(title for _, title in sides if title is not None) + " (panels left to right)"
    desc = (
        f"Horizontal bars per layer ({len(bars)} rows{', same-named layers of all blocks grouped' if grouped else ''}): "
        f"median kernel time per call, {where}, coloured by path "
        "(sparse kernel, per-call weight conversion dotted, dense as intended, dense fallback hatched). "
        + (f"Fallbacks (highlighted): {', '.join(fallbacks)}." if fallbacks else "No layer falls back.")
    )
    height = 1.5 + 0.17 * len(bars)
    return render_svg(draw, key="fig-layers-svg", title="Per-layer kernel time by path", desc=desc, size=(7.6, height))


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


def _grouped(ax: Axes, groups: Sequence[str], runs: Sequence[RealityBars], values: Sequence[Sequence[float | None]], fmt: str) -> None:
    width = 0.8 / max(1, len(runs))
    for j, run in enumerate(runs):
        colour, _, hatch = _style(run.role)
        for i, value in enumerate(values[j]):
            x = i - 0.4 + width * (j + 0.5)
            if value is None:
                ax.annotate("n/a", (x, 0), ha="center", va="bottom", fontsize=MIN_FONT_PT, color=GREY)
                continue
            ax.bar([x], [value], width=width * 0.92, color=colour, hatch=hatch, edgecolor="white", lw=0.5,
                   label=f"{run.role}: {run.name}" if i == 0 else None)
            ax.annotate(format(value, fmt), (x, value), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=MIN_FONT_PT)
    ax.set_xticks(range(len(groups)), groups, fontsize=MIN_FONT_PT)
    ax.grid(axis="x", visible=False)


def reality_check(runs: Sequence[RealityBars]) -> str:
    """Speedups (nominal M/N, model ceiling, real) and kernel-time shares (fallback, dense) per run."""

    def draw(fig: Figure) -> None:
        left, right = fig.subplots(1, 2, width_ratios=(3, 2))
        speed = [[r.nominal, r.ceiling, r.real] for r in runs]
        _grouped(left, ["nominal\n(pattern M/N)", "model ceiling\n(Amdahl, kernel time)", "real\n(baseline p50 / run p50)"], runs, speed, ".2f")
        left.axhline(1.0, color=BLACK, lw=1.0, ls=":", label="1x: as fast as the baseline")
        left.set_ylabel("speedup (x)")
        left.set_title("Speedup: promised, possible, measured")
        left.set_ylim(0, max(v for row in speed for v in row if v is not None) * 1.18)
        shares = [[r.fallback_share, r.dense_share] for r in runs]
        pct = [[None if v is None else 100.0 * v for v in row] for row in shares]
        _grouped(right, ["in dense fallbacks", "on dense paths"], runs, pct, ".1f")
        right.set_ylabel("share of kernel time (%)")
        right.set_ylim(0, max([100.0 * v for row in shares for v in row if v is not None] + [10.0]) * 1.2)
        right.set_title("Kernel time still dense")
        handles, labels = left.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3)

    parts = []
    for r in runs:
        real = "n/a" if r.real is None else f"{r.real:.2f}x"
        ceiling = "n/a" if r.ceiling is None else f"{r.ceiling:.2f}x"
        fb = "n/a" if r.fallback_share is None else f"{r.fallback_share:.1%}"
        parts.append(f"{r.role} {r.name}: nominal {r.nominal:.2f}x, ceiling {ceiling}, real {real}, fallback share of kernel time {fb}")
    desc = "Bar chart of the sparse reality check. " + "; ".join(parts) + "."
    return render_svg(draw, key="fig-reality-svg", title="Sparse reality check", desc=desc, size=(7.6, 3.5))


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

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        ys = range(len(bars))
        busy = [b.busy_ms for b in bars]
        idle = [max(0.0, b.span_ms - b.busy_ms) for b in bars]
        ax.barh(ys, busy, height=0.6, color=BLUE, edgecolor="white", label="busy: kernel / layer compute time")
        ax.barh(ys, idle, left=busy, height=0.6, color=ORANGE, hatch="//", edgecolor="white", label="not busy: host overhead, idle (span - busy)")
        top = max(b.span_ms for b in bars)
        for y, b, i in zip(ys, busy, idle, strict=True):
            share = i / (b + i) if b + i > 0 else 0.0
            ax.annotate(f"{b + i:.2f} ms, {share:.0%} not busy", (b + i, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=MIN_FONT_PT)
        ax.set_yticks(list(ys), [_short(f"{b.role}: {b.name}") for b in bars])
        ax.set_ylim(len(bars) - 0.5, -0.5)
        ax.set_xlim(0, (top if top > 0 else 1.0) * 1.35)
        ax.set_xlabel(xlabel)
        ax.set_title("Busy and not busy, per forward")
        ax.grid(axis="y", visible=False)
        fig.legend(loc="outside lower center", ncols=2)

    parts = [f"{b.role} {b.name}: span {b.span_ms:.3f} ms, busy {b.busy_ms:.3f} ms" for b in bars]
    desc = "Stacked horizontal bars of the median forward, busy time then the rest. " + "; ".join(parts) + "."
    return render_svg(draw, key="fig-forward-svg", title="Forward time: busy against host overhead", desc=desc, size=(7.6, 1.8 + 0.45 * len(bars)))


# --------------------------------------------------------------------------- timeline strip


def _strip_panel(ax: Axes, strip: TimelineStrip) -> list[int]:
    streams = sorted({e.stream for e in strip.events})
    lane = {s: i + 1 for i, s in enumerate(streams)}
    for cls, colour in CLASS_COLOURS.items():
        boxes: dict[int, list[tuple[float, float]]] = {}
        for e in strip.events:
            if e.kernel_class.value == cls:
                boxes.setdefault(lane[e.stream], []).append((e.start_ms, e.dur_ms))
        for y, spans in sorted(boxes.items()):
            ax.broken_barh(spans, (y - 0.38, 0.76), facecolors=colour, edgecolor="none", lw=0)
    for cause, (colour, hatch, _) in GAP_STYLE.items():
        spans = [(g.start_ms, g.dur_ms) for g in strip.gaps if g.cause == cause]
        if spans:
            ax.broken_barh(spans, (-0.38, 0.76), facecolors=colour, hatch=hatch, edgecolor=GREY if hatch else "none", lw=0.3 if hatch else 0)
    if strip.cut_at_ms is not None:
        ax.axvline(strip.cut_at_ms, color=VERMILLION, ls="--", lw=1.0)
        ax.annotate(f"cut: {strip.events_total - len(strip.events)} more ops", (strip.cut_at_ms, len(streams) + 0.3), fontsize=MIN_FONT_PT, color=VERMILLION)
    ax.set_yticks([0, *[lane[s] for s in streams]], ["GPU idle", *[f"stream {s}" for s in streams]])
    ax.set_ylim(-0.6, len(streams) + 0.6)
    ax.grid(axis="y", visible=False)
    return streams


def timeline(strips: Sequence[tuple[str, str, TimelineStrip]]) -> str:
    """One panel per run: one iteration's GPU ops by kernel class per stream, and the idle gaps by cause."""
    from matplotlib.patches import Patch

    def draw(fig: Figure) -> None:
        axes = fig.subplots(len(strips), 1, sharex=True, squeeze=False)[:, 0]
        classes: set[str] = set()
        causes: set[str] = set()
        for ax, (role, name, strip) in zip(axes, strips, strict=True):
            _strip_panel(ax, strip)
            classes |= {e.kernel_class.value for e in strip.events}
            causes |= {g.cause for g in strip.gaps}
            ax.set_title(f"{role}: {name}, iteration {strip.iteration}", fontsize=8.5, loc="left")
        axes[-1].set_xlabel("time from the iteration's first GPU op (ms)")
        axes[-1].set_xlim(0, max([s.span_ms for _, _, s in strips] + [1e-3]) * 1.01)
        handles: list[Any] = [Patch(facecolor=c, label=k) for k, c in CLASS_COLOURS.items() if k in classes]
        handles += [
            Patch(facecolor=GAP_STYLE[c][0], hatch=GAP_STYLE[c][1], edgecolor=GREY, label=GAP_STYLE[c][2]) for c in GAP_STYLE if c in causes
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=4)
        fig.suptitle("GPU timeline of one iteration (the median span)", fontsize=9.5, fontweight="bold")

    parts = []
    for role, name, strip in strips:
        host = sum(g.dur_ms for g in strip.gaps if g.cause == "host_wait")
        kern = sum(g.dur_ms for g in strip.gaps if g.cause == "kernel_wait")
        parts.append(f"{role} {name}: iteration {strip.iteration}, span {strip.span_ms:.3f} ms, {len(strip.events)} GPU ops, "
                     f"host wait {host:.3f} ms, kernel wait {kern:.3f} ms")
    desc = "Timeline strips: GPU ops coloured by kernel class, idle gaps below split into host wait and kernel wait. " + "; ".join(parts) + "."
    height = 1.3 + sum(0.75 + 0.3 * len({e.stream for e in s.events}) for _, _, s in strips)
    return render_svg(draw, key="fig-timeline-svg", title="GPU timeline of one iteration", desc=desc, size=(7.6, height))


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

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        where = {p.label: p for p in points}
        for p in points:
            if p.pair is not None and p.pair in where:
                q = where[p.pair]
                ax.plot([p.latency_ms, q.latency_ms], [p.cosine, q.cosine], color=GREY, ls=":", lw=1.0)
        xs = [p.latency_ms for p in points]
        ys = [p.cosine for p in points]
        x_span = (max(xs) - min(xs)) or max(abs(max(xs)), 1e-9)
        y_span = (max(ys) - min(ys)) or 0.01
        drawn: list[QualityPoint] = []
        for p in points:
            colour = PURPLE if p.role == "narrowed" else _style(p.role)[0]
            # a point on top of one already drawn becomes a larger ring around it, so both stay visible
            near = sum(abs(p.latency_ms - q.latency_ms) <= 0.03 * x_span and abs(p.cosine - q.cosine) <= 0.03 * y_span for q in drawn)
            ring = near > 0
            ax.plot([p.latency_ms], [p.cosine], marker=p.marker, ms=8 + 5 * near, color=colour,
                    mfc="none" if ring else ("white" if p.hollow else colour), mew=1.4, ls="none", label=p.label, zorder=3 - near)
            drawn.append(p)
        lo, hi = min(xs), max(xs)
        if hi > lo:
            ax.set_xlim(lo - 0.1 * max(lo, hi - lo), hi + 0.08 * hi)
        fig.legend(loc="outside right upper")
        pad = max(0.01, (max(ys) - min(ys)) * 0.15)
        ax.set_ylim(min(ys) - pad, max(ys) + pad)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("output cosine vs the dense model (1 = same)")
        ax.set_title("Speed against quality (left and up is better)")

    parts = [f"{p.label}: {p.latency_ms:.3f} ms, cosine {p.cosine:.4f}" for p in points]
    desc = "Scatter of latency p50 against output cosine versus the dense model. " + "; ".join(parts) + "."
    return render_svg(draw, key="fig-quality-svg", title="Speed against quality", desc=desc, size=(7.6, 3.6))
