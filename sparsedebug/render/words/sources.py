"""Phrases for the notes the importers (traces, power logs, Nsight, engines) write (see ``sparsedebug.render.words.notes``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from sparsedebug.records.notes import NoteValue
from sparsedebug.render.words.notes import Phrase, figure

# What a reader of sampled NVIDIA board power must know, quoted by every nvidia-smi and DCGM power channel.
PART_TIME_SAMPLING = (
    "on A100 and H100 only about 25 % of the runtime is sampled for board power "
    "(Yang et al., 'Accurate and Convenient Energy Measurements for GPUs', SC24, arXiv 2312.02741), "
    "so short bursts can be missed or overweighted"
)


def utc(t: NoteValue) -> str:
    """UTC seconds since 1970 as a date and time to the millisecond."""
    if not isinstance(t, (int, float)):
        return "not recorded"
    try:
        return f"{datetime.fromtimestamp(t, UTC):%Y-%m-%d %H:%M:%S.%f}"[:-3] + " UTC"
    except (OverflowError, OSError, ValueError):
        return f"{t:.3f} s after 1970 UTC"



def _no_channel(v: Mapping[str, NoteValue]) -> str:
    which = f" for device {v['device']}" if v.get("device") is not None else ""
    untracked = " (CodeCarbon tracked no GPU: gpu_count and gpu_model are empty, so its energy is not tracked, not 0 J)"
    return f"no power or energy reading{which}" + (untracked if v.get("source") == "codecarbon" else "")


def _span(v: Mapping[str, NoteValue]) -> str:
    return f"{utc(v.get('start_utc_s'))} to {utc(v.get('end_utc_s'))}"


def _log_span(v: Mapping[str, NoteValue]) -> str:
    return f"{utc(v.get('log_start_utc_s'))} to {utc(v.get('log_end_utc_s'))}"


def _few_periods(v: Mapping[str, NoteValue]) -> str:
    update, averaging = v.get("update_period_s"), v.get("averaging_s")
    parts = [f"the log's interval between changes is {figure(v, 'update_period_s') * 1000:.0f} ms"] if update else []
    if averaging:
        parts.append(f"each reading averages {figure(v, 'averaging_s'):g} s")
    sampled = f"; {PART_TIME_SAMPLING}" if v.get("part_time_sampled") else ""
    return (f"the run's window of {figure(v, 'window_s') * 1000:.1f} ms spans fewer than {v['min_periods']} update periods of "
            f"{v['field']} ({figure(v, 'period_s') * 1000:.0f} ms: {', '.join(parts) or 'period unknown'}): too short to measure{sampled}")


def _overlap_took(v: Mapping[str, NoteValue]) -> str:
    label = v.get("label") or f"line {v['line']}"
    return f"the source's windows overlap: took {label} (line {v['line']}), the one closest to the run's window"


def _repeating_calls(v: Mapping[str, NoteValue]) -> str:
    text = f"the sequence of top-level calls repeats every {v['unit']} calls ({v['units']} units)"
    if v.get("units_per_iteration") is not None:
        text += f"; host gaps group {v['units_per_iteration']} units per iteration (chance p = {figure(v, 'p'):.3g})"
    return text


def _clock(t: NoteValue) -> str:
    """A log timestamp read as UTC, to the second."""
    return f"{datetime.fromtimestamp(t, UTC):%H:%M:%S}" if isinstance(t, (int, float)) else "not recorded"


# Where a zone-less log's UTC offset came from (``records.power.UtcOffsetSource``).
_OFFSET_FROM = {
    "option": "--smi-utc-offset",
    "fingerprint": "the fingerprint of {fingerprint_created}",
    "searched": "the one real UTC offset under which the log covers every run's window",
}


def _placement(v: Mapping[str, NoteValue]) -> str:
    """How the log's clock was placed on the run's, or what the search over real UTC offsets found."""
    if v.get("offset_from"):
        whence = _OFFSET_FROM[str(v["offset_from"])].format(fingerprint_created=v.get("fingerprint_created"))
        return f"; its timestamps read as UTC{figure(v, 'offset_h'):+g} h ({whence})"
    if not v.get("offset_searched"):
        return ""
    text = "; no fingerprint records the machine's UTC offset either"
    if "tried" not in v:
        return text
    runs = int(figure(v, "runs"))
    which = "both runs' windows" if runs == 2 else "every run's window" if runs > 2 else "the run's window"
    listed = v.get("aligned")
    aligned = [float(h) for h in listed if isinstance(h, (int, float))] if isinstance(listed, list) else []
    if aligned:
        shown = ", ".join(f"UTC{h:+g} h" for h in aligned[:6]) + (" ..." if len(aligned) > 6 else "")
        return (f"{text}; {len(aligned)} of the {v['tried']} real UTC offsets ({shown}) each place {which} inside "
                "the log: ambiguous, so none is taken (pass --smi-utc-offset)")
    covers = ""
    if isinstance(v.get("log_first_s"), (int, float)) and isinstance(v.get("log_last_s"), (int, float)):
        first, last = (datetime.fromtimestamp(figure(v, k), UTC) for k in ("log_first_s", "log_last_s"))
        covers = f" (its clock reads {first:%Y-%m-%d %H:%M:%S} to {last:%Y-%m-%d %H:%M:%S})"
    return f"{text}; none of the {v['tried']} real UTC offsets places {which} inside the log{covers}"


def _smi_window_empty(v: Mapping[str, NoteValue]) -> str:
    covers = ""
    if v.get("log_first_s") is not None and v.get("log_last_s") is not None:
        covers = f" (log covers {_clock(v['log_first_s'])} to {_clock(v['log_last_s'])} UTC)"
    return f"{v['file']}: no sample inside the run's window from {utc(v.get('start_utc_s'))}{covers}{_placement(v)}"


def _smi_window_samples(v: Mapping[str, NoteValue]) -> str:
    return (f"{v['file']}: {v['samples']} sample(s) in the run's window from {utc(v.get('start_utc_s'))}, "
            f"{figure(v, 'seconds'):.3f} s{_placement(v)}")


PHRASES: dict[str, Phrase] = {
    # Which samples of a clock log classify's thermal rules took (``SmiEvidence.window``), or why none.
    "sources.smi_window.no_run_window": lambda v: (
        f"{v['file']}: the run records no absolute time window: the log cannot be aligned (context only){_placement(v)}"
    ),
    "sources.smi_window.no_utc_offset": lambda v: (
        f"{v['file']}: nvidia-smi timestamps carry no time zone and no UTC offset was given (--smi-utc-offset): "
        f"the log cannot be aligned (context only){_placement(v)}"
    ),
    "sources.smi_window.empty": _smi_window_empty,
    "sources.smi_window.samples": _smi_window_samples,
    "sources.classes_seen": "classes seen: {classes}",
    # why a power log's window could not be measured (records.power.WindowEnergy.why)
    "sources.window.no_channel": _no_channel,
    "sources.window.no_run_window": "the run records no absolute time window: the log cannot be placed against it",
    "sources.window.no_timestamps": "its readings carry no timestamps: the log cannot be placed against the run's window",
    "sources.window.monotonic_clock": ("its {source} timestamps count seconds since boot (a monotonic clock), not UTC time: "
                                       "the log cannot be placed against the run's window"),
    "sources.window.no_utc_offset": ("{source} timestamps carry no time zone and no UTC offset is known: "
                                     "the log cannot be placed against the run's window"),
    "sources.window.no_duration": lambda v: f"the run's window has no duration ({_span(v)}): too short to measure",
    "sources.window.outside_log": lambda v: f"the log covers {_log_span(v)}, outside the run's window {_span(v)}",
    "sources.window.partly_covered": lambda v: (
        f"the log covers only {figure(v, 'covered_s'):.3f} s of the run's {figure(v, 'window_s'):.3f} s window "
        f"({_span(v)}; the log runs {_log_span(v)})"),
    "sources.window.few_periods": _few_periods,
    "sources.window.totals_without_duration": "no {field} total says the duration it measured over",
    "sources.window.totals_partly_cover": "the source's windows cover only {covered_s:.3f} s of the run's {window_s:.3f} s window",
    "sources.window.closest_total_partly_covers": "the source's window closest to the run's covers only {covered_s:.3f} s of its {window_s:.3f} s",
    "sources.window.totals_share_short": ("the run's window of {window_s:.3f} s holds only {share:.0%} of the {field} windows "
                                          "that overlap it (at least {needed:.0%} needed): too short to measure"),
    # what a measured window's figure had to undo or choose (records.power.WindowEnergy.events)
    "sources.counter.wrapped": "the counter wrapped between lines {line_before} and {line_after} (32-bit, undone)",
    "sources.counter.restarted": ("the counter restarted between lines {line_before} and {line_after} (driver reload?): "
                                  "that interval counts from the restart, a lower bound"),
    "sources.totals.overlap_took_closest": _overlap_took,
    # how a trace's iterations were found (TraceSummary.iteration_detail)
    "sources.iterations.repeating_calls": _repeating_calls,
    "sources.iterations.profiler_steps": "{count} ProfilerStep ranges",
    "sources.iterations.annotation": "each call of {layer} starts an iteration",
    "sources.iterations.graph_launches": "{count} CUDA-graph launches",
    "sources.iterations.kernel_period": "kernel sequence repeats every {unit} kernels",
    "sources.iterations.whole_trace": "no ProfilerStep, repeating call sequence, annotation or graph launch",
}
