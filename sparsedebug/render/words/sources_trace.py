"""Words for a trace import's summary: what each temporal-breakdown convention counts."""

from __future__ import annotations

from sparsedebug.sources.importers.trace.analysis.timeline import TemporalBreakdown


def temporal_words(item: TemporalBreakdown) -> str:
    """What one convention of HTA's temporal breakdown counts."""
    if item.convention == "all_iterations":
        return "device kernels, memsets and memcpys over the whole trace"
    steps = ("last ProfilerStep dropped" if item.dropped_last_step else "every ProfilerStep" if item.profiler_steps >= 2
             else "no ProfilerSteps, whole trace")
    return f"HTA 0.5 defaults: {steps}; cuda_sync events counted; all devices"
