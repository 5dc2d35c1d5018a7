"""The artifacts attached to a run as evidence (Nsight Compute CSV, nvidia-smi log), loaded in one place.

`classify` and `playbook run` take the same evidence options; both call :func:`load_evidence`,
which checks every file before any work and loads each once. The loaded reports then travel as
one :class:`AttachedEvidence` value instead of a parameter per artifact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparsedebug.core.errors import UserError
from sparsedebug.records.artifacts import NcuReport, SmiReport
from sparsedebug.records.fingerprint import Fingerprint


@dataclass(frozen=True)
class EvidencePaths:
    """Where the evidence files are, as the user gave them (the option names are kept for messages)."""

    ncu: Path | None = None
    smi: Path | None = None
    smi_utc_offset_h: float | None = None
    """The nvidia-smi clock's offset from UTC in hours (its timestamps carry no zone); None: the run's fingerprint's
    offset when it records one (:func:`smi_utc_offset`), else the log cannot be aligned."""
    power: Path | None = None
    """A power or energy log for the runs' energy (``playbook.energy`` reads it; without it, an --smi log with power columns)."""

    def given(self) -> list[tuple[str, Path]]:
        """(option, path) of every file given."""
        files = (("--ncu", self.ncu), ("--smi", self.smi), ("--power", self.power))
        return [(option, path) for option, path in files if path is not None]


@dataclass(frozen=True)
class AttachedEvidence:
    """The loaded evidence reports: each None when not attached."""

    ncu: NcuReport | None = None
    smi: SmiReport | None = None
    smi_utc_offset_h: float | None = None


def smi_utc_offset(option_h: float | None, *fingerprints: Fingerprint | None) -> tuple[float | None, str | None]:
    """The nvidia-smi clock's offset from UTC in hours and where it came from: the option (``--smi-utc-offset``)
    when given, else the first fingerprint that records its machine's offset (``utc_offset_h``, set by ``freeze``
    on the machine that ran), else ``(None, None)``: the log cannot be aligned."""
    if option_h is not None:
        return option_h, "--smi-utc-offset"
    for fingerprint in fingerprints:
        if fingerprint is not None and fingerprint.utc_offset_h is not None:
            return fingerprint.utc_offset_h, f"the fingerprint of {fingerprint.created_at}"
    return None, None


NO_EVIDENCE = AttachedEvidence()
"""Nothing attached."""

NO_EVIDENCE_PATHS = EvidencePaths()
"""No evidence file given."""


def check_evidence_paths(paths: EvidencePaths) -> None:
    """A ``UserError`` naming the option when a given evidence file does not exist, or ``--smi-utc-offset``
    is not a finite number of hours a time zone can be ahead of UTC (``core.bounds.check_bounded``)."""
    from sparsedebug.sources.importers.power.load import check_utc_offset

    check_utc_offset(paths.smi_utc_offset_h, "--smi-utc-offset")
    for option, path in paths.given():
        if not path.is_file():
            raise UserError(f"{path}: file not found ({option})")


def load_evidence(paths: EvidencePaths) -> AttachedEvidence:
    """Check and load every evidence file given; a bad file is a one-line ``UserError`` naming it."""
    check_evidence_paths(paths)
    ncu = smi = None
    if paths.ncu is not None:
        from sparsedebug.sources.importers.ncu import load_ncu

        ncu = load_ncu(paths.ncu)
    if paths.smi is not None:
        from sparsedebug.sources.importers.nvidia_smi import load_smi

        smi = load_smi(paths.smi)
    return AttachedEvidence(ncu=ncu, smi=smi, smi_utc_offset_h=paths.smi_utc_offset_h)
