"""Imported artifacts as classification evidence: Nsight Compute kernels and nvidia-smi clocks.

``ncu_kernels`` and ``smi_evidence`` reduce the importers' reports to what the rules read
(``NcuEvidence``, ``SmiEvidence``); ``sparse_ncu`` picks the sparse GEMM the ncu rules
judge, and ``ncu_detail`` notes what the report measured for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sparsedebug.classify.context import CAPTURE_NCU, Context, Missing
from sparsedebug.core.errors import UserError
from sparsedebug.records.classification import NcuEvidence, SmiEvidence
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.notes import Note, NoteValue, note
from sparsedebug.records.run import KernelClass, RunRecord
from sparsedebug.sources.evidence import place_log_clock
from sparsedebug.sources.importers.alignment import OffsetSearch

if TYPE_CHECKING:
    from sparsedebug.records.artifacts import NcuReport, SmiReport


def ncu_kernels(report: NcuReport) -> list[NcuEvidence]:
    """The kernels of an Nsight Compute report, as classification needs them."""
    out: list[NcuEvidence] = []
    for kernel in report.kernels:
        out.append(
            NcuEvidence(
                name=kernel.name,
                kernel_class=kernel.kernel_class,
                sm_pct=kernel.sm_throughput_pct,
                mem_pct=kernel.memory_throughput_pct,
                spill_requests=kernel.local_spill_requests,
                duration_us=kernel.duration_us,
            )
        )
    return out


def windowed_smi_evidence(
    report: SmiReport, run: RunRecord, utc_offset_h: float | None, fingerprint: Fingerprint | None = None,
    compared: Sequence[RunRecord] = (),
) -> SmiEvidence:
    """``smi_evidence`` over the samples inside ``run``'s own time window (``nvidia_smi.samples_in_window``);
    marked unaligned (context only) when the log cannot be placed on the run's time axis.

    ``utc_offset_h`` is the ``--smi-utc-offset`` option; without it the offset is the run's own
    fingerprint's, else ``fingerprint``'s (``sources.evidence.smi_utc_offset``), else the one real UTC offset
    under which the log covers the window of ``run`` and of every run in ``compared`` (``place_log_clock``);
    the note says which, or why none could be used.
    """
    from sparsedebug.sources.importers.nvidia_smi import samples_in_window, smi_time_utc_s

    runs = [run, *(other for other in compared if other is not run)]
    local = [t for t in (smi_time_utc_s(s.time, 0.0) for s in report.samples) if t is not None]
    placed = place_log_clock(utc_offset_h, [run.fingerprint, fingerprint], local, [r.source.window for r in runs])
    offset = placed.offset_h
    taken = samples_in_window(report, run.source.window, offset)
    window = taken.note
    if placed.source is not None and taken.aligned:
        window = note(window.code, **window.values, offset_h=offset, offset_from=placed.source,
                      fingerprint_created=placed.fingerprint_created)
    elif offset is None and run.source.window is not None:
        window = note(window.code, **window.values, offset_searched=True, runs=len(runs), **_search_values(placed.search))
    facts = {"utc_offset_h": offset, "utc_offset_source": placed.source,
             "utc_offsets_aligned": list(placed.search.aligned) if placed.search is not None else []}
    if not taken.aligned:
        return smi_evidence(report, fingerprint).model_copy(update={"aligned": False, "window": window, **facts})
    if not taken.samples:
        return SmiEvidence(source=report.file, samples=0, busy_samples=0, throttled_busy_samples=0, throttle_reasons={},
                           min_busy_sm_clock_mhz=None, max_sm_clock_mhz=None, max_clock_source="none",
                           has_reasons=report.reasons_column is not None, window=window, **facts)
    keep = {id(s) for s in taken.samples}
    windowed = report.model_copy(update={"samples": [s for s in report.samples if id(s) in keep]})
    return smi_evidence(windowed, fingerprint).model_copy(update={"window": window, **facts})


def _search_values(search: OffsetSearch | None) -> dict[str, NoteValue]:
    """What the search over the real UTC offsets found when it placed nothing (none searched: nothing)."""
    if search is None:
        return {}
    return {"tried": search.tried, "aligned": list(search.aligned), "log_first_s": search.log_first_s, "log_last_s": search.log_last_s}


def smi_evidence(report: SmiReport, fingerprint: Fingerprint | None = None) -> SmiEvidence:
    """What classification needs of an imported nvidia-smi log (the most throttled GPU when several).

    Busy samples are those without the ``gpu_idle`` reason (or, without a reasons
    column, with utilisation above 0); a busy sample is throttled when a power or
    thermal reason is active. The maximum SM clock is the log's own reference
    unless it is only the maximum observed and the fingerprint knows the GPU's.
    """
    from sparsedebug.sources.importers.nvidia_smi import POWER_REASONS, THERMAL_REASONS

    limiting = POWER_REASONS | THERMAL_REASONS
    fp_max = next((g.max_sm_clock_mhz for g in fingerprint.gpus if g.max_sm_clock_mhz), None) if fingerprint else None
    best: SmiEvidence | None = None
    for summary in report.summaries:
        group = [s for s in report.samples if s.gpu == summary.gpu]
        if not group:
            continue
        if report.reasons_column is not None:
            busy = [s for s in group if s.reasons_mask is not None and not s.reasons_mask & 0x1]
        else:
            busy = [s for s in group if (s.util_gpu_pct or 0.0) > 0.0]
        throttled = [s for s in busy if limiting.intersection(s.reasons)]
        counts: dict[str, int] = {}
        for sample in throttled:
            for reason in limiting.intersection(sample.reasons):
                counts[reason] = counts.get(reason, 0) + 1
        max_clock, max_source = summary.max_sm_clock_mhz, summary.max_clock_source
        if max_source == "max observed" and fp_max is not None:
            max_clock, max_source = fp_max, "fingerprint clocks.max.sm"
        clocks = [s.sm_clock_mhz for s in busy if s.sm_clock_mhz is not None]
        candidate = SmiEvidence(
            source=report.file if len(report.summaries) == 1 else f"{report.file} (gpu {summary.gpu})",
            samples=len(group),
            busy_samples=len(busy),
            throttled_busy_samples=len(throttled),
            throttle_reasons=counts,
            min_busy_sm_clock_mhz=min(clocks) if clocks else None,
            max_sm_clock_mhz=max_clock,
            max_clock_source=max_source,
            has_reasons=report.reasons_column is not None,
        )
        if best is None or candidate.throttled_busy_samples > best.throttled_busy_samples:
            best = candidate
    if best is None:
        raise UserError(f"{report.file}: no GPU samples in the nvidia-smi log")
    return best


def sparse_ncu(ctx: Context) -> NcuEvidence | Missing | None:
    """The longest sparse GEMM of the attached ncu report; Missing when absent; None for replays without one."""
    if ctx.ncu is None:
        if ctx.imported:
            return Missing(note("classify.no_ncu_report"), CAPTURE_NCU)
        return None
    sparse = [k for k in ctx.ncu if k.kernel_class == KernelClass.SPARSE_GEMM]
    if not sparse:
        return Missing(note("classify.ncu_no_sparse_gemm", report=ctx.ncu_source), CAPTURE_NCU)
    return max(sparse, key=lambda k: k.duration_us or 0.0)


def ncu_detail(kernel: NcuEvidence) -> Note:
    """What the report measured for ``kernel``: its name and the figures it has (None where not measured)."""
    return note("classify.ncu_kernel", kernel=kernel.name, duration_us=kernel.duration_us, sm_pct=kernel.sm_pct,
                mem_pct=kernel.mem_pct, spill_requests=kernel.spill_requests)
