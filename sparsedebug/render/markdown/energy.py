"""Energy in the memo and the deployment report: perf-per-watt lines and the energy section, from ``energy.json``.

Measured figures are quoted only from a side whose status is ``measured`` (a ``WindowEnergy`` of its own
window); target estimates only with the word *estimate* and their basis; every figure with its scope
(board power, not wall power; or CPU package for RAPL) and the clock it was measured on. A side without
figures says why, and the report lists the command lines that capture a usable log.
"""

from __future__ import annotations

from sparsedebug.records.bundle import FixOutcome
from sparsedebug.records.energy import EnergyReport, EnergySummary, SideEnergy
from sparsedebug.records.loaded import LoadedBundle
from sparsedebug.records.report import RunFigures
from sparsedebug.render.clocks import measured_clock
from sparsedebug.render.document import figures, report
from sparsedebug.render.words.notes import say
from sparsedebug.render.words.signoff import MACHINE_WORDS, SESSION_WORDS, estimate_basis, side_note
from sparsedebug.render.words.sources_power import scope_words

STATUS_WORDS: dict[str, str] = {
    "measured": "measured",
    "too_short": "window too short to measure",
    "unaligned": "log not aligned to the run",
    "not_covered": "window not covered by the log",
    "no_reading": "no power reading in the log",
    "no_window": "no absolute time window",
    "no_log": "no power log given",
}
"""A side's status in words, as every renderer says it."""


def figure_text(summary: EnergySummary, spec: str = ".4g") -> str:
    """``0.0123 J/token p50 (75% interval 0.0120 to 0.0130, n=3)``: the median's interval at the confidence it has."""
    text = f"{summary.p50:{spec}} {summary.unit} p50"
    if summary.low is not None and summary.high is not None:
        return text + f" ({summary.confidence:.0%} interval {summary.low:{spec}} to {summary.high:{spec}}, n={summary.n})"
    return text + " (one window: no interval)"


def _over(side: SideEnergy) -> str:
    if side.over == "iterations":
        return f"over {len(side.windows)} iterations"
    if side.over == "windows":
        return f"over {len(side.windows)} windows of {side.forwards_per_window} or more iterations"
    return f"over the run's whole window ({side.forwards_per_window} forwards)"


def clock_state(side: SideEnergy) -> str:
    """Power limit, SM clock and idle power of a side, as the log recorded them."""
    parts = [f"power limit {side.power_limit_w:g} W" if side.power_limit_w is not None else "power limit not recorded",
             f"SM clock {side.sm_clock_mhz:.0f} MHz" if side.sm_clock_mhz is not None else "SM clock not recorded"]
    if side.clock_reasons:
        parts.append("clock event reasons active: " + ", ".join(side.clock_reasons))
    if side.idle_power_w is not None:
        parts.append(f"idle power {side.idle_power_w:.1f} W (apart, not in the figures)")
    return ", ".join(parts)


def side_sentence(side: SideEnergy, run: RunFigures) -> str:
    """One side's measured energy in one sentence, or why it has none."""
    head = f"{side.role} `{side.run}`"
    if side.status != "measured" or side.joules_per_forward is None:
        return f"{head}: not measured ({STATUS_WORDS[side.status]}): {side_note(side)}"
    parts = [figure_text(side.joules_per_forward)]
    if side.joules_per_token is not None:
        parts.append(figure_text(side.joules_per_token))
    if side.tokens_per_joule is not None:
        parts.append(figure_text(side.tokens_per_joule))
    power = f"mean {side.mean_power_w:.1f} W, " if side.mean_power_w is not None else ""
    return (f"{head}: " + ", ".join(parts) + f" {_over(side)} ({scope_words(side.scope) or 'scope not recorded'}; {measured_clock(run)}; "
            f"{power}{clock_state(side)})")


def estimate_sentence(side: SideEnergy) -> str | None:
    """A side's target estimate, worded as an estimate; None without one."""
    est = side.estimate
    if est is None:
        return None
    per_token = f", {est.joules_per_token:.4g} J/token, {est.tokens_per_joule:.4g} tokens/J" if est.joules_per_token and est.tokens_per_joule else ""
    return (f"{side.role} `{side.run}` on the {est.device}: ESTIMATE {est.joules_per_forward:.4g} J/forward (range "
            f"{est.joules_per_forward_low:.4g} to {est.joules_per_forward_high:.4g}){per_token}, not measured; {estimate_basis(est)}")


def rapl_sentence(side: SideEnergy) -> str:
    """The CPU package energy read around a side's replay (RAPL), as what it is."""
    r = side.rapl
    assert r is not None
    wrapped = ", counter wrap corrected" if r.wrapped else ""
    what = f"the whole interleaved session of {SESSION_WORDS[r.session]} (one reading for both sides)" if r.session else "the whole replay"
    return (f"{side.role} `{side.run}`: CPU package (RAPL, {r.zone}) {r.joules:.1f} J over {what} of {r.seconds:.1f} s, "
            f"mean {r.mean_power_w:.1f} W{wrapped}: CPU package, not the GPU and not wall power, and not per forward")


def _runs(b: LoadedBundle) -> dict[str, RunFigures]:
    """Each run's figures in the bundle's review document, by role."""
    return {fig.role: fig for fig in report(b).latency}


def _capture(report: EnergyReport) -> str:
    """The best capture command, quoted (the report lists every one)."""
    if not report.capture:
        return ""
    others = f" (or DCGM: {len(report.capture) - 1} more in report.md)" if len(report.capture) > 1 else ""
    return f"; capture a log covering each run with `{report.capture[0]}`{others}"


def _replays_only(b: LoadedBundle, sides: list[SideEnergy]) -> bool:
    runs = _runs(b)
    return bool(sides) and all(s.status == "no_window" and s.role in runs and runs[s.role].replayed for s in sides)


def why_not(b: LoadedBundle, report: EnergyReport, sides: list[SideEnergy]) -> str:
    """Why these sides have no measured energy: this machine's lack of a reading for replays, else :func:`_missing`."""
    if _replays_only(b, sides):
        advice = (f"; to measure it, run the model on the GPU under the profiler with `{report.capture[0]}` beside it and walk "
                  "the traces with --power" if report.capture else "")
        return f"{MACHINE_WORDS[report.machine]}{advice}"
    return _missing(report, sides)


def _missing(report: EnergyReport, sides: list[SideEnergy]) -> str:
    """Why these sides have no energy figures: windows too short, or the energy evidence missing, and what captures it."""
    what = ("the windows are too short to measure" if sides and all(s.status == "too_short" for s in sides)
            else "the energy evidence is missing or unusable")
    reasons = "; ".join(f"{s.role}: {STATUS_WORDS[s.status]} ({side_note(s)})" for s in sides)
    return f"{what}: {reasons}{_capture(report)}"


def expected_lines(b: LoadedBundle, fix: FixOutcome | None) -> list[str]:
    """The perf-per-watt line of the memo's expected movement, with each side's measured figures (or why none) below it."""
    report = b.energy
    if report is None:
        return ["  - Perf-per-watt: not assessed (no energy record in the bundle)."]
    runs = _runs(b)
    sides = [s for s in (report.side("baseline"), report.side("candidate")) if s is not None]
    cand = report.side("candidate")
    head = "  - Perf-per-watt (tokens per joule; board power, not wall power): "
    lat = next((m for m in (fix.movements if fix else []) if m.metric == "latency p50"), None)
    measured = [s.role for s in sides if s.status == "measured"]
    unmeasured = [s for s in sides if s.status != "measured"]
    if cand is not None and cand.status == "measured":
        if lat is not None and lat.expected_after is not None and cand.mean_power_w and cand.tokens_per_forward:
            per_forward = cand.mean_power_w * lat.expected_after / 1e3
            after = (f"after the fix {per_forward:.4g} J/forward, {cand.tokens_per_forward / per_forward:.4g} tokens/J expected "
                     f"(estimate: the candidate's mean board power "
                     f"{cand.mean_power_w:.1f} W times the expected p50 {lat.expected_after:.3f} ms, assuming the fix leaves the power "
                     "drawn unchanged)")
        else:
            after = "after the fix not projected: " + (say(lat.expected_basis) if lat is not None and lat.expected_basis else "no latency projection for a re-run")
        lines = [head + f"measured for {' and '.join(measured)}, each from its own window; {after}."]
    else:
        lines = [head + f"not measured: {why_not(b, report, unmeasured)}."]
    lines += [f"    - {rapl_sentence(s)}." for s in sides if s.rapl is not None]
    lines += [f"    - {side_sentence(s, runs[s.role])}." for s in sides if s.status == "measured"]
    if measured and unmeasured:
        lines += [f"    - {side_sentence(s, runs[s.role])}{_capture(report)}." for s in unmeasured]
    estimates = [estimate_sentence(s) for s in sides]
    lines += [f"    - {e}." for e in estimates if e]
    return lines


def measured_lines(b: LoadedBundle) -> list[str]:
    """The perf-per-watt line of the memo's measured movement (candidate -> fixed re-run)."""
    report = b.energy
    if report is None or b.fixed is None:
        return []
    cand, fixed = report.side("candidate"), report.side("fixed")
    if cand is None or fixed is None:
        return []
    if cand.status == fixed.status == "measured" and cand.joules_per_forward is not None and fixed.joules_per_forward is not None:
        scope = f"board power, not wall power; {measured_clock(figures(b, 'fixed'))}"
        if cand.tokens_per_joule is not None and fixed.tokens_per_joule is not None:
            change = fixed.tokens_per_joule.p50 / cand.tokens_per_joule.p50 - 1
            return [f"  - perf-per-watt: candidate {figure_text(cand.tokens_per_joule)} -> fixed {figure_text(fixed.tokens_per_joule)} "
                    f"({change:+.1%}; {scope})."]
        change = fixed.joules_per_forward.p50 / cand.joules_per_forward.p50 - 1
        missing = [f"`{s.run}`" for s in (cand, fixed) if s.tokens_per_forward is None]
        return [f"  - perf-per-watt: candidate {figure_text(cand.joules_per_forward)} -> fixed {figure_text(fixed.joules_per_forward)} "
                f"({change:+.1%}; {scope}); no tokens per joule: {' and '.join(missing)} records no tokens per forward."]
    unmeasured = [s for s in (cand, fixed) if s.status != "measured"]
    lines = [f"  - perf-per-watt: not measured: {why_not(b, report, unmeasured)}."]
    if cand.estimate is not None and fixed.estimate is not None and cand.estimate.tokens_per_joule and fixed.estimate.tokens_per_joule:
        lines.append(f"    - ESTIMATE on the {fixed.estimate.device} (not measured): candidate {cand.estimate.tokens_per_joule:.4g} -> "
                     f"fixed {fixed.estimate.tokens_per_joule:.4g} tokens/J.")
    return lines


def energy_section(b: LoadedBundle) -> list[str]:
    """The deployment report's energy section: per side, measured figures, estimates apart, what to capture."""
    report = b.energy
    lines = ["", "## Energy (perf-per-watt)", ""]
    if report is None:
        return [*lines, "Not assessed: the bundle has no energy record."]
    runs = _runs(b)
    source = f"`{report.log}` ({report.log_source}, given as {report.log_option})" if report.log else "none given"
    lines += [f"Power log: {source}. {MACHINE_WORDS[report.machine][0].upper()}{MACHINE_WORDS[report.machine][1:]}.", ""]
    lines.append("| run | name | status | J/forward p50 | J/token p50 | interval (J/token) | tokens/J p50 | over | mean W | idle W | limit W | SM MHz | scope | clock |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for side in report.sides:
        run = runs.get(side.role)
        clock = measured_clock(run) if run is not None else "-"
        if side.status == "measured" and side.joules_per_forward is not None:
            jt, tj = side.joules_per_token, side.tokens_per_joule
            interval = f"{jt.low:.4g} to {jt.high:.4g} ({jt.confidence:.0%})" if jt is not None and jt.low is not None and jt.high is not None else "one window"
            cells = [f"{side.joules_per_forward.p50:.4g}", f"{jt.p50:.4g}" if jt else "-", interval, f"{tj.p50:.4g}" if tj else "-",
                     _over(side).removeprefix("over ")]
        else:
            cells = ["-", "-", "-", "-", "-"]
        opt = [f"{v:.1f}" if v is not None else "-" for v in (side.mean_power_w, side.idle_power_w)]
        opt += [f"{side.power_limit_w:g}" if side.power_limit_w is not None else "-", f"{side.sm_clock_mhz:.0f}" if side.sm_clock_mhz is not None else "-"]
        lines.append(f"| {side.role} | {side.run} | {STATUS_WORDS[side.status]} | " + " | ".join(cells + opt) + f" | {scope_words(side.scope) or '-'} | {clock} |")
    lines.append("")
    for side in report.sides:
        if side.status != "measured":
            lines.append(f"- {side.role}: {side_note(side)}.")
    estimates = [estimate_sentence(s) for s in report.sides]
    if any(estimates):
        lines += ["", "Estimates on the target (never measurements, and not comparable with the measured figures above):", ""]
        lines += [f"- {e}." for e in estimates if e]
    raplled = [s for s in report.sides if s.rapl is not None]
    if raplled:
        lines += ["", "CPU package energy of each replay on this machine (RAPL; CPU package, not the GPU; whole replay, not per forward):", ""]
        lines += [f"- {rapl_sentence(s)}." for s in raplled]
    if report.capture:
        lines += ["", "To measure energy on the GPU, capture a power log covering each run's window and pass it with `--power`:", ""]
        lines += [f"    {c}" for c in report.capture]
        if _replays_only(b, [s for s in report.sides if s.status != "measured"]):
            lines += ["", "A replay runs on this machine and records no absolute time: profile the model on the GPU with the log "
                      "running beside it, and walk the traces with `--power`."]
    return lines
