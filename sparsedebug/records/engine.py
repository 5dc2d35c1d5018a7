"""TensorRT engine facts of a run: per layer, its exported tactic, precision, 2:4 weights and why it did not run sparse.

Imported TensorRT engines only (``sources.importers.tensorrt_engine``): ``LowerLayer.engine`` and ``RunSource.engine``.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from sparsedebug.records.base import Record


class BuildSparsity(StrEnum):
    """What a TensorRT build said about sparsity: its ``Sparsity:`` build option, or the ``(Sparsity)`` lines alone."""

    ENABLED = "enabled"
    DISABLED = "disabled"
    FORCED = "forced"
    NOT_SAID = "not_said"


# The flags that build a TensorRT engine with sparse weights enabled: trtexec's, and the builder API's.
TRT_SPARSITY_FLAGS: tuple[str, ...] = ("trtexec --sparsity=enable", "BuilderFlag.SPARSE_WEIGHTS")


class NotSparse(StrEnum):
    """Why a TensorRT engine layer did not run a sparse tactic, as the engine or its build log says."""

    # The engine was built without sparsity (Sparsity: Disabled, or no (Sparsity) lines in the log).
    BUILD_DISABLED = "build_disabled"
    # Its weights carry no 2:4 pattern (HasSparseWeights 0, or not in the log's eligible list).
    NOT_ELIGIBLE = "not_eligible"
    # Eligible (2:4 weights) but a dense tactic won the build's timing.
    NOT_PICKED = "not_picked"


class EngineLayer(Record):
    """One TensorRT engine layer as trtexec exported it (``--exportLayerInfo``, ``--exportProfile``) and its build log says.

    Imported TensorRT engines only. The sparsity facts: whether the build had sparsity enabled,
    whether the layer's weights carry a 2:4 pattern (``HasSparseWeights``), whether its tactic is
    a sparse one, the build log's eligible and picked lists, and why it did not run sparse.
    """

    layer_type: str = Field(description="TensorRT's LayerType, e.g. CaskConvolution, CaskGemmConvolution, Reformat.")
    tactic: str | None = Field(None, description="TacticName (detailed profiling verbosity), else None.")
    precision: str | None = Field(
        None, description="Canonical dtype the layer computes in: its declared Precision, else its tactic's input type, else its first "
        "input's Format/Datatype, its weights' type, its first output's format."
    )
    formats: list[str] = Field(default_factory=list, description="Format/Datatype of the inputs then the outputs, as exported.")
    weights: int | None = Field(None, description="Weights.Count: weight values of the layer.")
    weights_type: str | None = Field(None, description="Weights.Type as exported (Int8, Half, Float).")
    sparse_weights: bool | None = Field(None, description="HasSparseWeights: the weights carry the 2:4 pattern (None: not exported).")
    build_sparsity: BuildSparsity = Field(BuildSparsity.NOT_SAID, description="The build's Sparsity option, from the log given.")
    sparse_tactic: bool | None = Field(None, description="Whether the tactic is a sparse one (its name says sparse); None without a tactic name.")
    eligible: bool | None = Field(None, description="Listed by the log's (Sparsity) eligible line (None: no such line).")
    picked: bool | None = Field(None, description="Listed by the log's (Sparsity) picked line (None: no such line).")
    not_sparse: NotSparse | None = Field(None, description="Why the layer did not run sparse, where the engine or log says; None when it did or nothing says.")
    median_ms: float | None = Field(None, description="Profile: the layer's median time per inference.")
    average_ms: float | None = Field(None, description="Profile: the layer's average time per inference.")
    total_ms: float | None = Field(None, description="Profile: the layer's time summed over the profiled inferences.")
    share: float | None = Field(None, description="Profile: the layer's share of the profiled time (0-1).")


class EngineBuild(Record):
    """What a TensorRT engine's exports and build log say about the whole engine (imported engines only)."""

    layers: int = Field(description="Layers in the layer info.")
    profiled_runs: int | None = Field(None, description="Profile: inferences the per-layer times are over (its count entry).")
    build_sparsity: BuildSparsity = BuildSparsity.NOT_SAID
    sparsity_lines: bool = Field(False, description="The build log has (Sparsity) eligible or picked lines.")
    precision: str | None = Field(None, description="The build's Precision option as logged, e.g. FP32+FP16+INT8.")
    model: str | None = Field(None, description="The Model build option as logged (the ONNX file).")
    enable_flags: list[str] = Field(
        default_factory=list, description="Set when the build had sparsity off: the flags that enable it."
    )
    times: int | None = Field(None, description="--exportTimes: inferences timed (the outcome's latency samples).")


class SparseUse(Record):
    """Whether a TensorRT engine's sparse kernels ran, from its lower stage's engine facts (``LowerLayer.engine``;
    ``locate.lower.sparse_use`` builds it)."""

    run: str
    weighted: int = Field(description="Layers with weights.")
    sparse_weights: list[str] = Field(description="Layers whose weights carry the 2:4 pattern (HasSparseWeights).")
    sparse: list[str] = Field(description="Layers that ran a sparse tactic (or the log lists as picked).")
    not_picked: list[str] = Field(description="Layers eligible for sparse math (2:4 weights) on which a dense tactic won.")
    build_disabled: bool = Field(description="The engine was built with sparsity off (Sparsity: Disabled, or none in its log).")
    enable_flags: list[str] = Field(description="The flags that enable sparsity, when it was off.")
