"""The walk's energy step: the power log it was given (``--power``, else an ``--smi`` log with power columns),
each side measured from its own window (``signoff.energy``), and the line the walk says about it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from sparsedebug.core.errors import UserError
from sparsedebug.records.notes import Note, note
from sparsedebug.sources.registry import replayed

_T = TypeVar("_T")

if TYPE_CHECKING:
    from pathlib import Path

    from sparsedebug.records.bundle import InputRole
    from sparsedebug.records.energy import EnergyReport, RaplReading, RaplSession
    from sparsedebug.records.power import PowerLog
    from sparsedebug.records.run import RunRecord
    from sparsedebug.sources.evidence import EvidencePaths


@dataclass
class Meter:
    """What a walk measures energy with: the RAPL package counter read around each replay, then every side's energy."""

    rapl: dict[str, RaplReading] = field(default_factory=dict)

    def run(self, role: str | None, replay: Callable[[], RunRecord]) -> RunRecord:
        """Run one replay with the RAPL package counter read before and after it (kept under ``role``) when one is
        readable; ``role`` None: not a replay (an import or a load), read nothing."""
        return replay() if role is None else self.run_session((role,), None, replay)

    def run_session(self, roles: tuple[str, ...], session: RaplSession | None, replay: Callable[[], _T]) -> _T:
        """Run ``replay`` with the RAPL counter read around it (where readable), the reading kept under each of
        ``roles``; ``session`` names an interleaved session of several sides, whose one reading cannot be split."""
        from sparsedebug.core import rapl

        begun = rapl.start()
        result = replay()
        reading = rapl.stop(begun) if begun is not None else None
        if reading is not None:
            for role in roles:
                self.rapl[role] = reading.model_copy(update={"session": session})
        return result

    def energy(self, walked: Mapping[str, RunRecord], evidence: EvidencePaths, say: Callable[[Note], None]) -> EnergyReport:
        """Step 5's energy figures (:func:`walk_energy`), with its one line said."""
        report, line = walk_energy(walked, evidence, self.rapl)
        say(line)
        return report


def power_log(evidence: EvidencePaths, runs: Sequence[RunRecord] = ()) -> tuple[PowerLog | None, str | None]:
    """The power log to measure the runs' windows with (``--power``, else an ``--smi`` log with power columns), placed
    with ``--smi-utc-offset`` or else the offset a run's own fingerprint records, else the one real UTC offset under
    which the log covers every run's window (``sources.evidence.place_log_clock``), and the option it came from;
    (None, None) without one."""
    if evidence.power is not None:
        return _placed(evidence.power, evidence, runs), "--power"
    if evidence.smi is None:
        return None, None
    try:
        log = _placed(evidence.smi, evidence, runs)
    except UserError:
        return None, None  # an --smi log the power reader cannot use: thermal evidence only
    return (log, "--smi") if log.channels else (None, None)


def _placed(path: Path, evidence: EvidencePaths, runs: Sequence[RunRecord]) -> PowerLog:
    """The power log at ``path`` with its zone-less clock placed in UTC where an offset is given, recorded or found."""
    from sparsedebug.sources.evidence import place_log_clock
    from sparsedebug.sources.importers.power import load_power_log, with_utc_offset

    log = load_power_log(path)
    if log.time_base != "wall_clock" or all(r.t_utc_s is not None for rows in log.readings.values() for r in rows):
        return log  # placed by the file itself (a zone, epoch seconds), or never placeable (a monotonic clock)
    as_utc = load_power_log(path, utc_offset_h=0.0)
    local = [r.t_utc_s for rows in as_utc.readings.values() for r in rows if r.t_utc_s is not None]
    placed = place_log_clock(evidence.smi_utc_offset_h, [run.fingerprint for run in runs], local, [run.source.window for run in runs])
    if placed.offset_h is None:
        return log
    return with_utc_offset(log, placed.offset_h).model_copy(update={"utc_offset_source": placed.source})


def walk_energy(
    walked: Mapping[str, RunRecord], evidence: EvidencePaths, rapl_readings: Mapping[str, RaplReading],
) -> tuple[EnergyReport, Note]:
    """Every side's energy (baseline, candidate, fixed as walked) and one line for the walk's reporter."""
    from sparsedebug.core import rapl
    from sparsedebug.signoff.energy import energy_report

    roles: tuple[InputRole, ...] = ("baseline", "candidate", "fixed")
    runs = [(role, walked[role]) for role in roles if role in walked]
    log, option = power_log(evidence, [run for _, run in runs])
    report = energy_report(runs, log, log_option=option, rapl=dict(rapl_readings), rapl_readable=bool(rapl.readable_zones()))
    measured: list[str] = [s.role for s in report.sides if s.status == "measured"]
    if measured and log is not None:
        return report, note("playbook.energy_measured", roles=measured, option=option, file=log.file)
    if all(replayed(run) for _, run in runs):
        return report, note("playbook.energy_machine", machine=report.machine)
    return report, note("playbook.energy_unmeasured", roles=[str(s.role) for s in report.sides], statuses=[str(s.status) for s in report.sides])
