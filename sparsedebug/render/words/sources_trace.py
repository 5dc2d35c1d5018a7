"""Words for a trace import's summary: what each temporal-breakdown convention counts."""

from __future__ import annotations

from sparsedebug.records.trace import UNTIMED_WORDS, TemporalBreakdown

# Why an event was skipped, by the reason part of its key (TraceSummary.skipped_events).
SKIPPED_WORDS = {
    "unnamed": "without name",
    "malformed": "malformed (a list or object as ph, cat, name, pid, tid or id)",
    "not_object": "not an object",
    **UNTIMED_WORDS,
}


def skipped_words(key: str) -> str:
    """A skipped-event reason key ('kernel:no_ts', 'gpu_op:other_device:1' ...) in words."""
    category, _, reason = key.partition(":")
    if reason.startswith("other_device:"):
        return f"GPU ops on devices other than {reason.split(':', 1)[1]} (analysed the busiest device only)"
    if key == "kernel:unnamed":
        return "kernel without name (kept as <unnamed kernel>)"
    if category == "event":
        return SKIPPED_WORDS.get(reason, reason)
    return f"{category} {SKIPPED_WORDS.get(reason, reason)}"


def temporal_words(item: TemporalBreakdown) -> str:
    """What one convention of HTA's temporal breakdown counts."""
    if item.convention == "all_iterations":
        return "device kernels, memsets and memcpys over the whole trace"
    steps = ("last ProfilerStep dropped" if item.dropped_last_step else "every ProfilerStep" if item.profiler_steps >= 2
             else "no ProfilerSteps, whole trace")
    return f"HTA 0.5 defaults: {steps}; cuda_sync events counted; all devices"
