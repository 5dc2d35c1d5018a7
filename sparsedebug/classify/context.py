"""What a classification metric reads, and what it answers.

Every metric is a function ``Context -> Fact | Missing``. The ``Context`` holds the run,
its baseline, the attached artifacts (Nsight Compute kernels, an nvidia-smi summary, a
fingerprint) and the machine roofline. A ``Fact`` is a number with the stage or artifact it
came from; a ``Missing`` names the artifact that would settle the metric (a ``Capture``
code: ``render.words.classify`` says how to capture each). ``Facts`` holds every metric
computed on one run, for the fix recipes that read more than their own rule's number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from sparsedebug.classify.roofline import layer_intensities, machine_roofline
from sparsedebug.core.stats import median
from sparsedebug.records.classification import FixTarget, LayerIntensity, NcuEvidence, Roofline, SmiEvidence
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.notes import Note, note
from sparsedebug.records.run import GraphLayer, LowerLayer, RunRecord
from sparsedebug.sources.registry import replayed


@dataclass
class Fact:
    """A metric value with provenance; ``gate`` set means it must not fire (and says why)."""

    value: float | None
    source: str
    detail: Note
    gate: Note | None = None
    # What a fix recipe needs beyond the number (the layer it is worst on, a core count...).
    context: dict[str, object] = field(default_factory=dict)
    # The amount of the condition behind a ratio (ms of non-kernel time, of host wait, of copy kernels): beside a
    # baseline, a ratio that grew only because its denominator shrank is still the baseline's condition.
    amount: float | None = None


@dataclass
class Missing:
    """A metric that cannot be computed on this run: why, and what to capture to settle it."""

    reason: Note
    capture: Note


Result = Fact | Missing


class Capture(StrEnum):
    """What to capture or pass to settle a missing metric (render.words.classify says how)."""

    SMI = "smi"  # an nvidia-smi clock log during the run, passed with --smi
    NCU = "ncu"  # an Nsight Compute report of the sparse GEMM, passed with --ncu
    CALIBRATION = "calibration"  # a calibrated roofline of the replay machine
    TRACE = "trace"  # a PyTorch profiler trace with CUDA activities
    BASELINE = "baseline"  # the baseline run, passed with --baseline
    CPU_FREQ = "cpu_freq"  # CPU frequency sampled during the replay, governor pinned
    GPU_NAME = "gpu_name"  # the GPU named with --gpu, or a fingerprint from that machine
    REPLAY = "replay"  # replay the workload
    REPLAY_BOTH = "replay_both"  # replay both workloads
    REPLAY_BASELINE = "replay_baseline"  # replay the baseline workload
    REPLAY_ERROR = "replay_error"  # replay the workload: it measures error vs fp64
    REPLAY_QUALITY = "replay_quality"  # replay the workload: it measures output cosine vs dense
    REPLAY_SHAPES = "replay_shapes"  # replay the workload, or import a trace with record_shapes
    REPLAY_BYTES = "replay_bytes"  # replay again with this sparsedebug: it records value and metadata bytes
    REPLAY_EQUIVALENT = "replay_equivalent"  # replay an equivalent workload: it records value and metadata bytes


def capture(what: Capture) -> Note:
    """The capture instruction ``what``, as a note (its words are in render.words.classify)."""
    return note("classify.capture", what=what.value)


# The common captures as notes, for the mechanism modules' ``Missing(reason, CAPTURE_...)``.
CAPTURE_SMI = capture(Capture.SMI)
CAPTURE_NCU = capture(Capture.NCU)
CAPTURE_CALIBRATION = capture(Capture.CALIBRATION)
CAPTURE_TRACE = capture(Capture.TRACE)
CAPTURE_BASELINE = capture(Capture.BASELINE)
CAPTURE_CPU_FREQ = capture(Capture.CPU_FREQ)


@dataclass
class Context:
    """One run as the metrics see it: the run, its baseline, attached evidence and the roofline."""

    run: RunRecord
    baseline: RunRecord | None
    ncu: list[NcuEvidence] | None
    ncu_source: str | None
    smi: SmiEvidence | None
    fingerprint: Fingerprint | None
    roofline: Roofline | None
    intensities: list[LayerIntensity]
    run_artifact: str
    # The clock log over the baseline's own window (None: no baseline, or the log is not aligned).
    base_smi: SmiEvidence | None = None

    @property
    def imported(self) -> bool:
        """The run came from an imported artifact (a GPU trace), not the built-in replay."""
        return not replayed(self.run)

    def graph(self, run: RunRecord | None = None) -> dict[str, GraphLayer]:
        """Graph layers of ``run`` (default: the candidate) by name."""
        return {layer.name: layer for layer in (run or self.run).graph.layers}

    def lower(self, run: RunRecord | None = None) -> dict[str, LowerLayer]:
        """Lower-stage layers of ``run`` (default: the candidate) by name."""
        return {layer.name: layer for layer in (run or self.run).lower.layers}

    def kernel_p50(self, run: RunRecord | None = None) -> dict[str, float]:
        """Median kernel time per layer of ``run`` (default: the candidate), for layers with samples."""
        return {layer.name: median(layer.samples_ms) for layer in (run or self.run).kernel.layers if layer.samples_ms}

    def cores(self) -> int | None:
        """Logical cores of the machine, from the given fingerprint or the run's own."""
        for fp in (self.fingerprint, self.run.fingerprint):
            if fp is not None and fp.cpu.logical_cores:
                return fp.cpu.logical_cores
        return None


def make_context(
    run: RunRecord,
    *,
    artifact: str,
    baseline: RunRecord | None = None,
    ncu: list[NcuEvidence] | None = None,
    ncu_source: str | None = None,
    smi: SmiEvidence | None = None,
    base_smi: SmiEvidence | None = None,
    fingerprint: Fingerprint | None = None,
    gpu: str | None = None,
) -> Context:
    """The context for ``run``: its roofline (see ``machine_roofline``) and its layers placed on it."""
    roof = machine_roofline(run, fingerprint, gpu)
    return Context(
        run=run,
        baseline=baseline,
        ncu=ncu,
        ncu_source=ncu_source,
        smi=smi,
        fingerprint=fingerprint,
        roofline=roof,
        intensities=layer_intensities(run, roof) if roof is not None else [],
        run_artifact=artifact,
        base_smi=base_smi,
    )


@dataclass(frozen=True)
class Facts:
    """Every metric computed on one run, by metric name, with the context they were computed in."""

    ctx: Context
    results: Mapping[str, Result]

    def data(self, metric: str) -> dict[str, object]:
        """The ``context`` of ``metric``'s fact; empty when it is missing or was not computed."""
        fact = self.results.get(metric)
        return fact.context if isinstance(fact, Fact) else {}


def converts_per_call(run: RunRecord) -> bool:
    """Some layer converts its weights to the sparse format on every call."""
    return bool(converting_layers(run))


def converting_layers(run: RunRecord) -> list[str]:
    """The layers that convert their weights to the sparse format on every call, in lowering order."""
    return [lo.name for lo in run.lower.layers if lo.conversions_per_call > 0]


def conversion_targets(run: RunRecord) -> list[FixTarget]:
    """What a convert-once fix covers, named: every layer converting on every call (none named when one layer does)."""
    layers = converting_layers(run)
    return [FixTarget(cause="per_call_conversion", layers=layers)] if len(layers) > 1 else []


def roofline_missing(ctx: Context) -> Missing:
    """What to pass for a roofline: a GPU name or fingerprint for imported runs, a calibration for replays."""
    if ctx.imported:
        return Missing(note("classify.no_roofline", gpu_known=False), capture(Capture.GPU_NAME))
    return Missing(note("classify.no_roofline", gpu_known=True), CAPTURE_CALIBRATION)
