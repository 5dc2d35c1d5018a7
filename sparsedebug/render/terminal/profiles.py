"""Render an imported Nsight Systems or rocprofv3 profile: its devices, and whether sparse kernels ran."""

from __future__ import annotations

from rich.table import Table

from sparsedebug.core.kernel_names import short_kernel_name
from sparsedebug.records.profile import ProfileSummary


def devices_table(profile: ProfileSummary) -> Table:
    """Per device of the file: name, GPU ops, kernels, busy and span over the whole file; the analysed one marked."""
    table = Table(title=f"{profile.format}: {len(profile.devices)} device(s), device {profile.device} analysed",
                  caption="whole file, ms; busy = union of kernels, memcpys and memsets")
    for header in ("device", "name", "GPU ops", "kernels", "busy", "span"):
        table.add_column(header, justify="left" if header == "name" else "right", overflow="fold")
    for share in profile.devices:
        mark = "*" if share.device == profile.device else ""
        table.add_row(f"{share.device}{mark}", share.name or "-", str(share.gpu_ops), str(share.kernels), f"{share.busy_ms:.3f}",
                      f"{share.span_ms:.3f}")
    return table


def sparse_kernels_text(profile: ProfileSummary) -> str:
    """'sparse kernels: no (0 of 5 GEMM kernels ...)' or 'sparse kernels: yes: ...', saying when the class is inferred from the name."""
    if not profile.sparse_kernels:
        return (f"sparse kernels: no (none of the {profile.gemm_kernels} distinct GEMM kernel name(s) on device {profile.device} "
                "is a sparse GEMM)")
    names = ", ".join(short_kernel_name(name) for name in profile.sparse_kernels[:3])
    more = f" and {len(profile.sparse_kernels) - 3} more" if len(profile.sparse_kernels) > 3 else ""
    text = f"sparse kernels: yes: {len(profile.sparse_kernels)} of {profile.gemm_kernels} distinct GEMM kernel name(s): {names}{more}"
    if profile.inferred_sparse:
        text += (f" ({len(profile.inferred_sparse)} inferred from the name: hipSPARSELt's _SPA_/_SPB_ token, "
                 "not yet confirmed on a real sparse trace)")
    return text
