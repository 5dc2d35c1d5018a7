"""Whether two runs can be compared at all: the same model, device, phase, token count, dtype and launch mode.

``locate.comparable`` builds a :class:`Comparability` before every comparison (bisect,
classify with a baseline, gate, fallbacks, the playbook walk). A pair that differs in a
dimension the user did not allow (``--allow-different``) is refused; what may
legitimately differ in a regression (a few layers, a backend, a dtype on some layers) is
kept as a finding (``notes``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparsedebug.records.base import Record
from sparsedebug.records.notes import Note

Dimension = Literal["model", "device", "phase", "tokens", "dtype", "launch"]
# What two runs must share to be compared, in the order a refusal names them.
DIMENSIONS: tuple[Dimension, ...] = ("model", "device", "phase", "tokens", "dtype", "launch")

# How a traced forward was launched: op by op from Python, replayed from a CUDA graph, or compiled (torch.compile
# kernels).
LaunchMode = Literal["eager", "cuda_graph", "compiled"]

# Fewest layers matched by shape (share of the larger run's layers) for two runs to be one model.
MODEL_MIN_SHARE = 0.5


class DeviceInfo(Record):
    """The device a run was timed on, from what its source says (a trace's deviceProperties, the replay machine)."""

    kind: Literal["gpu", "cpu"]
    family: str = Field(description="Backend family: cuda, rocm or cpu.")
    vendor: str | None = Field(None, description="NVIDIA, AMD, Intel, ... when the source says.")
    name: str | None = None
    compute_capability: str | None = Field(None, description="computeMajor.computeMinor of the trace's deviceProperties.")
    multiprocessors: int | None = Field(None, description="numSms (NVIDIA SMs, AMD compute units).")
    memory_bytes: int | None = Field(None, description="totalGlobalMem.")
    warp_size: int | None = None

    def label(self) -> str:
        """How a refusal or a memo names the device: family, name and the properties that identify it."""
        props = []
        if self.compute_capability:
            props.append(f"{'gfx/cc' if self.family == 'rocm' else 'sm'} {self.compute_capability}")
        if self.multiprocessors:
            props.append(f"{self.multiprocessors} {'CUs' if self.family == 'rocm' else 'SMs'}")
        if self.memory_bytes:
            props.append(f"{self.memory_bytes / 2**30:.0f} GiB")
        name = self.name or ("CPU replay" if self.kind == "cpu" else "unknown GPU")
        head = f"{self.family}:{name}" if self.kind == "gpu" else name
        return head + (f" ({', '.join(props)})" if props else "")


class LayerMatch(Record):
    """Layers of two runs matched by identity (op kind and shapes, never names)."""

    base_layers: int
    cand_layers: int
    matched: int
    share: float = Field(description="matched / the larger run's layer count.")
    renamed: int = Field(0, description="Matched layers whose names differ (a renamed copy): compared under the baseline's names.")
    merged: Note | None = Field(
        None, description="Set when one run's layers were merged to the other's granularity (an annotated trace against its stripped copy)."
    )
    only_base: list[str] = Field(default_factory=list, description="Baseline layers with no match (first few, with shapes).")
    only_cand: list[str] = Field(default_factory=list, description="Candidate layers with no match (first few, with shapes).")


class Difference(Record):
    """One dimension in which the two runs differ beyond what a regression may change."""

    dimension: Dimension
    base: str
    cand: str
    facts: Note = Field(description="What differs and by how much: 'locate.differ.<dimension>' with its figures.")
    allowed: bool = Field(False, description="The user opted in (--allow-different).")


class Comparability(Record):
    """The comparability check of one pair, as every comparing command ran it."""

    base: str
    cand: str
    comparable: bool = Field(description="No difference beyond tolerance that was not allowed.")
    layers: LayerMatch
    base_device: DeviceInfo
    cand_device: DeviceInfo
    base_phase: str
    cand_phase: str
    base_launch: LaunchMode | None = Field(None, description="None: not a traced run (a replay has no launch mode).")
    cand_launch: LaunchMode | None = None
    differences: list[Difference] = Field(default_factory=list)
    allowed: list[Dimension] = Field(default_factory=list, description="--allow-different as given.")
    notes: list[Note] = Field(
        default_factory=list, description="Differences a regression may legitimately carry (a few layers, a backend, some dtypes): findings, not refusals."
    )
