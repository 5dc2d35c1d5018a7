"""The records of an imported PyTorch profiler trace: the whole-trace GPU timeline summary (what `sparsedebug import
trace` prints, and its page shows), per iteration and per stream, and HTA's temporal breakdown."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.notes import Note
from sparsedebug.records.run import RunRecord

# Why an event's timing is unusable (the reason of a skipped-event key '<cat>:<reason>'), named by its fields, as
# refusals and reports say it.
UNTIMED_WORDS = {"no_ts_dur": "without numeric ts and dur", "no_ts": "without numeric ts", "no_dur": "without numeric dur",
                 "negative_dur": "with negative dur"}



class StreamSummary(Record):
    """One GPU stream's share of the timeline."""

    stream: int
    gpu_ops: int
    busy_ms: float = Field(description="Union of this stream's op intervals.")
    span_ms: float
    by_class_ms: dict[str, float]


class TemporalBreakdown(Record):
    """Holistic Trace Analysis's temporal breakdown of the GPU timeline under one convention."""

    convention: Literal["all_iterations", "hta"]
    profiler_steps: int = Field(0, description="ProfilerStep ranges the trace has (HTA's convention counts by them).")
    span_ms: float = Field(description="First GPU event start to last end (HTA's 'kernel_time').")
    compute_ms: float
    non_compute_ms: float
    idle_ms: float
    gpu_events: int
    dropped_last_step: bool = False


class IterationSummary(Record):
    """One traced iteration (forward/step) on the GPU timeline."""

    index: int
    gpu_ops: int
    span_ms: float = Field(description="First GPU op start to last GPU op end of this iteration.")
    busy_ms: float = Field(description="Union of this iteration's GPU op intervals.")
    latency_ms: float = Field(
        description="From the iteration's start on the host (or the previous iteration's end, if later) to its last GPU op end (or host end, if later)."
    )
    partial: bool = Field(False, description="The trace ends inside this iteration: left out of the run record's samples.")
    start_us: float | None = Field(None, description="Start of the latency interval, in the trace's own microseconds.")
    end_us: float | None = Field(None, description="End of the latency interval, in the trace's own microseconds.")


class TraceSummary(Record):
    """Whole-trace GPU timeline figures, as printed by `sparsedebug import trace`."""

    file: str
    device: str | None
    gpu_ops: int
    kernels: int
    busy_ms: float
    span_ms: float
    idle_ms: float
    host_wait_ms: float
    kernel_wait_ms: float
    other_wait_ms: float
    iteration_source: str = Field(description="ProfilerStep, repeating call sequence, annotation:<name>, cudaGraphLaunch, kernel-sequence period or whole trace.")
    iteration_detail: Note | None = Field(None, description="How the iterations were found: a 'sources.iterations.*' note.")
    iterations: list[IterationSummary]
    by_class_ms: dict[str, float]
    annotated: bool
    layers: int
    layer_sources: dict[str, int] = Field(default_factory=dict, description="Layers by how they were found: annotation, module, aten_op, kernel.")
    cuda_graph: bool = Field(False, description="Kernels replayed from CUDA graphs (no CPU ops under them: their layers are kernel names).")
    phases_ms: dict[str, float] = Field(default_factory=dict, description="GPU busy time (union) per phase: forward, backward, optimizer.")
    streams: list[StreamSummary] = Field(default_factory=list)
    temporal: list[TemporalBreakdown] = Field(default_factory=list, description="HTA's compute / non-compute / idle under our convention and HTA's.")
    skipped_events: dict[str, int] = Field(default_factory=dict, description="Events ignored, by reason: '<category>:<reason>' (kernel:no_ts, annotation:unnamed, event:malformed, gpu_op:other_device:<n> ...; render.words.sources_trace words each).")


class TraceImport(Record):
    """The imported run record plus the whole-trace summary behind it."""

    record: RunRecord
    summary: TraceSummary
