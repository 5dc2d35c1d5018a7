"""The records of an imported Nsight Systems or rocprofv3 profile: every device's share of the file and the
whole-file summary that ``sparsedebug import nsys|rocprof`` prints (built by ``sources.importers.profiles``)."""

from __future__ import annotations

from pydantic import Field

from sparsedebug.records.base import Record


class DeviceShare(Record):
    """One device of a profile: its work and timeline over the whole file."""

    device: int = Field(description="The device index the profile gives (CUDA device id; ROCm GPU index).")
    name: str | None = None
    gpu_ops: int = Field(description="Kernels, memcpys and memsets on this device.")
    kernels: int
    busy_ms: float = Field(description="Union of this device's kernel, memcpy and memset intervals, whole file.")
    span_ms: float = Field(description="First start to last end on this device, whole file.")


class ProfileSummary(Record):
    """The whole-file summary of an imported profile: its format, the analysed device, every device's figures, its GEMM kernels."""

    format: str = Field(description="The file's format and version, as it says: 'Nsight Systems export (product version ...)'.")
    device: int = Field(description="The device the run record and summary describe.")
    devices: list[DeviceShare]
    sparse_kernels: list[str] = Field(description="Distinct kernel names of the analysed device in the sparse GEMM class (core.kernel_names).")
    inferred_sparse: list[str] = Field(description="Those classed sparse on a name token only (hipSPARSELt _SPA_/_SPB_), not confirmed on a real trace.")
    gemm_kernels: int = Field(description="Distinct GEMM kernel names (sparse, dense tensor-core or fp32) of the analysed device.")
