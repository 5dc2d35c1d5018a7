"""The page's energy figure: energy per token against latency, dense vs sparse, from ``energy.json``.

Measured points (each side's J/token p50 with its interval as an error bar, at its latency p50) and
target estimates are never drawn on one axis: the figure shows the measured sides, or, when no side is
measured, the estimates on the target under a title that says ESTIMATE. The scope (board power, not
wall power) and the clock are in the axis labels and the caption.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.run import KernelPath, RunRecord
from sparsedebug.render.clocks import measured_clock
from sparsedebug.render.document import figures
from sparsedebug.render.html.figures import MARKER_SCALE, PLOT_LEFT, PLOT_RIGHT, ROLE_STYLE
from sparsedebug.render.html.page import Chart, Section, Table
from sparsedebug.render.html.svg import GREY, WIDTH, Canvas, Key, Plot, Scale, axis_title, legend, padded
from sparsedebug.render.html.svg import title as heading
from sparsedebug.render.markdown.energy import STATUS_WORDS, clock_state
from sparsedebug.render.words.signoff import MACHINE_WORDS
from sparsedebug.render.words.sources_power import scope_words


@dataclass(frozen=True)
class EnergyPoint:
    """One side at its latency p50 and its energy per token (with the interval's ends when there is one)."""

    role: str
    label: str
    sparse: bool
    latency_ms: float
    j_per_token: float
    low: float | None
    high: float | None


def _sparse(run: RunRecord) -> bool:
    """Whether any layer of the run took a sparse kernel path."""
    return any(layer.path is KernelPath.SPARSE for layer in run.lower.layers)


def energy_latency(points: list[EnergyPoint], xlabel: str, ylabel: str, title: str) -> str:
    """Energy per token against latency: one marker per side (filled: sparse, hollow: dense), interval as error bar."""
    c = Canvas("fig-energy-svg")
    top = axis_title(c, ylabel, heading(c, title, 0))
    ys = [v for p in points for v in (p.j_per_token, p.low, p.high) if v is not None]
    height = 220.0
    plot = Plot(c, PLOT_LEFT, top + 6, WIDTH - PLOT_LEFT - PLOT_RIGHT, height,
                Scale(*padded([p.latency_ms for p in points], 0.12), PLOT_LEFT, WIDTH - PLOT_RIGHT),
                Scale(*padded(ys, 0.12), top + 6 + height, top + 6))
    plot.grid()
    keys = []
    for p in points:
        colour = ROLE_STYLE.get(p.role, (GREY, "", ""))[0]
        plot.error_bar(p.latency_ms, p.j_per_token, p.low, p.high, colour=colour)
        marker, face = ("o", None) if p.sparse else ("s", "white")
        c.marker(plot.x(p.latency_ms), plot.y(p.j_per_token), marker, colour=colour, face=face, size=8 * MARKER_SCALE, width=1.5)
        keys.append(Key(p.label, colour, marker=marker, face=face))
    bottom = plot.x_axis(xlabel)
    plot.y_axis()
    c.height = legend(c, keys, bottom)

    parts = [f"{p.label}: {p.latency_ms:.3f} ms, {p.j_per_token:.4g} J/token"
             + (f" (interval {p.low:.4g} to {p.high:.4g})" if p.low is not None and p.high is not None else "") for p in points]
    desc = f"{title}. " + "; ".join(parts) + "."
    return c.svg(title, desc)


def energy_section(bundle: LoadedBundle) -> Section:
    """Energy per token against latency per side, with the table of every side's energy figures and status."""
    report = bundle.energy
    title = "Energy per token against latency"
    if report is None:
        return Section("energy", title, None, [], missing="the bundle has no energy record")
    runs = {"baseline": bundle.baseline, "candidate": bundle.candidate}
    if bundle.fixed is not None:
        runs["fixed"] = bundle.fixed
    rows, measured, estimated = [], [], []
    for side in report.sides:
        run = runs.get(side.role)
        if run is None:
            continue
        kind = "sparse" if _sparse(run) else "dense"
        label = f"{side.role} ({kind}): {side.run}"
        jt = side.joules_per_token
        percentiles = figures(bundle, side.role).latency
        lat = percentiles.p50 if percentiles is not None else None
        if side.status == "measured" and jt is not None and lat is not None:
            measured.append(EnergyPoint(side.role, label, kind == "sparse", lat, jt.p50, jt.low, jt.high))
        est = side.estimate
        if est is not None and est.joules_per_token is not None:
            estimated.append(EnergyPoint(side.role, label + " (estimate)", kind == "sparse", est.forward_ms, est.joules_per_token,
                                         est.joules_per_forward_low / est.joules_per_forward * est.joules_per_token,
                                         est.joules_per_forward_high / est.joules_per_forward * est.joules_per_token))
        interval = f"{jt.low:.4g} to {jt.high:.4g}" if jt is not None and jt.low is not None and jt.high is not None else "-"
        rows.append([side.role, side.run, kind, STATUS_WORDS[side.status], f"{jt.p50:.4g}" if jt is not None else "-", interval,
                     f"{est.joules_per_token:.4g} (estimate)" if est is not None and est.joules_per_token is not None else "-",
                     scope_words(side.scope) or "-", clock_state(side), measured_clock(figures(bundle, side.role))])
    table = Table("Energy per token of each run", ["run", "name", "dense/sparse", "status", "J/token p50 (measured)", "interval",
                                                   "J/token on the target", "scope", "clock state", "clock"],
                  rows, numeric=[False, False, False, False, True, False, True, False, False, False], note=MACHINE_WORDS[report.machine] + ".")
    if measured:
        clocks = " / ".join(dict.fromkeys(measured_clock(figures(bundle, p.role)) for p in measured))
        scopes = " / ".join(dict.fromkeys(scope_words(s.scope) for s in report.sides if s.scope and s.status == "measured"))
        svg = energy_latency(measured, f"latency p50 (ms; {clocks})", f"J per token ({scopes})", "Energy per token against latency, measured")
        levels = ", ".join(f"{s.role} {s.joules_per_token.confidence:.0%} over {s.joules_per_token.n} windows" for s in report.sides
                           if s.status == "measured" and s.joules_per_token is not None and s.joules_per_token.low is not None)
        caption = ("Each run at its latency p50 and its energy per token p50 from its own window; bars: the median's interval "
                   f"({levels or 'none: one window each'}); squares hollow: dense, circles filled: sparse. Scope: {scopes}.")
        return Section("energy", title, Chart(svg, caption), [table])
    if estimated:
        svg = energy_latency(estimated, "forward (ms; target clock, projected)", "J per token (ESTIMATE: board power under load)",
                             "Energy per token against latency, ESTIMATE on the target (not measured)")
        caption = ("ESTIMATES, not measurements: each run's forward projected on the target times the board power measured there "
                   "under load; bars: the range of that power. No run's energy was measured.")
        return Section("energy", title, Chart(svg, caption), [table])
    why = "; ".join(f"{s.role}: {STATUS_WORDS[s.status]}" for s in report.sides)
    return Section("energy", title, None, [table], missing=f"no run's energy was measured ({why})")
