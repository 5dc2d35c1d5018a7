"""The artifacts attached to a run as evidence (Nsight Compute CSV, nvidia-smi log), loaded in one place.

`classify` and `playbook run` take the same evidence options; :func:`check_evidence_paths` checks
every file before any work and loads the reports once (:func:`load_evidence` for `classify`; the walk
attaches the reports it returned). The loaded reports then travel as one :class:`AttachedEvidence`
value instead of a parameter per artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparsedebug.core.io import check_input_file
from sparsedebug.records.artifacts import NcuReport, SmiReport
from sparsedebug.records.fingerprint import Fingerprint
from sparsedebug.records.note_codes.facts import UtcOffsetSource
from sparsedebug.records.run import TimeWindow
from sparsedebug.sources.importers.alignment import OffsetSearch, search_utc_offset


@dataclass(frozen=True)
class EvidencePaths:
    """Where the evidence files are, as the user gave them (the option names are kept for messages)."""

    ncu: Path | None = None
    smi: Path | None = None
    # The nvidia-smi clock's offset from UTC in hours (its timestamps carry no zone); None: the run's fingerprint's
    # offset when it records one (:func:`smi_utc_offset`), else the log cannot be aligned.
    smi_utc_offset_h: float | None = None
    # A power or energy log for the runs' energy (``playbook.energy`` reads it; without it, an --smi log with power
    # columns).
    power: Path | None = None
    # Untraced per-forward latencies of the baseline and the candidate (``--latency BASE CAND``, ``sources.latency``).
    latency: tuple[Path, Path] | None = None

    def given(self) -> list[tuple[str, Path]]:
        """(option, path) of every file given."""
        files = (("--ncu", self.ncu), ("--smi", self.smi), ("--power", self.power), *(("--latency", p) for p in self.latency or ()))
        return [(option, path) for option, path in files if path is not None]


@dataclass(frozen=True)
class AttachedEvidence:
    """The loaded evidence reports: each None when not attached."""

    ncu: NcuReport | None = None
    smi: SmiReport | None = None
    smi_utc_offset_h: float | None = None


def smi_utc_offset(option_h: float | None, *fingerprints: Fingerprint | None) -> tuple[float | None, Fingerprint | None]:
    """The nvidia-smi clock's offset from UTC in hours and the fingerprint it came from: the option
    (``--smi-utc-offset``) when given (no fingerprint), else the first fingerprint that records its machine's offset
    (``utc_offset_h``, set by ``freeze`` on the machine that ran), else ``(None, None)``: the log cannot be aligned."""
    if option_h is not None:
        return option_h, None
    for fingerprint in fingerprints:
        if fingerprint is not None and fingerprint.utc_offset_h is not None:
            return fingerprint.utc_offset_h, fingerprint
    return None, None


@dataclass(frozen=True)
class ClockPlacement:
    """A zone-less log's offset from UTC and where it came from; ``search`` when it was searched for."""

    offset_h: float | None
    source: UtcOffsetSource | None
    # When ``source`` is "fingerprint": that fingerprint's creation time, which names it.
    fingerprint_created: str | None = None
    search: OffsetSearch | None = None


def place_log_clock(
    option_h: float | None, fingerprints: Sequence[Fingerprint | None], local_s: Sequence[float], windows: Sequence[TimeWindow | None],
) -> ClockPlacement:
    """The offset of a zone-less log's clock: the option's or a fingerprint's (:func:`smi_utc_offset`), else the
    one real UTC offset under which the log covers every run's window (``local_s``: its timestamps read as UTC;
    ``search_utc_offset``). Several offsets or none: ``offset_h`` None, ``search`` says which; a run without an
    absolute window: nothing to search against."""
    offset, fingerprint = smi_utc_offset(option_h, *fingerprints)
    if offset is not None:
        if fingerprint is None:
            return ClockPlacement(offset, "option")
        return ClockPlacement(offset, "fingerprint", fingerprint_created=str(fingerprint.created_at))
    if not windows or any(window is None for window in windows):
        return ClockPlacement(None, None)
    spans = [(w.start_utc_s, w.end_utc_s) for w in windows if w is not None]
    search = search_utc_offset(local_s, spans)
    if search.offset_h is None:
        return ClockPlacement(None, None, search=search)
    return ClockPlacement(search.offset_h, "searched", search=search)


NO_EVIDENCE = AttachedEvidence()
"""Nothing attached."""

NO_EVIDENCE_PATHS = EvidencePaths()
"""No evidence file given."""


def check_evidence_paths(paths: EvidencePaths) -> tuple[NcuReport | None, SmiReport | None]:
    """Read every evidence file given, before any work: a ``UserError`` naming the option when one is not a
    file, the file, line and value when one is malformed or holds what no measurement can (``--ncu``,
    ``--smi``, ``--power``, ``--latency``, each by its own reader), or when ``--smi-utc-offset`` is not a
    finite number of hours a time zone can be ahead of UTC (``core.bounds.check_bounded``). A walk thus
    refuses a bad log before step 1, not after the steps before the one that reads it. Returns the ``--ncu``
    and ``--smi`` reports read."""
    from sparsedebug.sources.importers.power.load import check_utc_offset, load_power_log

    check_utc_offset(paths.smi_utc_offset_h, "--smi-utc-offset")
    for option, path in paths.given():
        check_input_file(path, option)
    if paths.latency is not None:
        from sparsedebug.sources.latency import load_latencies

        for path in paths.latency:
            load_latencies(path)
    reports = _load_reports(paths)
    if paths.power is not None:
        load_power_log(paths.power)
    return reports


def _load_reports(paths: EvidencePaths) -> tuple[NcuReport | None, SmiReport | None]:
    ncu = smi = None
    if paths.ncu is not None:
        from sparsedebug.sources.importers.ncu import load_ncu

        ncu = load_ncu(paths.ncu)
    if paths.smi is not None:
        from sparsedebug.sources.importers.nvidia_smi import load_smi

        smi = load_smi(paths.smi)
    return ncu, smi


def load_evidence(paths: EvidencePaths) -> AttachedEvidence:
    """Check and load every evidence file given; a bad file is a one-line ``UserError`` naming it."""
    ncu, smi = check_evidence_paths(paths)
    return AttachedEvidence(ncu=ncu, smi=smi, smi_utc_offset_h=paths.smi_utc_offset_h)
