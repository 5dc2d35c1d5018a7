"""`sparsedebug import nsys|rocprof`: Nsight Systems exports and rocprofv3 kernel traces, one device of them as a run record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from sparsedebug.cli.common import JsonOption, OutputOption, WideOption, console, emit_json, err_console, handle_errors
from sparsedebug.cli.trace_output import FileArg, IterationsOption, LayersOption, print_trace

if TYPE_CHECKING:
    from collections.abc import Callable

    from sparsedebug.sources.importers.profiles import ProfileImport


DeviceOption = Annotated[
    int | None, typer.Option("--device", help="The device to analyse (as the file numbers it); default: the busiest. Every device is listed.")
]


def _profile(kind: str, analyze: Callable[[Path, int | None], ProfileImport], file: Path, device: int | None, wide: bool,
             output: Path | None, layers: int, iterations: int, json_out: bool) -> None:
    """`import nsys|rocprof`: the file's devices, then one device as a trace import is shown, and whether sparse kernels ran."""
    from sparsedebug.core.io import check_output, save_record
    from sparsedebug.render.terminal.profiles import devices_table, sparse_kernels_text
    from sparsedebug.sources.sniff import sniff_as

    if output is not None:
        check_output(output, "-o")
    sniff_as(file, (kind,))  # another kind of file is refused by what it is
    with err_console().status(Text(f"reading {file}")):
        profile = analyze(file, device)
    if output is not None:
        save_record(profile.imported.record, output)
    if json_out:
        emit_json(profile)
        return
    out = console(wide)
    out.print(devices_table(profile))
    print_trace(profile.imported, wide=wide, layers=layers, iterations=iterations, written=[output] if output is not None else [])
    out.print(sparse_kernels_text(profile), markup=False, soft_wrap=True)



NSYS_HELP = """Import an Nsight Systems SQLite export (nsys export --type sqlite) as a five-stage run record.

Kernels, memcpys and memsets from the CUPTI activity tables (names from StringIds),
launches from the CUDA runtime calls (linked by correlationId: when each op was
issued, so GPU idle splits into host and kernel wait), NVTX push/pop ranges as
layers where the capture has them (else kernel names), devices from
TARGET_INFO_GPU. Both export generations (EXPORT_META_DATA, META_DATA_EXPORT) are
read. Busy and span are computed as for a PyTorch trace; a file with several GPUs
lists each and analyses one (--device, default the busiest). With -o, writes the
run record for bisect, classify, fallbacks and playbook run; --json prints
{"format", "devices", "imported": {"summary", "record"}, ...}.
"""

ROCPROF_HELP = """Import a rocprofv3 kernel trace (ROCm) as a five-stage run record: JSON, kernel_trace.csv or rocpd database.

Kernel dispatches with their names (kernel_symbols, Kernel_Name, rocpd views) and
GPU agents (gfx target, product name); layers are kernel names, iterations the
period of the kernel sequence. hipBLASLt/Tensile Cijk_* kernels are dense GEMMs;
hipSPARSELt's _SPA_/_SPB_ tokens mark sparse GEMMs, said to be inferred from the
name. The older rocmProfileData (rpd) format is refused. A file with several GPUs
lists each and analyses one (--device, default the busiest). With -o, writes the
run record; --json prints it with the devices.
"""


def _command(kind: str, analyzer: str, doc: str) -> Callable[..., None]:
    """The ``import KIND`` command (its help: ``doc``): reads with ``sources.importers.profiles.<analyzer>``."""

    def command(
        file: FileArg,
        device: DeviceOption = None,
        wide: WideOption = False,
        output: OutputOption = None,
        layers: LayersOption = 30,
        iterations: IterationsOption = 30,
        json_out: JsonOption = False,
    ) -> None:
        from sparsedebug.sources.importers import profiles

        _profile(kind, getattr(profiles, analyzer), file, device, wide, output, layers, iterations, json_out)

    command.__doc__ = doc
    return command


def register(import_app: typer.Typer) -> None:
    """Add `import nsys` and `import rocprof` to the `import` group."""
    import_app.command("nsys")(handle_errors(_command("nsys", "analyze_nsys", NSYS_HELP)))
    import_app.command("rocprof")(handle_errors(_command("rocprof", "analyze_rocprof", ROCPROF_HELP)))
