"""What a classification metric reads, and what it answers.

Every metric is a function ``Context -> Fact | Missing``. The ``Context`` holds the run,
its baseline, the attached artifacts (Nsight Compute kernels, an nvidia-smi summary, a
fingerprint) and the machine roofline. A ``Fact`` is a number with the stage or artifact it
came from; a ``Missing`` names the artifact that would settle the metric (the ``CAPTURE_*``
strings below say how to capture the common ones). ``Facts`` holds every metric computed on
one run, for the fix recipes that read more than their own rule's number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparsedebug.classify.roofline import layer_intensities, machine_roofline
from sparsedebug.core.stats import median
from sparsedebug.records.classification import LayerIntensity, NcuEvidence, Roofline, SmiEvidence
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.notes import Note
from sparsedebug.records.run import GraphLayer, LowerLayer, RunRecord
from sparsedebug.sources.registry import replayed


@dataclass
class Fact:
    """A metric value with provenance; ``gate`` set means it must not fire (and says why)."""

    value: float | None
    source: str
    detail: str | Note  # str until every rule module writes a Note (issue 39); then Note only
    gate: str | Note | None = None
    # What a fix recipe needs beyond the number (the layer it is worst on, a core count...).
    context: dict[str, object] = field(default_factory=dict)


@dataclass
class Missing:
    """A metric that cannot be computed on this run: why, and what to capture to settle it."""

    reason: str | Note  # str until every rule module writes a Note (issue 39); then Note only
    capture: str | Note


Result = Fact | Missing

CAPTURE_SMI = (
    "capture `nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,"
    "clocks_event_reasons.active --format=csv -lms 250` during the run and pass it with --smi"
)
CAPTURE_NCU = (
    "profile the sparse GEMM with `ncu --section SpeedOfLight --section ComputeWorkloadAnalysis "
    "--section MemoryWorkloadAnalysis --csv` and pass it with --ncu"
)
CAPTURE_CALIBRATION = (
    "calibrate the replay machine: `sparsedebug playbook run --calibrate`, or `sparsedebug freeze --calibrate -o fp.yaml` "
    "and `sparsedebug classify RUN --fingerprint fp.yaml`"
)
CAPTURE_TRACE = "import a PyTorch profiler trace with CUDA activities (`sparsedebug import trace`)"
CAPTURE_BASELINE = "pass the baseline run with --baseline"
CAPTURE_CPU_FREQ = (
    "sample CPU frequency during the replay (`/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq`, "
    "or `perf stat -e cycles`) and pin the governor to performance"
)


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
    return any(lo.conversions_per_call > 0 for lo in run.lower.layers)


def roofline_missing(ctx: Context) -> Missing:
    """What to pass for a roofline: a GPU name or fingerprint for imported runs, a calibration for replays."""
    if ctx.imported:
        return Missing(
            "GPU model unknown or not in the peak table: no roofline",
            "name the GPU: `sparsedebug classify RUN --gpu NAME` (H200, H100 SXM, H100 PCIe), or a fingerprint from that machine: "
            "`sparsedebug classify RUN --fingerprint fp.yaml`",
        )
    return Missing("no calibrated roofline for the replay machine", CAPTURE_CALIBRATION)
